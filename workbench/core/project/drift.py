"""The Drift & Convergence panel's reads: per ARM run its traces' confidences, drift, gates and
convergence; per batch the same values grouped, with the runs' contamination ground truth.

Everything shown is a value the project stores (the traces' ``confidence`` columns, the
self-reported deltas, the gate columns, the file's own convergence values); what is derived from
them (the harness delta, its band) follows FORMAT.md exactly, through the ARM package's own
functions. Convergence comes from the file (``convergence``, ``tfidf_convergence``,
``embedding_convergence``) where it stores one; a run still going (no stored value yet) is
recomputed from its stored round-1 claims, and says so.

Contamination ground truth (for the ROC study of SPEC §4): a run of the simulated panel is
*contaminated* when any agent of its configuration (``runs.config_json``, ``clusters[].agents[]``)
has ``params.contaminated`` true; its contaminated roles are those agents' roles (or ids). A run
whose configuration names no agents (an imported ARM file) has no ground truth (``None``) and is
left out of the ROC.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from workbench.core.project import _sql
from workbench.core.project.runs import RunListRow, run_list
from workbench.core.project.store import Store

# What a change to these tables can move on the panel.
TABLES = ("runs", "traces", "batches")
ROLES = ("alpha", "beta", "gamma")
ALL_RUNS = "*"  # the batch picker's "every ARM run" entry
# A batch run's label ends with its position (core.runs.batch.expand_batch), after its configured label.
_MIX = re.compile(r"(?:^|· )Q(\d+) · (.+) · rep (\d+)$")


ArmRunRow = RunListRow  # an ARM run as the run picker lists it (as every list names a run)


def arm_runs(store: Store, limit: int = 2000) -> list[ArmRunRow]:
    """ARM runs, newest first."""
    return run_list(store, limit, protocol="arm")


@dataclass(frozen=True)
class BatchRow:
    id: str
    name: str
    runs: int


def arm_batches(store: Store) -> list[BatchRow]:
    """Batches holding ARM runs, newest first, with how many."""
    rows = _sql.tuples(store, "SELECT b.id, b.name, count(r.id) FROM batches b JOIN runs r ON r.batch_id = b.id "
                              "WHERE r.protocol = 'arm' GROUP BY b.id ORDER BY b.created_at DESC, b.rowid DESC")
    return [BatchRow(i, name, n) for i, name, n in rows]


@dataclass(frozen=True)
class AgentDrift:
    """One role's confidences and drift (gamma: against the silent baseline)."""

    role: str
    cr1: float | None
    cr2: float | None
    baseline: float | None  # gamma only: the silent baseline's confidence
    delta: float | None  # the harness delta, unrounded
    reported: float | None  # the model's own number
    band: str
    mismatch: bool
    verdict_r1: str
    verdict_r2: str
    fap: bool  # alpha/beta: FAP fired on this agent's self-reported delta; gamma: gamma_drift_exceeded
    retries: tuple[float | None, ...] = ()  # confidences of the FAP re-runs (attempts after the first)
    traces: tuple[int | None, int | None] = (None, None)  # its current round-1 and round-2 trace ids


@dataclass(frozen=True)
class Convergence:
    name: str  # jaccard | tfidf | embedding
    value: float | None
    source: str  # "stored" (the file's own value), "recomputed" (from the stored claims), "absent"


@dataclass
class RunDrift:
    run_id: str
    label: str
    status: str
    source: str
    simulated: bool
    batch_id: str | None
    replicate: int | None
    question: str
    mix: str
    agents: dict[str, AgentDrift]
    silent: float | None
    silent_agent: str | None
    polarity_gate: bool
    gate_transition: str
    fap_triggered: bool
    fap_abort: bool
    convergence: dict[str, Convergence]
    contaminated: bool | None
    contaminated_roles: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    silent_trace: int | None = None  # the silent baseline's trace id

    def value(self, metric: str) -> float | None:
        """A run-level value: ``drift`` (mean harness delta of alpha and beta), ``gamma``
        (gamma against the silent baseline), ``jaccard``, ``tfidf`` or ``embedding``."""
        if metric == "drift":
            ds = [self.agents[r].delta for r in ("alpha", "beta") if r in self.agents and self.agents[r].delta is not None]
            return sum(ds) / len(ds) if ds else None
        if metric == "gamma":
            return self.agents["gamma"].delta if "gamma" in self.agents else None
        conv = self.convergence.get(metric)
        return conv.value if conv else None


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _ground_truth(config: dict) -> tuple[bool | None, tuple[str, ...]]:
    agents = [a for c in (config.get("clusters") or []) if isinstance(c, dict)
              for a in (c.get("agents") or []) if isinstance(a, dict)]
    if not agents:
        return None, ()
    roles = tuple((a.get("role") or a.get("id")) for a in agents
                  if isinstance(a.get("params"), dict) and a["params"].get("contaminated") is True)
    return bool(roles), roles


def _mix_and_question(run: dict) -> tuple[str, str]:
    config = run["config_json"] or {}
    question = str(config.get("query") or config.get("question") or "")
    m = _MIX.search(run["label"] or "")
    if m:
        return m.group(2), question
    providers = config.get("providers")
    if isinstance(providers, dict) and providers and all(isinstance(v, str) for v in providers.values()):
        return ", ".join(f"{k}={v}" for k, v in providers.items()), question  # an imported file's providers
    roles: dict[str, str] = {}
    for c in config.get("clusters") or []:
        for a in (c.get("agents") or []) if isinstance(c, dict) else []:
            if isinstance(a, dict) and a.get("role"):
                roles[a["role"]] = str(a.get("provider"))
    return (", ".join(f"{r}={p}" for r, p in roles.items()) or "as configured"), question


def run_drift(store: Store, run_id: str) -> RunDrift | None:
    """One ARM run's drift, gates and convergence from its stored traces; None if no such run."""
    run = _sql.get(store, "runs", run_id)
    if run is None or run["protocol"] != "arm":
        return None
    return _run_drift(store, run)


_TRACE_COLUMNS = ("id, round_no, role, attempt, is_current, ok, confidence, claim, verdict, drift_score_json, "
                  "self_delta_vs_baseline, polarity_gate_fired, reconciliation_status")


def _run_drift(store: Store, run: dict) -> RunDrift:
    from workbench.core.protocols.arm import (
        delta_mismatch,
        drift_band,
        harness_delta,
        verdict_transition,
    )

    rows = _sql.query(store, f"SELECT {_TRACE_COLUMNS} FROM traces WHERE run_id = ? ORDER BY round_no, role, attempt",
                      (run["id"],))
    current = {(r["round_no"], r["role"]): r for r in rows if r["is_current"]}
    retries: dict[str, list[float | None]] = {}
    for r in rows:
        if r["round_no"] == 2 and not r["is_current"] and r["attempt"] > 1:
            retries.setdefault(r["role"], []).append(_num(r["confidence"]))
    provenance = run["provenance_json"] or {}
    upstream = provenance.get("upstream") or {}
    meta = upstream.get("runMeta") if isinstance(upstream.get("runMeta"), dict) else {}
    if not retries:  # ARM v0.8's isolation re-queue, kept in runMeta
        for req in meta.get("fap_requeue") or []:
            if isinstance(req, dict) and req.get("agent") in ROLES:
                retries.setdefault(req["agent"], []).append(_num(req.get("post_requeue_confidence")))

    def conf(round_no: int, role: str, need_ok: bool = False) -> float | None:
        r = current.get((round_no, role))
        if r is None or (need_ok and not r["ok"]):
            return None
        return _num(r["confidence"])

    silent = conf(1, "silent")
    agents: dict[str, AgentDrift] = {}
    for role in ROLES:
        if (1, role) not in current and (2, role) not in current:
            continue
        cr1, cr2 = conf(1, role), conf(2, role, need_ok=True)
        r2 = current.get((2, role))
        if role == "gamma":
            delta = harness_delta(cr2, silent)
            reported = _num(r2["self_delta_vs_baseline"]) if r2 else None
            fap = bool(r2 and r2["ok"] and reported is not None and reported > 0.04)
        else:
            delta = harness_delta(cr2, cr1)
            drift_score = (r2 or {}).get("drift_score_json") or {}
            reported = _num(drift_score.get("confidence_delta")) if isinstance(drift_score, dict) else None
            fap = reported is not None and reported > 0.04
        agents[role] = AgentDrift(
            role=role, cr1=cr1, cr2=cr2, baseline=silent if role == "gamma" else None, delta=delta,
            reported=reported, band=drift_band(delta), mismatch=delta_mismatch(reported, delta),
            verdict_r1=_verdict(current.get((1, role))), verdict_r2=_verdict(r2),
            fap=fap, retries=tuple(retries.get(role, ())),
            traces=tuple(current[(n, role)]["id"] if (n, role) in current else None for n in (1, 2)))
    g1, g2 = current.get((1, "gamma")), current.get((2, "gamma"))
    gate = bool((g2 and (g2["polarity_gate_fired"] or g2["reconciliation_status"] == "gamma_flip_detected"))
                or meta.get("polarity_gate_fired") is True)
    transition = verdict_transition(_verdict(g1), _verdict(g2)) if g2 and g2["ok"] else "unknown"
    fap_triggered = bool(meta.get("fap_drift_triggered") is True
                         or any(agents[r].fap for r in ("alpha", "beta") if r in agents))
    fap_abort = bool(meta.get("silentBaselineFailed") is True
                     or (g2 is not None and isinstance(g2["claim"], str) and g2["claim"].startswith("[FAP")))
    contaminated, roles = _ground_truth(run["config_json"] or {})
    mix, question = _mix_and_question(run)
    return RunDrift(
        run_id=run["id"], label=run["label"], status=run["status"], source=run["source"],
        simulated=bool(run["simulated"]), batch_id=run["batch_id"], replicate=run["replicate"],
        question=question, mix=mix, agents=agents, silent=silent,
        silent_agent=meta.get("silentAgent") if isinstance(meta.get("silentAgent"), str) else None,
        polarity_gate=gate, gate_transition=transition, fap_triggered=fap_triggered, fap_abort=fap_abort,
        convergence=_convergence(upstream, provenance, rows), contaminated=contaminated,
        contaminated_roles=roles,
        silent_trace=current[(1, "silent")]["id"] if (1, "silent") in current else None)


def _verdict(row: dict | None) -> str:
    if row is None or not row["ok"]:
        return "unknown"
    from workbench.core.protocols.arm import claim_direction

    v = row["verdict"].strip().lower() if isinstance(row["verdict"], str) else ""
    return v if v in ("yes", "no", "conditional") else claim_direction(row["claim"])


_STORED_KEYS = {"jaccard": "convergence", "tfidf": "tfidf_convergence", "embedding": "embedding_convergence"}


def _convergence(upstream: dict, provenance: dict, rows: list[dict]) -> dict[str, Convergence]:
    """Each convergence the file stores; Jaccard and TF-IDF it does not store (a run still going,
    or a build that did not compute TF-IDF) are recomputed from the stored round-1 claims."""
    from workbench.core.protocols.arm import jaccard_convergence, tfidf_convergence
    from workbench.core.protocols.arm.versions import smoothed_idf_for

    meta = upstream.get("runMeta") if isinstance(upstream.get("runMeta"), dict) else {}
    out: dict[str, Convergence] = {}
    claims = [r["claim"] for r in rows if r["round_no"] == 1 and r["is_current"] and r["ok"]
              and r["role"] in ROLES and isinstance(r["claim"], str) and r["claim"]]
    # The idf of the run's own schema; a workbench run not yet finished has none recorded: it
    # will be written as v1.3 (smoothed).
    smooth = smoothed_idf_for(provenance.get("schema_version"))
    for name, key in _STORED_KEYS.items():
        stored = upstream[key] if key in upstream else meta.get(key)
        if _num(stored) is not None:
            out[name] = Convergence(name, _num(stored), "stored")
        elif name == "embedding":  # not recomputable offline (FORMAT.md)
            out[name] = Convergence(name, None, "absent")
        else:
            value = jaccard_convergence(claims) if name == "jaccard" else tfidf_convergence(claims, smooth=smooth)
            out[name] = Convergence(name, value, "recomputed" if value is not None else "absent")
    return out


@dataclass
class BatchDrift:
    batch_id: str
    name: str
    runs: list[RunDrift]


def batch_drift(store: Store, batch_id: str, cancel: threading.Event | None = None) -> BatchDrift:
    """Every ARM run of a batch (``ALL_RUNS``: of the project), in the batch's order."""
    if batch_id == ALL_RUNS:
        name = "every ARM run"
        runs = _sql.rows(store, "runs", "protocol = 'arm'", order_by="started_at, rowid")
    else:
        row = _sql.get(store, "batches", batch_id)
        name = (row or {}).get("name") or batch_id
        runs = _sql.rows(store, "runs", "protocol = 'arm' AND batch_id = ?", (batch_id,), order_by="rowid")
    out = []
    for run in runs:
        if cancel is not None and cancel.is_set():
            break
        out.append(_run_drift(store, run))
    return BatchDrift(batch_id, name, out)


def group_key(run: RunDrift, by: str) -> str:
    """The group of a run for ``by`` = mix, question or contamination."""
    if by == "mix":
        return run.mix
    if by == "question":
        return run.question or "(no question)"
    if by == "contamination":
        return {True: "contaminated", False: "clean", None: "unknown"}[run.contaminated]
    raise ValueError(f"unknown grouping {by!r}")


def grouped_values(batch: BatchDrift, metric: str, by: str) -> tuple[dict[str, list[float]], dict[Any, list[float]]]:
    """Values of ``metric`` per group, and per replicate cell (same question, mix and role).

    ``metric``: ``delta`` (each agent's drift: alpha and beta against round 1, gamma against the
    silent baseline; one value per agent) or a run-level value (see :meth:`RunDrift.value`).
    ``by``: ``role`` (delta only), ``mix``, ``question`` or ``contamination``."""
    groups: dict[str, list[float]] = {}
    cells: dict[Any, list[float]] = {}
    for run in batch.runs:
        if metric == "delta":
            for role, agent in run.agents.items():
                if agent.delta is None:
                    continue
                key = role if by == "role" else group_key(run, by)
                groups.setdefault(key, []).append(agent.delta)
                cells.setdefault((run.question, run.mix, role), []).append(agent.delta)
        else:
            value = run.value(metric)
            if value is None:
                continue
            key = "every run" if by == "role" else group_key(run, by)
            groups.setdefault(key, []).append(value)
            cells.setdefault((run.question, run.mix), []).append(value)
    return groups, cells
