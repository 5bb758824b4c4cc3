"""Start and stop an ``rwb serve-mcp --http`` process for the open project, from the GUI.

QtCore only: a :class:`QProcess` runs the same command a user would type, so the server lives in
its own process (its own connections to the file, its own event loop) and the GUI sees its votes
through the project model's ``data_version`` poll like any other writer's. The URL and the bearer
token come from the ``RWB_MCP_READY`` line the server writes on stderr once it accepts
connections. :func:`client_config` builds the snippet a user pastes into an MCP client.
"""

from __future__ import annotations

import json
import sys
from collections import deque
from pathlib import Path

from PySide6.QtCore import QObject, QProcess, QTimer, Signal

READY_PREFIX = "RWB_MCP_READY "  # the line workbench.services.mcp.http writes (kept Qt-free there)
CLIENT_PREFIX = "RWB_MCP_CLIENT "  # and the line it writes for each new client
SERVER_KEY = "resonance-consensus"


def rwb_command() -> list[str]:
    """How to run ``rwb`` from this installation: the venv's ``rwb`` script by absolute path,
    else this interpreter with ``-m workbench``."""
    script = Path(sys.executable).parent / "rwb"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "workbench"]


def client_config(project: Path | str, url: str | None = None, token: str | None = None,
                  command: list[str] | None = None) -> dict:
    """``{"mcpServers": ...}`` for an MCP client: the stdio form (the client starts the server
    itself on ``project``), and, while an HTTP server runs, the HTTP form with its bearer header."""
    program, *prefix = command or rwb_command()
    servers: dict[str, dict] = {
        SERVER_KEY: {"command": program, "args": [*prefix, "serve-mcp", "--project", str(project)]},
    }
    if url and token:
        servers[f"{SERVER_KEY}-http"] = {"type": "http", "url": url,
                                         "headers": {"Authorization": f"Bearer {token}"}}
    return {"mcpServers": servers}


def client_config_text(project: Path | str, url: str | None = None, token: str | None = None,
                       command: list[str] | None = None) -> str:
    """:func:`client_config` as indented JSON, with short lists and objects kept on one line."""
    return _compact(client_config(project, url, token, command))


def _compact(value: object, indent: str = "") -> str:
    if isinstance(value, dict):
        inline = json.dumps(value, ensure_ascii=False)
        if len(inline) <= 72 and not any(isinstance(v, dict) for v in value.values()):
            return inline
        inner = indent + "  "
        items = [f"{inner}{json.dumps(k)}: {_compact(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    return json.dumps(value, ensure_ascii=False)


class McpServerProcess(QObject):
    """One HTTP Consensus Server process. Signals arrive on the thread that owns this object."""

    started = Signal(str, str)  # url, token
    stopped = Signal()
    failed = Signal(str)  # a message for the user
    client_seen = Signal(str, str)  # an MCP client's name and version ("" when it gave none)

    START_TIMEOUT_MS = 30_000
    STOP_TIMEOUT_MS = 5_000

    def __init__(self, parent: QObject | None = None, command: list[str] | None = None):
        super().__init__(parent)
        self.command = command or [sys.executable, "-m", "workbench"]
        self.url: str | None = None
        self.token: str | None = None
        self.project: Path | None = None
        self.clients: dict[str, str] = {}  # the clients this server has seen, by name: their version
        self._tail: deque[str] = deque(maxlen=40)
        self._partial = ""
        self._stopping = False
        self._process: QProcess | None = None
        self._start_timer = QTimer(self)
        self._start_timer.setSingleShot(True)
        self._start_timer.timeout.connect(self._on_start_timeout)
        self._kill_timer = QTimer(self)
        self._kill_timer.setSingleShot(True)
        self._kill_timer.timeout.connect(self._on_kill_timeout)

    # ----- state ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """True from :meth:`start` until the process has exited."""
        return self._process is not None

    @property
    def ready(self) -> bool:
        return self.url is not None

    # ----- commands ------------------------------------------------------------------------
    def start(self, project: Path | str, extra_args: list[str] | None = None) -> None:
        if self._process is not None:
            raise RuntimeError("The MCP server is already running; stop it first.")
        self.project = Path(project)
        self.url = self.token = None
        self.clients = {}
        self._tail.clear()
        self._partial = ""
        self._stopping = False
        process = QProcess(self)
        process.setProgram(self.command[0])
        process.setArguments([*self.command[1:], "serve-mcp", "--project", str(self.project), "--http",
                              *(extra_args or [])])
        process.setProcessChannelMode(QProcess.ProcessChannelMode.SeparateChannels)
        process.setStandardInputFile(QProcess.nullDevice())
        process.setStandardOutputFile(QProcess.nullDevice())
        process.readyReadStandardError.connect(self._on_stderr)
        process.finished.connect(self._on_finished)
        process.errorOccurred.connect(self._on_error)
        self._process = process
        self._start_timer.start(self.START_TIMEOUT_MS)
        process.start()

    def stop(self) -> None:
        """Ask the server to stop (SIGTERM: it finishes the calls under way); kill it if it has
        not stopped after ``STOP_TIMEOUT_MS``. ``stopped`` follows."""
        if self._process is None:
            return
        self._stopping = True
        self._start_timer.stop()
        self._process.terminate()
        self._kill_timer.start(self.STOP_TIMEOUT_MS)

    def shutdown(self, timeout_ms: int = STOP_TIMEOUT_MS) -> bool:
        """Stop and wait (blocking, bounded): for closing the window or the project."""
        process = self._process
        if process is None:
            return True
        self.stop()
        if not process.waitForFinished(timeout_ms):
            process.kill()
            process.waitForFinished(timeout_ms)
        if self._process is process:  # finished was not delivered (no event loop ran)
            self._on_finished(process.exitCode(), process.exitStatus())
        return self._process is None

    # ----- process events ------------------------------------------------------------------
    def _on_stderr(self) -> None:
        process = self.sender() if isinstance(self.sender(), QProcess) else self._process
        if process is None:
            return
        text = self._partial + bytes(process.readAllStandardError().data()).decode("utf-8", "replace")
        *lines, self._partial = text.split("\n")
        for line in lines:
            line = line.rstrip("\r")
            if line.startswith(READY_PREFIX) and not self.ready:
                self._on_ready(line[len(READY_PREFIX):])
            elif line.startswith(CLIENT_PREFIX):
                self._on_client(line[len(CLIENT_PREFIX):])
            elif line:
                self._tail.append(line)

    def _on_ready(self, payload: str) -> None:
        try:
            info = json.loads(payload)
            url, token = str(info["url"]), str(info["token"])
        except (ValueError, KeyError, TypeError):
            self._tail.append(f"unreadable ready line: {payload[:200]}")
            return
        self._start_timer.stop()
        self.url, self.token = url, token
        self.started.emit(url, token)

    def _on_client(self, payload: str) -> None:
        try:
            info = json.loads(payload)
            name, version = str(info["name"]), str(info.get("version") or "")
        except (ValueError, KeyError, TypeError):
            self._tail.append(f"unreadable client line: {payload[:200]}")
            return
        self.clients[name] = version
        self.client_seen.emit(name, version)

    def _on_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart and self._process is not None:
            message = f"The MCP server could not be started ({self._process.errorString()})."
            self._finish(message)

    def _on_finished(self, exit_code: int, _status: QProcess.ExitStatus) -> None:
        if self._process is None:
            return
        self._on_stderr()
        if self._stopping:
            self._finish(None)
        elif not self.ready:
            self._finish(f"The MCP server stopped before it was ready (exit code {exit_code}). "
                         f"{self._last_lines()}")
        else:
            self._finish(f"The MCP server stopped unexpectedly (exit code {exit_code}). {self._last_lines()}")

    def _on_start_timeout(self) -> None:
        if self._process is not None and not self.ready:
            self._tail.append(f"not ready after {self.START_TIMEOUT_MS // 1000} s")
            self._stopping = False
            self._process.kill()

    def _on_kill_timeout(self) -> None:
        if self._process is not None:
            self._process.kill()

    def _finish(self, error: str | None) -> None:
        process, self._process = self._process, None
        self._start_timer.stop()
        self._kill_timer.stop()
        self.url = self.token = None
        if process is not None:
            process.readyReadStandardError.disconnect(self._on_stderr)
            process.finished.disconnect(self._on_finished)
            process.errorOccurred.disconnect(self._on_error)
            process.deleteLater()
        if error:
            self.failed.emit(error)
        self.stopped.emit()

    def _last_lines(self) -> str:
        lines = [line for line in self._tail if line.strip()][-3:]
        return " ".join(lines)
