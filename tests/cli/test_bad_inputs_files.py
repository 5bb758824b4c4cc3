"""Bad project files and bad output paths, through the CLI (issue 12: nothing lost, nothing wasted).

Every case asserts the exit code SPEC §6 gives (2: bad input or a project error), one clear line
on stderr and no traceback, and that nothing was written: the folder holding the file has the
same files with the same bytes afterwards (no journal, no backup, no temporary file left).

Most cases call ``workbench.cli.main`` in this process (fast); the ones that could hang or that
depend on process boundaries (a FIFO, another process's lock, a killed writer) use subprocesses.
Read-only files: root ignores file modes, so as root they are made immutable (``chattr +i``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core.project import store as store_module
from workbench.core.project.arm_import import import_arm_json
from workbench.core.project.schema import APPLICATION_ID
from workbench.core.project.store import Store

REPO = Path(__file__).resolve().parents[2]
ARM_RUN = "arm-abababababab"
TRACE = {"question": "Q?", "r1": {"alpha": {"claim": "A claim here.", "verdict": "yes", "confidence": 0.7}}}


# ----- helpers ---------------------------------------------------------------------------------
@dataclass
class Result:
    code: int
    out: str
    err: str


def cli(*args: str) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return Result(code, out.getvalue(), err.getvalue())


def rwb(*args: str, timeout: float = 60, env: dict | None = None) -> Result:
    done = subprocess.run([sys.executable, "-m", "workbench", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)
    return Result(done.returncode, done.stdout, done.stderr)


def refused(result: Result, code: int = 2, *needles: str) -> None:
    """The exit code, one line on stderr naming the problem, and no traceback."""
    assert result.code == code, (result.code, result.err)
    assert "Traceback" not in result.err and "Traceback" not in result.out
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("rwb "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def snapshot(folder: Path) -> dict[str, str]:
    """Each entry of ``folder``: a regular file's sha256, or its kind (a FIFO is never opened)."""
    out = {}
    for entry in sorted(folder.iterdir()):
        mode = entry.lstat().st_mode
        if stat.S_ISREG(mode):
            out[entry.name] = hashlib.sha256(entry.read_bytes()).hexdigest()
        elif stat.S_ISDIR(mode):
            out[entry.name] = "dir:" + ",".join(sorted(p.name for p in entry.iterdir()))
        else:
            out[entry.name] = f"mode:{stat.S_IFMT(mode):o}"
    return out


def make_good(path: Path) -> Path:
    store = Store.create(path, "Good")
    try:
        import_arm_json(store, TRACE, source="t.json", sha256="ab" * 32)
    finally:
        store.close_connection()
    return path


def set_pragma(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(sql)
    finally:
        conn.close()


@contextlib.contextmanager
def immutable(*paths: Path):
    """Make ``paths`` unwritable even for root (``chattr +i``), and writable again afterwards."""
    done: list[Path] = []
    try:
        for p in paths:
            if os.geteuid() == 0:
                if subprocess.run(["chattr", "+i", str(p)], capture_output=True).returncode != 0:
                    pytest.skip("running as root without chattr +i: cannot make a file read-only")
            else:
                p.chmod(stat.S_IMODE(p.stat().st_mode) & ~0o222)
            done.append(p)
        yield
    finally:
        for p in done:
            if os.geteuid() == 0:
                subprocess.run(["chattr", "-i", str(p)], capture_output=True)
            else:
                p.chmod(stat.S_IMODE(p.stat().st_mode) | 0o200)


# ----- the bad project files --------------------------------------------------------------------
def _empty(p: Path) -> Path:
    p.write_bytes(b"")
    return p


def _random(p: Path) -> Path:
    p.write_bytes(random.Random(7).randbytes(8192))
    return p


def _text(p: Path) -> Path:
    p.write_text("these are my notes, not a project\n")
    return p


def _truncated(p: Path) -> Path:
    make_good(p)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    return p


def _short_header(p: Path) -> Path:
    make_good(p)
    p.write_bytes(p.read_bytes()[:50])
    return p


def _other_sqlite(p: Path) -> Path:
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.commit()
    conn.close()
    return p


def _other_app(p: Path) -> Path:
    _other_sqlite(p)
    set_pragma(p, "PRAGMA application_id = 1234")
    return p


def _wrong_app_id(p: Path) -> Path:
    make_good(p)
    set_pragma(p, f"PRAGMA application_id = {APPLICATION_ID + 1}")
    return p


def _unfinished(p: Path) -> Path:
    set_pragma(p, f"PRAGMA application_id = {APPLICATION_ID}")
    return p


def _corrupt_page(p: Path) -> Path:
    make_good(p)
    data = bytearray(p.read_bytes())
    data[2 * 4096: 2 * 4096 + 64] = b"\xff" * 64
    p.write_bytes(bytes(data))
    return p


def _bad_page_size(p: Path) -> Path:
    make_good(p)
    data = bytearray(p.read_bytes())
    data[16:18] = (1000).to_bytes(2, "big")
    p.write_bytes(bytes(data))
    return p


def _folder(p: Path) -> Path:
    p.mkdir()
    return p


def _fifo(p: Path) -> Path:
    os.mkfifo(p)
    return p


def _socket(p: Path) -> Path:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()
    return p


def _missing(p: Path) -> Path:
    return p


def _through_a_file(p: Path) -> Path:
    p.write_text("a file, not a folder")
    return p / "p.rwb"


def _device(p: Path) -> Path:
    p.symlink_to("/dev/null")
    return p


REFUSED: dict[str, tuple[Callable[[Path], Path], str]] = {
    "empty": (_empty, "is empty"),
    "random bytes": (_random, "not an SQLite database at all"),
    "text": (_text, "not an SQLite database at all"),
    "truncated": (_truncated, "is truncated"),
    "short header": (_short_header, "is truncated"),
    "another app's SQLite": (_other_sqlite, "not a workbench project"),
    "another application id": (_other_app, "another application"),
    "wrong application id": (_wrong_app_id, "not a workbench project"),
    "unfinished project": (_unfinished, "unfinished workbench project"),
    "corrupted page": (_corrupt_page, "is damaged"),
    "impossible page size": (_bad_page_size, "is damaged"),
    "folder": (_folder, "is a folder"),
    "FIFO": (_fifo, "named pipe"),
    "socket": (_socket, "socket"),
    "device": (_device, "device"),
    "missing": (_missing, "does not exist"),
    "through a file": (_through_a_file, "does not exist"),
}

# Commands that open a project: reading (info, runs) and writing (marker, import, export).
COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "info": lambda p, _t: ["info", p],
    "runs": lambda p, _t: ["runs", "--project", p],
    "echo marker": lambda p, _t: ["echo", "marker", "--project", p],
    "arm import": lambda p, t: ["arm", "import", t, "--project", p],
}


@pytest.fixture
def trace_file(tmp_path) -> Path:
    elsewhere = tmp_path / "inputs"
    elsewhere.mkdir()
    path = elsewhere / "trace.json"
    path.write_text(json.dumps(TRACE))
    return path


@pytest.fixture
def folder(tmp_path) -> Path:
    d = tmp_path / "projects"
    d.mkdir()
    return d


@pytest.mark.timeout(30)
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", REFUSED)
def test_a_bad_project_file_is_refused_in_one_line_and_left_untouched(folder, trace_file, kind, command):
    maker, needle = REFUSED[kind]
    path = maker(folder / "p.rwb")
    before = snapshot(folder)
    result = cli(*COMMANDS[command](path, trace_file))
    refused(result, 2, needle)
    assert snapshot(folder) == before


# ----- files that open, but not for writing -------------------------------------------------------
@pytest.mark.parametrize("command, code", [("info", 0), ("runs", 0), ("echo marker", 2), ("arm import", 2)])
def test_a_file_from_a_newer_workbench_is_read_only(folder, trace_file, command, code):
    path = make_good(folder / "p.rwb")
    set_pragma(path, "PRAGMA user_version = 99")
    before = snapshot(folder)
    result = cli(*COMMANDS[command](path, trace_file))
    if code:
        refused(result, code, "newer Resonance Workbench")
    else:
        assert result.code == 0, result.err
    assert snapshot(folder) == before


@pytest.mark.parametrize("what", ["file", "folder"])
@pytest.mark.parametrize("command, code", [("info", 0), ("runs", 0), ("echo marker", 2), ("arm import", 2)])
def test_a_read_only_file_opens_read_only_and_refuses_writes(folder, trace_file, what, command, code):
    path = make_good(folder / "p.rwb")
    before = snapshot(folder)
    with immutable(path if what == "file" else folder):
        result = cli(*COMMANDS[command](path, trace_file))
    if code:
        refused(result, code, "not writable")
    else:
        assert result.code == 0, result.err
        if command == "info":
            assert json.loads(result.out)["read_only"] is True
    assert snapshot(folder) == before


# ----- locks ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def exclusive_lock(path: Path):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    conn.execute("INSERT INTO settings (key, value_json) VALUES ('held', '1')")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_locked_by_another_program_is_busy_within_the_timeout(folder, trace_file, command, monkeypatch):
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 300)
    path = make_good(folder / "p.rwb")
    with exclusive_lock(path):
        started = time.monotonic()
        result = cli(*COMMANDS[command](path, trace_file))
        elapsed = time.monotonic() - started
    refused(result, 2, "is busy", "0.3 s")
    assert elapsed < 5


def test_the_busy_timeout_knob_works_across_processes(folder):
    path = make_good(folder / "p.rwb")
    with exclusive_lock(path):
        started = time.monotonic()
        result = rwb("info", path, env={"RWB_BUSY_TIMEOUT_MS": "400"})
        elapsed = time.monotonic() - started
    refused(result, 2, "is busy: another program kept it locked for 0.4 s")
    assert elapsed < 10


def test_a_fifo_project_never_hangs_a_subprocess(folder):
    path = _fifo(folder / "p.rwb")
    result = rwb("info", path, timeout=30)
    refused(result, 2, "named pipe")


# ----- a writer killed mid-transaction: the hot journal ------------------------------------------
KILLED_WRITER = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size = 2")  # spill changed pages into the file before the commit
conn.execute("BEGIN IMMEDIATE")
for i in range(300):
    conn.execute("INSERT INTO settings (key, value_json) VALUES (?, ?)", (f"lost{i}", "x" * 1000))
os.kill(os.getpid(), 9)
"""


def leave_hot_journal(path: Path) -> Path:
    subprocess.run([sys.executable, "-c", KILLED_WRITER, str(path)], timeout=60)
    journal = path.with_name(path.name + "-journal")
    assert journal.exists() and journal.stat().st_size > 0, "the killed writer left no journal"
    return journal


def rows(path: Path, sql: str) -> list:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_hot_journal_is_rolled_back_by_sqlite_and_reported(folder, trace_file, command):
    path = make_good(folder / "p.rwb")
    set_pragma(path, "INSERT INTO settings (key, value_json) VALUES ('kept', '1')")
    journal = leave_hot_journal(path)
    result = cli(*COMMANDS[command](path, trace_file))
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
    notices = [line for line in result.err.splitlines() if ": notice: " in line]
    assert len(notices) == 1 and "rolled the unfinished write back" in notices[0], result.err
    assert not journal.exists()
    assert rows(path, "PRAGMA integrity_check") == [("ok",)]
    keys = {k for (k,) in rows(path, "SELECT key FROM settings")}
    assert "kept" in keys and not any(k.startswith("lost") for k in keys)


def test_the_recovery_is_in_the_open_report_for_the_gui_banner(folder):
    path = make_good(folder / "p.rwb")
    leave_hot_journal(path)
    store = Store.open(path, check_later=True)
    assert store.report.recovered and "passed its integrity check" in store.report.recovered
    assert Store.open(path).report.recovered is None  # once only


@pytest.mark.parametrize("command", ["info", "echo marker"])
def test_a_hot_journal_that_cannot_be_rolled_back_is_refused_and_kept(folder, trace_file, command):
    path = make_good(folder / "p.rwb")
    journal = leave_hot_journal(path)
    before = snapshot(folder)
    with immutable(folder):
        result = cli(*COMMANDS[command](path, trace_file))
    refused(result, 2, "left mid-write", "not writable")
    assert snapshot(folder) == before and journal.exists()
    assert cli("info", path).code == 0  # writable again: recovered then


def test_another_apps_hot_journal_is_not_touched(folder):
    path = _other_app(folder / "p.rwb")
    set_pragma(path, "CREATE TABLE settings (key TEXT, value_json TEXT)")
    leave_hot_journal(path)
    before = snapshot(folder)
    refused(cli("info", path), 2, "not a workbench project")
    assert snapshot(folder) == before


def test_a_hot_journal_is_recovered_in_a_subprocess_with_a_notice_line(folder):
    path = make_good(folder / "p.rwb")
    leave_hot_journal(path)
    result = rwb("info", path)
    assert result.code == 0 and result.err.count("\n") == 1 and result.err.startswith("rwb info: notice: ")


# ----- output files: rwb arm export --out, rwb export --out, rwb demo --out, rwb new ---------------
@pytest.fixture
def project(tmp_path) -> Path:
    return make_good(tmp_path / "p.rwb")


def _out_folder(d: Path, suffix: str) -> Path:
    target = d / f"out{suffix}"
    target.mkdir()
    return target


def _out_proc(_d: Path, suffix: str) -> Path:
    if suffix:
        pytest.skip("rwb new adds .rwb to a name: there is no such folder in /proc")
    return Path("/proc")


def _out_through_a_file(d: Path, suffix: str) -> Path:
    return _text(d / "file.txt") / f"out{suffix}"


def _out_fifo(d: Path, suffix: str) -> Path:
    return _fifo(d / f"out{suffix}")


def _out_device(d: Path, suffix: str) -> Path:
    return _device(d / f"out{suffix}")


BAD_OUTPUTS: dict[str, tuple[Callable[[Path, str], Path], str]] = {
    "a folder": (_out_folder, "is a folder"),
    "a missing folder": (lambda d, suffix: d / "nowhere" / f"out{suffix}", "does not exist"),
    "/proc": (_out_proc, "is a folder"),
    "a file in /proc": (lambda _d, suffix: Path(f"/proc/rwb-export{suffix}"), "cannot be"),
    "a path through a file": (_out_through_a_file, "not a folder"),
    "a FIFO": (_out_fifo, "named pipe"),
    "a device": (_out_device, "device"),
}


def _arm_export(p: Path, out: Path) -> list:
    return ["arm", "export", ARM_RUN, "--project", p, "--out", out]


def _export(p: Path, out: Path) -> list:
    return ["export", ARM_RUN, "--project", p, "--out", out]


def _demo(_p: Path, out: Path) -> list:
    return ["demo", "--out", out]


def _new(_p: Path, out: Path) -> list:
    return ["new", out]


def suffix_for(exporter) -> str:
    return ".rwb" if exporter is _new else ""  # rwb new adds .rwb to a name without it


EXPORTERS = [pytest.param(_arm_export, id="arm export"), pytest.param(_export, id="export"),
             pytest.param(_demo, id="demo"), pytest.param(_new, id="new")]


@pytest.fixture
def outdir(tmp_path) -> Path:
    d = tmp_path / "out"
    d.mkdir()
    return d


@pytest.mark.timeout(30)
@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("where", BAD_OUTPUTS)
def test_a_bad_output_path_is_refused_in_one_line(project, outdir, exporter, where):
    maker, needle = BAD_OUTPUTS[where]
    target = maker(outdir, suffix_for(exporter))
    before, project_before = snapshot(outdir), snapshot(project.parent)
    with contextlib.ExitStack() as stack:
        if where == "a FIFO":  # a reader, so that a command that wrongly writes into it fails instead of hanging
            reader = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
            stack.callback(os.close, reader)
        result = cli(*exporter(project, target))
    refused(result, 2, needle)
    assert snapshot(outdir) == before
    assert snapshot(project.parent) == project_before


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_an_existing_file_is_not_replaced_without_force(project, outdir, exporter):
    target = outdir / f"existing{suffix_for(exporter)}"
    target.write_text("precious")
    before = snapshot(outdir)
    refused(cli(*exporter(project, target)), 2, "already exists", "--force")
    assert snapshot(outdir) == before


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_force_replaces_an_existing_file_in_one_step_and_keeps_its_mode(project, outdir, exporter):
    target = outdir / f"existing{suffix_for(exporter)}"
    target.write_text("precious")
    target.chmod(0o640)
    result = cli(*exporter(project, target), "--force")
    assert result.code == 0, result.err
    assert target.read_bytes() != b"precious"
    assert [p.name for p in outdir.iterdir()] == [target.name]  # no temporary file left
    if exporter is _arm_export:
        assert stat.S_IMODE(target.stat().st_mode) == 0o640


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_a_new_output_file_is_written_and_nothing_else(project, outdir, exporter):
    target = outdir / f"fresh{suffix_for(exporter)}"
    result = cli(*exporter(project, target))
    assert result.code == 0, result.err
    assert target.stat().st_size > 0 and [p.name for p in outdir.iterdir()] == [target.name]


def test_the_default_demo_path_is_rebuilt_but_never_over_someone_elses_file(tmp_path, monkeypatch):
    path = tmp_path / "demo" / "demo.rwb"
    monkeypatch.setenv("RWB_DEMO_PATH", str(path))
    assert cli("demo").code == 0 and cli("demo").code == 0  # its own build: rebuilt
    path.write_text("not a project")
    refused(cli("demo"), 2, "not a workbench project")
    assert path.read_text() == "not a project"


def test_serve_mcp_refuses_a_log_file_that_is_a_folder(project, outdir):
    before = snapshot(project.parent)
    refused(cli("serve-mcp", "--project", project, "--log-file", outdir), 2, "--log-file", "is a folder")
    assert snapshot(project.parent) == before


def test_arm_import_of_a_folder_is_one_line_and_the_project_is_untouched(project, outdir):
    before = snapshot(project.parent)
    result = cli("arm", "import", outdir, "--project", project)
    assert result.code == 2 and "is a folder" in result.err and "Traceback" not in result.err
    assert snapshot(project.parent) == before
