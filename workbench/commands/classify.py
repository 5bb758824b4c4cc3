"""``rwb classify rcp|findings|cons FILE``: the SPEC §1-3 JSON contracts, headless."""

from __future__ import annotations

import argparse
import importlib
import sys

from workbench.commands.io import print_json, read_json

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
    print_json(engine.classify_payload(payload))
    # Legal but doubtful settings (e.g. a tau that leaves the polar tiers empty) go to stderr,
    # so stdout stays the exact JSON contract.
    for warning in getattr(engine, "config_warnings", lambda _p: [])(payload):
        print(f"rwb classify {args.protocol}: warning: {warning}", file=sys.stderr)
    return 0
