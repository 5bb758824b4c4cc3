"""Every record of the project in one list: calls, traces, votes, ballots, findings, finding
votes and the records protocols keep in ``protocol_records`` (a plugin's own kinds), the Trace
Inspector's list, filtered, sorted and paged in SQL. The branches are record KINDS (a project
concept); no protocol is named: a plugin's records are listed like any.

The list is a ``UNION ALL`` of one branch per table over a common set of columns (:data:`COLUMNS`).
Filters (:class:`RecordFilter`) become ``WHERE`` terms with parameters, never user text in the
SQL; a filter a kind of record cannot match (a flag on a vote, say) drops that branch. A filter
on a run, batch or protocol is an ``IN`` over ``runs``, so the run indexes do the work.

A window is read in two steps, so a sort never drags wide columns through the sorter:
1. the keys: ``(kind, id)`` of the rows in the window. In the natural order (kind, then id)
   that is a count per branch and an ``ORDER BY id LIMIT/OFFSET`` on the one or two branches
   the window falls in; sorted by a column, each branch gives its first ``offset + limit`` rows
   in that order and the union is cut to the window;
2. the rows: each kind's display columns for the keys it has in the window (by primary key).
A record's tier (its artifact's resonance state, from any run whose summary classifies its
artifacts into ``rounds`` of ``states``, as RCP's does) is looked up in Python for the rows shown;
filtering or sorting by tier reads the states in SQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace

from workbench.core.project import _sql
from workbench.core.project.runs import run_list
from workbench.core.project.search import SearchPlan, condition
from workbench.core.project.store import Store
from workbench.core.protocols.shared.tiers import TIERS as TIERS  # re-exported: the tier filter's values

# The kinds the GUI's kind filter offers, each with a label there (ui/widgets/record_filters.py
# KIND_LABELS): every kind of BRANCH, a protocol's own records (a plugin's) too.
KINDS = ("call", "trace", "vote", "ballot", "finding", "finding_vote", "protocol_record")
COLUMNS = ("kind", "id", "run_id", "batch_id", "protocol", "agent", "round", "phase", "provider", "tier",
           "flags", "validity", "simulated", "time", "audit", "text")
VALIDITIES = ("ok", "invalid", "failed")
AUDIT_FILTERS = ("ok", "suspect", "wrong", "audited", "unaudited")
QUALITY_FILTERS = ("any", "template_echo", "cut_at_cap", "rubber_stamp")  # see .quality
# SPEC §8: a record's artifact scored against its run's known answer (the call that wrote it, the
# votes on it); "scored": any of the three, "unscored": a run with no known answer.
SCORE_FILTERS = ("correct", "incorrect", "unscorable", "scored", "unscored")
CALL_FAILED = "[CALL FAILED]"

# The resonance states of every run whose summary classifies artifacts into tiers (``rounds`` of
# ``states``, as RCP's does), as (run, artifact key, tier): read only when a filter or sort needs
# tiers in SQL. A summary without them gives no row.
_TIERS_CTE = ("tiers AS MATERIALIZED (SELECT r.id AS run_id, json_extract(s.value, '$.artifact') AS akey, "
              "json_extract(s.value, '$.tier') AS tier FROM runs r, json_each(r.summary_json, '$.rounds') rr, "
              "json_each(rr.value, '$.states') s WHERE json_valid(r.summary_json))")
# Records made outside any run (the Consensus Server's MCP tools: a finding, its votes, a CONS
# ballot) belong to the protocol whose tables they are in: the one place that says which, for the
# protocol column and filter (tests/core/test_records.py checks it against the declarations).
RUNLESS_OWNER = {"ballot": "cons", "finding": "findings", "finding_vote": "findings"}
_ROUND_OF_LABEL = "CASE WHEN {k} LIKE 'Round %' THEN CAST(substr({k}, 7) AS INTEGER) END"
_LATEST_NOTES = "id IN (SELECT max(id) FROM audit_notes GROUP BY record_kind, record_id)"


@dataclass(frozen=True)
class RecordFilter:
    """What the list shows. None (or "") leaves a column unfiltered."""

    kind: str | None = None
    run: str | None = None
    batch: str | None = None
    protocol: str | None = None
    agent: str | None = None
    round: int | None = None
    phase: str | None = None
    provider: str | None = None
    tier: str | None = None
    flag: str | None = None
    validity: str | None = None  # ok | invalid | failed
    simulated: bool | None = None
    audit: str | None = None  # ok | suspect | wrong | audited | unaudited
    quality: str | None = None  # a reply quality flag (quality.FLAGS), or "any"
    score: str | None = None  # its artifact's score against a known answer (SCORE_FILTERS)
    # The ids that carry ``quality`` (JSON ``{kind: [ids]}``), filled in by the list's reads.
    quality_ids: str | None = field(default=None, compare=False, repr=False)

    def active(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name != "quality_ids" and getattr(self, f.name) is not None and getattr(self, f.name) != ""}


@dataclass(frozen=True)
class _Branch:
    kind: str
    no: int
    base: str  # "llm_calls c"
    key: str  # the primary key, qualified ("c.id")
    alias: str
    joins: dict[str, str]  # name -> JOIN clause, in the order they must appear
    cols: dict[str, tuple[str, tuple[str, ...]]]  # column -> (SQL, joins it needs)
    audit_key: str  # the record id as audit_notes.record_id holds it, compared to that column


def _cols(**cols: str | tuple[str, tuple[str, ...]]) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {k: (v, ()) if isinstance(v, str) else v for k, v in cols.items()}


def _audit_col(kind: str, key: str) -> str:
    return (f"(SELECT n.verdict FROM audit_notes n WHERE n.record_kind = '{kind}' AND n.record_id = CAST({key} AS TEXT) "
            "ORDER BY n.id DESC LIMIT 1)")


_RUN_JOIN = "LEFT JOIN runs r ON r.id = {run}"
_ROUND_JOIN = "LEFT JOIN rounds rd ON rd.id = {alias}.round_id"
_VALIDITY_CALL = "CASE c.status WHEN 'ok' THEN 'ok' WHEN 'invalid' THEN 'invalid' ELSE 'failed' END"
_VALIDITY_VOTE = "CASE {a}.status WHEN 'valid' THEN 'ok' WHEN 'invalid' THEN 'invalid' ELSE 'failed' END"
# A protocol record is invalid when its data says ``"valid": false`` (CASE tests json_valid first).
_RECORD_INVALID = ("CASE WHEN json_valid(pr.data_json) THEN coalesce(json_extract(pr.data_json, '$.valid'), 1) = 0 "
                   "ELSE 0 END")

BRANCHES: tuple[_Branch, ...] = (
    _Branch("call", 0, "llm_calls c", "c.id", "c",
            {"r": _RUN_JOIN.format(run="c.run_id"), "rd": _ROUND_JOIN.format(alias="c")},
            _cols(id="c.id", run_id="c.run_id", batch_id=("r.batch_id", ("r",)), protocol=("r.protocol", ("r",)),
                  agent="c.agent_id", round=(_ROUND_OF_LABEL.format(k="rd.kind"), ("rd",)),
                  phase=("coalesce(rd.kind, c.purpose)", ("rd",)), provider="c.provider", flags="NULL",
                  validity=_VALIDITY_CALL, simulated="c.simulated", time="c.started_at",
                  text="coalesce(substr(c.reply_text, 1, 240), c.error, '')",
                  # The artifact the call wrote or voted on, when there is exactly one (a ballot
                  # names several): two index lookups per call (schema step 8), not a pass over
                  # the run's votes for each of its artifacts (155 ms for 200 calls of a 1,024-call run).
                  # "+a.run_id": the artifacts are then looked up by id, not the run's all scanned.
                  akey="(SELECT CASE WHEN count(DISTINCT a.key) = 1 THEN max(a.key) END FROM artifacts a "
                       "WHERE +a.run_id = c.run_id AND a.id IN (SELECT a1.id FROM artifacts a1 WHERE a1.call_id = c.id "
                       "UNION ALL SELECT v.artifact_id FROM votes v WHERE v.call_id = c.id))",
                  audit=_audit_col("call", "c.id")),
            "c.id"),
    _Branch("trace", 1, "traces t", "t.id", "t",
            {"r": _RUN_JOIN.format(run="t.run_id"), "rd": _ROUND_JOIN.format(alias="t")},
            _cols(id="t.id", run_id="t.run_id", batch_id=("r.batch_id", ("r",)), protocol=("r.protocol", ("r",)),
                  agent="coalesce(t.agent_id, t.role)", round="t.round_no",
                  phase=("coalesce(rd.kind, 'round ' || t.round_no)", ("rd",)), provider="t.provider",
                  flags="t.flags_json",
                  validity=f"CASE WHEN t.ok THEN 'ok' WHEN t.claim = '{CALL_FAILED}' THEN 'failed' ELSE 'invalid' END",
                  simulated="t.simulated", time="t.created_at", text="coalesce(t.claim, '')", akey="NULL",
                  audit=_audit_col("trace", "t.id")),
            "t.id"),
    _Branch("vote", 2, "votes v", "v.id", "v",
            {"a": "LEFT JOIN artifacts a ON a.id = v.artifact_id", "r": _RUN_JOIN.format(run="v.run_id"),
             "rd": _ROUND_JOIN.format(alias="v"), "c": "LEFT JOIN llm_calls c ON c.id = v.call_id"},
            _cols(id="v.id", run_id="v.run_id", batch_id=("r.batch_id", ("r",)), protocol=("r.protocol", ("r",)),
                  agent="v.voter_agent", round=(_ROUND_OF_LABEL.format(k="rd.kind"), ("rd",)),
                  phase=("coalesce(rd.kind, CASE WHEN v.ballot_mode THEN 'ballot' ELSE 'vote' END)", ("rd",)),
                  provider=("c.provider", ("c",)), flags="NULL", validity=_VALIDITY_VOTE.format(a="v"),
                  simulated="v.simulated", time="v.created_at",
                  text=("CASE v.value WHEN 1 THEN 'YES' WHEN 0 THEN 'NO' ELSE upper(v.status) END || ' on ' || "
                        "coalesce(a.key, '?') || coalesce(': ' || nullif(v.reason, ''), '')", ("a",)),
                  akey=("a.key", ("a",)), audit=_audit_col("vote", "v.id")),
            "v.id"),
    _Branch("ballot", 3, "cons_ballots b", "b.id", "b",
            {"q": "LEFT JOIN cons_questions q ON q.id = b.question_id", "r": _RUN_JOIN.format(run="q.run_id"),
             "c": "LEFT JOIN llm_calls c ON c.id = b.call_id"},
            _cols(id="b.id", run_id=("q.run_id", ("q",)), batch_id=("r.batch_id", ("q", "r")),
                  protocol=(f"coalesce(r.protocol, '{RUNLESS_OWNER['ballot']}')", ("q", "r")), agent="b.agent_id",
                  round="b.challenge_round + 1",
                  phase="CASE WHEN b.challenge_round > 0 THEN 'challenge ' || b.challenge_round ELSE 'ballot' END",
                  provider=("c.provider", ("c",)), flags="NULL", validity=_VALIDITY_VOTE.format(a="b"),
                  simulated="b.simulated", time="b.created_at",
                  text="coalesce(b.vote, 'invalid') || coalesce(' ' || b.option, '') || "
                       "coalesce(': ' || coalesce(b.rationale, b.invalid_reason), '')",
                  akey="NULL", audit=_audit_col("ballot", "b.id")),
            "b.id"),
    _Branch("finding", 4, "findings f", "f.rowid", "f",
            {"r": _RUN_JOIN.format(run="f.run_id")},
            _cols(id="f.id", run_id="f.run_id", batch_id=("r.batch_id", ("r",)),
                  protocol=(f"coalesce(r.protocol, '{RUNLESS_OWNER['finding']}')", ("r",)), agent="f.created_by",
                  round="NULL",
                  phase="'finding'", provider="NULL", flags="NULL", validity="'ok'",
                  simulated=("coalesce(r.simulated, 0)", ("r",)), time="f.created_at", text="f.claim", akey="NULL",
                  audit=_audit_col("finding", "f.id")),
            "f.id"),
    _Branch("finding_vote", 5, "finding_votes fv", "fv.id", "fv",
            {"r": _RUN_JOIN.format(run="fv.run_id"), "c": "LEFT JOIN llm_calls c ON c.id = fv.call_id"},
            _cols(id="fv.id", run_id="fv.run_id", batch_id=("r.batch_id", ("r",)),
                  protocol=(f"coalesce(r.protocol, '{RUNLESS_OWNER['finding_vote']}')", ("r",)), agent="fv.agent",
                  round="NULL",
                  phase="'finding vote'", provider=("c.provider", ("c",)), flags="NULL",
                  validity=_VALIDITY_VOTE.format(a="fv"), simulated="fv.simulated", time="fv.created_at",
                  text="coalesce(fv.vote_type, 'invalid') || coalesce(' ' || fv.confidence, '') || ' on ' || "
                       "fv.finding_id || coalesce(': ' || coalesce(nullif(fv.reason, ''), fv.invalid_reason), '')",
                  akey="NULL", audit=_audit_col("finding_vote", "fv.id")),
            "fv.id"),
    # What a protocol keeps of its own kinds (a plugin's critique, say): the kind, key and data.
    _Branch("protocol_record", 6, "protocol_records pr", "pr.id", "pr",
            {"r": _RUN_JOIN.format(run="pr.run_id"), "rd": _ROUND_JOIN.format(alias="pr"),
             "c": "LEFT JOIN llm_calls c ON c.id = pr.call_id"},
            _cols(id="pr.id", run_id="pr.run_id", batch_id=("r.batch_id", ("r",)), protocol="pr.protocol",
                  agent="pr.agent_id", round=(_ROUND_OF_LABEL.format(k="rd.kind"), ("rd",)),
                  phase=("coalesce(rd.kind, pr.kind)", ("rd",)), provider=("c.provider", ("c",)), flags="NULL",
                  validity=f"CASE WHEN {_RECORD_INVALID} THEN 'invalid' ELSE 'ok' END", simulated="pr.simulated",
                  time="pr.created_at",
                  text="pr.kind || coalesce(' ' || pr.key, '') || ': ' || substr(pr.data_json, 1, 240)",
                  akey="NULL", audit=_audit_col("protocol_record", "pr.id")),
            "pr.id"),
)
BRANCH = {b.kind: b for b in BRANCHES}
SORTABLE = tuple(c for c in COLUMNS)


# ----- filters as WHERE terms ------------------------------------------------------------------
def _runs_in(sub: str) -> dict[str, str]:
    """Per kind: the record's run in ``sub`` (an SQL set of run ids)."""
    return {"call": f"c.run_id IN ({sub})", "trace": f"t.run_id IN ({sub})", "vote": f"v.run_id IN ({sub})",
            "ballot": f"b.question_id IN (SELECT id FROM cons_questions WHERE run_id IN ({sub}))",
            "finding": f"f.run_id IN ({sub})", "finding_vote": f"fv.run_id IN ({sub})",
            "protocol_record": f"pr.run_id IN ({sub})"}


_RUNLESS = {"ballot": "b.question_id IN (SELECT id FROM cons_questions WHERE run_id IS NULL)",
            "finding": "f.run_id IS NULL", "finding_vote": "fv.run_id IS NULL"}
_AGENT = {"call": "c.agent_id = ?", "trace": "coalesce(t.agent_id, t.role) = ?", "vote": "v.voter_agent = ?",
          "ballot": "b.agent_id = ?", "finding": "f.created_by = ?", "finding_vote": "fv.agent = ?",
          "protocol_record": "pr.agent_id = ?"}
_ROUNDS_WHERE = "SELECT id FROM rounds WHERE " + _ROUND_OF_LABEL.format(k="kind") + " = ?"
_ROUND = {"call": f"c.round_id IN ({_ROUNDS_WHERE})", "trace": "t.round_no = ?",
          "vote": f"v.round_id IN ({_ROUNDS_WHERE})", "ballot": "b.challenge_round + 1 = ?",
          "protocol_record": f"pr.round_id IN ({_ROUNDS_WHERE})"}
_PHASE = {"call": "(c.round_id IN (SELECT id FROM rounds WHERE kind = ?) OR (c.round_id IS NULL AND c.purpose = ?))",
          "trace": "(t.round_id IN (SELECT id FROM rounds WHERE kind = ?) OR (t.round_id IS NULL AND "
                   "'round ' || t.round_no = ?))",
          "vote": "(v.round_id IN (SELECT id FROM rounds WHERE kind = ?) OR (v.round_id IS NULL AND "
                  "CASE WHEN v.ballot_mode THEN 'ballot' ELSE 'vote' END = ?))",
          "ballot": "CASE WHEN b.challenge_round > 0 THEN 'challenge ' || b.challenge_round ELSE 'ballot' END = ?",
          "finding": "'finding' = ?", "finding_vote": "'finding vote' = ?",
          "protocol_record": "(pr.round_id IN (SELECT id FROM rounds WHERE kind = ?) OR (pr.round_id IS NULL AND "
                             "pr.kind = ?))"}
# A vote's provider is its call's: one primary-key lookup per row (none for a vote without a call).
_PROVIDER = {"call": "c.provider = ?", "trace": "t.provider = ?",
             "vote": "(SELECT c2.provider FROM llm_calls c2 WHERE c2.id = v.call_id) = ?",
             "ballot": "(SELECT c2.provider FROM llm_calls c2 WHERE c2.id = b.call_id) = ?",
             "finding_vote": "(SELECT c2.provider FROM llm_calls c2 WHERE c2.id = fv.call_id) = ?",
             "protocol_record": "(SELECT c2.provider FROM llm_calls c2 WHERE c2.id = pr.call_id) = ?"}
_TIER_ARTIFACTS = ("SELECT a2.id FROM artifacts a2 JOIN tiers tt ON tt.run_id = a2.run_id AND tt.akey = a2.key "
                   "WHERE tt.tier = ?")
_TIER = {"call": f"(c.id IN (SELECT a3.call_id FROM artifacts a3 WHERE a3.id IN ({_TIER_ARTIFACTS})) OR c.id IN "
                 f"(SELECT v3.call_id FROM votes v3 WHERE v3.artifact_id IN ({_TIER_ARTIFACTS})))",
         "vote": f"v.artifact_id IN ({_TIER_ARTIFACTS})"}
def _score_terms(score: str) -> tuple[str, tuple]:
    """An artifact's score as a WHERE term over ``artifacts a4`` and its parameters."""
    if score == "scored":
        return "a4.score IS NOT NULL", ()
    if score == "unscored":
        return "a4.score IS NULL", ()
    return "a4.score = ?", (score,)


# The call that wrote the artifact, the votes cast on it (schema step 8's indexes).
_SCORE = {"call": "c.id IN (SELECT a4.call_id FROM artifacts a4 WHERE a4.call_id IS NOT NULL AND {term})",
          "vote": "v.artifact_id IN (SELECT a4.id FROM artifacts a4 WHERE {term})"}
_VALIDITY = {
    "call": {"ok": "c.status = 'ok'", "invalid": "c.status = 'invalid'", "failed": "c.status NOT IN ('ok', 'invalid')"},
    "trace": {"ok": "t.ok = 1", "invalid": f"t.ok = 0 AND coalesce(t.claim, '') != '{CALL_FAILED}'",
              "failed": f"t.ok = 0 AND t.claim = '{CALL_FAILED}'"},
    "vote": {"ok": "v.status = 'valid'", "invalid": "v.status = 'invalid'", "failed": "v.status IN ('missing', 'failed')"},
    "ballot": {"ok": "b.status = 'valid'", "invalid": "b.status = 'invalid'"},
    "finding": {"ok": "1"},
    "finding_vote": {"ok": "fv.status = 'valid'", "invalid": "fv.status = 'invalid'"},
    "protocol_record": {"ok": f"NOT ({_RECORD_INVALID})", "invalid": _RECORD_INVALID},
}
_SIMULATED = {"call": "c.simulated = ?", "trace": "t.simulated = ?", "vote": "v.simulated = ?",
              "ballot": "b.simulated = ?", "finding": "coalesce((SELECT simulated FROM runs WHERE id = f.run_id), 0) = ?",
              "finding_vote": "fv.simulated = ?", "protocol_record": "pr.simulated = ?"}
_QUALITY_KINDS = ("call", "vote", "ballot", "finding_vote")
_INT_KEY = {"call": "c.id", "trace": "t.id", "vote": "v.id", "ballot": "b.id", "finding_vote": "fv.id",
            "protocol_record": "pr.id"}


def _audit(kind: str, verdict: str) -> tuple[str, tuple]:
    key = _INT_KEY.get(kind, "f.id")
    cast = "CAST(record_id AS INTEGER)" if kind in _INT_KEY else "record_id"
    if verdict == "unaudited":
        return f"{key} NOT IN (SELECT {cast} FROM audit_notes WHERE record_kind = ?)", (kind,)
    if verdict == "audited":
        return f"{key} IN (SELECT {cast} FROM audit_notes WHERE record_kind = ?)", (kind,)
    return (f"{key} IN (SELECT {cast} FROM audit_notes WHERE record_kind = ? AND verdict = ? AND {_LATEST_NOTES})",
            (kind, verdict))


def _where(branch: _Branch, f: RecordFilter, search: SearchPlan | None) -> tuple[list[str], list] | None:
    """The WHERE terms and parameters for one branch; None when the branch cannot match."""
    kind = branch.kind
    terms: list[str] = []
    params: list = []

    def add(sql: str, *values: object) -> None:
        terms.append(sql)
        params.extend(values)

    if f.kind and f.kind != kind:
        return None
    if f.run:
        add(_runs_in("?")[kind], f.run)
    if f.batch:
        add(_runs_in("SELECT id FROM runs WHERE batch_id = ?")[kind], f.batch)
    if f.protocol:
        within = _runs_in("SELECT id FROM runs WHERE protocol = ?")[kind]
        if kind in _RUNLESS and RUNLESS_OWNER[kind] == f.protocol:
            add(f"({within} OR {_RUNLESS[kind]})", f.protocol)
        else:
            add(within, f.protocol)
    if f.agent:
        add(_AGENT[kind], f.agent)
    if f.round is not None:
        if kind not in _ROUND:
            return None
        add(_ROUND[kind], int(f.round))
    if f.phase:
        add(_PHASE[kind], *([f.phase] * _PHASE[kind].count("?")))
    if f.provider:
        if kind not in _PROVIDER:
            return None
        add(_PROVIDER[kind], f.provider)
    if f.tier:
        if kind not in _TIER:
            return None
        add(_TIER[kind], *([f.tier] * _TIER[kind].count("?")))
    if f.score:
        if kind not in _SCORE:
            return None
        term, values = _score_terms(f.score)
        add(_SCORE[kind].format(term=term), *values)
    if f.flag:
        if kind != "trace":
            return None
        add("(json_valid(t.flags_json) AND EXISTS (SELECT 1 FROM json_each(t.flags_json) j WHERE j.value = ?))", f.flag)
    if f.quality:
        if kind not in _QUALITY_KINDS:
            return None
        add(f"{_INT_KEY[kind]} IN (SELECT value FROM json_each(?, ?))", f.quality_ids or "{}", f"$.{kind}")
    if f.validity:
        sql = _VALIDITY[kind].get(f.validity)
        if sql is None:
            return None
        add(sql)
    if f.simulated is not None:
        add(_SIMULATED[kind], int(bool(f.simulated)))
    if f.audit:
        sql, values = _audit(kind, f.audit)
        add(sql, *values)
    if search is not None and search.active:
        sql, values = condition(search, kind, branch.alias)
        if sql:
            add(sql, *values)
    return terms, params


def _needs_tiers(f: RecordFilter, sort: str | None) -> bool:
    return bool(f.tier) or sort == "tier"


def _joins(branch: _Branch, names: Iterable[str]) -> str:
    wanted = set(names)
    return " ".join(sql for name, sql in branch.joins.items() if name in wanted)


def _branch_sql(branch: _Branch, select: str, joins: Iterable[str], where: list[str]) -> str:
    sql = f"SELECT {select} FROM {branch.base} {_joins(branch, joins)}"
    return sql + (" WHERE " + " AND ".join(where) if where else "")


def _with(f: RecordFilter, sort: str | None) -> str:
    return f"WITH {_TIERS_CTE} " if _needs_tiers(f, sort) else ""


def _resolved(store: Store, f: RecordFilter) -> RecordFilter:
    """``f`` with the ids its quality filter keeps (flags are computed in Python, cached per run)."""
    if not f.quality or f.quality_ids is not None:
        return f
    from workbench.core.project import quality

    ids = quality.flagged_ids(store, None if f.quality == "any" else f.quality)
    return replace(f, quality_ids=json.dumps(ids))


# ----- the list ---------------------------------------------------------------------------------
def counts(store: Store, f: RecordFilter = RecordFilter(), search: SearchPlan | None = None) -> dict[str, int]:
    """How many records of each kind match (every kind is a key; 0 where a filter excludes it)."""
    f = _resolved(store, f)
    parts, params, kinds = [], [], []
    for branch in BRANCHES:
        where = _where(branch, f, search)
        if where is None:
            continue
        terms, values = where
        parts.append(f"({_branch_sql(branch, 'count(*)', (), terms)})")
        params += values
        kinds.append(branch.kind)
    out = dict.fromkeys(BRANCH, 0)
    if parts:
        row = _sql.tuples(store, _with(f, None) + "SELECT " + ", ".join(parts), params)[0]
        out.update(zip(kinds, row))
    return out


def count(store: Store, f: RecordFilter = RecordFilter(), search: SearchPlan | None = None) -> int:
    return sum(counts(store, f, search).values())


def window_keys(store: Store, f: RecordFilter, *, offset: int, limit: int, sort: str | None = None,
                descending: bool = False, search: SearchPlan | None = None,
                per_kind: dict[str, int] | None = None) -> list[tuple[str, object]]:
    """The ``(kind, id)`` of the rows ``offset`` to ``offset + limit`` of the list, in order.
    ``per_kind``: the :func:`counts` of this filter and search, if the caller has them already
    (the natural order needs them)."""
    if limit <= 0:
        return []
    f = _resolved(store, f)
    if sort not in SORTABLE or sort is None:
        return _natural_keys(store, f, offset, limit, descending, search, per_kind)
    parts, params = [], []
    for branch in BRANCHES:
        where = _where(branch, f, search)
        if where is None:
            continue
        terms, values = where
        expr, joins = _sort_expr(branch, sort)
        direction = "DESC" if descending else "ASC"
        select = f"{branch.no} AS kno, {branch.key} AS k, {branch.cols['id'][0]} AS rid, {expr} AS s"
        parts.append(f"SELECT * FROM ({_branch_sql(branch, select, joins, terms)} "
                     f"ORDER BY s {direction}, k LIMIT ?)")
        params += [*values, offset + limit]
    if not parts:
        return []
    direction = "DESC" if descending else "ASC"
    sql = (_with(f, sort) + "SELECT kno, rid FROM (" + " UNION ALL ".join(parts) + f") ORDER BY s {direction}, "
           "kno, k LIMIT ? OFFSET ?")
    return [(BRANCHES[kno].kind, rid) for kno, rid in _sql.tuples(store, sql, (*params, limit, offset))]


def _sort_expr(branch: _Branch, sort: str) -> tuple[str, tuple[str, ...]]:
    if sort == "kind":
        return str(branch.no), ()
    if sort == "tier":
        if branch.kind == "vote":
            return ("(SELECT tt.tier FROM artifacts a2 JOIN tiers tt ON tt.run_id = a2.run_id AND tt.akey = a2.key "
                    "WHERE a2.id = v.artifact_id)"), ()
        if branch.kind == "call":
            return ("(SELECT tt.tier FROM artifacts a2 JOIN tiers tt ON tt.run_id = a2.run_id AND tt.akey = a2.key "
                    "WHERE a2.run_id = c.run_id AND a2.call_id = c.id)"), ()
        return "NULL", ()
    return branch.cols[sort]


def _natural_keys(store: Store, f: RecordFilter, offset: int, limit: int, descending: bool,
                  search: SearchPlan | None, per_kind: dict[str, int] | None) -> list[tuple[str, object]]:
    """Kind by kind, each by id: counts say which branches the window falls in."""
    per_kind = per_kind if per_kind is not None else counts(store, f, search)
    order = list(reversed(BRANCHES)) if descending else list(BRANCHES)
    out: list[tuple[str, object]] = []
    start = 0
    for branch in order:
        n = per_kind[branch.kind]
        if n == 0 or start + n <= offset:
            start += n
            continue
        skip = max(0, offset - start)
        take = min(limit - len(out), n - skip)
        terms, values = _where(branch, f, search) or ([], [])
        sql = (_with(f, None) + _branch_sql(branch, f"{branch.cols['id'][0]}", (), terms)
               + f" ORDER BY {branch.key} {'DESC' if descending else 'ASC'} LIMIT ? OFFSET ?")
        out += [(branch.kind, rid) for (rid,) in _sql.tuples(store, sql, (*values, take, skip))]
        start += n
        if len(out) >= limit:
            break
    return out


def rows_for(store: Store, keys: list[tuple[str, object]]) -> list[dict]:
    """The display rows of these records, in the order given (missing ones left out)."""
    by_kind: dict[str, list] = {}
    for kind, rid in keys:
        by_kind.setdefault(kind, []).append(rid)
    found: dict[tuple[str, object], dict] = {}
    for kind, ids in by_kind.items():
        branch = BRANCH[kind]
        names = [c for c in COLUMNS if c not in ("kind", "tier")] + ["akey"]
        joins = {j for c in names for j in branch.cols[c][1]}
        select = ", ".join(f"{branch.cols[c][0]} AS {c}" for c in names)
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            sql = _branch_sql(branch, select, joins, [f"{branch.cols['id'][0]} IN ({', '.join('?' * len(chunk))})"])
            for row in _sql.query(store, sql, chunk):
                row["kind"] = kind
                found[(kind, row["id"])] = row
    rows = [found[k] for k in keys if k in found]
    _add_scores(store, rows)
    _add_tiers(store, rows)
    _add_quality(store, rows)
    for row in rows:
        row["flags"] = _flags_text(row["flags"])
        row["simulated"] = bool(row["simulated"])
    return rows


def _add_quality(store: Store, rows: list[dict]) -> None:
    """Each row's reply quality flags (:mod:`.quality`), read for these rows only: ``quality`` is
    the cell's short text ("⚑ echo, cut"), ``quality_notes`` the explanations, one per flag."""
    from workbench.core.project import quality

    flagged = quality.flags_for_records(store, [(r["kind"], r["id"]) for r in rows if r["kind"] in _QUALITY_KINDS])
    for row in rows:
        flags = flagged.get((row["kind"], row["id"]), ())
        row["quality"] = quality.flags_text(flags, short=True)
        row["quality_notes"] = [f"{f.label}: {f.explanation}" for f in flags]


def window(store: Store, f: RecordFilter, *, offset: int, limit: int, sort: str | None = None,
           descending: bool = False, search: SearchPlan | None = None,
           per_kind: dict[str, int] | None = None) -> list[dict]:
    """One window of the list: dicts keyed by :data:`COLUMNS`."""
    keys = window_keys(store, f, offset=offset, limit=limit, sort=sort, descending=descending, search=search,
                       per_kind=per_kind)
    return rows_for(store, keys)


def _flags_text(value: object) -> str:
    if isinstance(value, str):  # the decoder leaves a non-JSON-named column alone
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


def _add_scores(store: Store, rows: list[dict]) -> None:
    """Each row's artifact's ``extracted`` answer and ``score`` against a known answer (SPEC §8),
    None where it has none (read for these rows only)."""
    wanted = sorted({(r["run_id"], r["akey"]) for r in rows if r.get("akey")})
    found: dict[tuple[str, str], tuple] = {}
    for start in range(0, len(wanted), 250):
        chunk = wanted[start:start + 250]
        terms = " OR ".join("(run_id = ? AND key = ?)" for _ in chunk)
        for run_id, key, extracted, score in _sql.tuples(
                store, f"SELECT run_id, key, extracted, score FROM artifacts WHERE {terms}",
                [v for pair in chunk for v in pair]):
            found[(run_id, key)] = (extracted, score)
    for row in rows:
        row["extracted"], row["score"] = found.get((row["run_id"], row.get("akey")), (None, None))


def _add_tiers(store: Store, rows: list[dict]) -> None:
    runs = {r["run_id"] for r in rows if r.get("akey")}
    tiers = rcp_tiers(store, runs)
    for row in rows:
        row["tier"] = tiers.get((row["run_id"], row.pop("akey", None)))


def rcp_tiers(store: Store, run_ids: Iterable[str]) -> dict[tuple[str, str], str]:
    """``{(run, artifact key): tier}`` from these runs' summaries (those that classify artifacts)."""
    ids = sorted(set(run_ids))
    out: dict[tuple[str, str], str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        sql = (f"SELECT r.id, json_extract(s.value, '$.artifact'), json_extract(s.value, '$.tier') FROM runs r, "
               f"json_each(r.summary_json, '$.rounds') rr, json_each(rr.value, '$.states') s "
               f"WHERE r.id IN ({', '.join('?' * len(chunk))}) AND json_valid(r.summary_json)")
        for run_id, key, tier in _sql.tuples(store, sql, chunk):
            out[(run_id, key)] = tier
    return out


def position(store: Store, f: RecordFilter, kind: str, record_id: object, *, search: SearchPlan | None = None,
             descending: bool = False) -> int | None:
    """Where a record stands in the natural order of the filtered list (None: not in it)."""
    branch = BRANCH.get(kind)
    f = _resolved(store, f)
    where = _where(branch, f, search) if branch else None
    if where is None:
        return None
    terms, values = where
    per_kind = counts(store, f, search)
    id_col = branch.cols["id"][0]
    key_of = _sql.tuples(store, _with(f, None) + _branch_sql(branch, branch.key, (), [*terms, f"{id_col} = ?"]),
                         (*values, record_id))
    if not key_of:
        return None
    before = [b for b in (reversed(BRANCHES) if descending else BRANCHES)]
    start = sum(per_kind[b.kind] for b in before[:before.index(branch)])
    cmp = ">" if descending else "<"
    n = _sql.tuples(store, _with(f, None) + _branch_sql(branch, "count(*)", (), [*terms, f"{branch.key} {cmp} ?"]),
                    (*values, key_of[0][0]))[0][0]
    return start + n


# ----- what the filters offer --------------------------------------------------------------------
MAX_FACET_RUNS = 100_000  # every run of any project the workbench makes (bench/scale.py: 1,000)


@dataclass(frozen=True)
class Facets:
    """The values each filter offers, from what the project holds."""

    runs: tuple[tuple[str, str, str], ...] = ()  # (id, label, protocol), newest first
    batches: tuple[tuple[str, str], ...] = ()  # (id, name)
    protocols: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    rounds: tuple[int, ...] = ()
    phases: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    run_rows: tuple = ()  # the runs as every list names them (runs.RunListRow), in the order of ``runs``

    def merge(self, other: Facets) -> Facets:
        """Values of both (runs and batches as ``other`` has them: those lists are read whole)."""
        def both(a: tuple, b: tuple) -> tuple:
            return tuple(sorted(set(a) | set(b), key=lambda v: (str(type(v)), v)))
        return Facets(other.runs, other.batches, both(self.protocols, other.protocols),
                      both(self.agents, other.agents), both(self.rounds, other.rounds),
                      both(self.phases, other.phases), both(self.providers, other.providers),
                      both(self.flags, other.flags), other.run_rows)


def facets(store: Store, runs: Iterable[str] | None = None) -> Facets:
    """The filter values; with ``runs``, only the agents, rounds, phases, providers and flags of
    those runs' records are read (merge them into the previous facets: :meth:`Facets.merge`)."""
    only = None if runs is None else sorted(set(runs))
    listed = run_list(store, MAX_FACET_RUNS)
    run_rows = [(r.id, r.label, r.protocol) for r in listed]
    batches = _sql.tuples(store, "SELECT id, name FROM batches ORDER BY created_at DESC, id")
    protocols = {p for _, _, p in run_rows}
    if _sql.tuples(store, "SELECT 1 FROM findings WHERE run_id IS NULL LIMIT 1"):
        protocols.add(RUNLESS_OWNER["finding"])
    if _sql.tuples(store, "SELECT 1 FROM cons_ballots b JOIN cons_questions q ON q.id = b.question_id "
                          "WHERE q.run_id IS NULL LIMIT 1"):
        protocols.add(RUNLESS_OWNER["ballot"])

    def distinct(sql: str, run_col: str, joiner: str = "WHERE") -> set:
        values: list = []
        if only is None:
            values = [v for (v,) in _sql.tuples(store, sql)]
        else:
            for start in range(0, len(only), 500):
                chunk = only[start:start + 500]
                values += [v for (v,) in _sql.tuples(
                    store, f"{sql} {joiner} {run_col} IN ({', '.join('?' * len(chunk))})", chunk)]
        return {v for v in values if v is not None and v != ""}

    agents = (distinct("SELECT DISTINCT agent_id FROM llm_calls", "run_id")
              | distinct("SELECT DISTINCT coalesce(agent_id, role) FROM traces", "run_id")
              | distinct("SELECT DISTINCT voter_agent FROM votes", "run_id")
              | distinct("SELECT DISTINCT b.agent_id FROM cons_ballots b JOIN cons_questions q ON q.id = b.question_id",
                         "q.run_id")
              | distinct("SELECT DISTINCT agent FROM finding_votes", "run_id")
              | distinct("SELECT DISTINCT agent_id FROM protocol_records", "run_id"))
    if only is None:
        agents |= distinct("SELECT DISTINCT agent_id FROM cons_ballots", "")
        agents |= distinct("SELECT DISTINCT created_by FROM findings", "")
    labels = distinct("SELECT DISTINCT kind FROM rounds", "run_id")
    rounds = {n for n in (round_of_label(k) for k in labels) if n is not None}
    rounds |= distinct("SELECT DISTINCT round_no FROM traces", "run_id")
    rounds |= distinct("SELECT DISTINCT b.challenge_round + 1 FROM cons_ballots b JOIN cons_questions q "
                       "ON q.id = b.question_id", "q.run_id")
    phases = labels | distinct("SELECT DISTINCT purpose FROM llm_calls WHERE round_id IS NULL", "run_id", "AND")
    phases |= distinct("SELECT DISTINCT kind FROM protocol_records WHERE round_id IS NULL", "run_id", "AND")
    phases |= {("challenge " + str(n - 1)) if n > 1 else "ballot" for n in
               distinct("SELECT DISTINCT b.challenge_round + 1 FROM cons_ballots b JOIN cons_questions q "
                        "ON q.id = b.question_id", "q.run_id")}
    if only is None:
        if _sql.tuples(store, "SELECT 1 FROM findings LIMIT 1"):
            phases.add("finding")
        if _sql.tuples(store, "SELECT 1 FROM finding_votes LIMIT 1"):
            phases.add("finding vote")
    providers = (distinct("SELECT DISTINCT provider FROM llm_calls", "run_id")
                 | distinct("SELECT DISTINCT provider FROM traces", "run_id"))
    flags = distinct("SELECT DISTINCT j.value FROM traces t, json_each(t.flags_json) j "
                     "WHERE json_valid(t.flags_json) AND json_type(t.flags_json) = 'array'", "t.run_id", "AND")
    return Facets(tuple(run_rows), tuple(batches), tuple(sorted(protocols)), tuple(sorted(agents, key=str)),
                  tuple(sorted(int(r) for r in rounds)), tuple(sorted(phases, key=str)),
                  tuple(sorted(providers, key=str)), tuple(sorted((str(f) for f in flags), key=str.casefold)),
                  tuple(listed))


def round_of_label(label: str) -> int | None:
    if isinstance(label, str) and label.startswith("Round "):
        digits = "".join(ch for ch in label[6:].split(":")[0] if ch.isdigit())
        return int(digits) if digits else None
    return None


# ----- one record, found by its reference ---------------------------------------------------------
def locate(store: Store, kind: str, record_id: object) -> tuple[str, object, str | None] | None:
    """``(kind, id, run)`` of the listed record a link names: an artifact is shown as the call
    that wrote it; a run or a record that does not exist gives None."""
    if kind == "artifact":
        rows = _sql.tuples(store, "SELECT call_id, run_id FROM artifacts WHERE id = ?", (record_id,))
        if not rows or rows[0][0] is None:
            return None
        kind, record_id = "call", rows[0][0]
    branch = BRANCH.get(kind)
    if branch is None:
        return None
    if kind != "finding":
        try:
            record_id = int(record_id)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
    rows = _sql.tuples(store, _branch_sql(branch, f"{branch.cols['run_id'][0]}", branch.cols["run_id"][1],
                                          [f"{branch.cols['id'][0]} = ?"]), (record_id,))
    return (kind, record_id, rows[0][0]) if rows else None
