"""The project store: identity, round trips, migration, refusal of bad files, Save As."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import pytest

from tests.core.store_samples import SAMPLE_ROWS
from workbench.core.project import _sql, meta, watch
from workbench.core.project import store as store_module
from workbench.core.project.files import ProjectError
from workbench.core.project.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from workbench.core.project.store import Store, journal_mode_for


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def raw(path: Path) -> sqlite3.Connection:
    """A plain connection for crafting files the way other programs (or old versions) would."""
    return sqlite3.connect(path, isolation_level=None)


@pytest.fixture
def project(tmp_path) -> Store:
    store = Store.create(tmp_path / "p.rwb", "Test project")
    yield store
    store.close_connection()


# ----- identity and set-up ---------------------------------------------------------------------
def test_new_project_has_identity_version_and_journal(project):
    info = project.info()
    assert info["application_id"] == APPLICATION_ID == 0x52574231
    assert info["schema_version"] == SCHEMA_VERSION >= 2
    assert info["name"] == "Test project"
    assert info["journal_mode"] == journal_mode_for()
    assert info["read_only"] is False
    assert not project.path.with_name("p.rwb.creating").exists()


@pytest.mark.parametrize("version, mode", [
    ("3.40.1", "delete"), ("3.51.2", "delete"), ("3.51.3", "wal"), ("3.52.0", "wal"), ("4.0.0", "wal"),
])
def test_wal_only_from_the_fixed_sqlite(version, mode):
    assert journal_mode_for(version) == mode


def test_this_machine_uses_the_rollback_journal_where_wal_is_unsafe(project):
    if tuple(map(int, sqlite3.sqlite_version.split("."))) < (3, 51, 3):
        assert project.info()["journal_mode"] == "delete"


def test_create_refuses_to_replace_an_existing_file(tmp_path):
    path = tmp_path / "x.rwb"
    path.write_text("precious")
    with pytest.raises(ProjectError, match="already exists"):
        Store.create(path)
    assert path.read_text() == "precious"


# ----- round trips ----------------------------------------------------------------------------
def test_samples_cover_every_table_and_column(project):
    assert set(_sql.tables(project)) == set(SAMPLE_ROWS)
    for table, row in SAMPLE_ROWS.items():
        assert set(_sql.columns(project, table)) == set(row), table


def test_every_table_round_trips(project):
    for table, row in SAMPLE_ROWS.items():
        if table == "project":
            _sql.update(project, "project", 1, {k: v for k, v in row.items() if k != "id"})
        else:
            _sql.insert(project, table, row)
    project.close_connection()
    reopened = Store.open(project.path)
    try:
        for table, row in SAMPLE_ROWS.items():
            stored = _sql.rows(reopened, table)
            assert stored == [row], table
    finally:
        reopened.close_connection()


def test_json_columns_keep_scalars_and_unicode(project):
    for value in ("text", 3, 2.5, True, None, [], {"ü": "—"}):
        meta.set_setting(project, "k", value)
        assert meta.setting(project, "k") == value


def test_insert_returns_key_and_changes(project):
    pk, changes = _sql.insert(project, "clusters", {"name": "critic"})
    assert isinstance(pk, int)
    assert changes.touches("clusters") and not changes.touches("agents")
    assert changes.keys_of("clusters") == [pk]


def test_a_failed_transaction_writes_nothing(project):
    with pytest.raises(RuntimeError):
        with _sql.write(project) as tx:
            tx.insert("clusters", {"name": "one"})
            raise RuntimeError("boom")
    assert _sql.count(project, "clusters") == 0


def test_schema_constraints_hold(project):
    with pytest.raises(sqlite3.IntegrityError):
        _sql.insert(project, "runs", {"id": "r", "protocol": "rcp", "status": "paused", "started_at": "t"})
    with pytest.raises(sqlite3.IntegrityError):
        _sql.insert(project, "finding_votes", {"finding_id": "missing", "agent": "a", "created_at": "t"})


def test_each_thread_uses_its_own_connection(project):
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(50):
                _sql.insert(project, "settings", {"key": f"t{n}-{i}", "value_json": i})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            project.close_connection()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _sql.count(project, "settings") == 200


def test_a_writer_blocked_past_the_busy_timeout_gets_a_clear_message(project, monkeypatch):
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 200)
    blocker = raw(project.path)
    blocker.execute("BEGIN IMMEDIATE")
    other = Store.open(project.path)
    try:
        with pytest.raises(ProjectError, match="busy") as caught:
            _sql.insert(other, "clusters", {"name": "late"})
        assert caught.value.kind == "locked"
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        other.close_connection()


# ----- migration ------------------------------------------------------------------------------
def make_v1_file(path: Path) -> None:
    conn = raw(path)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.executescript(f"BEGIN; {MIGRATIONS[1]} PRAGMA user_version = 1; COMMIT;")
    conn.execute("INSERT INTO project VALUES (1, 'old', '', 't0', '0.0.1')")
    conn.execute("INSERT INTO runs (id, protocol, status, started_at) VALUES ('r-old', 'rcp', 'completed', 't0')")
    conn.close()


def schema_of(path: Path) -> list[tuple]:
    conn = raw(path)
    try:
        return sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
    finally:
        conn.close()


def test_migration_from_version_1_backs_up_then_upgrades(tmp_path):
    old = tmp_path / "old.rwb"
    make_v1_file(old)

    store = Store.open(old)
    try:
        assert store.report.migrated_from == 1
        backup = store.report.backup_path
        assert backup is not None and backup.exists() and backup.name.startswith("old.v1-backup-")
        copy = raw(backup)  # the backup is the v1 file as it was, data and all
        assert copy.execute("PRAGMA user_version").fetchone()[0] == 1
        assert copy.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert copy.execute("SELECT id FROM runs").fetchall() == [("r-old",)]
        copy.close()
        assert store.info()["schema_version"] == SCHEMA_VERSION
        assert [r["id"] for r in _sql.rows(store, "runs")] == ["r-old"]
        assert meta.project_row(store)["name"] == "old"
        _sql.insert(store, "traces", {"run_id": "r-old", "round_no": 1, "role": "alpha", "created_at": "t"})
    finally:
        store.close_connection()

    fresh = Store.create(tmp_path / "fresh.rwb")
    fresh.close_connection()
    assert schema_of(old) == schema_of(fresh.path)


def test_a_failed_migration_leaves_the_file_at_its_old_version(tmp_path, monkeypatch):
    old = tmp_path / "old.rwb"
    make_v1_file(old)
    monkeypatch.setitem(MIGRATIONS, 2, MIGRATIONS[2] + "\nCREATE TABLE runs (x);")  # fails at the end
    with pytest.raises(ProjectError, match="could not be upgraded from schema v1") as caught:
        Store.open(old)
    assert caught.value.kind == "migration"
    conn = raw(old)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'traces'").fetchone()[0] == 0
    conn.close()


# ----- refusals: every bad file gets its own message and is never written to ---------------------
def test_future_version_opens_read_only_with_a_banner(tmp_path):
    path = tmp_path / "future.rwb"
    Store.create(path).close_connection()
    conn = raw(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = sha(path)

    store = Store.open(path)
    try:
        assert store.read_only
        assert "newer Resonance Workbench" in store.report.read_only_reason
        assert "read-only" in store.report.read_only_reason
        assert meta.project_row(store)["name"] == "future"  # still readable
        with pytest.raises(ProjectError) as caught:
            _sql.insert(store, "clusters", {"name": "x"})
        assert caught.value.kind == "read_only"
    finally:
        store.close_connection()
    assert sha(path) == before


def test_truncated_file_is_refused(tmp_path):
    path = tmp_path / "cut.rwb"
    store = Store.create(path)
    with _sql.write(store) as tx:
        for i in range(200):
            tx.insert("settings", {"key": f"k{i}", "value_json": "x" * 200})
    store.close_connection()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    before = sha(path)
    with pytest.raises(ProjectError, match="truncated") as caught:
        Store.open(path)
    assert caught.value.kind == "truncated"
    assert sha(path) == before


def test_file_shorter_than_a_header_is_truncated(tmp_path):
    path = tmp_path / "tiny.rwb"
    path.write_bytes(b"SQLite format 3\x00\x10\x00")
    with pytest.raises(ProjectError, match="truncated"):
        Store.open(path)


def test_non_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "notes.rwb"
    path.write_text("these are my notes, not a database\n" * 20)
    before = sha(path)
    with pytest.raises(ProjectError, match="not an SQLite database") as caught:
        Store.open(path)
    assert caught.value.kind == "not_sqlite"
    assert sha(path) == before


def test_empty_file_is_refused(tmp_path):
    path = tmp_path / "empty.rwb"
    path.touch()
    with pytest.raises(ProjectError, match="empty") as caught:
        Store.open(path)
    assert caught.value.kind == "not_project"
    assert path.read_bytes() == b""


@pytest.mark.parametrize("app_id, message", [(0, "not a workbench project"), (0x1234, "another application")])
def test_other_sqlite_databases_are_refused(tmp_path, app_id, message):
    path = tmp_path / "other.db"
    conn = raw(path)
    conn.execute(f"PRAGMA application_id = {app_id}")
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    before = sha(path)
    with pytest.raises(ProjectError, match=message) as caught:
        Store.open(path)
    assert caught.value.kind == "not_project"
    assert sha(path) == before


def test_corrupted_page_is_refused(tmp_path):
    path = tmp_path / "bad.rwb"
    store = Store.create(path)
    with _sql.write(store) as tx:
        for i in range(400):
            tx.insert("settings", {"key": f"k{i:04d}", "value_json": "x" * 300})
    store.close_connection()
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    # Damage the header of a b-tree leaf page well inside the file (2, 5, 10, 13 are page types).
    page = next(p for p in range(len(data) // page_size - 1, 1, -1) if data[p * page_size] in (10, 13))
    data[page * page_size: page * page_size + 12] = b"\x07" * 12
    path.write_bytes(bytes(data))
    before = sha(path)
    with pytest.raises(ProjectError, match="damaged") as caught:
        Store.open(path)
    assert caught.value.kind == "corrupt"
    assert sha(path) == before


def test_missing_file(tmp_path):
    with pytest.raises(ProjectError, match="does not exist") as caught:
        Store.open(tmp_path / "nope.rwb")
    assert caught.value.kind == "missing"


# ----- Save As --------------------------------------------------------------------------------
def test_save_as_copies_through_the_backup_api(project, tmp_path):
    _sql.insert(project, "clusters", {"name": "advocate"})
    copy = project.backup_to(tmp_path / "copy.rwb")
    other = Store.open(copy)
    try:
        assert [c["name"] for c in _sql.rows(other, "clusters")] == ["advocate"]
        assert other.info()["application_id"] == APPLICATION_ID
    finally:
        other.close_connection()
    assert not (tmp_path / "copy.rwb.saving").exists()


def test_save_as_refuses_the_open_file_and_existing_files(project, tmp_path):
    with pytest.raises(ProjectError, match="different file"):
        project.backup_to(project.path)
    (tmp_path / "taken.rwb").write_text("x")
    with pytest.raises(ProjectError, match="already exists"):
        project.backup_to(tmp_path / "taken.rwb")
    assert (tmp_path / "taken.rwb").read_text() == "x"


def test_save_as_includes_uncommitted_free_consistent_state(project, tmp_path):
    """A copy taken while another connection writes is a consistent snapshot."""
    _sql.insert(project, "settings", {"key": "a", "value_json": 1})
    writer = Store.open(project.path)
    with _sql.write(writer) as tx:
        tx.insert("settings", {"key": "b", "value_json": 2})
    copy = project.backup_to(tmp_path / "snap.rwb")
    writer.close_connection()
    snap = Store.open(copy)
    try:
        assert {r["key"] for r in _sql.rows(snap, "settings")} == {"a", "b"}
    finally:
        snap.close_connection()


# ----- external change detection -----------------------------------------------------------------
def test_data_version_changes_when_another_connection_commits(project):
    seen = watch.data_version(project)
    other = Store.open(project.path)
    _sql.insert(other, "clusters", {"name": "from elsewhere"})
    other.close_connection()
    assert watch.data_version(project) != seen
