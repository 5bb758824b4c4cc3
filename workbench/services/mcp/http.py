"""Streamable HTTP for the Consensus Server, locked down for a desktop machine.

- It binds 127.0.0.1 only (never a public interface).
- DNS-rebinding protection with an explicit allow-list: the Host header must be
  ``127.0.0.1:PORT`` or ``localhost:PORT``, and an Origin header, when a browser sends one, must
  be ``http://127.0.0.1:PORT`` or ``http://localhost:PORT`` (plus what ``--allow-host`` and
  ``--allow-origin`` add). A wrong Host gets 421, a wrong Origin 403: before the token is even
  looked at. The SDK's own transport check runs again behind it with the same lists.
- Every request needs ``Authorization: Bearer TOKEN``; the token is made fresh at each start and
  announced on stderr. A missing or wrong token gets 401.

Behind the token (SPEC §11, docs/mcp.md "Untrusted clients"):

- :class:`MessageGate` checks every POST body with :func:`wire.check_message` before the SDK
  reads it: a malformed one gets HTTP 400 (413 past ``MAX_MCP_MESSAGE_BYTES``) with a JSON-RPC
  error that carries the request's id whenever it can be read;
- :class:`~workbench.services.mcp.sessions.SessionKeeper` holds at most 256 sessions and closes one
  idle for 5 minutes.

The port is bound before the allow-lists are made, so port 0 (any free port) works and the
lists name the real port; a port in use is a plain input error (exit 2). Once the server accepts
connections it writes one machine-readable line to stderr,
``RWB_MCP_READY {"channel": ..., "url": ..., "token": ..., "pid": ..., "project": ...}``, and one
``RWB_MCP_CLIENT {"channel": ..., "name": ..., "version": ...}`` per new client. Both are ASCII
JSON (``ensure_ascii``: no control character, no newline) and carry the channel key the GUI gave
the process in ``RWB_MCP_CHANNEL``: a client never sees that key, so a line it manages to get
printed (the log escapes what clients send anyway) is never read as the server's.
"""

from __future__ import annotations

import errno
import hmac
import json
import logging
import os
import secrets
import signal
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from workbench.core.errors import InputError
from workbench.core.limits import MAX_MCP_MESSAGE_BYTES, MAX_MCP_SESSIONS, MCP_SESSION_IDLE_S, printable
from workbench.core.project.store import Store
from workbench.services.mcp.server import ConsensusServer
from workbench.services.mcp.sessions import MESSAGE_KEY, SessionKeeper
from workbench.services.mcp.wire import ID_SCAN_CHARS, Refusal, check_message

log = logging.getLogger("workbench.mcp.http")

LOOPBACK = "127.0.0.1"
MCP_PATH = "/mcp"
READY_PREFIX = "RWB_MCP_READY "
CLIENT_PREFIX = "RWB_MCP_CLIENT "  # one line per new MCP client: {"name": ..., "version": ...}
CHANNEL_ENV = "RWB_MCP_CHANNEL"  # the key every control line carries (the GUI sets it; else one is made)


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


SMALL_BODY = 65_536  # checked on the event loop; a larger body on a worker thread


class MessageGate:
    """ASGI middleware: a POST body reaches the SDK only once :func:`check_message` passed it,
    re-serialised; otherwise the client gets the JSON-RPC error (400, or 413 when too large)."""

    def __init__(self, app: ASGIApp, limit: int = MAX_MCP_MESSAGE_BYTES):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body, size = await self._read(scope, receive)
        if size > self.limit:
            verdict = check_message(body[:ID_SCAN_CHARS], size=size)
        elif not _is_json(scope):  # the SDK answers 415 with its own JSON-RPC error
            verdict = None
        elif len(body) > SMALL_BODY:  # a large body is checked off the event loop (~0.2 s per MiB)
            verdict = await anyio.to_thread.run_sync(check_message, body)
        else:
            verdict = check_message(body)
        if isinstance(verdict, Refusal):
            log.warning("refused a message (id %s): %s", verdict.id, verdict.message)
            response = Response(verdict.body(), status_code=413 if verdict.too_large else 400,
                                media_type="application/json")
            await response(scope, receive, send)
            return
        if verdict is not None:
            body = verdict.text.encode()
            scope[MESSAGE_KEY] = verdict.message
        await self.app(scope, _replay(body, receive), send)

    async def _read(self, scope: Scope, receive: Receive) -> tuple[bytes, int]:
        """The body (its first ``limit + 1`` bytes at most) and its size: the declared one when
        it is over the limit, else what arrived."""
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            first = await receive()
            return first.get("body", b"")[:ID_SCAN_CHARS], declared
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size <= self.limit + 1:
                chunks.append(chunk)
            elif sum(map(len, chunks)) < ID_SCAN_CHARS:
                chunks.append(chunk[:ID_SCAN_CHARS])
            if not message.get("more_body", False):
                break
        return b"".join(chunks), size


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives ``body`` once, then whatever the connection says (a disconnect)."""
    sent = False

    async def replaying() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replaying


def _is_json(scope: Scope) -> bool:
    for key, value in scope.get("headers", ()):
        if key == b"content-type":
            return value.split(b";")[0].strip().lower() == b"application/json"
    return False


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", ()):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def build_app(server: ConsensusServer, settings: HttpSettings, *,
              clock: Callable[[], float] = time.monotonic) -> ASGIApp:
    """Guard (Host, Origin, token) -> MessageGate -> SessionKeeper -> the SDK's app. The SDK's
    own session cap and idle timeout are the keeper's, as a backstop."""
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, transport_security=settings.security(),
                                     host=LOOPBACK, max_sessions=MAX_MCP_SESSIONS,
                                     session_idle_timeout=MCP_SESSION_IDLE_S)
    keeper = SessionKeeper(app, host=settings.allowed_hosts[0], path=MCP_PATH, clock=clock)
    return Guard(MessageGate(keeper), settings)


def bind_loopback(port: int = 0) -> socket.socket:
    """A listening TCP socket on 127.0.0.1 (port 0: any free port)."""
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it every keep-alive response stalls 40 ms (Nagle against the client's delayed ACK).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise InputError("--port", _port_problem(port, exc)) from None
    return sock


def _port_problem(port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"{port} is in use"
    if exc.errno == errno.EACCES:
        return f"{port} needs privileges this user does not have; choose a port from 1024, or 0 for any free one"
    return f"cannot listen on {LOOPBACK}:{port} ({exc.strerror or exc})"


def control_line(prefix: str, channel: str, fields: dict) -> str:
    """A line for the GUI: the prefix, then ASCII JSON (no control character can get in) that
    starts with the channel key."""
    return prefix + json.dumps({"channel": channel, **fields}, ensure_ascii=True)


def channel_key() -> str:
    """The key the GUI gave in ``RWB_MCP_CHANNEL`` (a terminal user gets a fresh one)."""
    return os.environ.get(CHANNEL_ENV) or secrets.token_hex(16)


def announce(settings: HttpSettings, project: str, channel: str) -> None:
    """Show the URL and token to the user (stderr) and to the GUI (the RWB_MCP_READY line)."""
    print(f"rwb serve-mcp: serving {printable(project)}\n"
          f"rwb serve-mcp: MCP endpoint {settings.url} (127.0.0.1 only)\n"
          f"rwb serve-mcp: bearer token {settings.token}\n"
          f"rwb serve-mcp: send the header 'Authorization: Bearer <token>'; the token changes at each start",
          file=sys.stderr)
    ready = {"url": settings.url, "token": settings.token, "pid": os.getpid(), "project": project}
    print(control_line(READY_PREFIX, channel, ready), file=sys.stderr, flush=True)


def client_announcer(channel: str) -> Callable[[str, str | None], None]:
    """Tells the GUI (stderr) that a new MCP client called a tool."""
    def announce_client(name: str, version: str | None) -> None:
        print(control_line(CLIENT_PREFIX, channel, {"name": name, "version": version}), file=sys.stderr, flush=True)

    return announce_client


def serve_http(store: Store, *, port: int = 0, extra_hosts: Sequence[str] = (),
               extra_origins: Sequence[str] = (),
               on_ready: Callable[[HttpSettings], None] | None = None,
               clock: Callable[[], float] = time.monotonic,
               stop: Callable[[], bool] | None = None) -> None:
    """Serve Streamable HTTP on 127.0.0.1 until SIGINT/SIGTERM (or the uvicorn server exits).
    ``clock`` times idle sessions; ``stop``, polled, ends the server (a test's, run in a thread)."""
    import uvicorn

    sock = bind_loopback(port)
    settings = http_settings(sock.getsockname()[1], extra_hosts=extra_hosts, extra_origins=extra_origins)
    channel = channel_key()
    ready = on_ready or (lambda s: announce(s, str(store.path), channel))
    with ConsensusServer(store, transport="http") as server:
        server.on_client = client_announcer(channel)
        config = uvicorn.Config(build_app(server, settings, clock=clock), log_config=None, access_log=False,
                                log_level="warning", lifespan="on", timeout_graceful_shutdown=3)
        userver = uvicorn.Server(config)

        async def main() -> None:
            async def ready_when_started() -> None:
                while not userver.started:
                    if userver.should_exit:
                        return
                    await anyio.sleep(0.02)
                ready(settings)
                while stop is not None and not userver.should_exit:
                    if stop():
                        userver.should_exit = True
                    await anyio.sleep(0.05)

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
