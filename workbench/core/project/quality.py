"""Reply quality flags (issue 19, "Honest validity"): notes for the reader, computed on read.

A flag never changes a vote, a ballot or a result: it says that a reply deserves a second look.

- ``template_echo``: the reply repeats the prompt's own template text. Only the *template* part of
  the stored request counts: its system and user messages with every fenced span removed (the
  artifacts, findings and traces shown to the agent, see ``protocols.shared.fencing``) and with
  the texts the user wrote removed too (the run's question, the agents' personas, the options).
  Quoting the artifact under review, or restating the question, is normal and never flagged.
  Two signs: a placeholder of the template (``<one sentence>``, ``<why, required>``) or a
  descriptive string value of the template's JSON example (``"your conclusion, in one or two
  sentences"``) copied into the reply; or a run of :data:`ECHO_WORDS` or more consecutive words
  of the instructions copied verbatim. Quoted text in the template is not instructions (an Echo
  marker is quoted so that the model repeats it), so no word run is counted across or inside it.
- ``cut_at_cap``: the reply stopped at the token cap: the provider's stop reason is ``length``
  (in the reply's stored metadata, or the raw body's ``finish_reason``/``done_reason``), or the
  completion tokens reached the ``max_tokens`` the stored request sent.
- ``rubber_stamp``: a voter whose valid votes in a run are all the same over
  :data:`RUBBER_STAMP_MIN` or more items: RCP artifacts (YES or NO), findings (each agent's latest
  vote type) or CONS ballots (the same option and vote every time).

Fast path: a run's flags (:func:`run_quality`) are cached per project file and run, keyed by a
cheap signature of that run's rows (row counts and highest ids), so a 20,000-call run is scanned
once, and a live run only invalidates itself. A page of the Trace Inspector's list reads only its
own rows (:func:`flags_for_records`). Template n-grams are cached per distinct template text.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from workbench.core.project import _sql
from workbench.core.project.store import Store
from workbench.core.protocols.shared.fencing import fence_spans, without_fenced

FLAGS = ("template_echo", "cut_at_cap", "rubber_stamp")
LABELS = {"template_echo": "template echo", "cut_at_cap": "cut at cap", "rubber_stamp": "rubber stamp"}
SHORT = {"template_echo": "echo", "cut_at_cap": "cut", "rubber_stamp": "stamp"}  # a narrow list cell
GLYPH = "⚑"
EXPLAIN = {
    "template_echo": "The reply repeats the prompt's own template text instead of answering in its own words.",
    "cut_at_cap": "The reply was cut off at the output token cap, so it may be incomplete.",
    "rubber_stamp": "This voter gave the same vote to every item of the run: it may not have read them.",
}
ECHO_WORDS = 8  # a verbatim run of this many words of the instructions is an echo
RUBBER_STAMP_MIN = 5  # items a voter must have voted on, all alike, to be a rubber stamp
_WORD = re.compile(r"[A-Za-z0-9_]+(?:['’][A-Za-z]+)?")
_PLACEHOLDER = re.compile(r"(?<!<)<(?!<)[^<>\n]{1,80}(?<!>)>(?!>)")
# A string value of the template's JSON example ("claim": "your conclusion, ..."; ["each ..."]).
_JSON_VALUE = re.compile(r'(?:"\w+"\s*:\s*|\[\s*)"([^"\n]{8,200})"')
_QUOTE = re.compile(r'"[^"\n]*"')  # quoted text: what the prompt asks to repeat (a marker), or JSON
_CACHE_RUNS = 256


@dataclass(frozen=True)
class Flag:
    code: str  # one of FLAGS
    detail: str  # what was found in this record

    @property
    def label(self) -> str:
        return LABELS.get(self.code, self.code)

    @property
    def explanation(self) -> str:
        return f"{EXPLAIN.get(self.code, '')} {self.detail}".strip()

    def to_dict(self) -> dict:
        return {"flag": self.code, "detail": self.detail}


# ----- pure: one reply --------------------------------------------------------------------------------
def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def template_parts(request: dict, user_texts: Iterable[str] = ()) -> tuple[str, ...]:
    """The template part of a stored request: its system and user messages (never a reply of the
    model sent back to it), without fenced spans and without the texts the user wrote (the
    question, personas, options), as separate pieces so no word run spans a cut."""
    fence = (request.get("fence") or {}).get("delimiter") if isinstance(request.get("fence"), dict) else None
    cut = sorted({t.strip() for t in user_texts if isinstance(t, str) and len(t.strip()) > 3}, key=len, reverse=True)
    pieces: list[str] = []
    for m in request.get("messages") or []:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user") or not isinstance(m.get("content"), str):
            continue
        text, pos, parts = m["content"], 0, []
        for start, end in fence_spans(text, [fence] if fence else []):
            parts.append(text[pos:start])
            pos = end
        parts.append(text[pos:])
        text = "\x00".join(parts)
        for t in cut:
            text = text.replace(t, "\x00")
        pieces += [p for p in text.split("\x00") if p.strip()]
    return tuple(pieces)


@lru_cache(maxsize=512)
def _template_index(pieces: tuple[str, ...]) -> tuple[frozenset, tuple[str, ...]]:
    """The template's word n-grams (n = ECHO_WORDS) and its placeholders and descriptive strings."""
    grams: set[tuple[str, ...]] = set()
    marks: set[str] = set()
    for piece in pieces:
        # Word runs of the instructions, never across quoted text: a quoted string is either
        # something the prompt asks the model to repeat (an Echo marker) or the JSON example.
        for part in _QUOTE.split(piece):
            words = _words(part)
            grams.update(tuple(words[i:i + ECHO_WORDS]) for i in range(len(words) - ECHO_WORDS + 1))
        marks.update(_PLACEHOLDER.findall(piece))
        # A string value of the template's JSON example that describes what to write
        # ("your conclusion, in one or two sentences"): three words or more.
        marks.update(f'"{q}"' for q in _JSON_VALUE.findall(piece) if len(_words(q)) >= 3)
    return frozenset(grams), tuple(sorted(marks, key=len, reverse=True))


def template_echo(request: dict, reply: str | None, user_texts: Iterable[str] = ()) -> str | None:
    """Why ``reply`` echoes its prompt's template, or None. What lies between fence tokens in the
    reply (a quoted artifact) is not the model's own words and is left out first."""
    if not reply or not isinstance(request, dict):
        return None
    pieces = template_parts(request, tuple(user_texts))
    if not pieces:
        return None
    grams, marks = _template_index(pieces)
    fence = (request.get("fence") or {}).get("delimiter") if isinstance(request.get("fence"), dict) else None
    own = without_fenced(reply, [fence] if fence else [])
    low = own.lower()
    for mark in marks:
        if mark.lower() in low:
            return f"It copies the template's placeholder {mark}."
    words = _words(own)
    best, run, at = 0, 0, 0
    for i in range(len(words) - ECHO_WORDS + 1):
        if tuple(words[i:i + ECHO_WORDS]) in grams:
            run = run + 1 if run else ECHO_WORDS
            if run > best:
                best, at = run, i + ECHO_WORDS - run
        else:
            run = 0
    if best:
        quote = " ".join(words[at:at + min(best, 16)]) + (" …" if best > 16 else "")
        return f"It copies {best} consecutive words of the instructions: \u201c{quote}\u201d."
    return None


def max_tokens_sent(request: dict) -> int | None:
    """The output cap the stored request sent (``params.max_tokens`` as the gateway stores it)."""
    if not isinstance(request, dict):
        return None
    for holder in (request.get("params"), request.get("sampling"), request):
        if isinstance(holder, dict):
            for key in ("max_tokens", "max_completion_tokens", "num_predict"):
                value = holder.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value
    return None


def cut_at_cap(request: dict, finish_reason: str | None, completion_tokens: int | None) -> str | None:
    """Why the reply was cut at the token cap, or None."""
    if isinstance(finish_reason, str) and finish_reason.lower() in ("length", "max_tokens"):
        cap = max_tokens_sent(request)
        return "The provider's stop reason is \u201clength\u201d" + (f" (cap {cap} tokens)." if cap else ".")
    cap = max_tokens_sent(request)
    if cap is not None and isinstance(completion_tokens, int) and completion_tokens >= cap:
        return f"It used {completion_tokens} completion tokens, the cap sent was {cap}."
    return None


def call_flags(row: dict, user_texts: Iterable[str] = ()) -> tuple[Flag, ...]:
    """The flags of one stored call (a row of :data:`_CALL_COLUMNS`). A call with no reply has none."""
    if row.get("reply_text") is None or row.get("status") not in ("ok", "invalid"):
        return ()
    request = row.get("request_json")
    if isinstance(request, str):
        try:
            request = json.loads(request)
        except ValueError:
            request = {}
    request = request if isinstance(request, dict) else {}
    out = []
    why = template_echo(request, row["reply_text"], user_texts)
    if why:
        out.append(Flag("template_echo", why))
    why = cut_at_cap(request, row.get("meta_finish") or row.get("raw_finish"), row.get("completion_tokens"))
    if why:
        out.append(Flag("cut_at_cap", why))
    return tuple(out)


def rubber_stamps(votes: Iterable[tuple[str, object, object]], minimum: int = RUBBER_STAMP_MIN) -> dict[str, tuple]:
    """``{voter: (value, items)}`` for every voter whose votes ``(voter, item, value)`` cover at
    least ``minimum`` distinct items and all carry one value (the last vote per item counts)."""
    latest: dict[str, dict[object, object]] = {}
    for voter, item, value in votes:
        if value is not None:
            latest.setdefault(voter, {})[item] = value
    out = {}
    for voter, items in latest.items():
        values = set(items.values())
        if len(items) >= minimum and len(values) == 1:
            out[voter] = (next(iter(values)), len(items))
    return out


def _stamp_flag(value: object, items: int, what: str) -> Flag:
    shown = {1: "YES", 0: "NO"}.get(value, value) if not isinstance(value, tuple) else " ".join(map(str, value))
    return Flag("rubber_stamp", f"It voted {shown} on all {items} {what}.")


# ----- SQL: the rows ------------------------------------------------------------------------------------
_CALL_COLUMNS = ("c.id, c.run_id, c.agent_id, c.provider, c.model, c.status, c.request_json, c.reply_text, "
                 "c.completion_tokens, CASE WHEN json_valid(c.response_json) THEN "
                 "json_extract(c.response_json, '$.reply_meta.finish_reason') END AS meta_finish, "
                 "CASE WHEN json_valid(c.response_raw) THEN coalesce("
                 "json_extract(c.response_raw, '$.choices[0].finish_reason'), "
                 "json_extract(c.response_raw, '$.done_reason')) END AS raw_finish")
_STAMP_SQL = {
    "vote": ("SELECT v.voter_agent, v.artifact_id, v.value FROM votes v WHERE v.run_id = ? AND v.status = 'valid' "
             "ORDER BY v.id", "artifacts"),
    "finding_vote": ("SELECT fv.agent, fv.finding_id, fv.vote_type FROM finding_votes fv WHERE fv.run_id = ? "
                     "AND fv.status = 'valid' ORDER BY fv.id", "findings"),
    "ballot": ("SELECT b.agent_id, b.question_id || '/' || b.challenge_round, "
               "json_array(b.option, b.vote) FROM cons_ballots b JOIN cons_questions q ON q.id = b.question_id "
               "WHERE q.run_id = ? AND b.status = 'valid' ORDER BY b.id", "ballots"),
}


def user_texts(cfg: object) -> tuple[str, ...]:
    """What the user wrote into a run's configuration: the question, personas, options, notes."""
    found: list[str] = []

    def walk(value: object, key: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and key in ("query", "question", "persona", "options", "claim", "notes",
                                                 "label", "context"):
            found.append(value)

    walk(cfg if isinstance(cfg, dict) else {})
    return tuple(found)


def _run_texts(store: Store, run_ids: Iterable[str]) -> dict[str, tuple[str, ...]]:
    ids = sorted({r for r in run_ids if r})
    out: dict[str, tuple[str, ...]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        for r in _sql.query(store, f"SELECT id, config_json FROM runs WHERE id IN ({', '.join('?' * len(chunk))})",
                            chunk):
            out[r["id"]] = user_texts(r["config_json"])
    return out


# The listed kind (see .records) of each record kind a protocol may declare as its votes.
_STAMPED = {"vote": "vote", "finding_vote": "finding_vote", "cons_ballot": "ballot"}


def _stamps_of_run(store: Store, run_id: str, protocol: str | None) -> dict[tuple[str, str], Flag]:
    """``{(record kind, voter): flag}`` for the rubber stamps of one run: over the records its
    protocol declares as its votes (``Protocol.validity``), when they are of a kind with values."""
    from workbench.core import registry

    declared = registry.protocols().get(protocol or "")
    unit = declared.validity.kind if declared is not None and declared.validity is not None else None
    out: dict[tuple[str, str], Flag] = {}
    for kind in (_STAMPED[unit],) if unit in _STAMPED else ():
        sql, what = _STAMP_SQL[kind]
        rows = _sql.tuples(store, sql, (run_id,))
        if kind == "ballot":
            rows = [(a, item, tuple(json.loads(v)) if isinstance(v, str) else v) for a, item, v in rows]
        for voter, (value, n) in rubber_stamps(rows).items():
            out[(kind, voter)] = _stamp_flag(value, n, what)
    return out


# ----- a whole run, cached --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunQuality:
    run_id: str
    calls_checked: int = 0
    calls: dict[int, tuple[Flag, ...]] = field(default_factory=dict)  # flagged calls only
    call_owner: dict[int, tuple] = field(default_factory=dict)  # flagged call -> (agent, provider, model)
    stamps: dict[tuple[str, str], Flag] = field(default_factory=dict)  # (kind, voter) -> flag
    voter_provider: dict[str, tuple] = field(default_factory=dict)  # voter -> (provider, model) of its calls

    def by_agent(self) -> dict[str, Counter]:
        """``{agent: Counter(flag code -> count)}``: calls per flag, and 1 per rubber stamp."""
        out: dict[str, Counter] = {}
        for call_id, flags in self.calls.items():
            agent = self.call_owner.get(call_id, (None,))[0] or "?"
            out.setdefault(agent, Counter()).update(f.code for f in flags)
        for (_kind, voter), _flag in self.stamps.items():
            out.setdefault(voter, Counter())["rubber_stamp"] += 1
        return out


_lock = threading.Lock()
_runs: OrderedDict[tuple, tuple[tuple, RunQuality]] = OrderedDict()  # (file, run) -> (signature, flags)
_stamps: OrderedDict[tuple, tuple[tuple, dict]] = OrderedDict()  # (file, run) -> (signature, stamps)


def _cached(cache: OrderedDict, key: tuple, sig: tuple, compute):
    with _lock:
        hit = cache.get(key)
        if hit is not None and hit[0] == sig:
            cache.move_to_end(key)
            return hit[1]
    value = compute()
    with _lock:
        cache[key] = (sig, value)
        while len(cache) > _CACHE_RUNS:
            cache.popitem(last=False)
    return value


def _signature(store: Store, run_id: str) -> tuple:
    """A cheap fingerprint of a run's rows: counts and highest ids of its calls and votes."""
    row = _sql.tuples(store, (
        "SELECT (SELECT count(*) || ':' || coalesce(max(id), 0) FROM llm_calls WHERE run_id = ?1), "
        "(SELECT count(*) || ':' || coalesce(max(id), 0) FROM votes WHERE run_id = ?1), "
        "(SELECT count(*) || ':' || coalesce(max(id), 0) FROM finding_votes WHERE run_id = ?1), "
        "(SELECT count(*) || ':' || coalesce(max(b.id), 0) FROM cons_ballots b JOIN cons_questions q "
        "ON q.id = b.question_id WHERE q.run_id = ?1), (SELECT protocol || ':' || status FROM runs WHERE id = ?1)"),
        (run_id,))
    return tuple(row[0]) if row else ()


def run_quality(store: Store, run_id: str) -> RunQuality:
    """Every flag of one run (cached until the run's rows change)."""
    sig = _signature(store, run_id)
    return _cached(_runs, (str(store.path), run_id), sig, lambda: _compute_run(store, run_id))


def run_stamps(store: Store, run_id: str) -> dict[tuple[str, str], Flag]:
    """The rubber stamps of one run (cached until the run's rows change)."""
    sig = _signature(store, run_id)
    return _cached(_stamps, (str(store.path), run_id), sig, lambda: _stamps_of_run(store, run_id, _protocol(sig)))


def _protocol(sig: tuple) -> str | None:
    return sig[-1].split(":")[0] if sig and sig[-1] else None


def _compute_run(store: Store, run_id: str) -> RunQuality:
    texts = _run_texts(store, [run_id]).get(run_id, ())
    calls: dict[int, tuple[Flag, ...]] = {}
    owner: dict[int, tuple] = {}
    checked = 0
    last = 0
    while True:  # in pages, so a huge run never holds every request in memory at once
        rows = _sql.query(store, f"SELECT {_CALL_COLUMNS} FROM llm_calls c WHERE c.run_id = ? AND c.id > ? "
                                 "ORDER BY c.id LIMIT 2000", (run_id, last))
        if not rows:
            break
        for row in rows:
            checked += 1
            flags = call_flags(row, texts)
            if flags:
                calls[row["id"]] = flags
                owner[row["id"]] = (row["agent_id"], row["provider"], row["model"])
        last = rows[-1]["id"]
    stamps = run_stamps(store, run_id)
    voters = {voter for _k, voter in stamps}
    providers: dict[str, tuple] = {}
    if voters:
        for agent, provider, model in _sql.tuples(
                store, "SELECT agent_id, provider, model FROM llm_calls WHERE run_id = ? AND agent_id IS NOT NULL "
                       "GROUP BY agent_id ORDER BY agent_id", (run_id,)):
            if agent in voters:
                providers[agent] = (provider, model)
    return RunQuality(run_id, checked, calls, owner, stamps, providers)


def clear_cache() -> None:
    with _lock:
        _runs.clear()
        _stamps.clear()
        _ids.clear()


# ----- records: the Trace Inspector -------------------------------------------------------------------------
_VOTE_SOURCES = {
    "vote": "SELECT v.id, v.run_id, v.voter_agent, v.call_id FROM votes v WHERE v.id IN ({q})",
    "finding_vote": "SELECT fv.id, fv.run_id, fv.agent, fv.call_id FROM finding_votes fv WHERE fv.id IN ({q})",
    "ballot": ("SELECT b.id, q2.run_id, b.agent_id, b.call_id FROM cons_ballots b "
               "LEFT JOIN cons_questions q2 ON q2.id = b.question_id WHERE b.id IN ({q})"),
}


def flags_for_records(store: Store, keys: Iterable[tuple[str, object]]) -> dict[tuple[str, object], tuple[Flag, ...]]:
    """The flags of these list records (calls, votes, ballots, finding votes), read for them only:
    a vote carries its call's flags and its voter's rubber stamp."""
    keys = list(keys)
    out: dict[tuple[str, object], tuple[Flag, ...]] = {}
    call_ids = {rid for kind, rid in keys if kind == "call"}
    voters: dict[tuple[str, object], tuple[str | None, str, object]] = {}
    for kind, sql in _VOTE_SOURCES.items():
        ids = [rid for k, rid in keys if k == kind]
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            for rid, run_id, voter, call_id in _sql.tuples(store, sql.format(q=", ".join("?" * len(chunk))), chunk):
                voters[(kind, rid)] = (run_id, voter, call_id)
                if call_id is not None:
                    call_ids.add(call_id)
    per_call = _flags_of_calls(store, sorted(call_ids))
    stamps = {run_id: run_stamps(store, run_id) for run_id in sorted({run for run, _v, _c in voters.values() if run})}
    for kind, rid in keys:
        if kind == "call":
            flags = per_call.get(rid, ())
        elif (kind, rid) in voters:
            run_id, voter, call_id = voters[(kind, rid)]
            stamp = stamps.get(run_id, {}).get((kind, voter))
            flags = per_call.get(call_id, ()) + ((stamp,) if stamp else ())
        else:
            continue
        if flags:
            out[(kind, rid)] = flags
    return out


def _flags_of_calls(store: Store, call_ids: list[int]) -> dict[int, tuple[Flag, ...]]:
    rows: list[dict] = []
    for start in range(0, len(call_ids), 500):
        chunk = call_ids[start:start + 500]
        rows += _sql.query(store, f"SELECT {_CALL_COLUMNS} FROM llm_calls c WHERE c.id IN "
                                  f"({', '.join('?' * len(chunk))})", chunk)
    texts = _run_texts(store, {r["run_id"] for r in rows})
    out = {}
    for row in rows:
        flags = call_flags(row, texts.get(row["run_id"], ()))
        if flags:
            out[row["id"]] = flags
    return out


def record_flags(store: Store, kind: str, record_id: object) -> tuple[Flag, ...]:
    """One record's flags (the Trace Inspector's detail)."""
    return flags_for_records(store, [(kind, record_id)]).get((kind, record_id), ())


_ids: OrderedDict[tuple, tuple[tuple, dict]] = OrderedDict()
_WATCHED = ("runs", "llm_calls", "votes", "finding_votes", "cons_ballots")


def flagged_ids(store: Store, code: str | None = None) -> dict[str, list]:
    """``{record kind: [ids]}`` of every record carrying ``code`` (any flag when None), over every
    run (each run's flags from the cache): what the list's "Quality" filter keeps. Cached until
    the change counters of the tables it reads move."""
    sig = tuple(_sql.tuples(store, f"SELECT tbl, seq FROM change_counters WHERE tbl IN "
                                   f"({', '.join('?' * len(_WATCHED))}) ORDER BY tbl", _WATCHED))
    return _cached(_ids, (str(store.path), code), sig, lambda: _flagged_ids(store, code))


# The records a flagged call became, and a rubber-stamped voter's records, per kind.
_BY_CALL = {"vote": "SELECT id FROM votes WHERE run_id = ? AND call_id IN ({q})",
            "finding_vote": "SELECT id FROM finding_votes WHERE run_id = ? AND call_id IN ({q})",
            "ballot": "SELECT id FROM cons_ballots WHERE call_id IN ({q})"}
_BY_VOTER = {"vote": "SELECT id FROM votes WHERE run_id = ? AND voter_agent = ?",
             "finding_vote": "SELECT id FROM finding_votes WHERE run_id = ? AND agent = ?",
             "ballot": "SELECT b.id FROM cons_ballots b JOIN cons_questions q ON q.id = b.question_id "
                       "WHERE q.run_id = ? AND b.agent_id = ?"}


def _flagged_ids(store: Store, code: str | None) -> dict[str, list]:
    out: dict[str, set] = {k: set() for k in ("call", "vote", "ballot", "finding_vote")}
    for (run_id,) in _sql.tuples(store, "SELECT id FROM runs ORDER BY id"):
        q = run_quality(store, run_id)
        calls = [cid for cid, flags in q.calls.items() if code is None or any(f.code == code for f in flags)]
        out["call"].update(calls)
        if calls:
            for kind, sql in _BY_CALL.items():
                for start in range(0, len(calls), 500):
                    chunk = calls[start:start + 500]
                    params = chunk if kind == "ballot" else [run_id, *chunk]
                    found = _sql.tuples(store, sql.format(q=", ".join("?" * len(chunk))), params)
                    out[kind].update(i for (i,) in found)
        if code in (None, "rubber_stamp"):
            for (kind, voter), _flag in q.stamps.items():
                out[kind].update(i for (i,) in _sql.tuples(store, _BY_VOTER[kind], (run_id, voter)))
    return {k: sorted(v) for k, v in out.items()}


def flags_text(flags: Iterable[Flag], *, short: bool = False) -> str:
    """A cell: ``⚑ template echo, cut at cap`` (``⚑ echo, cut`` when ``short``)."""
    labels = list(dict.fromkeys(SHORT.get(f.code, f.code) if short else f.label for f in flags))
    return f"{GLYPH} " + ", ".join(labels) if labels else ""
