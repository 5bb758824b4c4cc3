"""``rwb gui [FILE]``: open the workbench window (Qt is imported only when this runs)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gui", help="open the workbench window", description="Open the workbench window.")
    p.add_argument("file", metavar="FILE", nargs="?", help="a .rwb project to open")
    p.add_argument("--demo", action="store_true", help="open the bundled demo project")
    p.add_argument("--exit-when-shown", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from workbench.ui.app import run_app

    return run_app(args.file, demo=args.demo, exit_when_shown=args.exit_when_shown)
