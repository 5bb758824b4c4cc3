"""The findings and CONS steps' templates through ``rwb`` (SPEC §7): an override reaches exactly its
step's calls (the conductor's decision included), every call stores its template's hash, the
simulated replies do not change, and a bad override is refused before anything is written."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.runs.test_run_outcomes import SAMPLES, last_json, rows, rwb, sample, write

CAREFUL_VOTE = """{#- a stricter wording of the findings vote -#}
{% block system %}You review as the {{ role }}.{% if persona %} {{ persona }}{% endif %}{% endblock %}
{% block user %}Would you stake your name on this finding?

{{ claim }}{% if context %}
{{ context }}{% endif %}

{{ reply_format }}{% endblock %}
"""
BLUNT_CHALLENGE = """{% block user %}Question {{ question_id }}: {{ question }}
Options: {{ options|join(" / ") }}
{% if positions %}Your peers argued as follows; answer their strongest point:
{{ positions }}{% endif %}
{{ reply_format }}{% endblock %}
"""
PLAIN_DECISION = """{% block user %}The panel could not settle {{ question_id }} ({{ reasons|join(", ") }}).
What do you decide about: {{ question }}{% endblock %}
"""
DECISIONS = str(SAMPLES / "cons-verdicts.decisions.json")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_findings_vote_override_reaches_every_vote_and_leaves_sims_votes_alone(tmp_path):
    (tmp_path / "careful.j2").write_text(CAREFUL_VOTE)
    plain, edited = tmp_path / "plain.rwb", tmp_path / "edited.rwb"
    base = sample("findings-sim.json")
    assert rwb("run", write(tmp_path, "a.json", base), "--project", str(plain), "--quiet").returncode == 0
    out = rwb("run", write(tmp_path, "b.json", {**base, "prompts": {"vote": {"file": "careful.j2"}}}),
              "--project", str(edited), "--quiet")
    assert out.returncode == 0, out.stderr
    summary = last_json(out)
    assert summary["prompts"] == {"vote": {"sha256": sha(CAREFUL_VOTE), "default": False}}
    assert any("does not read prompts" in w for w in summary["warnings"])
    calls = rows(edited, "SELECT request_json, template_sha256 FROM llm_calls")
    assert len(calls) == 6 and all(h == sha(CAREFUL_VOTE) for _, h in calls)
    for request, _ in calls:
        system, user = (m["content"] for m in json.loads(request)["messages"])
        assert system.startswith("You review as the ") and user.startswith("Would you stake your name")
        assert "<<<FENCE-" in user  # the claim still arrives fenced
    query = "SELECT step_key, reply_text, status FROM llm_calls ORDER BY step_key"
    assert rows(plain, query) == rows(edited, query)
    votes = "SELECT finding_id, agent, vote_type, confidence, status FROM finding_votes ORDER BY finding_id, agent"
    assert rows(plain, votes) == rows(edited, votes)


def test_cons_challenge_and_decision_overrides_reach_their_calls_and_only_theirs(tmp_path):
    plain, edited = tmp_path / "plain.rwb", tmp_path / "edited.rwb"
    base = sample("cons-contested.json")
    first = rwb("run", write(tmp_path, "a.json", base), "--project", str(plain), "--quiet", "--decisions", DECISIONS)
    assert first.returncode == 0, first.stderr
    out = rwb("run", write(tmp_path, "b.json", {**base, "prompts": {"challenge": BLUNT_CHALLENGE,
                                                                    "decision": PLAIN_DECISION}}),
              "--project", str(edited), "--quiet", "--decisions", DECISIONS)
    assert out.returncode == 0, out.stderr
    summary = last_json(out)
    assert {s: p["default"] for s, p in summary["prompts"].items()} == {"ballot": True, "challenge": False,
                                                                        "decision": False}
    calls = rows(edited, "SELECT step_key, purpose, request_json, template_sha256 FROM llm_calls ORDER BY step_key")
    by_round = {}
    for key, _purpose, request, digest in calls:
        user = json.loads(request)["messages"][-1]["content"]
        if key.startswith("cons/0/"):
            by_round.setdefault("ballot", []).append((user.startswith("Decision question"), digest))
        elif key == "cons/hitl":
            by_round["decision"] = [(user == "The panel could not settle CONS-103 (contested_verdict).\n"
                                             f"What do you decide about: {base['query']}", digest)]
        else:
            by_round.setdefault("challenge", []).append(("answer their strongest point" in user
                                                         and "<<<FENCE-" in user, digest))
    assert by_round["ballot"] == [(True, summary["prompts"]["ballot"]["sha256"])] * 5
    assert by_round["challenge"] == [(True, sha(BLUNT_CHALLENGE))] * 10
    assert by_round["decision"] == [(True, sha(PLAIN_DECISION))]
    query = "SELECT step_key, reply_text, status FROM llm_calls ORDER BY step_key"
    assert rows(plain, query) == rows(edited, query)
    assert last_json(first)["cons"] == summary["cons"]  # the same ballots, verdict and decision


@pytest.mark.parametrize("prompts, field", [
    ({"challenge": "{% block user %}{{ positions }}{% endblock %}"},
     "prompts.challenge: leaves out the required variable 'reply_format'"),
    ({"decision": "{% block user %}{{ question }} {{ api_key }}{% endblock %}"},
     "prompts.decision: line 1: unknown variable 'api_key'"),
    ({"ballot": "{% block user %}{{ positions }} {{ reply_format }}{% endblock %}"},
     "prompts.ballot: line 1: unknown variable 'positions'"),  # the opening round has no peers to show
    ({"hitl": "x"}, "prompts.hitl: cons has no step 'hitl'"),
    # a filter Jinja2 does not have is found when the template is compiled, and refused all the same
    ({"decision": "{% block user %}\n{{ reasons|nosuchfilter }}{% endblock %}"},
     "prompts.decision: line 2: syntax error: No filter named 'nosuchfilter'"),
])
def test_a_bad_cons_override_is_refused_before_anything_is_written(tmp_path, prompts, field):
    project = tmp_path / "p.rwb"
    out = rwb("run", write(tmp_path, "c.json", {**sample("cons-sim.json"), "prompts": prompts}), "--project", str(project))
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in out.stderr, out.stderr
    assert not project.exists() and out.stdout == ""


def test_protocols_show_lists_the_steps_and_marks_what_models_wrote_as_untrusted():
    out = rwb("protocols", "show", "cons", "--json")
    assert out.returncode == 0, out.stderr
    steps = {s["name"]: s for s in json.loads(out.stdout)["steps"]}
    assert list(steps) == ["ballot", "challenge", "decision"]
    untrusted = {s: [v["name"] for v in step["variables"] if v["untrusted"]] for s, step in steps.items()}
    assert untrusted == {"ballot": [], "challenge": ["positions"], "decision": []}
    assert steps["decision"]["template"].count("Your decision:") == 1 and steps["decision"]["reply_schema"] is None
    found = json.loads(rwb("protocols", "show", "findings", "--json").stdout)["steps"]
    assert [(s["name"], [v["name"] for v in s["variables"] if v["untrusted"]]) for s in found] == [
        ("vote", ["claim", "context"])]
