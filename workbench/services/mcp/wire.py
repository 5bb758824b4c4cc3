"""Every message a client sends is checked before the MCP SDK sees it (SPEC §11).

Left to itself, the SDK drops over stdio a line it cannot read (a lone surrogate escape, a
nesting past pydantic's recursion limit, a garbage line), and over HTTP it answers such a body
without the request's id: either way the client's call never resolves. :func:`check_message`
runs in front of both transports (``stdio.py``, ``http.py``) and turns each malformed message into
a JSON-RPC error carrying the request's id whenever the id can be read:

==============================================================  ======  ===================
what                                                            code    field named
==============================================================  ======  ===================
more than ``MAX_MCP_MESSAGE_BYTES``                             -32700  ``message``
not UTF-8; not JSON; NaN or an infinite number                  -32700  ``message``
nested more than ``MAX_JSON_DEPTH``; a lone surrogate           -32602  its path, e.g. ``params.arguments.context``
not a JSON-RPC 2.0 message (a batch, a number as method...)     -32600  the member
``clientInfo`` over its bounds, or a name with control chars    -32602  ``params.clientInfo.version``
==============================================================  ======  ===================

A message that passes is handed on re-serialised (compact, no NaN), so the SDK's own parser
reads exactly what was checked. A notification or a response that fails is not answered
(JSON-RPC forbids it) but logged; over HTTP its POST still gets the error body.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from workbench.core.errors import field_path
from workbench.core.limits import (
    MAX_CLIENT_INFO_BYTES,
    MAX_JSON_DEPTH,
    MAX_MCP_INITIALIZE_BYTES,
    MAX_MCP_MESSAGE_BYTES,
    MAX_NAME_CHARS,
    check_name,
    too_long,
)

#: The part of an oversized or broken message searched for its id (a client writes it first).
ID_SCAN_CHARS = 65_536
#: clientInfo members that are stored with every vote or shown in the GUI: names, not prose.
CLIENT_INFO_NAMES = ("name", "version", "title")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_KEY_CHARS = 40  # a client's key is shown at most this long in a path
TOO_DEEP = f"nests too deeply (more than {MAX_JSON_DEPTH:,} levels of arrays and objects in one message)"


@dataclass(frozen=True)
class Refusal:
    """Why a message was refused, and the id of the request it answers (None when unreadable)."""

    id: types.RequestId | None
    code: int
    message: str
    answer: bool = True  # False for a notification or a response: JSON-RPC sends nothing back
    too_large: bool = False

    def error(self) -> types.JSONRPCError:
        return types.JSONRPCError(jsonrpc="2.0", id=self.id,
                                  error=types.ErrorData(code=self.code, message=self.message))

    def body(self) -> bytes:
        return self.error().model_dump_json(by_alias=True, exclude_unset=True).encode()


@dataclass(frozen=True)
class Accepted:
    """A message that passed: ``text`` is its compact JSON, ``message`` the decoded object."""

    message: dict[str, Any]
    text: str

    @property
    def id(self) -> types.RequestId | None:
        return readable_id(self.message.get("id"))


def check_message(data: bytes, *, size: int | None = None) -> Accepted | Refusal:
    """One client message (without its line end), checked. ``size`` is its full length when
    ``data`` holds only its start (a stdio line past the limit is not kept whole)."""
    size = len(data) if size is None else size
    if size > MAX_MCP_MESSAGE_BYTES:
        text = data[:ID_SCAN_CHARS].decode("utf-8", "replace")
        return Refusal(sniff_id(text), types.PARSE_ERROR,
                       f"message: {too_long(size, MAX_MCP_MESSAGE_BYTES, 'bytes')}", too_large=True)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Refusal(_id_of_broken(data.decode("utf-8", "replace")), types.PARSE_ERROR,
                       f"message: is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start:,})")
    try:
        message = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return Refusal(sniff_id(text), types.INVALID_REQUEST, f"message: {TOO_DEEP}")
    except ValueError as exc:  # JSONDecodeError, and NaN/Infinity from _no_constant
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return Refusal(sniff_id(text), types.PARSE_ERROR, f"message: is not JSON ({reason})")
    return _check_decoded(message, text)


def _check_decoded(message: object, text: str) -> Accepted | Refusal:
    id_ = readable_id(message.get("id")) if isinstance(message, dict) else None
    answer = _expects_answer(message)
    problem = _find_problem(message) if _may_have_problem(message, text) else None
    if problem is not None:
        path, what = problem
        code = types.INVALID_PARAMS if path[:1] == ("params",) else types.INVALID_REQUEST
        return Refusal(id_, code, f"{_shown_path(path)}: {what}", answer)
    shape = _shape_problem(message)
    if shape is not None:
        return Refusal(id_, types.INVALID_REQUEST, shape, answer)
    client = _client_info_problem(message)
    if client is not None:
        return Refusal(id_, types.INVALID_PARAMS, client, answer)
    try:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a number too large for a float (1e400) decodes as infinity
        return Refusal(id_, types.PARSE_ERROR, "message: numbers must be finite", answer)
    return Accepted(message, text)


def readable_id(value: object) -> types.RequestId | None:
    """A request id that can be echoed back: a whole number or a string of valid Unicode."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and len(value) <= MAX_NAME_CHARS and not _SURROGATE.search(value):
        return value
    return None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _expects_answer(message: object) -> bool:
    """JSON-RPC answers a request, or anything whose kind cannot be told; never a notification
    (a method, no id) nor a response (a result or an error, no method)."""
    if not isinstance(message, dict):
        return True
    if "method" in message:
        return "id" in message
    return not ("result" in message or "error" in message)


def _may_have_problem(message: object, text: str) -> bool:
    """Whether ``message`` (decoded from ``text``) nests past the limit or may hold a lone
    surrogate: a quick pass over its arrays and objects only, so a large message pays for
    :func:`_find_problem`'s walk (which names the place) only when there is something to find.
    A surrogate can only come from a ``\\uD800``-style escape (strict UTF-8 has none)."""
    if _SURROGATE_ESCAPE.search(text):
        return True
    stack = [(message, 1)] if type(message) is dict or type(message) is list else []
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return True
        for child in node.values() if type(node) is dict else node:
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1))
    return False


def _find_problem(message: object) -> tuple[tuple, str] | None:
    """The first place that nests too deeply or holds a lone surrogate, without recursion."""
    stack: list[tuple[object, tuple, int]] = [(message, (), 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, str):
            found = _SURROGATE.search(node)
            if found:
                return path, _surrogate(found, "character")
        elif isinstance(node, (dict, list)):
            if depth >= MAX_JSON_DEPTH:
                return path, TOO_DEEP
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, value in items:
                if isinstance(key, str) and (found := _SURROGATE.search(key)):
                    return path, _surrogate(found, "character of a key")
                stack.append((value, (*path, key), depth + 1))
    return None


def _surrogate(found: re.Match, where: str) -> str:
    return (f"contains a lone surrogate (\\u{ord(found.group()):04x} at {where} {found.start() + 1:,}), "
            "which is not Unicode text")


def _shown_path(path: tuple) -> str:
    """A path the client gave, short: its first four steps, each key cut to a few words."""
    steps = [step if isinstance(step, int) else (step if len(step) <= _KEY_CHARS else step[:_KEY_CHARS] + "…")
             for step in path[:4]]
    shown = field_path(steps) or "message"
    return shown + ("…" if len(path) > 4 else "")


def _shape_problem(message: object) -> str | None:
    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
        return None
    except ValidationError:
        pass
    if isinstance(message, list):
        return "message: is a batch (a JSON array); send one JSON-RPC message at a time"
    if not isinstance(message, dict):
        return "message: must be a JSON-RPC 2.0 object"
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc: must be "2.0"'
    if "method" in message and not isinstance(message["method"], str):
        return "method: must be a string"
    if message.get("params") is not None and not isinstance(message["params"], dict):
        return "params: must be an object"
    if "id" in message and readable_id(message["id"]) is None:
        return "id: must be a whole number or a string"
    return "message: is not a JSON-RPC 2.0 request, notification or response"


def _client_info_problem(message: dict) -> str | None:
    """``clientInfo`` is stored with every vote and shown in the GUI: bounded and free of
    control characters, where ``initialize`` declares it and in a request's ``_meta`` envelope."""
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    initialize = message.get("method") == "initialize"
    places: list[tuple[str, object]] = [("params.clientInfo", params.get("clientInfo"))] if initialize else []
    meta = params.get("_meta")
    if isinstance(meta, dict) and types.CLIENT_INFO_META_KEY in meta:
        places.append((f"params._meta.{types.CLIENT_INFO_META_KEY}", meta[types.CLIENT_INFO_META_KEY]))
    for where, info in places:  # the member first: "clientInfo.version: is too long" says what to fix
        problem = client_info_problem(info)
        if problem is not None:
            return f"{where}{problem}"
    if initialize and (size := _json_size(params)) > MAX_MCP_INITIALIZE_BYTES:
        return f"params: {too_long(size, MAX_MCP_INITIALIZE_BYTES, 'bytes of JSON')}"
    return None


def client_info_problem(info: object) -> str | None:
    """What is wrong with a declared ``clientInfo`` (``.version: is too long (...)``), or None.
    A shape the SDK refuses anyway (not an object, a number as name) is left to it."""
    if not isinstance(info, dict):
        return None
    for member in CLIENT_INFO_NAMES:
        value = info.get(member)
        if not isinstance(value, str):
            continue
        if len(value) > MAX_NAME_CHARS:
            return f".{member}: {too_long(len(value), MAX_NAME_CHARS)}"
        try:
            check_name(value)
        except ValueError as exc:
            return f".{member}: {exc}"
    size = _json_size(info)
    if size > MAX_CLIENT_INFO_BYTES:
        return f": {too_long(size, MAX_CLIENT_INFO_BYTES, 'bytes of JSON')}"
    return None


def _json_size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


# ----- the id of a message that cannot be decoded -----------------------------------------------
def _id_of_broken(text: str) -> types.RequestId | None:
    """The id of a message whose bytes are not UTF-8: read once the bad bytes are replaced."""
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return sniff_id(text)
    return readable_id(message.get("id")) if isinstance(message, dict) else None


def sniff_id(text: str) -> types.RequestId | None:
    """The top-level ``"id"`` of a message that does not parse (cut short, too deep, not JSON
    further on), read from its first :data:`ID_SCAN_CHARS` characters; None when it is not
    there. Only a member of the outermost object counts, never an ``id`` inside the params."""
    decoder = json.JSONDecoder()
    depth, i, end = 0, 0, min(len(text), ID_SCAN_CHARS)
    while i < end:
        char = text[i]
        if char == '"':
            try:
                key, after = decoder.raw_decode(text, i)
            except ValueError:
                return None
            if depth == 1 and key == "id":
                colon = _skip_space(text, after)
                if colon < len(text) and text[colon] == ":":
                    try:
                        value, _ = decoder.raw_decode(text, _skip_space(text, colon + 1))
                    except ValueError:
                        return None
                    return readable_id(value)
            i = after
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        i += 1
    return None


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i
