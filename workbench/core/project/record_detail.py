"""One record whole, for the Trace Inspector's detail view: the row, its run, the call behind it
(the fenced request and the raw reply), what it refers to, and the auditors' notes.

Also the pieces of the comparisons: a trace's other round (R1 against R2 for the same agent),
the stored-versus-recomputed checks of an ARM run, and two runs side by side, aligned by round
and agent (:func:`run_sides`, :func:`align`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.core.project import _sql
from workbench.core.project.audit import AuditNote, notes_for
from workbench.core.project.calls import CallDetail, call_detail
from workbench.core.project.protocol_records import READ_COLUMNS
from workbench.core.project.records import BRANCH, rcp_tiers, round_of_label
from workbench.core.project.scores import answers as final_answers
from workbench.core.project.store import Store

_TABLE = {"call": "llm_calls", "trace": "traces", "vote": "votes", "ballot": "cons_ballots",
          "finding": "findings", "finding_vote": "finding_votes", "protocol_record": "protocol_records"}


@dataclass(frozen=True)
class RecordDetail:
    kind: str
    id: Any
    record: dict[str, Any]  # the row, JSON columns decoded
    run: dict[str, Any] | None  # id, label, protocol, status, source, simulated, batch_id, provenance
    call: CallDetail | None  # the call behind it (the record itself for a call)
    extras: dict[str, Any] = field(default_factory=dict)  # what the kind refers to (see record_detail)
    notes: tuple[AuditNote, ...] = ()

    @property
    def simulated(self) -> bool:
        return bool(self.record.get("simulated")) or bool((self.run or {}).get("simulated"))


def record_detail(store: Store, kind: str, record_id: Any) -> RecordDetail | None:
    """Everything the detail view shows about one record (None: no such record).

    ``extras`` by kind: a trace's ``other_round`` (the same agent's current trace in the other
    round), ``stored`` (its run's stored-versus-recomputed checks) and ``arm`` (the run's
    metrics report, without the checks); a vote's ``artifact`` and ``state`` (its resonance
    state); a call's ``products`` (the rows its reply became); a ballot's ``question``; a
    finding's ``votes``; a finding vote's ``finding``; a protocol record's ``data`` (its JSON) and
    ``record_kind`` (the protocol's own name for it). A call that wrote an artifact, and a vote on
    one, also have ``score`` when the run's question has a known answer (SPEC §8): the verdict,
    the answer read from the artifact (``extracted``) and the known answer."""
    table = _TABLE.get(kind)
    if table is None:
        return None
    if kind != "finding":
        try:
            record_id = int(record_id)
        except (TypeError, ValueError):
            return None
    row = _get(store, kind, table, record_id)
    if row is None:
        return None
    run_id = row.get("run_id")
    extras: dict[str, Any] = {}
    if kind == "ballot":
        question = _sql.get(store, "cons_questions", row["question_id"])
        extras["question"] = question
        run_id = (question or {}).get("run_id")
    run = _run(store, run_id) if run_id else None
    call_id = record_id if kind == "call" else row.get("call_id")
    call = call_detail(store, call_id) if call_id is not None else None

    if kind == "trace":
        extras["trace_json"] = trace_json(row)
        other = other_round(store, row)
        extras["other_round"] = other
        extras["other_json"] = trace_json(other) if other is not None else None
        extras["verdicts"] = {"this": trace_verdict(extras["trace_json"]),
                              "other": trace_verdict(extras["other_json"]) if other is not None else None}
        report = _arm_report(store, run)
        extras["stored"] = report.get("stored") or []
        extras["arm"] = {k: v for k, v in report.items() if k != "stored"}
    elif kind == "vote":
        artifact = _sql.get(store, "artifacts", row["artifact_id"])
        extras["artifact"] = artifact
        extras["state"] = _state(run, artifact["key"] if artifact else None)
        if artifact is not None:
            extras["score"] = _score(store, artifact, run)
    elif kind == "call":
        extras["products"] = _products(store, row)
        artifact = next((p for p in extras["products"] if p["kind"] == "artifact"), None)
        if artifact is not None:
            extras["state"] = _state(run, artifact["key"])
            extras["score"] = _score(store, artifact, run)
    elif kind == "finding":
        extras["votes"] = _sql.rows(store, "finding_votes", "finding_id = ?", (record_id,), order_by="id")
    elif kind == "finding_vote":
        extras["finding"] = _sql.get(store, "findings", row["finding_id"])
    elif kind == "protocol_record":
        extras["record_kind"] = row["kind"]
        extras["data"] = row["data_json"]
    notes = tuple(notes_for(store, kind, record_id))
    return RecordDetail(kind, record_id, row, run, call, extras, notes)


def _get(store: Store, kind: str, table: str, record_id: Any) -> dict[str, Any] | None:
    if kind == "protocol_record":  # its data as stored, even when another program left it malformed
        found = _sql.query(store, f"SELECT {READ_COLUMNS} FROM protocol_records WHERE id = ?", (record_id,))
        return found[0] if found else None
    return _sql.get(store, table, record_id)


def _run(store: Store, run_id: str) -> dict[str, Any] | None:
    row = _sql.get(store, "runs", run_id)
    if row is None:
        return None
    return {k: row[k] for k in ("id", "label", "protocol", "status", "source", "simulated", "batch_id",
                                "provenance_json", "summary_json", "config_json", "started_at")}


def _arm_report(store: Store, run: dict | None) -> dict:
    """The metrics report of a trace's run (a trace is an ARM trace, whoever stored it),
    recomputed from what the project holds, so that a run stored by an earlier workbench is
    checked by today's code under the rules of its own version (SPEC §11). A run not finished yet
    has nothing to rebuild from: then the report stored with it (the summary itself for an
    imported file, ``summary.arm`` for a run), if any."""
    if not run:
        return {}
    summary = run.get("summary_json") or {}
    kept = summary.get("arm") if isinstance(summary.get("arm"), dict) else summary
    if isinstance((run.get("provenance_json") or {}).get("upstream"), dict):
        from workbench.core.errors import InputError
        from workbench.core.project.arm_import import export_arm_run
        from workbench.core.protocols.arm import metrics_report

        try:
            return metrics_report(export_arm_run(store, run["id"]))
        except (InputError, KeyError, TypeError):  # an older project's provenance: keep what it stored
            pass
    return kept if isinstance(kept, dict) else {}


def _score(store: Store, artifact: dict, run: dict | None) -> dict | None:
    """An artifact against its run's known answer (SPEC §8): ``{"score", "extracted", "answer",
    "answer_type", "item", "final"}`` (``final``: the run's final answers, scores.answers: single,
    vote and debate have one); None when the run has no known answer."""
    if artifact.get("score") is None:
        return None
    item = ((run or {}).get("config_json") or {}).get("item") or {}
    return {"score": artifact["score"], "extracted": artifact.get("extracted"), "answer": item.get("answer"),
            "answer_type": item.get("answer_type"), "item": item.get("id"),
            "final": final_answers(store, run["id"]) if run else []}


def _state(run: dict | None, key: str | None) -> dict | None:
    """The artifact's resonance state, when its run's summary classifies artifacts (as RCP's does)."""
    if not run or key is None:
        return None
    for rnd in (run.get("summary_json") or {}).get("rounds") or []:
        for state in rnd.get("states") or []:
            if isinstance(state, dict) and state.get("artifact") == key:
                return state
    return None


def _products(store: Store, call: dict) -> list[dict]:
    """The protocol rows one call's reply became: an artifact, votes, a trace, a ballot, a finding vote."""
    out: list[dict] = []
    cid, run_id = call["id"], call["run_id"]
    for aid, key, extracted, score in _sql.tuples(
            store, "SELECT id, key, extracted, score FROM artifacts WHERE run_id = ? AND call_id = ?", (run_id, cid)):
        # extracted and score: against the run's known answer (SPEC §8), None without one
        out.append({"kind": "artifact", "id": aid, "key": key, "extracted": extracted, "score": score})
    for vid, key, value, status, reason in _sql.tuples(
            store, "SELECT v.id, a.key, v.value, v.status, v.reason FROM votes v LEFT JOIN artifacts a "
                   "ON a.id = v.artifact_id WHERE v.run_id = ? AND v.call_id = ? ORDER BY v.id", (run_id, cid)):
        out.append({"kind": "vote", "id": vid, "key": key, "value": value, "status": status, "reason": reason})
    for tid, round_no, role, ok in _sql.tuples(
            store, "SELECT id, round_no, role, ok FROM traces WHERE run_id = ? AND call_id = ?", (run_id, cid)):
        out.append({"kind": "trace", "id": tid, "round": round_no, "role": role, "ok": bool(ok)})
    for bid, status in _sql.tuples(store, "SELECT id, status FROM cons_ballots WHERE call_id = ?", (cid,)):
        out.append({"kind": "ballot", "id": bid, "status": status})
    for fid, finding, status in _sql.tuples(
            store, "SELECT id, finding_id, status FROM finding_votes WHERE run_id = ? AND call_id = ?", (run_id, cid)):
        out.append({"kind": "finding_vote", "id": fid, "finding": finding, "status": status})
    for pid, record_kind, key in _sql.tuples(
            store, "SELECT id, kind, key FROM protocol_records WHERE call_id = ? ORDER BY id", (cid,)):
        out.append({"kind": "protocol_record", "id": pid, "record_kind": record_kind, "key": key})
    return out


def trace_json(row: dict) -> dict:
    """ARM's JSON of a stored trace: as imported (or as the run wrote it), else rebuilt from its columns."""
    from workbench.core.project.trace_columns import trace_from_columns, trace_source

    source = trace_source(row)
    return source if isinstance(source, dict) else trace_from_columns(row)


def trace_verdict(data: dict | None) -> str:
    """yes, no, conditional or unknown: the trace's ``verdict`` field, else its claim's direction."""
    from workbench.core.protocols.arm import parse_trace, verdict_of

    if not isinstance(data, dict):
        return "unknown"
    try:
        return verdict_of(parse_trace(data))
    except Exception:  # a trace that does not parse has no verdict to show
        return "unknown"


def other_round(store: Store, trace: dict) -> dict | None:
    """The same agent's current trace in the other round of the same run (R1 <-> R2)."""
    other = 2 if trace.get("round_no") == 1 else 1
    rows = _sql.rows(store, "traces", "run_id = ? AND round_no = ? AND role = ? AND is_current = 1",
                     (trace["run_id"], other, trace["role"]), order_by="id DESC", limit=1)
    return rows[0] if rows else None


# ----- two runs side by side ---------------------------------------------------------------------
@dataclass(frozen=True)
class Side:
    """One agent's contribution to one round of a run, as the comparison shows it."""

    round: int | None
    agent: str
    sub: str  # what else tells two contributions of one agent in one round apart (a finding)
    kind: str
    id: Any
    text: str
    value: str  # confidence, vote or approvals, as text
    valid: bool


def run_sides(store: Store, run_id: str) -> list[Side]:
    """What each agent said in each round of a run, by the record kind its protocol declares as
    the run's votes (``Protocol.validity``): ARM traces, RCP artifacts (with the approvals they
    drew), finding votes, CONS ballots; the run's calls for any other protocol."""
    run = _run(store, run_id)
    if run is None:
        return []
    from workbench.core import registry

    declared = registry.protocols().get(run["protocol"])
    unit = declared.validity.kind if declared is not None and declared.validity is not None else None
    return _SIDES.get(unit, _call_sides)(store, run_id)


def _trace_sides(store: Store, run_id: str) -> list[Side]:
    return [Side(r, role, "", "trace", i, claim or "", _num(conf), bool(ok))
            for i, r, role, claim, conf, ok in _sql.tuples(
                store, "SELECT id, round_no, role, claim, confidence, ok FROM traces "
                       "WHERE run_id = ? AND is_current = 1 ORDER BY round_no, id", (run_id,))]


def _artifact_sides(store: Store, run_id: str) -> list[Side]:
    """Votes are on artifacts: each artifact, by its author, with the approvals it drew."""
    tiers = rcp_tiers(store, [run_id])
    out = []
    for aid, key, author, text, kind, approvals, cast in _sql.tuples(
            store, "SELECT a.id, a.key, a.author_agent, a.content, rd.kind, "
                   "(SELECT count(*) FROM votes v WHERE v.artifact_id = a.id AND v.value = 1), "
                   "(SELECT count(*) FROM votes v WHERE v.artifact_id = a.id AND v.value IS NOT NULL) "
                   "FROM artifacts a LEFT JOIN rounds rd ON rd.id = a.round_id WHERE a.run_id = ? ORDER BY a.id",
            (run_id,)):
        tier = tiers.get((run_id, key))
        value = f"{approvals}/{cast} approve" + (f" · {tier}" if tier else "")
        out.append(Side(round_of_label(kind or "") or _round_of_key(key), author or "?", "", "artifact", aid,
                        text or "", value, True))
    return out


def _finding_vote_sides(store: Store, run_id: str) -> list[Side]:
    return [Side(1, agent, finding, "finding_vote", i, f"{vote or 'invalid'}: {reason or invalid or ''}",
                 _num(conf), status == "valid")
            for i, finding, agent, vote, conf, reason, invalid, status in _sql.tuples(
                store, "SELECT id, finding_id, agent, vote_type, confidence, reason, invalid_reason, status "
                       "FROM finding_votes WHERE run_id = ? ORDER BY id", (run_id,))]


def _ballot_sides(store: Store, run_id: str) -> list[Side]:
    return [Side(rnd + 1, agent, "", "ballot", i, f"{vote or 'invalid'} {option or ''}: {why or ''}".strip(),
                 _num(conf), status == "valid")
            for i, rnd, agent, option, vote, conf, why, status in _sql.tuples(
                store, "SELECT b.id, b.challenge_round, b.agent_id, b.option, b.vote, b.confidence, "
                       "coalesce(b.rationale, b.invalid_reason), b.status FROM cons_ballots b "
                       "JOIN cons_questions q ON q.id = b.question_id WHERE q.run_id = ? ORDER BY b.id", (run_id,))]


def _call_sides(store: Store, run_id: str) -> list[Side]:
    return [Side(round_of_label(kind or ""), agent or "?", step, "call", i, (text or "")[:2000], status, status == "ok")
            for i, step, agent, kind, text, status in _sql.tuples(
                store, "SELECT c.id, c.step_key, c.agent_id, rd.kind, c.reply_text, c.status FROM llm_calls c "
                       "LEFT JOIN rounds rd ON rd.id = c.round_id WHERE c.run_id = ? ORDER BY c.id", (run_id,))]


def _answer_sides(store: Store, run_id: str) -> list[Side]:
    """The answers are the artifacts (single, vote, debate): each with what was read from it and,
    against a known answer, its verdict."""
    return [Side(round_of_label(kind or "") or _round_of_key(key), author or "?", "", "artifact", aid, text or "",
                 " · ".join(v for v in (extracted, score) if v) or "—", True)
            for aid, key, author, text, extracted, score, kind in _sql.tuples(
                store, "SELECT a.id, a.key, a.author_agent, a.content, a.extracted, a.score, rd.kind FROM artifacts a "
                       "LEFT JOIN rounds rd ON rd.id = a.round_id WHERE a.run_id = ? ORDER BY a.id", (run_id,))]


# By the record kind that holds a run's votes (its protocol's ValidityUnit.kind).
_SIDES = {"trace": _trace_sides, "vote": _artifact_sides, "finding_vote": _finding_vote_sides,
          "cons_ballot": _ballot_sides, "artifact": _answer_sides}


def _round_of_key(key: str) -> int | None:
    head = (key or "").split("-")[0]
    return int(head[1:]) if head[:1] == "r" and head[1:].isdigit() else None


def _num(value: object) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.2f}"
    return "—" if value is None else str(value)


def align(a: list[Side], b: list[Side]) -> list[tuple[Side | None, Side | None]]:
    """Pair two runs' contributions by (round, agent, sub), in round then agent order; a
    contribution only one run has is paired with None. Repeats of a key pair up in order."""
    def keyed(sides: list[Side]) -> dict[tuple, list[Side]]:
        out: dict[tuple, list[Side]] = {}
        for s in sides:
            out.setdefault((s.round if s.round is not None else 0, s.agent, s.sub), []).append(s)
        return out

    ka, kb = keyed(a), keyed(b)
    rows: list[tuple[Side | None, Side | None]] = []
    for key in sorted(set(ka) | set(kb), key=lambda k: (k[0], str(k[1]), str(k[2]))):
        left, right = ka.get(key, []), kb.get(key, [])
        for i in range(max(len(left), len(right))):
            rows.append((left[i] if i < len(left) else None, right[i] if i < len(right) else None))
    return rows


# Kinds a record reference may name and the list can show (see records.locate for artifacts).
LISTED = tuple(BRANCH)
