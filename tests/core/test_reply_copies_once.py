"""A vote's reply and an artifact's text kept once, in their call (issue 30, schema step 14): a new
run stores no copy of a call's reply, the views ``votes`` and ``artifacts`` give every value back,
a copy that differs from its call is stored whole, and nothing is lost when a call's reply changes
or the call goes. (The sample projects migrated across the step read back byte for byte:
tests/core/test_texts_once.py.)"""

from __future__ import annotations

import json

import pytest

from tests.core.test_texts_once import rcp_run
from workbench.core.project import _sql
from workbench.core.project.protocol_records import Where, write_records
from workbench.core.project.store import Store
from workbench.core.protocols.shared.declaration import Record


@pytest.fixture
def store(tmp_path):
    store = Store.create(tmp_path / "p.rwb")
    yield store
    store.close_connection()


def test_a_new_run_keeps_each_reply_once_and_the_views_give_every_copy_back(store):
    run_id = rcp_run(store, 1)
    conn = store._connection()
    votes = conn.execute("SELECT v.raw, v.reason, c.reply_text, r.raw, r.reason, r.raw_from_call, r.reason_from_call "
                         "FROM votes v JOIN vote_rows r ON r.id = v.id JOIN llm_calls c ON c.id = v.call_id "
                         "WHERE v.run_id = ?", (run_id,)).fetchall()
    assert len(votes) == 30
    kinds = set()
    for raw, reason, reply, stored_raw, stored_reason, raw_flag, reason_flag in votes:
        assert raw == reply and (stored_raw, raw_flag) == (None, 1)  # what readers see; not stored twice
        try:
            in_reply = json.loads(reply)["reason"]
        except ValueError:  # the simulated panel also answers in prose ("YES. It rests on ..."): kept whole
            in_reply = None
        assert (stored_reason, reason_flag) == ((None, 1) if in_reply == reason else (reason, 0))
        kinds.add(in_reply == reason)
    assert kinds == {True, False}  # this run has both (seed 1)
    artifacts = conn.execute("SELECT a.content, c.reply_text, r.content, r.content_from_call FROM artifacts a "
                             "JOIN artifact_rows r ON r.id = a.id JOIN llm_calls c ON c.id = a.call_id "
                             "WHERE a.run_id = ?", (run_id,)).fetchall()
    assert len(artifacts) == 6
    assert all(content == reply and (stored, flag) == ("", 1) for content, reply, stored, flag in artifacts)


def write(store: Store, run_id: str, call_id: int | None, *records: Record) -> None:
    with _sql.write(store) as tx:
        write_records(tx, Where(run_id, "rcp", call_id=call_id), list(records))


def test_a_copy_that_differs_from_its_call_is_stored_whole(store):
    run_id = rcp_run(store, 1)
    conn = store._connection()
    call_id, reply = conn.execute("SELECT id, reply_text FROM llm_calls WHERE run_id = ? AND purpose = 'vote' "
                                  "ORDER BY id LIMIT 1", (run_id,)).fetchone()
    key = conn.execute("SELECT key FROM artifacts WHERE run_id = ? ORDER BY id LIMIT 1", (run_id,)).fetchone()[0]
    write(store, run_id, call_id,
          Record("artifact", {"key": "extra", "author": None, "content": reply + " "}),  # not the reply: whole
          Record("vote", {"artifact": key, "voter": "zz", "value": 1, "status": "valid",
                          "reason": "my own words", "raw": reply}),  # the reply, but another reason
          Record("vote", {"artifact": "extra", "voter": "zz", "value": None, "status": "missing",
                          "reason": None, "raw": None}))  # nothing to keep: NULL, not "from the call"
    rows = conn.execute("SELECT a.key, r.content, r.content_from_call, a.content FROM artifacts a "
                        "JOIN artifact_rows r ON r.id = a.id WHERE a.key = 'extra'").fetchall()
    assert rows == [("extra", reply + " ", 0, reply + " ")]
    rows = conn.execute("SELECT r.raw, r.raw_from_call, r.reason, r.reason_from_call, v.raw, v.reason FROM votes v "
                        "JOIN vote_rows r ON r.id = v.id WHERE v.voter_agent = 'zz' ORDER BY v.id").fetchall()
    assert rows == [(None, 1, "my own words", 0, reply, "my own words"), (None, 0, None, 0, None, None)]


def test_nothing_is_lost_when_a_calls_reply_changes_or_the_call_goes(store):
    run_id = rcp_run(store, 1)
    conn = store._connection()
    before = {t: conn.execute(f"SELECT * FROM {t} WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
              for t in ("votes", "artifacts")}
    first_vote_call, generation_call = (
        conn.execute("SELECT min(call_id) FROM votes WHERE run_id = ?", (run_id,)).fetchone()[0],
        conn.execute("SELECT min(call_id) FROM artifacts WHERE run_id = ?", (run_id,)).fetchone()[0])
    conn.execute("UPDATE llm_call_rows SET reply_text = 'changed' WHERE id = ?", (first_vote_call,))
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("DELETE FROM llm_calls WHERE id = ?", (generation_call,))  # through the view, as a script would
    after = {t: conn.execute(f"SELECT * FROM {t} WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
             for t in ("votes", "artifacts")}
    call_column = {"votes": 9, "artifacts": 7}  # the call a copy came from: SET NULL when the call goes
    for table, rows in before.items():
        assert len(after[table]) == len(rows)
        for old, new in zip(rows, after[table], strict=True):
            keep = [i for i in range(len(old)) if not (i == call_column[table] and old[i] == generation_call)]
            assert [old[i] for i in keep] == [new[i] for i in keep], (table, old, new)
    stored = conn.execute("SELECT raw, raw_from_call FROM vote_rows WHERE call_id = ?", (first_vote_call,)).fetchone()
    assert stored[1] == 0 and stored[0] != "changed"  # the old reply was written back whole


def test_plain_sql_writes_to_the_views_still_work(store):
    run_id = rcp_run(store, 1)
    conn = store._connection()
    vote_id = conn.execute("SELECT min(id) FROM votes WHERE run_id = ?", (run_id,)).fetchone()[0]
    conn.execute("UPDATE votes SET raw = 'edited by hand' WHERE id = ?", (vote_id,))
    conn.execute("UPDATE votes SET value = 0 WHERE id = ?", (vote_id,))  # other columns: the copies stay
    assert conn.execute("SELECT raw, value, reason IS NOT NULL FROM votes WHERE id = ?", (vote_id,)).fetchone() == \
        ("edited by hand", 0, 1)
    assert conn.execute("SELECT raw, raw_from_call, reason_from_call FROM vote_rows WHERE id = ?",
                        (vote_id,)).fetchone() == ("edited by hand", 0, 1)
    artifact_id = conn.execute("SELECT min(id) FROM artifacts WHERE run_id = ?", (run_id,)).fetchone()[0]
    conn.execute("INSERT INTO artifacts (run_id, key, content, created_at) VALUES (?, 'typed', 'by hand', 't')",
                 (run_id,))
    assert conn.execute("SELECT content, simulated FROM artifacts WHERE key = 'typed'").fetchone() == ("by hand", 0)
    conn.execute("DELETE FROM artifacts WHERE id = ?", (artifact_id,))
    assert conn.execute("SELECT count(*) FROM artifact_rows WHERE id = ?", (artifact_id,)).fetchone()[0] == 0
