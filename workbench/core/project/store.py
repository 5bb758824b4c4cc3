"""The project store: the only module that talks to SQLite (through sqlite-utils).

One ``.rwb`` file per project is the single source of truth every panel, the CLI and the MCP
server share. Rules this module keeps:
- one connection per thread (SQLite objects must stay in their thread); a thread that used
  the store calls :meth:`Store.close_connection` when it is done;
- writes are short ``BEGIN IMMEDIATE`` transactions with a busy timeout, and return the
  :class:`Changes` they made, so each screen decides whether to refresh;
- WAL only on SQLite >= 3.51.3: older versions have the WAL-reset corruption bug;
- a file is checked read-only before anything can write to it, and migrated only after a
  backup copy is made with the SQLite backup API;
- a file left mid-write by a program that was killed (a "hot" rollback journal beside it) is
  recovered by SQLite itself, never by deleting the journal: it is opened read-write so that
  SQLite plays the journal back, then checked with ``integrity_check``; the recovery is
  reported (:attr:`OpenReport.recovered`, and to the notice handler, which the CLI prints).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from workbench import __version__
from workbench.core.project.files import (
    ProjectError,
    check_destination,
    notice,
    publish,
    read_header,
    temporary_beside,
)
from workbench.core.project.schema import AFTER_STEP, APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:  # imported when a file is opened: sqlite_utils costs 140 ms of the window's start
    import sqlite_utils


def _busy_timeout_from_env(default: int = 15_000) -> int:
    """``RWB_BUSY_TIMEOUT_MS`` (100 ms to 10 min) shortens or lengthens the wait for a lock; tests
    of a locked file use it so they need not wait 15 s. Anything else keeps the default."""
    try:
        value = int(os.environ.get("RWB_BUSY_TIMEOUT_MS", ""))
    except ValueError:
        return default
    return value if 100 <= value <= 600_000 else default


BUSY_TIMEOUT_MS = _busy_timeout_from_env()
WAL_SAFE_SQLITE = (3, 51, 3)
#: SQLite's extended result code for "a hot journal needs rolling back, but the connection is read-only".
SQLITE_READONLY_ROLLBACK = 776


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def journal_mode_for(sqlite_version: str = sqlite3.sqlite_version) -> str:
    """WAL where it is safe, else the rollback journal (the WAL-reset bug, fixed in 3.51.3)."""
    version = tuple(int(part) for part in sqlite_version.split("."))
    return "wal" if version >= WAL_SAFE_SQLITE else "delete"


@dataclass(frozen=True)
class OpenReport:
    """What opening a file found: shown to the user as a banner where it matters."""

    schema_version: int
    read_only: bool = False
    read_only_reason: str | None = None
    migrated_from: int | None = None
    backup_path: Path | None = None
    recovered: str | None = None  # what was recovered on opening (an interrupted write), for a banner


class Store:
    """An open project file. Create with :meth:`create` or :meth:`open`, never directly."""

    def __init__(self, path: Path, report: OpenReport):
        self.path = path
        self.report = report
        self.checked = True  # False while the integrity check of Store.open(check_later=True) waits
        self._local = threading.local()

    # ----- opening -------------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path | str, name: str | None = None, *, overwrite: bool = False) -> Store:
        """Create a new, empty project. The file appears only once it is complete."""
        path = Path(path).absolute()
        check_destination(path, overwrite=overwrite)
        tmp = temporary_beside(path, "creating")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # the OS says why it cannot
            conn = _connect(tmp, create=True)
            try:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA journal_mode = {journal_mode_for()}")
                _migrate(conn, 0)
                with immediate(conn):
                    conn.execute(
                        "INSERT INTO project (id, name, created_at, created_by_version) VALUES (1, ?, ?, ?)",
                        (name or path.stem, utc_now(), __version__),
                    )
            finally:
                conn.close()
            publish(tmp, path, overwrite=overwrite)
        except OSError as exc:
            raise ProjectError("io", path, f"{path.name} cannot be created: {exc.strerror or exc}.") from None
        except sqlite3.Error as exc:
            raise ProjectError("io", path, f"{path.name} cannot be created: {exc}.") from None
        finally:
            tmp.unlink(missing_ok=True)
        return cls(path, OpenReport(schema_version=SCHEMA_VERSION))

    @classmethod
    def open(cls, path: Path | str, *, check_later: bool = False) -> Store:
        """Open a project, refusing (and never writing to) anything that is not a sound one.

        A file from a newer version opens read-only; an older one is backed up, then migrated.
        With ``check_later`` the full ``quick_check`` (a pass over the whole file: 0.1 s for
        70 MB) is left to :meth:`check`, so the window can show the project while it runs; a
        write that comes first runs the check itself before it writes anything.
        """
        path = Path(path).absolute()
        recovered = _recover_hot_journal(path)
        read_header(path)
        version = _check_identity(path, quick_check=not check_later)
        if check_later and version < SCHEMA_VERSION:
            cls(path, OpenReport(schema_version=version, read_only=True)).check()  # before migrating
        if version > SCHEMA_VERSION:
            return cls(path, OpenReport(
                schema_version=version, read_only=True, recovered=recovered,
                read_only_reason=(
                    f"This project was saved by a newer Resonance Workbench (file schema v{version}; "
                    f"this version understands up to v{SCHEMA_VERSION}). It is open read-only, so "
                    "nothing in it is changed. Update the workbench to edit it."),
            ))
        if not _writable(path):
            return cls(path, OpenReport(
                schema_version=version, read_only=True, recovered=recovered,
                read_only_reason=f"{path.name} (or its folder) is not writable, so it is open read-only.",
            ))
        backup = None
        if version < SCHEMA_VERSION:
            stem = f"{path.stem}.v{version}-backup-{datetime.now():%Y%m%d-%H%M%S}"
            backup = path.with_name(stem + path.suffix)
            for n in range(2, 100):  # never replace an earlier backup, even one made this second
                if not os.path.lexists(backup):
                    break
                backup = path.with_name(f"{stem}-{n}{path.suffix}")
            _backup_file(path, backup)
        conn = _connect(path)
        try:
            if version < SCHEMA_VERSION:
                try:
                    _migrate(conn, version)
                except sqlite3.Error as exc:
                    raise ProjectError(
                        "migration", path,
                        f"{path.name} could not be upgraded from schema v{version} ({exc}). It was "
                        f"left as it was, and a backup copy is at {backup.name}.") from None
                _vacuum_after_space_freed(conn, version)
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != journal_mode_for():
                conn.execute(f"PRAGMA journal_mode = {journal_mode_for()}")
        except sqlite3.OperationalError as exc:
            raise explain(path, exc) from None
        finally:
            conn.close()
        store = cls(path, OpenReport(
            schema_version=SCHEMA_VERSION,
            migrated_from=version if backup else None, backup_path=backup, recovered=recovered,
        ))
        store.checked = not check_later or backup is not None
        return store

    def check(self) -> None:
        """SQLite's ``quick_check`` over the whole file, read-only; raises ProjectError("corrupt")."""
        conn = _connect(self.path, read_only=True)
        try:
            _quick_check(conn, self.path)
        except sqlite3.Error as exc:
            raise explain(self.path, exc) from None
        finally:
            conn.close()
        self.checked = True

    # ----- connections ---------------------------------------------------------------------
    @property
    def read_only(self) -> bool:
        return self.report.read_only

    def reader(self) -> Store:
        """The same file for reading only: its connections open with ``mode=ro``, so a panel's
        read worker can never take a write lock, and a write through it is refused."""
        if self.read_only:
            return self
        return Store(self.path, dataclasses.replace(
            self.report, read_only=True, read_only_reason="opened for reading (a panel's read worker)"))

    def _database(self) -> sqlite_utils.Database:
        """This thread's connection, wrapped by sqlite-utils. Only the modules of
        :mod:`workbench.core.project` use it (through :mod:`._sql`); nothing outside does."""
        db = getattr(self._local, "db", None)
        if db is None:
            import sqlite_utils

            db = sqlite_utils.Database(_connect(self.path, read_only=self.read_only), execute_plugins=False)
            self._local.db = db
        return db

    def _connection(self) -> sqlite3.Connection:
        return self._database().conn

    def close_connection(self) -> None:
        """Close the calling thread's connection (each thread closes its own)."""
        db = getattr(self._local, "db", None)
        if db is not None:
            db.conn.close()
            self._local.db = None

    def info(self) -> dict:
        """What ``rwb project info`` prints: identity, versions, journal, and rows per table."""
        conn = self._connection()
        tables = [r[0] for r in conn.execute(  # and views: llm_calls is one (schema step 12)
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name")]
        name = conn.execute("SELECT name FROM project WHERE id = 1").fetchone()
        return {
            "path": str(self.path),
            "name": name[0] if name else None,
            "schema_version": conn.execute("PRAGMA user_version").fetchone()[0],
            "application_id": conn.execute("PRAGMA application_id").fetchone()[0],
            "journal_mode": conn.execute("PRAGMA journal_mode").fetchone()[0],
            "sqlite_version": sqlite3.sqlite_version,
            "read_only": self.read_only,
            "read_only_reason": self.report.read_only_reason,
            "migrated_from": self.report.migrated_from,
            "backup_path": str(self.report.backup_path) if self.report.backup_path else None,
            "counts": {t: conn.execute(f"SELECT count(*) FROM [{t}]").fetchone()[0] for t in tables},
            "storage": _storage(conn, self.path),
        }

    # ----- copies --------------------------------------------------------------------------
    def backup_to(self, dest: Path | str, *, overwrite: bool = False) -> Path:
        """Save As: a consistent copy through the SQLite backup API, never a raw file copy."""
        dest = Path(dest).absolute()
        if dest == self.path:
            raise ProjectError("exists", dest, "Save As needs a different file from the open one.")
        check_destination(dest, overwrite=overwrite)
        _backup_file(self.path, dest, source=self._connection(), overwrite=overwrite)
        return dest


# ----- helpers --------------------------------------------------------------------------------
# The steps that free pages (issue 30): 12 each text once, 13 a trace's source once, 14 a vote's
# reply and an artifact's text kept once in their call, 15 a call's fence and template hash once.
SPACE_STEPS = (12, 13, 14, 15)


def _vacuum_after_space_freed(conn: sqlite3.Connection, from_version: int) -> None:
    """Schema steps 12 to 15 store each text once (step 12 alone frees about two thirds of the
    calls' pages); the file only shrinks when the pages are given back, so a file migrated across
    any of them is vacuumed once (a copy of the file's size, as the backup just was). A failure
    (the disk full) keeps the free pages for new rows: nothing is lost."""
    if any(from_version < step <= SCHEMA_VERSION for step in SPACE_STEPS):
        with contextlib.suppress(sqlite3.Error):
            conn.execute("VACUUM")


def _storage(conn: sqlite3.Connection, path: Path) -> dict:
    """The file's size and what storing each text once saves (``rwb info``); without the texts
    table (a file of an older schema open read-only) the file's size alone."""
    from workbench.core.project.call_texts import space

    found = {"file_bytes": path.stat().st_size}
    try:
        found.update(space(conn))
        found.update(_copies_space(conn))
    except sqlite3.Error:
        pass
    return found


def _copies_space(conn: sqlite3.Connection) -> dict:
    """Schema step 14: how many votes' and artifacts' copies of their call's reply are read from
    the call rather than stored, and their bytes (UTF-8)."""
    votes = conn.execute(
        "SELECT coalesce(sum(r.raw_from_call), 0) + coalesce(sum(r.reason_from_call), 0), "
        "coalesce(sum(CASE WHEN r.raw_from_call THEN length(CAST(v.raw AS BLOB)) END), 0) + "
        "coalesce(sum(CASE WHEN r.reason_from_call THEN length(CAST(v.reason AS BLOB)) END), 0) "
        "FROM vote_rows AS r JOIN votes AS v ON v.id = r.id").fetchone()
    artifacts = conn.execute(
        "SELECT coalesce(sum(r.content_from_call), 0), "
        "coalesce(sum(CASE WHEN r.content_from_call THEN length(CAST(a.content AS BLOB)) END), 0) "
        "FROM artifact_rows AS r JOIN artifacts AS a ON a.id = r.id").fetchone()
    return {"copies_read_from_calls": votes[0] + artifacts[0], "copies_bytes_saved": votes[1] + artifacts[1]}


def _connect(path: Path, *, read_only: bool = False, create: bool = False) -> sqlite3.Connection:
    mode = "ro" if read_only else ("rwc" if create else "rw")
    conn = sqlite3.connect(f"{path.as_uri()}?mode={mode}", uri=True, isolation_level=None,
                           timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _migrate(conn: sqlite3.Connection, from_version: int) -> None:
    """Step the schema up to the current version, one transaction per step."""
    for version in range(from_version + 1, SCHEMA_VERSION + 1):
        try:
            # executescript runs the whole step inside our explicit transaction, which stays open
            # for the step's Python part (AFTER_STEP) and then commits with the new version.
            conn.executescript(f"BEGIN IMMEDIATE;\n{MIGRATIONS[version]}\nPRAGMA user_version = {version};")
            if version in AFTER_STEP:
                AFTER_STEP[version](conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def _backup_file(src_path: Path, dest: Path, source: sqlite3.Connection | None = None, *,
                 overwrite: bool = False) -> None:
    tmp = temporary_beside(dest, "saving")
    src = source or _connect(src_path, read_only=True)
    try:
        target = sqlite3.connect(tmp)
        try:
            src.backup(target)
        finally:
            target.close()
        publish(tmp, dest, overwrite=overwrite)
    except OSError as exc:
        raise ProjectError("io", dest, f"{dest.name} cannot be written: {exc.strerror or exc}.") from None
    except sqlite3.Error as exc:
        raise explain(dest, exc) from None
    finally:
        tmp.unlink(missing_ok=True)
        if source is None:
            src.close()


def _writable(path: Path) -> bool:
    # The rollback journal is created beside the file, so the folder must be writable too.
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _journal_of(path: Path) -> Path | None:
    """The rollback journal (or WAL) beside ``path`` if one is there with something in it."""
    for suffix in ("-journal", "-wal"):
        journal = path.with_name(path.name + suffix)
        try:
            if journal.is_file() and journal.stat().st_size > 0:
                return journal
        except OSError:
            continue
    return None


def _recover_hot_journal(path: Path) -> str | None:
    """Let SQLite play back the journal a killed writer left, if there is one; returns the notice.

    A journal is "hot" only when no live program holds the file's write lock; SQLite decides
    that, so a read-only probe comes first: if it reads, the journal belongs to a live writer
    (or is not hot) and nothing is done. If it cannot read because the journal must be rolled
    back, the file is opened read-write (the first read rolls it back, under SQLite's own
    locks), and then must pass ``integrity_check``. A file that is not a workbench project, or
    that cannot be written, is refused and left exactly as it is.
    """
    journal = _journal_of(path)
    if journal is None:
        return None
    header = read_header(path, check_size=False)  # a regular SQLite file, or refused untouched
    name = path.name
    try:
        probe = _connect(path, read_only=True)
        try:
            probe.execute("PRAGMA schema_version").fetchone()
            return None  # readable: no journal needed rolling back
        finally:
            probe.close()
    except sqlite3.Error as exc:
        if not _is_hot_journal_error(exc):
            raise explain(path, exc) from None
    if header.application_id != APPLICATION_ID:
        other = f" (it belongs to another application, id {header.application_id:#x})" if header.application_id else ""
        raise ProjectError("not_project", path, f"{name} is an SQLite database but not a workbench project{other}.")
    if not _writable(path):
        raise ProjectError(
            "hot_journal", path,
            f"{name} was left mid-write by a program that stopped (its journal {journal.name} is still beside "
            f"it), and it cannot be repaired here because the file or its folder is not writable. Make them "
            f"writable and open it again: SQLite then rolls the unfinished write back.")
    try:
        conn = _connect(path)
        try:
            conn.execute("PRAGMA schema_version").fetchone()  # SQLite rolls the journal back here
            problems = [row[0] for row in conn.execute("PRAGMA integrity_check(5)")]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise explain(path, exc) from None
    if problems != ["ok"]:
        raise ProjectError(
            "corrupt", path,
            f"{name} was left mid-write by a program that stopped, and after SQLite rolled the unfinished "
            f"write back its integrity_check found: {'; '.join(problems)}. Open a backup copy instead.")
    message = (f"{name} was left mid-write by a program that stopped; SQLite rolled the unfinished write "
               f"back from {journal.name}, and the file passed its integrity check. Everything committed "
               "before the stop is kept.")
    notice(message)
    return message


def _is_hot_journal_error(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code == SQLITE_READONLY_ROLLBACK or code & 0xFF == sqlite3.SQLITE_READONLY
    return "readonly" in str(exc)


def _check_identity(path: Path, *, quick_check: bool = True) -> int:
    """Read-only checks: a workbench project, intact. Returns its schema version."""
    name = path.name
    try:
        conn = _connect(path, read_only=True)
    except sqlite3.Error as exc:
        raise explain(path, exc) from None
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id != APPLICATION_ID:
            other = f" (it belongs to another application, id {app_id:#x})" if app_id else ""
            raise ProjectError("not_project", path,
                               f"{name} is an SQLite database but not a workbench project{other}.")
        if version == 0:
            raise ProjectError("not_project", path,
                               f"{name} is an unfinished workbench project: it has no schema.")
        if quick_check:
            _quick_check(conn, path)
        return version
    except sqlite3.Error as exc:
        raise explain(path, exc) from None
    finally:
        conn.close()


def _quick_check(conn: sqlite3.Connection, path: Path) -> None:
    problems = [line for row in conn.execute("PRAGMA quick_check(5)") for line in row[0].splitlines()
                if not line.startswith("*** in database")]
    if problems != ["ok"]:
        raise ProjectError("corrupt", path,
                           f"{path.name} is damaged and was not opened (SQLite's quick_check found: "
                           f"{'; '.join(problems)}). Open a backup copy instead.")


def explain(path: Path, exc: sqlite3.Error) -> ProjectError:
    """Turn a raw SQLite error into a message a user can act on."""
    text = str(exc)
    name = path.name
    if "not a database" in text:
        return ProjectError("not_sqlite", path, f"{name} is not a workbench project: SQLite cannot read it.")
    if "malformed" in text or "corrupt" in text:
        return ProjectError("corrupt", path,
                            f"{name} is damaged and was not opened ({text}). Open a backup copy instead.")
    if getattr(exc, "sqlite_errorcode", None) == SQLITE_READONLY_ROLLBACK:
        return ProjectError("hot_journal", path,
                            f"{name} was left mid-write by a program that stopped; open it again to let "
                            "SQLite roll the unfinished write back.")
    if "locked" in text or "busy" in text:
        return ProjectError("locked", path,
                            f"{name} is busy: another program kept it locked for "
                            f"{_seconds(BUSY_TIMEOUT_MS)} s. Try again when it has finished.")
    if "readonly" in text or "read-only" in text:
        return ProjectError("read_only", path, f"{name} cannot be written: {text}.")
    return ProjectError("io", path, f"{name}: {text}.")


def _seconds(ms: int) -> str:
    return f"{ms // 1000}" if ms % 1000 == 0 else f"{ms / 1000:g}"
