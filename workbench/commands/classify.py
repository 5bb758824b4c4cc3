"""``rwb classify rcp|findings|cons FILE``: the SPEC §1-3 JSON contracts, headless.

Exit codes (SPEC §6): 0 with the result; 1 when a CONS verdict is CONTESTED or
INSUFFICIENT_EVIDENCE (the JSON is printed all the same, and the reason is one line on
stderr); 2 for bad input. RCP and findings results never exit 1: the result is the answer.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from workbench.commands.io import print_json, read_json
from workbench.core.limits import printable

# Engine modules under workbench.core.protocols; each exposes classify_payload(payload).
ENGINES = {"rcp": "rcp.classify", "findings": "findings.book", "cons": "cons.tally"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "classify",
        help="classify votes with a protocol engine (JSON in, JSON out)",
        description="Read a protocol's input JSON from FILE (or - for stdin) and print its result.",
    )
    p.add_argument("protocol", choices=sorted(ENGINES), help="which engine")
    p.add_argument("file", metavar="FILE", help="input JSON file, or - for stdin")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    payload = read_json(args.file)
    engine = importlib.import_module(f"workbench.core.protocols.{ENGINES[args.protocol]}")
    result = engine.classify_payload(payload)
    print_json(result)
    # Legal but doubtful settings (e.g. a tau that leaves the polar tiers empty) go to stderr,
    # so stdout stays the exact JSON contract.
    for warning in getattr(engine, "config_warnings", lambda _p: [])(payload):
        print(f"rwb classify {args.protocol}: warning: {printable(warning)}", file=sys.stderr)
    return _attention(args.protocol, result)


#: Verdicts that need the user's attention: exit 1 (SPEC §6). Only CONS gives a verdict; RCP's and
#: the findings' results (lists of states and scores) never need it.
ATTENTION_VERDICTS = ("CONTESTED", "INSUFFICIENT_EVIDENCE")


def _attention(protocol: str, result: object) -> int:
    """1 with a one-line reason on stderr when the answer is a verdict that needs attention, else 0."""
    if isinstance(result, dict) and result.get("verdict") in ATTENTION_VERDICTS:
        reason = " ".join(str(result.get("verdictReason") or "").split())
        print(f"rwb classify {protocol}: {result['verdict']}: {printable(reason) or 'no verdict reached'}",
              file=sys.stderr)
        return 1
    return 0
