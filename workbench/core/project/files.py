"""What a project file is, checked from its bytes before SQLite ever opens it, and how files are
put in place.

Reading the 100-byte SQLite header lets us refuse a non-SQLite or truncated file with a clear
message, without handing it to SQLite (which could try to roll back a journal, i.e. write).
Only a regular file is ever opened: a folder, a named pipe (which would block the open), a
socket or a device is refused from its ``stat`` alone.

Every file the workbench writes (a new project, the demo, Save As, an export) is written under a
temporary name beside its destination and then moved into place in one step (:func:`publish`),
so a crash never leaves half a file under the real name, and an existing file is replaced only
when the caller says so.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workbench.core.errors import WorkbenchError

SUFFIX = ".rwb"
SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100


class ProjectError(WorkbenchError):
    """A project file that cannot be opened (or written). ``kind`` is one of:
    missing, not_file, not_sqlite, truncated, not_project, corrupt, locked, read_only,
    hot_journal, exists, migration, io."""

    def __init__(self, kind: str, path: Path | str, message: str):
        self.kind = kind
        self.path = Path(path)
        super().__init__(message)


_notice_handler: Callable[[str], None] | None = None


def set_notice_handler(handler: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """Who hears what opening a file did on its own (a journal rolled back); returns the previous
    handler. The CLI prints these on stderr; the GUI shows ``OpenReport.recovered``."""
    global _notice_handler
    previous, _notice_handler = _notice_handler, handler
    return previous


def notice(message: str) -> None:
    if _notice_handler is not None:
        _notice_handler(message)


@dataclass(frozen=True)
class Header:
    page_size: int
    page_count: int | None  # None when the header's page count is not trustworthy
    file_size: int
    application_id: int = 0


def read_header(path: Path, *, check_size: bool = True) -> Header:
    """Check that ``path`` looks like a whole SQLite file; raise :class:`ProjectError` if not.

    ``check_size=False`` skips the comparison of the file's size with its header, for a file
    whose rollback journal has not been played back yet (the header may then be ahead of it).
    """
    name = path.name
    try:
        mode = os.stat(path).st_mode  # a socket cannot even be opened: refuse it from its stat
        if not stat.S_ISREG(mode):
            raise ProjectError("not_file", path, f"{name} is {kind_of_file(mode)}, not a project file.")
        # O_NONBLOCK: a named pipe swapped in since the stat must not block the open either.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ProjectError("missing", path, f"{name} does not exist.") from None
    except IsADirectoryError:
        raise ProjectError("not_file", path, f"{name} is a folder, not a project file.") from None
    except NotADirectoryError:
        raise ProjectError("missing", path, f"{name} does not exist (a part of its path is not a folder).") from None
    except OSError as exc:
        raise ProjectError("io", path, f"{name} cannot be read: {exc.strerror or exc}.") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ProjectError("not_file", path, f"{name} is {kind_of_file(info.st_mode)}, not a project file.")
        size = info.st_size
        head = os.read(fd, HEADER_SIZE)
    except OSError as exc:
        raise ProjectError("io", path, f"{name} cannot be read: {exc.strerror or exc}.") from None
    finally:
        os.close(fd)

    if size == 0:
        raise ProjectError("not_project", path, f"{name} is empty: it is not a workbench project.")
    if not head.startswith(SQLITE_MAGIC[: len(head)]) or len(head) < len(SQLITE_MAGIC):
        raise ProjectError(
            "not_sqlite", path,
            f"{name} is not a workbench project: it is not an SQLite database at all.",
        )
    if len(head) < HEADER_SIZE:
        raise ProjectError(
            "truncated", path,
            f"{name} is truncated: it holds only {size} bytes, less than an SQLite header. "
            "It was probably cut short by an interrupted copy or download.",
        )

    (raw_page_size,) = struct.unpack(">H", head[16:18])
    page_size = 65536 if raw_page_size == 1 else raw_page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise ProjectError("corrupt", path, f"{name} is damaged: its header gives an impossible page size.")
    change_counter, page_count = struct.unpack(">II", head[24:32])
    (valid_for,) = struct.unpack(">I", head[92:96])
    # The in-header page count is valid only when written by SQLite >= 3.7.0 in step with
    # the change counter; otherwise fall back to the file size alone.
    trusted = page_count if page_count > 0 and valid_for == change_counter else None
    expected = (trusted or 0) * page_size
    if check_size and (size < expected or size % page_size):
        raise ProjectError(
            "truncated", path,
            f"{name} is truncated: its header describes {expected or 'a multiple of ' + str(page_size)} "
            f"bytes but the file has {size}. It was probably cut short by an interrupted copy "
            "or download; open a backup instead.",
        )
    (application_id,) = struct.unpack(">I", head[68:72])
    return Header(page_size=page_size, page_count=trusted, file_size=size, application_id=application_id)


def kind_of_file(mode: int) -> str:
    """A user's words for what a non-regular file is."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


# ----- putting files in place ------------------------------------------------------------------
def check_destination(dest: Path, *, overwrite: bool) -> None:
    """Refuse a destination that cannot or must not be written: an existing file unless
    ``overwrite``, anything but a regular file (a folder, a pipe, a device) even then, and a
    path whose folder does not exist."""
    name = str(dest)
    try:
        info = os.stat(dest)
    except FileNotFoundError:
        info = None
    except NotADirectoryError:
        raise ProjectError("io", dest, f"{name} cannot be written: a part of its path is not a folder.") from None
    except OSError as exc:
        raise ProjectError("io", dest, f"{name} cannot be written: {exc.strerror or exc}.") from None
    if info is not None:
        if not stat.S_ISREG(info.st_mode):
            raise ProjectError("not_file", dest, f"{name} is {kind_of_file(info.st_mode)}; give the path of a file.")
        if not overwrite:
            raise ProjectError("exists", dest, f"{name} already exists; use --force to replace it.")
    parent = dest.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise ProjectError("io", dest, f"{name} cannot be written: the folder {parent} {what}.")


def temporary_beside(dest: Path, tag: str) -> Path:
    """A fresh name beside ``dest`` for the file being written (never an existing file)."""
    return dest.with_name(f".{dest.name}.{os.getpid()}-{secrets.token_hex(4)}.{tag}")


def publish(tmp: Path, dest: Path, *, overwrite: bool) -> None:
    """Move the finished ``tmp`` to ``dest`` in one step. Without ``overwrite`` an existing
    ``dest`` is never replaced, not even one that appeared a moment ago (a hard link fails if
    the name is taken; where the file system has no hard links, the check is a moment earlier).
    ``tmp`` is gone afterwards either way."""
    try:
        if overwrite:
            os.replace(tmp, dest)
            return
        try:
            os.link(tmp, dest)
        except FileExistsError:
            raise ProjectError("exists", dest, f"{dest} already exists; use --force to replace it.") from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK,
                                 errno.ENOSYS):
                raise
            if os.path.lexists(dest):
                raise ProjectError("exists", dest, f"{dest} already exists; use --force to replace it.") from None
            os.replace(tmp, dest)
            return
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    _sync_folder(dest.parent)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (where the platform allows opening a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def with_suffix(path: Path | str) -> Path:
    """Give a new project path the ``.rwb`` suffix if the user left it off."""
    p = Path(path)
    return p if p.suffix == SUFFIX else p.with_name(p.name + SUFFIX)
