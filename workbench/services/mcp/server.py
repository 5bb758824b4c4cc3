"""The Consensus Server over MCP: agents vote on findings kept in the open project file.

Built on the official ``mcp`` SDK (2.x, ``MCPServer``) over :class:`FindingsStore`, so the maths
is the findings engine's and the file is the one the GUI has open. No Qt here: ``rwb serve-mcp``
loads neither Qt nor litellm.

Tools (typed inputs, structured outputs; a bad argument is a tool error with a plain, field-named
message, never a crash):

- ``submit_vote(finding_id, agent, vote_type, confidence, reason)``
- ``get_consensus_results(finding_id)``
- ``get_challenged_findings()``
- ``create_finding(claim, context, finding_id?, threshold?)``
- ``list_findings(status)``
- ``get_finding_history(finding_id, limit?)``

Every stored vote records the MCP client that sent it (``clientInfo.name``) and the agent it
speaks for; ``raw`` keeps the call as received (transport, client name and version, arguments).

Untrusted input (SPEC §11, docs/mcp.md "Untrusted clients"): every argument has a bound that the
input schema states (``maxLength``), ids carry no control characters, ``context`` is bounded in
size and depth, and a client whose ``clientInfo`` breaks its bounds is refused, never truncated.
The transports check each message before the SDK does (``wire.py``, ``stdio.py``, ``http.py``).

Store calls run on :class:`StoreThreads`: a few threads that each keep one connection to the
project for their whole life and close it themselves when the server closes, so the event loop
never waits on SQLite and no connection crosses a thread. Votes that arrive together are stored
in one short transaction (a group commit), each validated and answered on its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import queue
import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from workbench import __version__
from workbench.core.errors import WorkbenchError, field_path
from workbench.core.limits import (
    MAX_CLAIM_CHARS,
    MAX_LIST_ITEMS,
    MAX_NAME_CHARS,
    MAX_RATIONALE_CHARS,
    check_context,
    check_name,
    too_long,
)
from workbench.core.project.findings import (
    DEFAULT_HISTORY_LIMIT,
    MAX_HISTORY_LIMIT,
    ConsensusResults,
    FindingHistory,
    FindingsStore,
    FindingSummary,
    VoteReceipt,
    VoteRequest,
)
from workbench.core.project.store import Store
from workbench.core.protocols.findings.book import VoteType
from workbench.core.protocols.findings.config import DEFAULT_THRESHOLD, THRESHOLD_RANGE, Threshold
from workbench.services.mcp.wire import client_info_problem

log = logging.getLogger("workbench.mcp")
T = TypeVar("T")

SERVER_NAME = "resonance-consensus"
INSTRUCTIONS = (
    "Consensus Server of the Resonance Workbench. Agents vote on findings (claims under review): "
    "confirm = +1, challenge = -1, uncertain = 0, each weighted by a confidence in [0, 1]. "
    "score = sum(direction * confidence) / k over the agents whose latest vote is not uncertain; "
    "a finding is confirmed when score >= its threshold (default 0.6), challenged below it, and "
    "pending while no agent has a counted vote. An agent's later vote replaces its earlier one; "
    "every vote stays in the history. Use create_finding, then submit_vote from each agent, then "
    "get_consensus_results or get_challenged_findings."
)


# ----- inputs and outputs ----------------------------------------------------------------------
def _lower(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


def _id_text(value: object) -> object:
    """SPEC §11: an id carries no control character and is not made of invisible characters only;
    a blank one is left to the store, which says it must not be empty."""
    if isinstance(value, str) and value.strip():
        check_name(value)
    return value


def _context_bounds(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """A finding's context, bounded as everywhere (``limits.check_context``: depth, then size)."""
    if value is not None:
        check_context(value, "")
    return value


# The length comes before the validator, so it is the string's own maxLength (in the schema too).
FindingId = Annotated[str, Field(
    max_length=MAX_NAME_CHARS, description="The finding's id, as create_finding or list_findings gave it."),
    AfterValidator(_id_text)]
Agent = Annotated[str, Field(
    max_length=MAX_NAME_CHARS, description="The agent casting the vote (e.g. scout, auditor, dev). "
                                           "Its later vote on the same finding replaces this one."),
    AfterValidator(_id_text)]
VoteTypeArg = Annotated[VoteType, BeforeValidator(_lower),
                        Field(description="confirm (+1), challenge (-1) or uncertain (0: no influence).")]
Confidence = Annotated[float, Field(strict=True, ge=0, le=1,
                                    description="How sure the agent is, from 0.0 to 1.0.")]
Reason = Annotated[str, Field(max_length=MAX_RATIONALE_CHARS, description="One or two sentences: why this vote.")]
StatusArg = Annotated[Literal["all", "confirmed", "challenged", "pending"], BeforeValidator(_lower),
                      Field(description="Which findings: all, confirmed, challenged or pending.")]


class FindingList(BaseModel):
    """Findings in creation order, with their consensus."""

    model_config = ConfigDict(frozen=True)

    status: str
    count: int
    findings: list[FindingSummary]


# ----- store threads ---------------------------------------------------------------------------
class StoreThreads:
    """Runs store calls off the event loop on long-lived threads, each with its own connection.

    Reads and the rare other writes go to ``readers`` threads. Votes go to one writer thread that
    takes every vote waiting when it comes round and stores them in one transaction (a group
    commit, :meth:`FindingsStore.submit_votes`): twenty agents voting at once cost one fsync, not
    twenty, and each still gets its own answer. All threads start on the first call;
    :meth:`close` lets queued calls finish, then each thread closes its own connection and exits.
    """

    def __init__(self, findings: FindingsStore, readers: int = 3, max_batch: int = 64):
        self.findings = findings
        self.store = findings.store
        self.readers = readers
        self.max_batch = max_batch
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._votes: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False
        self.batches = 0  # group commits made (figures for the load test and the log)
        self.largest_batch = 0

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        return self._put(self._calls, fn)

    def submit_vote(self, request: VoteRequest) -> concurrent.futures.Future[VoteReceipt]:
        return self._put(self._votes, request)

    async def call(self, fn: Callable[[], T]) -> T:
        return await asyncio.wrap_future(self.submit(fn))

    async def vote(self, request: VoteRequest) -> VoteReceipt:
        return await asyncio.wrap_future(self.submit_vote(request))

    def _put(self, target: queue.SimpleQueue, item: object) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                raise WorkbenchError("The consensus server is shutting down.")
            if not self._threads:
                self._start(self._write_votes, "rwb-mcp-votes")
                for n in range(1, self.readers + 1):
                    self._start(self._run_calls, f"rwb-mcp-store-{n}")
            target.put((item, future))
        return future

    def _start(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=self._own_connection, args=(target,), name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _own_connection(self, loop: Callable[[], None]) -> None:
        try:
            loop()
        finally:
            self.store.close_connection()

    def _run_calls(self) -> None:
        while (item := self._calls.get()) is not None:
            fn, future = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # handed to the awaiting tool call
                    future.set_exception(exc)

    def _write_votes(self) -> None:
        stopping = False
        while not stopping:
            batch = []
            item = self._votes.get()
            while True:
                if item is None:
                    stopping = True
                elif item[1].set_running_or_notify_cancel():
                    batch.append(item)
                if stopping or len(batch) >= self.max_batch:
                    break
                try:
                    item = self._votes.get_nowait()
                except queue.Empty:
                    break
            if not batch:
                continue
            try:
                outcomes = self.findings.submit_votes([request for request, _ in batch])
            except BaseException as exc:  # the whole transaction failed: every caller hears it
                for _, future in batch:
                    future.set_exception(exc)
                continue
            self.batches += 1
            self.largest_batch = max(self.largest_batch, len(batch))
            for (_, future), outcome in zip(batch, outcomes):
                if isinstance(outcome, Exception):
                    future.set_exception(outcome)
                else:
                    future.set_result(outcome)

    def close(self, timeout: float = 10.0) -> bool:
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        if threads:
            self._votes.put(None)
            for _ in range(self.readers):
                self._calls.put(None)
        for thread in threads:
            thread.join(timeout)
        return not any(t.is_alive() for t in threads)


# ----- the server ------------------------------------------------------------------------------
class ConsensusServer(MCPServer):
    """The MCP server over one project. Close it (or use it as a context manager) when done."""

    def __init__(self, store: Store, *, transport: str = "in-process", threads: int = 3):
        super().__init__(SERVER_NAME, title="Resonance Workbench Consensus Server",
                         instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
        self.store = store
        self.findings = FindingsStore(store)
        self.threads = StoreThreads(self.findings, readers=threads)
        self.transport = transport
        # Called once per new MCP client (its clientInfo name and version) on its first tool call;
        # the HTTP server announces it on stderr for the GUI's "clients seen".
        self.on_client: Callable[[str, str | None], None] | None = None
        self._clients: set[tuple[str, str | None]] = set()  # at most MAX_LIST_ITEMS announced
        _register_tools(self)

    def close(self, timeout: float = 10.0) -> bool:
        return self.threads.close(timeout)

    async def run_checked_stdio(self) -> None:
        """``run_stdio_async`` with every line checked first (``stdio.py``). The SDK's ``Server``
        is only reachable as ``_lowlevel_server``; ``run_stdio_async`` itself uses it the same way."""
        from workbench.services.mcp.stdio import serve_checked_stdio

        await serve_checked_stdio(self._lowlevel_server)

    def __enter__(self) -> ConsensusServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None):
        """The SDK's call, with argument errors restated plainly (field: what is wrong), refused
        when the client's declared ``clientInfo`` breaks its bounds."""
        if context is not None:
            try:
                client = client_of(context)
            except ValueError as exc:
                raise ToolError(f"Error executing tool {name}: {exc}") from None
            if self.on_client is not None and client not in self._clients and len(self._clients) < MAX_LIST_ITEMS:
                self._clients.add(client)
                self.on_client(*client)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"Error executing tool {name}: {plain_errors(exc.__cause__)}") from None
            raise

    async def run_store(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on a store thread; a user-facing error becomes a tool error."""
        try:
            return await self.threads.call(fn)
        except WorkbenchError as exc:  # InputError and ProjectError speak plainly already
            raise ToolError(str(exc)) from None

    async def store_vote(self, request: VoteRequest) -> VoteReceipt:
        """Queue a vote for the next group commit and wait for its receipt."""
        try:
            return await self.threads.vote(request)
        except WorkbenchError as exc:
            raise ToolError(str(exc)) from None


def client_of(ctx: Context) -> tuple[str, str | None]:
    """The MCP client's declared name and version (``clientInfo``), or ``("unknown", None)``.
    ``ValueError`` (naming the member) when they break their bounds: the transports refuse such
    a client at ``initialize`` already; this covers a client in process."""
    try:
        params = ctx.session.client_params
    except (ValueError, AttributeError):
        params = None
    info = params.client_info if params is not None else None
    if info is None or not info.name:
        return "unknown", None
    problem = client_info_problem(info.model_dump(by_alias=True, exclude_none=True, mode="json"))
    if problem is not None:
        raise ValueError(f"clientInfo{problem}")
    return info.name, info.version


def _register_tools(server: ConsensusServer) -> None:
    findings = server.findings
    reading = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    writing = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                              open_world_hint=False)

    @server.tool(annotations=writing)
    async def submit_vote(finding_id: FindingId, agent: Agent, vote_type: VoteTypeArg,
                          confidence: Confidence, reason: Reason = "", ctx: Context = None) -> VoteReceipt:
        """Cast one agent's confidence-weighted vote on a finding and get its consensus right after.

        Every vote is kept; the agent's latest vote on the finding is the one that counts."""
        name, version = client_of(ctx)
        raw = json.dumps({"via": "mcp", "transport": server.transport, "tool": "submit_vote",
                          "client": {"name": name, "version": version},
                          "arguments": {"finding_id": finding_id, "agent": agent,
                                        "vote_type": vote_type.value, "confidence": confidence,
                                        "reason": reason}}, ensure_ascii=False)
        receipt = await server.store_vote(VoteRequest(
            finding_id, agent, vote_type.value, confidence, reason, client=name, raw=raw))
        r = receipt.result
        log.info("vote #%d on %s by %s via %s: %s %.3g -> %s (score %s)", receipt.vote.id, r.id,
                 receipt.vote.agent, name, vote_type.value, confidence, r.status.value,
                 "none" if r.consensus_score is None else f"{r.consensus_score:.4f}")
        return receipt

    @server.tool(annotations=reading)
    async def get_consensus_results(finding_id: FindingId) -> ConsensusResults:
        """A finding's consensus: score, status, k, and each agent's standing vote."""
        return await server.run_store(lambda: findings.results(finding_id))

    @server.tool(annotations=reading)
    async def get_challenged_findings() -> FindingList:
        """Every finding whose score is below its threshold, for review or re-research."""
        found = await server.run_store(findings.challenged)
        return FindingList(status="challenged", count=len(found), findings=found)

    @server.tool(annotations=writing)
    async def create_finding(
        claim: Annotated[str, Field(max_length=MAX_CLAIM_CHARS,
                                    description="The claim under review, in one or two sentences.")],
        context: Annotated[dict[str, Any] | None, AfterValidator(_context_bounds), Field(
            description="Anything that helps the voters judge it (sources, commands, links).")] = None,
        finding_id: Annotated[str | None, Field(max_length=MAX_NAME_CHARS,
            description="An id of your own; left out, one is made (f- and 10 hex digits). An id that "
                        "exists with the same claim is that finding; with another claim it is refused."),
            AfterValidator(_id_text)] = None,
        threshold: Annotated[Threshold | None, Field(
            description=f"This finding's threshold (default {DEFAULT_THRESHOLD:g}).")] = None,
        ctx: Context = None,
    ) -> FindingSummary:
        """Put a new finding up for review; it is pending until an agent casts a counted vote."""
        name, _version = client_of(ctx)
        summary = await server.run_store(lambda: findings.create_finding(
            claim, context, finding_id=finding_id, threshold=threshold, created_by=name))
        log.info("finding %s created via %s", summary.id, name)
        return summary

    @server.tool(annotations=reading)
    async def list_findings(status: StatusArg = "all") -> FindingList:
        """Findings in creation order with their consensus: all of them, or one status only."""
        found = await server.run_store(lambda: findings.list_findings(status))
        return FindingList(status=status, count=len(found), findings=found)

    @server.tool(annotations=reading)
    async def get_finding_history(
        finding_id: FindingId,
        limit: Annotated[int, Field(strict=True, ge=1, le=MAX_HISTORY_LIMIT, description=(
            "At most this many of the most recent votes (oldest first)."))] = DEFAULT_HISTORY_LIMIT,
    ) -> FindingHistory:
        """Every vote on a finding in the order it arrived (who, which client, when), with
        ``counted`` marking each agent's standing vote."""
        return await server.run_store(lambda: findings.history(finding_id, limit))


# ----- plain messages for argument errors ------------------------------------------------------
_PLAIN = {
    "missing": "is required",
    "string_type": "must be a string",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "dict_type": "must be an object",
    "bool_type": "must be true or false",
}


def plain_errors(exc: ValidationError) -> str:
    """``field: what is wrong`` for each error of an argument ValidationError, joined by '; '."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = [p for p in err.get("loc", ()) if not str(p).startswith("function-")]
        field = field_path(loc[:1]) if loc else ""
        kind = err.get("type", "")
        given = err.get("input")
        ctx = err.get("ctx") or {}
        if kind == "string_too_long" and isinstance(given, str):
            message = too_long(len(given), ctx.get("max_length", 0))
        elif kind == "value_error":  # our own validators: the message says it all
            message = str(err.get("msg", "is invalid")).removeprefix("Value error, ")
        elif kind in ("enum", "literal_error"):
            message = f"must be one of {ctx.get('expected', '').replace(' or ', ', ')}"
        elif kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
            low, high = _RANGES.get(field, (None, None))
            message = (f"must be between {low} and {high}" if low is not None
                       else err.get("msg", "is out of range").lower())
        else:
            message = _PLAIN.get(kind, err.get("msg", "is invalid"))
        if kind not in ("missing", "string_too_long", "value_error"):
            message += f", not {_shown(given)}"
        parts.append(f"{field}: {message}" if field else message)
    return "; ".join(parts)


_RANGES = {"confidence": (0, 1), "threshold": THRESHOLD_RANGE, "limit": (1, MAX_HISTORY_LIMIT)}


def _shown(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:40] + "…")
    if isinstance(value, (int, float)):
        return repr(value)
    return {dict: "an object", list: "a list"}.get(type(value), type(value).__name__)


# ----- the stdio transport ---------------------------------------------------------------------
def serve_stdio(store: Store) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin."""
    import anyio

    with ConsensusServer(store, transport="stdio") as server:
        log.info("serving %s over stdio", store.path)
        anyio.run(server.run_checked_stdio)
        log.info("stdio client closed; stopping")
