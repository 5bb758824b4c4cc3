"""Live Run's configuration form: new from a template or from the project's clusters, validation
as you type through the models `rwb run` uses, a new seed, the JSON view, and saving the
configuration in the project and as a file `rwb run` accepts unchanged (and loading it back)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.services.test_run_service import demo_project
from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import (
    SAMPLES,
    click,
    click_menu,
    empty_project,
    panel_of,
    put,
    read,
    template,
    type_into,
    wait_valid,
)
from workbench.core.runs.config import parse_run_config
from workbench.ui import prompts


def test_a_template_fills_the_form_and_typing_is_validated_by_the_run_models(qtbot, window, tmp_path, open_project):
    open_project(empty_project(tmp_path))
    panel = panel_of(window)
    panel._fill_new_menu()
    names = [a.text() for a in panel.new_menu.actions() if a.text()]
    assert "From template: RCP: advocates and critics (3 + 3)" in names
    assert "From the project's clusters: CONS" in names
    click_menu(qtbot, panel.new_button, "From template: RCP: advocates and critics (3 + 3)")
    wait_valid(qtbot, panel)
    editor = panel.editor
    assert panel.tabs.currentWidget() is editor
    assert editor.document() == template("rcp-advocate-critic")  # the form adds nothing it was not told
    assert editor.check.message.startswith("Valid: RCP, 6 agent(s)")
    assert panel.start_button.isEnabled()

    # tau out of its range: the message is the models' own, the field is outlined, Start is off.
    type_into(qtbot, editor.fields[("tau",)], "0.4")
    qtbot.waitUntil(lambda: editor.check is not None and not editor.check.ok and not editor.pending, timeout=WAIT_MS)
    assert editor.check.message == "tau: must be greater than 0.5 and at most 1, got 0.4"
    assert "✖ tau: must be greater than 0.5" in editor.status.text()
    assert "b3261e" in editor.fields[("tau",)].styleSheet()
    assert not panel.start_button.isEnabled()
    type_into(qtbot, editor.fields[("tau",)], "0.7")
    wait_valid(qtbot, panel)
    assert editor.fields[("tau",)].styleSheet() == "" and editor.document()["tau"] == 0.7

    # A new seed is a random 31-bit whole number, and goes into the document.
    click(qtbot, editor.new_seed_button)
    seed = int(editor.seed_edit.text())
    assert 0 <= seed < 2 ** 31 and editor.document()["seed"] == seed and editor.seed_edit.text() == str(seed)

    # Switching protocol drops the other protocol's keys (a run refuses them) and keeps them for later.
    editor.protocol_combo.setCurrentIndex(editor.protocol_combo.findData("cons"))
    qtbot.waitUntil(lambda: not editor.pending, timeout=WAIT_MS)
    assert "tau" not in editor.document() and editor.document()["protocol"] == "cons"
    assert editor.check.message.startswith("options:")  # CONS needs its options
    type_into(qtbot, editor.fields[("options",)], "Yes\nNo")
    wait_valid(qtbot, panel)
    assert editor.document()["options"] == ["Yes", "No"]
    editor.protocol_combo.setCurrentIndex(editor.protocol_combo.findData("rcp"))
    wait_valid(qtbot, panel)
    assert editor.document()["tau"] == 0.7 and "options" not in editor.document()

    # The JSON view shows the document; editing it there changes the form.
    editor.json_button.setChecked(True)
    assert json.loads(editor.json_box.toPlainText()) == editor.document()
    doc = {**editor.document(), "theta": 0.65, "refinement_rounds": 1}
    editor.json_box.setPlainText(json.dumps(doc))
    qtbot.waitUntil(lambda: editor.document().get("theta") == 0.65, timeout=WAIT_MS)
    wait_valid(qtbot, panel)
    assert editor.fields[("theta",)].value() == 0.65 and editor.fields[("refinement_rounds",)].value() == 1
    editor.json_box.setPlainText("{not json")
    qtbot.waitUntil(lambda: editor.check is not None and editor.check.message.startswith("JSON: line 1"),
                    timeout=WAIT_MS)


def test_a_new_configuration_from_the_projects_clusters(qtbot, window, tmp_path, open_project):
    open_project(demo_project(tmp_path))
    panel = panel_of(window)
    click_menu(qtbot, panel.new_button, "From the project's clusters: Resonant Consensus Protocol (rcp)")
    qtbot.waitUntil(lambda: panel.editor.document().get("label") == "New RCP run", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: not panel.editor.pending, timeout=WAIT_MS)
    doc = panel.editor.document()
    assert [c["name"] for c in doc["clusters"]] == ["advocate", "critic"] and doc["providers"]["sim"]["model"] == "sim"
    assert doc["reference"] == "advocate" and 0 <= doc["seed"] < 2 ** 31
    assert panel.editor.check.message == "query: required: the question a RCP run puts to its agents"
    type_into(qtbot, panel.editor.query_edit, "Should the library open on Sundays?")
    wait_valid(qtbot, panel)
    assert panel.start_button.isEnabled()


def test_save_in_the_project_and_as_a_file_rwb_run_accepts_then_load_it_back(
        qtbot, window, tmp_path, open_project, monkeypatch):
    path = empty_project(tmp_path)
    open_project(path)
    panel = panel_of(window)
    put(qtbot, panel, template("findings-crew"))
    editor = panel.editor
    type_into(qtbot, editor.name_edit, "Crew check")
    type_into(qtbot, editor.fields[("threshold",)], "0.5")
    wait_valid(qtbot, panel)

    click_menu(qtbot, panel.file_button, "Save in the project")
    qtbot.waitUntil(lambda: panel.config_combo.findText("Crew check (FINDINGS)") >= 0, timeout=WAIT_MS)
    [saved] = read(path, "SELECT name, protocol, config_json FROM protocol_configs")
    assert saved["name"] == "Crew check" and saved["protocol"] == "findings"
    assert saved["config_json"]["threshold"] == 0.5 and saved["config_json"]["label"] == "Crew check"
    assert parse_run_config({"protocol": "findings", **saved["config_json"]}).threshold == 0.5

    target = tmp_path / "crew.json"
    monkeypatch.setattr(prompts, "save_run_config_path", lambda *_a, **_k: target)
    click_menu(qtbot, panel.file_button, "Save as a JSON file…")
    written = json.loads(target.read_text())
    assert written == editor.document()
    out = subprocess.run([sys.executable, "-m", "workbench", "run", str(target), "--project", str(tmp_path / "cli.rwb")],
                         capture_output=True, text=True, timeout=120, cwd=SAMPLES.parent,
                         env={"PATH": "/usr/bin:/bin", "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1])["status"] == "completed"

    # Load another file, then the saved one back: the form shows it exactly.
    monkeypatch.setattr(prompts, "open_run_config_path", lambda *_a, **_k: SAMPLES / "cons-sim.json")
    click_menu(qtbot, panel.file_button, "Open a JSON or YAML file…")
    wait_valid(qtbot, panel)
    assert editor.protocol == "cons" and editor.fields[("options",)].toPlainText() == "single file\nsplit per module"
    monkeypatch.setattr(prompts, "open_run_config_path", lambda *_a, **_k: target)
    click_menu(qtbot, panel.file_button, "Open a JSON or YAML file…")
    wait_valid(qtbot, panel)
    assert editor.document() == written and editor.fields[("threshold",)].value() == 0.5

    # Choosing the saved configuration in the combo loads it from the project.
    put(qtbot, panel, template("rcp-advocate-critic"))
    panel.config_combo.setCurrentIndex(panel.config_combo.findText("Crew check (FINDINGS)"))
    panel.config_combo.activated.emit(panel.config_combo.currentIndex())
    qtbot.waitUntil(lambda: panel.editor.protocol == "findings", timeout=WAIT_MS)
    wait_valid(qtbot, panel)
    assert panel.source.config_id == saved_id(path) and panel.source.unchanged(editor.document())


def saved_id(path) -> int:
    return read(path, "SELECT id FROM protocol_configs WHERE name = 'Crew check'")[0]["id"]


def test_a_batch_is_configured_in_the_form_and_validated_by_expand_batch(qtbot, window, tmp_path, open_project):
    open_project(empty_project(tmp_path))
    panel = panel_of(window)
    put(qtbot, panel, template("arm-mesh"))
    editor = panel.editor
    editor.batch_check.setChecked(True)
    editor.questions_edit.setPlainText("Should an agent refuse a legal but harmful order?\nShould gamma overrule both?")
    editor.mixes_edit.setPlainText("uniform: *=sim")
    editor.fields[("batch", "replicates")].setValue(1)
    wait_valid(qtbot, panel)
    batch = editor.document()["batch"]
    assert batch["questions"][1] == "Should gamma overrule both?" and batch["provider_mixes"] == [
        {"name": "uniform", "providers": {"*": "sim"}}] and batch["replicates"] == 1
    assert "a batch of 2 run(s): 2 question(s) × 1 provider mix(es) × 1 replicate(s)" in editor.check.message
    editor.mixes_edit.setPlainText("uniform: *=nowhere")
    qtbot.waitUntil(lambda: editor.check is not None and not editor.check.ok and not editor.pending, timeout=WAIT_MS)
    assert "nowhere" in editor.check.message and not panel.start_button.isEnabled()
    editor.batch_check.setChecked(False)
    wait_valid(qtbot, panel)
    assert "batch" not in editor.document()
