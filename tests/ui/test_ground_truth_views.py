"""Ground truth where a user sees it (SPEC §8): a project with an RCP run on `sim` over a question with a
known answer, made by `rwb run`; the Quadrant marks each point correct, incorrect or unscorable (a
shape, in the text's ink) with a legend and an Accuracy tab beside the chart; the Trace Inspector
filters on an artifact's score and its detail shows what was read and the verdict. A run with no
known answer shows none of it."""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
from collections import Counter

import pytest

from tests.ui.conftest import WAIT_MS
from workbench.cli import main
from workbench.core.datasets import arithmetic, to_jsonl
from workbench.core.project.refs import RecordRef
from workbench.core.protocols.shared.tiers import TIERS, label

SIM = {"sim": {"model": "sim"}}


def agents(prefix: str, skills) -> list[dict]:
    return [{"id": f"{prefix}{i + 1}", "provider": "sim", "params": {"skill": s}} for i, s in enumerate(skills)]


def rcp(**extra) -> dict:
    return {"protocol": "rcp", "seed": 2, "providers": SIM,
            "clusters": [{"name": "right", "agents": agents("a", [0.9, 0.8, 0.7])},
                         {"name": "other", "agents": agents("b", [0.4, 0.3, 0.5])}], **extra}


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """A project holding a scored RCP run, one with a plain query and a scored vote (their ids)."""
    folder = tmp_path_factory.mktemp("truth")
    (folder / "items.jsonl").write_text(to_jsonl(arithmetic(6, 4)), encoding="utf-8")
    project = folder / "p.rwb"
    ids = {}
    for name, data in (("plain", rcp(query="Is 7 a prime number?")),
                       ("scored", rcp(dataset="items.jsonl", item="arith-5")),
                       ("vote", {"protocol": "vote", "seed": 3, "providers": SIM, "dataset": "items.jsonl",
                                 "item": "arith-2", "agents": agents("v", [1.0, 0.0, 0.0])})):
        path = folder / f"{name}.json"
        path.write_text(json.dumps({**data, "label": name}), encoding="utf-8")
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(["run", str(path), "--project", str(project)]) == 0
        ids[name] = json.loads(buffer.getvalue().strip().splitlines()[-1])["run_id"]
    return project, ids


def verdicts(project, run_id) -> dict[str, str | None]:
    with sqlite3.connect(project) as db:
        return dict(db.execute("SELECT key, score FROM artifacts WHERE run_id = ?", (run_id,)).fetchall())


def show_quadrant(qtbot, window, run_id):
    window.show_panel("quadrantPanel")
    panel = window.panels["quadrantPanel"]
    qtbot.waitUntil(lambda: panel.run_combo.findData(run_id) >= 0, timeout=WAIT_MS)
    panel.run_combo.setCurrentIndex(panel.run_combo.findData(run_id))
    panel._on_run_chosen(panel.run_combo.currentIndex())
    qtbot.waitUntil(lambda: panel.data is not None and panel.data.run_id == run_id and panel._plot() is not None
                    and len(panel._plot().points) > 0, timeout=WAIT_MS)
    return panel, panel._plot()


def test_the_quadrant_marks_each_point_by_its_verdict_and_gives_accuracy_per_tier(qtbot, window, scored,
                                                                                  open_project):
    project, ids = scored
    open_project(project)
    panel, plot = show_quadrant(qtbot, window, ids["scored"])
    truth = verdicts(project, ids["scored"])
    drawn = [panel.data.keys[int(r)] for r in plot.points.rows]
    want = Counter(truth[k] for k in drawn)
    assert set(want) <= {"correct", "incorrect", "unscorable"} and want["correct"] and want["incorrect"]
    # What a user sees: one mark per drawn point, of its verdict, in the marks' own items.
    assert {k: v for k, v in plot.marks_shown().items() if v} == dict(want)
    assert "incorrect" in panel.legend.text() and "correct" in panel.legend.text()
    # Beside the chart: the Accuracy tab, shown first for a run with a known answer, counting the tiers.
    index = panel.tabs.indexOf(panel.accuracy_table)
    assert index >= 0 and panel.tabs.currentIndex() == index
    def counted(arrays) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for k, key in enumerate(panel.data.keys):
            tier = TIERS[int(arrays.tier[k])] if arrays.votes_cast[k] else "unclassified"
            c = out.setdefault(label(tier, True) if tier in TIERS else tier, [0, 0])
            c[0] += 1
            c[1] += truth[key] == "correct"
        return out

    def shown() -> dict[str, list[int]]:
        rows = [panel.accuracy_table.model.row(i) for i in range(panel.accuracy_table.model.rowCount())]
        table = {r["tier"]: [r["scored"], r["correct"]] for r in rows}
        assert table.pop("all") == [len(truth), sum(v == "correct" for v in truth.values())]
        return table

    assert shown() == counted(panel.baseline)
    # The what-if re-counts under the classification shown: every theta at its top leaves no
    # artifact in positive consensus, and the table follows.
    panel.set_whatif(thetas=(1.0, 1.0))
    assert counted(panel.result) != counted(panel.baseline)
    assert shown() == counted(panel.result)
    panel._on_reset()
    assert shown() == counted(panel.baseline)
    assert "AUROC" in panel.info.text()
    # Hovering a point says its verdict and what was read.
    row = int(plot.points.rows[0])
    assert truth[panel.data.keys[row]] in panel._describe(row)

    # A run with no known answer: no marks, no Accuracy tab, no legend line about them.
    panel, plot = show_quadrant(qtbot, window, ids["plain"])
    assert not any(plot.marks_shown().values())
    assert panel.tabs.indexOf(panel.accuracy_table) < 0
    assert "known answer" not in panel.legend.text()


def test_the_inspector_filters_on_an_artifacts_score_and_shows_what_was_read(qtbot, window, scored, open_project):
    project, ids = scored
    open_project(project)
    window.show_panel("traceInspectorPanel")
    panel = window.panels["traceInspectorPanel"]
    qtbot.waitUntil(lambda: panel.list.model.rowCount() > 0, timeout=WAIT_MS)
    truth = verdicts(project, ids["scored"])
    with sqlite3.connect(project) as db:
        wrong_calls = {cid for (cid,) in db.execute("SELECT call_id FROM artifacts WHERE score = 'incorrect'")}
        wrong_votes = {vid for (vid,) in db.execute(
            "SELECT v.id FROM votes v JOIN artifacts a ON a.id = v.artifact_id WHERE a.score = 'incorrect'")}
        right_call = db.execute("SELECT call_id, extracted FROM artifacts WHERE run_id = ? AND score = 'correct' "
                                "ORDER BY id LIMIT 1", (ids["scored"],)).fetchone()
    assert wrong_calls and wrong_votes and right_call

    panel.filter_bar.choose("score", "incorrect")
    assert panel.filters.score == "incorrect" and panel.filter_bar.toggle.text() == "Filters · 1 active"
    want = {("call", c) for c in wrong_calls} | {("vote", v) for v in wrong_votes}
    qtbot.waitUntil(lambda: set(panel.visible_keys()) == want, timeout=WAIT_MS)

    # The detail of a call that wrote a correct artifact: the answer read, the verdict, the known
    # answer and the run's final answers (RCP has none: its artifacts are the answers).
    panel.filter_bar.clear()
    window.model.reveal(RecordRef("call", right_call[0], ids["scored"]))
    qtbot.waitUntil(lambda: panel.detail.detail is not None and panel.detail.detail.id == right_call[0]
                    and panel.detail.detail.kind == "call", timeout=WAIT_MS)
    text = panel.detail.sections["score"].text()
    assert "correct" in text and right_call[1] in text
    assert right_call[1] in panel.detail.measures.text() and "✓ correct" in panel.detail.measures.text()
    assert None not in truth.values()  # every artifact of the run was scored (by the writer, not the view)

    # A vote's call: its own answer is right, the run's final answer (the two wrong agents share
    # the item's one distractor) is not, and the detail says both.
    with sqlite3.connect(project) as db:
        call, read = db.execute("SELECT call_id, extracted FROM artifacts WHERE run_id = ? AND author_agent = 'v1'",
                                (ids["vote"],)).fetchone()
        final, = db.execute("SELECT extracted FROM answers WHERE run_id = ?", (ids["vote"],)).fetchone()
    assert final != read
    window.model.reveal(RecordRef("call", call, ids["vote"]))
    qtbot.waitUntil(lambda: panel.detail.detail is not None and panel.detail.detail.id == call, timeout=WAIT_MS)
    text = panel.detail.sections["score"].text()
    assert "✓ correct" in text and read in text
    assert "final answer" in text and "✗ incorrect" in text and final in text
