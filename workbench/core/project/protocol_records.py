"""Storing what protocols declare: each :class:`~workbench.core.protocols.shared.declaration.Record`
by its kind, in the table that kind lives in (SPEC §7: a protocol never writes SQL).

The kinds are the project's, not the protocols': a protocol says "an artifact", "a vote", "a trace",
and any protocol (a plugin's too) may produce them. A kind this module has no table for is kept in
``protocol_records`` as JSON (``record``), with the protocol, the call and a key.

| kind            | table            | fields                                                             |
|-----------------|------------------|--------------------------------------------------------------------|
| artifact        | artifacts (1)    | key, author, cluster, content (scored against the run's truth)     |
| answer          | answers          | key, text, agent, detail; a run's final answer (scored alike)      |
| vote            | votes (1)        | artifact (key), voter, value, status, reason, raw, ballot_mode,    |
|                 |                  | presentation_index                                                 |
| finding         | findings         | id, claim, context (before the first call: prepare)                |
| finding_vote    | finding_votes    | finding, agent, vote_type, confidence, reason, status,             |
|                 |                  | invalid_reason, raw                                                |
| cons_question   | cons_questions   | question, text, options, consensus_threshold, min_voters,          |
|                 |                  | max_challenge_rounds (prepare)                                     |
| cons_ballot     | cons_ballots     | question, challenge_round, agent, option, vote, confidence,        |
|                 |                  | rationale, evidence, status, invalid_reason, raw                   |
| cons_outcome    | cons_questions,  | question, outcome (the engine's), human_decision (finish)          |
|                 | cons_conflicts,  |                                                                    |
|                 | cons_escalations |                                                                    |
| trace           | traces           | round_no, role, attempt, trace (an ARM Trace)                      |
| trace_final     | traces           | round_no, role, trace, source (after the gates, finish)            |
| provenance      | runs             | any keys: merged into the run's provenance (finish)                |
| (anything else) | protocol_records | key, agent, data                                                   |

(1) Views since schema step 14: the rows are written to ``artifact_rows`` and ``vote_rows``, a
copy of the call's reply kept once, in the call.

A CONS question id is unique per run (``question@run``), so runs never collide.

Scoring (SPEC §8) happens here, once, as an artifact or an answer is written: a run whose question
is a dataset item with a known answer carries its truth in :class:`Where`, and each text gets the
answer read from it (``extracted``) and its verdict (``score``), by :mod:`workbench.core.scoring`.
No protocol scores anything; a plugin's artifacts are scored like the built-in ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from workbench.core.project import _sql
from workbench.core.project._sql import Transaction
from workbench.core.project.schema import REPLY_REASON
from workbench.core.project.store import utc_now


class Where:
    """Where a record belongs: its run, round and call, the protocol, and whether it is simulated;
    ``truth``: the run's known answer (``{"answer", "answer_type"}``, a config's ``item.truth``),
    which artifacts and answers are scored against, or None."""

    __slots__ = ("run_id", "round_id", "call_id", "protocol", "simulated", "now", "truth")

    def __init__(self, run_id: str, protocol: str, round_id: int | None = None, call_id: int | None = None,
                 simulated: bool = False, truth: dict | None = None):
        self.run_id, self.protocol, self.round_id, self.call_id = run_id, protocol, round_id, call_id
        self.simulated, self.now, self.truth = int(bool(simulated)), utc_now(), truth

    def scored(self, text: str | None, extracted: str | None = None) -> tuple[str | None, str | None]:
        """``(extracted, score)`` of a text against the truth; without one, the protocol's own
        ``extracted`` (what its plurality compared) and no score."""
        if self.truth is None:
            return extracted, None
        from workbench.core.protocols.echo.wrap import strip_echo_trailer
        from workbench.core.scoring import score

        # The model's answer, without the lines Resonance Echo adds to a wrapped run's replies (a
        # recital, a footer): their marker's hex digits would be read as the last number.
        got = score(strip_echo_trailer(text), self.truth["answer"], self.truth["answer_type"])
        return got.extracted, got.verdict


# protocol_records read back: every column, with a data_json that another program left malformed
# read as the JSON string of its text (so it decodes, and shows what is there, never a crash).
READ_COLUMNS = ("id, run_id, round_id, call_id, protocol, kind, key, agent_id, simulated, created_at, "
                "CASE WHEN json_valid(data_json) THEN data_json ELSE json_quote(data_json) END AS data_json")


# Whether a value is its call's reply (1 or 0), and whether it is the reply's "reason" field: the
# copies schema step 14 keeps once, in the call. A NULL value or no call is never a copy.
_SAME_AS_REPLY = ("coalesce((SELECT c.reply_text IS {value} FROM llm_call_rows AS c "
                  "WHERE c.id = {call} AND {value} IS NOT NULL), 0)")
_SAME_AS_REASON = ("coalesce((SELECT " + REPLY_REASON.format(reply="c.reply_text") + " IS {value} "
                   "FROM llm_call_rows AS c WHERE c.id = {call} AND {value} IS NOT NULL), 0)")


def question_id(question: str, run_id: str) -> str:
    """A CONS question's id in the project: unique per run."""
    return f"{question}@{run_id}"


def write_records(tx: Transaction, where: Where, records: Iterable[Any]) -> None:
    for record in records:
        WRITERS.get(record.kind, _generic)(tx, where, record.fields, record.kind)


def _artifact(tx: Transaction, w: Where, f: dict, _kind: str) -> None:
    # Schema step 14: a text that is its call's reply is kept once, in the call (content '' and
    # content_from_call 1; the view ``artifacts`` reads it back).
    extracted, score = w.scored(f["content"]) if w.truth is not None else (None, None)
    tx.execute("INSERT INTO artifact_rows (run_id, round_id, key, author_agent, author_cluster, content, "
               "content_from_call, call_id, simulated, created_at, extracted, score) "
               "SELECT ?1, ?2, ?3, ?4, ?5, CASE WHEN same THEN '' ELSE ?6 END, same, ?7, ?8, ?9, ?10, ?11 "
               f"FROM (SELECT {_SAME_AS_REPLY.format(value='?6', call='?7')} AS same) WHERE true "
               "ON CONFLICT (run_id, key) DO UPDATE SET content = excluded.content, "
               "content_from_call = excluded.content_from_call, call_id = excluded.call_id, "
               "extracted = excluded.extracted, score = excluded.score",
               (w.run_id, w.round_id, f["key"], f["author"], f.get("cluster"), f["content"], w.call_id,
                w.simulated, w.now, extracted, score), tables=("artifacts",))


def _answer(tx: Transaction, w: Where, f: dict, _kind: str) -> None:
    """A run's final answer (a control's, a debate's): its text (None: no answer was reached),
    scored against the truth like an artifact."""
    text = f.get("text")
    extracted, score = w.scored(text, f.get("extracted"))
    tx.execute("INSERT INTO answers (run_id, round_id, key, author_agent, text, extracted, score, detail_json, "
               "call_id, simulated, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
               "ON CONFLICT (run_id, key) DO UPDATE SET author_agent = excluded.author_agent, text = excluded.text, "
               "extracted = excluded.extracted, score = excluded.score, detail_json = excluded.detail_json",
               (w.run_id, w.round_id, f.get("key") or "final", f.get("agent"), text, extracted, score,
                json.dumps(f.get("detail") or {}, ensure_ascii=False), w.call_id, w.simulated, w.now),
               tables=("answers",))


def _vote(tx: Transaction, w: Where, f: dict, _kind: str) -> None:
    # Schema step 14: the raw reply, and a reason that is the reply's "reason" field, are kept once,
    # in the call (NULL and a flag; the view ``votes`` reads them back).
    tx.execute("INSERT INTO vote_rows (run_id, round_id, artifact_id, voter_agent, value, status, reason, "
               "reason_from_call, raw, raw_from_call, call_id, ballot_mode, presentation_index, simulated, "
               "created_at) "
               "SELECT ?1, ?2, a.id, ?3, ?4, ?5, CASE WHEN same_reason THEN NULL ELSE ?6 END, same_reason, "
               "CASE WHEN same_raw THEN NULL ELSE ?7 END, same_raw, ?8, ?9, ?10, ?11, ?12 "
               f"FROM artifact_rows AS a, (SELECT {_SAME_AS_REPLY.format(value='?7', call='?8')} AS same_raw, "
               f"{_SAME_AS_REASON.format(value='?6', call='?8')} AS same_reason) "
               "WHERE a.run_id = ?13 AND a.key = ?14 "
               "ON CONFLICT (artifact_id, voter_agent) DO UPDATE SET value = excluded.value, "
               "status = excluded.status, reason = excluded.reason, reason_from_call = excluded.reason_from_call, "
               "raw = excluded.raw, raw_from_call = excluded.raw_from_call, call_id = excluded.call_id",
               (w.run_id, w.round_id, f["voter"], f["value"], f["status"], f["reason"], f.get("raw"), w.call_id,
                int(bool(f.get("ballot_mode"))), f.get("presentation_index"), w.simulated, w.now,
                w.run_id, f["artifact"]), tables=("votes",))


def _finding(tx: Transaction, w: Where, f: dict, _kind: str) -> None:
    from workbench.core.project.findings import claim_findings

    claim_findings(tx, w.run_id, [f])


def _finding_vote(tx: Transaction, w: Where, f: dict, _kind: str) -> None:
    from workbench.core.project.finding_scores import refresh_scores, vote_time

    tx.insert("finding_votes", {
        "finding_id": f["finding"], "agent": f["agent"], "vote_type": f.get("vote_type"),
        "confidence": f.get("confidence"), "reason": f.get("reason") or "", "status": f["status"],
        "invalid_reason": f.get("invalid_reason"), "raw": f.get("raw"), "client": "run", "run_id": w.run_id,
        "call_id": w.call_id, "simulated": w.simulated,
        "created_at": vote_time(tx.store._connection(), f["finding"], w.now)})
    refresh_scores(tx, [f["finding"]])


def _cons_question(tx: Transaction, w: Where, f: dict, _kind: str) -> None:
    options = list(f["options"])
    tx.execute("INSERT OR IGNORE INTO cons_questions (id, run_id, question, options_json, consensus_threshold, "
               "min_voters, max_challenge_rounds, single_claim, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
               (question_id(f["question"], w.run_id), w.run_id, f["text"], json.dumps(options), f["consensus_threshold"],
                f["min_voters"], f["max_challenge_rounds"], int(len(options) == 1), w.now, w.now),
               tables=("cons_questions",))


def _cons_ballot(tx: Transaction, w: Where, f: dict, _kind: str) -> None:
    tx.insert("cons_ballots", {
        "question_id": question_id(f["question"], w.run_id), "challenge_round": f.get("challenge_round", 0),
        "agent_id": f["agent"], "option": f.get("option"), "vote": f.get("vote"), "confidence": f.get("confidence"),
        "rationale": f.get("rationale"), "evidence_json": f.get("evidence") or [], "status": f["status"],
        "invalid_reason": f.get("invalid_reason") or None, "raw": f.get("raw"), "call_id": w.call_id,
        "simulated": w.simulated, "created_at": w.now})


def _cons_outcome(tx: Transaction, w: Where, f: dict, _kind: str) -> None:
    out, data, decision = f["outcome"], f["data"], f.get("human_decision")
    qid = question_id(f["question"], w.run_id)
    tx.update("cons_questions", qid, {"verdict": out.verdict, "actual_consensus": out.tally.actual_consensus,
                                      "leading_option": out.tally.leading_option, "next_action": out.next_action,
                                      "challenge_rounds": out.question.challenge_rounds, "result_json": data,
                                      "updated_at": w.now})
    for c in out.conflicts:
        tx.execute("INSERT OR REPLACE INTO cons_conflicts (id, question_id, conflict_type, severity, positions_json, "
                   "resolution_status, resolution_type, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (c.conflict_id, qid, c.conflict_type, c.severity, json.dumps([p.to_json() for p in c.positions]),
                    c.resolution.status, c.resolution.resolution_type, w.now), tables=("cons_conflicts",))
    tx.execute("DELETE FROM cons_escalations WHERE question_id = ?", (qid,), tables=("cons_escalations",))
    for e in out.escalations:
        decided = decision is not None
        tx.insert("cons_escalations", {"question_id": qid, "reason": e.reason, "detail": e.detail,
                                       "status": "resolved" if decided else "open", "decision": decision,
                                       "decided_by": "conductor" if decided else None, "created_at": w.now,
                                       "resolved_at": w.now if decided else None})


def _trace(tx: Transaction, w: Where, f: dict, _kind: str) -> None:
    from workbench.core.project.trace_columns import trace_columns

    attempt = int(f.get("attempt", 1))
    row = {"run_id": w.run_id, "round_id": w.round_id, "round_no": f["round_no"], "role": f["role"],
           "agent_id": f.get("agent", f["role"]), "attempt": attempt,
           "is_current": int(f.get("is_current", attempt == 1)), "call_id": w.call_id,
           "simulated": w.simulated, "created_at": w.now, **trace_columns(f["trace"])}
    # A call issued again (a failed one, on resume) replaces the row its failure left, never adds one.
    earlier = _sql.rows(tx.store, "traces", "run_id = ? AND round_no = ? AND role = ? AND attempt = ? "
                                            "AND call_id IS NOT NULL", (w.run_id, f["round_no"], f["role"], attempt))
    if earlier:
        tx.update("traces", earlier[0]["id"], row)
    else:
        tx.insert("traces", row)


def _trace_final(tx: Transaction, w: Where, f: dict, _kind: str) -> None:
    """A trace as the protocol concluded it (the gates may rewrite one); one no call made (a
    placeholder) is added."""
    from workbench.core.project.trace_columns import store_source_once, trace_columns

    sourced = {"source_json": f["source"], "source_rebuilt": 0} if "source" in f else {}
    columns = {**trace_columns(f["trace"]), **sourced}
    rows = _sql.rows(tx.store, "traces", "run_id = ? AND round_no = ? AND role = ? AND is_current = 1",
                     (w.run_id, f["round_no"], f["role"]))
    if rows:
        trace_id = rows[0]["id"]
        tx.update("traces", trace_id, columns)
    else:
        trace_id = tx.insert("traces", {"run_id": w.run_id, "round_no": f["round_no"], "role": f["role"],
                                        "agent_id": f["role"], "created_at": w.now, **columns})
    if sourced:  # the source is kept only where the columns cannot give it back exactly
        store_source_once(tx.conn, trace_id)


def _provenance(tx: Transaction, w: Where, f: dict, _kind: str) -> None:
    earlier = _sql.get(tx.store, "runs", w.run_id)["provenance_json"] or {}
    tx.update("runs", w.run_id, {"provenance_json": {**earlier, **f}})


def _generic(tx: Transaction, w: Where, f: dict, kind: str) -> None:
    tx.insert("protocol_records", {"run_id": w.run_id, "round_id": w.round_id, "call_id": w.call_id,
                                   "protocol": w.protocol, "kind": kind if kind != "record" else f.get("name", "record"),
                                   "key": f.get("key"), "agent_id": f.get("agent"), "data_json": f.get("data", {}),
                                   "simulated": w.simulated, "created_at": w.now})


WRITERS: dict[str, Callable[[Transaction, Where, dict, str], None]] = {
    "artifact": _artifact, "answer": _answer, "vote": _vote, "finding": _finding, "finding_vote": _finding_vote,
    "cons_question": _cons_question, "cons_ballot": _cons_ballot, "cons_outcome": _cons_outcome,
    "trace": _trace, "trace_final": _trace_final, "provenance": _provenance,
}
