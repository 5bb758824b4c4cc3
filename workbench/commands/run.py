"""``rwb run``, ``rwb resume``, ``rwb runs`` and ``rwb export`` (SPEC §6)."""

from __future__ import annotations

import argparse
import json
import sys
import time


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a protocol from a configuration file (JSON or YAML)")
    p.add_argument("config", metavar="CONFIG", help="the run configuration")
    p.add_argument("--project", required=True, metavar="FILE", help="the .rwb project (created if missing)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run_run)

    p = sub.add_parser("resume", help="finish an interrupted run, issuing only the missing calls")
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--project", required=True, metavar="FILE")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run_resume)

    p = sub.add_parser("replay", help="re-run a stored run from its stored replies, calling no model")
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--project", required=True, metavar="FILE")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run_replay)

    p = sub.add_parser("runs", help="list the runs of a project with their status (JSON)")
    p.add_argument("--project", required=True, metavar="FILE")
    p.set_defaults(run=run_runs)

    p = sub.add_parser("export", help="export a run: jsonl, csv, or the Markdown report")
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--project", required=True, metavar="FILE")
    p.add_argument("--format", choices=("jsonl", "csv", "md"), default="jsonl")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(run=run_export)


class _Progress:
    """Calls done and total, failures and an ETA on stderr, at most a few times a second."""

    def __init__(self, quiet: bool):
        self.quiet, self.last = quiet, 0.0

    def __call__(self, p) -> None:
        now = time.monotonic()
        if self.quiet or (now - self.last < 0.2 and p.done < p.total):
            return
        self.last = now
        eta = f", ETA {p.eta_s:.0f} s" if p.eta_s is not None else ""
        text = f"\r[{p.phase}] {p.done}/{p.total} calls, {p.failed} failed{eta}"
        sys.stderr.write(text.ljust(72))
        sys.stderr.flush()

    def close(self) -> None:
        if not self.quiet:
            sys.stderr.write("\n")


def _open_or_create(path: str):
    from pathlib import Path

    from workbench.core.project.store import Store

    return Store.open(path) if Path(path).exists() else Store.create(path)


def _execute(store, runner_call, quiet: bool) -> int:
    import signal
    import threading

    from workbench.services.runs.runner import Runner

    cancel = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: cancel.set())  # Ctrl+C: stop cleanly, resumable
    progress = _Progress(quiet)
    try:
        runner = Runner(store, on_progress=progress, cancel=cancel)
        summary = runner_call(runner)
    finally:
        signal.signal(signal.SIGINT, previous)
        progress.close()
    print(json.dumps(summary, ensure_ascii=False))
    return 0 if summary["status"] == "completed" else 1


def run_run(args: argparse.Namespace) -> int:
    from workbench.core.runs.batch import is_batch
    from workbench.core.runs.config import parse_run_config, read_config_file
    from workbench.services.runs.preflight import preflight

    data = read_config_file(args.config)
    if is_batch(data):
        return _run_batch(data, args)
    cfg = parse_run_config(data)
    preflight(cfg)  # refused (exit 2) before the project is touched: no run, no call
    store = _open_or_create(args.project)
    try:
        from workbench.services.runs.runner import Runner

        run_id = Runner(store).create(cfg)
        print(run_id, flush=True)
        return _execute(store, lambda runner: runner.execute(run_id), args.quiet)
    finally:
        store.close_connection()


def _run_batch(data: dict, args: argparse.Namespace) -> int:
    """Every run of the batch in turn; prints the batch id, each run id, then the batch summary."""
    import os

    from workbench.core.project import runs as run_rows
    from workbench.core.project.store import utc_now
    from workbench.core.runs.batch import expand_batch
    from workbench.services.runs.preflight import preflight
    from workbench.services.runs.runner import Runner

    spec, runs = expand_batch(data)  # every run's configuration, validated
    preflight(*(run.config for run in runs))  # and every provider they call, before the first starts
    store = _open_or_create(args.project)
    try:
        batch_id = f"batch-{utc_now()[:19].replace(':', '').replace('-', '')}-{os.urandom(2).hex()}"
        run_rows.create_batch(store, batch_id, spec.name, data)
        print(batch_id, flush=True)
        creator = Runner(store)
        ids = [creator.create(r.config, label=r.label, batch_id=batch_id, replicate=r.replicate) for r in runs]
        summaries = []
        for run_id in ids:
            print(run_id, flush=True)
            code = _execute(store, lambda runner, rid=run_id: runner.execute(rid), args.quiet)
            run = run_rows.get_run(store, run_id)
            summaries.append(run.summary)
            if code != 0 and run.status == "interrupted":
                break  # cancelled or rate-limited: the rest of the batch waits for a resume
    finally:
        store.close_connection()
    done = sum(s.get("status") == "completed" for s in summaries)
    print(json.dumps({"batch_id": batch_id, "runs": len(ids), "completed": done,
                      "status": "completed" if done == len(ids) else "interrupted"}))
    return 0 if done == len(ids) else 1


def run_resume(args: argparse.Namespace) -> int:
    from workbench.core.project import runs as run_rows
    from workbench.core.project.store import Store
    from workbench.core.runs.config import parse_run_config
    from workbench.services.runs.preflight import preflight
    from workbench.services.runs.owners import mark_stale_runs

    store = Store.open(args.project)
    try:
        mark_stale_runs(store)
        run = run_rows.get_run(store, args.run_id)
        if run is not None and run.status != "completed":  # the stored configuration, checked again
            preflight(parse_run_config(run.config, stored=True))  # here, so exit 2 before any output
        print(args.run_id, flush=True)
        return _execute(store, lambda runner: runner.execute(args.run_id), args.quiet)
    finally:
        store.close_connection()


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
    from workbench.core.project import runs as run_rows
    from workbench.core.project.store import Store
    from workbench.services.runs.owners import mark_stale_runs

    store = Store.open(args.project)
    try:
        if not store.read_only:
            mark_stale_runs(store)
        print_json([{"run_id": r.id, "protocol": r.protocol, "status": r.status, "label": r.label,
                     "simulated": r.simulated, "source": r.source, "started_at": r.started_at,
                     "finished_at": r.finished_at, "error": r.error} for r in run_rows.list_runs(store)])
    finally:
        store.close_connection()
    return 0


def run_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workbench.core.project import export as run_export
    from workbench.core.project.store import Store

    store = Store.open(args.project)
    try:
        render = {"jsonl": run_export.to_jsonl, "csv": run_export.to_csv, "md": run_export.to_markdown}[args.format]
        text = render(store, args.run_id)
    finally:
        store.close_connection()
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
