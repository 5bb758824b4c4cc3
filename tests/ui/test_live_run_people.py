"""The calls a person plays, answered inside Live Run (never a modal dialog): any agent whose
provider is "manual", and the CONS conductor through the escalation form (the conflict, both
sides' rationales, accept or override with a reason), live or for a run stopped waiting."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.services.test_run_service import cons_config
from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import (
    RUN_MS,
    click,
    click_run,
    empty_project,
    panel_of,
    plain,
    put,
    read,
    rows,
    template,
)
from workbench.core.project.store import Store
from workbench.services.runs.agents import DecisionsFile
from workbench.services.runs.runner import Runner


def contested() -> dict:
    return cons_config().model_dump(mode="json", by_alias=True)


def test_a_manual_agent_answers_its_calls_in_the_panel(qtbot, window, tmp_path, open_project):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    doc = template("rcp-advocate-critic")
    doc["providers"]["person"] = {"model": "manual"}
    doc["clusters"] = [{"name": "advocate", "agents": [doc["clusters"][0]["agents"][0]]},
                       {"name": "critic", "agents": [{"id": "me", "provider": "person", "persona": "You."}]}]
    put(qtbot, panel, doc)
    qtbot.waitUntil(panel.start_button.isEnabled, timeout=WAIT_MS)
    box = panel.prompt_box
    with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
        click(qtbot, panel.start_button)
        answers = {"generate": "Close it on weekends first, and measure.", "vote": "YES: it is a fair first step."}
        for _ in range(2):  # my artifact, then my vote on a1's
            qtbot.waitUntil(lambda: box.isVisible() and box.current is not None, timeout=WAIT_MS)
            call = box.current
            assert call.agent == "me" and "agent me" in box.heading.text()
            assert not panel.decision_form.isVisible() and not box.own_words.isVisible()  # not a conductor
            assert window.findChildren(type(box)) == [box]  # inline in the panel, no dialog
            qtbot.keyClicks(box.reply, answers[call.purpose])
            qtbot.mouseClick(box.send_button, Qt.MouseButton.LeftButton)
            qtbot.waitUntil(lambda c=call: box.current is None or box.current.key != c.key, timeout=WAIT_MS)
    assert finished.args[0]["status"] == "completed"
    stored = read(path, "SELECT purpose, reply_text, status FROM llm_calls WHERE agent_id = 'me' ORDER BY id")
    assert [(r["purpose"], r["reply_text"], r["status"]) for r in stored] == [
        ("generate", answers["generate"], "ok"), ("vote", answers["vote"], "ok")]
    assert not box.isVisible()
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    assert [r["cost"] for r in rows(panel) if r["agent_id"] == "me"] == ["— (a person)"] * 2  # no model: no price


def test_the_conductor_overrides_a_contested_verdict_through_the_form(qtbot, window, tmp_path, open_project):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    put(qtbot, panel, contested())
    click(qtbot, panel.start_button)
    box, form = panel.prompt_box, panel.decision_form
    qtbot.waitUntil(lambda: box.isVisible() and form.isVisible(), timeout=WAIT_MS)
    assert box.current.purpose == "hitl_decision" and box.own_words.isVisible()
    text = box.messages.toPlainText()
    # The conflict (type, severity, positions) and every side with its rationales.
    assert "Verdict: CONTESTED" in text and "Escalated: contested_verdict" in text
    assert "Conflict high · priority-difference · conflict_" in text
    assert "accept Write-through:" in text and "accept Cache-aside with TTL:" in text
    assert "The ballots, each side with its rationales" in text
    leading = form.view.leading_option
    assert form.accepted_label.text() == f"the CONTESTED verdict, leading option “{leading}”"
    other = next(o for o in ("Write-through", "Cache-aside with TTL") if o != leading)

    click(qtbot, form.override_radio)
    assert form.override_radio.isChecked()
    form.option_combo.setFocus()  # the option, chosen with the keyboard
    while form.option_combo.currentText() != other:
        qtbot.keyClick(form.option_combo, Qt.Key.Key_Down)
    assert form.option_combo.currentText() == other
    assert not form.decide_button.isEnabled()  # an override needs a reason
    qtbot.keyClicks(form.reason, "Ops can only run the simpler one this quarter.")
    assert form.decide_button.isEnabled()
    assert window.grab().save(str(tmp_path / "escalation.png"))
    with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
        qtbot.mouseClick(form.decide_button, Qt.MouseButton.LeftButton)
    summary = finished.args[0]
    assert summary["status"] == "completed" and not box.isVisible()
    human = summary["cons"]["humanDecision"]
    assert human.startswith(f"OVERRIDE the CONTESTED verdict: adopt '{other}'")
    assert "Ops can only run the simpler one this quarter." in human
    [conductor] = read(path, "SELECT reply_text FROM llm_calls WHERE agent_id = 'conductor'")
    assert conductor["reply_text"] == human  # the answer carries the decision and its reason

    def recorded():
        return read(path, "SELECT e.decision, e.decided_by, e.decision_note, e.status, e.resolved_at FROM "
                          "cons_escalations e JOIN cons_questions q ON q.id = e.question_id WHERE q.run_id = ?",
                    (summary["run_id"],))
    qtbot.waitUntil(lambda: all(r["decision_note"] for r in recorded()), timeout=WAIT_MS)
    rows = recorded()
    assert rows and all(r["decision"] == f"override: {other}" and r["decided_by"] == "conductor"
                        and r["decision_note"] == "Ops can only run the simpler one this quarter."
                        and r["status"] == "resolved" and r["resolved_at"] for r in rows)

    # The Escalation tab shows the record: decided, nothing left to do.
    qtbot.waitUntil(window.reads_idle, timeout=WAIT_MS)
    bar = panel.detail_tabs.tabBar()
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(panel.detail_tabs.indexOf(panel.escalation_form)).center())
    assert panel.detail_tabs.currentWidget() is panel.escalation_form
    qtbot.waitUntil(lambda: "override: " + other in plain(panel.escalation_form.status.text()), timeout=WAIT_MS)
    assert not panel.escalation_form.decide_button.isEnabled()
    assert "Conflict high" in panel.escalation_form.context.toPlainText()
    assert "Each side's rationales" in panel.escalation_form.context.toPlainText()


def test_a_run_stopped_for_its_conductor_is_decided_from_the_escalation_tab(qtbot, window, tmp_path, open_project):
    # As `rwb run` leaves it without --decisions: interrupted, waiting for a human decision.
    path = empty_project(tmp_path)
    store = Store.open(path)
    runner = Runner(store, manual=DecisionsFile({}))
    run_id = runner.create(cons_config())
    assert runner.execute(run_id)["waiting_for_human"] is True
    store.close_connection()

    open_project(path)
    panel = panel_of(window)
    click_run(qtbot, panel, run_id)
    form = panel.escalation_form
    qtbot.waitUntil(lambda: form.view is not None and form.decide_button.text() == "Resume and decide",
                    timeout=WAIT_MS)
    assert not form.view.stored and form.view.verdict == "CONTESTED"  # judged again from its ballots
    assert "Conflict high" in form.context.toPlainText()
    assert form.accept_radio.isChecked() and form.decide_button.isEnabled()  # accepting needs no reason
    with qtbot.waitSignal(window.runs.finished, timeout=RUN_MS) as finished:
        qtbot.mouseClick(form.decide_button, Qt.MouseButton.LeftButton)
    summary = finished.args[0]
    assert summary["status"] == "completed" and summary["run_id"] == run_id
    assert summary["cons"]["humanDecision"].startswith("ACCEPT the CONTESTED verdict")
    assert not panel.prompt_box.isVisible()  # answered by the decision taken, not asked again
    leading = summary["cons"]["leadingOption"]
    qtbot.waitUntil(lambda: read(path, "SELECT decision FROM cons_escalations")[0]["decision"] == f"accept: {leading}",
                    timeout=WAIT_MS)
