"""The Trace Inspector's record list (core.project.records): one list of calls, traces, votes,
ballots, findings, finding votes and protocol records (a plugin's own kinds), filtered, sorted,
paged and searched in SQL.

Every filter is checked against the same filter applied in Python to the whole list; every sort
and both directions page without repeating or skipping a row; FTS5 and LIKE find the same
records, rows written after the index was made included; and no user text reaches the SQL.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from workbench.core import registry
from workbench.core.project import _sql, records, search
from workbench.core.project.arm_import import import_arm_file
from workbench.core.project.audit import add_note
from workbench.core.project.findings import FindingsStore
from workbench.core.project.protocol_records import Where, write_records
from workbench.core.project.record_detail import align, record_detail, run_sides
from workbench.core.project.records import RecordFilter
from workbench.core.project.refs import RecordRef
from workbench.core.project.run_records import CallRecord, record_call
from workbench.core.project.runs import ensure_round
from workbench.core.project.store import Store
from workbench.core.protocols.shared.declaration import Record
from workbench.core.protocols.shared.steps import AgentCall, AgentReply
from workbench.core.runs.config import parse_run_config
from workbench.core.text_diff import changed_words, list_diff, word_diff
from workbench.services.runs.runner import Runner

REPO = Path(__file__).resolve().parents[2]
RCP_SAMPLE = REPO / "sample_runs" / "rcp-sim.json"
Q201 = "arm-v0.9-q201-CGG-roles-1782437641004.json"  # gamma: "deploy" in R1, "refrain from ... deploying" in R2
Q201_RERUN = "arm-v0.9-q201-CGG-noroles-1783475435505-rerunAfterBuild.json"
OT001 = "arm-v0.7.1-run-OT-001.json"  # a build before the polarity gate: stored values an older rule explains
BAD_VOTE_TEXT = "Maybe; it depends on the weather on the day."


def build_project(path: Path, corpus: Path) -> dict:
    """A simulated RCP run, three imported corpus ARM files, and one unreadable vote."""
    store = Store.create(path)
    cfg = parse_run_config(json.loads(RCP_SAMPLE.read_text()))
    runner = Runner(store)
    rcp = runner.create(cfg)
    runner.execute(rcp)
    for sample in ("findings-sim.json", "cons-sim.json"):  # finding votes and CONS ballots
        other = runner.create(parse_run_config(json.loads((REPO / "sample_runs" / sample).read_text())))
        Runner(store).execute(other)
    findings = FindingsStore(store)  # a finding and votes from an MCP client: no run
    findings.create_finding("GET /api/v2/users returns 200", finding_id="mcp-1")
    findings.submit_vote("mcp-1", "scout", "confirm", 0.9, "it does", client="mcp-client")
    arm = import_arm_file(store, corpus / "traces" / Q201).run_id
    rerun = import_arm_file(store, corpus / "traces" / Q201_RERUN).run_id
    legacy = import_arm_file(store, corpus / "traces" / OT001).run_id
    round_id = ensure_round(store, rcp, 2, "Round 1: vote")
    call = AgentCall("vote/r1-a1/z9", "z9", "vote", (), meta={"artifact": "r1-a1", "presentation_index": 0})
    reply = AgentReply(call.key, BAD_VOTE_TEXT, None, {"provider": "sim", "model": "sim"})
    bad_call, _ = record_call(store, rcp, round_id, CallRecord(call, reply, "sim", True,
                                                              {"model": "sim", "status": "ok", "attempts": 1,
                                                               "latency_ms": 3.0}), cfg)
    # A protocol's own kind (as a plugin keeps its critiques): kept in protocol_records, listed like any.
    with _sql.write(store) as tx:
        write_records(tx, Where(rcp, "rcp", call_id=bad_call, simulated=True), [
            Record("critique", {"key": "r1-a1", "agent": "a2", "data": {"text": "the zoning argument is circular"}})])
        write_records(tx, Where(rcp, "rcp", simulated=True), [
            Record("critique", {"key": "r1-a2", "agent": "c1", "data": {"valid": False, "problem": "no critique"}})])
    conn = sqlite3.connect(path)
    critique, bad_critique = [i for (i,) in conn.execute("SELECT id FROM protocol_records ORDER BY id")]
    bad_vote = conn.execute("SELECT id FROM votes WHERE call_id = ?", (bad_call,)).fetchone()[0]
    gamma = dict(conn.execute("SELECT round_no, id FROM traces WHERE run_id = ? AND role = 'gamma'", (arm,)))
    legacy_gamma = conn.execute("SELECT id FROM traces WHERE run_id = ? AND role = 'gamma' AND round_no = 2",
                                (legacy,)).fetchone()[0]
    conn.close()
    store.close_connection()
    return {"rcp": rcp, "arm": arm, "rerun": rerun, "legacy": legacy, "bad_call": bad_call, "bad_vote": bad_vote,
            "gamma_r1": gamma[1], "gamma_r2": gamma[2], "legacy_gamma_r2": legacy_gamma, "critique": critique,
            "bad_critique": bad_critique}


@pytest.fixture(scope="module")
def built(tmp_path_factory, request):
    from tests.conftest import CORPUS

    if not (CORPUS / "traces").is_dir():
        pytest.skip(f"the ARM corpus is absent: expected it at {CORPUS}")
    path = tmp_path_factory.mktemp("records") / "p.rwb"
    ids = build_project(path, CORPUS)
    return path, ids


@pytest.fixture
def store(built, tmp_path):
    path, _ = built
    copy = tmp_path / "p.rwb"
    copy.write_bytes(path.read_bytes())
    s = Store.open(copy)
    yield s
    s.close_connection()


@pytest.fixture
def ids(built):
    return built[1]


def everything(store, f=RecordFilter(), **kw) -> list[dict]:
    return records.window(store, f, offset=0, limit=100_000, **kw)


def keys(rows) -> list[tuple]:
    return [(r["kind"], r["id"]) for r in rows]


def flags_of(store) -> dict[int, list]:
    conn = sqlite3.connect(store.path)
    out = {i: json.loads(f) for i, f in conn.execute("SELECT id, flags_json FROM traces WHERE flags_json IS NOT NULL")}
    conn.close()
    return {i: f if isinstance(f, list) else [] for i, f in out.items()}


def test_every_record_of_every_kind_is_listed_once(store):
    rows = everything(store)
    counts = records.counts(store)
    assert set(counts) == set(records.BRANCH) >= set(records.KINDS)
    assert len(rows) == sum(counts.values()) == records.count(store)
    assert len(set(keys(rows))) == len(rows)
    assert all(counts.values())
    assert all(set(records.COLUMNS) <= set(r) for r in rows)


def test_each_filter_keeps_exactly_the_rows_it_names(store, ids):
    rows = everything(store)
    facets = records.facets(store)
    flags = flags_of(store)
    add_note(store, "trace", ids["gamma_r2"], "suspect", "a flip the gate missed")
    add_note(store, "vote", ids["bad_vote"], "wrong")
    add_note(store, "vote", ids["bad_vote"], "ok", "on reflection")  # the newest note stands
    rows = everything(store)
    cases = [("kind", k, lambda r, v: r["kind"] == v) for k in records.BRANCH]
    cases += [("run", rid, lambda r, v: r["run_id"] == v) for rid, _, _ in facets.runs]
    cases += [("protocol", p, lambda r, v: r["protocol"] == v) for p in facets.protocols]
    cases += [("agent", a, lambda r, v: r["agent"] == v) for a in facets.agents]
    cases += [("round", n, lambda r, v: r["round"] == v) for n in facets.rounds]
    cases += [("phase", p, lambda r, v: r["phase"] == v) for p in facets.phases]
    cases += [("provider", p, lambda r, v: r["provider"] == v) for p in facets.providers]
    cases += [("tier", t, lambda r, v: r["tier"] == v) for t in records.TIERS]
    cases += [("flag", f, lambda r, v: r["kind"] == "trace" and v in flags.get(r["id"], [])) for f in facets.flags]
    cases += [("validity", v, lambda r, v: r["validity"] == v) for v in records.VALIDITIES]
    cases += [("simulated", s, lambda r, v: r["simulated"] is v) for s in (True, False)]
    cases += [("audit", a, lambda r, v: r["audit"] == v) for a in ("ok", "suspect", "wrong")]
    cases += [("audit", "audited", lambda r, v: r["audit"] is not None),
              ("audit", "unaudited", lambda r, v: r["audit"] is None)]
    assert len(cases) > 50
    for field, value, keep in cases:
        f = RecordFilter(**{field: value})
        got = keys(everything(store, f))
        want = [k for k, r in zip(keys(rows), rows) if keep(r, value)]
        assert got == want, (field, value)
        assert records.count(store, f) == len(want), (field, value)
    assert keys(everything(store, RecordFilter(audit="ok"))) == [("vote", ids["bad_vote"])]


def test_filters_combine(store, ids):
    f = RecordFilter(run=ids["arm"], agent="gamma", kind="trace")
    got = everything(store, f)
    assert sorted(r["id"] for r in got) == sorted([ids["gamma_r1"], ids["gamma_r2"]])
    assert keys(everything(store, RecordFilter(protocol="rcp", validity="invalid"))) == [
        ("call", ids["bad_call"]), ("vote", ids["bad_vote"]), ("protocol_record", ids["bad_critique"])]
    assert everything(store, RecordFilter(protocol="rcp", flag="values_conflict")) == []


def test_tiers_come_from_the_run_summary(store, ids):
    rows = everything(store, RecordFilter(run=ids["rcp"]))
    summary = json.loads(sqlite3.connect(store.path).execute("SELECT summary_json FROM runs WHERE id = ?",
                                                             (ids["rcp"],)).fetchone()[0])
    tiers = {s["artifact"]: s["tier"] for r in summary["rounds"] for s in r["states"]}
    votes = [r for r in rows if r["kind"] == "vote"]
    assert votes and all(r["tier"] == tiers[r["text"].split(" on ")[1].split(":")[0]] for r in votes)
    generated = [r for r in rows if r["kind"] == "call" and r["phase"] == "Round 1: generate"]
    assert len(generated) == 6 and all(r["tier"] in records.TIERS for r in generated)


@pytest.mark.parametrize("sort", [None, "kind", "id", "agent", "time", "tier", "validity", "provider", "round",
                                  "phase", "audit", "text", "protocol", "simulated", "flags"])
@pytest.mark.parametrize("descending", [False, True])
def test_windows_page_through_the_sorted_list_without_repeats_or_gaps(store, sort, descending):
    f = RecordFilter()
    whole = keys(everything(store, f, sort=sort, descending=descending))
    paged = []
    offset = 0
    while True:
        window = records.window_keys(store, f, offset=offset, limit=37, sort=sort, descending=descending)
        if not window:
            break
        paged += window
        offset += len(window)
    assert paged == whole
    assert len(set(whole)) == len(whole) == records.count(store)
    if sort in ("agent", "time", "validity", "round"):
        values = [r[sort] for r in everything(store, f, sort=sort, descending=descending)]
        present = [v for v in values if v is not None]
        assert present == sorted(present, reverse=descending)


def test_natural_order_positions_match_the_list(store, ids):
    f = RecordFilter(protocol="arm")
    whole = keys(everything(store, f))
    for i in (0, 5, len(whole) // 2, len(whole) - 1):
        kind, rid = whole[i]
        assert records.position(store, f, kind, rid) == i
    assert records.position(store, RecordFilter(kind="call"), "trace", ids["gamma_r2"]) is None
    assert records.locate(store, "trace", ids["gamma_r2"]) == ("trace", ids["gamma_r2"], ids["arm"])
    assert records.locate(store, "trace", 10**9) is None
    kind, call_id, run = records.locate(store, "artifact", 1)
    assert kind == "call" and run == ids["rcp"]


def test_facets_offer_what_the_project_holds(store, ids):
    facets = records.facets(store)
    assert {ids["rcp"], ids["arm"], ids["legacy"]} <= {r for r, _, _ in facets.runs}
    assert set(facets.protocols) == {"rcp", "arm", "findings", "cons"}
    assert {"a1", "c3", "alpha", "gamma", "silent", "z9"} <= set(facets.agents)
    assert facets.rounds == (1, 2)
    assert {"Round 1: generate", "Round 1: vote", "isolation", "deliberation"} <= set(facets.phases)
    assert {"sim", "claude", "gemini"} <= set(facets.providers)
    assert "values_conflict" in facets.flags
    only = records.facets(store, [ids["rcp"]])
    assert "gamma" not in only.agents and "a1" in only.agents
    assert set(records.facets(store).merge(only).agents) == set(facets.agents)


# ----- search --------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["countermeasure", "refrain deploying", "Pontevedra", "values_conflict",
                                  "weather", "YES", "CFAA necessity"])
def test_fts5_and_like_find_the_same_records(store, text):
    like = search.SearchPlan(text, search.LIKE)
    expected = keys(everything(store, search=like))
    assert expected, text
    assert search.plan(store, text).mode == search.LIKE  # no index before the first search asks for one
    search.update_index(store)
    fts = search.plan(store, text)
    assert fts.mode == search.FTS
    found = set(keys(everything(store, search=fts)))
    # FTS5 matches words (and their prefixes) and LIKE substrings: for these words they agree,
    # but for "values_conflict" FTS5 also finds "values conflict" (its tokens, side by side).
    assert found >= set(expected)
    if text != "values_conflict":
        assert found == set(expected)


def test_a_search_finds_rows_written_after_the_index(store, ids):
    search.update_index(store)
    assert search.index_state(store, count_pending=True).pending == 0
    add_note(store, "trace", ids["gamma_r1"], "ok")  # not indexed text: nothing changes
    round_id = ensure_round(store, ids["rcp"], 2, "Round 1: vote")
    cfg = parse_run_config(json.loads(RCP_SAMPLE.read_text()))
    call = AgentCall("vote/r1-a2/z8", "z8", "vote", (), meta={"artifact": "r1-a2", "presentation_index": 1})
    reply = AgentReply(call.key, json.dumps({"vote": "YES", "reason": "zebracrossing everywhere"}), None, {})
    call_id, _ = record_call(store, ids["rcp"], round_id, CallRecord(call, reply, "sim", True, {"status": "ok"}), cfg)
    plan = search.plan(store, "zebracrossing")
    assert plan.mode == search.FTS and search.index_state(store, count_pending=True).pending >= 2
    found = keys(everything(store, search=plan))
    assert ("call", call_id) in found and any(k == "vote" for k, _ in found)
    search.update_index(store)
    assert search.index_state(store, count_pending=True).pending == 0
    assert keys(everything(store, search=search.plan(store, "zebracrossing"))) == found


def test_search_text_is_never_sql_or_fts_syntax(store):
    search.update_index(store)
    for text in ("'; DROP TABLE runs; --", 'a" OR "b', "NEAR(x y)", "col:claim", "%_%", "\\", "*"):
        for plan in (search.plan(store, text), search.SearchPlan(text, search.LIKE)):
            everything(store, search=plan)  # no error
    assert records.count(store) > 0
    assert records.count(store, search=search.SearchPlan("%", search.LIKE)) == records.count(store)  # no words
    assert search.fts_query('a"b') == '"a"* "b"*'


def test_a_read_only_project_searches_with_like(store, ids):
    reader = Store.open(store.path).reader()
    try:
        assert search.mode(reader)[0] == search.LIKE
        assert keys(everything(reader, search=search.plan(reader, "countermeasure")))
    finally:
        reader.close_connection()


# ----- the detail and the comparisons ------------------------------------------------------------------
def test_a_trace_detail_has_its_other_round_and_the_stored_checks(store, ids):
    d = record_detail(store, "trace", ids["gamma_r2"])
    assert d.extras["other_round"]["id"] == ids["gamma_r1"]
    assert d.extras["trace_json"]["claim"].startswith("The AI should refrain")
    assert {"embedding_convergence", "r2.gamma.harness_self_delta_vs_baseline"} <= {s["metric"] for s in d.extras["stored"]}
    removed, added = changed_words(d.extras["other_json"]["claim"], d.extras["trace_json"]["claim"])
    assert "refrain" in added
    vote = record_detail(store, "vote", ids["bad_vote"])
    assert vote.record["status"] == "invalid" and vote.record["raw"] == BAD_VOTE_TEXT and vote.record["reason"]
    assert vote.call.id == ids["bad_call"] and vote.extras["artifact"]["key"] == "r1-a1"
    assert record_detail(store, "trace", 10**9) is None


def test_two_runs_align_by_round_and_agent(store, ids):
    rows = align(run_sides(store, ids["arm"]), run_sides(store, ids["rerun"]))
    assert [(a.round, a.agent) for a, _ in rows[:4]] == [(1, "alpha"), (1, "beta"), (1, "gamma"), (1, "silent")]
    assert all(a is not None and b is not None and a.agent == b.agent and a.round == b.round for a, b in rows)
    rcp = run_sides(store, ids["rcp"])
    assert len(rcp) == 6 and all("approve" in s.value for s in rcp)


def test_a_protocols_own_records_are_listed_searched_detailed_and_audited_like_any(store, ids):
    """A kind with no table of its own (a plugin's critique) is kept in protocol_records: the
    list, its filters, the search, the detail, a reference and an audit note all reach it."""
    listed = everything(store, RecordFilter(kind="protocol_record"))
    assert keys(listed) == [("protocol_record", ids["critique"]), ("protocol_record", ids["bad_critique"])]
    assert [r["validity"] for r in listed] == ["ok", "invalid"] and listed[0]["provider"] == "sim"
    assert listed[0]["text"].startswith("critique r1-a1: ") and "circular" in listed[0]["text"]
    assert keys(everything(store, RecordFilter(kind="protocol_record", validity="invalid"))) == [
        ("protocol_record", ids["bad_critique"])]
    for plan in (search.SearchPlan("zoning circular", search.LIKE), None):
        if plan is None:
            search.update_index(store)
            plan = search.plan(store, "zoning circular")
            assert plan.mode == search.FTS
        assert keys(everything(store, search=plan)) == [("protocol_record", ids["critique"])]
    d = record_detail(store, "protocol_record", ids["critique"])
    assert d.extras["record_kind"] == "critique" and d.extras["data"] == {"text": "the zoning argument is circular"}
    assert d.call.id == ids["bad_call"] and d.run["id"] == ids["rcp"]
    call = record_detail(store, "call", ids["bad_call"])
    assert {"kind": "protocol_record", "id": ids["critique"], "record_kind": "critique", "key": "r1-a1"} in \
        call.extras["products"]
    assert RecordRef("protocol_record", ids["critique"], ids["rcp"]).kind == "protocol_record"
    assert records.locate(store, "protocol_record", ids["critique"]) == ("protocol_record", ids["critique"], ids["rcp"])
    add_note(store, "protocol_record", ids["bad_critique"], "wrong", "it gave no critique")
    assert keys(everything(store, RecordFilter(audit="wrong"))) == [("protocol_record", ids["bad_critique"])]


def test_records_made_outside_a_run_belong_to_the_protocol_whose_votes_they_are():
    """RUNLESS_OWNER is the one place naming a protocol in the list: each owner declares the
    record kind as its votes (a finding is what finding votes are on)."""
    unit = {"ballot": "cons_ballot", "finding": "finding_vote", "finding_vote": "finding_vote"}
    for kind, owner in records.RUNLESS_OWNER.items():
        assert registry.get(owner).validity.kind == unit[kind], kind


def test_word_diff_gives_back_both_texts():
    pairs = [("The AI should deploy the countermeasure now.", "The AI should refrain from deploying it."),
             ("", "new text"), ("old text", ""), ("same", "same"), ("a, b; c", "a; b, c d")]
    for old, new in pairs:
        d = word_diff(old, new)
        assert "".join(t for op, t in d if op != "insert") == old
        assert "".join(t for op, t in d if op != "delete") == new
    assert changed_words("yes it should", "no it should not") == (["yes"], ["no", "not"])
    ld = list_diff(["a", "B"], ["b", "c"])
    assert ld.kept == ("B",) and ld.removed == ("a",) and ld.added == ("c",)


@pytest.mark.parametrize("f, index", [
    (RecordFilter(agent="a1"), {"c": "llm_calls_agent", "t": "traces_agent", "v": "votes_agent"}),
    (RecordFilter(validity="invalid"), {"c": "llm_calls_status"}),
])
def test_the_commonest_filters_read_an_index_not_every_row(tmp_path, f, index):
    """On a large project a full scan of the calls walks every request and reply (their status sits
    after them), which made the agent filter 185 ms on 109,152 calls (docs/performance.md)."""
    store = Store.create(tmp_path / "p.rwb")
    conn = store._connection()
    sent: list[str] = []
    conn.set_trace_callback(sent.append)
    per_kind = records.counts(store, f, None)
    for sort in (None, "time"):
        records.window(store, f, offset=0, limit=200, sort=sort, descending=True, search=None,
                       per_kind=per_kind if sort is None else None)
    conn.set_trace_callback(None)
    plans = [row[3] for sql in sent if sql.lstrip().upper().startswith("SELECT")
             for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
    for alias, name in index.items():
        assert not [p for p in plans if p == f"SCAN {alias}"], f"{alias} is read row by row: {plans}"
        assert any(p.startswith(f"SEARCH {alias} USING") and name in p for p in plans), plans
    store.close_connection()


def test_a_calls_artifact_is_found_by_index_not_by_walking_the_runs_votes(store, ids):
    """Each call row names the artifact it wrote or voted on (its tier comes from it). Walking the
    run's votes for each artifact made a window of 200 calls of a 1,024-call run 470 ms, re-read
    all through a live run (docs/performance.md); schema step 8 indexes both by call."""
    conn = store._connection()
    sent: list[str] = []
    conn.set_trace_callback(sent.append)
    rows = records.window(store, RecordFilter(run=ids["rcp"], kind="call"), offset=0, limit=200)
    conn.set_trace_callback(None)
    plans = [row[3] for sql in sent if "count(DISTINCT a.key)" in sql
             for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
    assert any(p.startswith("SEARCH v USING") and "INDEX votes_call" in p for p in plans), plans
    # (``a``: the view ``artifacts`` is flattened, its rows named by the view's own alias)
    assert any(p.startswith("SEARCH a USING") and "INDEX artifacts_call" in p for p in plans), plans
    assert "SEARCH a USING INTEGER PRIMARY KEY (rowid=?)" in plans, plans  # not the run's artifacts, scanned
    voting = [r for r in rows if "vote" in (r["phase"] or "").lower()]
    assert voting and all(r["tier"] in records.TIERS for r in voting)
