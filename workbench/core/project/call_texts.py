"""Each text once (issue 30, SPEC §10): how a call's request and raw response are stored.

A call's ``request_json`` (and its ``response_raw``) is kept in ``llm_call_rows`` as a JSON array
of parts: an integer is the id of a row of ``texts`` (a long run of text stored once, by its
SHA-256), a string is inline. The parts are cut from the stored JSON *string* itself, so joining
them gives back the original bytes. The view ``llm_calls`` (schema step 12) joins them in plain
SQL, so every reader (this package, Datasette, pandas) sees the whole texts under the old names.

Where to cut: a fence token (``FENCE-<32 hex>``, ``ARTIFACT-<16 hex>``) is fresh per call, so a
whole message never repeats; what repeats is what lies between the tokens: the persona and the
instructions before the opening token, the fenced answer under vote, the instructions after the
closing one. So the text is cut at the tokens (kept inline), and every piece of at least
``MIN_TEXT`` characters becomes a text; shorter pieces stay inline (a text row and its hash cost
more than a short string).

The fence once (schema step 15): a vote's request names its fence token three times (the fence
opens, closes, and the request's metadata names it), 38 characters each. A call whose request
names one token at least twice keeps it once, in ``llm_call_rows.fence``, and each inline
occurrence becomes the part ``0`` (``texts`` ids start at 1). Its template's hash is kept once
too, in ``template_hashes``, the call holding its id (``template_hash``). The view gives both back
under the old names.

Writers go through :func:`insert_call` (``_sql.Transaction.insert`` sends ``llm_calls`` here);
the view's INSTEAD OF triggers keep plain SQL writes working too (stored whole, inline).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections import Counter

VIEW = "llm_calls"
TABLE = "llm_call_rows"
PART_TABLES = ("texts", "template_hashes")  # what the view's columns are assembled from
# view column -> the stored column that holds its parts
PARTED = {"request_json": "request_parts", "response_raw": "response_raw_parts"}
MIN_TEXT = 40
# A raw response is one body with nothing to cut at; stored as a text only when long enough that a
# repeat (a cached reply recorded again) is worth its hash.
MIN_RAW_TEXT = 400
# The fence names of protocols/shared/fencing.NAME, in any case (an escaped copy is still fresh).
_TOKEN = re.compile(r"((?:FENCE-[0-9A-Fa-f]{32}|ARTIFACT-[0-9A-Fa-f]{16}))")


def _jsonify(value):
    """sqlite-utils' rule for a row's values (a dict or list as JSON text), imported on the first
    write: the window imports the project layer before it is shown (see ``_sql.jsonify``)."""
    from sqlite_utils.db import jsonify_if_needed

    return jsonify_if_needed(value)


def pieces(text: str, min_text: int = MIN_TEXT) -> list[tuple[bool, str]]:
    """``text`` cut into (is_text, piece): long runs between fence tokens are texts; tokens and
    short runs inline, adjacent inline pieces merged. ``"".join`` of the pieces is ``text``."""
    out: list[tuple[bool, str]] = []
    for i, piece in enumerate(_TOKEN.split(text)):
        if not piece:
            continue
        long = i % 2 == 0 and len(piece) >= min_text  # odd indexes are the tokens themselves
        if not long and out and not out[-1][0]:
            out[-1] = (False, out[-1][1] + piece)
        else:
            out.append((long, piece))
    return out or [(False, text)]


def text_id(conn: sqlite3.Connection, body: str) -> int:
    """The id of ``body`` in ``texts``, added if new."""
    sha = hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()
    found = conn.execute("SELECT id FROM texts WHERE sha256 = ?", (sha,)).fetchone()
    if found:
        return found[0]
    return conn.execute("INSERT INTO texts (sha256, body) VALUES (?, ?)", (sha, body)).lastrowid


def parts_of(conn: sqlite3.Connection, text: str, min_text: int = MIN_TEXT) -> list:
    """The parts that store ``text``: texts' ids and inline strings."""
    # A NUL character (possible in a raw body) would end an inline string early: json_each reads
    # strings as C strings. A text's body keeps its length, so such a piece is always a text.
    return [text_id(conn, piece) if is_text or "\x00" in piece else piece
            for is_text, piece in pieces(text, min_text)]


def to_parts(conn: sqlite3.Connection, text: str | None, min_text: int = MIN_TEXT) -> str | None:
    """The parts JSON that stores ``text`` (None stays None)."""
    if text is None:
        return None
    return _dumps(parts_of(conn, text, min_text))


def _dumps(parts: list) -> str:
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":"))


def fence_of(parts: list) -> str | None:
    """The token the parts' inline strings name most, when at least twice: the call's fence."""
    counts = Counter(token for p in parts if isinstance(p, str) for token in _TOKEN.findall(p))
    if not counts:
        return None
    token, n = counts.most_common(1)[0]
    return token if n >= 2 else None


def with_fence(parts: list, fence: str | None) -> list:
    """``parts`` with each inline occurrence of ``fence`` as the part 0 (schema step 15)."""
    if not fence:
        return parts
    out: list = []
    for p in parts:
        if not isinstance(p, str) or fence not in p:
            out.append(p)
            continue
        for j, chunk in enumerate(p.split(fence)):
            if j:
                out.append(0)
            if chunk:
                out.append(chunk)
    return out


def template_hash_id(conn: sqlite3.Connection, sha256: str) -> int:
    """The id of a template's hash in ``template_hashes``, added if new."""
    found = conn.execute("SELECT id FROM template_hashes WHERE sha256 = ?", (sha256,)).fetchone()
    if found:
        return found[0]
    return conn.execute("INSERT INTO template_hashes (sha256) VALUES (?)", (sha256,)).lastrowid


def insert_call(conn: sqlite3.Connection, row: dict) -> int:
    """Insert one call, given as the ``llm_calls`` view's columns already encoded the way
    ``_sql.Transaction.insert`` encodes any row (which sends calls here), so the view reads back
    the very string a plain insert would have stored. Returns the call's id."""
    row = dict(row)
    parted = {}
    for column, stored in PARTED.items():
        if column in row:
            value = _jsonify(row.pop(column))
            parted[stored] = None if value is None else parts_of(
                conn, value, MIN_RAW_TEXT if column == "response_raw" else MIN_TEXT)
    fence = fence_of(parted.get(PARTED["request_json"]) or [])
    for stored, parts in parted.items():
        row[stored] = None if parts is None else _dumps(with_fence(parts, fence))
    row["fence"] = fence
    sha = row.pop("template_sha256", None)
    row["template_hash"] = None if sha is None else template_hash_id(conn, sha)
    names = ", ".join(f"[{c}]" for c in row)
    cursor = conn.execute(f"INSERT INTO [{TABLE}] ({names}) VALUES ({', '.join('?' * len(row))})",
                          [_jsonify(v) for v in row.values()])
    return row["id"] if row.get("id") is not None else cursor.lastrowid


def _parts_in_batches(conn: sqlite3.Connection, batch: int):
    """Every call's (id, request_parts, response_raw_parts), ``batch`` rows at a time, in id order:
    a migration's pass over the calls without holding them all."""
    last = 0
    while True:
        rows = conn.execute(f"SELECT id, request_parts, response_raw_parts FROM {TABLE} WHERE id > ? "
                            "ORDER BY id LIMIT ?", (last, batch)).fetchall()
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def convert_all(conn: sqlite3.Connection, batch: int = 2000) -> None:
    """Schema step 12's data part: every existing call's whole texts (left in the renamed columns)
    turned into parts, inside the step's transaction (a crash leaves the file at step 11)."""
    for rows in _parts_in_batches(conn, batch):
        conn.executemany(f"UPDATE {TABLE} SET request_parts = ?, response_raw_parts = ? WHERE id = ?",
                         [(to_parts(conn, req), to_parts(conn, raw, MIN_RAW_TEXT), i) for i, req, raw in rows])


def fences_once(conn: sqlite3.Connection, batch: int = 2000) -> None:
    """Schema step 15's data part: each existing call's fence kept once (inside the step's
    transaction: a crash leaves the file at step 14). Only inline strings change; texts stay."""
    for rows in _parts_in_batches(conn, batch):
        changed = []
        for call_id, request, raw in rows:
            request = json.loads(request)
            fence = fence_of(request)
            if fence:
                raw = None if raw is None else _dumps(with_fence(json.loads(raw), fence))
                changed.append((_dumps(with_fence(request, fence)), raw, fence, call_id))
        conn.executemany(f"UPDATE {TABLE} SET request_parts = ?, response_raw_parts = ?, fence = ? WHERE id = ?",
                         changed)


def space(conn: sqlite3.Connection) -> dict:
    """What storing each text once saves: the bytes (UTF-8) of every request and raw response
    whole, against what holds them now (the parts and fences, plus the texts with their hashes)."""
    whole = conn.execute("SELECT coalesce(sum(length(CAST(request_json AS BLOB))), 0) + "
                         "coalesce(sum(length(CAST(response_raw AS BLOB))), 0), count(*) FROM llm_calls").fetchone()
    fence = ("coalesce(sum(length(CAST(fence AS BLOB))), 0)"  # schema step 15 (a file open read-only may be older)
             if any(r[1] == "fence" for r in conn.execute(f"PRAGMA table_info({TABLE})")) else "0")
    parts = conn.execute(f"SELECT coalesce(sum(length(CAST(request_parts AS BLOB))), 0) + "
                         f"coalesce(sum(length(CAST(response_raw_parts AS BLOB))), 0) + {fence} "
                         f"FROM {TABLE}").fetchone()[0]
    texts = conn.execute("SELECT count(*), coalesce(sum(length(CAST(body AS BLOB)) + length(sha256)), 0) "
                         "FROM texts").fetchone()
    stored = parts + texts[1]
    return {"calls": whole[1], "texts": texts[0], "request_response_bytes_whole": whole[0],
            "request_response_bytes_stored": stored, "bytes_saved": whole[0] - stored,
            "saved_fraction": round(1 - stored / whole[0], 3) if whole[0] else 0.0}
