"""``rwb arm <sub-command>``: ARM traces, headless.

- ``rwb arm metrics FILE`` (FILE or ``-``): recompute an ARM trace's metrics (SPEC §4 JSON).

Sub-commands live in :data:`SUBCOMMANDS` as ``name -> (add_arguments, run)``; adding one (for
example ``import``) is a new entry, nothing else changes. Standard library only at module level.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from workbench.commands.io import print_json, read_json


def _add_metrics(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE",
                   help="an ARM trace JSON (v0.6, v0.7.1, arm-trace-v1.2/v1.3, or a workbench export), or -")


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
    return 0


SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                             Callable[[argparse.Namespace], int]]] = {
    "metrics": ("recompute an ARM trace's metrics and check every stored value (JSON)",
                _add_metrics, _run_metrics),
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
