"""What a project file is, checked from its bytes before SQLite ever opens it.

Reading the 100-byte SQLite header lets us refuse a non-SQLite or truncated file with a clear
message, without handing it to SQLite (which could try to roll back a journal, i.e. write).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from workbench.core.errors import WorkbenchError

SUFFIX = ".rwb"
SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100


class ProjectError(WorkbenchError):
    """A project file that cannot be opened (or written). ``kind`` is one of:
    missing, not_sqlite, truncated, not_project, corrupt, locked, read_only, exists,
    migration, io."""

    def __init__(self, kind: str, path: Path | str, message: str):
        self.kind = kind
        self.path = Path(path)
        super().__init__(message)


@dataclass(frozen=True)
class Header:
    page_size: int
    page_count: int | None  # None when the header's page count is not trustworthy
    file_size: int


def read_header(path: Path) -> Header:
    """Check that ``path`` looks like a whole SQLite file; raise :class:`ProjectError` if not."""
    name = path.name
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(HEADER_SIZE)
    except FileNotFoundError:
        raise ProjectError("missing", path, f"{name} does not exist.") from None
    except IsADirectoryError:
        raise ProjectError("not_sqlite", path, f"{name} is a folder, not a project file.") from None
    except OSError as exc:
        raise ProjectError("io", path, f"{name} cannot be read: {exc.strerror or exc}.") from None

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
    if size < expected or size % page_size:
        raise ProjectError(
            "truncated", path,
            f"{name} is truncated: its header describes {expected or 'a multiple of ' + str(page_size)} "
            f"bytes but the file has {size}. It was probably cut short by an interrupted copy "
            "or download; open a backup instead.",
        )
    return Header(page_size=page_size, page_count=trusted, file_size=size)


def with_suffix(path: Path | str) -> Path:
    """Give a new project path the ``.rwb`` suffix if the user left it off."""
    p = Path(path)
    return p if p.suffix == SUFFIX else p.with_name(p.name + SUFFIX)
