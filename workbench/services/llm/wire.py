"""What went over the wire during one attempt, and what kind of failure an exception was.

litellm turns every provider failure into its own exception classes, and in doing so it can
lose what a researcher needs: a refused connection becomes an ``InternalServerError`` with a
made-up status 500, a malformed body loses the body, and the response headers (``Retry-After``)
move to ``litellm_response_headers``. So the gateway records the HTTP exchange itself:
:class:`WireTap` owns the ``httpx.Client`` that litellm's OpenAI-compatible path sends through
(``litellm.client_session``) and, for the thread that is inside a gateway attempt, notes each
request sent and the status, headers and exact body of each response. For providers that do
not go through that client, :func:`classify` falls back on what the exception chain holds.

No litellm import here (only llm.py imports it); httpx is imported when the tap is built.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

_CONNECT_NAMES = {"APIConnectionError", "ConnectError", "ConnectTimeout", "RemoteProtocolError",
                  "ReadError", "WriteError", "NetworkError", "TransportError", "ProxyError"}
_TIMEOUT_NAMES = {"Timeout", "APITimeoutError", "TimeoutException", "ReadTimeout", "WriteTimeout",
                  "PoolTimeout", "TimeoutError"}
_KIND_BY_CLASS = {
    "RateLimitError": "rate_limited", "AuthenticationError": "auth", "PermissionDeniedError": "auth",
    "NotFoundError": "not_found", "BadRequestError": "bad_request", "UnprocessableEntityError": "bad_request",
    "ContextWindowExceededError": "bad_request", "UnsupportedParamsError": "bad_request",
    "ContentPolicyViolationError": "bad_request", "InternalServerError": "server_error",
    "ServiceUnavailableError": "server_error", "BadGatewayError": "server_error",
    "APIResponseValidationError": "bad_response",
}


@dataclass
class WireRecord:
    requests_sent: int = 0
    url: str | None = None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None


class WireTap:
    """An ``httpx.Client`` whose hooks record the current thread's exchange, when one is open."""

    def __init__(self, verify: Any = True) -> None:
        self._local = threading.local()
        self.client = self._build_client(verify)

    def _build_client(self, verify: Any) -> Any:
        import httpx

        return httpx.Client(
            verify=verify, follow_redirects=True,
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
            event_hooks={"request": [self._on_request], "response": [self._on_response]},
        )

    def begin(self) -> WireRecord:
        record = WireRecord()
        self._local.record = record
        return record

    def end(self) -> None:
        self._local.record = None

    def _on_request(self, request: Any) -> None:
        record = getattr(self._local, "record", None)
        if record is not None:
            record.requests_sent += 1
            record.url = str(request.url)

    def _on_response(self, response: Any) -> None:
        record = getattr(self._local, "record", None)
        if record is None:
            return
        record.status = response.status_code
        record.headers = {k.lower(): v for k, v in response.headers.items()}
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return  # never drain a stream here
        response.read()  # httpx keeps the bytes, so the SDK still parses them
        record.body = response.text


@dataclass
class Failure:
    kind: str
    message: str
    http_status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        item = todo.pop(0)
        if item is None or any(item is s for s in seen):
            continue
        seen.append(item)
        todo.extend([item.__cause__, item.__context__])  # type: ignore[list-item]
    return seen


def _real_response(exc: BaseException) -> Any:
    """An httpx response that really came from the server. litellm attaches made-up placeholder
    responses (no headers, a dummy URL) to the exceptions it builds; a real one has headers."""
    response = getattr(exc, "response", None)
    if response is None or not hasattr(response, "status_code") or not getattr(response, "headers", None):
        return None
    return response


def _kind_for_status(status: int) -> str:
    if status == 429:
        return "rate_limited"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status >= 500:
        return "server_error"
    if 200 <= status < 300:
        return "bad_response"  # the server said OK but the body could not be understood
    return "bad_request"


def classify(exc: BaseException, wire: WireRecord | None) -> Failure:
    """The failure kind, the HTTP status, the response headers and body behind ``exc``."""
    chain = _chain(exc)
    names = {cls.__name__ for e in chain for cls in type(e).__mro__}
    message = str(exc) or type(exc).__name__
    headers: dict[str, str] = {}
    body: str | None = None
    status: int | None = None
    if wire is not None and wire.requests_sent:
        # The request went through the tap: what it saw is the truth (no status: no answer).
        status, headers, body = wire.status, dict(wire.headers), wire.body
    else:
        for item in chain:
            response = _real_response(item)
            if response is None:
                continue
            if status is None:
                status = response.status_code
                headers = {k.lower(): v for k, v in response.headers.items()}
            try:
                text = response.text
            except Exception:  # a streamed body that was never read
                text = None
            if text:
                body = text
                break
        extra = getattr(exc, "litellm_response_headers", None)
        if extra:
            headers = {**{str(k).lower(): str(v) for k, v in dict(extra).items()}, **headers}
    if names & _TIMEOUT_NAMES and not (status and status != 408):
        return Failure("timeout", message, status, headers, body)
    if status is not None:
        return Failure(_kind_for_status(status), message, status, headers, body)
    if "JSONDecodeError" in names:  # a body came back but was not JSON
        return Failure("bad_response", message, None, headers, body)
    if names & _CONNECT_NAMES or "Connection error" in message:
        return Failure("connection", message, None, headers, body)
    for item in chain:
        for cls in type(item).__mro__:
            kind = _KIND_BY_CLASS.get(cls.__name__)
            if kind:
                return Failure(kind, message, None, headers, body)
    return Failure("internal", message, None, headers, body)
