"""A config's ``prompts`` (SPEC §7) through ``rwb run``: an override reaches exactly its step's calls,
the run and every call carry the right hashes, a simulated run says sim does not read prompts, and
each bad override is refused with exit 2 before anything is written or sent."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.runs.test_run_outcomes import last_json, rows, rwb, sample, write
from tests.support.fake_llm_server import FakeLLMServer, Reply

STRICT_VOTE = """{% block system %}{{ persona or "You are a strict reviewer." }}{% endblock %}
{% block user %}Question: {{ query }}

Would you sign your name under this response? Answer YES or NO.

{{ artifact }}

{{ reply_format }}{% endblock %}
"""


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_a_vote_override_reaches_every_vote_call_and_no_other(tmp_path):
    (tmp_path / "strict.j2").write_text(STRICT_VOTE)
    config = write(tmp_path, "c.json", {**sample("rcp-sim.json"), "prompts": {"vote": {"file": "strict.j2"}}})
    project = tmp_path / "p.rwb"
    out = rwb("run", config, "--project", str(project), "--quiet")
    assert out.returncode == 0, out.stderr
    summary = last_json(out)
    assert summary["prompts"]["vote"] == {"sha256": sha(STRICT_VOTE), "default": False}
    assert summary["prompts"]["generate"]["default"] is True and summary["workbench_version"]
    assert any("does not read prompts" in w for w in summary["warnings"])
    calls = rows(project, "SELECT purpose, request_json, template_sha256 FROM llm_calls")
    votes = [c for c in calls if c[0] == "vote"]
    assert len(votes) == 30 and all(c[2] == sha(STRICT_VOTE) for c in votes)
    assert all("Would you sign your name" in c[1] for c in votes)
    assert not any("Would you sign your name" in c[1] for c in calls if c[0] != "vote")
    assert all(c[2] == summary["prompts"]["generate"]["sha256"] for c in calls if c[0] == "generate")
    ((provenance,),) = rows(project, "SELECT provenance_json FROM runs")
    made = json.loads(provenance)
    assert made["prompts"]["vote"]["text"] == STRICT_VOTE and made["protocols"]["rcp"]


def test_an_edited_prompt_leaves_the_simulated_replies_alone(tmp_path):
    plain, edited = tmp_path / "plain.rwb", tmp_path / "edited.rwb"
    base = sample("rcp-sim.json")
    assert rwb("run", write(tmp_path, "a.json", base), "--project", str(plain), "--quiet").returncode == 0
    assert rwb("run", write(tmp_path, "b.json", {**base, "prompts": {"vote": STRICT_VOTE}}),
               "--project", str(edited), "--quiet").returncode == 0
    query = "SELECT step_key, reply_text FROM llm_calls ORDER BY step_key"
    assert rows(plain, query) == rows(edited, query)


def test_a_real_provider_receives_the_edited_prompt(tmp_path):
    with FakeLLMServer(default=Reply(text=lambda r: '{"vote": "NO", "reason": "no"}' if "sign your name"
                                     in json.dumps(r.messages) else "An answer of my own.")) as server:
        config = {**sample("rcp-sim.json"), "prompts": {"vote": STRICT_VOTE},
                  "providers": {"sim": {"model": "openai/fake", "api_base": server.base_url}}}
        out = rwb("run", write(tmp_path, "c.json", config), "--project", str(tmp_path / "p.rwb"), "--quiet")
        assert out.returncode == 0, out.stderr
        asked = [json.dumps(r.messages) for r in server.chat_requests]
    assert sum("sign your name" in a for a in asked) == 30 and len(asked) == 36
    assert "warnings" not in last_json(out) or not any("sim" in w for w in last_json(out)["warnings"])


@pytest.mark.parametrize("prompts, field", [
    ({"nope": "x"}, "prompts.nope"),
    ({"vote": "{% block user %}{{ artifact }{% endblock %}"}, "prompts.vote: line 1: syntax error"),
    ({"vote": "{% block user %}{{ artifact }} {{ reply_format }} {{ api_key }}{% endblock %}"},
     "prompts.vote: line 1: unknown variable 'api_key'"),
    ({"vote": "{% block user %}{{ artifact }}{% endblock %}"}, "prompts.vote: leaves out the required variable"),
    ({"vote": {"file": "missing.j2"}}, "prompts.vote.file: no such file"),
    ({"vote": {"path": "x"}}, "prompts.vote"),
])
def test_a_bad_override_is_refused_before_anything_is_written(tmp_path, prompts, field):
    config = write(tmp_path, "c.json", {**sample("rcp-sim.json"), "prompts": prompts})
    project = tmp_path / "p.rwb"
    out = rwb("run", config, "--project", str(project))
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and field in lines[0], out.stderr
    assert not project.exists() and out.stdout == ""


def test_a_prompt_set_unknown_to_the_project_is_refused(tmp_path):
    config = write(tmp_path, "c.json", {**sample("rcp-sim.json"), "prompt_set": "stricter"})
    out = rwb("run", config, "--project", str(tmp_path / "p.rwb"))
    assert out.returncode == 2 and "prompt_set: no prompt set named 'stricter'" in out.stderr
    project = tmp_path / "p.rwb"
    assert not project.exists() or rows(project, "SELECT count(*) FROM runs") == [(0,)]
