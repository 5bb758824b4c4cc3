"""A loopback OpenAI-compatible chat server for tests and benchmarks (stdlib only).

    with FakeLLMServer(default=Reply(text="hello", latency_s=0.01)) as server:
        gateway_config = {"model": "openai/fake-model", "api_base": server.base_url}
        ...
        assert server.requests[0].headers["authorization"] == "Bearer sk-test"

It listens on 127.0.0.1 with an OS-chosen port, and serves

- ``POST /v1/chat/completions``: non-streaming JSON, or SSE when the body says ``"stream": true``;
- ``GET /v1/models``: the list in ``server.models``.

Replies are scripted. ``server.enqueue(Reply(...), ...)`` queues replies consumed one per chat
request in order; when the queue is empty, ``server.rule(request)`` (if set and it returns a
:class:`Reply`) decides, else ``server.default``. A :class:`Reply` can inject latency, an HTTP
error status with a ``Retry-After`` header, a hang past the client's timeout, a malformed JSON
body, a truncated SSE stream (the connection dropped mid-stream), arbitrary headers and usage
numbers. Its ``text`` and ``body`` may be functions of the :class:`RecordedRequest`.

``RateLimitRule(rps)`` as ``server.rule`` makes it a provider with a rate limit: at most ``rps``
requests accepted in any 1 s window, 429 with ``Retry-After`` (whole seconds) above it.
``FakeLLMServer(batches=FakeBatchAPI())`` adds a stand-in of OpenAI's ``/v1/files`` and
``/v1/batches`` (tests/support/fake_batch_api.py), whose requests are answered like chat requests.

Every request is recorded (``server.requests``) with its arrival time on ``server.clock``
(``time.monotonic`` unless a test injects a fake clock), its headers (lower-cased names) and its
parsed body, and the server tracks the most requests it ever had in flight at once.

``stop()`` (or leaving the ``with`` block) shuts the listener down, drops open keep-alive
connections, wakes any handler that is hanging or sleeping, and joins every thread it started.
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Text = str | Callable[["RecordedRequest"], str]


@dataclass
class Reply:
    """What the server answers to one chat request."""

    text: Text = "ok"
    status: int = 200
    latency_s: float = 0.0  # slept before answering (interrupted by stop())
    retry_after: str | float | None = None  # sent as the Retry-After header
    hang_s: float | None = None  # sleep this long and send nothing (past the client's timeout)
    malformed: bool = False  # a 200 whose body is not valid JSON
    truncate_stream: bool = False  # SSE only: drop the connection after the first chunk
    body: Text | None = None  # the raw body, verbatim (overrides everything but the status)
    usage: dict[str, int] | None = None  # prompt_tokens / completion_tokens; counted when absent
    error_message: str = "injected failure"
    headers: dict[str, str] = field(default_factory=dict)
    model: str | None = None  # the model named in the reply; the request's when None
    finish_reason: str = "stop"  # "length": the reply was cut off at the token limit


@dataclass
class RecordedRequest:
    index: int
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any] | None  # the parsed JSON body, when it parsed
    raw_body: str
    arrived: float  # on server.clock
    arrived_wall: float  # time.time()
    thread: str

    @property
    def messages(self) -> list[dict]:
        return (self.body or {}).get("messages", [])


def _count_words(messages: list[dict]) -> int:
    return sum(len(str(m.get("content", "")).split()) for m in messages)


def completion_payload(request: RecordedRequest, reply: Reply) -> dict[str, Any]:
    """The chat.completion body a 200 ``reply`` answers ``request`` with (its usage counted in
    words when the reply gives none). The batch stand-in writes the same body into its output file."""
    text = reply.text(request) if callable(reply.text) else reply.text
    body = request.body or {}
    prompt = (reply.usage or {}).get("prompt_tokens", _count_words(request.messages))
    completion = (reply.usage or {}).get("completion_tokens", len(text.split()))
    return {"id": f"chatcmpl-fake-{request.index}", "object": "chat.completion", "created": int(time.time()),
            "model": reply.model or body.get("model") or "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": reply.finish_reason}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}


def error_payload(reply: Reply) -> dict[str, Any]:
    kind = "rate_limit_exceeded" if reply.status == 429 else "server_error"
    return {"error": {"message": reply.error_message, "type": kind, "code": reply.status}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
    disable_nagle_algorithm = True  # without it every request costs ~40 ms (delayed ACK)
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
        pass

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        self.server.owner._track(self.connection, add=False)

    # -- routing ---------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 — http.server's method name
        owner = self.server.owner
        request = owner._record(self, b"")
        if owner.batches is not None and owner.batches.serves(self.path):
            self._send_raw(*owner.batches.handle(request, b""))
            return
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            data = [{"id": m, "object": "model", "owned_by": "fake"} for m in owner.models]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802 — http.server's method name
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        request = owner._record(self, raw)
        if owner.batches is not None and owner.batches.serves(self.path):
            self._send_raw(*owner.batches.handle(request, raw))
            return
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        reply = owner._reply_for(request)
        owner._enter()
        entered = True
        try:
            if reply.hang_s is not None:
                owner._stopping.wait(reply.hang_s)
                self.close_connection = True
                return  # the client has given up; say nothing
            if reply.latency_s and owner._stopping.wait(reply.latency_s):
                self.close_connection = True
                return
            owner._leave()  # before the first byte goes out, so a waiting client sees it freed
            entered = False
            self._answer(request, reply)
        except OSError:  # the client went away (timeout, stop): nothing to answer
            self.close_connection = True
        finally:
            if entered:
                owner._leave()

    # -- answers ---------------------------------------------------------------------------

    def _answer(self, request: RecordedRequest, reply: Reply) -> None:
        extra = dict(reply.headers)
        if reply.retry_after is not None:
            extra["Retry-After"] = str(reply.retry_after)
        if reply.body is not None:
            body = reply.body(request) if callable(reply.body) else reply.body
            self._send_raw(reply.status, body.encode(), "application/json", extra)
            return
        if reply.status != 200:
            self._send_json(reply.status, error_payload(reply), extra)
            return
        if reply.malformed:
            self._send_raw(200, b'{"id": "chatcmpl-bad", "choices": [{"message": {"content": "tru', "application/json", extra)
            return
        payload = completion_payload(request, reply)
        if (request.body or {}).get("stream"):
            text = payload["choices"][0]["message"]["content"]
            self._stream(payload["id"], payload["model"], text, payload["usage"], reply, extra)
            return
        self._send_json(200, payload, extra)

    def _stream(self, cid: str, model: str, text: str, usage: dict, reply: Reply, extra: dict) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()

        def chunk(data: str) -> None:
            raw = f"data: {data}\n\n".encode()
            self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            self.wfile.flush()

        def event(delta: dict, finish: str | None = None, with_usage: bool = False) -> str:
            obj: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                                   "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            if with_usage:
                obj["usage"] = usage
            return json.dumps(obj)

        words = text.split(" ")
        pieces = [w if i == 0 else " " + w for i, w in enumerate(words)]
        chunk(event({"role": "assistant", "content": pieces[0] if pieces else ""}))
        if reply.truncate_stream:
            # Drop the connection mid-body: no terminating zero-length chunk, no [DONE].
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        for piece in pieces[1:]:
            chunk(event({"content": piece}))
        chunk(event({}, finish="stop", with_usage=True))
        chunk("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, payload: dict, extra: dict | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", extra or {})

    def _send_raw(self, status: int, data: bytes, ctype: str, extra: dict) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # so server_close() joins every handler thread
    block_on_close = True
    allow_reuse_address = True
    # socketserver's default backlog is 5: 60 clients connecting at once overflowed it, and the
    # kernel's SYN retry a second later was charged to the client (fire-all at 3.7x its bound,
    # one call failed). A provider's backlog is far larger.
    request_queue_size = 512
    owner: FakeLLMServer


class FakeLLMServer:
    """A scriptable OpenAI-compatible server on 127.0.0.1 (see the module docstring)."""

    def __init__(self, default: Reply | None = None, *, clock: Callable[[], float] = time.monotonic,
                 models: list[str] | None = None, batches: Any = None):
        self.default = default or Reply()
        # OpenAI's /v1/files and /v1/batches, when given (tests/support/fake_batch_api.py); their
        # requests are answered like chat requests: queue, rule, default.
        self.batches = batches
        if batches is not None:
            batches.server = self
        self.rule: Callable[[RecordedRequest], Reply | None] | None = None
        self.clock = clock
        self.models = models or ["fake-model"]
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle ------------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-llm-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()  # wakes hanging and sleeping handlers
        httpd.shutdown()  # ends serve_forever
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # ends keep-alive handlers blocked reading the next request
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()  # joins the handler threads
        if thread is not None:
            thread.join(5)
        self._httpd = self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the server is not running"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The ``api_base`` to give a client: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting -------------------------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        """Replies for the next chat requests, in order; then the rule or the default applies."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and "/chat/completions" in r.path]

    def arrivals(self) -> list[float]:
        return [r.arrived for r in self.chat_requests]

    def max_in_window(self, window_s: float) -> int:
        """The most chat requests that arrived within any half-open window of ``window_s``."""
        times = sorted(self.arrivals())
        best, lo = 0, 0
        for hi, t in enumerate(times):
            while t - times[lo] >= window_s:
                lo += 1
            best = max(best, hi - lo + 1)
        return best

    # -- used by the handler ---------------------------------------------------------------

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            (self._connections.add if add else self._connections.discard)(conn)

    def _record(self, handler: _Handler, raw: bytes) -> RecordedRequest:
        text = raw.decode("utf-8", "replace")
        try:
            body = json.loads(text) if text else None
        except ValueError:
            body = None
        with self._lock:
            request = RecordedRequest(
                index=len(self.requests), method=handler.command, path=handler.path,
                headers={k.lower(): v for k, v in handler.headers.items()},
                body=body if isinstance(body, dict) else None, raw_body=text,
                arrived=self.clock(), arrived_wall=time.time(), thread=threading.current_thread().name)
            self.requests.append(request)
        return request

    def _reply_for(self, request: RecordedRequest) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.rule is not None:
            chosen = self.rule(request)
            if chosen is not None:
                return chosen
        return self.default

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


class RateLimitRule:
    """A ``server.rule`` that enforces a provider's rate limit: at most ``rps`` requests accepted in
    any window of ``window_s`` seconds (sliding, over the requests it accepted); above it a 429 with
    ``Retry-After`` in whole seconds, rounded up, as real providers send it. ``refused`` counts them."""

    def __init__(self, rps: float, window_s: float = 1.0, *, clock: Callable[[], float] = time.monotonic):
        self.rps, self.window_s, self.clock = rps, window_s, clock
        self.accepted: deque[float] = deque()
        self.refused = 0
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply | None:
        now = self.clock()
        with self._lock:
            while self.accepted and now - self.accepted[0] >= self.window_s:
                self.accepted.popleft()
            if len(self.accepted) >= self.rps:
                self.refused += 1
                wait = self.window_s - (now - self.accepted[0])
                return Reply(status=429, retry_after=max(1, math.ceil(wait)), error_message="rate limited")
            self.accepted.append(now)
        return None  # the server's default (or queued) reply


class FakeClock:
    """A clock for the gateway's limiter and backoff (and the server's arrival stamps) that only
    moves when someone sleeps on it, so a 60 s window is tested in milliseconds.

    ``now`` is a ``clock()``; ``sleep(seconds, cancel)`` advances time and returns whether
    ``cancel`` is set, the gateway's ``Sleep`` signature. ``sleeps`` records every sleep asked for.
    """

    def __init__(self, start: float = 1000.0):
        self._t = start
        self._lock = threading.Lock()
        self.sleeps: list[float] = []

    def now(self) -> float:
        with self._lock:
            return self._t

    def sleep(self, seconds: float, cancel: threading.Event | None = None) -> bool:
        if cancel is not None and cancel.is_set():
            return True
        with self._lock:
            self.sleeps.append(seconds)
            self._t += max(0.0, seconds)
        return bool(cancel is not None and cancel.is_set())
