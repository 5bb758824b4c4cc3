"""At most 256 Streamable HTTP sessions, and none idle for more than 5 minutes (SPEC §11).

Each ``initialize`` over HTTP opens a session that the SDK keeps (about 38 kB, its streams and
a task) until the client ends it with DELETE or it idles out; left to the SDK's defaults (10,000
sessions, 30 minutes), 8,605 initializes in 25 s took the server from 90 MB to 415 MB.
:class:`SessionKeeper` sits in front of the SDK's app and counts the sessions it opens:

- **The cap.** While ``limit`` sessions are open, a request that would open another is answered
  at once with HTTP 503, ``Retry-After`` (when the longest-idle session will have idled out) and
  a JSON-RPC error carrying the request's id. No open session is evicted to make room: a session
  is an agent part-way through its work (an LLM agent may think for minutes between two votes),
  and closing it under a flood of new ones would turn the flood into lost work. The sessions an
  abandoned client leaves behind idle out, and the room comes back.
- **Idle close.** A session with no request in flight (an open GET stream counts as one) for
  ``idle_s`` seconds is closed with an internal DELETE through the SDK, exactly as a client would
  end it; its id then answers 404. Idleness is measured on ``clock`` (injected in tests) and
  checked before each new session is admitted and every ``sweep_every_s`` seconds.

The SDK's own cap and idle timeout are set to the same values as a backstop.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import mcp_types as types
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workbench.core.limits import MAX_MCP_SESSIONS, MCP_SESSION_IDLE_S

log = logging.getLogger("workbench.mcp.http")

SESSION_HEADER = b"mcp-session-id"
MESSAGE_KEY = "rwb.mcp.message"  # the checked JSON-RPC message, left in the scope by the gate


@dataclass
class _Session:
    last_active: float
    in_flight: int = 0


class SessionKeeper:
    """ASGI middleware over the SDK's Streamable HTTP app: the session cap and the idle close."""

    def __init__(self, app: ASGIApp, *, host: str, path: str, limit: int = MAX_MCP_SESSIONS,
                 idle_s: float = MCP_SESSION_IDLE_S, clock: Callable[[], float] = time.monotonic,
                 sweep_every_s: float = 15.0):
        self.app = app
        self.host = host  # a Host header the SDK accepts, for the internal DELETE
        self.path = path
        self.limit = limit
        self.idle_s = idle_s
        self.clock = clock
        self.sweep_every_s = sweep_every_s
        self.sessions: dict[str, _Session] = {}
        self.refused = 0  # opening requests answered 503
        self.closed_idle = 0
        self._opening = 0  # opening requests admitted, not yet answered

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._with_sweeper(scope, receive, send)
        elif scope["type"] != "http":
            await self.app(scope, receive, send)
        elif (sid := _header(scope, SESSION_HEADER)) is not None:
            await self._in_session(sid, scope, receive, send)
        elif _is_initialize(scope):
            await self._open(scope, receive, send)
        else:  # a request that opens no session (a 2026-era request carries its own envelope)
            await self.app(scope, receive, send)

    # ----- requests ------------------------------------------------------------------------
    async def _in_session(self, sid: str, scope: Scope, receive: Receive, send: Send) -> None:
        session = self.sessions.get(sid)
        if session is None:  # unknown or closed: the SDK answers 404
            await self.app(scope, receive, send)
            return
        session.in_flight += 1
        status: list[int] = []

        def done() -> None:
            session.in_flight -= 1
            session.last_active = self.clock()
            if status and (status[0] == 404 or (scope["method"] == "DELETE" and status[0] < 300)):
                self.sessions.pop(sid, None)  # the SDK no longer has it

        async def watching(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        await self._served(scope, receive, watching, done)

    async def _open(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.sweep()
        if len(self.sessions) + self._opening >= self.limit:
            await self._refuse(scope, receive, send)
            return
        self._opening += 1  # holds a place until the session is counted (or the request failed)
        opened: list[_Session] = []

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                sid = _header(message, SESSION_HEADER)
                if sid is not None and not opened:
                    opened.append(self.sessions.setdefault(sid, _Session(last_active=self.clock(), in_flight=1)))
                    self._opening -= 1
            await send(message)

        def done() -> None:
            if not opened:
                self._opening -= 1
            for session in opened:
                session.in_flight -= 1
                session.last_active = self.clock()

        await self._served(scope, receive, noting, done)

    async def _served(self, scope: Scope, receive: Receive, send: Send, done: Callable[[], None]) -> None:
        """Serve one request; ``done`` runs once, as its last byte is handed on (so a client that
        has the whole answer never finds the request still in flight), or when it fails."""
        finished = False

        def finish() -> None:
            nonlocal finished
            if not finished:
                finished = True
                done()

        async def last_byte_done(message: Message) -> None:
            last = (message["type"] == "http.response.body" and not message.get("more_body", False)) or (
                message["type"] == "http.response.start" and _header(message, b"content-length") == "0")
            if last:  # an empty body is whole once its headers are out (202 to a notification)
                finish()
            await send(message)

        try:
            await self.app(scope, receive, last_byte_done)
        finally:
            finish()

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.refused += 1
        retry = self.retry_after()
        message = scope.get(MESSAGE_KEY)
        request_id = message.get("id") if isinstance(message, dict) else None
        error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
            code=types.INTERNAL_ERROR,
            message=f"the server holds its limit of {self.limit:,} MCP sessions; end one you no longer "
                    f"use (DELETE with its Mcp-Session-Id) or retry in {retry:,} s"))
        if self.refused == 1 or self.refused % 1000 == 0:  # a flood is logged, not every request of it
            log.warning("refused a new session: %d sessions open (%d refused so far)", len(self.sessions), self.refused)
        body = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
        await send({"type": "http.response.start", "status": 503,
                    "headers": [(b"content-type", b"application/json"), (b"retry-after", str(retry).encode()),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    def retry_after(self) -> int:
        """Whole seconds until the longest-idle session idles out (``idle_s`` when all are busy)."""
        now = self.clock()
        idle = [now - s.last_active for s in self.sessions.values() if s.in_flight == 0]
        wait = self.idle_s - max(idle) if idle else self.idle_s
        return max(1, math.ceil(wait))

    # ----- idle close ----------------------------------------------------------------------
    async def sweep(self) -> int:
        """Close every session idle for ``idle_s`` or more; how many were closed."""
        now = self.clock()
        idle = [sid for sid, s in self.sessions.items() if s.in_flight == 0 and now - s.last_active >= self.idle_s]
        for sid in idle:
            self.sessions.pop(sid, None)
            await self._delete(sid)
        if idle:
            self.closed_idle += len(idle)
            log.info("closed %d MCP session(s) idle for %g s or more; %d open", len(idle), self.idle_s,
                     len(self.sessions))
        return len(idle)

    async def _delete(self, sid: str) -> None:
        """End a session through the SDK as a client would: DELETE with its id."""
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "DELETE",
                 "scheme": "http", "path": self.path, "raw_path": self.path.encode(), "query_string": b"",
                 "root_path": "", "client": ("127.0.0.1", 0), "server": None, "state": {},
                 "headers": [(b"host", self.host.encode()), (SESSION_HEADER, sid.encode())]}

        async def nothing_more() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(_message: Message) -> None:
            pass

        try:
            await self.app(scope, nothing_more, discard)
        except Exception:  # the session is gone from the count either way; the SDK's idle timeout backs this up
            log.exception("could not close idle session %s", sid[:64])

    async def _with_sweeper(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def sweep_forever() -> None:
            while True:
                await anyio.sleep(self.sweep_every_s)
                await self.sweep()

        async with anyio.create_task_group() as tg:
            tg.start_soon(sweep_forever)
            try:
                await self.app(scope, receive, send)
            finally:
                tg.cancel_scope.cancel()


def _is_initialize(scope: Scope) -> bool:
    """A POST whose checked message is ``initialize``: the request that opens a session."""
    message = scope.get(MESSAGE_KEY)
    return scope["method"] == "POST" and isinstance(message, dict) and message.get("method") == "initialize"


def _header(holder: Scope | Message, name: bytes) -> str | None:
    for key, value in holder.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None
