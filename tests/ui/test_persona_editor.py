"""Tuning a simulated agent's persona in Clusters & Agents: Apply validates with SimPersona and
writes agents.params_json off the GUI thread; a bad value is named inline and nothing is written."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from tests.ui.conftest import WAIT_MS
from workbench.core.project import _sql
from workbench.core.project.demo import build_demo
from workbench.core.project.store import Store
from workbench.core.sim.persona import SimPersona
from workbench.ui.widgets.persona_editor import PersonaEditor, _UnitField, persona_fields


def stored_params(path: Path, agent: str) -> dict:
    store = Store.open(path)
    try:
        return _sql.get(store, "agents", agent)["params_json"]
    finally:
        store.close_connection()


def editor_for(window, agent: str) -> PersonaEditor:
    window.show_panel("clustersPanel")  # (the Design workspace)
    panel = window.panels["clustersPanel"]
    assert panel.select_agent(agent)
    assert panel.persona.agent_id == agent
    return panel.persona


def type_into(qtbot, field, text: str) -> None:
    line = field.text if isinstance(field, _UnitField) else field
    line.selectAll()
    qtbot.keyClicks(line, text)


def test_the_form_has_every_simpersona_parameter_with_its_stored_value(qtbot, window, tmp_path, open_project):
    path = build_demo(tmp_path / "demo.rwb")
    open_project(path)
    editor = editor_for(window, "c2")
    assert set(editor.inputs) == set(SimPersona.model_fields)
    qtbot.waitUntil(lambda: editor.inputs["stance"].isVisible(), timeout=WAIT_MS)
    assert editor.inputs["stance"].height() > 10 and editor.form_box.height() > 100  # really shown
    assert persona_fields()["overflow"]["kind"] == "choice" and persona_fields()["stance"]["kind"] == "unit"
    assert editor.values()["stance"] == 0.3 and editor.values()["strictness"] == 0.8
    assert editor.inputs["stance"].slider.value() == 30
    assert editor.values()["flip_rate"] == SimPersona().flip_rate  # not stored: the default shows
    assert not editor.apply_button.isEnabled() and not editor.note.isVisible()


def test_changing_the_stance_and_applying_writes_params_json(qtbot, window, tmp_path, open_project):
    path = build_demo(tmp_path / "demo.rwb")
    open_project(path)
    before = stored_params(path, "a1")
    editor = editor_for(window, "a1")
    type_into(qtbot, editor.inputs["stance"], "0.35")
    assert editor.inputs["stance"].slider.value() == 35  # the slider follows the text
    editor.inputs["sycophancy"].slider.setValue(60)  # and the text follows the slider
    assert editor.inputs["sycophancy"].text.text() == "0.6"
    assert editor.dirty and editor.apply_button.isEnabled()

    with qtbot.waitSignal(editor.applied, timeout=WAIT_MS):
        qtbot.mouseClick(editor.apply_button, Qt.MouseButton.LeftButton)
    after = stored_params(path, "a1")
    assert after["stance"] == 0.35 and after["sycophancy"] == 0.6
    assert after["strictness"] == before["strictness"] and after["context_budget"] == before["context_budget"]
    SimPersona.model_validate(after)  # what was written is a valid persona
    assert "Saved" in editor.message.text() and not editor.dirty
    assert not editor.apply_button.isEnabled()


def test_an_out_of_range_value_is_named_inline_and_nothing_is_written(qtbot, window, tmp_path, open_project,
                                                                     monkeypatch):
    path = build_demo(tmp_path / "demo.rwb")
    open_project(path)
    before = stored_params(path, "a1")
    editor = editor_for(window, "a1")
    writes: list = []
    monkeypatch.setattr(window.model, "write", lambda *args: writes.append(args))
    type_into(qtbot, editor.inputs["stance"], "1.5")
    assert editor.inputs["stance"].text.text() == "1.5"  # typed as is: not clamped to the slider
    qtbot.mouseClick(editor.apply_button, Qt.MouseButton.LeftButton)
    assert editor.message.isVisible()
    assert editor.message.text().startswith("✖ Stance:") and "from 0 to 1" in editor.message.text()
    assert "Nothing was saved" in editor.message.text()
    assert "border" in editor.inputs["stance"].text.styleSheet()
    assert writes == []  # no write was even started
    assert stored_params(path, "a1") == before

    type_into(qtbot, editor.inputs["stance"], "0.9")  # fixing it clears the message
    assert not editor.message.isVisible() and editor.inputs["stance"].text.styleSheet() == ""
    type_into(qtbot, editor.inputs["context_budget"], "lots")
    editor.apply_button.click()
    assert editor.message.text().startswith("✖ Context budget:") and "whole number" in editor.message.text()
    assert writes == [] and stored_params(path, "a1") == before
    assert window.grab().save(str(tmp_path / "rwb_persona_invalid.png"))


def test_unsaved_edits_survive_a_refresh_and_revert_restores_the_stored_values(
        qtbot, window, tmp_path, open_project):
    path = build_demo(tmp_path / "demo.rwb")
    open_project(path)
    editor = editor_for(window, "c1")
    type_into(qtbot, editor.inputs["stance"], "0.1")
    outside = Store.open(path)  # another agent edited elsewhere: every panel refreshes
    _sql.update(outside, "agents", "a2", {"persona": "changed elsewhere"})
    outside.close_connection()
    panel = window.panels["clustersPanel"]
    qtbot.waitUntil(lambda: any(r["persona"] == "changed elsewhere" for r in panel._agent_rows), timeout=WAIT_MS)
    assert editor.agent_id == "c1" and editor.values()["stance"] == 0.1 and editor.dirty
    editor.revert_button.click()
    assert editor.values()["stance"] == 0.25 and not editor.dirty


def test_a_non_simulated_agent_says_so_and_unknown_parameters_are_flagged(qtbot, window, tmp_path, open_project):
    path = build_demo(tmp_path / "demo.rwb")
    store = Store.open(path)
    _sql.insert(store, "providers", {"name": "openai", "model": "openai/gpt-4o-mini", "key_env": "OPENAI_API_KEY"})
    _sql.update(store, "agents", "c3", {"provider": "openai", "params_json": {"stance": 0.2, "temprature": 0.3}})
    store.close_connection()
    open_project(path)
    editor = editor_for(window, "c3")
    assert editor.note.isVisible()
    assert "openai" in editor.note.text() and "temprature" in editor.note.text()
    type_into(qtbot, editor.inputs["stance"], "0.3")
    with qtbot.waitSignal(editor.applied, timeout=WAIT_MS):
        editor.apply_button.click()
    assert stored_params(path, "c3") == SimPersona(stance=0.3).model_dump(mode="json")
