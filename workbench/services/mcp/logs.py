"""The Consensus Server's log: one line per record, whatever a client sends (SPEC §11).

- Every record is formatted by :class:`OneLineFormatter`: its message is escaped with
  :func:`limits.printable` (a newline becomes ``\\n``, ESC ``\\x1b``, U+202E ``\\u202e``), and the
  lines of a traceback are escaped too and indented, so no text a client sent (an agent name, a
  session id, an exception message quoting either) can start a line of its own. The GUI's control
  lines (``http.py``) can therefore not be forged through the log, and are keyed besides.
- ``--log-file`` goes through :class:`LogFileHandler`: one unbuffered append per record, and a
  failed write (a full disk) is reported once on stderr, in one line, instead of the ``logging``
  module's traceback per record; the server keeps serving, and once the file can be written
  again it first notes how many lines were lost.
"""

from __future__ import annotations

import logging
import sys
import traceback
from pathlib import Path
from typing import BinaryIO, TextIO

from workbench.core.limits import printable

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class OneLineFormatter(logging.Formatter):
    """A record as one line (its message escaped); a traceback follows escaped and indented."""

    def format(self, record: logging.LogRecord) -> str:
        record.message = printable(record.getMessage())
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        text = self.formatMessage(record)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        extra = [record.exc_text] if record.exc_text else []
        if record.stack_info:
            extra.append(self.formatStack(record.stack_info))
        for block in extra:
            text += "".join(f"\n    {printable(line)}" for line in block.splitlines())
        return text

    def formatException(self, exc_info) -> str:  # noqa: N802 (logging's name)
        """A traceback whose exception messages are one line each: a message may quote what a
        client sent; the frames (file, line, source) may not, and keep their lines."""
        lines: list[str] = []
        for chunk in traceback.TracebackException(*exc_info).format():
            body = chunk.strip("\n")
            if chunk.startswith("  File "):
                lines.extend(body.split("\n"))
            elif body:
                lines.append(printable(body))
        return "\n".join(lines)


class LogFileHandler(logging.Handler):
    """Appends each record to ``path`` with one write. A write that fails is reported once on
    ``report`` (stderr) per outage; the records in between are counted, not retried."""

    def __init__(self, path: Path | str, report: TextIO | None = None):
        super().__init__()
        self.path = Path(path)
        self.report = report
        self.stream: BinaryIO = open(self.path, "ab", buffering=0)  # noqa: SIM115 (closed in close())
        self.lost = 0  # records not written since the last failure
        self.failure: OSError | None = None
        self._cut_line = False  # the last failed write may have left half a line

    def emit(self, record: logging.LogRecord) -> None:
        try:
            data = (self.format(record) + "\n").encode("utf-8", "backslashreplace")
        except Exception:  # a formatting bug: logging's own report
            self.handleError(record)
            return
        if self.failure is not None:
            cut = "\n" if self._cut_line else ""  # end the half line first
            note = logging.makeLogRecord({
                "name": "workbench.mcp.log", "levelno": logging.WARNING, "levelname": "WARNING",
                "msg": f"{self.lost:,} log line(s) could not be written ({self.failure.strerror or self.failure})"})
            data = (cut + self.format(note) + "\n").encode() + data
        try:
            self._write_all(data)
        except OSError as exc:
            self._failed(exc)
            return
        self.failure, self.lost, self._cut_line = None, 0, False

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = self.stream.write(view)
            if not written:  # a short write that wrote nothing: the device took no more
                raise OSError(28, "No space left on device")
            self._cut_line = True
            view = view[written:]
        self._cut_line = False

    def _failed(self, exc: OSError) -> None:
        first = self.failure is None
        self.failure = exc
        self.lost += 1
        if first:
            message = (f"rwb serve-mcp: error: --log-file: cannot write {printable(str(self.path))} "
                       f"({exc.strerror or exc}); serving on, log lines are dropped until it can be written")
            try:
                print(message, file=self.report or sys.stderr, flush=True)
            except (OSError, ValueError):
                pass  # stderr is gone too: nobody left to tell

    def close(self) -> None:
        try:
            self.stream.close()
        except OSError:
            pass
        super().close()


def configure_logging(log_file: Path | str | None = None, level: str = "info") -> None:
    """Logs go to ``log_file`` or to stderr, never to stdout (stdout carries the protocol)."""
    handler: logging.Handler = LogFileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter(FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("workbench").setLevel(level.upper())
    logging.captureWarnings(True)  # a warning's text goes through the same escaping
