"""``rwb echo marker|verify|footer``: the SPEC §5 Resonance Echo contracts, headless.

- ``rwb echo marker [--project P] [--seed N]`` prints a new marker. With a project it is recorded
  there, so it is never issued again in that project.
- ``rwb echo verify --marker M FILE`` prints the JSON verification result of the reply in FILE
  (``-`` for stdin) and exits 0 if verified, 1 if not. M is a whole marker or its 6-hex suffix.
- ``rwb echo footer FILE`` prints the reply's trusted footer as JSON, or exits 1 saying why not.

Invalid arguments (a malformed marker, a missing file) exit 2 with a one-line message. The
reason behind an exit 1 (not verified, no trusted footer) is one line on stderr (SPEC §6).
"""

from __future__ import annotations

import argparse

from workbench.commands.io import print_json, read_text
from workbench.core.errors import InputError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("echo", help="Resonance Echo: issue markers, verify replies, parse footers",
                       description="Resonance Echo markers, verification and footers (SPEC §5).")
    actions = p.add_subparsers(dest="echo_action", metavar="ACTION", required=True)

    m = actions.add_parser("marker", help="print a new resonance marker",
                           description="Print a new marker '<poetic fragment> — <6 hex>'. With --project it "
                                       "is recorded in that project and never issued there again.")
    m.add_argument("--project", metavar="P", help="a .rwb project to record the marker in")
    m.add_argument("--seed", metavar="N", type=int, help="seed the random draw (reproducible; default: secrets)")
    m.set_defaults(run=run_marker)

    v = actions.add_parser("verify", help="check that a reply recites a marker (exit 0 verified, 1 not)",
                           description="Verify that the agent's reply in FILE (or - for stdin) contains the "
                                       "marker's 6-hex suffix in its own text. Prints the result as JSON.")
    v.add_argument("--marker", metavar="M", required=True, help="the marker, or just its 6-hex suffix")
    v.add_argument("file", metavar="FILE", help="the agent's reply text, or - for stdin")
    _quoting_args(v)
    v.add_argument("--accept-uppercase", action="store_true",
                   help="count the hex in another case too (default: lowercase only, exact)")
    v.set_defaults(run=run_verify)

    f = actions.add_parser("footer", help="parse a reply's footer (exit 1 if none can be trusted)",
                           description="Print the trusted footer of the reply in FILE (or - for stdin): "
                                       "its last ':: SYSTEM ::' line outside quoted artifact text.")
    f.add_argument("file", metavar="FILE", help="the agent's reply text, or - for stdin")
    _quoting_args(f)
    f.set_defaults(run=run_footer)


def _quoting_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--delimiters", nargs=2, action="append", metavar=("OPEN", "CLOSE"), default=[],
                   help="a pair of artifact delimiters; text between them is quoted data (repeatable)")
    p.add_argument("--artifact", action="append", metavar="AFILE", default=[],
                   help="a file holding artifact text shown to the agent; verbatim copies are data (repeatable)")
    p.add_argument("--code-fences", action="store_true", help="also treat fenced code blocks as quoted data")


def _read_echo_text(source: str) -> str:
    """A reply or an artifact: text of at most ``MAX_ECHO_TEXT_CHARS`` (SPEC §6 limits)."""
    from workbench.core.limits import MAX_ECHO_TEXT_CHARS, check_text

    text = read_text(source)
    check_text(text, MAX_ECHO_TEXT_CHARS, "stdin" if source == "-" else source)
    return text


def _quoting(args: argparse.Namespace):
    from workbench.core.limits import MAX_LIST_ITEMS, check_count
    from workbench.core.protocols.echo.quoting import Quoting

    check_count(args.artifact, MAX_LIST_ITEMS, "--artifact", "files")
    check_count(args.delimiters, MAX_LIST_ITEMS, "--delimiters", "pairs")
    for open_, close in args.delimiters:
        if not open_ or not close:
            raise InputError("--delimiters", "OPEN and CLOSE must not be empty")
    return Quoting.of(args.delimiters, [_read_echo_text(a) for a in args.artifact], code_fences=args.code_fences)


def run_marker(args: argparse.Namespace) -> int:
    from workbench.core.protocols.echo.markers import generate_marker, make_rng

    rng = make_rng(args.seed)
    if args.project:
        from workbench.core.project.echo import issue_marker
        from workbench.core.project.store import Store

        store = Store.open(args.project)
        try:
            marker = issue_marker(store, rng=rng)
        finally:
            store.close_connection()
    else:
        marker = generate_marker(rng=rng)
    print(marker)
    return 0


def run_verify(args: argparse.Namespace) -> int:
    from workbench.core.protocols.echo.verify import expected_hex_of, verify_reply

    expected = expected_hex_of(args.marker)  # a malformed marker is an InputError: exit 2
    quoting = _quoting(args)
    result = verify_reply(_read_echo_text(args.file), expected, quoting=quoting, accept_uppercase=args.accept_uppercase)
    print_json(result.as_dict())
    if not result.verified:
        import sys

        from workbench.core.limits import printable

        print(f"rwb echo verify: not verified: {printable(' '.join(str(result.reason).split()))}", file=sys.stderr)
        return 1
    return 0


def run_footer(args: argparse.Namespace) -> int:
    from workbench.core.protocols.echo.footer import FooterError, locate_footer

    quoting = _quoting(args)
    text = _read_echo_text(args.file)  # a missing, unreadable or oversized file is bad input: exit 2
    try:
        footer, line = locate_footer(text, quoting)
    except FooterError as exc:  # the answer is "no trusted footer": exit 1 with the reason
        import sys

        from workbench.core.limits import printable

        print(f"rwb echo: error: {printable(' '.join(str(exc).split()))}", file=sys.stderr)
        return 1
    print_json({**footer.model_dump(), "line": line})
    return 0
