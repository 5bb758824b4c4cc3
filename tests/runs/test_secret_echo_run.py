"""SPEC §11 through ``rwb``: a key a server echoes in any spelling is nowhere the workbench writes,
and a key typed where a name or an address belongs is refused without being repeated.

The loopback server answers some calls 401 with a body (and a header) echoing the key, and the
others 200 with a reply echoing it, each time in another spelling. Then everything the workbench
wrote is read back: every column of every table of the project (with ``sqlite3`` directly), the
project file's bytes, stdout and stderr, every log record (``rwb`` run with logging at DEBUG), and
the run exported in every format. ``tests/support/secret_search.py`` decodes each text every way a
reader might before it looks for the key. The refusals go through ``workbench.cli.main`` in this
process (they happen before litellm is needed), with every log record captured.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import logging
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.support.fake_llm_server import FakeLLMServer, Reply
from tests.support.secret_search import leaks
from workbench.cli import main

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-proj-Ab3_xY9-qQ7zLm2Np4Rs8Tv6Wu1Kj5Hd"
ECHOED_KEY = "sk-proj-Ab/3_xY9-qQ7zLm2Np4Rs8Tv6Wu1Kj5Hd"  # with a "/", so that a slash escape can hide it
KEY_VARIABLE = "RWB_ECHO_TEST_KEY"
# rwb through its real entry point, with every log record of every logger written to a file.
LOGGED_MAIN = ("import logging, sys; logging.basicConfig(level=logging.DEBUG, filename=sys.argv.pop(1)); "
               "from workbench.cli import main; sys.exit(main(sys.argv[1:]))")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


ECHOES = {  # the spellings SPEC §11 names, as a server writes them
    "as is": lambda k: k,
    "upper case": str.upper,
    "mixed case": lambda k: "".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(k)),
    "JSON \\u escapes": lambda k: k.replace("-", "\\u002D").replace("_", "\\u005f").replace("A", "\\u0041"),
    "slash escapes": lambda k: k.replace("/", "\\/"),  # as PHP's json_encode writes it
    "URL escapes": lambda k: quote(k, safe="").replace("-", "%2d").replace("_", "%5F"),
    "base64 of the key": lambda k: _b64(k),
    "base64 unpadded, URL-safe": lambda k: base64.urlsafe_b64encode(k.encode()).decode().rstrip("="),
    "base64 of Bearer key": lambda k: _b64(f"Bearer {k}"),
    "Basic base64(user:key)": lambda k: "Basic " + _b64(f"apiuser:{k}"),
    "base64 of the header, JSON-escaped": lambda k: _b64(f"Authorization: Bearer {k}").replace("/", "\\/"),
    "HTML entities": lambda k: "".join(f"&#x{ord(c):x};" for c in k),
}


def echo(index: int, key: str) -> tuple[str, str]:
    name = list(ECHOES)[index % len(ECHOES)]
    return name, ECHOES[name](key)


def scripted(key: str, delivered: dict[str, set[str]]):
    """Answers echoing the key, each request in the next spelling: every answer to the opening
    question is a 200 reply; votes are in turn 401 (the key in the body and a header) and 200 (the
    key in the reason). ``delivered`` records which spellings went out in each."""

    def rule(request):
        name, spelled = echo(request.index // 2, key)
        user = request.messages[-1]["content"]
        if "Answer in one or two short paragraphs" in user:
            delivered["200"].add(name)
            return Reply(text=f"My answer, and the key you sent: {spelled}.")
        if request.index % 2 == 0:
            delivered["401"].add(name)
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {spelled} ({name})",
                                         "type": "invalid_request_error", "code": "invalid_api_key",
                                         "received_headers": {"authorization": f"Bearer {spelled}"}}})
            return Reply(status=401, body=body, headers={"WWW-Authenticate": f'Bearer realm="{_b64(key)}"'})
        delivered["200"].add(name)
        return Reply(text=json.dumps({"vote": "YES", "reason": f"you sent {spelled}"}))

    return rule


def config(base_url: str, **provider) -> dict:
    agents = lambda p: [{"id": f"{p}{i}", "provider": "local", "persona": f"Agent {p}{i}."} for i in (1, 2, 3)]
    return {"protocol": "rcp", "query": "Close the centre to cars?", "seed": 3, "dispatch": "concurrent",
            "providers": {"local": {"model": "openai/fake-model", "api_base": base_url, "api_key_env": KEY_VARIABLE,
                                    "max_concurrency": 4, "timeout_s": 10, "max_retries": 0, "reask": 0, **provider}},
            "clusters": [{"name": "advocate", "agents": agents("a")}, {"name": "critic", "agents": agents("c")}]}


def rwb(*args: str, log: Path, key: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ}
    if key is not None:
        env[KEY_VARIABLE] = key
    return subprocess.run([sys.executable, "-c", LOGGED_MAIN, str(log), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env=env)


def stored_texts(project: Path) -> dict[str, str]:
    """Every value of every column of every table, as text, by ``table.column``; and of every view
    (``llm_calls`` since schema step 12: the calls with their texts whole, as the stored tables
    ``llm_call_rows`` and ``texts`` hold them in parts)."""
    texts: dict[str, list[str]] = {}
    conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
        for table in tables:
            cursor = conn.execute(f'SELECT * FROM "{table}"')
            columns = [d[0] for d in cursor.description]
            for row in cursor:
                for column, value in zip(columns, row):
                    if isinstance(value, bytes):
                        value = value.decode("latin-1")
                    if value is not None:
                        texts.setdefault(f"{table}.{column}", []).append(str(value))
    finally:
        conn.close()
    return {place: "\n".join(values) for place, values in texts.items()}


def test_a_key_echoed_in_every_spelling_is_nowhere_the_workbench_writes(tmp_path):
    key = ECHOED_KEY
    delivered: dict[str, set[str]] = {"200": set(), "401": set()}
    with FakeLLMServer() as server:
        server.rule = scripted(key, delivered)
        cfg = tmp_path / "run.json"
        cfg.write_text(json.dumps(config(server.base_url)))
        project, log = tmp_path / "echo.rwb", tmp_path / "rwb.log"
        run = rwb("run", str(cfg), "--project", str(project), log=log, key=key)
        requests = server.chat_requests
    assert run.returncode in (0, 1, 3), run.stderr  # a degraded run: the 401s are failed calls
    assert requests and all(r.headers["authorization"] == f"Bearer {key}" for r in requests)
    assert delivered == {"200": set(ECHOES), "401": set(ECHOES)}  # every spelling, in both kinds of answer
    # litellm's own debug lines go to stdout as well, at DEBUG: the run's id is the line that is one.
    run_id = next(line for line in run.stdout.splitlines() if re.fullmatch(r"rcp-[0-9-]+-[0-9a-f]+", line))

    printed = {"run stdout": run.stdout, "run stderr": run.stderr}
    for fmt in ("jsonl", "csv", "md", "html"):
        done = rwb("export", run_id, "--project", str(project), "--format", fmt, log=log)
        assert done.returncode == 0, done.stderr
        printed[f"export {fmt}"] = done.stdout
        printed[f"export {fmt} stderr"] = done.stderr
    listing = rwb("runs", "--project", str(project), "--json", log=log)
    printed["runs --json"] = listing.stdout + listing.stderr
    stored = stored_texts(project)
    logged = log.read_text(encoding="utf-8", errors="replace")

    # The echoes did reach the workbench: the failed calls and the replies are recorded.
    calls = stored["llm_calls.status"].split("\n")
    assert "error" in calls and "ok" in calls
    assert "[REDACTED]" in stored["llm_calls.response_raw"] and "[REDACTED]" in printed["export jsonl"]
    assert "401" in stored.get("llm_calls.http_status", "") or "auth" in stored.get("llm_calls.error_kind", "")
    assert logged, "rwb logged nothing: the log check would prove nothing"

    found = {place for place, text in {**printed, **stored, "log": logged}.items() if leaks(text, key)}
    assert not found, f"the key can be read back from {sorted(found)}"
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("echo.rwb*"))
    assert key.encode() not in raw and key.lower().encode() not in raw.lower()


# -- keys typed where they do not belong --------------------------------------------------------

ALNUM_KEY = "Ab3xY9qQ7zLm2Np4Rs8Tv6Wu1Kj5HdZZ"  # 32 characters: a key, though it could name a variable


def rwb_in_process(*args: str, caplog) -> tuple[int, str, str, str]:
    """``workbench.cli.main`` in this process: exit code, stdout, stderr and every log record."""
    out, err = io.StringIO(), io.StringIO()
    with caplog.at_level(logging.DEBUG), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue(), caplog.text


@pytest.mark.parametrize("provider, field", [
    ({"key_keyring": KEY}, "providers.local.key_keyring"),
    ({"key_keyring": ALNUM_KEY}, "providers.local.key_keyring"),
    ({"api_key_env": KEY}, "providers.local.api_key_env"),
    ({"api_key_env": ALNUM_KEY}, "providers.local.api_key_env"),
    ({"api_base": "http://apiuser:{key}@{host}"}, "providers.local.api_base"),
    ({"api_base": "http://{key}@{host}"}, "providers.local.api_base"),
    ({"api_base": "{base}?api-key={key}"}, "providers.local.api_base"),
    ({"api_base": "{base}?key={key}"}, "providers.local.api_base"),
    ({"api_base": "{base}?deployment=x&signature={alnum}"}, "providers.local.api_base"),
    ({"api_base": "{base}?{key}"}, "providers.local.api_base"),
    ({"model": KEY}, "providers.local.model"),
    ({"api_base": None, "deployments": [{"api_base": "{base}?token={key}"}]},
     "providers.local.deployments[0].api_base"),
    ({"api_base": None, "deployments": [{"api_base": "{base}", "key_keyring": KEY}]},
     "providers.local.deployments[0].key_keyring"),
    ({"api_base": None, "deployments": [{"api_base": "{base}", "api_key_env": ALNUM_KEY}]},
     "providers.local.deployments[0].api_key_env"),
], ids=["keyring-sk", "keyring-32", "env-sk", "env-32", "userinfo", "user-only", "query-api-key", "query-key",
        "query-long-value", "query-bare", "model", "deployment-query", "deployment-keyring", "deployment-env"])
def test_a_key_where_a_name_or_an_address_belongs_is_refused_unsaid(tmp_path, caplog, monkeypatch, provider, field):
    monkeypatch.setenv(KEY_VARIABLE, "sk-the-real-key-0123456789")
    with FakeLLMServer(default=Reply(text='{"vote": "YES", "reason": "r"}')) as server:
        host = server.base_url.split("//", 1)[1].split("/", 1)[0]
        filled = json.loads(json.dumps(provider).replace("{key}", KEY).replace("{alnum}", ALNUM_KEY)
                            .replace("{host}", host).replace("{base}", server.base_url))
        cfg = config(server.base_url, **filled)
        cfg["providers"]["local"] = {k: v for k, v in cfg["providers"]["local"].items() if v is not None}
        path, project = tmp_path / "run.json", tmp_path / "p.rwb"
        path.write_text(json.dumps(cfg))
        code, out, err, logged = rwb_in_process("run", str(path), "--project", str(project), caplog=caplog)
        assert not server.requests  # refused before any call
    assert code == 2
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"rwb run: error: {field}: ")
    for secret in (KEY, ALNUM_KEY):
        shown = out + err + logged
        assert not leaks(shown, secret)
        assert not any(secret[i:i + 8] in shown for i in range(len(secret) - 7)), "a part of the key was shown"
    assert not project.exists()


def test_a_refused_key_leaves_an_existing_project_untouched(tmp_path):
    project, log = tmp_path / "p.rwb", tmp_path / "rwb.log"
    sim = {"protocol": "rcp", "query": "Q?", "seed": 1, "providers": {"sim": {"model": "sim"}},
           "clusters": [{"name": "a", "agents": [{"id": "a1", "provider": "sim"}]},
                        {"name": "c", "agents": [{"id": "c1", "provider": "sim"}]}]}
    (tmp_path / "sim.json").write_text(json.dumps(sim))
    assert rwb("run", str(tmp_path / "sim.json"), "--project", str(project), "--quiet", log=log).returncode == 0
    before = hashlib.sha256(project.read_bytes()).hexdigest()
    bad = config("http://127.0.0.1:9/v1", key_keyring=KEY)
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    done = rwb("run", str(tmp_path / "bad.json"), "--project", str(project), log=log)
    assert done.returncode == 2 and "key_keyring" in done.stderr and not leaks(done.stderr, KEY)
    assert hashlib.sha256(project.read_bytes()).hexdigest() == before


@pytest.mark.parametrize("provider", [
    {"api_key_env": "AZURE_OPENAI_API_KEY_PRODUCTION_EAST"},  # long, but written like a variable
    {"api_key_env": "hf_token"},  # a key's prefix, but nothing after it that could be a key
    {"key_keyring": "openai"}, {"key_keyring": "my-service/alice"}, {"key_keyring": "sk-"},
    {"api_base": "https://example.openai.azure.com/openai?api-version=2024-02-15-preview"},
    {"api_base": "http://[::1]:8000/v1"}, {"api_base": "http://127.0.0.1:8000/v1?stream=true&key="},
    {"model": "openrouter/meta-llama/llama-3.1-405b-instruct-with-a-long-name"},
], ids=["env-long-name", "env-prefix-alone", "keyring-name", "keyring-service-user", "keyring-prefix-alone",
        "azure-api-version", "ipv6", "empty-key-parameter", "long-model"])
def test_names_and_addresses_that_hold_no_key_are_accepted(provider):
    from workbench.core.runs.config import parse_run_config

    parse_run_config(config("http://127.0.0.1:8000/v1", **provider))
