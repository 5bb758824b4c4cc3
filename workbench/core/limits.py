"""Every size limit of the workbench, in one place (docs/limits.md is the table: value, why, where).

An input that breaks a limit is refused before any work is done on it, with an
:class:`~workbench.core.errors.InputError` that names the field and both sizes::

    query: is too long (10,485,760 characters; at most 20,000)
    votes: has too many items (150,000; at most 100,000)
    seed: must be a whole number from 0 to 9,223,372,036,854,775,807, got 1208925819614629174706176

The values are chosen so that the largest input a command accepts costs the workbench itself
at most about 30 s and 1 GB (SPEC §6 "Limits and time bounds"; waiting on a model does not
count): ``tests/core/test_limits.py`` runs an input just under each limit and one just over.

The one input that is never refused is a model's reply: a paid reply is the only record of what
the model said, so a reply longer than :data:`MAX_REPLY_CHARS` is kept, cut to that length, with a
note of its full length and digest (:func:`clip_reply`).

Standard library only: the config models, the protocol engines, the importers and the commands
all read their limits from here.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sized

from workbench.core.errors import InputError

# ── input files ──────────────────────────────────────────────────────────────────────────────
MAX_INPUT_BYTES = 32 * 1024 * 1024  # any file (or stdin) a command reads: configs, classify inputs, ARM traces, replies
MAX_JSON_DEPTH = 64  # nesting of arrays and objects in any JSON (or YAML) input
MAX_JSON_NODES = 10_000_000  # values in one JSON (or YAML) document, aliases counted each time

# ── texts, in characters ─────────────────────────────────────────────────────────────────────
MAX_QUERY_CHARS = 20_000  # a run's query, a CONS question: sent in every prompt of the run
MAX_NAME_CHARS = 200  # ids and names: agents, clusters, providers, options, findings, questions, roles
MAX_PERSONA_CHARS = 20_000  # an agent's persona: sent in each of its prompts
MAX_CLAIM_CHARS = 20_000  # a finding's claim
MAX_RATIONALE_CHARS = 20_000  # a CONS rationale, a findings vote's reason, an evidence field, a conflict position
MAX_NOTES_CHARS = 100_000  # free text never sent to a model (notes, labels are names)
MAX_URL_CHARS = 2_048  # api_base
MAX_REPLY_CHARS = 100_000  # a model's reply as stored and read by the protocol; longer is cut (clip_reply)
MAX_ARM_TEXT_CHARS = 100_000  # any string in an ARM trace file (claim, notes, raw_reasoning_attempt...)
MAX_ECHO_TEXT_CHARS = MAX_REPLY_CHARS  # a reply or an artifact that rwb echo reads

# ── list lengths ─────────────────────────────────────────────────────────────────────────────
MAX_CLUSTERS = 100  # clusters of a panel (run or rwb classify rcp)
MAX_RUN_AGENTS = 50  # agents of a run's panel: an RCP round makes n(n-1) vote calls
MAX_CLASSIFY_AGENTS = 1_000  # agents of an rwb classify rcp panel
MAX_ARTIFACTS = 100_000  # artifacts of an rwb classify rcp input
MAX_VOTE_CELLS = 5_000_000  # artifacts x agents of an rwb classify rcp input (the vote matrix)
MAX_FINDINGS = 10_000  # findings of an rwb classify findings input or a findings run
MAX_FINDING_VOTES = 100_000  # votes over all findings of one input
MAX_BALLOTS = 100_000  # CONS ballots of one question
MAX_OPTIONS = 100  # CONS options of one question
MAX_EVIDENCE = 100  # evidence items of one CONS ballot
MAX_SUPPLIED_CONFLICTS = 1_000  # conflicts given with a CONS input
MAX_PROVIDERS = 50  # providers of a run configuration
MAX_LIST_ITEMS = 1_000  # any other list of short texts (echo decisions, tiers, ARM flags/assumptions...)
MAX_ARM_ROLES = 16  # agent traces in one round of an ARM file
MAX_BATCH_QUESTIONS = 1_000
MAX_BATCH_MIXES = 100
MAX_BATCH_RUNS = 10_000  # questions x mixes x replicates
MAX_STUDY_ARMS = 100  # arms of a study file: each compared with the baseline, every metric
MAX_STUDY_REPLICATES = 1_000  # replicates of a study (seeds base seed .. base seed + replicates - 1)
MAX_STUDY_RUNS = 100_000  # arms x items x replicates of a study (each a run or a re-classification)
MAX_PATCH_OPS = 1_000  # operations of one arm's JSON Patch
MAX_STUDY_TAGS = 50  # tags of one arm

# ── numbers ──────────────────────────────────────────────────────────────────────────────────
SEED_MIN, SEED_MAX = 0, 2**63 - 1  # a seed is stored as SQLite INTEGER (signed 64-bit)
MAX_ROUNDS = 100  # CONS challenge rounds, echo turns between checks are counted apart
MAX_ATTEMPTS = 10  # ARM FAP re-queue attempts
MAX_TOKEN_BUDGET = 1_000_000  # an output-token budget (ARM budgets)
MAX_CONCURRENCY = 256
MAX_RPM = 1_000_000
MAX_TIMEOUT_S = 3_600.0
MAX_OUTPUT_TOKENS = 131_072  # the largest output cap accepted (no model writes more in one reply)
MAX_RETRIES = 20
MAX_WAIT_S = 86_400.0  # a provider's max_wait_s: how long a call waits out 429s (a day: a daily quota)
MAX_BATCH_POLL_S = 3_600.0  # how rarely a submitted provider batch may be polled
MAX_ECHO_INTERVAL = 10_000
MAX_COUNT = 2**63 - 1  # any other whole number that may be stored (SQLite INTEGER)

# ── aggregation bounds (not input limits: they keep a result's size linear in its input) ────
MAX_CONFLICT_POSITIONS = MAX_BALLOTS  # positions over all CONS accept-set conflicts (pairs of groups)
MAX_NEAR_DUPLICATE_PAIRS = 1_000  # distinct rationales compared pair by pair in the near-duplicate test


# ── messages ─────────────────────────────────────────────────────────────────────────────────
def too_long(length: int, limit: int, unit: str = "characters") -> str:
    return f"is too long ({length:,} {unit}; at most {limit:,})"


def too_many(count: int, limit: int, what: str = "items") -> str:
    return f"has too many {what} ({count:,}; at most {limit:,})"


def out_of_range(value: object, low: int, high: int) -> str:
    shown = str(value) if len(str(value)) <= 60 else str(value)[:59] + "…"
    return f"must be a whole number from {low:,} to {high:,}, got {shown}"


# ── checks (each raises an InputError naming ``field``) ──────────────────────────────────────
def check_text(value: object, limit: int, field: str) -> None:
    """A string longer than ``limit`` characters is refused; anything else passes (typed elsewhere)."""
    if isinstance(value, str) and len(value) > limit:
        raise InputError(field, too_long(len(value), limit))


def check_count(items: object, limit: int, field: str, what: str = "items") -> None:
    """A list (or object) with more than ``limit`` entries is refused."""
    if isinstance(items, Sized) and not isinstance(items, (str, bytes)) and len(items) > limit:
        raise InputError(field, too_many(len(items), limit, what))


def check_bytes(size: int, field: str, limit: int = MAX_INPUT_BYTES, unit: str = "bytes") -> None:
    """An input file (or text) of more than ``limit`` bytes is refused before it is parsed."""
    if size > limit:
        raise InputError(field, too_long(size, limit, unit))


def check_seed(value: object, field: str = "seed") -> int:
    """A seed: a whole number (not a boolean) in [SEED_MIN, SEED_MAX]."""
    if isinstance(value, bool) or not isinstance(value, int) or not SEED_MIN <= value <= SEED_MAX:
        raise InputError(field, out_of_range(value, SEED_MIN, SEED_MAX))
    return value


def json_shape(value: object, node_limit: int = 0) -> tuple[int, int]:
    """(depth, nodes) of a JSON value: how deeply arrays and objects nest (a scalar is 0) and how
    many values it holds, without recursion. With ``node_limit``, counting stops past it (a YAML
    document whose aliases repeat one list a billion times stops early)."""
    deepest, nodes, stack = 0, 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if node_limit and nodes > node_limit:
            break
        if isinstance(node, dict):
            children: Iterable[object] = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest, nodes


def check_json(value: object, field: str, *, depth: int = MAX_JSON_DEPTH, nodes: int = MAX_JSON_NODES) -> None:
    """A decoded JSON (or YAML) document nests at most ``depth`` deep and holds at most ``nodes`` values."""
    found_depth, found_nodes = json_shape(value, nodes)
    if found_nodes > nodes:
        raise InputError(field, f"holds too many values (more than {nodes:,})")
    if found_depth > depth:
        raise InputError(field, f"nests too deeply ({found_depth:,} levels of arrays and objects; at most {depth:,})")


def decode_json(text: str, field: str) -> object:
    """``json.loads(text)`` within the limits: size, depth and values. A syntax error is left to
    the caller (``json.JSONDecodeError``), which words it for its own kind of file."""
    import json

    check_bytes(len(text), field, unit="characters")
    try:
        value = json.loads(text)
    except RecursionError:
        raise InputError(field, f"nests too deeply (more than {MAX_JSON_DEPTH:,} levels of arrays and objects)") from None
    check_json(value, field)
    return value


# ── replies: kept, never refused ─────────────────────────────────────────────────────────────
def clip_reply(text: str | None, limit: int = MAX_REPLY_CHARS) -> tuple[str | None, dict | None]:
    """A model reply cut to ``limit`` characters for storage and parsing, and the note saying so.

    The note (``None`` when nothing was cut) records the full length and the SHA-256 of the full
    reply's UTF-8 bytes, so the record says exactly what was dropped.
    """
    if text is None or len(text) <= limit:
        return text, None
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    note = {"truncated": True, "original_chars": len(text), "kept_chars": limit, "sha256": digest,
            "note": f"reply cut for storage: {len(text):,} characters, the first {limit:,} kept "
                    "(docs/limits.md)"}
    return text[:limit], note


# ── names and ids: no control characters (SPEC §11) ──────────────────────────────────────────
# A name is shown in terminals, logs, tables and the GUI, and some are read back as keys: one
# that carries a newline forges log lines, an ESC rewrites the terminal, a bidi override makes
# "abc" read as "cba". Refused where they are ids (check_name); escaped where text is shown
# (printable). docs/limits.md "Names and ids" is the table.
# Refused in a name: C0 controls, DEL and C1 controls; the bidi embeddings, overrides and isolates
# and the implicit marks (LRM, RLM, ALM); the line and paragraph separators (a newline to some
# terminals and to JavaScript); the BOM; lone surrogates (not encodable as UTF-8: a write to
# stdout would raise). CONTROLS_ABOVE_C0 is the set without C0, which JSON escapes by itself.
CONTROLS_ABOVE_C0 = "\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff"
_CONTROL_RE = re.compile(f"[\x00-\x1f{CONTROLS_ABOVE_C0}]")
# printable(..., keep_lines=True): a newline and a tab lay text out; every other control is escaped.
_CONTROL_BUT_LINES_RE = re.compile(f"[\x00-\x08\x0b-\x1f{CONTROLS_ABOVE_C0}]")
# Characters that show nothing on their own: with only these, a name looks empty or like another.
_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180e\u2800\u3164\uffa0") | {chr(c) for c in range(0xFE00, 0xFE10)}


def _is_invisible(char: str) -> bool:
    return char.isspace() or char in _INVISIBLE or unicodedata.category(char) == "Cf"


def check_name(value: str) -> str:
    """``value`` if it may serve as an id or a name, else ``ValueError`` (pydantic words it with the
    field's path): no C0 or C1 control, DEL, bidi control, line or paragraph separator, BOM or lone
    surrogate, and at least one visible character. The position is counted from 1, e.g.
    ``must not contain control characters (U+000A at character 3)``."""
    found = _CONTROL_RE.search(value)
    if found:
        raise ValueError(f"must not contain control characters (U+{ord(found.group()):04X} at character {found.start() + 1})")
    if value and all(_is_invisible(char) for char in value):
        raise ValueError("must contain a visible character (it has only spaces or invisible characters)")
    return value


def _escape(found: re.Match) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, keep_lines: bool = False) -> str:
    """``text`` safe to show on a terminal or in a log line: every character ``check_name`` refuses
    is written as a Python-style escape (ESC as ``\\x1b``, U+202E as ``\\u202e``), so untrusted text
    can neither move the cursor, recolour, reorder, nor start a new line. With ``keep_lines``, a
    newline and a tab are kept (a Markdown or CSV document on stdout keeps its layout)."""
    return (_CONTROL_BUT_LINES_RE if keep_lines else _CONTROL_RE).sub(_escape, text)


# ── bounds on configuration fields that had none (SPEC §11: every field from outside) ────────
MAX_PARAMS = 100  # keys of an agent's ``params`` (the simulated persona has 13)
MAX_CONTEXT_CHARS = 20_000  # a finding's ``context``, as JSON: sent to every voter, like its claim
MAX_CONTEXT_DEPTH = 8  # nesting of a finding's ``context`` (metadata, not a document)


def check_context(value: object, field: str) -> None:
    """A finding's ``context``: at most :data:`MAX_CONTEXT_DEPTH` levels deep and at most
    :data:`MAX_CONTEXT_CHARS` characters as JSON (depth first, so a deep value is never serialised)."""
    import json

    depth, _ = json_shape(value, MAX_JSON_NODES)
    if depth > MAX_CONTEXT_DEPTH:
        raise InputError(field, f"nests too deeply ({depth:,} levels of arrays and objects; at most {MAX_CONTEXT_DEPTH:,})")
    size = len(json.dumps(value, ensure_ascii=False, default=str))
    if size > MAX_CONTEXT_CHARS:
        raise InputError(field, too_long(size, MAX_CONTEXT_CHARS, "characters of JSON"))


# ── the MCP server (rwb serve-mcp; docs/mcp.md "Untrusted clients") ──────────────────────────
MAX_MCP_MESSAGE_BYTES = 1_048_576  # one JSON-RPC message (a stdio line, an HTTP body): the largest valid call is ~150 kB
MAX_MCP_INITIALIZE_BYTES = 65_536  # an initialize request's params, as JSON: the SDK keeps them for the session's life
MAX_CLIENT_INFO_BYTES = 4_096  # a client's clientInfo, as JSON (name, version, title, description, icons...)
MAX_MCP_SESSIONS = 256  # Streamable HTTP sessions held at once (SPEC §11)
MCP_SESSION_IDLE_S = 300.0  # an HTTP session with no request in flight for this long is closed (SPEC §11)
