"""``rwb serve-mcp`` over stdio as an MCP client runs it: a subprocess, protocol on stdout only,
logs on stderr (or a file), and no Qt loaded."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from workbench.core.project import _sql
from workbench.core.project.findings import FindingsStore
from workbench.core.project.store import Store

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60


def make_project(path: Path) -> Path:
    store = Store.create(path)
    FindingsStore(store).create_finding("commit e8f2a91 implements OAuth2 login", finding_id="f1")
    store.close_connection()
    return path


def test_an_mcp_client_drives_the_server_over_stdio(tmp_path):
    project = make_project(tmp_path / "p.rwb")
    errlog = tmp_path / "stderr.txt"
    params = StdioServerParameters(command=sys.executable, cwd=str(REPO),
                                   args=["-m", "workbench", "serve-mcp", "--project", str(project)])

    async def main():
        with anyio.fail_after(TIMEOUT_S), errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err),
                              client_info=types.Implementation(name="stdio-agent", version="0.1")) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                votes = []
                for agent, vote, confidence in (("scout", "confirm", 0.85), ("auditor", "challenge", 0.65),
                                                ("dev", "confirm", 0.95)):
                    votes.append(await client.call_tool("submit_vote", {
                        "finding_id": "f1", "agent": agent, "vote_type": vote, "confidence": confidence}))
                bad = await client.call_tool("submit_vote", {"finding_id": "f1", "agent": "dev",
                                                             "vote_type": "maybe", "confidence": 0.5})
                challenged = await client.call_tool("get_challenged_findings", {})
                return names, votes, bad, challenged

    names, votes, bad, challenged = anyio.run(main)
    assert "submit_vote" in names and len(names) == 6
    assert not any(v.is_error for v in votes)
    assert votes[-1].structured_content["result"]["status"] == "challenged"
    assert bad.is_error and "vote_type: must be one of" in bad.content[0].text
    assert [f["id"] for f in challenged.structured_content["findings"]] == ["f1"]

    store = Store.open(project)
    try:
        rows = _sql.rows(store, "finding_votes", order_by="id")
        assert [(r["agent"], r["client"]) for r in rows] == [
            ("scout", "stdio-agent"), ("auditor", "stdio-agent"), ("dev", "stdio-agent")]
        assert json.loads(rows[0]["raw"])["transport"] == "stdio"
    finally:
        store.close_connection()
    log = errlog.read_text()
    assert "serving" in log and "vote #3 on f1 by dev via stdio-agent" in log


class LineReader:
    """Whole lines from a pipe, each wait bounded by a timeout."""

    def __init__(self, pipe):
        self.fd = pipe.fileno()
        self.buffer = b""

    def line(self, timeout: float = TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise TimeoutError(f"no line within {timeout} s (have {self.buffer!r})")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError(f"pipe closed (have {self.buffer!r})")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()


def test_stdout_carries_only_protocol_messages_and_logs_can_go_to_a_file(tmp_path):
    project = make_project(tmp_path / "p.rwb")
    log_file = tmp_path / "server.log"
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-client", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "submit_vote", "arguments": {"finding_id": "f1", "agent": "scout",
                                                 "vote_type": "confirm", "confidence": 0.85}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "get_consensus_results", "arguments": {"finding_id": "missing"}}},
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", "serve-mcp", "--project", str(project), "--log-file", str(log_file)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    replies = {}
    try:
        reader = LineReader(proc.stdout)
        for message in requests:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
            if "id" in message:
                reply = json.loads(reader.line())  # every stdout line is a JSON-RPC message
                assert reply["jsonrpc"] == "2.0"
                replies[reply["id"]] = reply
        proc.stdin.close()  # the client leaves: the server stops by itself
        assert proc.wait(TIMEOUT_S) == 0
        rest = proc.stdout.read()
        stderr = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(TIMEOUT_S)
        proc.stdout.close()
        proc.stderr.close()
    assert reader.buffer + rest == b""  # nothing else on stdout
    assert replies[1]["result"]["serverInfo"]["name"] == "resonance-consensus"
    assert replies[2]["result"]["structuredContent"]["vote"]["client"] == "raw-client"
    assert replies[3]["result"]["isError"] is True
    assert "no finding with id 'missing'" in replies[3]["result"]["content"][0]["text"]
    log = log_file.read_text()
    assert "vote #1 on f1 by scout via raw-client" in log and "stdio client closed" in log
    assert "vote #1" not in stderr  # the log went to the file


def test_serve_mcp_loads_no_qt_and_no_litellm(tmp_path):
    project = make_project(tmp_path / "p.rwb")
    probe = (
        "import sys, json\n"
        "from workbench.cli import main\n"
        f"assert main(['serve-mcp', '--project', {str(project)!r}, '--log-level', 'warning']) == 0\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'PySide6', 'shiboken6', 'pyqtgraph', 'litellm'})\n"
        "sys.stderr.write('HEAVY ' + json.dumps(heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=TIMEOUT_S, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr.strip().endswith("HEAVY []"), done.stderr
