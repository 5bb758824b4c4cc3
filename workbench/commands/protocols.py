"""``rwb protocols list [--json]`` and ``rwb protocols show NAME [--json]`` (SPEC §7): the
registered protocols, built-in and from plugins, with their steps and default templates.

``list``: one entry per protocol, ``{name, title, version, source, steps}``, each step
``{name, kind, sha256}`` (its default template's hash); a plugin that failed to load is an entry
``{name, source, error}`` after them, its error also on stderr, and the exit code is then 1. ``show``: each step's default template,
its variables (``name``, ``description``, ``required``, ``untrusted``) and its reply schema.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("protocols", help="the registered protocols (built-in and plugins): their steps and templates")
    inner = p.add_subparsers(dest="protocols_command", metavar="SUBCOMMAND")
    s = inner.add_parser("list", help="every protocol with its version, source and steps (a table; JSON with --json)")
    s.add_argument("--json", action="store_true", help="print the list as JSON, for programs")
    s.set_defaults(run=run_list)
    s = inner.add_parser("show", help="a protocol's steps: default templates, variables and reply schemas")
    s.add_argument("name", metavar="NAME")
    s.add_argument("--json", action="store_true", help="print it as JSON, for programs")
    s.set_defaults(run=run_show)
    p.set_defaults(run=lambda _args: (p.print_help(), 0)[1])


def run_list(args: argparse.Namespace) -> int:
    from workbench.commands.io import print_json
    from workbench.core import registry

    listed = [p.listing() for p in registry.protocols().values()]
    failed = [f.to_json() for f in registry.failures()]
    for f in failed:  # one line each on stderr; the exit code says some plugin needs attention
        print(f"rwb protocols list: {f['name']} ({f['source']}) failed to load: {f['error']}", file=sys.stderr)
    if args.json:
        # One entry per protocol; a plugin that failed to load is an entry with its error.
        print_json(listed + [{**f, "error": f["error"]} for f in failed])
        return 1 if failed else 0
    from workbench.commands.tables import text_table
    from workbench.core.limits import printable

    rows = [[p["name"], p["title"], p["version"], p["source"], ", ".join(s["name"] for s in p["steps"]) or "-"]
            for p in listed]
    rows += [[f["name"], "(failed to load)", "-", f["source"], "-"] for f in failed]
    print(printable(text_table(("name", "title", "version", "source", "steps"), rows), keep_lines=True))
    return 1 if failed else 0


def run_show(args: argparse.Namespace) -> int:
    from workbench.commands.io import print_json
    from workbench.core import registry
    from workbench.core.errors import InputError

    protocol = registry.protocols().get(args.name)
    if protocol is None:
        raise InputError("NAME", f"no protocol named {args.name!r} (protocols: {', '.join(registry.protocols())})")
    shown = {**protocol.listing(), "summary": protocol.summary,
             "steps": [_step(protocol, s) for s in protocol.steps]}
    if args.json:
        print_json(shown)
        return 0
    from workbench.core.limits import printable

    print(f"{shown['name']}: {shown['title']} {shown['version']} ({shown['source']})\n{shown['summary']}")
    for step in shown["steps"]:
        print(f"\n== step {step['name']} ({step['kind']}) sha256 {step['sha256']}")
        for v in step["variables"]:
            marks = ", ".join(m for m, on in (("required", v["required"]), ("untrusted: fenced", v["untrusted"])) if on)
            print(f"  {v['name']}{f' [{marks}]' if marks else ''}: {v['description']}")
        if step["reply_schema"]:
            print(f"  reply: {json.dumps(step['reply_schema'])}")
        print("-- template --")
        print(printable(step["template"], keep_lines=True))
    return 0


def _step(protocol, step) -> dict:
    from workbench.core.protocols.shared.templates import sha256

    text = protocol.default_text(step)
    return {"name": step.name, "kind": step.kind, "description": step.description, "sha256": sha256(text),
            "variables": [v.to_json() for v in step.variables], "reply_schema": _schema(protocol, step),
            "template": text}


def _schema(protocol, step) -> dict | None:
    """The JSON schema a reply to the step is sent (None: free text, or one that depends on the
    call, such as a ballot's labels)."""
    if step.reply_schema is None or protocol.reply_model is None:
        return None
    from workbench.core.protocols.shared.steps import AgentCall
    from workbench.core.protocols.shared.structured import strict_schema

    model = protocol.reply_model(AgentCall(key="show", agent="show", purpose=step.kind, messages=(),
                                           reply_schema=step.reply_schema, meta={}))
    return {"name": step.reply_schema, "schema": strict_schema(model) if model is not None else None}
