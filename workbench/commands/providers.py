"""``rwb providers stats --project FILE [--json] [--run RUN_ID]``: provider health.

Per provider and model: calls, the valid-reply rate, p50 and p95 latency, tokens, cost (unknown
where any call's cost is unknown, never $0), the adaptive concurrency limit (429s, cuts, lowest
limit) and the reply quality flags (docs/providers.md "Provider health"). A table for people by default; ``--json`` for programs. A missing or damaged
project exits 2 with one line on stderr.
"""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("providers", help="the providers of a project: health per provider and model")
    inner = p.add_subparsers(dest="providers_command", metavar="SUBCOMMAND")
    s = inner.add_parser("stats", help="per provider and model: calls, valid-reply rate, p50/p95 latency, "
                                       "tokens, cost and reply quality flags (a table; JSON with --json)")
    s.add_argument("--project", required=True, metavar="FILE")
    s.add_argument("--run", dest="run_id", metavar="RUN_ID",
                   help="only this run's calls (default: every run of the project)")
    s.add_argument("--json", action="store_true", help="print the rows as JSON, for programs")
    s.set_defaults(run=run_stats)
    p.set_defaults(run=lambda _args: (p.print_help(), 0)[1])


def run_stats(args: argparse.Namespace) -> int:
    from workbench.commands.io import print_json
    from workbench.core.errors import InputError
    from workbench.core.project import runs as run_rows
    from workbench.core.project.provider_stats import provider_stats
    from workbench.core.project.store import Store

    store = Store.open(args.project)
    try:
        if args.run_id and run_rows.get_run(store, args.run_id) is None:
            raise InputError("--run", f"no run {args.run_id!r} in this project")
        rows = [r.to_dict() for r in provider_stats(store, args.run_id)]
    finally:
        store.close_connection()
    if args.json:
        print_json(rows)
    else:
        sys.stdout.write(stats_table(rows))
    return 0


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def _cost(row: dict) -> str:
    if row["cost_usd"] is None:
        n = row["cost_unknown_calls"]
        return f"unknown ({n} call{'s' if n != 1 else ''})"
    return "$0 (sim)" if row["simulated"] and row["cost_usd"] == 0 else f"${row['cost_usd']:.4f}"


def _flags(flags: dict) -> str:
    labels = {"template_echo": "template echo", "cut_at_cap": "cut at cap", "rubber_stamp": "rubber stamp"}
    return ", ".join(f"{labels.get(k, k)} {n}" for k, n in flags.items()) or "—"


def _limit(c: dict) -> str:
    """``8→2 · 2 cuts · 9×429``: the ceiling, the lowest limit, the cuts and the 429s answered."""
    if not c or not c.get("deployments"):
        return "—"
    ceiling = max(d["ceiling"] for d in c["deployments"].values())
    if not c["cuts"] and not c["refusals"]:
        return f"{ceiling} (no 429)"
    cuts = f"{c['cuts']} cut{'s' if c['cuts'] != 1 else ''}"
    grew = f" · {c['grew']} up" if c["grew"] else ""
    return f"{ceiling}→{c['lowest']} · {cuts}{grew} · {c['refusals']}×429"


def stats_table(rows: list[dict]) -> str:
    from workbench.commands.tables import text_table

    if not rows:
        return "No calls in this project yet. Start a run with: rwb run CONFIG --project FILE\n"
    body = []
    for r in rows:
        rate = "—" if r["valid_rate"] is None else f"{r['valid_rate'] * 100:.0f}%"
        tokens = f"{r['prompt_tokens']:,} / {r['completion_tokens']:,}"
        if r["tokens_unknown"]:
            tokens += f" (+{r['tokens_unknown']} unknown)"
        body.append([r["provider"], r["model"], str(r["calls"]), f"{rate} ({r['ok']}/{r['calls']})",
                     str(r["invalid"]), str(r["failed"]), _ms(r["latency_p50_ms"]), _ms(r["latency_p95_ms"]),
                     tokens, _cost(r), _limit(r.get("concurrency") or {}), _flags(r["flags"])])
    text = text_table(["PROVIDER", "MODEL", "CALLS", "VALID", "INVALID", "FAILED", "P50", "P95",
                       "TOKENS (PROMPT / COMPLETION)", "COST", "LIMIT", "FLAGS"], body, max_width={1: 40, 11: 60})
    return text + ("VALID: replies the protocol could read. P50/P95: latency of the calls sent (cache hits "
                   "left out). LIMIT: max_concurrency→the lowest adaptive limit, its cuts and steps up, and "
                   "the 429s answered. Full figures as JSON: rwb providers stats --json\n")
