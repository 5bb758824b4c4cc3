"""SPEC §1 "A run's validity": every run counts the votes it expected, cast, abstained, unreadable
and failed; past `max_missing_share` it ends `degraded` (exit 3), keeps its results and says why."""

from __future__ import annotations

import pytest

from tests.runs.test_run_outcomes import last_json, rows, rwb, sample, write
from tests.support.fake_llm_server import FakeLLMServer, Reply


def unreadable(data: dict, rate: float) -> dict:
    """The simulated panel with every agent's structured replies unreadable at ``rate``."""
    for cluster in data["clusters"]:
        for agent in cluster["agents"]:
            agent["params"] = {**agent.get("params", {}), "malformed_rate": rate}
    return data


def test_a_run_with_most_votes_unreadable_ends_degraded_exits_3_and_keeps_its_results(tmp_path):
    project = tmp_path / "p.rwb"
    out = rwb("run", write(tmp_path, "run.json", unreadable(sample("rcp-sim.json"), 0.5)), "--project", str(project))
    assert out.returncode == 3, out.stderr
    s = last_json(out)
    assert s["status"] == "degraded" and s["votes_expected"] == 30  # 6 artifacts × 5 voters
    assert s["votes_cast"] + s["votes_invalid"] + s["votes_failed"] == 30 and s["votes_failed"] == 0
    assert s["missing_share"] == pytest.approx(s["votes_invalid"] / 30) and s["missing_share"] > 0.2
    assert s["missing_reasons"][0]["reason"] == "unreadable reply"
    [line] = [ln for ln in out.stderr.splitlines() if ln.startswith("rwb:")]
    assert "ended degraded" in line and "of the expected votes are missing" in line
    # The results stand, counted in the project, and the run list says degraded.
    assert rows(project, "SELECT status FROM runs") == [("degraded",)]
    assert rows(project, "SELECT count(*) FROM votes WHERE status = 'valid'") == [(s["votes_cast"],)]
    listed = rwb("runs", "--project", str(project))
    assert "degraded" in listed.stdout
    report = rwb("export", s["run_id"], "--project", str(project), "--format", "md")
    assert "> **Degraded run.**" in report.stdout and f"- **Votes**: 30 expected, {s['votes_cast']} cast" in report.stdout


def test_the_floor_is_the_configs_max_missing_share(tmp_path):
    data = {**unreadable(sample("rcp-sim.json"), 0.5), "max_missing_share": 0.9}
    out = rwb("run", write(tmp_path, "run.json", data), "--project", str(tmp_path / "p.rwb"))
    assert out.returncode == 0, out.stderr
    assert last_json(out)["status"] == "completed" and last_json(out)["votes_invalid"] > 0
    bad = rwb("run", write(tmp_path, "bad.json", {**data, "max_missing_share": 1.5}), "--project",
              str(tmp_path / "q.rwb"))
    assert bad.returncode == 2 and "max_missing_share" in bad.stderr


def test_a_clean_run_counts_every_vote_cast(tmp_path):
    out = rwb("run", str(sample_path("cons-sim.json")), "--project", str(tmp_path / "p.rwb"))
    s = last_json(out)
    assert s["status"] == "completed" and s["votes_expected"] == 5 == s["votes_cast"] + s["votes_abstained"]
    assert s["missing_share"] == 0


def test_failed_calls_are_missing_votes_with_their_reason(tmp_path):
    """A real provider that answers the generations, then fails every vote call: the votes are
    lost to failed calls, and no artifact gets a tier it was never voted on."""
    def answer(request):
        return Reply(status=500, error_message="overloaded") if "vote" in str(request.body).lower() else None

    with FakeLLMServer(default=Reply(text="Close it on weekends first, and measure.")) as server:
        server.rule = lambda request: answer(request)
        data = {**sample("rcp-sim.json"), "providers": {"sim": {
            "model": "openai/fake-model", "api_base": server.base_url, "api_key_env": "LOOP_KEY", "max_retries": 0}}}
        out = rwb("run", write(tmp_path, "run.json", data), "--project", str(tmp_path / "p.rwb"))
    assert out.returncode == 3, out.stderr
    s = last_json(out)
    assert s["status"] == "degraded" and s["votes_failed"] == s["votes_expected"] == 30 and s["votes_cast"] == 0
    assert s["missing_reasons"][0]["reason"].startswith("call failed")
    assert {st["tier"] for st in s["rounds"][-1]["states"]} == {"unclassified"}


def sample_path(name: str):
    from tests.runs.test_run_outcomes import SAMPLES

    return SAMPLES / name


def test_an_artifact_whose_generation_failed_counts_its_votes_as_missing(tmp_path):
    """Votes never asked because the artifact was never written are still missing votes."""
    def answer(request):
        user = str(request.body)
        if "Answer in one or two short paragraphs" in user and ("a1" in user or "Urban planner" in user):
            return Reply(status=500, error_message="overloaded")
        return None

    with FakeLLMServer(default=Reply(text='{"vote": "YES", "reason": "fine"}')) as server:
        server.rule = answer
        data = {**sample("rcp-sim.json"), "providers": {"sim": {
            "model": "openai/fake-model", "api_base": server.base_url, "api_key_env": "LOOP_KEY", "max_retries": 0}}}
        out = rwb("run", write(tmp_path, "run.json", data), "--project", str(tmp_path / "p.rwb"))
    s = last_json(out)
    assert s["votes_expected"] == 30 and s["votes_failed"] >= 5  # a1's artifact: 5 votes never asked
    assert any("never voted on" in r["reason"] for r in s["missing_reasons"])


def test_a_degraded_run_resumed_issues_only_its_failed_calls_again_and_completes(tmp_path):
    """A degraded run's results stand, marked; `rwb resume` issues again the calls that failed
    (and the votes they made possible), never the ones that succeeded, and re-judges the run."""
    failing = {"on": True}

    def answer(request):
        if failing["on"] and "vote" in str(request.body).lower():
            return Reply(status=500, error_message="overloaded")
        return None

    project = tmp_path / "p.rwb"
    with FakeLLMServer(default=Reply(text='{"vote": "YES", "reason": "fine"}')) as server:
        server.rule = answer
        data = {**sample("rcp-sim.json"), "providers": {"sim": {
            "model": "openai/fake-model", "api_base": server.base_url, "api_key_env": "LOOP_KEY", "max_retries": 0}}}
        first = rwb("run", write(tmp_path, "run.json", data), "--project", str(project))
        assert first.returncode == 3, first.stderr
        s = last_json(first)
        assert s["status"] == "degraded" and s["votes_failed"] == 30
        run_id = s["run_id"]
        assert f"rwb resume {run_id} issues its 30 failed call(s) again" in first.stderr
        sent_before = len(server.chat_requests)
        failing["on"] = False  # the provider is back
        again = rwb("resume", run_id, "--project", str(project))
        resent = server.chat_requests[sent_before:]
    assert again.returncode == 0, again.stderr
    r = last_json(again)
    assert r["status"] == "completed" and r["votes_cast"] == 30 and r["votes_failed"] == 0
    assert len(resent) == 30 and all("vote" in str(q.body).lower() for q in resent)  # no generation again
    assert rows(project, "SELECT status FROM runs") == [("completed",)]
