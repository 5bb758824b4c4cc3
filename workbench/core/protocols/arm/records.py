"""What ARM asks the project to store (SPEC §7: a protocol never writes SQL), and the reading of a reply.

- :func:`read`: a trace call's reply, read once (:func:`~..shared.steps.read_reply`): the parsed
  :class:`~.trace.Trace` the run goes on with, and a ``trace`` record (the row of that call:
  round, role, attempt). A FAP re-queue's attempt n is attempt n + 1 of its role's round-2 trace
  (the round-2 trace itself is attempt 1, the current one).
- :func:`finish`: the run's traces as the gates left them (``trace_final``: the round-1 and
  round-2 traces, each with its exported JSON, and the FAP abort placeholder no call made), the
  run's export provenance (schema version, key orders, the run-level JSON: ``provenance``) and the
  summary's ``arm`` report (:func:`~.report.metrics_report`).
"""

from __future__ import annotations

from workbench.core.protocols.arm.replies import TRACE_MODELS, parse_reply
from workbench.core.protocols.arm.report import metrics_report
from workbench.core.protocols.arm.trace import Trace, run_to_upstream
from workbench.core.protocols.shared.declaration import Finished, Record
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Reading


def read(call: AgentCall, reply: AgentReply) -> Reading:
    """The reply as a trace (a failed trace when it cannot be read, never coerced). The value is
    the trace the run goes on with, its ``_meta`` naming the provider the call asked for; the
    record keeps the reply's own meta (the round-1 and round-2 rows are rewritten at the end with
    the run's traces, see :func:`finish`). A failed call is nothing to judge (``valid`` None): it
    stays a failed call, issued again on resume."""
    fence, schema = call.meta.get("delimiter"), call.reply_schema
    meta = {"provider": call.meta.get("provider"), **reply.meta}
    text, error = (reply.text, None) if reply.ok else (None, reply.error or "the call failed")
    trace = parse_reply(text, meta, error=error, fence=fence, schema=schema)
    stored = trace
    if (text, error, meta.get("provider")) != (reply.text, reply.error, reply.meta.get("provider")):
        stored = parse_reply(reply.text, reply.meta, error=reply.error, fence=fence, schema=schema)
    attempt = int(call.meta.get("fap_attempt", 0)) + 1
    record = Record("trace", {"round_no": call.round_no, "role": call.agent, "agent": call.agent,
                              "attempt": attempt, "trace": stored})
    if not reply.ok:
        return Reading(trace, None, (record,))
    return Reading(trace, trace.ok, (record,), None if trace.ok else _problem(call, trace))


def _problem(call: AgentCall, trace: Trace) -> str:
    """Why the reply is no trace, as a re-ask tells the model: the parser's reason (for a reply
    cut at the token limit, what is wrong with the text, not the budget the model cannot raise)."""
    if trace.truncated:
        raw = trace.raw_reasoning_attempt
        trace = parse_reply(raw, {}, fence=call.meta.get("delimiter"), schema=call.reply_schema)
    return str(trace.failure_reason or "unreadable trace")


def reply_model(call: AgentCall):
    """The pydantic model a trace reply is validated with (its JSON schema is what a model is sent)."""
    return TRACE_MODELS.get(call.reply_schema or "")


def prepare(cfg, run_id: str) -> tuple[Record, ...]:
    return ()  # an ARM run stores nothing before its first call


def finish(cfg, run_id: str, run) -> Finished:
    upstream = run_to_upstream(run)
    records = [Record("trace_final", {"round_no": round_no, "role": role, "trace": trace,
                                      "source": upstream[f"r{round_no}"][role]})
               for round_no, block in ((1, run.r1), (2, run.r2)) for role, trace in (block or {}).items()]
    rest = {k: v for k, v in upstream.items() if k not in ("r1", "r2")}
    records.append(Record("provenance", {"schema_version": run.generation, "key_order": list(upstream),
                                         "round_keys": {r: list(upstream.get(r) or {}) for r in ("r1", "r2")},
                                         "upstream": rest}))
    return Finished({"arm": metrics_report(upstream)}, tuple(records))
