"""Exporting a run: JSONL and CSV (one record per call, artifact, answer, vote, trace..., and each
record a protocol keeps of its own kinds: ``protocol_record``), and the report in Markdown or HTML.
An artifact or an answer scored against the run's known answer (SPEC §8) carries ``correct``,
``extracted`` and ``score``.
:func:`export_bytes` is what the CLI and the GUI both write.

Every record says whether it is simulated. Nothing secret is in a project file to begin with
(providers name where keys live, and the gateway scrubs replies and errors), so an export
cannot leak a key either.

Model text is untrusted (SPEC §11, :mod:`workbench.core.safe_output`): a CSV cell that starts like
a formula gets a leading ``'``, and JSONL escapes every control character, so both are exact for
a program and inert in a spreadsheet or a terminal.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project.audit import notes_of_run
from workbench.core.project.protocol_records import READ_COLUMNS
from workbench.core.project.store import Store
from workbench.core.safe_output import json_text, write_csv


def run_records(store: Store, run_id: str) -> Iterator[dict]:
    run = _sql.get(store, "runs", run_id)
    if run is None:
        raise InputError("run", f"no run {run_id!r} in this project")
    sim = bool(run["simulated"])
    notes = notes_of_run(store, run_id)
    verdicts = {(n.record_kind, n.record_id): n.verdict for n in notes}  # oldest first: the newest wins

    def audited(record: dict, kind: str, key: object) -> dict:
        """``record`` with its audit verdict (the newest note's), when an auditor gave one."""
        verdict = verdicts.get((kind, str(key)))
        return {**record, "audit": verdict} if verdict is not None else record

    yield {"kind": "run", "id": run_id, "protocol": run["protocol"], "label": run["label"], "status": run["status"],
           "seed": run["seed"], "dispatch": run["dispatch"], "simulated": sim, "source": run["source"],
           "started_at": run["started_at"], "finished_at": run["finished_at"], "error": run["error"]}
    for r in _sql.rows(store, "llm_calls", "run_id = ?", (run_id,), order_by="id"):
        record = {"kind": "call", "id": r["id"], "step_key": r["step_key"], "agent": r["agent_id"], "purpose": r["purpose"],
                  "provider": r["provider"], "model": r["model"], "status": r["status"], "attempts": r["attempts"],
                  "error": r["error"], "error_kind": r["error_kind"], "prompt_tokens": r["prompt_tokens"],
                  "completion_tokens": r["completion_tokens"], "cost_usd": r["cost_usd"], "cost_source": r["cost_source"],
                  "latency_ms": r["latency_ms"], "request": r["request_json"], "reply": r["reply_text"],
                  "simulated": bool(r["simulated"])}
        yield audited(record, "call", r["id"])
    authors = {}
    for a in _sql.rows(store, "artifacts", "run_id = ?", (run_id,), order_by="id"):
        authors[a["id"]] = (a["key"], a["author_agent"])
        record = {"kind": "artifact", "id": a["key"], "author": a["author_agent"], "cluster": a["author_cluster"],
                  "text": a["content"], "simulated": bool(a["simulated"])}
        yield audited({**record, **_scored(a)}, "artifact", a["id"])
    # A run's final answer(s) (SPEC §8: a control's, a debate's), scored like its artifacts.
    for a in _sql.rows(store, "answers", "run_id = ?", (run_id,), order_by="id"):
        yield {"kind": "answer", "id": a["key"], "agent": a["author_agent"], "text": a["text"],
               "detail": a["detail_json"], **_scored(a, always=True), "simulated": bool(a["simulated"])}
    for v in _sql.rows(store, "votes", "run_id = ?", (run_id,), order_by="id"):
        key, author = authors.get(v["artifact_id"], (None, None))
        yield audited({"kind": "vote", "artifact": key, "voter": v["voter_agent"], "author": author, "value": v["value"],
                       "status": v["status"], "reason": v["reason"], "simulated": bool(v["simulated"])}, "vote", v["id"])
    for f in _sql.rows(store, "finding_votes", "run_id = ?", (run_id,), order_by="id"):
        record = {"kind": "finding_vote", "finding": f["finding_id"], "agent": f["agent"], "vote_type": f["vote_type"],
                  "confidence": f["confidence"], "reason": f["reason"], "status": f["status"],
                  "invalid_reason": f["invalid_reason"], "simulated": bool(f["simulated"])}
        yield audited(record, "finding_vote", f["id"])
    for b in _sql.query(store, "SELECT b.* FROM cons_ballots b JOIN cons_questions q ON q.id = b.question_id "
                         "WHERE q.run_id = ? ORDER BY b.id", (run_id,)):
        record = {"kind": "ballot", "agent": b["agent_id"], "round": b["challenge_round"], "option": b["option"],
                  "vote": b["vote"], "confidence": b["confidence"], "rationale": b["rationale"],
                  "evidence": b["evidence_json"], "status": b["status"], "simulated": bool(b["simulated"])}
        yield audited(record, "ballot", b["id"])
    for t in _sql.rows(store, "traces", "run_id = ?", (run_id,), order_by="round_no, id"):
        # ARM's fields import its package (pydantic, 0.25 s): only once a run has a trace to export
        from workbench.core.project.trace_columns import trace_source
        record = {"kind": "trace", "round": t["round_no"], "role": t["role"], "attempt": t["attempt"],
                  "current": bool(t["is_current"]), "ok": bool(t["ok"]), "claim": t["claim"], "verdict": t["verdict"],
                  "confidence": t["confidence"], "reconciliation_status": t["reconciliation_status"],
                  "trace": trace_source(t), "simulated": bool(t["simulated"]) or sim}
        yield audited(record, "trace", t["id"])
    # What a protocol keeps of its own kinds (a plugin's), as it declared them: its kind, key and data.
    for r in _sql.query(store, f"SELECT {READ_COLUMNS} FROM protocol_records WHERE run_id = ? ORDER BY id", (run_id,)):
        record = {"kind": "protocol_record", "record_kind": r["kind"], "protocol": r["protocol"], "key": r["key"],
                  "agent": r["agent_id"], "data": r["data_json"], "simulated": bool(r["simulated"]) or sim}
        yield audited(record, "protocol_record", r["id"])
    # The auditors' notes on the run's records, oldest first (a record's verdict is its newest note's).
    for n in notes:
        yield {"kind": "audit", "record_kind": n.record_kind, "record_id": n.record_id, "verdict": n.verdict,
               "note": n.note, "author": n.author, "created_at": n.created_at, "simulated": sim}


def _scored(row: dict, always: bool = False) -> dict:
    """``correct`` (true, false, or null when unscorable), ``extracted`` and ``score`` of a text
    scored against its run's known answer (SPEC §8); an artifact of a run with no known answer
    carries none of them (its export is as it always was)."""
    if row["score"] is None and not always:
        return {}
    correct = None if row["score"] in (None, "unscorable") else row["score"] == "correct"
    return {"correct": correct, "extracted": row["extracted"], "score": row["score"]}


def to_jsonl(store: Store, run_id: str) -> str:
    return "".join(json_text(r) + "\n" for r in run_records(store, run_id))


def to_csv(store: Store, run_id: str) -> str:
    records = list(run_records(store, run_id))
    columns: list[str] = []
    for r in records:
        columns += [k for k in r if k not in columns]

    def cell(v):
        return json.dumps(v, ensure_ascii=False) if isinstance(v, (dict, list)) else v

    out = io.StringIO()
    write_csv(out, columns, ([cell(r.get(c, "")) for c in columns] for r in records), lineterminator="\n")
    return out.getvalue()


def to_markdown(store: Store, run_id: str) -> str:
    """The run's report in Markdown (:mod:`.run_report`)."""
    from workbench.core.project.run_report import to_markdown as report

    return report(store, run_id)


def to_html(store: Store, run_id: str) -> str:
    """The same report as one HTML page, rendered from the same Markdown; all text escaped."""
    from workbench.core.report_md import to_html as render

    return render(to_markdown(store, run_id))


FORMATS = {"md": to_markdown, "html": to_html, "jsonl": to_jsonl, "csv": to_csv}
SUFFIXES = {"md": ".md", "html": ".html", "jsonl": ".jsonl", "csv": ".csv"}


def export_bytes(store: Store, run_id: str, fmt: str) -> bytes:
    """What ``rwb export RUN_ID --format FMT`` writes and the GUI's Export button saves: the one
    function both call, so the two are the same byte for byte (UTF-8, ending in one newline)."""
    try:
        render = FORMATS[fmt]
    except KeyError:
        raise InputError("--format", f"must be one of {', '.join(FORMATS)}, not {fmt!r}") from None
    text = render(store, run_id)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")
