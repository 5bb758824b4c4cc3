"""``rwb serve-mcp --project FILE``: the Consensus Server as an MCP tool server.

stdio by default (an MCP client starts it as a subprocess; stdout carries only protocol messages,
logs go to stderr or ``--log-file``). ``--http`` serves Streamable HTTP on 127.0.0.1 instead, with
Host/Origin allow-lists and a bearer token made at each start (printed on stderr). Loads no Qt.
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve-mcp", help="serve the Consensus Server tools to MCP clients (stdio, or --http)",
        description="Serve the Consensus Server over MCP on a project file the GUI may have open too. "
                    "Tools: submit_vote, get_consensus_results, get_challenged_findings, create_finding, "
                    "list_findings, get_finding_history.")
    p.add_argument("--project", metavar="FILE", required=True, help="the .rwb project to serve")
    p.add_argument("--http", action="store_true",
                   help="serve Streamable HTTP on 127.0.0.1 (bearer token required) instead of stdio")
    p.add_argument("--port", type=int, default=0, metavar="N",
                   help="HTTP port on 127.0.0.1 (default 0: any free port, announced on stderr)")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST:PORT",
                   help="another Host header to accept besides 127.0.0.1:PORT and localhost:PORT")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="another browser Origin to accept besides http://127.0.0.1:PORT and http://localhost:PORT")
    p.add_argument("--log-file", metavar="FILE", help="write logs here instead of stderr")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"),
                   help="how much to log (default info: one line per vote)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from workbench.core.errors import InputError
    from workbench.core.project.store import Store
    from workbench.services.mcp.logs import configure_logging

    if not 0 <= args.port <= 65535:
        raise InputError("--port", f"must be from 0 to 65535, not {args.port}")
    if not args.http and (args.allow_host or args.allow_origin or args.port):
        raise InputError("--http", "--port, --allow-host and --allow-origin only apply with --http")
    if args.log_file:  # appended to, never replaced; but it must be a file in an existing folder
        from pathlib import Path

        from workbench.core.project.files import ProjectError, check_destination

        try:
            check_destination(Path(args.log_file), overwrite=True)
        except ProjectError as exc:
            raise InputError("--log-file", str(exc)) from None
    configure_logging(args.log_file, args.log_level)
    store = Store.open(args.project)
    if store.read_only:
        import sys

        from workbench.core.limits import printable

        print(f"rwb serve-mcp: {printable(store.report.read_only_reason)} Votes cannot be stored; reads still work.",
              file=sys.stderr)
    if args.http:
        from workbench.services.mcp.http import serve_http

        serve_http(store, port=args.port, extra_hosts=args.allow_host, extra_origins=args.allow_origin)
    else:
        from workbench.services.mcp.server import serve_stdio

        serve_stdio(store)
    return 0
