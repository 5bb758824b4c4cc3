"""Every size limit (workbench/core/limits.py, docs/limits.md), and the aggregations made linear.

- the limits: each is documented, and the messages name the field and both sizes;
- just under each input limit the work completes, just over it is refused at once
  (no test asserts time; docs/limits.md has the figures);
- the CONS tally equals the old quadratic algorithm on random inputs, and 100,000 ballots tally;
- the near-duplicate test equals the all-pairs definition; conflict pairing stays bounded;
- a reply past MAX_REPLY_CHARS is kept, cut, with a note (never refused).
"""

from __future__ import annotations

import json
import re
from itertools import combinations
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from workbench.core import limits as L
from workbench.core.errors import InputError
from workbench.core.protocols.arm import metrics_report
from workbench.core.protocols.arm.js import _js_string, js_words, token_fold
from workbench.core.protocols.cons.conflicts import (
    NEAR_DUPLICATE_JACCARD,
    _near_duplicate_reason,
    detect_conflicts,
    jaccard,
    near_duplicates,
    paired_groups,
    tokens,
)
from workbench.core.protocols.cons.models import TOL, ConsQuestion, parse_question
from workbench.core.protocols.cons.outcome import Opposition, OptionTally, Tally
from workbench.core.protocols.cons.tally import evaluate, tally
from workbench.core.protocols.findings.book import FindingsBook, consensus
from workbench.core.protocols.findings.book import classify_payload as classify_findings
from workbench.core.protocols.rcp.classify import classify_payload as classify_rcp
from workbench.core.runs.config import parse_run_config

DOCS = Path(__file__).resolve().parents[2] / "docs" / "limits.md"


# ── the limits are in one place, documented ──────────────────────────────────────────────────
def test_every_limit_is_documented():
    names = [n for n in dir(L) if n.isupper() and (n.startswith("MAX_") or n.startswith("SEED_"))]
    text = DOCS.read_text(encoding="utf-8")
    assert len(names) >= 40
    missing = [n for n in names if n not in text and n not in ("SEED_MIN", "SEED_MAX", "MAX_COUNT")]
    assert not missing, missing
    assert "2**63 - 1" in text  # the seed range


def test_the_messages_name_both_sizes():
    with pytest.raises(InputError) as info:
        L.check_text("q" * 10_485_760, L.MAX_QUERY_CHARS, "query")
    assert str(info.value) == "query: is too long (10,485,760 characters; at most 20,000)"
    with pytest.raises(InputError) as info:
        L.check_count([0] * 150_000, L.MAX_BALLOTS, "votes")
    assert str(info.value) == "votes: has too many items (150,000; at most 100,000)"
    with pytest.raises(InputError, match=r"^f: is too long \(40 bytes; at most 39\)$"):
        L.check_bytes(40, "f", 39)


@pytest.mark.parametrize("seed, ok", [(0, True), (L.SEED_MAX, True), (-1, False), (L.SEED_MAX + 1, False),
                                      (2**80, False), (True, False), (1.0, False), ("7", False)])
def test_seed_range(seed, ok):
    if ok:
        assert L.check_seed(seed) == seed
        assert parse_run_config({**RCP, "seed": seed}).seed == seed
    else:
        with pytest.raises(InputError) as info:
            L.check_seed(seed)
        assert info.value.field == "seed"
        with pytest.raises(InputError) as info:
            parse_run_config({**RCP, "seed": seed})
        assert info.value.field == "seed"


def test_json_shape_depth_and_nodes_without_recursion():
    deep: list = []
    node = deep
    for _ in range(100_000):
        node.append([])
        node = node[0]
    assert L.json_shape(deep)[0] == 100_001
    assert L.json_shape({"a": [1, {"b": 2}]}) == (3, 5)
    with pytest.raises(InputError, match="nests too deeply"):
        L.check_json(deep, "x")
    with pytest.raises(InputError, match="holds too many values"):
        L.check_json([0] * 11, "x", nodes=10)
    L.check_json(json.loads("[" * 64 + "]" * 64), "x")  # just at the depth limit
    with pytest.raises(InputError, match=r"^x: nests too deeply"):
        L.decode_json("[" * 100_000 + "]" * 100_000, "x")
    with pytest.raises(json.JSONDecodeError):
        L.decode_json("{", "x")


def test_clip_reply_keeps_a_long_reply_with_a_note():
    assert L.clip_reply("short") == ("short", None)
    assert L.clip_reply(None) == (None, None)
    text = "é" * (L.MAX_REPLY_CHARS + 5)
    kept, note = L.clip_reply(text)
    assert kept == text[:L.MAX_REPLY_CHARS]
    assert note["original_chars"] == L.MAX_REPLY_CHARS + 5 and note["kept_chars"] == L.MAX_REPLY_CHARS
    assert re.fullmatch("[0-9a-f]{64}", note["sha256"]) and note["truncated"] is True


RCP = {"protocol": "rcp", "query": "Q?", "seed": 7, "providers": {"sim": {"model": "sim"}},
       "clusters": [{"name": "a", "agents": [{"id": "a1", "provider": "sim"}, {"id": "a2", "provider": "sim"}]},
                    {"name": "c", "agents": [{"id": "c1", "provider": "sim"}, {"id": "c2", "provider": "sim"}]}]}


# ── just under completes, just over is refused ───────────────────────────────────────────────
def test_run_configuration_at_and_past_its_limits():
    assert len(parse_run_config({**RCP, "query": "q" * L.MAX_QUERY_CHARS}).query) == L.MAX_QUERY_CHARS
    with pytest.raises(InputError, match=r"^query: is too long \(20,001 characters"):
        parse_run_config({**RCP, "query": "q" * (L.MAX_QUERY_CHARS + 1)})
    agents = [{"id": f"a{i}", "provider": "sim"} for i in range(L.MAX_RUN_AGENTS)]
    full = {**RCP, "clusters": [{"name": "a", "agents": agents[:25]}, {"name": "c", "agents": agents[25:]}]}
    assert len(parse_run_config(full).agents) == L.MAX_RUN_AGENTS
    full["clusters"][1]["agents"].append({"id": "one-more", "provider": "sim"})
    with pytest.raises(InputError, match=r"^clusters: has too many agents \(51; at most 50\)$"):
        parse_run_config(full)


def test_rcp_classify_at_and_past_its_limits():
    panel = [{"name": "a", "agents": ["a1", "a2"]}, {"name": "c", "agents": ["c1", "c2"]}]
    arts = [{"id": f"w{k}", "author": "a1", "votes": {"a2": 1, "c1": k % 2}} for k in range(L.MAX_ARTIFACTS)]
    assert len(classify_rcp({"clusters": panel, "artifacts": arts})) == L.MAX_ARTIFACTS
    arts.append({"id": "one-more"})
    with pytest.raises(InputError, match="has too many items"):
        classify_rcp({"clusters": panel, "artifacts": arts})


def test_findings_classify_at_and_past_its_limits():
    votes = [{"agent": f"g{i % 50}", "vote_type": "confirm", "confidence": 0.9} for i in range(L.MAX_FINDING_VOTES)]
    out = classify_findings({"findings": [{"id": "f1", "votes": votes}]})
    assert out[0]["status"] == "confirmed" and out[0]["k"] == 50
    with pytest.raises(InputError, match="votes over all findings"):
        classify_findings({"findings": [{"id": "f1", "votes": votes}, {"id": "f2", "votes": votes[:1]}]})


def cons_payload(ballots: int, options: int = 5, seed: int = 7) -> dict:
    import random

    rng = random.Random(seed)
    votes = []
    for a in range(ballots // options):
        for o in range(options):
            vote = rng.choices(("accept", "reject", "abstain"), (45, 35, 20))[0]
            votes.append({"agentId": f"agent-{a}", "option": f"O{o}", "vote": vote,
                          "confidence": round(rng.uniform(0.05, 1.0), 3), "rationale": f"r {rng.randrange(50)}",
                          "evidence": [{"type": "code"}] if rng.random() < 0.3 else []})
    return {"questionId": "Q", "question": "Which?", "votes": votes}


def test_cons_at_and_past_its_limits():
    data = cons_payload(L.MAX_BALLOTS)
    out = evaluate(data)  # parse, tally, verdict, conflicts, escalations
    assert out.tally.leading_option is not None and len(out.tally.agents) == L.MAX_BALLOTS // 5
    positions = sum(len(c.positions) for c in out.conflicts if c.conflict_type != "contradiction")
    assert positions <= L.MAX_CONFLICT_POSITIONS
    data["votes"].append({**data["votes"][0], "agentId": "one-more"})
    with pytest.raises(InputError, match=r"^votes: has too many items \(100,001; at most 100,000\)$"):
        parse_question(data)


def test_arm_claim_at_and_past_its_limit():
    path = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "arm-protocol" / "traces"
    name = "arm-v0.8-q200-allClaude-roles-1781904686957.json"
    if not (path / name).is_file():
        pytest.skip(f"the ARM corpus is absent: expected {path / name}")
    data = json.loads((path / name).read_text(encoding="utf-8"))
    data["r1"]["alpha"]["claim"] = ("Yes, the system should act. " * 4000)[:L.MAX_ARM_TEXT_CHARS]
    assert metrics_report(data)["jaccard_convergence"] is not None
    data["r1"]["alpha"]["claim"] += "!"
    with pytest.raises(InputError, match=r"^r1\.alpha\.claim: is too long \(100,001 characters"):
        metrics_report(data)


# ── the CONS tally: linear, and the same as before ───────────────────────────────────────────
def old_tally(q: ConsQuestion) -> Tally:
    """The tally as it was before (quadratic): kept verbatim as the reference."""
    options = q.option_order()
    agents = tuple(dict.fromkeys(b.agent_id for b in q.votes))
    voters = tuple(a for a in agents
                   if any(b.agent_id == a and b.vote != "abstain" for b in q.votes))
    per = []
    for o in options:
        on = [b for b in q.votes if b.option == o]
        acc = [b for b in on if b.vote == "accept"]
        rej = [b for b in on if b.vote == "reject"]
        per.append(OptionTally(
            option=o, accept_count=len(acc), accept_weight=sum(b.confidence for b in acc),
            reject_count=len(rej), reject_weight=sum(b.confidence for b in rej),
            abstain_count=sum(b.vote == "abstain" for b in on),
            evidenced_accepts=sum(b.has_evidence for b in acc),
            evidenced_rejects=sum(b.has_evidence for b in rej)))
    # Leading option: largest summed accept confidence; ties (within 1e-9) go to more accepting
    # agents, then to the option that comes first.
    best: OptionTally | None = None
    for t in per:
        if best is None or t.accept_weight > best.accept_weight + TOL or (
                abs(t.accept_weight - best.accept_weight) <= TOL
                and t.accept_count > best.accept_count):
            best = t
    leading = best.option if best is not None else None
    accepters = {b.agent_id for b in q.votes if b.option == leading and b.vote == "accept"}
    a_weight = best.accept_weight if best is not None else 0.0
    opposition = []
    for agent in voters:
        if agent in accepters:
            continue
        mine = [b for b in q.votes if b.agent_id == agent]
        rej = [b for b in mine if b.option == leading and b.vote == "reject"]
        other = [b for b in mine if b.option != leading and b.vote == "accept"]
        if rej:
            opposition.append(Opposition(agent_id=agent, weight=rej[0].confidence,
                                         basis=f"reject {leading}"))
        elif other:
            top = max(other, key=lambda b: b.confidence)  # max; first on ties
            opposition.append(Opposition(agent_id=agent, weight=top.confidence,
                                         basis=f"accept {top.option}"))
        else:
            opposition.append(Opposition(agent_id=agent, weight=0.0, basis="none"))
    b_weight = sum(o.weight for o in opposition)
    total = a_weight + b_weight
    n_acc = sum(1 for a in voters if a in accepters)
    return Tally(options=options, agents=agents, voters=voters, leading_option=leading,
                 accept_count=n_acc, accept_share=n_acc / len(voters) if voters else None,
                 accept_weight=a_weight, oppose_weight=b_weight,
                 actual_consensus=a_weight / total if total > 0 else None,
                 per_option=tuple(per), opposition=tuple(opposition))


ballots = st.lists(st.fixed_dictionaries({
    "agentId": st.sampled_from([f"a{i}" for i in range(6)]),
    "option": st.sampled_from(["A", "B", "C"]),
    "vote": st.sampled_from(["accept", "reject", "abstain"]),
    "confidence": st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 0.85, 0.9, 1.0]) | st.floats(0, 1),
    "rationale": st.sampled_from(["fast", "fast and safe", "slow", "the same words again"]),
    "evidence": st.sampled_from([[], [{"type": "code"}], [{"type": "counter-proof"}]]),
}), max_size=25).map(lambda votes: list({(v["agentId"], v["option"]): v for v in votes}.values()))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ballots, st.booleans())
def test_the_tally_equals_the_old_algorithm(votes, explicit_options):
    data = {"questionId": "Q", "question": "Which?", "votes": votes}
    if explicit_options:
        data["options"] = ["C", "A", "B"]
    q = parse_question(data)
    assert tally(q) == old_tally(q)  # every field, floats bit for bit


def test_a_hundred_thousand_ballots_tally():
    q = parse_question(cons_payload(100_000, options=4))
    t = tally(q)
    assert len(t.agents) == 25_000 and t.leading_option is not None
    assert sum(o.accept_count + o.reject_count + o.abstain_count for o in t.per_option) == 100_000


def test_one_ballot_per_agent_many_agents_tally():
    """The issue's worst shape: many agents, each with one ballot (the old tally was O(agents x ballots))."""
    votes = [{"agentId": f"a{i}", "option": "AB"[i % 2], "vote": "accept" if i % 3 else "reject",
              "confidence": 0.5, "rationale": "r"} for i in range(100_000)]
    t = tally(parse_question({"questionId": "Q", "question": "Q?", "votes": votes}))
    assert len(t.voters) == 100_000 and t.leading_option in ("A", "B")


# ── near-duplicates and conflict pairing ─────────────────────────────────────────────────────
def all_pairs(texts: list[str]) -> bool:
    toks = [tokens(t) for t in texts]
    return len(toks) >= 2 and all(jaccard(x, y) >= NEAR_DUPLICATE_JACCARD - TOL for x, y in combinations(toks, 2))


words = st.lists(st.sampled_from([f"w{i}" for i in range(14)]), min_size=0, max_size=14)


@settings(max_examples=400, deadline=None)
@given(st.lists(words.map(" ".join), max_size=8), st.lists(st.integers(0, 3), max_size=3))
def test_near_duplicates_equals_the_all_pairs_definition(texts, drops):
    base = " ".join(f"w{i}" for i in range(20))  # long texts that differ a little: the middle zone
    near = [" ".join(w for j, w in enumerate(base.split()) if j not in (d, d + 5)) for d in drops]
    for group in (texts, near + [base], near):
        assert near_duplicates(group) == all_pairs(group), group


def test_near_duplicates_of_many_rationales_stay_bounded():
    base = [f"w{i}" for i in range(40)]
    same = ["fast and safe"] * 100_000
    assert near_duplicates(same)
    # each 38/42 (0.905) of the first: between 0.9 and 0.95, where only pairs decide
    varied = [" ".join(base)] + [" ".join([w for j, w in enumerate(base) if j not in (i % 40, (i + 1) % 40)]
                                          + [f"x{i}", f"y{i}"]) for i in range(5_000)]
    reason = _near_duplicate_reason(varied)
    assert reason is not None and "not every pair compared" in reason
    far = varied + ["completely different words here"]
    assert not near_duplicates(far)


def test_paired_groups_bound_the_positions():
    groups = {(f"o{i}",): [(f"a{i}-{j}", 0.5) for j in range(1000)] for i in range(100)}
    chosen = paired_groups(groups)
    members = sum(len(groups[k]) for k in chosen)
    assert 2 <= len(chosen) < 100 and (len(chosen) - 1) * members <= L.MAX_CONFLICT_POSITIONS
    small = {("A",): [("a", 0.5)], ("B",): [("b", 0.5)], ("A", "B"): [("c", 0.9)]}
    assert paired_groups(small) == list(small)
    heavy = {("A",): [("a", 0.1)], ("B",): [("b", 0.9), ("c", 0.9)], ("C",): [("d", 0.5)]}
    assert paired_groups(heavy, limit=2) == [("B",), ("C",)]  # the heaviest, in first-seen order


def test_conflicts_say_when_groups_were_left_unpaired():
    votes = [{"agentId": f"a{i}", "option": f"o{i % 60}", "vote": "accept", "confidence": 0.5, "rationale": "r"}
             for i in range(6_000)]
    q = parse_question({"questionId": "Q", "question": "Q?", "votes": votes})
    pairs = [c for c in detect_conflicts(q) if c.conflict_type != "contradiction"]
    assert pairs and all("heaviest of 60 accept groups are paired" in c.detail for c in pairs)


# ── the findings book: a vote costs O(agents), same results ──────────────────────────────────
finding_votes = st.lists(st.fixed_dictionaries({
    "agent": st.sampled_from(["scout", "auditor", "dev", "x"]),
    "vote_type": st.sampled_from(["confirm", "challenge", "uncertain"]),
    "confidence": st.floats(0, 1)}), max_size=20)


@settings(max_examples=200, deadline=None)
@given(finding_votes)
def test_the_findings_book_equals_the_consensus_of_its_history(votes):
    book = FindingsBook()
    book.create_finding("f1", "claim")
    for v in votes:
        result = book.submit_vote("f1", v)
    expected = consensus(votes)
    got = book.results("f1")
    assert (got.consensus_score, got.status, got.voting_agents, got.votes_total) == (
        expected.consensus_score, expected.status, expected.voting_agents, expected.votes_total)
    assert len(book.history("f1")) == len(votes) and book.finding("f1").votes == book.history("f1")
    if votes:
        assert result == got


# ── ARM tokenising and JSON strings: linear, and the same as the per-character loops ─────────
def old_token_fold(text: str) -> str:
    special = {"\u0130": "i ", "\u212a": "k"}
    return "".join(ch.lower() if ch < "\x80" else special.get(ch, " ") for ch in text)


def old_js_string(s: str) -> str:
    escapes = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = ['"']
    for ch in s:
        cp = ord(ch)
        if ch in escapes:
            out.append(escapes[ch])
        elif cp < 0x20 or 0xD800 <= cp <= 0xDFFF:
            out.append(f"\\u{cp:04x}")
        else:
            out.append(ch)
    return "".join(out) + '"'


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=()), max_size=60)
       | st.text(alphabet="aZ_9 \t\n\"\\\x00\x1f\x7f\u0130\u212aé—\ud800\udfff", max_size=60))
def test_token_fold_and_js_string_equal_the_old_loops(text):
    assert token_fold(text) == old_token_fold(text)
    assert _js_string(text) == old_js_string(text)


def test_a_claim_at_the_limit_tokenises():
    claim = "Ünïcode — words and more words " * (L.MAX_ARM_TEXT_CHARS // 30)
    assert js_words(claim)[:3] == ["n", "code", "words"]


# ── a long reply is kept, cut, with a note ───────────────────────────────────────────────────
def test_a_reply_past_the_limit_is_stored_cut_with_a_note(tmp_path, monkeypatch):
    from tests.support.fake_llm_server import FakeLLMServer, Reply
    from workbench.core.project import _sql
    from workbench.core.project.store import Store
    from workbench.services.runs.runner import Runner

    long_text = "Closing the centre helps. " * (L.MAX_REPLY_CHARS // 20)

    def reply(request) -> str:
        return "YES" if "Response to evaluate" in request.messages[-1]["content"] else long_text

    monkeypatch.setenv("LOOP_KEY", "sk-loopback")
    with FakeLLMServer(default=Reply(text=reply)) as server:
        cfg = parse_run_config({**RCP, "providers": {"local": {
            "model": "openai/fake-model", "api_base": server.base_url, "api_key_env": "LOOP_KEY", "timeout_s": 20}},
            "clusters": [{"name": c, "agents": [{"id": f"{c}{i}", "provider": "local"} for i in (1, 2)]}
                         for c in ("a", "c")]})
        store = Store.create(tmp_path / "p.rwb")
        try:
            runner = Runner(store)
            run_id = runner.execute(runner.create(cfg))["run_id"]
            rows = _sql.rows(store, "llm_calls", "run_id = ? AND purpose = 'generate'", (run_id,))
            assert len(rows) == 4
            for row in rows:
                assert row["reply_text"] == long_text[:L.MAX_REPLY_CHARS]
                note = row["response_json"]["reply_meta"]["clipped"]
                assert note["original_chars"] == len(long_text) and note["kept_chars"] == L.MAX_REPLY_CHARS
            votes = _sql.rows(store, "llm_calls", "run_id = ? AND purpose = 'vote'", (run_id,))
            assert votes and all(len(json.dumps(r["request_json"])) < 3 * L.MAX_REPLY_CHARS for r in votes)
        finally:
            store.close_connection()
