"""A run's progress on stderr, in the words a user knows: ``Round 1 · votes · critic-2``.

One line: the phase (the round and what the agents are doing), the agent whose call last
started or ended, calls done of total, failures and an ETA. On a terminal the line is rewritten
in place a few times a second; into a file or a pipe, a line is written when the phase changes
and at the end, so a log stays readable.
"""

from __future__ import annotations

import re
import sys
import threading
import time

WORDS = {"generate": "responses", "vote": "votes", "votes": "votes", "isolation": "isolated reasoning",
         "deliberation": "deliberation", "reconciliation": "reconciliation", "gate": "gate check",
         "result": "results"}
_ROUND = re.compile(r"^Round (\d+):\s*(.+)$")


def phase_label(phase: str) -> str:
    """``Round 1: vote`` → ``Round 1 · votes``; ``echo.verification`` → ``Echo · check``; other
    labels (``Ballots``, ``FAP re-queue, attempt 1``) as they are, capitalised."""
    m = _ROUND.match(phase or "")
    if m:
        word, _, rest = m.group(2).strip().partition(" ")
        return f"Round {m.group(1)} · {WORDS.get(word.lower(), word)}" + (f" {rest}" if rest else "")
    if phase.startswith("echo."):
        kind = phase.removeprefix("echo.")
        return "Echo · " + {"verification": "marker check", "transition": "restoration", "seed": "session seed",
                            "anchor": "marker", "session_end": "session ended", "footer": "footer",
                            "anchor_retired": "escalation"}.get(kind, kind.replace("_", " "))
    text = WORDS.get(phase, phase or "starting")
    return text[:1].upper() + text[1:]


def eta_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    s = int(round(seconds))
    if s < 60:
        return f", ETA {s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f", ETA {m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f", ETA {h} h {m:02d} min"


def progress_line(phase: str, agent: str | None, done: int, total: int, failed: int, eta_s: float | None) -> str:
    """The text of one progress line (no carriage return)."""
    where = phase_label(phase) + (f" · {agent}" if agent else "")
    eta = eta_text(eta_s) if done < total else ""
    return f"{where} — {done}/{total} calls, {failed} failed{eta}"


def echo_event(kind: str, message: str) -> str | None:
    """The Echo events worth a line of their own, in words: a marker check that failed, a
    restoration that starts or ends, an escalation. None for the routine ones."""
    agent, _, rest = message.partition(": ")
    if kind == "echo.verification" and "FAILED" in rest:
        return f"Echo · {agent} lost its marker ({rest.replace('FAILED', 'not recited')})"
    if kind == "echo.transition":
        step = rest.removeprefix("restoration ").strip()
        words = {"log": "restoration started", "resume": "restored, resuming", "escalate": "escalated to the conductor"}
        return f"Echo · {agent} {words[step]}" if step in words else None
    if kind == "echo.anchor_retired":
        return f"Echo · {message}"
    return None


class Progress:
    """``on_progress`` and ``on_call`` for the Runner; thread-safe (calls report from their threads)."""

    def __init__(self, quiet: bool, stream=None, interval_s: float = 0.2):
        self.quiet, self.stream = quiet, stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._last = 0.0
        self._phase = ""  # the batch phase (a Round ...), kept while notes come and go
        self._agent: str | None = None
        self._shown_phase: str | None = None
        self._width = 0
        self._state: tuple = ("", None, 0, 0, 0, None)
        self._batch_said = ""

    def on_call(self, event) -> None:
        with self._lock:
            self._agent = event.agent or self._agent

    def __call__(self, p) -> None:
        if self.quiet:
            return
        with self._lock:
            if p.phase.startswith("echo."):
                event = echo_event(p.phase, p.message)  # a loss, a restoration, an escalation: its own line
                if event:
                    self._write(event, keep=True)
                return
            if p.phase == "batch":  # "waiting for batch: ..." with the provider's counts, when they move
                if p.message != self._batch_said:
                    self._batch_said = p.message
                    self._write(p.message, keep=True)
                return
            if p.phase not in ("result", "warning", "phase", "progress", "gate") and p.phase != self._phase:
                self._phase = p.phase
            phase = self._phase or p.phase
            self._state = (phase, self._agent, p.done, p.total, p.failed, p.eta_s)
            now = time.monotonic()
            changed = phase_label(phase) != self._shown_phase
            if self.tty:
                if now - self._last < self.interval_s and p.done < p.total and not changed:
                    return
            elif not changed:
                return
            self._last = now
            self._shown_phase = phase_label(phase)
            self._write(progress_line(*self._state))

    def _write(self, text: str, keep: bool = False) -> None:
        from workbench.core.limits import printable

        text = printable(text)  # agent names and Echo messages: one line, no terminal controls
        if self.tty:
            self.stream.write("\r" + text.ljust(self._width) + ("\n" if keep else ""))
            self._width = 0 if keep else len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.quiet:
            return
        with self._lock:
            _phase, _agent, done, total, failed, _eta = self._state
            if total:
                final = f"Done — {done}/{total} calls, {failed} failed"
                if self.tty:
                    self._write(final)
                    self.stream.write("\n")
                else:
                    self._write(final)
            elif self.tty:
                self.stream.write("\n")
            self.stream.flush()
