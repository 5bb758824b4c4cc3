"""ReportView: a run's report rendered, and its exports equal to ``rwb export`` byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.report_runs import run_sample
from tests.ui.conftest import WAIT_MS
from workbench.core.project.store import Store
from workbench.services.project_model import ProjectModel
from workbench.ui.widgets.report_view import FORMATS, ReportView

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    path = tmp_path_factory.mktemp("report_view") / "p.rwb"
    store = Store.create(path)
    mp = pytest.MonkeyPatch()
    try:
        run_id = run_sample(store, "cons", mp)
    finally:
        mp.undo()
        store.close_connection()
    return path, run_id


@pytest.fixture
def view(qtbot, project):
    model = ProjectModel()
    with qtbot.waitSignal(model.opened, timeout=WAIT_MS):
        model.open(project[0])
    widget = ReportView(model)
    qtbot.addWidget(widget)
    widget.resize(1000, 700)
    widget.show()
    yield widget
    widget.shutdown()
    model.close()
    assert model.shutdown(WAIT_MS)


def show(qtbot, view, run_id):
    with qtbot.waitSignal(view.shown, timeout=WAIT_MS):
        view.set_run(run_id)


def test_the_report_is_rendered_with_every_text_escaped(qtbot, view, project):
    show(qtbot, view, project[1])
    text = view.browser.toPlainText()
    assert "CONS consensus protocol" in text and "Simulated run." in text and "Manifest entry" in text
    assert "**" not in text  # rendered, not shown as Markdown
    assert all(b.isEnabled() for b in view.buttons.values())


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_export_from_the_view_equals_the_clis_byte_for_byte(qtbot, view, project, tmp_path, monkeypatch, fmt):
    path, run_id = project
    show(qtbot, view, run_id)
    target = tmp_path / f"from-view.{fmt}"
    from workbench.ui import prompts

    asked = []
    monkeypatch.setattr(prompts, "export_path", lambda parent, kind, start, name: asked.append((kind, name)) or target)
    with qtbot.waitSignal(view.exported, timeout=WAIT_MS):
        view.buttons[fmt].click()
    assert asked == [(fmt, run_id)]
    cli = subprocess.run([sys.executable, "-m", "workbench", "export", run_id, "--project", str(path),
                          "--format", fmt], cwd=REPO, capture_output=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert target.read_bytes() == cli.stdout
    assert view.status.text() == f"Saved {target.name}"


def test_a_cancelled_export_dialog_writes_nothing(qtbot, view, project, monkeypatch, tmp_path):
    show(qtbot, view, project[1])
    from workbench.ui import prompts

    monkeypatch.setattr(prompts, "export_path", lambda *a, **k: None)
    view.buttons["md"].click()
    qtbot.wait(50)
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_run_says_so_and_no_run_clears_the_view(qtbot, view):
    view.set_run("no-such-run")
    qtbot.waitUntil(lambda: view.status.text() == "not updated", timeout=WAIT_MS)
    view.set_run(None)
    assert view.browser.toPlainText() == "Choose a run to see its report."
    assert not any(b.isEnabled() for b in view.buttons.values())


def test_a_hidden_report_waits_for_its_tab_to_show_before_it_reads_again(qtbot, view, project):
    """A live run changes its tables many times a second; a report nobody sees is not rebuilt
    each time (laying out a long one costs the window 40 to 70 ms), only once it shows again."""
    from workbench.core.project.changes import Changes

    show(qtbot, view, project[1])
    reads: list[bool] = []
    original = view._read
    view._read = lambda **kw: (reads.append(True), original(**kw))[1]
    view.hide()
    view.model.changed.emit(Changes.of("votes", run=project[1]))
    assert reads == []
    with qtbot.waitSignal(view.shown, timeout=WAIT_MS):
        view.show()
    assert reads == [True]
    view.model.changed.emit(Changes.of("votes", run=project[1]))  # shown: it reads at once
    assert reads == [True, True]
