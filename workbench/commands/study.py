"""``rwb study run|resume|report|export`` (SPEC §9): arms over a base configuration, paired
replicates, and the statistics a paper can print (docs/studies.md).

- ``run FILE --project P``: every arm's configuration is checked (exit 2 naming the arm) and every
  provider preflighted before anything is written; then the study id, then one JSON summary as the
  last line of stdout (``arms``: each with ``runs``, ``calls``, ``calls_reused``, ``status``). Its
  exit code is the one that wins over the study's runs (SPEC §6), and 3 while results are missing.
  ``--estimate``: calls, tokens and cost per arm, and the design's warnings; nothing is created.
- ``resume ID --project P``: goes on where a killed, cancelled or capped study stopped.
- ``report ID --project P --format json|md|html|csv``: the report (JSON exact, SPEC §9).
- ``export ID --project P --out DIR``: the bundle an appendix needs (docs/studies.md "The bundle").
"""

from __future__ import annotations

import argparse
import sys

FORMATS = ("json", "md", "html", "csv")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("study", help="run, resume, report and export studies: arms over a base config (docs/studies.md)")
    study = p.add_subparsers(dest="study_command", metavar="ACTION")
    p.set_defaults(run=_help(p))

    q = study.add_parser("run", help="run a study file: every arm, paired replicates, one process")
    q.add_argument("file", metavar="FILE", help="the study file (JSON or YAML)")
    q.add_argument("--project", metavar="FILE", help="the .rwb project (created if missing); not needed with --estimate")
    q.add_argument("--estimate", action="store_true",
                   help="print the expected calls, tokens and cost per arm, and the design's warnings, as JSON; "
                        "nothing runs, nothing is created")
    q.add_argument("--quiet", action="store_true", help="no progress on stderr")
    q.set_defaults(run=run_study)

    q = study.add_parser("resume", help="finish a study a kill, a Ctrl-C or its budget stopped")
    q.add_argument("study_id", metavar="ID")
    q.add_argument("--project", required=True, metavar="FILE")
    q.add_argument("--max-usd", type=float, metavar="X", help="raise the study's budget to X dollars")
    q.add_argument("--max-tokens", type=int, metavar="N", help="raise the study's budget to N tokens")
    q.add_argument("--quiet", action="store_true", help="no progress on stderr")
    q.set_defaults(run=resume_study)

    q = study.add_parser("report", help="a study's report: json (exact), md or html (with plots), csv")
    q.add_argument("study_id", metavar="ID")
    q.add_argument("--project", required=True, metavar="FILE")
    q.add_argument("--format", choices=FORMATS, default="json", help="default: json")
    q.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    q.add_argument("--force", action="store_true", help="replace FILE if it exists")
    q.set_defaults(run=report_study)

    q = study.add_parser("export", help="a study's bundle: configs, prompts, runs, artifacts, votes, calls, reports")
    q.add_argument("study_id", metavar="ID")
    q.add_argument("--project", required=True, metavar="FILE")
    q.add_argument("--out", required=True, metavar="DIR", help="a new (or empty) folder")
    q.add_argument("--force", action="store_true", help="write into DIR even if it holds files (replacing the bundle's)")
    q.set_defaults(run=export_study)


def _help(parser: argparse.ArgumentParser):
    def show(_args: argparse.Namespace) -> int:
        parser.print_help()
        return 0
    return show


# ----- run and resume ----------------------------------------------------------------------------------

def run_study(args: argparse.Namespace) -> int:
    from workbench.core.errors import InputError
    from workbench.core.studies.spec import parse_study, read_study_file

    study = parse_study(read_study_file(args.file))  # every arm checked: exit 2 naming the arm
    if args.estimate:
        from workbench.commands.io import print_json
        from workbench.services.runs.study_checks import design_warnings, estimate_study

        print_json({**estimate_study(study), "warnings": design_warnings(study)})
        return 0
    if not args.project:
        raise InputError("--project", "required: the .rwb project the study is stored in (created if missing)")
    _check_before_spending(study)
    from workbench.services.runs.study_checks import design_warnings

    warnings = design_warnings(study)
    from workbench.commands.run import _open_or_create

    store = _open_or_create(args.project)
    try:
        def start(runner) -> str:
            study_id = runner.create(study, warnings=warnings)
            print(study_id, flush=True)
            return study_id

        return _drive(store, start, args.quiet)
    finally:
        store.close_connection()


def _check_before_spending(study) -> None:
    """Dollar caps that can be kept and providers that can be called, for every arm (exit 2);
    the Studies panel's Run checks the same (``services.runs.studies.check_before_spending``)."""
    from workbench.services.runs.studies import check_before_spending

    check_before_spending(study)


def resume_study(args: argparse.Namespace) -> int:
    from workbench.core.project.store import Store
    from workbench.services.runs.owners import mark_stale_runs
    from workbench.services.runs.studies import load

    store = Store.open(args.project)
    try:
        mark_stale_runs(store)
        study = load(store, args.study_id)
        if args.max_usd is not None or args.max_tokens is not None:
            _raise_cap(store, args, study)
            study = load(store, args.study_id)
        _check_before_spending(study)

        def start(_runner) -> str:
            print(args.study_id, flush=True)
            return args.study_id

        return _drive(store, start, args.quiet)
    finally:
        store.close_connection()


def _raise_cap(store, args: argparse.Namespace, study) -> None:
    from workbench.commands.run import _raised
    from workbench.core.project.studies import set_budget
    from workbench.services.runs.estimate import check_usd_cap

    budget = _raised(study.budget, args.max_usd, args.max_tokens, "budget")
    check_usd_cap(budget, [study.config(arm, study.items[0], 0) for arm in study.arms])
    set_budget(store, args.study_id, budget.model_dump(exclude_none=True))


def _drive(store, start, quiet: bool) -> int:
    """Create or find the study (``start(study_runner) -> id``), take its results, print the summary
    as the last line; the exit code wins over its runs (SPEC §6), 130 after Ctrl-C."""
    import signal
    import threading

    from workbench.commands.run import INTERRUPTED_BY_USER
    from workbench.core.limits import printable
    from workbench.core.safe_output import json_text
    from workbench.services.runs.runner import Runner
    from workbench.services.runs.studies import StudyRunner

    cancel = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: cancel.set())  # Ctrl+C: stop cleanly, resumable
    progress = _Progress(quiet)
    try:
        runner = StudyRunner(store, Runner(store, cancel=cancel), on_progress=progress, cancel=cancel)
        study_id = start(runner)
        summary = runner.run(study_id)
    finally:
        signal.signal(signal.SIGINT, previous)
        progress.close()
    print(json_text(summary), flush=True)
    if cancel.is_set():
        print(f"rwb: interrupted; rwb study resume {study_id} finishes the study", file=sys.stderr)
        return INTERRUPTED_BY_USER
    code, why = study_exit_code(store, summary)
    if why:
        print(f"rwb: {printable(why)}", file=sys.stderr)
    return code


def study_exit_code(store, summary: dict) -> tuple[int, str]:
    """SPEC §6 over the study's runs: the first of 2, 4, 3, 1, 0 that any of them gives; 3 while
    a result is missing. The reason is the first run's that gave it, or the missing results'."""
    from workbench.commands.run import PRECEDENCE, exit_code
    from workbench.core.project.studies import study_runs

    found: list[tuple[int, str]] = [exit_code({**r.summary, "run_id": r.id, "status": r.status,
                                                "error": r.error or r.summary.get("error")})
                                    for r in study_runs(store, summary["study_id"])]
    missing = summary["planned"] - summary["runs"]
    if missing:
        found.append((3, f"study {summary['study_id']}: {missing} of {summary['planned']} results missing "
                         f"({summary['status']}); rwb study resume {summary['study_id']} finishes it"))
    if not found:
        return 0, ""
    code = min((c for c, _ in found), key=PRECEDENCE.index)
    why = next(w for c, w in found if c == code)
    return code, why


class _Progress:
    """One line per stored result on stderr: rewritten in place on a terminal, else every tenth of
    the study and at the end (a log stays short)."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.last_tenth = -1
        self.shown = False

    def __call__(self, p) -> None:
        if self.quiet:
            return
        line = f"study {p.study_id}: {p.done}/{p.total} results · {p.arm} · {p.item} · rep {p.replicate} · {p.message}"
        from workbench.core.limits import printable

        if self.tty:
            sys.stderr.write("\r\x1b[K" + printable(line))
            self.shown = True
        else:
            tenth = p.done * 10 // max(p.total, 1)
            if tenth != self.last_tenth:
                self.last_tenth = tenth
                sys.stderr.write(printable(line) + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


# ----- report and export ------------------------------------------------------------------------------

def report_study(args: argparse.Namespace) -> int:
    from workbench.commands.io import (
        check_output,
        print_document,
        print_json,
        write_output,
    )
    from workbench.commands.study_export import report_text
    from workbench.core.project.store import Store

    if args.out:
        check_output(args.out, force=args.force)
    store = Store.open(args.project)
    try:
        text = report_text(store, args.study_id, args.format)
    finally:
        store.close_connection()
    if args.out:
        write_output(args.out, text, force=args.force)
    elif args.format == "json":
        import json

        print_json(json.loads(text))
    else:
        print_document(text)
    return 0


def export_study(args: argparse.Namespace) -> int:
    from workbench.commands.study_export import write_bundle
    from workbench.core.project.store import Store

    store = Store.open(args.project)
    try:
        written = write_bundle(store, args.study_id, args.out, force=args.force)
    finally:
        store.close_connection()
    print(f"rwb study export: {len(written)} files in {args.out}", file=sys.stderr)
    return 0
