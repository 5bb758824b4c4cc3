"""``rwb study run|resume|report|export`` through ``workbench.cli.main`` (SPEC §9): refusals that
name the arm and spend nothing, the summary, the report in every format, the bundle that joins back
to the project file row for row, and ``rwb runs`` placing each run in its study."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import pytest

from workbench.cli import main


def base(**extra) -> dict:
    agents = lambda side, stance: [{"id": f"{side[0]}{i}", "provider": "sim", "persona": f"{side} {i}.",
                                    "params": {"stance": stance}} for i in (1, 2, 3)]
    return {"protocol": "rcp", "label": "Centre", "query": "Should the city close its downtown to private cars?",
            "seed": 11, "dispatch": "sequential", "providers": {"sim": {"model": "sim"}}, "theta": 0.5, "tau": 0.6,
            "clusters": [{"name": "advocate", "agents": agents("advocate", 0.75)},
                         {"name": "critic", "agents": agents("critic", 0.3)}], **extra}


ARMS = [{"name": "as configured"},
        {"name": "theta 0.67", "set": {"theta": 0.67}},
        {"name": "strict critics", "patch": [{"op": "add", "path": "/clusters/1/agents/0/params/strictness",
                                              "value": 0.95}]}]


def write_study(tmp_path: Path, arms=ARMS, **extra) -> Path:
    (tmp_path / "base.json").write_text(json.dumps(base()))
    path = tmp_path / "study.json"
    path.write_text(json.dumps({"study": "centre", "base": "base.json", "replicates": 3, "arms": arms, **extra}))
    return path


def rwb(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def db(project: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(project)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


@pytest.fixture
def ran(tmp_path, capsys):
    project = tmp_path / "p.rwb"
    code, out, err = rwb(capsys, "study", "run", str(write_study(tmp_path)), "--project", str(project), "--quiet")
    assert code == 0, err
    lines = out.strip().splitlines()
    return project, lines[0], json.loads(lines[-1])


# ----- refused before anything is spent -------------------------------------------------------------

@pytest.mark.parametrize(("arm", "starts"), [
    ({"name": "bad patch", "patch": [{"op": "remove", "path": "/clusters/7"}]}, "arms[1] (bad patch): patch: "),
    ({"name": "invalid", "set": {"tau": 0.4}}, "arms[1] (invalid): tau: "),
    ({"name": "unknown key", "patch": [{"op": "add", "path": "/temprature", "value": 1}]}, "arms[1] (unknown key): temprature"),
])
def test_a_bad_arm_exits_2_naming_it_and_writes_nothing(tmp_path, capsys, arm, starts):
    project = tmp_path / "p.rwb"
    code, out, err = rwb(capsys, "study", "run", str(write_study(tmp_path, [ARMS[0], arm])), "--project", str(project))
    assert code == 2 and out == ""
    assert err.startswith(f"rwb study: error: {starts}") and err.count("\n") == 1
    assert not project.exists()


def test_an_unknown_baseline_exits_2_naming_it(tmp_path, capsys):
    project = tmp_path / "p.rwb"
    code, _out, err = rwb(capsys, "study", "run", str(write_study(tmp_path, baseline="nope")), "--project", str(project))
    assert code == 2 and err == "rwb study: error: baseline: no arm named 'nope' (arms: as configured, theta 0.67, " \
                                "strict critics)\n"
    assert not project.exists()


def test_the_estimate_gives_each_arm_and_creates_nothing(tmp_path, capsys):
    code, out, _err = rwb(capsys, "study", "run", str(write_study(tmp_path)), "--estimate")
    assert code == 0
    est = json.loads(out)
    arms = {a["name"]: a for a in est["arms"]}
    assert arms["as configured"]["calls"] == 3 * (6 + 30) and arms["strict critics"]["calls"] == 108
    assert arms["theta 0.67"] == {**arms["theta 0.67"], "calls": 0, "reused_calls": 108, "rule_only_of": "as configured"}
    assert est["calls"] == 216 and est["runs"] == 9
    assert any("theta = 0.67 of cluster 'advocate' acts as 1 (unanimity) with 3 voters" in w for w in est["warnings"])
    assert list(tmp_path.glob("*.rwb")) == []


# ----- running ------------------------------------------------------------------------------------

def test_a_study_prints_its_id_then_each_arms_runs_calls_and_reuse(ran):
    project, study_id, summary = ran
    assert study_id.startswith("study-") and summary["study_id"] == study_id and summary["status"] == "completed"
    arms = {a["name"]: a for a in summary["arms"]}
    assert {n: (a["runs"], a["calls"], a["calls_reused"], a["status"]) for n, a in arms.items()} == {
        "as configured": (3, 108, 0, "completed"), "theta 0.67": (3, 0, 108, "completed"),
        "strict critics": (3, 108, 0, "completed")}
    assert arms["theta 0.67"]["rule_only_of"] == "as configured" and arms["theta 0.67"]["changes"] == ["/theta"]
    # The rule-only arm has no run of its own: its results are classification variants.
    assert db(project, "SELECT count(*) FROM runs WHERE arm = 'theta 0.67'") == [(0,)]
    assert db(project, "SELECT count(*) FROM classification_variants v JOIN study_results s ON s.variant_id = v.id "
                       "WHERE s.arm = 'theta 0.67'") == [(3,)]
    # Pairing: replicate r of every arm ran with seed 11 + r; labels keep the base's.
    assert sorted(db(project, "SELECT arm, replicate, seed FROM runs")) == sorted(
        (arm, r, 11 + r) for arm in ("as configured", "strict critics") for r in range(3))
    assert db(project, "SELECT label FROM runs WHERE arm = 'strict critics' AND replicate = 2") == [
        ("Centre · strict critics · Q1 · rep 2",)]


def test_runs_lists_study_arm_item_and_replicate(ran, capsys):
    project, study_id, _summary = ran
    code, out, _err = rwb(capsys, "runs", "--project", str(project), "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 6
    assert {(r["study_id"], r["arm"], r["item"]) for r in rows} == {(study_id, "as configured", "Q1"),
                                                                     (study_id, "strict critics", "Q1")}
    assert sorted(r["replicate"] for r in rows) == [0, 0, 1, 1, 2, 2]
    code, table, _err = rwb(capsys, "runs", "--project", str(project))
    assert "BATCH/STUDY" in table and "ARM" in table and "strict critics" in table and study_id[:20] in table


def test_resume_of_a_finished_study_changes_nothing(ran, capsys):
    project, study_id, summary = ran
    before = db(project, "SELECT count(*) FROM llm_calls")
    code, out, _err = rwb(capsys, "study", "resume", study_id, "--project", str(project), "--quiet")
    again = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and again["runs"] == summary["runs"] and db(project, "SELECT count(*) FROM llm_calls") == before


# ----- the report -----------------------------------------------------------------------------------

def test_the_report_json_is_spec_9s(ran, capsys):
    project, study_id, _summary = ran
    code, out, _err = rwb(capsys, "study", "report", study_id, "--project", str(project), "--format", "json")
    report = json.loads(out)
    assert code == 0 and set(report) == {"study_id", "arms", "comparisons", "separations", "warnings"}
    assert [a["name"] for a in report["arms"]] == ["as configured", "theta 0.67", "strict critics"]
    for arm in report["arms"]:
        assert set(arm) == {"name", "runs", "metrics"} and arm["runs"] == 3
        assert set(arm["metrics"]["positive_consensus_share"]) == {"mean", "ci95", "n"}
        assert arm["metrics"]["positive_consensus_share"]["n"] == 3
    c = next(c for c in report["comparisons"] if c["arm"] == "theta 0.67" and c["metric"] == "positive_consensus_share")
    assert set(c) == {"arm", "baseline", "metric", "diff", "ci95", "p", "p_holm", "pairs", "min_p"}
    assert c["baseline"] == "as configured" and c["pairs"] == 3 and c["min_p"] >= 0.25
    # Three pairs cannot reach p < 0.05: said.
    assert any("cannot go below p = 0.25" in w for w in report["warnings"])
    assert report["separations"] == []


def test_the_report_reads_as_markdown_html_with_plots_and_csv(ran, capsys, tmp_path):
    project, study_id, _summary = ran
    code, md, _err = rwb(capsys, "study", "report", study_id, "--project", str(project), "--format", "md")
    assert code == 0 and md.startswith("# Study: centre") and "<svg" in md and "## Metrics per arm" in md
    out = tmp_path / "report.html"
    code, _out, _err = rwb(capsys, "study", "report", study_id, "--project", str(project), "--format", "html",
                           "--out", str(out))
    html = out.read_text()
    assert code == 0 and html.startswith("<!DOCTYPE html>") and html.count("<svg") >= 1 and "theta 0.67" in html
    code, text, _err = rwb(capsys, "study", "report", study_id, "--project", str(project), "--format", "csv")
    rows = list(csv.reader(io.StringIO(text.replace("\\x0d", ""))))
    assert rows[0][:6] == ["arm", "metric", "mean", "ci95_low", "ci95_high", "n"]
    assert {r[0] for r in rows[1:]} == {"as configured", "theta 0.67", "strict critics"}


# ----- the bundle -----------------------------------------------------------------------------------

def read_csv(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_the_bundle_joins_back_to_the_project_file_row_for_row(ran, capsys, tmp_path):
    project, study_id, _summary = ran
    out = tmp_path / "bundle"
    code, _out, err = rwb(capsys, "study", "export", study_id, "--project", str(project), "--out", str(out))
    assert code == 0, err
    assert {p.name for p in out.iterdir()} == {"study.json", "prompts", "runs.csv", "artifacts.csv", "votes.csv",
                                               "calls.csv", "report.md", "report.html"}
    study = json.loads((out / "study.json").read_text())
    assert [a["name"] for a in study["arms"]] == ["as configured", "theta 0.67", "strict critics"]
    assert study["arms"][1]["config"]["theta"] == 0.67 and study["arms"][1]["rule_only_of"] == "as configured"
    for arm in study["arms"]:
        for sha in arm["prompts"].values():
            assert (out / "prompts" / f"{sha}.j2").is_file()

    runs = read_csv(out / "runs.csv")
    results = db(project, "SELECT arm, item, replicate, run_id, coalesce(variant_id, ''), status FROM study_results")
    assert sorted((r["arm"], r["item"], int(r["replicate"]), r["run_id"], r["variant_id"], r["status"]) for r in runs) \
        == sorted((a, i, rep, run, str(v), s) for a, i, rep, run, v, s in results)
    for r in runs:
        (seed,) = db(project, "SELECT seed FROM runs WHERE id = ?", (r["run_id"],))[0]
        assert int(r["seed"]) == seed == 11 + int(r["replicate"])

    artifacts = read_csv(out / "artifacts.csv")
    expected = sum(db(project, "SELECT count(*) FROM artifacts WHERE run_id = ?", (r["run_id"],))[0][0] for r in runs)
    assert len(artifacts) == expected == 9 * 6
    for a in artifacts:
        key, author, content = db(project, "SELECT key, author_agent, content FROM artifacts WHERE id = ? "
                                           "AND run_id = ?", (int(a["artifact_id"]), a["run_id"]))[0]
        assert (a["key"], a["author"], a["content"]) == (key, author, content)
    # A rule-only arm's artifacts carry its own tiers (its variant's), not its source run's.
    tiers = {(a["arm"], a["replicate"], a["key"]): a["tier"] for a in artifacts}
    for (arm, rep, key), tier in tiers.items():
        if arm == "theta 0.67":
            (states,) = db(project, "SELECT v.states_json FROM study_results s JOIN classification_variants v "
                                    "ON v.id = s.variant_id WHERE s.arm = ? AND s.replicate = ?", (arm, int(rep)))[0]
            assert tier == {s["artifact"]: s["tier"] for s in json.loads(states)}[key]

    votes = read_csv(out / "votes.csv")
    assert len(votes) == sum(db(project, "SELECT count(*) FROM votes WHERE run_id = ?", (r["run_id"],))[0][0]
                             for r in runs) == 9 * 30
    for v in votes[:40]:
        assert db(project, "SELECT voter_agent, status FROM votes WHERE id = ?", (int(v["vote_id"]),)) == [
            (v["voter"], v["status"])]
    calls = read_csv(out / "calls.csv")
    assert len(calls) == db(project, "SELECT count(*) FROM llm_calls")[0][0] == 216
    assert {c["arm"] for c in calls} == {"as configured", "strict critics"}
    assert (out / "report.html").read_text().count("<svg") >= 1


def test_the_bundle_never_writes_through_a_link_nor_into_a_full_folder(ran, capsys, tmp_path):
    project, study_id, _summary = ran
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    code, _out, err = rwb(capsys, "study", "export", study_id, "--project", str(project), "--out", str(link))
    assert code == 2 and "symbolic link" in err and list(target.iterdir()) == []
    (target / "keep.txt").write_text("mine")
    code, _out, err = rwb(capsys, "study", "export", study_id, "--project", str(project), "--out", str(target))
    assert code == 2 and "already holds files" in err and [p.name for p in target.iterdir()] == ["keep.txt"]
