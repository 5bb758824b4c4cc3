"""The MCP server under untrusted input (SPEC §11): through the real entry points, with raw bytes.

stdio: ``rwb serve-mcp`` as a subprocess, a raw JSON-RPC client writing bytes to its stdin.
HTTP: the real server on loopback (a subprocess, or in this process with an injected clock for
the session tests), raw httpx requests. No test sleeps to let time pass.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.services.test_mcp_http import JSON_HEADERS, HttpServer, bearer
from workbench.core.project import _sql
from workbench.core.project.findings import FindingsStore
from workbench.core.project.store import Store

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60  # generous: a reply that does not come within this is a hang
PROTOCOL = "2025-06-18"


def make_project(path: Path) -> Path:
    store = Store.create(path)
    FindingsStore(store).create_finding("commit e8f2a91 implements OAuth2 login", finding_id="f1")
    store.close_connection()
    return path


def stored_votes(project: Path) -> list[dict]:
    store = Store.open(project)
    try:
        return _sql.rows(store, "finding_votes", order_by="id")
    finally:
        store.close_connection()


def finding_ids(project: Path) -> list[str]:
    store = Store.open(project)
    try:
        return [r["id"] for r in _sql.rows(store, "findings")]
    finally:
        store.close_connection()


def initialize(id_: int = 0, **client_info) -> dict:
    info = {"name": "raw-client", "version": "1"} | client_info
    return {"jsonrpc": "2.0", "id": id_, "method": "initialize",
            "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": info}}


def tool_call(id_: int, tool: str, **arguments) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def vote(id_: int, **change) -> dict:
    return tool_call(id_, "submit_vote", **({"finding_id": "f1", "agent": "scout", "vote_type": "confirm",
                                             "confidence": 0.8} | change))


def encode(message: dict) -> bytes:
    return json.dumps(message).encode()


def nested(depth: int) -> dict:
    value: object = "bottom"
    for _ in range(depth):
        value = {"k": value}
    return value


class StdioPeer:
    """``rwb serve-mcp`` over stdio, driven with raw bytes; stderr goes to a file."""

    def __init__(self, project: Path, stderr: Path, *extra: str,
                 rwb: tuple[str, ...] = (sys.executable, "-m", "workbench")):
        self.stderr_path = stderr
        self._stderr = stderr.open("wb")
        self.proc = subprocess.Popen(
            [*rwb, "serve-mcp", "--project", str(project), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, cwd=REPO)
        self.buffer = b""
        self.unsolicited: list[dict] = []

    def send(self, data: bytes | dict) -> None:
        self.proc.stdin.write((encode(data) if isinstance(data, dict) else data) + b"\n")
        self.proc.stdin.flush()

    def reply(self, id_: object, timeout: float = TIMEOUT_S) -> dict:
        """The reply to request ``id_``; TimeoutError when it does not come (a hang)."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                message = json.loads(line)  # stdout carries JSON-RPC only
                if message.get("id") == id_ and ("result" in message or "error" in message):
                    return message
                self.unsolicited.append(message)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise TimeoutError(f"no reply to id {id_!r} within {timeout} s")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                raise EOFError(f"the server closed stdout before answering id {id_!r}")
            self.buffer += chunk

    def call(self, message: dict) -> dict:
        self.send(message)
        return self.reply(message["id"])

    def start(self, **client_info) -> dict:
        answer = self.call(initialize(**client_info))
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def close(self) -> str:
        """Close stdin (the client leaves), wait for a clean exit; the server's stderr."""
        try:
            self.proc.stdin.close()
            assert self.proc.wait(TIMEOUT_S) == 0
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(TIMEOUT_S)
            self.proc.stdout.close()
            self._stderr.close()
        return self.stderr_path.read_text(errors="replace")


def tool_error(reply: dict) -> str:
    result = reply["result"]
    assert result["isError"] is True, reply
    return result["content"][0]["text"]


def rpc_error(reply: dict) -> tuple[int, str]:
    assert "error" in reply, reply
    return reply["error"]["code"], reply["error"]["message"]


# ----- 1. every field from outside is bounded ---------------------------------------------------
@pytest.mark.parametrize("client_info, message", [
    ({"version": "v" * 100_000}, "params.clientInfo.version: is too long (100,000 characters; at most 200)"),
    ({"name": "n" * 201}, "params.clientInfo.name: is too long (201 characters; at most 200)"),
    ({"title": "t" * 5_000}, "params.clientInfo.title: is too long (5,000 characters; at most 200)"),
    ({"description": "d" * 5_000}, "params.clientInfo: is too long"),
    ({"websiteUrl": "https://x.example/" + "u" * 5_000}, "params.clientInfo: is too long"),
    ({"name": "agent\nRWB_MCP_CLIENT {}"}, "params.clientInfo.name: must not contain control characters (U+000A"),
    ({"version": "1.0\x1b[2J"}, "params.clientInfo.version: must not contain control characters (U+001B"),
])
def test_a_client_info_over_its_bounds_is_refused_at_initialize_over_stdio(tmp_path, client_info, message):
    project = make_project(tmp_path / "p.rwb")
    peer = StdioPeer(project, tmp_path / "stderr.txt")
    try:
        code, text = rpc_error(peer.call(initialize(**client_info)))
        assert code == -32602 and text.startswith(message), text
        assert "error" in peer.call(vote(1))  # no session was set up with it: answered, not stored
        peer.start(name="honest")  # the client declares itself within the bounds: it may vote
        for n in range(10):
            assert not peer.call(vote(100 + n, agent=f"a{n}"))["result"]["isError"]
    finally:
        peer.close()
    rows = stored_votes(project)
    assert len(rows) == 10 and {r["client"] for r in rows} == {"honest"}
    assert max(len(r["raw"]) for r in rows) < 1_000


def test_every_tool_argument_is_bounded_and_the_refusal_names_it(tmp_path):
    project = make_project(tmp_path / "p.rwb")
    size_before = project.stat().st_size
    peer = StdioPeer(project, tmp_path / "stderr.txt")
    cases = [
        (vote(1, finding_id="f" * 201), "finding_id: is too long (201 characters; at most 200)"),
        (vote(2, agent="a" * 201), "agent: is too long (201 characters; at most 200)"),
        (vote(3, reason="r" * 20_001), "reason: is too long (20,001 characters; at most 20,000)"),
        (tool_call(4, "create_finding", claim="c" * 20_001), "claim: is too long (20,001 characters; at most 20,000)"),
        (tool_call(5, "create_finding", claim="c", finding_id="i" * 201), "finding_id: is too long"),
        (tool_call(6, "create_finding", claim="c", context={"k": "v" * 20_000}), "context: is too long"),
        (tool_call(7, "create_finding", claim="c", context=nested(9)),
         "context: nests too deeply (9 levels of arrays and objects; at most 8)"),
        (tool_call(8, "get_consensus_results", finding_id="x" * 201), "finding_id: is too long"),
        (tool_call(9, "get_finding_history", finding_id="x" * 201), "finding_id: is too long"),
    ]
    try:
        peer.start()
        for message, expected in cases:
            text = tool_error(peer.call(message))
            assert expected in text, text
        schema = peer.call({"jsonrpc": "2.0", "id": 50, "method": "tools/list"})["result"]["tools"]
        properties = {t["name"]: t["inputSchema"]["properties"] for t in schema}
        assert properties["submit_vote"]["agent"]["maxLength"] == 200  # the bound is in the schema too
        assert properties["submit_vote"]["reason"]["maxLength"] == 20_000
        assert properties["create_finding"]["claim"]["maxLength"] == 20_000
    finally:
        peer.close()
    assert stored_votes(project) == []
    assert project.stat().st_size - size_before < 100_000


def test_over_http_a_huge_client_version_is_refused_and_the_file_stays_small(tmp_path):
    project = make_project(tmp_path / "p.rwb")
    size_before = project.stat().st_size
    server = HttpServer(project, tmp_path / "stderr.txt")
    try:
        with httpx.Client(timeout=TIMEOUT_S, headers=JSON_HEADERS | bearer(server)) as http:
            body = encode(initialize(id_=1, version="v" * 3_500_000))
            huge = http.post(server.url, content=body)
            assert huge.status_code == 413
            assert huge.json() == {"jsonrpc": "2.0", "id": 1, "error": {
                "code": -32700, "message": f"message: is too long ({len(body):,} bytes; at most 1,048,576)"}}
            long = http.post(server.url, json=initialize(id_=2, version="v" * 100_000))
            assert long.status_code == 400 and long.json()["id"] == 2
            assert long.json()["error"]["message"].startswith("params.clientInfo.version: is too long")
            assert "mcp-session-id" not in long.headers  # no session was opened for it
            session = open_session(http, server.url, version="1")
            for n in range(20):
                reply = sse_reply(http.post(server.url, json=vote(10 + n, agent=f"h{n}"), headers=session))
                assert reply["result"]["isError"] is False
    finally:
        assert server.stop() == 0
    rows = stored_votes(project)
    assert len(rows) == 20 and max(len(r["raw"]) for r in rows) < 1_000
    assert project.stat().st_size - size_before < 200_000


# ----- 2. every request is answered -------------------------------------------------------------
SURROGATE = encode(vote(1, agent="X")).replace(b'"agent": "X"', b'"agent": "\\ud800x"')
MALFORMED = [  # (name, bytes, id of the reply, JSON-RPC code, start of the message)
    ("lone surrogate", SURROGATE, 1, -32602, "params.arguments.agent: contains a lone surrogate (\\ud800"),
    ("depth 65", encode(tool_call(2, "create_finding", claim="c", context=nested(65))), 2, -32602,
     "params.arguments.context.k…: nests too deeply (more than 64 levels"),
    ("depth 128", encode(tool_call(3, "create_finding", claim="c", context=nested(128))), 3, -32602,
     "params.arguments.context.k…: nests too deeply"),
    ("depth 200", encode(tool_call(4, "create_finding", claim="c", context=nested(200))), 4, -32602,
     "params.arguments.context.k…: nests too deeply"),
    ("depth 100,000", b'{"jsonrpc": "2.0", "id": 5, "method": "x", "params": ' + b"[" * 100_000, 5, -32600,
     "message: nests too deeply"),
    ("invalid UTF-8", encode(vote(6, agent="X")).replace(b'"X"', b'"\xff\xfe"'), 6, -32700,
     "message: is not UTF-8 (byte 0xff at offset"),
    ("garbage line", b"hello, is anybody there?", None, -32700, "message: is not JSON"),
    ("cut short", encode(vote(8))[:-7], 8, -32700, "message: is not JSON"),
    ("oversize", encode(vote(9, reason="r" * 2_000_000)), 9, -32700,
     "message: is too long (2,000,1"),
    ("a batch", b"[" + encode(vote(10)) + b"]", None, -32600, "message: is a batch"),
    ("not JSON-RPC", b'{"id": 11, "hello": 1}', 11, -32600, 'jsonrpc: must be "2.0"'),
    ("NaN", encode(vote(12)).replace(b"0.8", b"NaN"), 12, -32700, "message: is not JSON (NaN"),
    ("a number as method", b'{"jsonrpc": "2.0", "id": 13, "method": 7}', 13, -32600, "method: must be a string"),
]


def test_every_malformed_message_is_answered_over_stdio(tmp_path):
    project = make_project(tmp_path / "p.rwb")
    peer = StdioPeer(project, tmp_path / "stderr.txt")
    try:
        peer.start()
        for name, data, id_, code, message in MALFORMED:
            peer.send(data)
            reply = peer.reply(id_)  # within TIMEOUT_S, or the test fails: never a hang
            assert rpc_error(reply)[0] == code, name
            assert reply["error"]["message"].startswith(message), (name, reply)
        assert peer.unsolicited == []
        assert peer.call(vote(99))["result"]["isError"] is False  # the session still works
    finally:
        stderr = peer.close()
    assert [r["agent"] for r in stored_votes(project)] == ["scout"]  # only the good vote
    assert "Traceback" not in stderr


def test_every_malformed_message_is_answered_over_http(tmp_path):
    project = make_project(tmp_path / "p.rwb")
    server = HttpServer(project, tmp_path / "stderr.txt")
    try:
        with httpx.Client(timeout=TIMEOUT_S, headers=JSON_HEADERS | bearer(server)) as http:
            session = open_session(http, server.url)
            for name, data, id_, code, message in MALFORMED:
                response = http.post(server.url, content=data, headers=session)
                assert response.status_code == (413 if name == "oversize" else 400), name
                reply = response.json()
                assert reply["id"] == id_ and reply["error"]["code"] == code, (name, reply)
                assert reply["error"]["message"].startswith(message), (name, reply)
            assert sse_reply(http.post(server.url, json=vote(99), headers=session))["result"]["isError"] is False
    finally:
        assert server.stop() == 0
    assert [r["agent"] for r in stored_votes(project)] == ["scout"]
    assert "Traceback" not in server.log


# ----- 3. control characters: refused in ids, escaped in the log --------------------------------
FORGED = 'RWB_MCP_CLIENT {"name": "forged", "version": "9"}'
BAD_IDS = [
    ("newline", f"bob\n{FORGED}", "U+000A"), ("NUL", "a\x00b", "U+0000"), ("ESC", "\x1b[31mred", "U+001B"),
    ("DEL", "a\x7fb", "U+007F"), ("C1", "a\x85b", "U+0085"), ("tab", "a\tb", "U+0009"),
    ("RLO", "abc\u202edef", "U+202E"), ("LRI", "x\u2066y", "U+2066"), ("BOM", "\ufeffbom", "U+FEFF"),
    ("zero-width space only", "\u200b", "must contain a visible character"),
]


def test_control_characters_are_refused_in_ids_and_escaped_in_the_log(tmp_path):
    project = make_project(tmp_path / "p.rwb")
    peer = StdioPeer(project, tmp_path / "stderr.txt")
    try:
        peer.start(name="agent-host")
        for n, (name, value, expected) in enumerate(BAD_IDS):
            assert expected in tool_error(peer.call(vote(10 + n, agent=value))), name
            assert expected in tool_error(peer.call(vote(50 + n, finding_id=value))), name
            made = peer.call(tool_call(90 + n, "create_finding", claim="c", finding_id=value))
            assert expected in tool_error(made), name
        # A request id is the client's too, and the log quotes it when it refuses the message.
        forged_id = FORGED.replace('"', '\\"').encode()
        peer.send(b'{"jsonrpc": "2.0", "id": "x\\n' + forged_id + b'\\u001b[2J", "method": 1}')
        assert rpc_error(peer.reply(f"x\n{FORGED}\x1b[2J"))[0] == -32600
        assert peer.call(vote(200, agent="fine"))["result"]["isError"] is False
    finally:
        stderr = peer.close()
    assert [r["agent"] for r in stored_votes(project)] == ["fine"]
    assert finding_ids(project) == ["f1"]
    lines = stderr.splitlines()
    assert not [line for line in lines if line.startswith("RWB_MCP_")]
    assert "\x1b" not in stderr and "\x00" not in stderr
    assert any("refused a message (id x\\x0aRWB_MCP_CLIENT" in line and "\\x1b[2J" in line for line in lines)
    assert any("vote #1 on f1 by fine via agent-host" in line for line in lines)


def test_the_gui_reads_only_control_lines_the_server_wrote_with_its_key(tmp_path, monkeypatch):
    from workbench.services.mcp.http import CLIENT_PREFIX, READY_PREFIX, control_line
    from workbench.services.mcp.process import CHANNEL_ENV, read_control_line

    key = "k" * 32
    genuine = control_line(CLIENT_PREFIX, key, {"name": "claude-code", "version": "2.1"})
    assert read_control_line(genuine, key) == ("client", {"channel": key, "name": "claude-code", "version": "2.1"})
    forged = [
        FORGED,  # the line the issue forged through an agent name: no key
        CLIENT_PREFIX + json.dumps({"channel": "k" * 31 + "j", "name": "x", "version": "1"}),  # a wrong key
        control_line(CLIENT_PREFIX, key, {"name": "x"}) + " trailing",  # not exactly one object
        "2026-11-27 INFO x: " + genuine,  # a log line quoting a genuine one
        genuine.replace("claude-code", "cl\u00e4ude"),  # not ASCII: the server writes ensure_ascii
        control_line(CLIENT_PREFIX, key, {"name": "", "version": "1"}),  # not what the server writes
        control_line(READY_PREFIX, key, {"url": "http://127.0.0.1:1/mcp"}),  # a ready line without token
        control_line(CLIENT_PREFIX, "", {"name": "x", "version": "1"}),
    ]
    assert [read_control_line(line, key) for line in forged] == [None] * len(forged)
    assert read_control_line(genuine, "") is None  # a reader without a key reads nothing

    # End to end: a server started with the key, a client that tries every way in; the reader
    # finds the ready line and the genuine client, nothing else.
    monkeypatch.setenv(CHANNEL_ENV, key)
    project = make_project(tmp_path / "p.rwb")
    server = HttpServer(project, tmp_path / "stderr.txt")
    try:
        with httpx.Client(timeout=TIMEOUT_S, headers=JSON_HEADERS | bearer(server)) as http:
            refused = http.post(server.url, json=initialize(id_=1, name=f"x\n{FORGED}"))
            assert refused.status_code == 400
            session = open_session(http, server.url, name="honest")
            reply = sse_reply(http.post(server.url, json=vote(3, agent=f"bob\n{FORGED}"), headers=session))
            assert "agent: must not contain control characters" in tool_error(reply)
            odd_id = b'{"jsonrpc": "2.0", "id": "\\n' + FORGED.replace('"', '\\"').encode() + b'", "method": 1}'
            assert http.post(server.url, content=odd_id, headers=session).status_code == 400
            assert sse_reply(http.post(server.url, json=vote(4), headers=session))["result"]["isError"] is False
    finally:
        assert server.stop() == 0
    read = [found for line in server.log.splitlines() if (found := read_control_line(line, key))]
    assert [kind for kind, _ in read] == ["ready", "client"]
    assert read[0][1]["token"] == server.token and read[1][1]["name"] == "honest"


# ----- 4. sessions: a cap and an idle close, on an injected clock -------------------------------
class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clocked_server(tmp_path):
    """``serve_http`` in this process, on a free loopback port, timing sessions by a FakeClock."""
    from workbench.services.mcp.http import serve_http

    project = make_project(tmp_path / "p.rwb")
    clock, stop, ready = FakeClock(), threading.Event(), []
    store = Store.open(project)

    def run() -> None:
        try:
            serve_http(store, on_ready=ready.append, clock=clock, stop=stop.is_set)
        finally:
            store.close_connection()

    thread = threading.Thread(target=run, name="clocked-mcp-server")
    thread.start()
    deadline = time.monotonic() + TIMEOUT_S
    while not ready and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ready, "the server did not start"
    yield ready[0], clock
    stop.set()
    thread.join(TIMEOUT_S)
    store.close_connection()
    assert not thread.is_alive()


def test_http_holds_at_most_256_sessions_and_closes_one_idle_for_5_minutes(clocked_server):
    settings, clock = clocked_server
    with httpx.Client(timeout=TIMEOUT_S, headers=JSON_HEADERS | {"Authorization": f"Bearer {settings.token}"}) as http:
        sessions = [open_session(http, settings.url, id_=n) for n in range(256)]
        assert len({s["mcp-session-id"] for s in sessions}) == 256

        full = http.post(settings.url, json=initialize(id_=257))
        assert full.status_code == 503 and full.headers["retry-after"] == "300"
        assert full.json()["id"] == 257 and "limit of 256 MCP sessions" in full.json()["error"]["message"]

        clock.now += 100  # the first session works on; the others idle
        assert list_tools(http, settings.url, sessions[0]).status_code == 200
        clock.now += 199.5  # 299.5 s idle: not yet
        again = http.post(settings.url, json=initialize(id_=258))
        assert again.status_code == 503 and again.headers["retry-after"] == "1"

        clock.now += 0.5  # 300 s: the 255 idle sessions are closed, the busy one is kept
        fresh = http.post(settings.url, json=initialize(id_=259))
        assert fresh.status_code == 200 and fresh.headers["mcp-session-id"]
        assert list_tools(http, settings.url, sessions[1]).status_code == 404
        assert list_tools(http, settings.url, sessions[0]).status_code == 200
        more = [open_session(http, settings.url, id_=300 + n) for n in range(254)]  # 1 + 1 + 254 = 256
        assert len(more) == 254 and http.post(settings.url, json=initialize(id_=600)).status_code == 503


# ----- 5. the command's own errors ---------------------------------------------------------------
def test_a_port_in_use_is_exit_2_with_one_line(tmp_path):
    project = make_project(tmp_path / "p.rwb")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "workbench", "serve-mcp", "--project", str(project),
                               "--http", "--port", str(port)], capture_output=True, text=True,
                              timeout=TIMEOUT_S, cwd=REPO, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stderr == f"rwb serve-mcp: error: --port: {port} is in use\n"


def test_a_log_file_that_cannot_be_written_is_reported_once_and_the_server_serves_on(tmp_path):
    """The disk is full for the log (``RLIMIT_FSIZE`` at the log's size: every write fails with
    EFBIG, as ENOSPC would), not for the project. Python ignores SIGXFSZ, so a write past the
    limit fails instead of killing the process."""
    project = make_project(tmp_path / "p.rwb")
    log_file = tmp_path / "server.log"
    limit = 4 * 1024 * 1024
    log_file.write_bytes(b"x" * limit)
    full_log = ("import os, resource, sys; "
                f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit})); "
                "os.execv(sys.executable, [sys.executable, '-m', 'workbench', *sys.argv[1:]])")
    peer = StdioPeer(project, tmp_path / "stderr.txt", "--log-file", str(log_file),
                     rwb=(sys.executable, "-c", full_log))
    try:
        peer.start()
        for n in range(9):
            assert peer.call(vote(10 + n, agent=f"a{n}"))["result"]["isError"] is False
    finally:
        stderr = peer.close()
    assert len(stored_votes(project)) == 9
    assert stderr.splitlines() == [
        f"rwb serve-mcp: error: --log-file: cannot write {log_file} (File too large); serving on, "
        "log lines are dropped until it can be written"]
    assert log_file.stat().st_size == limit


def test_the_log_file_says_how_many_lines_were_lost_once_it_can_be_written_again(tmp_path, capsys):
    from workbench.services.mcp.logs import FORMAT, LogFileHandler, OneLineFormatter

    class FullDisk:
        def __init__(self, real):
            self.real, self.full = real, True

        def write(self, data):
            if self.full:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return self.real.write(data)

        def close(self):
            self.real.close()

    handler = LogFileHandler(tmp_path / "server.log")
    handler.setFormatter(OneLineFormatter(FORMAT))
    handler.stream = disk = FullDisk(handler.stream)
    log = logging.getLogger("test.mcp.full-disk")
    log.addHandler(handler)
    log.propagate = False
    try:
        for n in range(9):
            log.warning("vote %d", n)
        disk.full = False
        log.warning("after")
    finally:
        log.removeHandler(handler)
        handler.close()
    assert capsys.readouterr().err.count("No space left on device") == 1
    lines = (tmp_path / "server.log").read_text().splitlines()
    assert [line.split(": ", 1)[1] for line in lines] == [
        "9 log line(s) could not be written (No space left on device)", "after"]


# ----- helpers for raw HTTP --------------------------------------------------------------------
def open_session(http: httpx.Client, url: str, *, id_: int = 0, **client_info) -> dict:
    """Initialize a session with raw requests; the headers that address it."""
    response = http.post(url, json=initialize(id_=id_, **client_info))
    assert response.status_code == 200, response.text
    headers = {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": PROTOCOL}
    assert http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                     headers=headers).status_code == 202
    return headers


def list_tools(http: httpx.Client, url: str, session: dict) -> httpx.Response:
    return http.post(url, json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, headers=session)


def sse_reply(response: httpx.Response) -> dict:
    """The JSON-RPC reply in a 200 response (an SSE stream or a JSON body)."""
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads([d for d in data if d][-1])
    return response.json()
