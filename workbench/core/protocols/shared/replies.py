"""Reading a model's structured reply: one place for the repairs every protocol allows.

The tolerant reader (for a server that did not honour the schema sent, or was sent none):

- :func:`balanced_objects`: the JSON objects written inside prose, found by balancing braces
  while respecting strings and their escapes (a ``}`` inside a string does not close anything);
- raw control characters (a newline, a tab) inside a string are accepted
  (``json.loads(strict=False)``): a small model often writes them;
- :func:`leading_verdict`: a reply that starts with YES or NO (the paper's plain elicitation).

SPEC §1 "Reading a reply": before any lenient parsing (a JSON object inside prose, a leading
YES or NO), :func:`own_reply` removes from the reply everything between fence tokens (the
call's own, and any block in the workbench's fence format, see :mod:`.fencing`) and every piece
of the prompt's own template echoed back (instruction lines, ``<one sentence>`` placeholders,
``"YES" or "NO"``).

SPEC §11 "a vote is read only from the voter's own words": :func:`own_words` also removes what
the voter quotes without fence lines: every line starting with ``>`` and every passage of
:data:`QUOTE_MIN_CHARS` or more characters that also appears in a text under vote
(:func:`quoted_passages`). A JSON object the voter wrote is kept whole, even where it repeats the
artifact's words (an author cannot void votes by writing the vote's form); an object wholly
inside a quote goes, unless it is all the reply holds. :func:`requested_vote` then reads the
JSON vote asked for among what is left: votes that agree are one vote, votes that disagree are
none. A verdict quoted from an artifact is therefore never read as the voter's, and a quote
never voids the voter's own vote.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from workbench.core.protocols.shared.fencing import closing, opening, without_fenced

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"<[^<>\n]{1,80}>")
_BLOCKQUOTE = re.compile(r"(?m)^[^\S\n]*>[^\n]*")  # a line whose first non-blank character is ">"
_SPACES = re.compile(r"\s+")
_LEADING = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
_WHOLE_OBJECT = re.compile(r"\s*(?:```(?:json)?\s*)?(\{.*\})\s*(?:```)?\s*", re.IGNORECASE | re.DOTALL)
QUOTE_MIN_CHARS = 20  # SPEC §11: a passage this long that also appears in the text under vote is quoted
# Below this many (reply windows x source characters), substring searches beat the window set.
_SEARCH_BUDGET = 2_000_000
V = TypeVar("V")


def strip_fence(text: str) -> str:
    """The reply without a surrounding ```/```json code fence (models often add one)."""
    return _FENCE.sub("", text.strip())


def template_pieces(*template: str) -> tuple[str, ...]:
    """What of a prompt template a reply may echo: each string, each of its lines and sentences,
    and each ``<placeholder>`` in it; longest first, so a whole line goes before its parts."""
    pieces: set[str] = set()
    for text in template:
        for line in text.splitlines():
            line = line.strip()
            if line:
                pieces.add(line)
                pieces.update(s.strip() for s in re.split(r"(?<=[.?!])\s+", line) if len(s.strip()) > 3)
        pieces.update(_PLACEHOLDER.findall(text))
    return tuple(sorted(pieces, key=lambda p: (-len(p), p)))


def own_reply(text: str, fence: str | None = None, template: Iterable[str] = ()) -> str:
    """The model's own words: ``text`` without its fenced spans (``fence`` and any name in the
    fence format) and without the template ``pieces`` it echoes (see :func:`template_pieces`)."""
    out = without_fenced(text, [fence] if fence else [])
    for piece in template:
        if piece:
            out = re.sub(re.escape(piece), " ", out, flags=re.IGNORECASE)
    return out


def said(text: str, fence: str | None = None, template: Iterable[str] = ()) -> str:
    """What the voter wrote outside its marked quotes: :func:`own_reply` (fenced blocks and
    template echoes gone), without the lines that start with ``>``. Its unmarked quotes of the
    text under vote are still in it (see :func:`unquoted`)."""
    return own_reply(_BLOCKQUOTE.sub(" ", without_fenced(text, [fence] if fence else [])), None, template)


def own_words(text: str, fence: str | None = None, template: Iterable[str] = (),
              quoted: Sequence[str] = ()) -> str:
    """The voter's own words (SPEC §11): :func:`said`, then :func:`unquoted` against the texts
    under vote ``quoted``."""
    return unquoted(said(text, fence, template), quoted)


def unquoted(text: str, quoted: Sequence[str]) -> str:
    """``text`` with the passages it shares with ``quoted`` (:func:`quoted_passages`) blanked out,
    character for character, so an offset in the result is the same offset in ``text``. A JSON
    object the voter wrote stays whole even where it repeats a text under vote (an author cannot
    void votes by writing the vote's form in an artifact): only an object wholly inside a quoted
    passage is blanked with it, unless the object is all the text holds (the reply is the JSON
    asked for and nothing else: there is nothing around it that a quote is set apart from)."""
    passages = quoted_passages(text, quoted)
    if not passages:
        return text
    starts = [s for s, _ in passages]
    whole = _WHOLE_OBJECT.fullmatch(text)
    own_objects = []
    for start, end in _object_spans(text):
        first = max(bisect_right(starts, start) - 1, 0)
        near = [(s, e) for s, e in passages[first:bisect_left(starts, end)] if s < end and e > start]
        inside = bool(near) and near[0][0] <= start and end <= near[0][1]
        if whole and whole.span(1) == (start, end):
            inside = False
        if near and not inside and isinstance(_parsed(text[start:end]), dict):
            own_objects.append((start, end))
    return _blank(text, _minus(passages, own_objects))


def quoted_passages(text: str, sources: Sequence[str]) -> list[tuple[int, int]]:
    """The ``[start, end)`` spans of ``text`` (sorted, merged) made of passages of
    :data:`QUOTE_MIN_CHARS` or more characters that also appear in one of ``sources``, compared
    case-insensitively with each run of whitespace as one space.

    The union of such passages is exactly the union of the 20-character windows of ``text``
    that appear in a source (each longer passage is made of its windows). So the cost is one
    pass over each text: a set of ``text``'s windows (``text`` is a reply, at most
    MAX_REPLY_CHARS), each source's windows looked up in it, then the matching windows marked.
    A short reply's few windows are instead searched for in the source (a substring search in C,
    cheaper than slicing every window of a long source).
    """
    n = QUOTE_MIN_CHARS
    norm, origin = _normalised(text)
    if len(norm) < n or not any(sources):
        return []
    windows = {norm[i:i + n] for i in range(len(norm) - n + 1)}
    shared: set[str] = set()
    half = n // 2
    for source in sources:
        flat = " ".join(_lower(source).split())
        if len(windows) * len(flat) <= _SEARCH_BUDGET:  # a short reply (a vote): search for its windows
            # Any shared passage of n characters holds one of the reply's n/2-character pieces
            # that start at a multiple of n/2: when none is in the source, nothing is shared.
            if any(norm[i:i + half] in flat for i in range(0, len(norm) - half + 1, half)):
                shared.update(w for w in windows if w in flat)
        else:
            shared |= windows.intersection(flat[i:i + n] for i in range(len(flat) - n + 1))
    spans: list[tuple[int, int]] = []
    if not shared:
        return spans
    for i in range(len(norm) - n + 1):
        if norm[i:i + n] in shared:
            start, end = origin[i], origin[i + n - 1] + 1
            if spans and start <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
            else:
                spans.append((start, end))
    return spans


def _lower(text: str) -> str:
    """``text`` in lower case, one character for one (a few, such as "İ", lower to two: those
    stay as written, so offsets still match)."""
    low = text.lower()
    return low if len(low) == len(text) else "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _normalised(text: str) -> tuple[str, list[int]]:
    """``text`` lower-cased with each run of whitespace as one space, and for each of its
    characters the offset in ``text`` it comes from."""
    low = _lower(text)
    parts: list[str] = []
    origin: list[int] = []
    pos = 0
    for m in _SPACES.finditer(low):
        parts += [low[pos:m.start()], " "]
        origin.extend(range(pos, m.start() + 1))
        pos = m.end()
    parts.append(low[pos:])
    origin.extend(range(pos, len(low)))
    return "".join(parts), origin


def _minus(spans: list[tuple[int, int]], holes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` without the parts that lie in ``holes`` (both sorted, neither overlapping itself)."""
    out, i = [], 0
    for s, e in spans:
        while i < len(holes) and holes[i][1] <= s:
            i += 1
        j = i
        while j < len(holes) and holes[j][0] < e:
            if holes[j][0] > s:
                out.append((s, holes[j][0]))
            s = max(s, holes[j][1])
            j += 1
        if s < e:
            out.append((s, e))
    return out


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span's characters replaced by spaces (line breaks kept)."""
    parts, pos = [], 0
    for start, end in spans:
        parts += [text[pos:start], re.sub(r"[^\n]", " ", text[start:end])]
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _parsed(span: str) -> object:
    try:
        return loads(span)
    except json.JSONDecodeError:
        return None


def fenced_texts(messages: Iterable[dict], fence: str | None) -> tuple[str, ...]:
    """The texts a call showed inside its fence ``fence``, in order, as the voter saw them
    (escaped): what a vote on them is "under vote" (SPEC §11). Plain string searches: a pattern
    built around each call's fresh name would be compiled anew for every call."""
    if not isinstance(fence, str) or not fence:
        return ()
    head, tail = opening(fence) + "\n", "\n" + closing(fence)
    found = []
    for message in messages:
        content, pos = str(message.get("content") or ""), 0
        while (start := content.find(head, pos)) != -1:
            end = content.find(tail, start + len(head) - 1)
            if end == -1:
                break
            found.append(content[start + len(head):end] if end >= start + len(head) else "")
            pos = end + len(tail)
    return tuple(found)


def balanced_objects(text: str) -> list[str]:
    """The outermost ``{...}`` spans of ``text`` whose braces balance, in order. Braces inside
    JSON strings (with their backslash escapes) are not counted; an unclosed object is not one."""
    return [text[start:end] for start, end in _object_spans(text)]


def _object_spans(text: str) -> list[tuple[int, int]]:
    """The ``[start, end)`` offsets of :func:`balanced_objects`."""
    spans, depth, start, in_string, escaped = [], 0, -1, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"' and depth > 0:
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    return spans


def loads(text: str) -> object:
    """``json.loads`` that accepts raw control characters inside strings."""
    return json.loads(text, strict=False)


def embedded_objects(text: str) -> list[dict]:
    """The JSON objects written inside prose, outermost only, in order (see :func:`balanced_objects`)."""
    found = []
    for span in balanced_objects(text):
        try:
            value = loads(span)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def leading_verdict(text: str) -> tuple[str | None, str]:
    """``("YES" | "NO", the rest)`` for a reply that starts with YES or NO, else ``(None, text)``."""
    verdict, end = verdict_at_start(text)
    return (verdict, text[end:].strip()) if verdict else (None, text)


def verdict_at_start(text: str) -> tuple[str | None, int]:
    """``("YES" | "NO", where it ends)`` for a text that starts with YES or NO (after any
    non-word characters), else ``(None, 0)``."""
    match = _LEADING.match(text)
    return (match.group(1).upper(), match.end()) if match else (None, 0)


def json_object(text: str, fence: str | None = None, template: Iterable[str] = (),
                quoted: Sequence[str] = ()) -> tuple[dict | None, str | None]:
    """``(object, None)`` for a reply that is a JSON object, or whose own words (see
    :func:`own_words`) hold one JSON object inside prose (the same object written twice counts
    once); else ``(None, why not)``. Two different objects are ambiguous: neither is read. (A
    vote is read with :func:`requested_vote`, which passes over objects that are no vote.)"""
    body = strip_fence(own_words(text, fence, template, quoted))
    try:
        data = loads(body)
    except json.JSONDecodeError as exc:
        found: list[dict] = []
        for obj in embedded_objects(body):
            if obj not in found:
                found.append(obj)
        if len(found) == 1:
            return found[0], None
        if len(found) > 1:
            return None, f"reply holds {len(found)} JSON objects; which one is the answer is unclear"
        return None, f"reply is not valid JSON: {exc.msg}"
    if not isinstance(data, dict):
        return None, "reply is not a JSON object"
    return data, None


@dataclass(frozen=True)
class JsonVote(Generic[V]):
    """What :func:`requested_vote` read: the vote, or why there is none."""

    vote: V | None = None
    problem: str | None = None  # why no vote was read
    ambiguous: bool = False  # JSON votes that disagree: no other reading may stand in for them
    held_json: bool = True  # False: no JSON object at all, and the reply does not begin as one


def requested_vote(own: str, read: Callable[[dict], tuple[V | None, str]],
                   same: Callable[[V], Hashable]) -> JsonVote[V]:
    """The JSON vote asked for, among the voter's own words ``own`` (see :func:`own_words`): the
    reply as one JSON object, or the objects inside its prose. ``read(object)`` gives
    ``(vote, "")`` or ``(None, why)``; an object that is no valid vote is passed over. Valid votes
    that are the ``same`` are one vote (the first is kept); votes that differ are ambiguous."""
    body = strip_fence(own.strip())
    try:
        data, problem = loads(body), "reply is not a JSON object"
    except json.JSONDecodeError as exc:
        data, problem = None, f"reply is not valid JSON: {exc.msg}"
    objects = [data] if isinstance(data, dict) else embedded_objects(body)  # a list around it, prose...
    if not objects:
        return JsonVote(problem=problem, held_json=body.startswith("{"))
    votes, problems = [], []
    for obj in objects:
        vote, why = read(obj)
        if vote is None:
            problems.append(why)
        elif same(vote) not in [same(v) for v in votes]:
            votes.append(vote)
    if len(votes) == 1:
        return JsonVote(votes[0])
    if votes:
        return JsonVote(problem=f"reply holds {len(votes)} JSON votes that disagree; which one is the answer "
                                "is unclear", ambiguous=True)
    return JsonVote(problem=problems[0])


def validation_problem(exc: Exception) -> str:
    """A pydantic ``ValidationError`` as one line: ``field: message``."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    first = errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    msg = first["msg"].removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg
