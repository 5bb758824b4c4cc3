"""The reply cache that survives: kept in the project file (schema step 6), opt-in per run, shared
across runs; its key blanks the per-call fence names; sampling replicates never share an entry."""

from __future__ import annotations

import sqlite3

import pytest

from tests.core.store_samples import (
    STEP_9_UNDONE,
    STEP_10_UNDONE,
    STEP_11_UNDONE,
    STEP_12_UNDONE,
    STEP_13_UNDONE,
    STEP_14_UNDONE,
    STEP_15_UNDONE,
)
from tests.runs.test_run_outcomes import last_json, rows, rwb, sample, write
from tests.support.fake_llm_server import FakeLLMServer, Reply
from workbench.core.project import reply_cache
from workbench.core.project.schema import SCHEMA_VERSION
from workbench.core.project.store import Store
from workbench.services.llm.cache import ProjectCacheBackend, cache_key


def model_reply(request) -> str:
    user = request.messages[-1]["content"]
    if "Response to evaluate" in user:
        return '{"vote": "YES", "reason": "sound"}' if len(user) % 2 else '{"vote": "NO", "reason": "weak"}'
    return f"{request.messages[0]['content'][:40]} Close it on weekends first, and measure."


@pytest.fixture
def server():
    with FakeLLMServer(default=Reply(text=model_reply)) as s:
        yield s


def cached(server, **more) -> dict:
    return {**sample("rcp-sim.json"), "cache": True, **more,
            "providers": {"sim": {"model": "openai/fake-model", "api_base": server.base_url, "api_key_env": "LOOP_KEY",
                                  "max_retries": 0}}}


def replies(project, run_id: str) -> dict:
    return dict(rows(project, "SELECT step_key, reply_text FROM llm_calls WHERE run_id = ?", (run_id,)))


def test_a_rerun_with_the_cache_on_is_answered_from_the_project_file(tmp_path, server):
    project = tmp_path / "p.rwb"
    config = write(tmp_path, "run.json", cached(server, dispatch="sequential"))
    first = last_json(rwb("run", config, "--project", str(project)))
    assert first["status"] == "completed" and first["cache_hits"] == 0 and first["cache_hit_rate"] == 0.0
    sent = len(server.chat_requests)
    assert sent == 36
    second = rwb("run", config, "--project", str(project))
    assert second.returncode == 0, second.stderr
    s = last_json(second)
    assert len(server.chat_requests) == sent  # zero requests reached the server
    assert s["cache_hits"] == 36 and s["cache_hit_rate"] == 1.0
    assert replies(project, s["run_id"]) == replies(project, first["run_id"])  # the same replies
    assert rows(project, "SELECT count(*) FROM llm_calls WHERE run_id = ? AND cached = 1 AND attempts = 0 "
                         "AND cost_source = 'cache'", (s["run_id"],)) == [(36,)]
    # Off (the default), the same configuration asks the model again.
    off = write(tmp_path, "off.json", {**cached(server), "cache": False})
    assert "cache_hits" not in last_json(rwb("run", off, "--project", str(project)))
    assert len(server.chat_requests) == sent + 36


def test_sampling_replicates_never_hit_each_others_entries(tmp_path, server):
    project = tmp_path / "p.rwb"
    batch = write(tmp_path, "batch.json", {**cached(server, dispatch="sequential"), "batch": {"replicates": 3}})
    out = rwb("run", batch, "--project", str(project))
    assert out.returncode == 0, out.stderr
    assert len(server.chat_requests) == 3 * 36  # replicate r (seed + r) asks for its own replies
    assert rows(project, "SELECT count(*) FROM llm_calls WHERE cached = 1") == [(0,)]
    # Run again, every replicate finds its own entries, and only its own.
    out = rwb("run", batch, "--project", str(project))
    assert last_json(out)["calls"] == 108 and len(server.chat_requests) == 108
    hits = rows(project, "SELECT r.replicate, sum(c.cached) FROM llm_calls c JOIN runs r ON r.id = c.run_id "
                         "GROUP BY r.id ORDER BY r.rowid")
    assert hits == [(0, 0), (1, 0), (2, 0), (0, 36), (1, 36), (2, 36)]


def test_the_key_blanks_every_form_of_a_fence_name_and_the_backend_adds_seed_and_replicate(tmp_path):
    def key(fence: str) -> str:
        text = (f"Vote on this.\n<<<{fence}>>>\nan artifact naming ‹‹‹END-{fence}››› and {fence.lower()} and "
                f"{fence.replace('-', '_')}\n<<<END-{fence}>>>")
        return cache_key("openai/m", None, [{"role": "user", "content": text}], {"max_tokens": 10}, 0)

    assert key("FENCE-" + "A" * 32) == key("FENCE-" + "0123456789ABCDEF" * 2)
    assert key("ARTIFACT-" + "B" * 16) == key("ARTIFACT-" + "C" * 16)
    base = cache_key("openai/m", None, [{"role": "user", "content": "hi"}], {}, 0)
    assert base != cache_key("openai/m", None, [{"role": "user", "content": "hi"}], {}, 1)  # the sample index
    store = Store.create(tmp_path / "p.rwb")
    try:
        one, same = (ProjectCacheBackend(store, seed=7, replicate=r) for r in (0, None))
        assert one.key(base) == same.key(base)
        others = {ProjectCacheBackend(store, seed=7, replicate=1).key(base), ProjectCacheBackend(store, seed=8).key(base)}
        assert one.key(base) not in others and len(others) == 2
        one.put(base, {"status": "ok", "text": "YES", "model": "openai/m"})
        assert same.get(base)["text"] == "YES" and ProjectCacheBackend(store, seed=8).get(base) is None
        one.put(base, {"status": "ok", "text": "NO", "model": "openai/m"})  # the first entry stays
        assert one.get(base)["text"] == "YES" and reply_cache.count(store) == 1
    finally:
        store.close_connection()


def test_a_schema_5_project_opens_and_gains_the_reply_cache(tmp_path):
    path = tmp_path / "old.rwb"
    Store.create(path).close_connection()
    conn = sqlite3.connect(path, isolation_level=None)  # make it a schema 5 file: drop what step 6 added
    triggers = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                                            "AND name LIKE 'watch_reply_cache_%'")]
    conn.executescript("BEGIN; " + "".join(f"DROP TRIGGER {t}; " for t in triggers) +
                       "DROP TABLE reply_cache; DELETE FROM change_counters WHERE tbl = 'reply_cache'; "
                       "DROP INDEX llm_calls_agent; DROP INDEX llm_calls_status; DROP INDEX votes_agent; "
                       "DROP INDEX traces_agent; DROP INDEX votes_call; DROP INDEX artifacts_call; "  # steps 7 and 8
                       f"{STEP_15_UNDONE}{STEP_14_UNDONE}{STEP_13_UNDONE}{STEP_12_UNDONE}{STEP_11_UNDONE}{STEP_10_UNDONE}{STEP_9_UNDONE}"
                       "PRAGMA user_version = 5; COMMIT;")
    conn.close()
    store = Store.open(path)
    try:
        assert store.info()["schema_version"] == SCHEMA_VERSION
        backend = ProjectCacheBackend(store, seed=1)
        backend.put("k", {"status": "ok", "text": "kept"})
        assert backend.get("k") == {"status": "ok", "text": "kept"}
    finally:
        store.close_connection()
    assert rows(path, "SELECT tbl FROM change_counters WHERE tbl = 'reply_cache'") == [("reply_cache",)]
