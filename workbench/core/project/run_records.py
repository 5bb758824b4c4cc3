"""Writing a run into the project file: one transaction per completed call (or per group of calls
that completed together), with the protocol's own records (artifacts, votes, ballots, traces) in
the same transaction as the call.

A crash therefore loses at most the calls in flight. A call that is issued again after a resume
replaces its earlier failed record instead of adding a duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from workbench.core.limits import clip_reply
from workbench.core.project import _sql
from workbench.core.project._sql import Transaction
from workbench.core.project.changes import Changes
from workbench.core.project.protocol_records import Where, write_records
from workbench.core.project.store import Store, utc_now
from workbench.core.protocols.shared.steps import AgentCall, AgentReply
from workbench.core.runs.config import RunConfig


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
    # A reading of the whole reply is dropped: the protocol reads the reply as it is kept.
    reading = rec.reply.reading if note is None else None
    return replace(rec, reply=replace(rec.reply, text=text, meta=meta, reading=reading), gateway=gateway)


def prepare_run(store: Store, run_id: str, cfg: RunConfig) -> Changes:
    """Rows a protocol needs before its first call (the findings voted on, the CONS question)."""
    with _sql.write(store) as tx:
        _prepare(tx, run_id, cfg)
    return tx.changes


def _prepare(tx: Transaction, run_id: str, cfg: RunConfig) -> None:
    """What the protocol declares it needs before its first call (``Protocol.prepare``)."""
    from workbench.core import registry

    protocol = registry.get(cfg.protocol)
    if protocol.prepare is not None:
        write_records(tx, Where(run_id, cfg.protocol, truth=truth_of(cfg)), protocol.prepare(cfg, run_id))


def truth_of(cfg: RunConfig) -> dict | None:
    """The run's known answer (its dataset item's), which the writers score against (SPEC §8)."""
    item = getattr(cfg, "item", None)
    return item.truth if item is not None else None


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
            "template_sha256": call.meta.get("template_sha256"),
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
    """Write the protocol's records for one call (as its reading declares them, SPEC §7); returns
    whether the reply was valid (None: nothing to judge)."""
    reading = rec.reply.reading
    if reading is None:
        reading = _read(rec, cfg)
    if reading is None:
        return None
    where = Where(run_id, rec.call.meta.get("protocol") or cfg.protocol, round_id, call_id, rec.simulated,
                  truth_of(cfg))
    # A record the project cannot store (a field missing, a value of the wrong kind: a plugin's
    # fault) must not take the paid call down with it: the call stays, marked invalid, and says why.
    tx.execute("SAVEPOINT protocol_records", tables=())
    try:
        write_records(tx, where, reading.records)
    except Exception as exc:  # noqa: BLE001 - any fault of a protocol's records, kept as the call's error
        tx.execute("ROLLBACK TO protocol_records", tables=())
        tx.update("llm_calls", call_id, {"error": f"the protocol's records could not be stored "
                                                  f"({type(exc).__name__}: {exc})"[:500]})
        return False
    finally:
        tx.execute("RELEASE protocol_records", tables=())
    return reading.valid


def _read(rec: CallRecord, cfg: RunConfig):
    """The reply read by its protocol's declared ``read``, for a caller that did not read it (a
    test, a call built by hand): the protocol the call names, else the run's."""
    from workbench.core import registry
    from workbench.core.protocols.shared.steps import read_reply

    declared = registry.protocols().get(rec.call.meta.get("protocol") or cfg.protocol)
    if declared is None or declared.read is None:
        return None
    return read_reply(rec.call, rec.reply, declared.read).reading


def finish_run(store: Store, run_id: str, cfg: RunConfig, result: Any) -> dict:
    """Store what the protocol concluded (``Protocol.finish``); returns the run's summary."""
    from workbench.core import registry

    summary: dict[str, Any] = {"protocol": cfg.protocol}
    protocol = registry.get(cfg.protocol)
    if protocol.finish is None:
        return summary
    finished = protocol.finish(cfg, run_id, result)
    truth = truth_of(cfg)
    with _sql.write(store) as tx:
        write_records(tx, Where(run_id, cfg.protocol, simulated=cfg.simulated, truth=truth), finished.records)
    summary = {**summary, **finished.summary}
    if truth is not None:  # what was scored, counted (SPEC §8): the summary says how the run did
        from workbench.core.project.scores import run_scores

        summary["scored"] = run_scores(store, run_id, truth)
    return summary
