"""The Quadrant's reads and writes: a Resonant Consensus run's stored votes as arrays, classified
by the engine under the run's own thresholds or a what-if, and the what-if variants a user saves.

A run is read once (:func:`load_run`) into a :class:`VoteData`: the vote matrix (artifacts x
agents, NaN where no 0/1 vote was cast), each artifact's author column, round and key, the panel
(clusters, reference, theta per cluster, tau, weights) from the run's configuration, and the
status counts that say why an artifact got no vote. :func:`classify` then runs the engine's
vectorised core (:func:`~workbench.core.protocols.rcp.classify.classify_arrays`) on those arrays:
no model is called and nothing is read again, so a what-if over 10,000 artifacts costs a few ms.

A what-if is saved as a row of ``classification_variants`` per round (:func:`save_variant`):
its settings and the SPEC §1 resonance states the engine gives under them. The run itself, its
votes and its summary are never touched.

The round of an artifact is read from its key (``r<k>-<author>``, as the RCP run names them);
a key without that prefix is round 1.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.core.project import _sql
from workbench.core.project.changes import Changes
from workbench.core.project.runs import RunListRow, run_list
from workbench.core.project.store import Store
from workbench.core.protocols.rcp.defaults import DEFAULT_TAU, DEFAULT_THETA, DEFAULT_WEIGHT

if TYPE_CHECKING:
    from workbench.core.protocols.rcp.classify import RcpArrays

# What a change to these tables can move on the Quadrant.
TABLES = ("runs", "artifacts", "votes", "classification_variants")
_ROUND = re.compile(r"^r(\d+)-")
EXCERPT_CHARS = 240


@dataclass(frozen=True)
class RcpRunRow(RunListRow):
    """One RCP run as the run picker lists it: as every list names a run, with its artifact count."""

    artifacts: int = 0


def rcp_runs(store: Store, limit: int = 500) -> list[RcpRunRow]:
    """The newest ``limit`` RCP runs, newest first, with their artifact counts."""
    listed = run_list(store, limit, protocol="rcp")
    counts: dict[str, int] = {}
    ids = [r.id for r in listed]
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        counts.update(_sql.tuples(store, f"SELECT run_id, count(*) FROM artifacts WHERE run_id IN "
                                         f"({', '.join('?' * len(chunk))}) GROUP BY run_id", chunk))
    return [RcpRunRow(**asdict(r), artifacts=counts.get(r.id, 0)) for r in listed]


@dataclass(frozen=True)
class Settings:
    """Thresholds of one classification: theta per cluster, tau, weights (None: unweighted),
    and the reference cluster's index."""

    thetas: tuple[float, ...]
    tau: float
    weights: tuple[float, ...] | None
    reference: int = 0

    def to_json(self, clusters: tuple[str, ...]) -> dict[str, Any]:
        """The ``settings_json`` of a saved variant (cluster names, not indices)."""
        return {"reference": clusters[self.reference], "tau": self.tau,
                "theta": dict(zip(clusters, self.thetas)),
                "weighted": self.weights is not None,
                "weights": dict(zip(clusters, self.weights)) if self.weights is not None else None}


@dataclass
class VoteData:
    """A run's stored votes as arrays (row k: artifact k, in artifact-id order)."""

    run_id: str
    label: str
    status: str
    simulated: bool
    clusters: tuple[str, ...]
    agents: tuple[str, ...]  # the vote matrix's columns, cluster by cluster
    cluster_of: Any  # (a,) int: cluster index of each column
    settings: Settings  # the run's own thresholds (its configuration)
    artifact_ids: Any  # (m,) int64: artifacts.id
    keys: list[str]
    rounds: Any  # (m,) int
    authors: list[str | None]
    author_col: Any  # (m,) int: the author's column, -1 without an author in the panel
    votes: Any  # (m, a) float: 1, 0 or NaN
    invalid: Any  # (m,) int: votes stored as invalid (an unreadable reply)
    failed: Any  # (m,) int: votes whose call failed
    absent: Any  # (m,) int: eligible voters with no vote row at all (not asked yet, or lost)
    excerpts: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # SPEC §8: each artifact against the run's known answer ("correct", "incorrect", "unscorable";
    # None: the run has none) and the answer read from it. The plot marks them; tier_accuracy counts.
    scores: list[str | None] = field(default_factory=list)
    extracted: list[str | None] = field(default_factory=list)

    @property
    def scored(self) -> bool:
        return any(s is not None for s in self.scores)

    @property
    def n(self) -> int:
        return len(self.clusters)

    @property
    def m(self) -> int:
        return len(self.keys)

    @property
    def round_numbers(self) -> list[int]:
        return sorted({int(r) for r in self.rounds}) if self.m else []

    def why_unclassified(self, k: int) -> str:
        """Why artifact ``k`` got no vote, in words (SPEC §1 "No votes, no tier")."""
        parts = []
        if int(self.invalid[k]):
            parts.append(f"{int(self.invalid[k])} unreadable repl{'y' if int(self.invalid[k]) == 1 else 'ies'}")
        if int(self.failed[k]):
            parts.append(f"{int(self.failed[k])} failed call{'s' if int(self.failed[k]) != 1 else ''}")
        if int(self.absent[k]):
            pending = self.status in ("running", "interrupted")
            parts.append(f"{int(self.absent[k])} vote{'s' if int(self.absent[k]) != 1 else ''} "
                         + ("not cast yet" if pending else "never recorded"))
        eligible = len(self.agents) - (1 if int(self.author_col[k]) >= 0 else 0)
        if eligible <= 0:
            return "no eligible voter: the panel has no agent besides the author"
        return "no vote cast: " + (", ".join(parts) if parts else "every vote missing")


def _panel(config: dict) -> tuple[list[str], list[list[str]], Settings, bool, list[str]]:
    """Cluster names, their agents and the run's own settings, from a stored RCP configuration."""
    warnings: list[str] = []
    clusters = [c for c in (config.get("clusters") or []) if isinstance(c, dict)]
    names = [str(c.get("name")) for c in clusters]
    members = [[(a.get("id") if isinstance(a, dict) else a) for a in (c.get("agents") or [])] for c in clusters]
    theta = config.get("theta") if isinstance(config.get("theta"), (int, float)) else DEFAULT_THETA
    tau = config.get("tau") if isinstance(config.get("tau"), (int, float)) else DEFAULT_TAU
    thetas = tuple(float(c["theta"]) if isinstance(c.get("theta"), (int, float)) else float(theta) for c in clusters)
    weights = tuple(float(c["weight"]) if isinstance(c.get("weight"), (int, float)) else DEFAULT_WEIGHT
                    for c in clusters)
    weighted = bool(config.get("weighted"))
    reference = names.index(config["reference"]) if config.get("reference") in names else 0
    if not weighted and any(w != DEFAULT_WEIGHT for w in weights):
        warnings.append("cluster weights are set but the run was not weighted: rho = |S| / n")
    settings = Settings(thetas, float(tau), weights if weighted else None, reference)
    return names, members, settings, weighted, warnings


def load_run(store: Store, run_id: str) -> VoteData | None:
    """Read a run's artifacts and votes once, as arrays; None when there is no such RCP run."""
    import numpy as np

    run = _sql.get(store, "runs", run_id)
    if run is None or run["protocol"] != "rcp":
        return None
    names, members, settings, _weighted, warnings = _panel(run["config_json"] or {})
    agents = [a for group in members for a in group]
    cluster_of = np.array([i for i, group in enumerate(members) for _ in group], dtype=np.intp)
    col = {a: j for j, a in enumerate(agents)}
    arts = _sql.tuples(store, "SELECT id, key, author_agent, substr(content, 1, ?) FROM artifacts "
                              "WHERE run_id = ? ORDER BY id", (EXCERPT_CHARS, run_id))
    m, a = len(arts), len(agents)
    row_of = {aid: k for k, (aid, *_rest) in enumerate(arts)}
    votes = np.full((m, a), np.nan)
    invalid = np.zeros(m, dtype=np.int64)
    failed = np.zeros(m, dtype=np.int64)
    seen = np.zeros((m, a), dtype=bool)
    rows_v, cols_v, vals = [], [], []
    for artifact_id, voter, value, status in _sql.tuples(
            store, "SELECT artifact_id, voter_agent, value, status FROM votes WHERE run_id = ?", (run_id,)):
        k, j = row_of.get(artifact_id), col.get(voter)
        if k is None or j is None:
            continue
        seen[k, j] = True
        if value in (0, 1) and status == "valid":
            rows_v.append(k)
            cols_v.append(j)
            vals.append(float(value))
        elif status == "failed":
            failed[k] += 1
        elif status == "invalid":
            invalid[k] += 1
    if vals:
        votes[np.array(rows_v), np.array(cols_v)] = np.array(vals)
    author_col = np.array([col.get(author, -1) if author is not None else -1 for _i, _k, author, _c in arts],
                          dtype=np.intp)
    eligible = np.ones((m, a), dtype=bool)
    has_author = np.nonzero(author_col >= 0)[0]
    eligible[has_author, author_col[has_author]] = False
    absent = (eligible & ~seen).sum(axis=1).astype(np.int64)
    keys = [key for _i, key, _a, _c in arts]
    rounds = np.array([int(mt.group(1)) if (mt := _ROUND.match(key)) else 1 for key in keys], dtype=np.int64)
    unknown = sorted({author for _i, _k, author, _c in arts if author is not None and author not in col})
    if unknown:
        warnings.append(f"authors outside the run's panel ({', '.join(unknown[:5])}): their artifacts "
                        "are treated as coming from outside the panel")
    if run["status"] == "degraded":  # SPEC §1: a degraded run's results are shown, marked as such
        warnings.insert(0, f"degraded run: {run['error'] or 'too many votes are missing'}")
    scored = _sql.tuples(store, "SELECT score, extracted FROM artifacts WHERE run_id = ? ORDER BY id", (run_id,))
    return VoteData(
        run_id=run_id, label=run["label"], status=run["status"], simulated=bool(run["simulated"]),
        clusters=tuple(names), agents=tuple(agents), cluster_of=cluster_of, settings=settings,
        artifact_ids=np.array([i for i, *_rest in arts], dtype=np.int64), keys=keys, rounds=rounds,
        authors=[author for _i, _k, author, _c in arts], author_col=author_col, votes=votes,
        invalid=invalid, failed=failed, absent=absent,
        excerpts=[(c or "").replace("\n", " ") for _i, _k, _a, c in arts], warnings=warnings,
        scores=[score for score, _e in scored], extracted=[extracted for _s, extracted in scored])


def classify(data: VoteData, settings: Settings | None = None) -> RcpArrays:
    """The engine's classification of every artifact under ``settings`` (default: the run's own).

    Pure and fast: the vectorised engine on the arrays already read; no model call, no I/O."""
    from workbench.core.protocols.rcp.classify import classify_arrays

    s = settings or data.settings
    return classify_arrays(data.votes, data.cluster_of, n_clusters=max(data.n, 1), thetas=s.thetas, tau=s.tau,
                           reference=s.reference, weights=s.weights, author=data.author_col)


def tier_accuracy(data: VoteData, arrays: RcpArrays, round_no: int | None = None):
    """Accuracy per tier (and the AUROC of the resonance score against correctness) of a round's
    artifacts (every artifact: ``round_no`` None) under the classification ``arrays`` (the run's
    own or a what-if's): a ``shared.truth.TierAccuracy``, None when the run has no known answer."""
    import math

    from workbench.core.protocols.rcp.classify import TIERS, UNCLASSIFIED
    from workbench.core.protocols.shared.truth import accuracy_by_tier

    if not data.scored:
        return None
    states = []
    for k, key in enumerate(data.keys):
        if round_no is not None and int(data.rounds[k]) != round_no:
            continue
        cast = int(arrays.votes_cast[k])
        score = float(arrays.score[k])
        states.append({"artifact": key, "tier": TIERS[int(arrays.tier[k])] if cast else UNCLASSIFIED,
                       "score": score if cast and not math.isnan(score) else None})
    return accuracy_by_tier(states, dict(zip(data.keys, data.scores)))


def region_tier(settings: Settings, approving: tuple[bool, ...]) -> str:
    """The tier the engine gives an artifact whose approval set is ``approving`` (one flag per
    cluster): for labelling the quadrant's regions and the ratio chart's bands."""
    from workbench.core.protocols.rcp.config import tier_for

    n = len(approving)
    if settings.weights is None:
        rho = sum(approving) / n
    else:
        rho = sum(w for w, ok in zip(settings.weights, approving) if ok) / sum(settings.weights)
    return tier_for(rho, approving[settings.reference], settings.tau)


def variant_states(data: VoteData, settings: Settings, round_no: int | None = None) -> list[dict]:
    """The SPEC §1 resonance states of a round's artifacts (every artifact: ``round_no`` None)
    under ``settings``, through the engine's JSON path (the ``rwb classify rcp`` output)."""
    import math

    from workbench.core.protocols.rcp.classify import classify_payload

    clusters = [{"name": name, "agents": [a for a, c in zip(data.agents, data.cluster_of.tolist()) if c == i],
                 "theta": settings.thetas[i],
                 **({"weight": settings.weights[i]} if settings.weights is not None else {})}
                for i, name in enumerate(data.clusters)]
    artifacts = []
    for k in range(data.m):
        if round_no is not None and int(data.rounds[k]) != round_no:
            continue
        author = data.authors[k] if int(data.author_col[k]) >= 0 else None
        row = data.votes[k].tolist()
        votes = {agent: (None if math.isnan(v) else int(v)) for agent, v in zip(data.agents, row)
                 if agent != author}
        artifacts.append({"id": data.keys[k], "author": author, "votes": votes})
    payload = {"clusters": clusters, "reference": data.clusters[settings.reference], "tau": settings.tau,
               "weighted": settings.weights is not None, "artifacts": artifacts}
    states = classify_payload(payload)
    ids = dict(zip(data.keys, data.artifact_ids.tolist()))
    for state in states:
        state["artifact_id"] = ids[state["artifact"]]
    return states


def save_variant(store: Store, run_id: str, label: str, settings_json: dict,
                 states_by_round: dict[int, list[dict]]) -> Changes:
    """Store a labelled what-if classification (one row per round); the run is not touched. The
    one writer of classification variants, a study's rule-only arms' too (:mod:`.variants`)."""
    from workbench.core.project.variants import save_classification

    return save_classification(store, run_id, label, settings_json, states_by_round)


@dataclass(frozen=True)
class Variant:
    id: int
    round: int
    label: str
    settings: dict
    artifacts: int
    created_at: str


def variants(store: Store, run_id: str) -> list[Variant]:
    """A run's saved what-if classifications, newest first."""
    rows = _sql.tuples(store, "SELECT id, round, label, settings_json, json_array_length(states_json), created_at "
                              "FROM classification_variants WHERE run_id = ? ORDER BY id DESC", (run_id,))
    import json

    return [Variant(i, r, label, json.loads(s) if s else {}, n or 0, created) for i, r, label, s, n, created in rows]


def movers(data: VoteData) -> list[tuple[int, int]]:
    """(row in round k, row in round k + 1) for each author with an artifact in both rounds
    (refinement rounds: the same agent's position moving), in round order."""
    by_author: dict[str, dict[int, int]] = {}
    for k, author in enumerate(data.authors):
        if author is not None:
            by_author.setdefault(author, {})[int(data.rounds[k])] = k
    pairs = []
    for rounds in by_author.values():
        for r in sorted(rounds):
            if r + 1 in rounds:
                pairs.append((rounds[r], rounds[r + 1]))
    return pairs
