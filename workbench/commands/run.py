"""``rwb run``, ``rwb resume``, ``rwb runs`` and ``rwb export`` (SPEC §6)."""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a protocol from a configuration file (JSON or YAML)")
    p.add_argument("config", metavar="CONFIG", help="the run configuration")
    p.add_argument("--project", metavar="FILE", help="the .rwb project (created if missing); not needed with --estimate")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--decisions", metavar="FILE", help=DECISIONS_HELP)
    p.add_argument("--estimate", action="store_true",
                   help="print the expected calls, tokens and cost as JSON, and exit: nothing runs, nothing is created")
    p.add_argument("--detach", action="store_true", help=DETACH_HELP)
    p.set_defaults(run=run_run)

    p = sub.add_parser("resume", help="finish an interrupted run, or every run of a batch, issuing only the "
                                      "missing calls")
    p.add_argument("run_id", metavar="RUN_ID|BATCH_ID")
    p.add_argument("--project", required=True, metavar="FILE")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--decisions", metavar="FILE", help=DECISIONS_HELP)
    p.add_argument("--max-usd", type=float, metavar="X", help="raise the run's cap (a batch's: the whole batch's) "
                   "to X dollars, e.g. to finish a run stopped_at_cap")
    p.add_argument("--max-tokens", type=int, metavar="N", help="raise the run's cap (a batch's: the whole batch's) "
                   "to N tokens")
    p.add_argument("--run-max-usd", type=float, metavar="X", help="a batch: raise each run's own cap to X dollars")
    p.add_argument("--run-max-tokens", type=int, metavar="N", help="a batch: raise each run's own cap to N tokens")
    p.add_argument("--detach", action="store_true", help=DETACH_HELP)
    p.set_defaults(run=run_resume)

    p = sub.add_parser("replay", help="re-run a stored run from its stored replies, calling no model")
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--project", required=True, metavar="FILE")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run_replay)

    p = sub.add_parser("runs", help="list the runs of a project with their status (a table; JSON with --json)")
    p.add_argument("--project", required=True, metavar="FILE")
    p.add_argument("--json", action="store_true", help="print the list as JSON (SPEC §6), for programs")
    p.set_defaults(run=run_runs)

    p = sub.add_parser("export", help="export a run: jsonl, csv, or its report as Markdown (md) or HTML")
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--project", required=True, metavar="FILE")
    p.add_argument("--format", choices=("jsonl", "csv", "md", "html"), default="jsonl",
                   help="jsonl and csv: one record per call, artifact, vote and trace, exact values; md and html: "
                        "the report, for reading (default: jsonl)")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists")
    p.set_defaults(run=run_export)


DETACH_HELP = ("providers with batch_api: return once a phase's batch is submitted (or, resuming, once the "
               "provider was asked), leaving the run waiting (exit 3); rwb resume collects it later")
DECISIONS_HELP = ("a JSON file of the conductor's decisions, by CONS question id ({\"CONS-001\": \"...\"}, "
                  "\"*\" for any): without one, a run that needs a person stops, resumable")

# SPEC §6: the first of 2, 4, 3, 1, 0 that applies wins; Ctrl-C is 130.
PRECEDENCE = (2, 4, 3, 1, 0)
# Verdicts that leave a person a decision to make (SPEC §6: exit 1), as ``rwb classify`` has them.
ATTENTION_VERDICTS = ("CONTESTED", "INSUFFICIENT_EVIDENCE")
INTERRUPTED_BY_USER = 130


def exit_code(summary: dict) -> tuple[int, str]:
    """The exit code of a finished ``rwb run``/``resume`` and the one line that explains it."""
    status = summary.get("status")
    if status == "failed":
        return 4, f"run {summary.get('run_id')} failed: {summary.get('error') or 'no result'}"
    if summary.get("missing_replies"):  # the replay's own reason comes first: it explains the degraded
        return 3, (f"replay {summary.get('run_id')}: {summary['missing_replies']} call(s) had no stored reply "
                   "to answer from; they are recorded as missing, and no model was called")
    if status in ("degraded", "stopped_at_cap"):
        line = f"run {summary.get('run_id')} ended {status}: {summary.get('error') or ''}".rstrip(": ")
        if status == "degraded" and summary.get("failed_calls"):
            line += f"; rwb resume {summary.get('run_id')} issues its {summary['failed_calls']} failed call(s) again"
        return 3, line
    if status == "waiting":
        out = ", ".join(f"{b.get('id')} ({b.get('status')})" for b in summary.get("waiting_for_batch") or ()) or "its batches"
        return 3, (f"run {summary.get('run_id')} waits for its provider batch: {out}; "
                   f"rwb resume {summary.get('run_id')} collects it when it is done")
    if status == "interrupted" and summary.get("waiting_for_human"):
        return 1, (f"run {summary.get('run_id')} waits for a person's decision (the CONS conductor): give it in "
                   f"a decisions file, rwb resume {summary.get('run_id')} --decisions FILE, or in the workbench")
    if status == "interrupted":
        return 3, (f"run {summary.get('run_id')} stopped before its end ({summary.get('error') or 'interrupted'}); "
                   f"rwb resume {summary.get('run_id')} finishes it")
    for part in summary.values():  # a protocol's verdict that a person must still settle (CONS's)
        if isinstance(part, dict) and part.get("verdict") in ATTENTION_VERDICTS and part.get("escalations") \
                and not part.get("humanDecision"):
            reasons = ", ".join(sorted({e.get("reason", "?") for e in part["escalations"]}))
            return 1, (f"question {part.get('questionId')} ended {part['verdict']} with an escalation left open "
                       f"({reasons})")
    return 0, ""


def worst(codes: list[int]) -> int:
    return min(codes, key=PRECEDENCE.index) if codes else 0


def _decisions(path: str | None):
    """The decisions file given with --decisions, read and checked before anything runs."""
    if path is None:
        return None
    from workbench.commands.io import read_json
    from workbench.core.errors import InputError
    from workbench.services.runs.agents import DecisionsFile

    data = read_json(path)
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) and v.strip()
                                             for k, v in data.items()):
        raise InputError("--decisions", "must be a JSON object of question id to decision text")
    return DecisionsFile(data, path)


def _open_or_create(path: str):
    from pathlib import Path

    from workbench.core.project.store import Store

    return Store.open(path) if Path(path).exists() else Store.create(path)


def _execute(store, runner_call, quiet: bool, manual=None, detach: bool = False) -> int:
    """Run ``runner_call(runner)``, print its summary as the last line, and return the exit code;
    the reason behind any code but 0 is one line on stderr."""
    import signal
    import threading

    from workbench.services.runs.runner import Runner

    cancel = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: cancel.set())  # Ctrl+C: stop cleanly, resumable
    from workbench.commands.progress import Progress

    progress = Progress(quiet)
    try:
        runner = Runner(store, on_progress=progress, on_call=progress.on_call, cancel=cancel, manual=manual,
                        detach=detach)
        summary = runner_call(runner)
    finally:
        signal.signal(signal.SIGINT, previous)
        progress.close()
    from workbench.core.limits import printable
    from workbench.core.safe_output import json_text

    print(json_text(summary), flush=True)  # a provider's error text is untrusted: no control reaches the terminal
    if cancel.is_set():
        print(f"rwb: interrupted; rwb resume {summary.get('run_id')} finishes the run", file=sys.stderr)
        return INTERRUPTED_BY_USER
    code, why = exit_code(summary)
    if why:
        print(f"rwb: {printable(why)}", file=sys.stderr)
    return code


def run_run(args: argparse.Namespace) -> int:
    from workbench.core.runs.batch import is_batch
    from workbench.core.runs.config import parse_run_config, read_config_file
    from workbench.services.runs.preflight import preflight

    data = read_config_file(args.config)
    if args.estimate:  # validated (exit 2 when it is not), estimated, and nothing else
        from workbench.commands.io import print_json
        from workbench.services.runs.estimate import estimate_document

        print_json(estimate_document(data))
        return 0
    if not args.project:
        from workbench.core.errors import InputError

        raise InputError("--project", "required: the .rwb project the run is stored in (created if missing)")
    if is_batch(data):
        return _run_batch(data, args)
    cfg = parse_run_config(data)
    manual = _decisions(args.decisions)
    from workbench.services.runs.estimate import check_budget

    check_budget(cfg)  # a dollar cap on a model with no price: refused (exit 2), nothing spent
    preflight(cfg)  # refused (exit 2) before the project is touched: no run, no call
    store = _open_or_create(args.project)
    try:
        from workbench.services.runs.runner import Runner

        run_id = Runner(store).create(cfg)
        print(run_id, flush=True)
        return _execute(store, lambda runner: runner.execute(run_id), args.quiet, manual, args.detach)
    finally:
        store.close_connection()


def _run_batch(data: dict, args: argparse.Namespace) -> int:
    """Every run of the batch in turn; prints the batch id, each run id, then the batch summary."""
    from workbench.core.runs.batch import expand_batch
    from workbench.services.runs.batches import create_batch
    from workbench.services.runs.estimate import check_document_budget
    from workbench.services.runs.preflight import preflight
    from workbench.services.runs.runner import Runner

    _, planned = expand_batch(data)  # every run's configuration, validated
    manual = _decisions(args.decisions)
    check_document_budget(data, [run.config for run in planned])  # dollar caps need prices
    preflight(*(run.config for run in planned))  # and every provider they call, before the first starts
    store = _open_or_create(args.project)
    try:
        batch_id, ids = create_batch(store, data, Runner(store))
        print(batch_id, flush=True)
        return _finish_batch(store, batch_id, ids, args, manual)
    finally:
        store.close_connection()


def _finish_batch(store, batch_id: str, ids: list[str], args: argparse.Namespace, manual) -> int:
    """Run the batch's runs not yet completed, in order; print the batch summary; the batch's exit
    code is the one that wins over its runs' (SPEC §6)."""
    from workbench.core.project import runs as run_rows

    codes: list[int] = []
    for run_id in ids:
        run = run_rows.get_run(store, run_id)
        if run.status == "completed":  # a degraded run is resumed too: its failed calls again
            codes.append(exit_code(run.summary)[0])
            continue
        print(run_id, flush=True)
        codes.append(_execute(store, lambda runner, rid=run_id: runner.execute(rid), args.quiet, manual,
                              getattr(args, "detach", False)))
        ended = run_rows.get_run(store, run_id)
        if ended.status == "interrupted" and ended.summary.get("status") == "waiting":
            continue  # detached, its batch out: the next run's first phase goes out too
        if ended.status == "interrupted":
            break  # cancelled, rate-limited or waiting for a person: the rest waits for a resume
        if ended.status == "stopped_at_cap" and (ended.summary.get("budget") or {}).get("scope") == "batch":
            break  # the batch's own cap: no run of it starts until a resume raises it
    from workbench.services.runs.batches import batch_counts

    finished = [run_rows.get_run(store, i) for i in ids]
    statuses = [shown_status(r) for r in finished]
    done = sum(s in run_rows.FINISHED for s in statuses)
    status = ("stopped_at_cap" if "stopped_at_cap" in statuses else "waiting" if "waiting" in statuses
              else "interrupted" if done < len(ids) else "degraded" if "degraded" in statuses else "completed")
    print(json.dumps({"batch_id": batch_id, "runs": len(ids), "completed": statuses.count("completed"),
                      "status": status, "statuses": {s: statuses.count(s) for s in sorted(set(statuses))},
                      **batch_counts([r.summary for r in finished])}))
    if INTERRUPTED_BY_USER in codes:
        return INTERRUPTED_BY_USER
    code = worst(codes + ([3] if done + statuses.count("failed") < len(ids) else []))
    if code == 3 and done < len(ids):
        capped = " (stopped at a budget cap: raise it with --max-usd/--max-tokens, or --run-max-usd/--run-max-tokens)" \
            if status == "stopped_at_cap" else ""
        print(f"rwb: batch {batch_id}: {len(ids) - done} of {len(ids)} runs not completed; "
              f"rwb resume {batch_id} finishes it{capped}", file=sys.stderr)
    return code


def shown_status(run) -> str:
    """A run's status as ``rwb runs`` shows it: ``waiting`` for an interrupted run whose provider
    batch is out (the project stores it as ``interrupted``: resumable, docs/providers.md)."""
    return "waiting" if run.status == "interrupted" and (run.summary or {}).get("status") == "waiting" else run.status


def run_resume(args: argparse.Namespace) -> int:
    from workbench.core.project import runs as run_rows
    from workbench.core.project.store import Store
    from workbench.core.runs.config import parse_run_config
    from workbench.services.runs.owners import mark_stale_runs
    from workbench.services.runs.preflight import preflight

    manual = _decisions(args.decisions)
    store = Store.open(args.project)
    try:
        mark_stale_runs(store)
        run = run_rows.get_run(store, args.run_id)
        if run is None and run_rows.batch_config(store, args.run_id) is not None:
            return _resume_batch(store, args.run_id, args, manual)
        if run is not None and (args.run_max_usd is not None or args.run_max_tokens is not None):
            from workbench.core.errors import InputError

            raise InputError("--run-max-usd", "is for a batch; give a run its cap with --max-usd or --max-tokens")
        if run is not None and run.status != "completed":  # the stored configuration, checked again
            cfg = parse_run_config(run.config, stored=True)
            _raise_run_cap(store, run, cfg, args.max_usd, args.max_tokens)
            preflight(cfg)  # here, so exit 2 before any output
        print(args.run_id, flush=True)
        return _execute(store, lambda runner: runner.execute(args.run_id), args.quiet, manual, args.detach)
    finally:
        store.close_connection()


def _resume_batch(store, batch_id: str, args: argparse.Namespace, manual) -> int:
    from workbench.core.project import runs as run_rows
    from workbench.core.runs.config import parse_run_config
    from workbench.services.runs.batches import complete_batch
    from workbench.services.runs.preflight import preflight
    from workbench.services.runs.runner import Runner

    _raise_batch_caps(store, batch_id, args)
    ids = complete_batch(store, batch_id, Runner(store))  # the runs a killed batch never made
    pending = [r for r in (run_rows.get_run(store, i) for i in ids) if r.status != "completed"]
    if args.run_max_usd is not None or args.run_max_tokens is not None:
        for r in pending:
            _raise_run_cap(store, r, parse_run_config(r.config, stored=True), args.run_max_usd, args.run_max_tokens,
                           field="run_budget")
    preflight(*(parse_run_config(r.config, stored=True) for r in pending))
    print(batch_id, flush=True)
    return _finish_batch(store, batch_id, ids, args, manual)


def _raised(budget: dict | None, max_usd: float | None, max_tokens: int | None, field: str):
    """``budget`` with the caps given on the command line over it, validated."""
    from pydantic import ValidationError

    from workbench.core.protocols.shared.validation import input_error
    from workbench.core.runs.config import Budget

    given = {k: v for k, v in (("max_usd", max_usd), ("max_tokens", max_tokens)) if v is not None}
    try:
        return Budget.model_validate({**(budget or {}), **given})
    except ValidationError as exc:
        raise input_error(exc, field) from None


def _raise_run_cap(store, run, cfg, max_usd, max_tokens, field: str = "budget") -> None:
    """``rwb resume RUN --max-usd/--max-tokens``: the run's cap from now on (refused, exit 2, as a new
    run's would be: a dollar cap on a model with no price needs a token cap too)."""
    if max_usd is None and max_tokens is None:
        return
    from workbench.core.project.spend import set_run_budget
    from workbench.services.runs.budget import run_budget_of
    from workbench.services.runs.estimate import check_usd_cap

    budget = _raised(run_budget_of(run), max_usd, max_tokens, field)
    check_usd_cap(budget, [cfg], field)
    set_run_budget(store, run.id, budget.model_dump(exclude_none=True))


def _raise_batch_caps(store, batch_id: str, args: argparse.Namespace) -> None:
    from workbench.core.project import runs as run_rows
    from workbench.core.project.spend import set_batch_budget
    from workbench.core.runs.batch import expand_batch
    from workbench.services.runs.estimate import check_usd_cap

    whole = args.max_usd is not None or args.max_tokens is not None
    each = args.run_max_usd is not None or args.run_max_tokens is not None
    if not whole and not each:
        return
    data = run_rows.batch_config(store, batch_id) or {}
    cfgs = [r.config for r in expand_batch(data)[1]]
    budget = _raised(data.get("budget"), args.max_usd, args.max_tokens, "budget") if whole else None
    run_budget = _raised(data.get("run_budget"), args.run_max_usd, args.run_max_tokens, "run_budget") if each else None
    check_usd_cap(budget, cfgs)
    check_usd_cap(run_budget, cfgs, "run_budget")
    set_batch_budget(store, batch_id, budget.model_dump(exclude_none=True) if budget else None,
                     run_budget.model_dump(exclude_none=True) if run_budget else None)


def run_replay(args: argparse.Namespace) -> int:
    from workbench.core.project import runs as run_rows
    from workbench.core.project.store import Store

    store = Store.open(args.project)
    try:
        def replay(runner):
            new_id = runner.replay(args.run_id)
            print(new_id, flush=True)
            return run_rows.get_run(store, new_id).summary

        return _execute(store, replay, args.quiet)
    finally:
        store.close_connection()


def run_runs(args: argparse.Namespace) -> int:
    from workbench.commands.io import print_json
    from workbench.commands.tables import runs_table
    from workbench.core.project import runs as run_rows
    from workbench.core.project.store import Store
    from workbench.services.runs.owners import mark_stale_runs

    store = Store.open(args.project)
    try:
        if not store.read_only:
            mark_stale_runs(store)
        rows = [{"run_id": r.id, "protocol": r.protocol, "status": shown_status(r), "label": r.label,
                 "simulated": r.simulated, "source": r.source, "started_at": r.started_at,
                 "finished_at": r.finished_at, "error": r.error, "batch_id": r.batch_id, "study_id": r.study_id,
                 "arm": r.arm, "item": r.item, "replicate": r.replicate, "seed": r.seed}
                for r in run_rows.list_runs(store)]
    finally:
        store.close_connection()
    if args.json:
        print_json(rows)
    else:
        sys.stdout.write(runs_table(rows))
    return 0


def run_export(args: argparse.Namespace) -> int:
    from workbench.commands.io import check_output, print_document, write_output
    from workbench.core.project.export import export_bytes
    from workbench.core.project.store import Store

    if args.out:
        check_output(args.out, force=args.force)  # refused before the project is even opened
    store = Store.open(args.project)
    try:
        data = export_bytes(store, args.run_id, args.format)  # the bytes the GUI's Export writes too
    finally:
        store.close_connection()
    if args.out:  # the exact text (CSV formulas made inert, SPEC §11)
        write_output(args.out, data, force=args.force)
    else:  # a terminal's controls in model text are shown as escapes (docs/reports.md)
        print_document(data.decode("utf-8"))
    return 0
