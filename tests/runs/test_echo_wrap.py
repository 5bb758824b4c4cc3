"""An RCP run wrapped in Resonance Echo on the simulated panel, through the real runner.

``sample_runs/rcp-echo-sim.json``: six agents over three RCP rounds (two refinement rounds), so
each takes 16 to 18 turns. a1 forgets silently with a tiny window (stateless by default, so its
seed rides on every call), a2 compacts, a3 hits a hard wall, c1 forgets silently and is anchored
only at session start (``echo.patterns``), c2 and c3 have room to spare. sim reports, in each
reply's ``meta["sim"]["echo"]``, which marker hexes were in the agent's window when it wrote the
reply: the ground truth the checks are measured against.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from workbench.core.project import _sql
from workbench.core.project import echo as records
from workbench.core.project.store import Store
from workbench.core.protocols.shared.fencing import mask_fences
from workbench.core.runs.config import parse_run_config
from workbench.services.runs.runner import Runner

SAMPLE = Path(__file__).resolve().parents[2] / "sample_runs" / "rcp-echo-sim.json"
FULL = ["log", "read_seed", "new_session", "inject", "verify", "resume"]
SAME_SESSION = ["log", "read_seed", "inject", "verify", "resume"]


def sample() -> dict:
    return json.loads(SAMPLE.read_text())


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    store = Store.create(tmp_path_factory.mktemp("echo") / "echo.rwb")
    yield store
    store.close_connection()


@pytest.fixture(scope="module")
def straight(project):
    runner = Runner(project)
    run_id = runner.create(parse_run_config(sample()))
    return run_id, runner.execute(run_id)


def calls_of(store, run_id, agent):
    """The agent's calls in the order it answered them, with sim's ground truth."""
    out = []
    for row in _sql.rows(store, "llm_calls", "run_id = ? AND agent_id = ?", (run_id, agent), order_by="id"):
        truth = ((row["response_json"] or {}).get("reply_meta") or {}).get("sim", {}).get("echo", {})
        out.append({"key": row["step_key"], "status": row["status"], "turn": truth.get("turn"),
                    "hexes": truth.get("window_hexes", [])})
    return out


def failed_checks(store, run_id, agent):
    """(marker hex, turn) of every failed check (not a restoration's own recital)."""
    return [(a.hex, v.turn) for a in records.list_anchors(store, agent, run_id=run_id) for v in a.verifications
            if not v.success and v.trigger != "restoration"]


def losses(store, run_id, agent):
    """Ground truth: for each marker the agent held, the first turn whose reply was written
    without it in the window."""
    anchors = [a.hex for a in records.list_anchors(store, agent, run_id=run_id)]
    current, n, found = anchors[0], 0, {}
    for call in calls_of(store, run_id, agent):
        if call["key"] == f"echo/{agent}/restore/{n + 1}/verify":
            n += 1
            current = anchors[n] if n < len(anchors) else None
            continue
        if current and not call["key"].startswith("echo/") and current not in call["hexes"]:
            found.setdefault(current, call["turn"])
    return found


def test_the_wrapped_run_completes_and_still_produces_its_rcp_result(project, straight):
    run_id, summary = straight
    assert summary["status"] == "completed", summary
    assert [r["round"] for r in summary["rounds"]] == [1, 2, 3]
    assert all(r["states"] for r in summary["rounds"])
    assert _sql.count(project, "votes", "run_id = ? AND status = 'valid'", (run_id,)) > 60
    # One session per agent, each pattern by agent type (c1 is set to stateful by echo.patterns).
    echo = summary["echo"]
    assert {a: s["pattern"] for a, s in echo.items()} == {
        "a1": "stateless", "a2": "compaction_aware", "a3": "stateful", "c1": "stateful",
        "c2": "stateless", "c3": "stateless"}
    assert all(s["status"] == "completed" and s["run_id"] == run_id for s in echo.values())
    assert all(s["turns"] >= 16 for s in echo.values())
    # Checks were recorded for every agent, each linked to the call whose reply it read.
    for agent in echo:
        anchors = records.list_anchors(project, agent, run_id=run_id)
        assert anchors and sum(len(a.verifications) for a in anchors) >= 4
    unlinked = _sql.query(project, "SELECT v.id FROM echo_verifications v JOIN echo_anchors a ON a.id = v.anchor_id "
                             "WHERE a.run_id = ? AND v.call_id IS NULL", (run_id,))
    assert not unlinked
    # Every overflow behaviour showed up and was dealt with.
    assert echo["a2"]["failures"] >= 1 and echo["a3"]["failures"] >= 1 and echo["c1"]["failures"] >= 2
    walls = _sql.rows(project, "llm_calls", "run_id = ? AND agent_id = 'a3' AND status = 'error'", (run_id,))
    assert walls and all(w["error"] is None or "context_limit" in w["error"] for w in walls)


def test_silent_truncation_is_detected_within_the_interval_of_the_real_loss_and_restored(project, straight):
    run_id, _ = straight
    interval = sample()["echo"]["interval"]
    for agent, allowed, steps in (("c1", interval, FULL), ("a1", 0, SAME_SESSION)):
        lost = losses(project, run_id, agent)
        failed = failed_checks(project, run_id, agent)
        assert lost, f"{agent} never lost its marker: the sample no longer overflows"
        detected = dict(failed)
        last_turn = max(c["turn"] or 0 for c in calls_of(project, run_id, agent))
        for hex_, turn in lost.items():
            if turn + allowed <= last_turn:
                assert hex_ in detected, f"{agent} lost {hex_} at turn {turn} and nobody noticed"
            if hex_ in detected:
                assert turn <= detected[hex_] <= turn + allowed, (agent, hex_, turn, detected[hex_])
        assert set(detected) <= set(lost), "a check failed while the marker was still in the window"
        # Each detection ran a restoration: log .. resume in order, and a new marker recorded.
        episodes = records.restoration_ids(project, agent, run_id=run_id)
        assert episodes == [f"restore-{hex_}" for hex_, _ in failed]
        for n, episode in enumerate(episodes, 1):
            rows = _sql.rows(project, "echo_restorations", "restoration = ?", (episode,), order_by="id")
            assert [r["step"] for r in rows] == steps
            new_hex = rows[steps.index("inject")]["detail_json"]["hex"]
            marker = _sql.get(project, "echo_markers", new_hex)
            assert (marker["run_id"], marker["issue_key"]) == (run_id, f"echo/{agent}/restore/{n}")
            assert records.load_anchor(project, agent, run_id=run_id, active_only=False, marker_hex=new_hex)


def test_the_other_overflow_behaviours_are_caught_by_their_own_triggers(project, straight):
    run_id, _ = straight
    a3 = records.list_anchors(project, "a3", run_id=run_id)
    assert any(not v.success and v.trigger == "error" for a in a3 for v in a.verifications)
    assert all(r["step"] in FULL for r in _sql.rows(project, "echo_restorations", "agent_id = 'a3' AND run_id = ?",
                                                      (run_id,)))
    a2 = records.list_anchors(project, "a2", run_id=run_id)
    assert any(not v.success and "compaction" in v.trigger for a in a2 for v in a.verifications)


def test_the_checklist_reads_the_run(project, straight):
    run_id, _ = straight
    status = {(agent, i.id): i.status for agent in ("a1", "c1") for i in records.checklist(project, agent,
                                                                                       run_id=run_id)}
    assert status[("c1", "during.periodic_check")] == "done"
    assert status[("a1", "during.seed_every_turn")] == "done"
    for agent in ("a1", "c1"):
        for item in ("start.marker", "start.anchor", "failure.log", "failure.restore", "failure.notify",
                     "failure.resume", "end.checkpoint", "end.summary", "end.marker_persists"):
            assert status[(agent, item)] == "done", (agent, item)


def echo_content(store, run_id) -> dict:
    """A run's Echo records and votes, with hexes replaced by what they were issued for."""
    names = {r["hex"]: r["issue_key"] for r in _sql.rows(store, "echo_markers", "run_id = ?", (run_id,))}
    plain = lambda text: re.sub(r"\b[0-9a-f]{6}\b", lambda m: names.get(m.group(0), m.group(0)), text)
    q = lambda sql: [tuple(r.values()) for r in _sql.query(store, sql, (run_id,))]
    return {
        "markers": sorted(names.values()),
        "anchors": q("SELECT agent_id, injection, session_id, active FROM echo_anchors WHERE run_id = ? ORDER BY id"),
        "checks": q("SELECT a.agent_id, v.turn, v.trigger, v.success, v.action, c.step_key FROM echo_verifications v "
                    "JOIN echo_anchors a ON a.id = v.anchor_id LEFT JOIN llm_calls c ON c.id = v.call_id "
                    "WHERE a.run_id = ? ORDER BY v.id"),
        "restorations": [(a, plain(r), s) for a, r, s in q(
            "SELECT agent_id, restoration, step FROM echo_restorations WHERE run_id = ? ORDER BY id")],
        "seeds": q("SELECT agent_id, recent_exchange_json FROM echo_session_seeds WHERE run_id = ? ORDER BY agent_id"),
        "votes": sorted(q("SELECT a.key, v.voter_agent, v.value, v.status FROM votes v JOIN artifacts a "
                          "ON a.id = v.artifact_id WHERE v.run_id = ?")),
        "calls": sorted((k, s, plain(mask_fences(json.dumps(p)))) for k, s, p in q(
            "SELECT step_key, status, request_json FROM llm_calls WHERE run_id = ? AND status IN ('ok', 'invalid')")),
    }


@pytest.mark.parametrize("stop_after", [11, 57])
def test_cancel_and_resume_gives_the_same_echo_records_and_votes(project, straight, stop_after):
    cancel = threading.Event()

    def progress(p):
        if p.done >= stop_after:
            cancel.set()

    runner = Runner(project, on_progress=progress, cancel=cancel)
    run_id = runner.create(parse_run_config({**sample(), "dispatch": "sequential"}))
    first = runner.execute(run_id)
    assert first["status"] == "interrupted"
    issued = _sql.count(project, "echo_markers", "run_id = ?", (run_id,))
    done = _sql.count(project, "llm_calls", "run_id = ? AND status IN ('ok', 'invalid')", (run_id,))
    again = Runner(project).execute(run_id)
    assert again["status"] == "completed" and again["resumed_calls"] == done > 0
    # Same keys, same prompts (up to the hexes, which never repeat, and the fence names, fresh per
    # call), same records, same votes.
    assert echo_content(project, run_id) == echo_content(project, straight[0])
    assert again["echo"].keys() == straight[1]["echo"].keys()
    # The resumed run got its markers back instead of drawing new ones.
    rows = _sql.rows(project, "echo_markers", "run_id = ?", (run_id,))
    assert len(rows) >= issued and len({r["issue_key"] for r in rows}) == len(rows)
    # Every hex in the project is unique, and no run shares one with another.
    hexes = [r["hex"] for r in _sql.rows(project, "echo_markers")]
    assert len(hexes) == len(set(hexes))
    straight_hexes = {r["hex"] for r in _sql.rows(project, "echo_markers", "run_id = ?", (straight[0],))}
    assert not straight_hexes & {r["hex"] for r in rows}


# ----- Echo's prompts as templates (SPEC §7): prompts["echo.STEP"] through `rwb run` ----------------
def _echo_edits() -> dict:
    """Two of Echo's steps edited word for word (the same number of words, so the simulated
    windows, and therefore every reply, stay as they were)."""
    from workbench.core import registry

    echo = registry.get("echo")
    anchor = echo.default_text("anchor").replace("in your responses when", "in every response when")
    restore = echo.default_text("restore").replace("was restored from", "was rebuilt from")
    assert anchor != echo.default_text("anchor") and restore != echo.default_text("restore")
    return {"echo.anchor": anchor, "echo.restore": restore}


def _calls(project: Path, run_id: str) -> dict:
    """step key -> (request, reply, template hash), with each hex named by what it was issued for
    and the fence names masked: what two runs of one configuration share."""
    from tests.runs.test_run_outcomes import rows

    names = dict(rows(project, "SELECT hex, issue_key FROM echo_markers WHERE run_id = ?", (run_id,)))
    plain = lambda text: re.sub(r"\b[0-9a-f]{6}\b", lambda m: names.get(m.group(0), m.group(0)),
                                mask_fences(text or ""))
    return {key: (plain(json.dumps(json.loads(request)["messages"], ensure_ascii=False)), plain(reply), sha)
            for key, request, reply, sha in rows(project, "SELECT step_key, request_json, reply_text, template_sha256 "
                                                          "FROM llm_calls WHERE run_id = ?", (run_id,))}


def test_an_override_of_an_echo_step_reaches_exactly_its_calls(tmp_path):
    from tests.runs.test_run_outcomes import last_json, rows, rwb, write
    from workbench.core import registry
    from workbench.core.protocols.shared.templates import sha256

    edits = _echo_edits()
    base = json.loads((SAMPLE.parent / "echo-truncation.json").read_text())
    project = tmp_path / "p.rwb"
    plain = rwb("run", write(tmp_path, "a.json", base), "--project", str(project), "--quiet")
    edited = rwb("run", write(tmp_path, "b.json", {**base, "prompts": edits}), "--project", str(project), "--quiet")
    assert plain.returncode == 0 and edited.returncode == 0, edited.stderr
    summary = last_json(edited)
    assert summary["prompts"]["echo.anchor"] == {"sha256": sha256(edits["echo.anchor"]), "default": False}
    assert summary["prompts"]["echo.recite"]["default"] is True and summary["prompts"]["vote"]["default"] is True
    assert any("does not read prompts" in w for w in summary["warnings"])
    ((stored,),) = rows(project, "SELECT provenance_json FROM runs WHERE id = ?", (summary["run_id"],))
    assert json.loads(stored)["prompts"]["echo.restore"]["text"] == edits["echo.restore"]

    before, after = _calls(project, last_json(plain)["run_id"]), _calls(project, summary["run_id"])
    assert before.keys() == after.keys() and len(after) == 17
    anchored = {k for k, (request, _, _) in after.items() if "in every response when" in request}
    rebuilt = {k for k, (request, _, _) in after.items() if "was rebuilt from" in request}
    assert anchored == {"echo/a2/check/1", "echo/c1/check/1"}  # the boot checks: each session's start
    assert rebuilt == {"echo/c1/restore/1/verify"}  # the one restoration
    echo = registry.get("echo")
    for key, (request, reply, sha) in after.items():
        was_request, was_reply, was_sha = before[key]
        expected = (was_request.replace("in your responses when", "in every response when") if key in anchored
                    else was_request.replace("was restored from", "was rebuilt from"))
        assert request == expected and reply == was_reply, key  # nothing else moved; sim's replies neither
        if key in anchored:
            assert sha == sha256(edits["echo.anchor"]) and was_sha == sha256(echo.default_text("anchor"))
        elif key in rebuilt:
            assert sha == sha256(edits["echo.restore"]) and was_sha == sha256(echo.default_text("restore"))
        else:
            assert sha == was_sha, key  # the protocol's own templates, and Echo's recite
    assert {after[k][2] for k in after if k.startswith("r")} == {summary["prompts"]["generate"]["sha256"],
                                                                 summary["prompts"]["vote"]["sha256"]}


def test_a_resumed_run_keeps_its_echo_templates(project):
    edits = _echo_edits()
    cancel = threading.Event()

    def progress(p):
        if p.done >= 2:  # after the boot checks, long before c1's restoration
            cancel.set()

    cfg = parse_run_config({**json.loads((SAMPLE.parent / "echo-truncation.json").read_text()), "prompts": edits})
    runner = Runner(project, on_progress=progress, cancel=cancel)
    run_id = runner.create(cfg)
    assert runner.execute(run_id)["status"] == "interrupted"
    again = Runner(project).execute(run_id)
    assert again["status"] == "completed" and again["resumed_calls"] >= 2
    assert again["prompts"]["echo.restore"]["default"] is False
    restored = _sql.rows(project, "llm_calls", "run_id = ? AND step_key = 'echo/c1/restore/1/verify'", (run_id,))
    assert restored and "was rebuilt from" in json.dumps(restored[0]["request_json"])


@pytest.mark.parametrize("prompts, field", [
    ({"echo.nope": "x"}, "prompts.echo.nope: echo has no step 'nope'"),
    ({"echo.recite": "{% block user %}{{ name }{% endblock %}"}, "prompts.echo.recite: line 1: syntax error"),
    ({"echo.anchor": "{% block user %}{{ message }}{% endblock %}"},
     "prompts.echo.anchor: leaves out the required variable 'marker'"),
    ({"echo.recite": {"file": "missing.j2"}}, "prompts.echo.recite.file: no such file"),
])
def test_a_bad_echo_override_is_refused_before_anything_is_written(tmp_path, prompts, field):
    from tests.runs.test_run_outcomes import rwb, write

    config = write(tmp_path, "c.json", {**sample(), "prompts": prompts})
    out = rwb("run", config, "--project", str(tmp_path / "p.rwb"))
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1 and field in lines[0], out.stderr
    assert not (tmp_path / "p.rwb").exists() and out.stdout == ""
