"""Editing the panel in Clusters & Agents: build clusters and agents by clicking and typing, see
what a run would refuse next to the field as it is typed, undo and redo, apply templates, import a
run's panel, and add providers (a local server tested against the loopback fake server, a cloud
key kept in the keyring and never in the project file)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QUndoStack

from tests.support.fake_keyring import fail_keyring, memory_keyring
from tests.support.fake_llm_server import FakeLLMServer, Reply
from tests.ui.conftest import WAIT_MS
from workbench.core.project import panel_edits as pe
from workbench.core.project.demo import build_demo
from workbench.core.project.panel import panel_document, panel_rows, run_config_from_project, saved_configs
from workbench.core.project.store import Store
from workbench.core.runs.config import parse_run_config
from workbench.core.runs.templates import TEMPLATES
from workbench.ui import prompts
from workbench.ui.dialogs.provider_dialog import ProviderDialog

LEFT = Qt.MouseButton.LeftButton


# ----- helpers ------------------------------------------------------------------------------------
def read(path: Path, fn):
    store = Store.open(path)
    try:
        return fn(store)
    finally:
        store.close_connection()


def stored_panel(path: Path) -> dict:
    return read(path, panel_document)


def stored_names(path: Path) -> list[str]:
    return read(path, lambda s: [c["name"] for c in panel_rows(s).clusters])


def settle(qtbot, window, panel) -> None:
    """Every edit written, every read applied, every key check done."""
    qtbot.waitUntil(lambda: not panel.busy and window.reads_idle(), timeout=WAIT_MS)


def click(qtbot, panel, action) -> None:
    button = panel.tool_button(action)
    assert button is not None and button.isVisible() and button.isEnabled(), action.text()
    qtbot.mouseClick(button, LEFT)


def click_row(qtbot, table, key, column: str = "id") -> None:
    for row in range(table.proxy.rowCount()):
        index = table.proxy.index(row, 0)
        if table.model.row(table.proxy.mapToSource(index).row())[column] == key:
            table.view.scrollTo(index)
            qtbot.mouseClick(table.view.viewport(), LEFT, pos=table.view.visualRect(index).center())
            return
    raise AssertionError(f"{key!r} is not in the table")


def type_line(qtbot, line, text: str, *, enter: bool = True) -> None:
    line.selectAll()
    if line.text():
        qtbot.keyClick(line, Qt.Key.Key_Delete)
    qtbot.keyClicks(line, text)
    if enter:
        qtbot.keyClick(line, Qt.Key.Key_Return)


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def empty_project(tmp_path, open_project):
    path = tmp_path / "p.rwb"
    Store.create(path).close_connection()
    open_project(path)
    return path


@pytest.fixture
def demo(tmp_path, open_project):
    path = build_demo(tmp_path / "demo.rwb")
    open_project(path)
    return path


@pytest.fixture
def panel(window):
    window.show_panel("clustersPanel")  # (the Design workspace)
    return window.panels["clustersPanel"]


# ----- building a panel -----------------------------------------------------------------------------
def test_build_two_clusters_and_four_agents_by_clicking_and_typing(qtbot, window, panel, empty_project):
    panel.history = None  # no undo stack: every edit is applied directly
    path = empty_project
    editor = panel.cluster_editor
    for name in ("advocate", "critic"):
        click(qtbot, panel, panel.add_cluster_button)
        qtbot.waitUntil(lambda: panel.editor.currentWidget() is not panel.hint
                        and editor.cluster is not None and editor.cluster["name"].startswith("cluster"),
                        timeout=WAIT_MS)
        type_line(qtbot, editor.name, name)
        settle(qtbot, window, panel)
    assert stored_names(path) == ["advocate", "critic"]

    click_row(qtbot, panel.clusters, "advocate", "name")
    assert editor.cluster["name"] == "advocate"
    type_line(qtbot, editor.theta, "0.6")
    qtbot.mouseClick(editor.reference, LEFT, pos=QPoint(8, editor.reference.height() // 2))
    settle(qtbot, window, panel)
    for _ in range(2):
        click(qtbot, panel, panel.add_agent_button)
        settle(qtbot, window, panel)
    click_row(qtbot, panel.clusters, "critic", "name")
    for _ in range(2):
        click(qtbot, panel, panel.add_agent_button)
        settle(qtbot, window, panel)

    doc = stored_panel(path)
    assert [(c["name"], [a["id"] for a in c["agents"]]) for c in doc["clusters"]] == \
        [("advocate", ["a1", "a2"]), ("critic", ["c1", "c2"])]
    assert doc["reference"] == "advocate" and doc["clusters"][0]["theta"] == 0.6
    assert doc["providers"] == {"sim": {"model": "sim", "max_concurrency": 4, "timeout_s": 60.0, "max_retries": 3}}

    # An agent's id, persona (multi-line) and simulated-panel parameters, typed in its form.
    click_row(qtbot, panel.agents, "c2")
    agent = panel.agent_editor
    assert agent.agent["id"] == "c2" and agent.model_label.text() == "model: sim"
    type_line(qtbot, agent.id, "commuter")
    settle(qtbot, window, panel)
    assert panel.agent_editor.agent["id"] == "commuter"
    qtbot.mouseClick(agent.persona_text.viewport(), LEFT)
    qtbot.keyClicks(agent.persona_text, "Suburban commuter.")
    qtbot.keyClick(agent.persona_text, Qt.Key.Key_Return)
    qtbot.keyClicks(agent.persona_text, "No transit alternative.")
    qtbot.waitUntil(lambda: stored_panel(path)["clusters"][1]["agents"][1]["persona"]
                    == "Suburban commuter.\nNo transit alternative.", timeout=WAIT_MS)
    settle(qtbot, window, panel)
    persona = panel.persona
    assert persona.agent_id == "commuter"
    type_line(qtbot, persona.inputs["stance"].text, "0.2", enter=False)
    with qtbot.waitSignal(persona.applied, timeout=WAIT_MS):
        qtbot.mouseClick(persona.apply_button, LEFT)
    settle(qtbot, window, panel)

    cfg = parse_run_config({**stored_panel(path), "protocol": "rcp", "query": "Close downtown to cars?"})
    assert [a.id for a in cfg.agents] == ["a1", "a2", "c1", "commuter"]
    assert cfg.agents[3].params["stance"] == 0.2 and cfg.agents[3].persona.count("\n") == 1
    assert panel.status.text() == "✔ valid RCP panel"


def test_duplicate_move_and_remove_agents_and_clusters(qtbot, window, panel, demo):
    panel.history = QUndoStack()
    click_row(qtbot, panel.agents, "a2")
    panel.duplicate_button.trigger()
    settle(qtbot, window, panel)
    assert [a["id"] for a in stored_panel(demo)["clusters"][0]["agents"]] == ["a1", "a2", "a4", "a3"]
    assert panel.agent_editor.agent["id"] == "a4"  # the copy is selected
    panel.up_button.trigger()
    settle(qtbot, window, panel)
    assert [a["id"] for a in stored_panel(demo)["clusters"][0]["agents"]] == ["a1", "a4", "a2", "a3"]
    panel.remove_button.trigger()
    settle(qtbot, window, panel)
    assert [a["id"] for a in stored_panel(demo)["clusters"][0]["agents"]] == ["a1", "a2", "a3"]
    click_row(qtbot, panel.clusters, "critic", "name")
    panel.up_button.trigger()
    settle(qtbot, window, panel)
    assert stored_names(demo) == ["critic", "advocate"]
    panel.remove_button.trigger()
    settle(qtbot, window, panel)
    assert stored_names(demo) == ["advocate"] and panel.editor.currentWidget() is panel.hint
    for _ in range(5):  # undo it all, in order
        panel.history.undo()
    settle(qtbot, window, panel)
    doc = stored_panel(demo)
    assert [(c["name"], [a["id"] for a in c["agents"]]) for c in doc["clusters"]] == \
        [("advocate", ["a1", "a2", "a3"]), ("critic", ["c1", "c2", "c3"])]


# ----- checks as you type ---------------------------------------------------------------------------
def test_tau_of_one_half_is_an_inline_error_and_is_not_saved(qtbot, window, panel, demo):
    type_line(qtbot, panel.tau, "0.5", enter=False)
    assert panel.tau_message.isVisible() and panel.tau_message.level == "error"
    assert "greater than 0.5" in panel.tau_message.text() and "border" in panel.tau.styleSheet()
    assert panel.status.text().startswith("✖ 1 error")
    qtbot.keyClick(panel.tau, Qt.Key.Key_Return)
    settle(qtbot, window, panel)
    assert read(demo, pe.panel_settings)["tau"] == 0.6  # nothing written
    type_line(qtbot, panel.tau, "abc", enter=False)
    assert "not a number" in panel.tau_message.text()
    type_line(qtbot, panel.tau, "0.75")
    assert not panel.tau_message.isVisible() and panel.tau.styleSheet() == ""
    settle(qtbot, window, panel)
    assert read(demo, pe.panel_settings)["tau"] == 0.75


def test_a_duplicate_cluster_name_and_a_bad_theta_are_named_inline(qtbot, window, panel, demo):
    click_row(qtbot, panel.clusters, "critic", "name")
    editor = panel.cluster_editor
    type_line(qtbot, editor.name, "advocate", enter=False)
    message = editor.messages["name"]
    assert message.isVisible() and message.level == "error" and "duplicate cluster name" in message.text()
    assert "border" in editor.name.styleSheet()
    qtbot.keyClick(editor.name, Qt.Key.Key_Return)
    type_line(qtbot, editor.theta, "1.5")
    assert "θ must be greater than 0 and at most 1" in editor.messages["theta"].text()
    settle(qtbot, window, panel)
    assert stored_names(demo) == ["advocate", "critic"]  # neither was written
    assert stored_panel(demo)["clusters"][1]["theta"] == 0.5
    type_line(qtbot, editor.name, "sceptic")
    type_line(qtbot, editor.theta, "")  # empty: the global theta
    assert not message.isVisible() and not editor.messages["theta"].isVisible()
    settle(qtbot, window, panel)
    assert stored_names(demo) == ["advocate", "sceptic"] and "theta" not in stored_panel(demo)["clusters"][1]


def test_warnings_single_agent_empty_cluster_empty_polar_tiers_and_a_provider_without_key(
        qtbot, window, panel, tmp_path, open_project, monkeypatch):
    monkeypatch.delenv("RWB_TEST_MISSING_KEY", raising=False)
    path = build_demo(tmp_path / "demo.rwb")
    store = Store.open(path)
    pe.save_provider(store, {"name": "gpt", "model": "openai/gpt-4o-mini", "key_env": "RWB_TEST_MISSING_KEY"})
    pe.set_agent_provider(store, "c3", "gpt")
    for agent in ("c1", "c2"):
        pe.remove_agent(store, agent)
    safety = pe.create_cluster(store, "safety").keys_of("clusters")[0]
    store.close_connection()
    open_project(path)
    settle(qtbot, window, panel)
    click_row(qtbot, panel.clusters, "critic", "name")
    assert panel.cluster_editor.messages["agents"].level == "warning"
    assert "has 1 agent" in panel.cluster_editor.messages["agents"].text()
    click_row(qtbot, panel.clusters, "safety", "name")
    assert "no agents" in panel.cluster_editor.messages["agents"].text()
    click_row(qtbot, panel.agents, "c3")
    provider = panel.agent_editor.messages["provider"]
    assert provider.level == "warning" and "RWB_TEST_MISSING_KEY is not set" in provider.text()
    assert panel.agent_editor.model_label.text() == "model: openai/gpt-4o-mini"
    # A third cluster with agents: tau 0.6 leaves the polar tiers empty (ratios 1/3 and 2/3).
    read(path, lambda s: [pe.add_agent(s, safety, a, provider="sim") for a in ("s1", "s2")])
    qtbot.waitUntil(lambda: "polar tiers empty" in panel.tau_message.text(), timeout=WAIT_MS)
    assert panel.tau_message.level == "warning"
    type_line(qtbot, panel.tau, "0.7", enter=False)
    assert not panel.tau_message.isVisible()
    settle(qtbot, window, panel)


# ----- undo and redo --------------------------------------------------------------------------------
def test_undo_and_redo_an_edit_with_the_panels_history(qtbot, window, panel, demo):
    stack = QUndoStack()
    panel.history = stack
    click_row(qtbot, panel.clusters, "critic", "name")
    type_line(qtbot, panel.cluster_editor.name, "sceptic")
    settle(qtbot, window, panel)
    assert stack.count() == 1 and stack.undoText() == "Rename cluster critic to sceptic"
    assert stored_names(demo) == ["advocate", "sceptic"]
    stack.undo()
    settle(qtbot, window, panel)
    assert stored_names(demo) == ["advocate", "critic"]
    assert panel.cluster_editor.name.text() == "critic"  # the form follows
    stack.redo()
    settle(qtbot, window, panel)
    assert stored_names(demo) == ["advocate", "sceptic"]

    click_row(qtbot, panel.agents, "a1")  # a persona typed in bursts is one undo step
    before = stored_panel(demo)["clusters"][0]["agents"][0]["persona"]
    text = panel.agent_editor.persona_text
    text.moveCursor(text.textCursor().MoveOperation.End)
    qtbot.keyClicks(text, " Rides")
    panel.agent_editor.flush()
    qtbot.keyClicks(text, " a bike.")
    panel.agent_editor.flush()
    settle(qtbot, window, panel)
    assert stored_panel(demo)["clusters"][0]["agents"][0]["persona"] == before + " Rides a bike."
    assert stack.count() == 2
    stack.undo()
    settle(qtbot, window, panel)
    assert stored_panel(demo)["clusters"][0]["agents"][0]["persona"] == before


def test_a_failed_edit_leaves_no_undo_step(qtbot, window, panel, demo):
    stack = QUndoStack()
    panel.history = stack
    click_row(qtbot, panel.clusters, "critic", "name")
    outside = Store.open(demo)  # another program takes the name first
    pe.create_cluster(outside, "sceptic")
    outside.close_connection()
    panel.edits.rename_cluster(panel.cluster_editor.cluster["id"], "critic", "sceptic")
    settle(qtbot, window, panel)
    assert stack.count() == 0
    assert "already exists" in panel.message.text() and panel.message.level == "error"


# ----- templates and runs ---------------------------------------------------------------------------
def test_apply_each_template_and_undo(qtbot, window, panel, demo, monkeypatch):
    stack = QUndoStack()
    panel.history = stack
    asked: list[str] = []
    monkeypatch.setattr(prompts, "confirm", lambda parent, title, text, ok="OK": asked.append(text) or True)
    for key, template in TEMPLATES.items():
        panel.apply_template(key)
        settle(qtbot, window, panel)
        expected = parse_run_config(template.run_config())
        doc = stored_panel(demo)
        assert [c["name"] for c in doc["clusters"]] == [c.name for c in expected.clusters]
        cfg = parse_run_config({**doc, "protocol": "rcp", "query": "q"})  # the panel is a valid run config
        assert [a.id for a in cfg.agents] == [a.id for a in expected.agents]
        saved = {c.name: c.id for c in read(demo, saved_configs)}
        assert read(demo, lambda s: run_config_from_project(s, saved[f"Template: {template.name}"])) == expected
        assert [c["name"] for c in panel.view.clusters] == [c.name for c in expected.clusters]
    assert len(asked) == len(TEMPLATES) and "Undo" in asked[0]
    assert panel.status.text() != ""
    for _ in TEMPLATES:
        stack.undo()
    settle(qtbot, window, panel)
    assert stored_names(demo) == ["advocate", "critic"]
    assert [a["id"] for c in stored_panel(demo)["clusters"] for a in c["agents"]] == \
        ["a1", "a2", "a3", "c1", "c2", "c3"]


def test_a_template_is_not_applied_without_confirmation(qtbot, window, panel, demo, monkeypatch):
    monkeypatch.setattr(prompts, "confirm", lambda *a, **k: False)
    panel._fill_templates_menu()
    [action] = [a for a in panel.templates_menu.actions() if a.text() == TEMPLATES["arm-mesh"].name]
    action.trigger()
    settle(qtbot, window, panel)
    assert stored_names(demo) == ["advocate", "critic"]


def test_import_the_panel_of_a_run_made_by_rwb_run(qtbot, window, panel, tmp_path, open_project, monkeypatch):
    from workbench.core.project.runs import create_run

    path = tmp_path / "cli.rwb"  # a project `rwb run` made: runs, no clusters rows
    store = Store.create(path)
    config = parse_run_config(TEMPLATES["cons-five"].run_config()).model_dump(mode="json", by_alias=True)
    create_run(store, run_id="run-1", protocol="cons", label="five", config=config, seed=9,
               dispatch="concurrent", simulated=True)
    store.close_connection()
    open_project(path)
    panel.history = QUndoStack()
    offered: list = []
    monkeypatch.setattr(prompts, "choose_run", lambda parent, runs: offered.extend(runs) or "run-1")
    monkeypatch.setattr(prompts, "confirm", lambda *a, **k: True)
    panel._fill_templates_menu()
    [action] = [a for a in panel.templates_menu.actions() if a.text().startswith("Import panel from a run")]
    action.trigger()
    qtbot.waitUntil(lambda: bool(offered), timeout=WAIT_MS)
    settle(qtbot, window, panel)
    assert offered[0][0] == "run-1" and "CONS" in offered[0][1]
    assert [a["id"] for c in stored_panel(path)["clusters"] for a in c["agents"]] == ["r1", "r2", "r3", "r4", "r5"]
    panel.history.undo()
    settle(qtbot, window, panel)
    assert stored_panel(path)["clusters"] == []


# ----- providers -----------------------------------------------------------------------------------
def fill_local(qtbot, dialog: ProviderDialog, base_url: str, kind: str = "llamacpp") -> None:
    dialog.kind.setCurrentIndex(dialog.kind.findData(kind))
    dialog.kind.activated.emit(dialog.kind.currentIndex())
    assert dialog.api_base.text() == "http://127.0.0.1:8080/v1" and dialog.model.text() == "openai/"
    type_line(qtbot, dialog.name, "local", enter=False)
    qtbot.keyClicks(dialog.model, "fake-model")
    type_line(qtbot, dialog.api_base, base_url, enter=False)


def test_provider_dialog_tests_a_local_server(qtbot, window):
    with FakeLLMServer(default=Reply(text="OK")) as server:
        base_url = server.base_url
        dialog = ProviderDialog(window.model.workers)
        qtbot.addWidget(dialog)
        fill_local(qtbot, dialog, base_url)
        with qtbot.waitSignal(dialog.tested, timeout=30_000) as tested:
            qtbot.mouseClick(dialog.test_button, LEFT)
        assert tested.args[0] is True
        assert dialog.test_result.text().startswith("✔ OK: replied in ") and "ms" in dialog.test_result.text()
        # One short call, then one tiny schema call per structured-output form (an api_base server).
        assert len(server.requests) == 3 and server.requests[0].body["max_tokens"] <= 8
        assert [r.body.get("response_format", {}).get("type") for r in server.requests] == [
            None, "json_schema", "json_object"]
        assert "Proposed structured output: off" in dialog.test_result.text()  # "OK" obeys neither
    edit = dialog.edit()
    assert edit.key is None and edit.record["model"] == "openai/fake-model"
    assert edit.record["api_base"] == base_url and edit.record["key_keyring"] is None


def test_provider_dialog_shows_the_real_error_of_a_dead_port(qtbot, window):
    dialog = ProviderDialog(window.model.workers)
    qtbot.addWidget(dialog)
    fill_local(qtbot, dialog, f"http://127.0.0.1:{dead_port()}/v1")
    with qtbot.waitSignal(dialog.tested, timeout=30_000) as tested:
        qtbot.mouseClick(dialog.test_button, LEFT)
    assert tested.args[0] is False
    text = dialog.test_result.text()
    assert text.startswith("✖ ") and ("Connection error" in text or "refused" in text.lower())


def test_provider_dialog_names_a_bad_field_inline(qtbot, window):
    dialog = ProviderDialog(window.model.workers, None, {"sim"})
    qtbot.addWidget(dialog)
    type_line(qtbot, dialog.name, "sim", enter=False)
    assert "already exists" in dialog.messages["name"].text() and not dialog.save_button.isEnabled()
    type_line(qtbot, dialog.name, "gpt", enter=False)
    type_line(qtbot, dialog.model, "openai/gpt-4o-mini", enter=False)
    dialog.key_env_choice.setChecked(True)
    type_line(qtbot, dialog.key_env, "sk-proj-0123456789abcdef", enter=False)
    assert "not hold the key itself" in dialog.messages["key"].text() and not dialog.save_button.isEnabled()
    type_line(qtbot, dialog.key_env, "OPENAI_API_KEY", enter=False)
    assert dialog.save_button.isEnabled()
    assert dialog.edit().record["key_env"] == "OPENAI_API_KEY"


def test_add_a_local_provider_from_the_panel_and_remove_it_when_in_use(qtbot, window, panel, demo, monkeypatch):
    panel.history = QUndoStack()
    with FakeLLMServer(default=Reply(text="OK")) as server:
        def fill(parent, workers, provider=None, taken=None):
            dialog = ProviderDialog(workers, provider, taken)
            qtbot.addWidget(dialog)
            fill_local(qtbot, dialog, server.base_url)
            return dialog.edit()

        monkeypatch.setattr(prompts, "edit_provider", fill)
        panel.tabs.setCurrentIndex(1)
        view = panel.providers_view
        qtbot.mouseClick(view.add_button, LEFT)
        settle(qtbot, window, panel)
        assert stored_panel(demo)["providers"]["local"]["api_base"] == server.base_url
        assert view.select("local")
        qtbot.mouseClick(view.test_button, LEFT)
        qtbot.waitUntil(lambda: not view.testing, timeout=30_000)
        assert view.result.text().startswith("✔ local: OK: replied in")
    read(demo, lambda s: pe.set_agent_provider(s, "a1", "local"))
    qtbot.waitUntil(lambda: view.users.get("local") == ["a1"], timeout=WAIT_MS)
    asked: list[str] = []
    monkeypatch.setattr(prompts, "confirm", lambda parent, title, text, ok="OK": asked.append(text) or False)
    view.select("local")
    qtbot.mouseClick(view.remove_button, LEFT)
    assert asked and "a1" in asked[0]
    settle(qtbot, window, panel)
    assert "local" in stored_panel(demo)["providers"]  # declined: kept
    monkeypatch.setattr(prompts, "confirm", lambda *a, **k: True)
    qtbot.mouseClick(view.remove_button, LEFT)
    settle(qtbot, window, panel)
    assert "local" not in stored_panel(demo)["providers"]
    assert stored_panel(demo)["clusters"][0]["agents"][0]["provider"] is None
    panel.history.undo()
    settle(qtbot, window, panel)
    assert stored_panel(demo)["clusters"][0]["agents"][0]["provider"] == "local"


def test_a_key_goes_to_the_keyring_and_never_into_the_project_file(qtbot, window, panel, demo, monkeypatch):
    key = "sk-test-KEEP-OUT-OF-THE-PROJECT-0123456789"
    with memory_keyring() as backend:
        def fill(parent, workers, provider=None, taken=None):
            dialog = ProviderDialog(workers, provider, taken)
            qtbot.addWidget(dialog)
            qtbot.waitUntil(lambda: dialog.keyring_available is not None, timeout=WAIT_MS)
            assert dialog.key_keyring.isEnabled()
            type_line(qtbot, dialog.name, "openai", enter=False)
            type_line(qtbot, dialog.model, "openai/gpt-4o-mini", enter=False)
            qtbot.mouseClick(dialog.key_keyring, LEFT, pos=QPoint(8, dialog.key_keyring.height() // 2))
            assert dialog.key.isEnabled() and dialog.key.echoMode() == dialog.key.EchoMode.Password
            qtbot.keyClicks(dialog.key, key)
            return dialog.edit()

        monkeypatch.setattr(prompts, "edit_provider", fill)
        panel.tabs.setCurrentIndex(1)
        qtbot.mouseClick(panel.providers_view.add_button, LEFT)
        settle(qtbot, window, panel)
        assert backend.passwords == {("resonance-workbench", "openai"): key}
        provider = stored_panel(demo)["providers"]["openai"]
        assert provider["key_keyring"] == "openai" and "api_key_env" not in provider

        # Editing it again never shows the key; leaving the box empty keeps it.
        dialog = ProviderDialog(window.model.workers, panel.view.providers["openai"], set(panel.view.providers))
        qtbot.addWidget(dialog)
        qtbot.waitUntil(lambda: dialog.keyring_available is not None, timeout=WAIT_MS)
        assert dialog.key.text() == "" and dialog.key_keyring.isChecked() and not dialog.stored_note.isHidden()
        assert key not in dialog.stored_note.text()
        assert dialog.edit().record["key_keyring"] == "openai"
        settle(qtbot, window, panel)
    window.model.close()
    for file in demo.parent.iterdir():
        if file.name.startswith(demo.name):
            assert key.encode() not in file.read_bytes(), file.name


def test_without_a_keyring_the_dialog_says_so_and_offers_a_variable(qtbot, window):
    with fail_keyring():
        dialog = ProviderDialog(window.model.workers)
        qtbot.addWidget(dialog)
        dialog.show()
        with qtbot.waitSignal(dialog.keyring_known, timeout=WAIT_MS) as known:
            pass
        assert known.args == [False]
        assert not dialog.key_keyring.isEnabled() and not dialog.key.isEnabled()
        note = dialog.keyring_note.text()
        assert "No OS keyring is available" in note and "environment variable" in note
        assert dialog.keyring_note.isVisible()
        dialog.key_env_choice.setChecked(True)
        assert dialog.key_env.isEnabled()
        type_line(qtbot, dialog.model, "openai/gpt-4o-mini", enter=False)
        type_line(qtbot, dialog.key_env, "OPENAI_API_KEY", enter=False)
        edit = dialog.edit()
        assert edit.key is None and edit.record["key_env"] == "OPENAI_API_KEY" and edit.record["key_keyring"] is None


def test_a_new_cluster_named_like_another_is_an_inline_error(qtbot, window, panel, demo):
    click(qtbot, panel, panel.add_cluster_button)
    qtbot.waitUntil(lambda: (panel.cluster_editor.cluster or {}).get("name") == "cluster1", timeout=WAIT_MS)
    editor = panel.cluster_editor
    type_line(qtbot, editor.name, "critic")
    assert "duplicate cluster name 'critic'" in editor.messages["name"].text()
    type_line(qtbot, editor.name, "", enter=True)
    assert editor.messages["name"].text().endswith("a cluster needs a name")
    settle(qtbot, window, panel)
    assert stored_names(demo) == ["advocate", "critic", "cluster1"]
    assert panel.message.text() == ""  # nothing was even tried


def test_a_persona_being_typed_is_saved_to_its_own_agent_when_another_is_selected(qtbot, window, panel, demo):
    click_row(qtbot, panel.agents, "a1")
    text = panel.agent_editor.persona_text
    text.selectAll()
    qtbot.keyClicks(text, "Only for a1.")
    click_row(qtbot, panel.agents, "c1")  # before the persona's timer
    settle(qtbot, window, panel)
    agents = {a["id"]: a["persona"] for c in stored_panel(demo)["clusters"] for a in c["agents"]}
    assert agents["a1"] == "Only for a1." and agents["c1"].startswith("Disability-access")
    assert panel.agent_editor.persona_text.toPlainText().startswith("Disability-access")


def test_a_project_made_through_mcp_gets_a_panel_and_keeps_its_findings(qtbot, window, panel, tmp_path, open_project):
    """The Consensus Server (MCP) writes findings and votes, no clusters: the panel is built on
    that same file by clicking, and the findings and votes the clients sent are untouched."""
    import anyio
    import mcp_types as types
    from mcp import Client

    from workbench.services.mcp.server import ConsensusServer

    path = tmp_path / "mcp.rwb"
    store = Store.create(path)
    with ConsensusServer(store) as server:
        async def main():
            async with Client(server, client_info=types.Implementation(name="scout-agent", version="1.0"),
                              mode="auto") as client:
                made = await client.call_tool("create_finding", {"claim": "The cache is write-through."})
                finding = made.structured_content["finding_id"] if "finding_id" in made.structured_content \
                    else made.structured_content["id"]
                await client.call_tool("submit_vote", {"finding_id": finding, "agent": "auditor",
                                                       "vote_type": "confirm", "confidence": 0.8,
                                                       "reason": "Seen in the config."})
        anyio.run(main)
    store.close_connection()
    def votes() -> int:
        import sqlite3
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return db.execute("SELECT COUNT(*) FROM finding_votes").fetchone()[0]

    assert votes() == 1

    open_project(path)
    panel.history = None
    click(qtbot, panel, panel.add_cluster_button)
    qtbot.waitUntil(lambda: panel.cluster_editor.cluster is not None, timeout=WAIT_MS)
    type_line(qtbot, panel.cluster_editor.name, "auditors")
    settle(qtbot, window, panel)
    for _ in range(2):
        click(qtbot, panel, panel.add_agent_button)
        settle(qtbot, window, panel)
    assert [(c["name"], len(c["agents"])) for c in stored_panel(path)["clusters"]] == [("auditors", 2)]
    assert votes() == 1
