"""``rwb``: the headless command line. It drives the same core as the GUI.

Each sub-command lives in ``workbench/commands/<name>.py`` with ``add_parser(subparsers)`` and
``run(args) -> int``. Command modules import only the standard library at module level, so
``rwb --help`` and the Qt-free commands stay fast and never load Qt or litellm.

Exit codes (SPEC §6, docs/exit-codes.md): 0 done; 1 done, and the answer needs the user's
attention; 2 bad input or a project error, with nothing spent; 3 a run finished with incomplete
results; 4 a run (or any command) could not produce results, which includes an unexpected
internal error. Whatever goes wrong is one line on stderr; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from workbench import __version__
from workbench.core.errors import WorkbenchError

# Order is the order shown by ``rwb --help``.
COMMAND_MODULES = ("project", "run", "study", "providers", "protocols", "classify", "arm", "echo", "dataset",
                   "samples", "serve_mcp", "gui")

EXIT_OK, EXIT_ATTENTION, EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_NO_RESULT = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rwb",
        description="Resonance Workbench: multi-agent LLM consensus protocols, headless.",
        epilog="Exit codes: 0 done; 1 the answer needs attention; 2 bad input or a project error "
               "(nothing spent); 3 a run's results are incomplete; 4 no results (a failed run, or an "
               "internal error). See docs/exit-codes.md.",
    )
    parser.add_argument("--version", action="version", version=f"rwb {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="on an error, print the Python traceback too (also: RWB_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"workbench.commands.{name}")
        module.add_parser(sub)
    return parser


def one_line(text: object) -> str:
    """A message as one line: its lines joined, so stderr carries exactly one line per error, and
    any other control character (a value quoted from the input) shown as an escape (SPEC §11)."""
    from workbench.core.limits import printable

    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return printable(" / ".join(lines)) if lines else ""


def exit_code_of(exc: WorkbenchError) -> int:
    """A refusal with a reason is bad input or a project error (2), unless its class says
    otherwise with an ``exit_code`` attribute."""
    code = getattr(exc, "exit_code", None)
    return code if isinstance(code, int) else EXIT_BAD_INPUT


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return EXIT_OK
    debug = args.debug or os.environ.get("RWB_DEBUG", "") not in ("", "0")
    label = f"rwb {args.command}"

    from workbench.core.project.files import set_notice_handler

    previous = set_notice_handler(lambda message: print(f"{label}: notice: {one_line(message)}", file=sys.stderr))
    try:
        return int(args.run(args) or EXIT_OK)
    except WorkbenchError as exc:
        if debug:
            traceback.print_exc()
        print(f"{label}: error: {one_line(exc)}", file=sys.stderr)
        return exit_code_of(exc)
    except KeyboardInterrupt:
        print(f"{label}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_OK
    except Exception as exc:  # a bug: one line (or the traceback with --debug), never a bare traceback
        if debug:
            traceback.print_exc()
        hint = "" if debug else "; run with --debug for the traceback"
        print(f"{label}: error: {type(exc).__name__}: {one_line(exc)} (an internal error{hint})", file=sys.stderr)
        return EXIT_NO_RESULT
    finally:
        set_notice_handler(previous)


def _quiet_stdout() -> None:
    """After a closed pipe (``rwb export ... | head``), keep Python from complaining at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
