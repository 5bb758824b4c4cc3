"""``rwb serve-mcp --http``: 127.0.0.1 only, Host/Origin allow-lists against DNS rebinding, and a
bearer token made at each start. Runs the real command in a subprocess on a free port."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from workbench.core.project import _sql
from workbench.core.project.findings import FindingsStore
from workbench.core.project.store import Store
from workbench.services.mcp.http import READY_PREFIX

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 30
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class HttpServer:
    """One ``rwb serve-mcp --http`` process; stderr goes to a file the test reads."""

    def __init__(self, project: Path, stderr: Path, *extra: str):
        self.stderr_path = stderr
        self._stderr = stderr.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "workbench", "serve-mcp", "--project", str(project), "--http", *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr, cwd=REPO)
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            ready = [line for line in stderr.read_text().splitlines() if line.startswith(READY_PREFIX)]
            if ready:
                info = json.loads(ready[0][len(READY_PREFIX):])
                break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the server did not start: {stderr.read_text()}")
            time.sleep(0.05)
        self.url, self.token, self.pid = info["url"], info["token"], info["pid"]
        self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(TIMEOUT_S)
        self.proc.stdout.close()
        self._stderr.close()
        return self.proc.returncode

    @property
    def log(self) -> str:
        return self.stderr_path.read_text()


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("http") / "p.rwb"
    store = Store.create(path)
    FindingsStore(store).create_finding("commit e8f2a91 implements OAuth2 login", finding_id="f1")
    store.close_connection()
    return path


@pytest.fixture(scope="module")
def server(project, tmp_path_factory):
    server = HttpServer(project, tmp_path_factory.mktemp("logs") / "stderr.txt")
    yield server
    assert server.stop() == 0  # SIGTERM is a clean stop


def post(server: HttpServer, headers: dict, body: dict = LIST_TOOLS) -> httpx.Response:
    with httpx.Client(timeout=TIMEOUT_S) as client:
        return client.post(server.url, json=body, headers=JSON_HEADERS | headers)


def bearer(server: HttpServer, token: str | None = None) -> dict:
    return {"Authorization": f"Bearer {token or server.token}"}


def vote_count(project: Path) -> int:
    store = Store.open(project)
    try:
        return _sql.count(store, "finding_votes")
    finally:
        store.close_connection()


def mcp_session(server: HttpServer, body, name="http-agent"):
    async def main():
        with anyio.fail_after(TIMEOUT_S):
            async with httpx2.AsyncClient(headers=bearer(server)) as http:
                async with Client(streamable_http_client(server.url, http_client=http),
                                  client_info=types.Implementation(name=name, version="3.1")) as client:
                    return await body(client)

    return anyio.run(main)


# ----- the token -----------------------------------------------------------------------------
def test_the_token_is_announced_and_is_long_and_random(server):
    assert server.url == f"http://127.0.0.1:{server.port}/mcp"
    assert len(server.token) >= 40
    assert f"bearer token {server.token}" in server.log


@pytest.mark.parametrize("headers, reason", [
    ({}, "missing"),
    ({"Authorization": "Bearer not-the-token"}, "wrong"),
    ({"Authorization": "Basic dXNlcjpwYXNz"}, "wrong"),
])
def test_a_missing_or_wrong_token_gets_401(server, headers, reason):
    response = post(server, headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["error_description"].startswith(f"{reason} bearer token")


def test_the_token_alone_without_the_bearer_scheme_gets_401(server):
    assert post(server, {"Authorization": server.token}).status_code == 401
    with httpx.Client(timeout=TIMEOUT_S) as client:
        assert client.get(server.url).status_code == 401


# ----- Host and Origin -----------------------------------------------------------------------
@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1:1", "0.0.0.0:{port}"])
def test_a_wrong_host_is_refused_even_with_the_token(server, host):
    response = post(server, bearer(server) | {"Host": host.format(port=server.port)})
    assert response.status_code == 421 and "Invalid Host header" in response.text


@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1:1", "https://localhost:{port}",
                                    "null"])
def test_a_wrong_origin_is_refused_even_with_the_token(server, origin):
    response = post(server, bearer(server) | {"Origin": origin.format(port=server.port)})
    assert response.status_code == 403 and "Invalid Origin header" in response.text


def test_a_rebinding_page_cannot_vote(server, project):
    before = vote_count(project)
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "submit_vote", "arguments": {"finding_id": "f1", "agent": "mallory", "vote_type": "challenge",
                                             "confidence": 1}}}
    for headers in ({"Host": f"attacker.example:{server.port}"}, {"Origin": "http://attacker.example"}, {}):
        assert post(server, headers, call).status_code in (401, 403, 421)
    assert vote_count(project) == before
    assert "refused POST /mcp" in server.log


@pytest.mark.parametrize("headers", [{"Host": "localhost:{port}"}, {"Origin": "http://localhost:{port}"},
                                     {"Origin": "http://127.0.0.1:{port}"}])
def test_loopback_names_with_the_right_port_are_allowed(server, headers):
    headers = {k: v.format(port=server.port) for k, v in headers.items()}
    response = post(server, bearer(server) | headers)
    assert response.status_code not in (401, 403, 421), response.text


def test_it_listens_on_127_0_0_1_only(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5):
        pass
    with pytest.raises(OSError):  # another loopback address reaches the same host, not this server
        socket.create_connection(("127.0.0.2", server.port), timeout=5).close()


# ----- a real client -------------------------------------------------------------------------
def test_an_mcp_client_with_the_token_votes_and_reads(server, project):
    async def body(client):
        made = await client.call_tool("create_finding", {"claim": "the price is $19/month", "finding_id": "price"})
        votes = [await client.call_tool("submit_vote", {"finding_id": "price", "agent": agent,
                                                        "vote_type": vote, "confidence": confidence})
                 for agent, vote, confidence in (("scout", "confirm", 0.9), ("auditor", "confirm", 0.7))]
        bad = await client.call_tool("submit_vote", {"finding_id": "price", "agent": "dev",
                                                     "vote_type": "confirm", "confidence": 7})
        results = await client.call_tool("get_consensus_results", {"finding_id": "price"})
        return made, votes, bad, results

    made, votes, bad, results = mcp_session(server, body)
    assert not made.is_error and not any(v.is_error for v in votes)
    assert bad.is_error and "confidence: must be between 0 and 1, not 7" in bad.content[0].text
    assert results.structured_content["status"] == "confirmed"
    assert results.structured_content["consensus_score"] == pytest.approx(0.8)
    store = Store.open(project)
    try:
        rows = _sql.rows(store, "finding_votes", "finding_id = 'price'", order_by="id")
        assert [(r["agent"], r["client"]) for r in rows] == [("scout", "http-agent"), ("auditor", "http-agent")]
        assert json.loads(rows[0]["raw"])["transport"] == "http"
    finally:
        store.close_connection()


def test_concurrent_http_clients_lose_no_vote(server, project):
    async def agent(n: int, failures: list):
        async def body(client):
            for i in range(15):
                result = await client.call_tool("submit_vote", {"finding_id": "f1", "agent": f"h{n}",
                                                                "vote_type": "confirm", "confidence": 0.6,
                                                                "reason": f"{n}:{i}"})
                if result.is_error:
                    failures.append(result.content[0].text)
        async with httpx2.AsyncClient(headers=bearer(server)) as http:
            async with Client(streamable_http_client(server.url, http_client=http),
                              client_info=types.Implementation(name=f"parallel-{n}", version="1")) as client:
                await body(client)

    async def main():
        failures: list[str] = []
        with anyio.fail_after(TIMEOUT_S * 2):
            async with anyio.create_task_group() as tg:
                for n in range(6):
                    tg.start_soon(agent, n, failures)
        return failures

    assert anyio.run(main) == []
    store = Store.open(project)
    try:
        reasons = [r["reason"] for r in _sql.rows(store, "finding_votes", "client LIKE 'parallel-%'")]
    finally:
        store.close_connection()
    assert sorted(reasons) == sorted(f"{n}:{i}" for n in range(6) for i in range(15))


# ----- each start ----------------------------------------------------------------------------
def test_each_start_makes_a_new_token_and_the_old_one_stops_working(server, project, tmp_path):
    second = HttpServer(project, tmp_path / "second.txt", "--allow-origin", "http://tool.local:8080")
    try:
        assert second.token != server.token and second.port != server.port
        assert post(second, bearer(second, server.token)).status_code == 401
        assert post(second, bearer(second) | {"Origin": "http://tool.local:8080"}).status_code not in (401, 403, 421)
    finally:
        assert second.stop() == 0


def test_http_only_options_need_http(project):
    done = subprocess.run([sys.executable, "-m", "workbench", "serve-mcp", "--project", str(project),
                           "--port", "8123"], capture_output=True, text=True, timeout=TIMEOUT_S, cwd=REPO,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "only apply with --http" in done.stderr
