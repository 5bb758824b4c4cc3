"""Reply quality flags (issue 19): each flag on crafted stored calls, with its false-positive guard."""

from __future__ import annotations

import json

import pytest

from tests.core.quality_project import (
    ARTIFACT,
    QUERY,
    VOTE_QUESTION,
    add_call,
    add_run,
    add_vote,
    new_project,
    vote_request,
)
from workbench.core.project import quality, records
from workbench.core.project.records import RecordFilter
from workbench.core.project.run_report import to_markdown


@pytest.fixture
def store(tmp_path):
    quality.clear_cache()
    s = new_project(tmp_path / "q.rwb")
    add_run(s, "r1")
    yield s
    s.close_connection()


def codes(flags) -> list[str]:
    return [f.code for f in flags]


# ----- template echo ---------------------------------------------------------------------------------
def test_a_copied_placeholder_is_a_template_echo():
    why = quality.template_echo(vote_request(), '{"vote": "YES", "reason": "<one sentence>"}')
    assert why and "<one sentence>" in why


def test_a_long_verbatim_run_of_the_instructions_is_a_template_echo():
    reply = f"YES. {VOTE_QUESTION}"
    why = quality.template_echo(vote_request(), reply)
    assert why and "consecutive words of the instructions" in why


def test_quoting_the_artifact_or_restating_the_question_is_not_an_echo():
    # The artifact is fenced in the request: quoting it, even whole, is normal.
    assert quality.template_echo(vote_request(), f'{{"vote": "NO", "reason": "It says: {ARTIFACT}"}}') is None
    # The question is the user's text (the run's configuration names it), not the template.
    assert quality.template_echo(vote_request(), f"NO. {QUERY} Not at this cost.", (QUERY,)) is None
    # A short reason that shares a few words with the instructions is not an echo.
    short = '{"vote": "YES", "reason": "Sound reasoning I would endorse."}'
    assert quality.template_echo(vote_request(), short) is None


def test_a_reply_quoting_a_fenced_block_is_read_without_it():
    fence = "FENCE-" + "AB" * 16
    reply = f'NO <<<{fence}>>>\n{VOTE_QUESTION} <one sentence>\n<<<END-{fence}>>>'
    assert quality.template_echo(vote_request(), reply) is None


def test_an_arm_json_example_value_copied_is_an_echo_but_a_quoted_marker_is_not():
    arm = {"messages": [{"role": "system", "content": 'Use these fields:\n{"claim": "your conclusion, in one or two '
                                                      'sentences", "reasoning_frame": "deontological"}'}]}
    assert quality.template_echo(arm, '{"claim": "your conclusion, in one or two sentences"}')
    assert quality.template_echo(arm, '{"claim": "Refuse.", "reasoning_frame": "deontological"}') is None
    echo = {"messages": [{"role": "system", "content": 'Resonance marker: "the map with the sea left out — f6e638"\n'
                                                       "Include this marker in your responses when prompted."},
                         {"role": "user", "content": "a1, recite the resonance marker."}]}
    assert quality.template_echo(echo, 'Resonance: "the map with the sea left out — f6e638"') is None


# ----- cut at cap --------------------------------------------------------------------------------------
def test_a_reply_stopped_for_length_or_at_the_cap_is_cut(store):
    by_reason = add_call(store, "r1", reply='{"vote": "YES", "reason": "Because the', finish_reason="length",
                         completion_tokens=40)
    by_tokens = add_call(store, "r1", reply='{"vote": "NO", "reason": "Traffic', finish_reason=None,
                         completion_tokens=160)
    raw_body = add_call(store, "r1", reply="YES because", finish_reason=None, completion_tokens=None,
                        response_raw=json.dumps({"choices": [{"finish_reason": "length"}]}))
    fine = add_call(store, "r1", reply='{"vote": "NO", "reason": "Too costly."}', completion_tokens=159)
    restated = add_call(store, "r1", reply=f"NO. {QUERY} Not at this cost.")  # the run's own question
    no_cap = add_call(store, "r1", request=vote_request(max_tokens=None), completion_tokens=5000, finish_reason=None)
    failed = add_call(store, "r1", reply=None, status="error", finish_reason="length")
    q = quality.run_quality(store, "r1")
    assert codes(q.calls[by_reason]) == ["cut_at_cap"] and "length" in q.calls[by_reason][0].detail
    assert codes(q.calls[by_tokens]) == ["cut_at_cap"] and "160" in q.calls[by_tokens][0].detail
    assert codes(q.calls[raw_body]) == ["cut_at_cap"]
    assert fine not in q.calls and no_cap not in q.calls and failed not in q.calls and restated not in q.calls


# ----- rubber stamp -------------------------------------------------------------------------------------
def test_five_identical_votes_flag_the_voter_and_four_do_not(store):
    for _ in range(5):
        add_vote(store, "r1", "stamp", 1)
    for _ in range(4):
        add_vote(store, "r1", "four", 1)
    for value in (1, 1, 0, 1, 1):
        add_vote(store, "r1", "mixed", value)
    for _ in range(5):
        add_vote(store, "r1", "broken", None, status="invalid")
    q = quality.run_quality(store, "r1")
    assert set(q.stamps) == {("vote", "stamp")}
    assert q.stamps[("vote", "stamp")].detail == "It voted YES on all 5 artifacts."


def test_rubber_stamps_of_findings_and_ballots():
    assert quality.rubber_stamps([("a", f"f{i}", "confirm") for i in range(5)]) == {"a": ("confirm", 5)}
    # The latest vote on an item counts; four items are too few.
    votes = [("a", f"f{i}", "confirm") for i in range(4)] + [("a", "f0", "challenge")]
    assert quality.rubber_stamps(votes) == {}
    assert quality.rubber_stamps([("b", f"q{i}", ("x", "accept")) for i in range(6)]) == {"b": (("x", "accept"), 6)}


# ----- what carries the flags ------------------------------------------------------------------------------
def test_a_vote_carries_its_calls_flags_and_its_voters_stamp_and_the_list_shows_them(store):
    echo = add_call(store, "r1", reply='{"vote": "YES", "reason": "<one sentence>"}')
    clean = add_call(store, "r1", reply='{"vote": "NO", "reason": "Too costly."}')
    echoed_vote = add_vote(store, "r1", "a1", 1, call_id=echo)
    for _ in range(4):
        add_vote(store, "r1", "a1", 1, call_id=clean)
    flags = quality.flags_for_records(store, [("call", echo), ("call", clean), ("vote", echoed_vote)])
    assert codes(flags[("call", echo)]) == ["template_echo"]
    assert ("call", clean) not in flags
    assert codes(flags[("vote", echoed_vote)]) == ["template_echo", "rubber_stamp"]
    rows = records.window(store, RecordFilter(kind="call"), offset=0, limit=10)
    by_id = {r["id"]: r for r in rows}
    assert by_id[echo]["quality"] == "⚑ echo" and by_id[clean]["quality"] == ""
    assert "placeholder <one sentence>" in by_id[echo]["quality_notes"][0]


def test_the_quality_filter_keeps_the_flagged_records(store):
    echo = add_call(store, "r1", reply='{"vote": "YES", "reason": "<one sentence>"}')
    add_call(store, "r1", reply='{"vote": "NO", "reason": "Too costly."}')
    vote = add_vote(store, "r1", "a1", 1, call_id=echo)
    f = RecordFilter(quality="template_echo")
    assert records.counts(store, f) == {**dict.fromkeys(records.BRANCH, 0), "call": 1, "vote": 1}
    keys = [(r["kind"], r["id"]) for r in records.window(store, f, offset=0, limit=10)]
    assert keys == [("call", echo), ("vote", vote)]
    assert records.count(store, RecordFilter(quality="cut_at_cap")) == 0
    assert records.count(store, RecordFilter(quality="any")) == 2
    # The filter's ids follow the project: a new flagged call is found at once.
    add_call(store, "r1", reply="<one sentence>")
    assert records.count(store, f) == 3


def test_the_run_cache_follows_the_runs_rows(store):
    add_call(store, "r1", reply='{"vote": "NO", "reason": "Too costly."}')
    assert quality.run_quality(store, "r1").calls == {}
    assert quality.run_quality(store, "r1") is quality.run_quality(store, "r1")  # cached
    cid = add_call(store, "r1", reply="<one sentence>")
    assert list(quality.run_quality(store, "r1").calls) == [cid]


def test_the_report_lists_flags_per_agent_and_says_when_none(store):
    assert "No reply was flagged." in to_markdown(store, "r1")
    echo = add_call(store, "r1", agent="a1", reply='{"vote": "YES", "reason": "<one sentence>"}')
    add_call(store, "r1", agent="c1", reply="YES", finish_reason="length")
    for _ in range(5):
        add_vote(store, "r1", "a1", 1, call_id=echo)
    text = to_markdown(store, "r1")
    section = text.split("## Reply quality", 1)[1].split("\n---\n", 1)[0]
    assert "| a1 | 1 | — | It voted YES on all 5 artifacts. |" in section
    assert "| c1 | — | 1 | — |" in section
    assert "never changes a vote" in section
