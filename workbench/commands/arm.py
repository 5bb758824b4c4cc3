"""``rwb arm <sub-command>``: ARM traces, headless.

- ``rwb arm metrics FILE`` (FILE or ``-``): recompute an ARM trace's metrics (SPEC §4 JSON).
- ``rwb arm import FILE... --project P``: store ARM traces as runs of a project.
- ``rwb arm export RUN_ID --project P``: write a stored ARM run back as ARM's own JSON.

Sub-commands live in :data:`SUBCOMMANDS` as ``name -> (add_arguments, run)``; adding one (for
example ``import``) is a new entry, nothing else changes. Standard library only at module level.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from workbench.commands.io import print_json, read_json


def _add_metrics(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE",
                   help="an ARM trace JSON (v0.6, v0.7.1, arm-trace-v1.1 and later, or a workbench export), or -")


def _run_metrics(args: argparse.Namespace) -> int:
    from workbench.core.errors import InputError
    from workbench.core.protocols.arm import metrics_report

    payload = read_json(args.file)
    try:
        report = metrics_report(payload)  # type: ignore[arg-type]
    except InputError as exc:
        where = args.file if args.file != "-" else "stdin"
        raise InputError(f"{where}: {exc.field}" if exc.field else where, exc.message) from None
    print_json(report)
    return _unexplained(report)


def _unexplained(report: dict) -> int:
    """SPEC §6: exit 1 when a stored value differs from its recomputation under the rules of the
    trace's own version (SPEC §11); the reason is one line on stderr. A value only today's rules
    would give differently (``today``) is information, not a difference."""
    import sys

    from workbench.core.protocols.arm.stored import unexplained

    found = [s for s in report.get("stored", []) if unexplained(s)]
    if not found:
        return 0
    shown = ", ".join(f"{s.get('metric')} (stored {s.get('stored')!r}, recomputed {s.get('recomputed')!r})"
                      for s in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    print(f"rwb arm metrics: {len(found)} stored value(s) differ from their recomputation under the "
          f"rules of the trace's own version: {shown}{more}", file=sys.stderr)
    return 1


def _add_import(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", metavar="FILE", nargs="+", help="ARM trace JSON files (any schema version)")
    p.add_argument("--project", required=True, metavar="P", help="the .rwb project to import into")


def _run_import(args: argparse.Namespace) -> int:
    import sys
    from dataclasses import asdict

    from workbench.core.errors import InputError
    from workbench.core.project.arm_import import import_arm_file
    from workbench.core.project.store import Store

    store = Store.open(args.project)
    results, failed = [], 0
    try:
        for path in args.files:  # each file on its own: one bad file does not stop the others
            try:
                results.append({"ok": True, **asdict(import_arm_file(store, path))})
            except InputError as exc:
                failed += 1
                results.append({"ok": False, "path": path, "error": str(exc)})
                print(f"rwb arm import: error: {exc}", file=sys.stderr)
    finally:
        store.close_connection()
    print_json(results)
    return 2 if failed else 0


def _add_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", metavar="RUN_ID", help="a stored ARM run (see rwb runs)")
    p.add_argument("--project", required=True, metavar="P", help="the .rwb project")
    p.add_argument("--out", metavar="FILE", help="write to FILE (byte for byte as ARM writes it) instead of stdout")
    p.add_argument("--force", action="store_true", help="replace the --out FILE if it exists (default: refuse)")


def _run_export(args: argparse.Namespace) -> int:
    from workbench.commands.io import check_output, write_output
    from workbench.core.project.arm_import import export_arm_run
    from workbench.core.project.store import Store
    from workbench.core.protocols.arm.js import js_stringify

    if args.out:  # refused before the project is even opened
        check_output(args.out, force=args.force)
    store = Store.open(args.project)
    try:
        text = js_stringify(export_arm_run(store, args.run_id))  # the way ARM writes its files
    finally:
        store.close_connection()
    if args.out:
        write_output(args.out, text, force=args.force)
    else:  # ARM's JSON.stringify leaves C1 and bidi controls raw: escaped for the terminal, same JSON
        from workbench.core.safe_output import JSON_UNSAFE, json_escape

        print(JSON_UNSAFE.sub(json_escape, text))
    return 0


SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                             Callable[[argparse.Namespace], int]]] = {
    "metrics": ("recompute an ARM trace's metrics and check every stored value (JSON)",
                _add_metrics, _run_metrics),
    "import": ("store ARM trace files as runs of a project", _add_import, _run_import),
    "export": ("write a stored ARM run back as ARM's own JSON", _add_export, _run_export),
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("arm", help="ARM traces: metrics, gates and stored-value checks",
                       description="Work with ARM (Agent Reasoning Markup) traces.")
    arm_sub = p.add_subparsers(dest="arm_command", metavar="SUBCOMMAND")
    for name, (help_text, add_arguments, _run) in SUBCOMMANDS.items():
        sp = arm_sub.add_parser(name, help=help_text, description=help_text)
        add_arguments(sp)
        sp.set_defaults(arm_run=_run)
    p.set_defaults(run=run, arm_parser=p)


def run(args: argparse.Namespace) -> int:
    handler = getattr(args, "arm_run", None)
    if handler is None:
        args.arm_parser.print_help()
        return 0
    return int(handler(args) or 0)
