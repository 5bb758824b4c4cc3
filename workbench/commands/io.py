"""Reading a command's input (a file, or ``-`` for standard input) and writing its output files.

Input is bounded by :mod:`workbench.core.limits` (``MAX_INPUT_BYTES``; for JSON,
``MAX_JSON_DEPTH`` and ``MAX_JSON_NODES``), the same bounds every command and configuration
reads with, so a hostile or mistaken input is refused with one line (exit 2) instead of
exhausting memory or the stack.

Output files are written the safe way (:func:`write_output`): under a temporary name beside the
destination, then moved into place in one step, and an existing file is replaced only with
``--force``. A folder, a named pipe, a device or a symbolic link is never a destination.

What goes to stdout is untrusted text made safe for a terminal (SPEC §11,
:mod:`workbench.core.safe_output`): JSON with every control character escaped (:func:`print_json`),
documents with them shown as ``\x1b`` (:func:`print_document`).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from workbench.core import limits
from workbench.core.errors import InputError


def _label(source: str) -> str:
    return "stdin" if source == "-" else source


def read_bytes(source: str, *, limit: int | None = None) -> bytes:
    """The bytes of ``source`` (a path or ``-``), at most ``limit`` (default ``limits.MAX_INPUT_BYTES``);
    any problem is an :class:`InputError`.

    A named pipe is read (``<(cmd)`` in a shell is one); a folder, a socket or a device is refused.
    """
    label = _label(source)
    limit = limits.MAX_INPUT_BYTES if limit is None else limit
    try:
        if source == "-":
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(source, "rb") as fh:
                mode = os.fstat(fh.fileno()).st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
                    from workbench.core.project.files import kind_of_file

                    raise InputError(label, f"is {kind_of_file(mode)}, not a file")
                data = fh.read(limit + 1)
    except FileNotFoundError:
        raise InputError(label, "no such file") from None
    except IsADirectoryError:
        raise InputError(label, "is a folder, not a file") from None
    except NotADirectoryError:
        raise InputError(label, "no such file (a part of the path is not a folder)") from None
    except OSError as exc:
        raise InputError(label, exc.strerror or str(exc)) from None
    except MemoryError:
        raise InputError(label, "too large to read into memory") from None
    if len(data) > limit:
        raise InputError(label, f"is too large (more than {limit:,} bytes, the most a command reads)")
    return data


def read_text(source: str, *, limit: int | None = None) -> str:
    """The UTF-8 text of ``source`` (a path or ``-``; a leading byte-order mark is dropped); any
    problem is an :class:`InputError`."""
    data = read_bytes(source, limit=limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(_label(source), f"not UTF-8 text (byte {exc.start})") from None


def parse_json(text: str, label: str) -> object:
    """JSON from ``text`` within :mod:`workbench.core.limits` (depth, values); any problem is an
    :class:`InputError`."""
    try:
        return limits.decode_json(text, label)
    except json.JSONDecodeError as exc:
        raise InputError(label, f"not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def read_json(source: str) -> object:
    """Parse JSON from ``source`` (a path or ``-``); any problem is an :class:`InputError`."""
    return parse_json(read_text(source), _label(source))


def print_json(value: object) -> None:
    """``value`` as indented JSON on stdout; a control character in a string is a ``\\uXXXX`` escape."""
    from workbench.core.safe_output import json_text

    sys.stdout.write(json_text(value, indent=2) + "\n")


def print_document(text: str) -> None:
    """A document (a report, a CSV, a table) on stdout: newlines and tabs kept, any other control
    character shown as an escape (``\\x1b``). ``--out`` writes the exact text instead."""
    from workbench.core.safe_output import for_terminal

    sys.stdout.flush()
    sys.stdout.buffer.write(for_terminal(text).encode("utf-8"))  # UTF-8 whatever the locale, as --out writes
    sys.stdout.flush()


def refuse_link(path: str) -> None:
    """A symbolic link at ``--out`` is refused, ``--force`` or not: replacing the file it points to
    writes wherever the link's maker chose (another user's file, a config), and replacing the
    link itself is not what its owner asked for either."""
    if os.path.islink(path):
        try:
            mode = os.stat(path).st_mode
        except OSError:  # a dangling link
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            from workbench.core.project.files import kind_of_file

            to = f" to {kind_of_file(mode)}"
        else:
            to = ""
        raise InputError("--out", f"{path} is a symbolic link{to}; give the path of a file "
                                  "(a link is never written through)")


def check_output(path: str, *, force: bool = False) -> None:
    """Refuse an ``--out`` path early (before any work): what :func:`write_output` would refuse."""
    from workbench.core.project.files import ProjectError, check_destination

    refuse_link(path)
    try:
        check_destination(Path(path), overwrite=force)
    except ProjectError as exc:
        raise InputError("--out", str(exc)) from None


def write_output(path: str, data: str | bytes, *, force: bool = False) -> Path:
    """Write a command's output file safely; returns where it went.

    - An existing file is replaced only with ``force`` (``--force``); without it the command
      stops with exit 2 and the file is left exactly as it was.
    - A folder, a named pipe, a socket, a device or a symbolic link is never written, ``force`` or
      not (a link is never followed: nothing is written outside the path given).
    - The text goes to a temporary file beside the destination, flushed to disk, then moved into
      place in one step: a crash leaves either the old file or the new one, never half of one.
    - A replaced file keeps its permissions; a new one gets the usual ones (0666 less the umask).

    Every refusal is an :class:`InputError` naming the path (exit 2).
    """
    from workbench.core.project.files import ProjectError, check_destination, publish, temporary_beside

    target = Path(path)
    refuse_link(path)
    try:
        check_destination(target, overwrite=force)
    except ProjectError as exc:
        raise InputError("--out", str(exc)) from None
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    tmp = temporary_beside(target, "part")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        publish(tmp, target, overwrite=force)
    except ProjectError as exc:
        raise InputError("--out", str(exc)) from None
    except OSError as exc:
        raise InputError("--out", f"{path} cannot be written: {exc.strerror or exc}") from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return target


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current
