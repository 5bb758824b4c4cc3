"""``rwb``: the headless command line. It drives the same core as the GUI.

Each sub-command lives in ``workbench/commands/<name>.py`` with ``add_parser(subparsers)`` and
``run(args) -> int``. Command modules import only the standard library at module level, so
``rwb --help`` and the Qt-free commands stay fast and never load Qt or litellm.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from workbench import __version__
from workbench.core.errors import InputError, WorkbenchError

# Order is the order shown by ``rwb --help``.
COMMAND_MODULES = ("project", "run", "classify", "arm", "echo", "serve_mcp", "gui")

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rwb",
        description="Resonance Workbench: multi-agent LLM consensus protocols, headless.",
    )
    parser.add_argument("--version", action="version", version=f"rwb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"workbench.commands.{name}")
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return EXIT_OK
    try:
        return int(args.run(args) or EXIT_OK)
    except InputError as exc:
        print(f"rwb {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except WorkbenchError as exc:
        print(f"rwb {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"rwb {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
