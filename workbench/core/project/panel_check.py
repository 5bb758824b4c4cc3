"""The project's panel checked as an RCP run configuration would be, one issue per field.

The Clusters & Agents panel calls :func:`check_panel` as the user types (on the GUI thread: it
reads nothing, and a check costs about a millisecond), with the rows on screen and the value
being typed put in their place. It builds the SPEC §6 document the way a run is built from the
project (:func:`~workbench.core.project.panel.document_from_rows`, the body of
``panel_document``), with the project's tau and weighting, and runs it through the same models
``rwb run`` uses (:func:`~workbench.core.runs.config.parse_run_config`, then RCP's
:func:`~workbench.core.protocols.rcp.config.config_warnings`). The models stop at the first
error; to name every field at fault at once, each error's field is set aside (a bad theta
dropped, a duplicate name made unique...) and the document checked again.

Each :class:`Issue` names what it is about (a cluster by id, an agent by id, a provider by
name, or the project's tau), the field, and the message, in the models' own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.core.errors import InputError
from workbench.core.project.panel import document_from_rows

ERROR, WARNING = "error", "warning"
_CHECK_QUERY = "(the panel being checked)"
_PLACEHOLDER_PROVIDER = "(no provider)"
_MAX_PASSES = 200
_CLUSTER_PATH = re.compile(r"^clusters\[(\d+)\](?:\.agents\[(\d+)\](?:\.(\w+))?(.*)|\.(\w+))?")
_CLUSTER_WARNING = re.compile(r"^clusters\[(\d+)\]")


@dataclass(frozen=True)
class Issue:
    level: str  # "error" (a run would be refused) or "warning" (legal but doubtful, SPEC §1)
    kind: str  # "cluster", "agent", "provider", "tau", "theta", "weighted" or "panel"
    key: object  # the cluster's id, the agent's id, the provider's name; None for the others
    field: str  # "name", "theta", "weight", "agents", "reference", "id", "provider", "params"...
    message: str

    @property
    def is_error(self) -> bool:
        return self.level == ERROR


def check_panel(clusters: list[dict], agents: list[dict], providers: list[dict], *,
                tau: object, weighted: object = False, theta: object = None) -> list[Issue]:
    """Every issue of the panel (rows as stored, or as being edited) as an RCP run would see it.

    An agent row may carry ``key``, the id it is stored under, while its ``id`` is being
    retyped: issues name agents by ``key`` (else ``id``)."""
    from workbench.core.protocols.rcp.config import config_warnings
    from workbench.core.runs.config import parse_run_config

    issues: list[Issue] = []
    if not clusters:
        issues.append(Issue(WARNING, "panel", None, "clusters", "The panel has no cluster yet: add one."))
    counts: dict[object, int] = {}
    for a in agents:
        counts[a["cluster_id"]] = counts.get(a["cluster_id"], 0) + 1
    for c in clusters:
        if not counts.get(c["id"]):
            issues.append(Issue(WARNING, "cluster", c["id"], "agents",
                                f"Cluster {c['name']!r} has no agents: a run leaves it out."))
    # A run leaves an empty cluster out, so the models never see its name: a name it shares with
    # another cluster is named here (the project refuses it too: cluster names are unique).
    for i, c in enumerate(clusters):
        for other in clusters[i + 1:]:
            if c["name"] == other["name"] and not (counts.get(c["id"]) and counts.get(other["id"])):
                text = f"duplicate cluster name {c['name']!r} (another cluster has it)"
                issues += [Issue(ERROR, "cluster", c["id"], "name", text),
                           Issue(ERROR, "cluster", other["id"], "name", text)]

    doc = {"protocol": "rcp", "query": _CHECK_QUERY, **document_from_rows(providers, clusters, agents),
           "tau": tau, "weighted": weighted, **({"theta": theta} if theta is not None else {})}
    # Who each cluster and agent of the document is on screen (the document has no empty cluster).
    members: dict[object, list[dict]] = {}
    for a in sorted(agents, key=lambda a: (a.get("position") or 0, str(a["id"]))):
        members.setdefault(a["cluster_id"], []).append(a)
    ids = [(c["id"], [a.get("key", a["id"]) for a in members[c["id"]]]) for c in clusters if counts.get(c["id"])]
    state = _State(doc, ids, {p["name"] for p in providers})

    cfg = None
    for _ in range(_MAX_PASSES):
        try:
            cfg = parse_run_config(doc)
            break
        except InputError as exc:
            found, fixed = state.place(exc)
            issues += [i for i in found if i not in issues]
            if not fixed:
                break
    if cfg is not None:
        try:
            warnings = config_warnings({"clusters": cfg.classification_panel(), "reference": cfg.reference,
                                        "theta": cfg.theta, "tau": cfg.tau, "weighted": cfg.weighted})
        except InputError:
            warnings = []
        for text in warnings:
            for placeholder, real in state.renamed.items():
                text = text.replace(repr(placeholder), repr(real)).replace(placeholder, real)
            issues.append(_warning(text, ids))
    return issues


def _warning(text: str, ids: list[tuple[object, list[str]]]) -> Issue:
    found = _CLUSTER_WARNING.match(text)
    if found and int(found.group(1)) < len(ids):
        return Issue(WARNING, "cluster", ids[int(found.group(1))][0], "agents", text)
    if "weights are ignored" in text:
        return Issue(WARNING, "weighted", None, "weighted", text)
    return Issue(WARNING, "tau", None, "tau", text)


class _State:
    """The document being checked, and how to set aside the field an error names."""

    def __init__(self, doc: dict, ids: list[tuple[object, list]], providers: set[str]):
        self.doc, self.ids, self.providers = doc, ids, providers
        self.renamed: dict[str, str] = {}  # placeholder -> the name it stands for
        self.n = 0

    def _placeholder(self, kind: str, real: str) -> str:
        self.n += 1
        name = f"(duplicate {kind} {self.n})"
        self.renamed[name] = real
        return name

    def place(self, exc: InputError) -> tuple[list[Issue], bool]:
        """The issues ``exc`` names, and whether its field was set aside so the check can go on."""
        from workbench.core.protocols.rcp.config import DEFAULT_TAU, DEFAULT_THETA

        doc = self.doc
        path, message = exc.field or "", exc.message
        if path == "tau":
            doc["tau"] = DEFAULT_TAU
            return [Issue(ERROR, "tau", None, "tau", f"tau {message}")], True
        if path == "weighted":
            doc["weighted"] = False
            return [Issue(ERROR, "weighted", None, "weighted", message)], True
        if path == "theta":  # the project's θ (beside τ)
            doc["theta"] = DEFAULT_THETA
            return [Issue(ERROR, "theta", None, "theta", f"θ {message}")], True
        if path == "reference":
            doc.pop("reference", None)
            return [Issue(ERROR, "panel", None, "reference", message)], True
        if path.startswith("providers."):
            return self._provider(path, message)
        found = _CLUSTER_PATH.match(path)
        if not found or int(found.group(1)) >= len(doc["clusters"]):
            return [Issue(ERROR, "panel", None, path, f"{path}: {message}" if path else message)], False
        i = int(found.group(1))
        if found.group(2) is None:
            return self._cluster(i, found.group(5) or "agents", message)
        return self._agent(i, int(found.group(2)), found.group(3) or "id", found.group(4).lstrip("."), message)

    def _provider(self, path: str, message: str) -> tuple[list[Issue], bool]:
        rest = path[len("providers."):]
        name = max((p for p in self.doc["providers"] if rest == p or rest.startswith(p + ".")), key=len, default=None)
        if name is None:
            return [Issue(ERROR, "panel", None, "providers", f"{path}: {message}")], False
        self.doc["providers"][name] = {"model": "sim"}
        return [Issue(ERROR, "provider", name, rest[len(name) + 1:] or "name", message)], True

    def _cluster(self, i: int, field: str, message: str) -> tuple[list[Issue], bool]:
        cluster, cluster_id = self.doc["clusters"][i], self.ids[i][0]
        if field == "name":
            issues = [Issue(ERROR, "cluster", cluster_id, "name", message)]
            for k, other in enumerate(self.doc["clusters"][:i]):  # the first of the two is named too
                if other["name"] == cluster["name"]:
                    text = f"duplicate cluster name {other['name']!r} (another cluster has it)"
                    issues = [Issue(ERROR, "cluster", cluster_id, "name", text),
                              Issue(ERROR, "cluster", self.ids[k][0], "name", text)]
            cluster["name"] = self._placeholder("cluster", cluster["name"])
            return issues, True
        if field in ("theta", "weight"):
            cluster.pop(field, None)
            label = "θ" if field == "theta" else "weight"
            return [Issue(ERROR, "cluster", cluster_id, field, f"{label} {message}")], True
        return [Issue(ERROR, "cluster", cluster_id, field, message)], False

    def _agent(self, i: int, j: int, field: str, where: str, message: str) -> tuple[list[Issue], bool]:
        cluster, (cluster_id, keys) = self.doc["clusters"][i], self.ids[i]
        if j >= len(cluster["agents"]):
            return [Issue(ERROR, "cluster", cluster_id, "agents", message)], False
        agent, key = cluster["agents"][j], keys[j]
        if field == "id":
            issues = [Issue(ERROR, "agent", key, "id", message)]
            for k, other_cluster in enumerate(self.doc["clusters"]):
                for m, other in enumerate(other_cluster["agents"]):
                    if other is not agent and other["id"] == agent["id"] and (k, m) < (i, j):
                        issues.append(Issue(ERROR, "agent", self.ids[k][1][m], "id",
                                            f"agent {other['id']!r} is in the panel twice"))
            agent["id"] = self._placeholder("agent", agent["id"])
            return issues, True
        if field == "provider":
            if agent.get("provider") is None:
                message = "choose a provider for this agent"
            elif agent["provider"] not in self.providers:
                message = f"no provider named {agent['provider']!r}"
            self.doc["providers"][_PLACEHOLDER_PROVIDER] = {"model": "sim"}
            agent["provider"] = _PLACEHOLDER_PROVIDER
            return [Issue(ERROR, "agent", key, "provider", message)], True
        if field == "params":
            agent["params"] = {}
            return [Issue(ERROR, "agent", key, "params", f"{where}: {message}" if where else message)], True
        if field in ("persona", "role"):
            agent[field] = "" if field == "persona" else None
            return [Issue(ERROR, "agent", key, field, message)], True
        return [Issue(ERROR, "agent", key, field, message)], False
