"""Writing a run into the project file: one transaction per completed call (or per group of calls
that completed together), with the protocol's own records (artifacts, votes, ballots, traces) in
the same transaction as the call.

A crash therefore loses at most the calls in flight. A call that is issued again after a resume
replaces its earlier failed record instead of adding a duplicate.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from workbench.core.limits import clip_reply
from workbench.core.project.changes import Changes
from workbench.core.runs.config import RunConfig
from workbench.core.protocols.shared.steps import AgentCall, AgentReply
from workbench.core.project._sql import Transaction
from workbench.core.project.finding_scores import refresh_scores, vote_time
from workbench.core.project.findings import claim_findings
from workbench.core.project.store import Store, utc_now
from workbench.core.project import _sql



@dataclass
class CallRecord:
    """What the runner knows about one finished call: the request, the reply, the provider's record."""

    call: AgentCall
    reply: AgentReply
    provider: str
    simulated: bool
    gateway: dict[str, Any] = field(default_factory=dict)  # CallResult.record() or the sim's equivalent
    # Replies this one superseded: an unreadable reply that was asked again (a re-ask), or a
    # re-ask that failed. Each is recorded as its own row (see ``record_call``), before this one.
    earlier: tuple[CallRecord, ...] = ()


SUPERSEDED = "/superseded"  # suffix of the purpose of a superseded reply's row


def superseded_key(key: str, rec: CallRecord) -> str:
    """The step key of a superseded reply's row: ``<key>/try1`` for the first reply,
    ``<key>/try2`` for the first re-ask's, ..."""
    return f"{key}/try{int((rec.gateway.get('reask') or {}).get('reask', 0)) + 1}"


def clipped(rec: CallRecord) -> CallRecord:
    """``rec`` with a reply (and raw body) longer than MAX_REPLY_CHARS cut, for storage and for the
    protocol alike, and a note in the reply's meta (``clipped``: full length and sha256). A paid
    reply is the only record of what the model said: it is kept, never refused (docs/limits.md)."""
    text, note = clip_reply(rec.reply.text)
    raw = rec.gateway.get("response_raw")
    raw, raw_note = clip_reply(raw) if isinstance(raw, str) else (raw, None)
    if note is None and raw_note is None:
        return rec
    meta = {**rec.reply.meta, **({"clipped": note} if note else {}), **({"response_raw_clipped": raw_note} if raw_note else {})}
    gateway = {**rec.gateway, "response_raw": raw} if raw_note else rec.gateway
    return replace(rec, reply=replace(rec.reply, text=text, meta=meta), gateway=gateway)


def prepare_run(store: Store, run_id: str, cfg: RunConfig) -> Changes:
    """Rows a protocol needs before its first call (the findings voted on, the CONS question)."""
    with _sql.write(store) as tx:
        _prepare(tx, run_id, cfg)
    return tx.changes


def _prepare(tx: Transaction, run_id: str, cfg: RunConfig) -> None:
    now = utc_now()
    if cfg.protocol == "findings":
        # A finding is its id and its claim: an id held by another claim is refused, never reused.
        claim_findings(tx, run_id, cfg.findings)
    elif cfg.protocol == "cons":
        tx.execute("INSERT OR IGNORE INTO cons_questions (id, run_id, question, options_json, consensus_threshold, "
                   "min_voters, max_challenge_rounds, single_claim, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (_question_id(cfg, run_id), run_id, cfg.query, json.dumps(cfg.options), cfg.consensus_threshold,
                    cfg.min_voters, cfg.max_challenge_rounds, int(len(cfg.options) == 1), now, now),
                   tables=("cons_questions",))


def _question_id(cfg: RunConfig, run_id: str) -> str:
    return f"{cfg.question_id}@{run_id}"  # a question id is unique per run, so runs never collide


def record_call(store: Store, run_id: str, round_id: int, rec: CallRecord, cfg: RunConfig) -> tuple[int, Changes]:
    """Persist one finished call and what it means for the protocol, in one transaction."""
    call_ids, changes = record_calls(store, run_id, round_id, [rec], cfg)
    return call_ids[0], changes


def record_calls(store: Store, run_id: str, round_id: int, recs: list[CallRecord],
                 cfg: RunConfig) -> tuple[list[int], Changes]:
    """Persist calls that finished together, in one transaction (a group commit): with the
    rollback journal each commit waits for the file's readers and syncs the disk, so calls that
    end in the same moment share one. All of them are stored, or none."""
    with _sql.write(store) as tx:
        call_ids = [_record(tx, run_id, round_id, rec, cfg) for rec in recs]
    return call_ids, tx.changes


def _record(tx: Transaction, run_id: str, round_id: int, rec: CallRecord, cfg: RunConfig) -> int:
    """One call: the replies it superseded, its own row, and its protocol rows."""
    call = rec.call
    superseded = []
    later = sorted((*rec.earlier, rec), key=lambda r: int((r.gateway.get("reask") or {}).get("reask", 0)))
    for old in rec.earlier:  # the replies this one superseded, each its own row, kept as they came
        old = clipped(old)
        old_id = _insert_call(tx, run_id, round_id, old, superseded_key(call.key, old), call.purpose + SUPERSEDED)
        if old.reply.ok:  # answered, but unreadable: the next attempt names why
            after = next((r for r in later if (r.gateway.get("reask") or {}).get("reask", 0)
                          > (old.gateway.get("reask") or {}).get("reask", 0)), None)
            why = (after.gateway.get("reask") or {}).get("reask_error") if after is not None else None
            tx.update("llm_calls", old_id, {"status": "invalid", "error": why})
        superseded.append(superseded_key(call.key, old))
    call_id = _insert_call(tx, run_id, round_id, rec, call.key, call.purpose, superseded)
    valid = _record_protocol_rows(tx, run_id, round_id, call_id, rec, cfg)
    if valid is False:
        tx.update("llm_calls", call_id, {"status": "invalid"})
    return call_id


def _insert_call(tx: Transaction, run_id: str, round_id: int, rec: CallRecord, step_key: str, purpose: str,
                 superseded: list[str] | None = None) -> int:
    call, reply, g = rec.call, rec.reply, rec.gateway
    reask = dict(g.get("reask") or {})
    if superseded:
        reask["superseded"] = superseded
    return tx.insert("llm_calls", {
            "run_id": run_id, "round_id": round_id, "step_key": step_key, "agent_id": call.agent,
            "provider": rec.provider, "model": g.get("model"), "purpose": purpose,
            "sample_index": g.get("sample_index", 0), "attempts": g.get("attempts", 1),
            "request_json": {**(g.get("request") or {"messages": list(call.messages)}), **_fence(call),
                             **({"reask": reask} if reask else {})},
            "reply_text": reply.text, "response_raw": g.get("response_raw"),
            # The reply's metadata as the protocol saw it, so a resumed run sees the same reply.
            "response_json": {"reply_meta": reply.meta},
            "status": _call_status(reply, g), "error": reply.error, "error_kind": g.get("error_kind"),
            "prompt_tokens": g.get("prompt_tokens"), "completion_tokens": g.get("completion_tokens"),
            "total_tokens": g.get("total_tokens"), "cost_usd": g.get("cost_usd"), "cost_source": g.get("cost_source"),
            "latency_ms": g.get("latency_ms"), "cached": int(bool(g.get("cached"))), "simulated": int(rec.simulated),
            "started_at": g.get("started_at") or utc_now(), "finished_at": g.get("finished_at") or utc_now(),
        })


def _fence(call: AgentCall) -> dict:
    """The call's fence, kept with the request for audit: the name its untrusted text was fenced
    with (fresh per call, see protocols.shared.fencing) and how many forged fence lines it escaped."""
    if not call.meta.get("delimiter"):
        return {}
    return {"fence": {"delimiter": call.meta["delimiter"], "escapes": call.meta.get("fence_escapes", 0)}}


def _call_status(reply: AgentReply, g: dict) -> str:
    if reply.ok:
        return "ok"
    return g.get("status") if g.get("status") in ("rate_limited", "cancelled") else "error"


def _record_protocol_rows(tx: Transaction, run_id: str, round_id: int, call_id: int, rec: CallRecord,
                          cfg: RunConfig) -> bool | None:
    """Write the protocol's records for one call; returns whether the reply was valid (None: n/a)."""
    call, reply, sim = rec.call, rec.reply, int(rec.simulated)
    now = utc_now()
    text = reply.text if reply.ok else None
    if call.purpose == "generate":
        if text and text.strip():
            author = call.meta["author"]
            tx.execute("INSERT INTO artifacts (run_id, round_id, key, author_agent, author_cluster, content, call_id, "
                       "simulated, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, key) DO UPDATE "
                       "SET content = excluded.content, call_id = excluded.call_id",
                       (run_id, round_id, call.meta["artifact"], author, call.meta.get("cluster"), text.strip(),
                        call_id, sim, now), tables=("artifacts",))
            return True
        return None
    if call.purpose == "vote" or (call.purpose == "ballot" and call.reply_schema == "rcp_ballot"):
        from workbench.core.protocols.rcp.run import ParsedVote, parse_ballot, parse_vote

        if call.purpose == "vote":
            votes = {call.meta["artifact"]: parse_vote(text, call.meta.get("delimiter")) if reply.ok
                     else ParsedVote(None, "failed", reply.error or "")}
            positions = {call.meta["artifact"]: call.meta.get("presentation_index")}
        else:
            labels = call.meta["labels"]
            parsed = parse_ballot(text, list(labels), call.meta.get("delimiter"))
            votes = {labels[lab]: v for lab, v in parsed.items()}
            positions = {key: i for i, key in enumerate(labels.values())}
        for artifact, vote in votes.items():
            tx.execute("INSERT INTO votes (run_id, round_id, artifact_id, voter_agent, value, status, reason, raw, "
                       "call_id, ballot_mode, presentation_index, simulated, created_at) "
                       "SELECT ?, ?, id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM artifacts WHERE run_id = ? AND key = ? "
                       "ON CONFLICT (artifact_id, voter_agent) DO UPDATE SET value = excluded.value, "
                       "status = excluded.status, reason = excluded.reason, raw = excluded.raw, call_id = excluded.call_id",
                       (run_id, round_id, call.agent, vote.value, vote.status, vote.reason, text, call_id,
                        int(call.purpose == "ballot"), positions.get(artifact), sim, now, run_id, artifact),
                       tables=("votes",))
        return all(v.status == "valid" for v in votes.values()) if reply.ok else None
    if call.purpose == "finding_vote":
        if text is None:
            return None
        from workbench.core.protocols.findings.run import parse_finding_vote

        parsed = parse_finding_vote(call.agent, text, call.meta.get("delimiter"))
        vote = parsed.vote
        tx.insert("finding_votes", {
            "finding_id": call.meta["finding"], "agent": call.agent, "vote_type": vote.vote_type.value if vote else None,
            "confidence": vote.confidence if vote else None, "reason": vote.reason if vote else "",
            "status": "valid" if vote else "invalid", "invalid_reason": None if vote else parsed.reason,
            "raw": text, "client": "run", "run_id": run_id, "call_id": call_id, "simulated": sim,
            "created_at": vote_time(tx.store._connection(), call.meta["finding"], now)})
        refresh_scores(tx, [call.meta["finding"]])
        return vote is not None
    if call.purpose == "ballot":  # CONS
        if text is None:
            return None
        from workbench.core.protocols.cons.run import parse_ballot_reply

        parsed = parse_ballot_reply(call.agent, text, call.meta.get("delimiter"))
        b = parsed.ballot or {}
        tx.insert("cons_ballots", {
            "question_id": _question_id(cfg, run_id), "challenge_round": call.meta.get("challenge_round", 0),
            "agent_id": call.agent, "option": b.get("option"), "vote": b.get("vote"),
            "confidence": b.get("confidence"), "rationale": b.get("rationale"), "evidence_json": b.get("evidence") or [],
            "status": parsed.status if parsed.status != "failed" else "invalid", "invalid_reason": parsed.reason or None,
            "raw": text, "call_id": call_id, "simulated": sim, "created_at": now})
        return parsed.ballot is not None
    if call.purpose == "trace":
        from workbench.core.project.arm_import import trace_columns
        from workbench.core.protocols.arm import parse_reply

        trace = parse_reply(reply.text, reply.meta, error=reply.error, fence=call.meta.get("delimiter"),
                            schema=call.reply_schema)
        attempt = int(m.group(1)) + 1 if (m := re.match(r"fap/\w+/(\d+)$", call.key)) else 1
        tx.insert("traces", {"run_id": run_id, "round_id": round_id, "round_no": call.round_no, "role": call.agent,
                             "agent_id": call.agent, "attempt": attempt, "is_current": int(attempt == 1),
                             "call_id": call_id, "simulated": sim, "created_at": now, **trace_columns(trace)})
        return bool(trace.ok)
    return None


def finish_run(store: Store, run_id: str, cfg: RunConfig, result: Any) -> dict:
    """Store what the protocol concluded; returns the run's summary."""
    summary: dict[str, Any] = {"protocol": cfg.protocol}
    with _sql.write(store) as tx:
        if cfg.protocol == "rcp":
            summary["rounds"] = [{"round": r.index, "artifacts": len(r.artifacts), "states": r.states} for r in result]
        elif cfg.protocol == "findings":
            summary["findings"] = [r.to_output() for r in result.results.values() if r is not None]
        elif cfg.protocol == "cons":
            summary["cons"] = _finish_cons(tx, run_id, cfg, result)
        elif cfg.protocol == "arm":
            summary["arm"] = _finish_arm(store, tx, run_id, result)
    return summary


def _finish_cons(tx: Transaction, run_id: str, cfg: RunConfig, result) -> dict:
    from workbench.core.protocols.cons.report import outcome_json

    out = result.outcome
    data = outcome_json(out)
    qid, now = _question_id(cfg, run_id), utc_now()
    tx.update("cons_questions", qid, {"verdict": out.verdict, "actual_consensus": out.tally.actual_consensus,
                                      "leading_option": out.tally.leading_option, "next_action": out.next_action,
                                      "challenge_rounds": out.question.challenge_rounds, "result_json": data,
                                      "updated_at": now})
    for c in out.conflicts:
        tx.execute("INSERT OR REPLACE INTO cons_conflicts (id, question_id, conflict_type, severity, positions_json, "
                   "resolution_status, resolution_type, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (c.conflict_id, qid, c.conflict_type, c.severity, json.dumps([p.to_json() for p in c.positions]),
                    c.resolution.status, c.resolution.resolution_type, now), tables=("cons_conflicts",))
    tx.execute("DELETE FROM cons_escalations WHERE question_id = ?", (qid,), tables=("cons_escalations",))
    for e in out.escalations:
        decided = result.human_decision is not None
        tx.insert("cons_escalations", {"question_id": qid, "reason": e.reason, "detail": e.detail,
                                       "status": "resolved" if decided else "open", "decision": result.human_decision,
                                       "decided_by": "conductor" if decided else None, "created_at": now,
                                       "resolved_at": now if decided else None})
    return {**data, "humanDecision": result.human_decision}


def _finish_arm(store: Store, tx: Transaction, run_id: str, run) -> dict:
    from workbench.core.project.arm_import import trace_columns
    from workbench.core.protocols.arm import metrics_report, run_to_upstream

    upstream = run_to_upstream(run)
    for round_no, block in ((1, run.r1), (2, run.r2)):
        for role, trace in (block or {}).items():
            rows = _sql.rows(store, "traces", "run_id = ? AND round_no = ? AND role = ? AND is_current = 1",
                              (run_id, round_no, role))
            columns = {**trace_columns(trace), "source_json": upstream[f"r{round_no}"][role]}
            if rows:  # the gates may have rewritten the trace (polarity override, harness deltas)
                tx.update("traces", rows[0]["id"], columns)
            else:  # e.g. the FAP abort placeholder, which no call produced
                tx.insert("traces", {"run_id": run_id, "round_no": round_no, "role": role, "agent_id": role,
                                     "created_at": utc_now(), **columns})
    rest = {k: v for k, v in upstream.items() if k not in ("r1", "r2")}
    earlier = _sql.get(store, "runs", run_id)["provenance_json"] or {}
    tx.update("runs", run_id, {"provenance_json": {**earlier, "schema_version": run.generation, "key_order": list(upstream),
                                                   "round_keys": {r: list(upstream.get(r) or {}) for r in ("r1", "r2")},
                                                   "upstream": rest}})
    return metrics_report(upstream)
