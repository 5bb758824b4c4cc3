"""Streamable HTTP for the Consensus Server, locked down for a desktop machine.

- It binds 127.0.0.1 only (never a public interface).
- DNS-rebinding protection with an explicit allow-list: the Host header must be
  ``127.0.0.1:PORT`` or ``localhost:PORT``, and an Origin header, when a browser sends one, must
  be ``http://127.0.0.1:PORT`` or ``http://localhost:PORT`` (plus what ``--allow-host`` and
  ``--allow-origin`` add). A wrong Host gets 421, a wrong Origin 403: before the token is even
  looked at. The SDK's own transport check runs again behind it with the same lists.
- Every request needs ``Authorization: Bearer TOKEN``; the token is made fresh at each start and
  announced on stderr. A missing or wrong token gets 401.

The port is bound before the allow-lists are made, so port 0 (any free port) works and the
lists name the real port. Once the server accepts connections it writes one machine-readable
line to stderr: ``RWB_MCP_READY {"url": ..., "token": ..., "pid": ..., "project": ...}``.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import secrets
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from workbench.core.project.store import Store
from workbench.services.mcp.server import ConsensusServer

log = logging.getLogger("workbench.mcp.http")

LOOPBACK = "127.0.0.1"
MCP_PATH = "/mcp"
READY_PREFIX = "RWB_MCP_READY "
CLIENT_PREFIX = "RWB_MCP_CLIENT "  # one line per new MCP client: {"name": ..., "version": ...}


@dataclass(frozen=True)
class HttpSettings:
    port: int
    token: str
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}{MCP_PATH}"

    def security(self) -> TransportSecuritySettings:
        return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=list(self.allowed_hosts),
                                         allowed_origins=list(self.allowed_origins))


def new_token() -> str:
    """A fresh bearer token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def http_settings(port: int, token: str | None = None, extra_hosts: Sequence[str] = (),
                  extra_origins: Sequence[str] = ()) -> HttpSettings:
    """The allow-lists for a server on ``port``: loopback names with exactly that port."""
    hosts = (f"{LOOPBACK}:{port}", f"localhost:{port}", *extra_hosts)
    origins = (f"http://{LOOPBACK}:{port}", f"http://localhost:{port}", *extra_origins)
    return HttpSettings(port=port, token=token or new_token(), allowed_hosts=tuple(dict.fromkeys(hosts)),
                        allowed_origins=tuple(dict.fromkeys(origins)))


class Guard:
    """ASGI middleware in front of everything: Host and Origin allow-lists first, then the token."""

    def __init__(self, app: ASGIApp, settings: HttpSettings):
        self.app = app
        self.settings = settings
        self._headers_check = TransportSecurityMiddleware(settings.security())
        self._expected = f"Bearer {settings.token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refused = await self._headers_check.validate_request(request, is_post=False)
        if refused is not None:
            log.warning("refused %s %s: %s (Host %r, Origin %r)", request.method, request.url.path,
                        refused.body.decode(errors="replace"), request.headers.get("host"),
                        request.headers.get("origin"))
            await refused(scope, receive, send)
            return
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, self._expected):
            reason = "missing" if not given else "wrong"
            log.warning("refused %s %s: %s bearer token", request.method, request.url.path, reason)
            response = JSONResponse(
                {"error": "invalid_token",
                 "error_description": f"{reason} bearer token: send 'Authorization: Bearer <token>' "
                                      "with the token rwb serve-mcp printed when it started"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="rwb-mcp", error="invalid_token"'})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def build_app(server: ConsensusServer, settings: HttpSettings) -> ASGIApp:
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, transport_security=settings.security(),
                                     host=LOOPBACK)
    return Guard(app, settings)


def bind_loopback(port: int = 0) -> socket.socket:
    """A listening TCP socket on 127.0.0.1 (port 0: any free port)."""
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it every keep-alive response stalls 40 ms (Nagle against the client's delayed ACK).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def announce(settings: HttpSettings, project: str) -> None:
    """Show the URL and token to the user (stderr) and to the GUI (the RWB_MCP_READY line)."""
    print(f"rwb serve-mcp: serving {project}\n"
          f"rwb serve-mcp: MCP endpoint {settings.url} (127.0.0.1 only)\n"
          f"rwb serve-mcp: bearer token {settings.token}\n"
          f"rwb serve-mcp: send the header 'Authorization: Bearer <token>'; the token changes at each start",
          file=sys.stderr)
    ready = {"url": settings.url, "token": settings.token, "pid": os.getpid(), "project": project}
    print(READY_PREFIX + json.dumps(ready), file=sys.stderr, flush=True)


def announce_client(name: str, version: str | None) -> None:
    """Tell the GUI (stderr) that a new MCP client called a tool."""
    print(CLIENT_PREFIX + json.dumps({"name": name, "version": version}), file=sys.stderr, flush=True)


def serve_http(store: Store, *, port: int = 0, extra_hosts: Sequence[str] = (),
               extra_origins: Sequence[str] = (),
               on_ready: Callable[[HttpSettings], None] | None = None) -> None:
    """Serve Streamable HTTP on 127.0.0.1 until SIGINT/SIGTERM (or the uvicorn server exits)."""
    import anyio
    import uvicorn

    sock = bind_loopback(port)
    settings = http_settings(sock.getsockname()[1], extra_hosts=extra_hosts, extra_origins=extra_origins)
    ready = on_ready or (lambda s: announce(s, str(store.path)))
    with ConsensusServer(store, transport="http") as server:
        server.on_client = announce_client
        config = uvicorn.Config(build_app(server, settings), log_config=None, access_log=False,
                                log_level="warning", lifespan="on", timeout_graceful_shutdown=3)
        userver = uvicorn.Server(config)

        async def main() -> None:
            async def ready_when_started() -> None:
                while not userver.started:
                    if userver.should_exit:
                        return
                    await anyio.sleep(0.02)
                ready(settings)

            async with anyio.create_task_group() as tg:
                tg.start_soon(ready_when_started)
                await userver.serve(sockets=[sock])
                tg.cancel_scope.cancel()

        # uvicorn shuts down gracefully on SIGINT/SIGTERM, then raises the signal again once it
        # has put the previous handlers back: these quiet ones let the store threads still close
        # their connections and the process exit 0.
        previous = _quiet_signals() if _in_main_thread() else {}
        try:
            anyio.run(main)
        finally:
            sock.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _quiet_signals() -> dict:
    def note(sig: int, _frame: object) -> None:
        log.info("stopping on %s", signal.Signals(sig).name)

    return {sig: signal.signal(sig, note) for sig in (signal.SIGINT, signal.SIGTERM)}


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
