"""stdio for the Consensus Server: the SDK's transport, fed through a gate that answers every line.

The SDK's ``stdio_server`` reads stdin as text with bad bytes replaced, parses each line and, when
that fails, puts the exception on its read stream, where the dispatcher drops it: the client is
never answered. Here ``stdio_server`` reads from a :class:`LineGate` instead of stdin. The gate
reads raw lines (at most ``MAX_MCP_MESSAGE_BYTES`` of each is kept), checks each with
:func:`wire.check_message`, hands on only messages that pass, and answers every other one itself
on the SDK's write stream, so replies never interleave on stdout. The SDK still claims stdout
(a stray ``print`` lands on stderr, not in the protocol).
"""

from __future__ import annotations

import logging
import sys
from typing import BinaryIO

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from workbench.core.limits import MAX_MCP_MESSAGE_BYTES
from workbench.services.mcp.wire import ID_SCAN_CHARS, Accepted, Refusal, check_message

log = logging.getLogger("workbench.mcp.stdio")


class LineGate:
    """The lines ``stdio_server`` iterates over: checked messages only, one per line."""

    def __init__(self, source: BinaryIO, limit: int = MAX_MCP_MESSAGE_BYTES):
        self.source = source
        self.limit = limit
        self.refused = 0
        self._replies = None
        self._attached = anyio.Event()

    def attach(self, replies) -> None:
        """Where refusals are written: the write stream the SDK's stdout writer drains."""
        self._replies = replies
        self._attached.set()

    def __aiter__(self):
        return self._lines()

    async def _lines(self):
        await self._attached.wait()
        while True:
            verdict = await anyio.to_thread.run_sync(self._next_verdict)  # reading and checking off the loop
            if verdict is None:
                return
            if isinstance(verdict, Accepted):
                yield verdict.text + "\n"
                continue
            self.refused += 1
            log.warning("refused a message (id %s): %s", verdict.id, verdict.message)
            if verdict.answer:
                try:
                    await self._replies.send(SessionMessage(verdict.error()))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return  # the server is closing: nobody is left to answer

    def _next_verdict(self) -> Accepted | Refusal | None:
        """The next non-blank line, checked; None at end of input."""
        while True:
            line, size = self._read_line()
            if line is None:
                return None
            if line.strip():  # a blank line carries no message (some clients end with one)
                return check_message(line, size=size)

    def _read_line(self) -> tuple[bytes | None, int]:
        """The next line without its end, and its length; a line past the limit is read to its
        end but only its start is kept (enough to find its id). ``(None, 0)`` at end of input."""
        head = self.source.readline(self.limit + 1)
        if not head:
            return None, 0
        if head.endswith(b"\n") or len(head) <= self.limit:
            line = head.rstrip(b"\n").removesuffix(b"\r")
            return line, len(line)
        size = len(head)
        while True:
            more = self.source.readline(1 << 16)
            if not more:
                break
            size += len(more)
            if more.endswith(b"\n"):
                size -= 1
                break
        return head[:ID_SCAN_CHARS], size


async def serve_checked_stdio(lowlevel_server, source: BinaryIO | None = None) -> None:
    """Serve ``lowlevel_server`` (the SDK's ``Server``) over stdin/stdout through a :class:`LineGate`."""
    gate = LineGate(source or sys.stdin.buffer)
    async with stdio_server(stdin=gate) as (read_stream, write_stream):
        gate.attach(write_stream)
        await lowlevel_server.run(read_stream, write_stream, lowlevel_server.create_initialization_options())
