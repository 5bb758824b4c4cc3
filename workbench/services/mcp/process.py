"""Start and stop an ``rwb serve-mcp --http`` process for the open project, from the GUI.

QtCore only: a :class:`QProcess` runs the same command a user would type, so the server lives in
its own process (its own connections to the file, its own event loop) and the GUI sees its votes
through the project model's ``data_version`` poll like any other writer's. The URL and the bearer
token come from the ``RWB_MCP_READY`` line the server writes on stderr once it accepts
connections. :func:`client_config` builds the snippet a user pastes into an MCP client.

The server's stderr also carries its log, which quotes what MCP clients send (escaped, one line
per record). A control line is read only through :func:`read_control_line`: it must be exactly a
prefix and one ASCII JSON object holding the channel key this process gave the server in
``RWB_MCP_CHANNEL`` (SPEC §11). Clients never see that key, so no agent name can forge a client
or a ready line; every other line is kept (escaped) for the failure message.
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
import sys
from collections import deque
from pathlib import Path

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

from workbench.core.limits import MAX_NAME_CHARS, printable

READY_PREFIX = "RWB_MCP_READY "  # the line workbench.services.mcp.http writes (kept Qt-free there)
CLIENT_PREFIX = "RWB_MCP_CLIENT "  # and the line it writes for each new client
CHANNEL_ENV = "RWB_MCP_CHANNEL"  # where the server finds the key its control lines carry
SERVER_KEY = "resonance-consensus"
# A prefix, then one JSON object of printable ASCII (the server writes it with ensure_ascii).
_CONTROL_LINE = re.compile(r"(RWB_MCP_READY|RWB_MCP_CLIENT) (\{[\x20-\x7e]*\})")
_TAIL_CHARS = 500  # a log line kept for the failure message, at most this long


def read_control_line(line: str, channel: str) -> tuple[str, dict] | None:
    """``("ready", {url, token, ...})`` or ``("client", {name, version})`` for a control line the
    server wrote with this ``channel`` key, else None: a line that is not exactly a prefix and an
    ASCII JSON object, whose key differs, or whose fields are not what the server writes."""
    found = _CONTROL_LINE.fullmatch(line)
    if found is None or not channel:
        return None
    try:
        payload = json.loads(found.group(2))
    except ValueError:
        return None
    given = payload.get("channel") if isinstance(payload, dict) else None
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), channel.encode()):
        return None
    if found.group(1) == "RWB_MCP_READY":
        ok = isinstance(payload.get("url"), str) and isinstance(payload.get("token"), str)
        return ("ready", payload) if ok else None
    name, version = payload.get("name"), payload.get("version")
    ok = (isinstance(name, str) and 0 < len(name) <= MAX_NAME_CHARS
          and (version is None or (isinstance(version, str) and len(version) <= MAX_NAME_CHARS)))
    return ("client", payload) if ok else None


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
        self.channel = ""  # the key of this start's control lines
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
        self.channel = secrets.token_hex(16)
        self._tail.clear()
        self._partial = ""
        self._stopping = False
        process = QProcess(self)
        environment = QProcessEnvironment.systemEnvironment()
        environment.insert(CHANNEL_ENV, self.channel)
        process.setProcessEnvironment(environment)
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
        if len(self._partial) > 1_000_000:  # a line that never ends: keep what is needed to show it
            self._partial = self._partial[:_TAIL_CHARS]
        for line in lines:
            line = line.rstrip("\r")
            control = read_control_line(line, self.channel)
            if control is None:
                if line:
                    self._tail.append(printable(line[:_TAIL_CHARS]))
            elif control[0] == "ready":
                if not self.ready:
                    self._on_ready(control[1])
            else:
                self._on_client(control[1])

    def _on_ready(self, info: dict) -> None:
        self._start_timer.stop()
        self.url, self.token = info["url"], info["token"]
        self.started.emit(self.url, self.token)

    def _on_client(self, info: dict) -> None:
        name, version = printable(info["name"]), printable(info.get("version") or "")
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
