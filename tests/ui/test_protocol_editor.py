"""The Protocol Editor (Design) and the GUI's protocol lists (issue 27): a researcher edits the RCP
vote template, sees it against the default and as a real run sends it, saves it as a prompt set,
runs with it from Live Run on the simulated panel, and finds its hash on the run's calls; a bad
template gets the words ``rwb run`` prints; every registered protocol (one known only by its
declaration) is in the editor's and Live Run's lists."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field
from PySide6.QtCore import Qt

from tests.ui.conftest import WAIT_MS
from tests.ui.live_run_helpers import (
    click_call,
    click_run,
    empty_project,
    panel_of,
    plain,
    put,
    read,
    rows,
    sample,
    start,
)
from workbench.core import registry
from workbench.core.protocols.shared.declaration import Protocol
from workbench.core.protocols.shared.templates import PromptTemplate, Step, Variable
from workbench.core.runs.provenance import SIM_PROMPTS_WARNING

REPO = Path(__file__).resolve().parents[2]
OLD = "Answer YES or NO."
NEW = "Answer YES only if every step of its reasoning holds; otherwise answer NO."


def editor_of(window):
    window.show_panel("protocolEditorPanel")  # (the Design workspace)
    panel = window.panels["protocolEditorPanel"]
    return panel


def choose(qtbot, combo, data) -> None:
    """Pick the item holding ``data`` in ``combo`` as a user would (the ``activated`` a click gives)."""
    qtbot.waitUntil(lambda: combo.findData(data) >= 0, timeout=WAIT_MS)
    combo.setCurrentIndex(combo.findData(data))
    combo.activated.emit(combo.currentIndex())


def type_over(qtbot, editor, old: str, new: str) -> None:
    """Select ``old`` in the template and type ``new`` over it, key by key."""
    found = editor.document().find(old)
    assert not found.isNull(), old
    editor.setFocus()
    editor.setTextCursor(found)
    qtbot.keyClicks(editor, new)


def wait_checked(qtbot, panel, text: str) -> None:
    """The editor has checked (and previewed) exactly ``text`` (off the GUI thread, after the pause)."""
    qtbot.waitUntil(lambda: panel.checked_text == text and panel.editor.toPlainText() == text, timeout=WAIT_MS)


def test_edit_the_vote_template_see_it_save_it_run_with_it_and_find_its_hash(qtbot, window, tmp_path, open_project):
    path = empty_project(tmp_path)
    open_project(path)
    live = panel_of(window)
    put(qtbot, live, sample("rcp-sim.json"))
    first = start(qtbot, window)["run_id"]  # the run the preview is rendered from: real agents, real artifacts

    panel = editor_of(window)
    qtbot.waitUntil(lambda: panel.view is not None and panel.protocol_combo.findData("rcp") >= 0, timeout=WAIT_MS)
    choose(qtbot, panel.protocol_combo, "rcp")
    choose(qtbot, panel.step_combo, "vote")
    default = registry.get("rcp").default_text("vote")
    assert panel.editor.toPlainText() == default
    type_over(qtbot, panel.editor, OLD, NEW)
    edited = default.replace(OLD, NEW)
    wait_checked(qtbot, panel, edited)
    assert panel.problem is None and "✔" in panel.check_label.text()
    assert panel.step_combo.currentText().startswith("✎ vote")

    # The diff against the default: the words added underlined, those gone struck through.
    html = panel.diff_view.toHtml()
    assert "underline" in html and "line-through" in html
    assert "every step of its reasoning holds" in plain(html)

    # The preview: the first vote call a run makes with this template, from the project's run:
    # one of its agents, its persona, an artifact it stored, fenced as sent, the edited words.
    preview = panel.preview
    assert preview is not None and first in preview.source
    sha = PromptTemplate(edited, registry.get("rcp").step("vote").variables).sha256
    assert preview.sha256 == sha
    user = next(m["content"] for m in preview.messages if m["role"] == "user")
    assert NEW in user and OLD not in user
    delimiter = preview.fence["delimiter"]
    assert f"<<<{delimiter}>>>" in user and f"<<<END-{delimiter}>>>" in user
    fenced = user.split(f"<<<{delimiter}>>>\n")[1].split(f"\n<<<END-{delimiter}>>>")[0]
    artifacts = [r["content"] for r in read(path, "SELECT content FROM artifacts WHERE run_id = ?", (first,))]
    assert fenced in artifacts
    agents = {r["agent_id"] for r in read(path, "SELECT DISTINCT agent_id FROM llm_calls WHERE run_id = ?", (first,))}
    assert preview.agent in agents
    assert NEW in plain(panel.preview_view.toHtml())

    # Saved as a prompt set, one version, holding the edited step only.
    qtbot.keyClicks(panel.name_edit, "strict vote")
    qtbot.waitUntil(panel.save_button.isEnabled, timeout=WAIT_MS)
    qtbot.mouseClick(panel.save_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.save_note.isVisible() and "Saved" in panel.save_note.text(), timeout=WAIT_MS)
    saved = read(path, "SELECT name, protocol, sha256, templates_json FROM prompt_sets")
    assert [(s["name"], s["protocol"], s["templates_json"]) for s in saved] == [
        ("strict vote", "rcp", {"vote": edited})]
    version = saved[0]["sha256"]

    # Live Run: the configuration picks the set; the simulated run says sim does not read prompts.
    editor = live.editor
    choose(qtbot, editor.prompt_set_combo, "strict vote")
    qtbot.waitUntil(lambda: editor.valid and editor.document().get("prompt_set") == "strict vote", timeout=WAIT_MS)
    assert SIM_PROMPTS_WARNING in editor.check.warnings
    summary = start(qtbot, window)
    run_id = summary["run_id"]
    assert summary["prompts"]["vote"] == {"sha256": sha, "default": False}
    provenance = read(path, "SELECT provenance_json FROM runs WHERE id = ?", (run_id,))[0]["provenance_json"]
    assert provenance["prompt_set"] == {"name": "strict vote", "sha256": version}
    calls = read(path, "SELECT id, purpose, template_sha256 FROM llm_calls WHERE run_id = ?", (run_id,))
    votes = [c for c in calls if c["purpose"] == "vote"]
    assert votes and all(c["template_sha256"] == sha for c in votes)
    assert all(c["template_sha256"] == provenance["prompts"]["generate"]["sha256"]
               for c in calls if c["purpose"] == "generate")

    # ...and Live Run's call list and call detail say which template and which set made each call.
    click_run(qtbot, live, run_id)
    qtbot.waitUntil(lambda: len(rows(live)) == len(calls) and all(r.get("template") for r in rows(live)),
                    timeout=WAIT_MS)
    assert {r["template"] for r in rows(live) if r["purpose"] == "vote"} == {f"vote @{sha[:8]} ✎"}
    assert "prompt set strict vote" in plain(live.calls_heading.text())
    click_call(qtbot, live, votes[0]["id"])
    qtbot.waitUntil(lambda: live.call_view.call_id == votes[0]["id"], timeout=WAIT_MS)
    shown = plain(live.call_view.summary.text())
    assert f"template vote @{sha[:12]}" in shown and f"prompt set strict vote @{version[:8]}" in shown

    # The Trace Inspector's detail of the call names them too.
    from workbench.core.project.refs import RecordRef

    inspector = window.panels["traceInspectorPanel"]
    window.model.reveal(RecordRef("call", votes[0]["id"], run_id))
    qtbot.waitUntil(lambda: inspector.detail.detail is not None and inspector.detail.detail.id == votes[0]["id"],
                    timeout=WAIT_MS)
    origin = inspector.detail.detail.extras["template"]
    assert (origin.step, origin.sha256, origin.source, origin.prompt_set) == (
        "vote", sha, "prompt set", {"name": "strict vote", "sha256": version})
    assert f"prompt set strict vote @{version[:8]}" in plain(inspector.detail.call_view.summary.text())

    # The editor lists the set's version with the run that used it.
    editor_of(window)
    qtbot.waitUntil(lambda: [r["runs"] for r in panel.set_list.sets_table.model._rows] == [1], timeout=WAIT_MS)
    panel.set_list.sets_table.view.selectRow(0)
    assert [r["id"] for r in panel.set_list.runs_table.model._rows] == [run_id]


def test_a_bad_template_gets_the_message_rwb_run_prints(qtbot, window, tmp_path, open_project):
    path = empty_project(tmp_path)
    open_project(path)
    panel = editor_of(window)
    qtbot.waitUntil(lambda: panel.view is not None, timeout=WAIT_MS)
    choose(qtbot, panel.protocol_combo, "rcp")
    choose(qtbot, panel.step_combo, "vote")
    default = registry.get("rcp").default_text("vote")
    for broken in (default.replace("{{ reply_format }}", "Reply as you like."),  # a required variable left out
                   default.replace("{{ artifact }}", "{{ artifact }"),  # a syntax error, with its line
                   default.replace("{{ query }}", "{{ question }}"),  # a variable the step does not have
                   default.replace("{{ query }}", "{% for a in range(100000) %}{% for b in range(100000) %}"
                                                  "{% endfor %}{% endfor %}{{ query }}")):  # loops with no end in sight
        config = {**sample("rcp-sim.json"), "prompts": {"vote": broken}}
        (tmp_path / "bad.json").write_text(json.dumps(config))
        cli = subprocess.run([sys.executable, "-m", "workbench", "run", str(tmp_path / "bad.json"), "--project",
                              str(tmp_path / "cli.rwb")], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert cli.returncode == 2 and "Traceback" not in cli.stderr
        line = cli.stderr.strip().splitlines()[-1]
        panel.set_text(broken)
        wait_checked(qtbot, panel, broken)
        assert panel.problem and panel.problem in line, (panel.problem, line)
        assert panel.problem.startswith("prompts.vote: ")
        assert "✖" in panel.check_label.text() and panel.step_combo.currentText().startswith("✖")
        qtbot.keyClicks(panel.name_edit, "x")
        assert not panel.save_button.isEnabled() and "not valid" in panel.save_button.toolTip()
    assert not (tmp_path / "cli.rwb").exists() or not read(tmp_path / "cli.rwb", "SELECT id FROM runs")
    panel.revert_step()
    wait_checked(qtbot, panel, default)
    assert panel.problem is None and not panel.step_combo.currentText().startswith(("✖", "✎"))


# ----- a protocol known only by its declaration ---------------------------------------------------
class ToyOptions(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    critique_rounds: int = Field(2, ge=1, le=5, description="how often each agent critiques")
    harsh: bool = False


def _toy_generator(cfg, prompts):
    return
    yield  # a generator that makes no call


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A protocol registered for the test only: its package (with its template) on sys.path."""
    from workbench.core.runs import config

    package = tmp_path / "toy_protocol"
    (package / "prompts").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "prompts" / "critique.j2").write_text(
        "{% block user %}Critique this answer to {{ query }}:\n{{ answer }}{% endblock %}")
    monkeypatch.syspath_prepend(str(tmp_path))
    step = Step("critique", "critique", "Each agent critiques another's answer.",
                (Variable("query", "the question"), Variable("answer", "another agent's answer", untrusted=True)),
                "critique.j2")
    declared = Protocol(name="toy", title="Toy critique protocol", version="0.1", package="toy_protocol",
                        summary="Agents critique each other.", steps=(step,), config=ToyOptions,
                        generator=_toy_generator, read=lambda call, reply: None)
    found, failures = registry._load()
    monkeypatch.setattr(registry, "_loaded", ({**found, "toy": declared}, failures))
    config._models.cache_clear()
    config._adapter.cache_clear()
    yield declared
    config._models.cache_clear()
    config._adapter.cache_clear()


def test_every_registered_protocol_is_in_the_editors_and_live_runs_lists(qtbot, toy, window, tmp_path,
                                                                         open_project):
    open_project(empty_project(tmp_path))
    names = list(registry.protocols())
    assert "toy" in names

    panel = editor_of(window)
    qtbot.waitUntil(lambda: panel.view is not None, timeout=WAIT_MS)
    listed = [panel.protocol_combo.itemData(i) for i in range(panel.protocol_combo.count())]
    assert listed == [n for n in names if registry.get(n).steps]
    choose(qtbot, panel.protocol_combo, "toy")
    assert [panel.step_combo.itemData(i) for i in range(panel.step_combo.count())] == ["critique"]
    assert panel.editor.toPlainText() == toy.default_text("critique")
    assert "answer" in plain(panel.legend.text())
    untrusted = panel.editor.highlighter.format_of("answer")
    assert untrusted.fontUnderline() and untrusted.background().color().name() != "#000000"

    live = panel_of(window)
    editor = live.editor
    qtbot.waitUntil(lambda: editor.protocol_combo.count() > 0, timeout=WAIT_MS)
    runnable = [editor.protocol_combo.itemData(i) for i in range(editor.protocol_combo.count())]
    assert runnable == list(registry.runnable()) and "toy" in runnable
    live._fill_new_menu()
    assert "From the project's clusters: Toy critique protocol" in [a.text() for a in live.new_menu.actions()]

    # Its options page is made from its declared config model.
    put(qtbot, live, sample("rcp-sim.json"))
    editor.protocol_combo.setCurrentIndex(editor.protocol_combo.findData("toy"))
    qtbot.waitUntil(lambda: editor.document().get("protocol") == "toy" and not editor.pending, timeout=WAIT_MS)
    rounds, harsh = editor.fields[("critique_rounds",)], editor.fields[("harsh",)]
    assert (rounds.minimum(), rounds.maximum(), rounds.value(), rounds.toolTip()) == (
        1, 5, 2, "how often each agent critiques")
    rounds.setValue(4)
    qtbot.waitUntil(lambda: editor.valid, timeout=WAIT_MS)
    assert editor.document()["critique_rounds"] == 4 and "theta" not in editor.document()
    assert not harsh.isChecked()


def test_a_wrappers_steps_are_checked_under_its_key_and_not_saved_as_a_set(qtbot, window, tmp_path, open_project):
    open_project(empty_project(tmp_path))
    panel = editor_of(window)
    qtbot.waitUntil(lambda: panel.view is not None, timeout=WAIT_MS)
    wrapper = next(p for p in registry.protocols().values() if not p.runnable)
    choose(qtbot, panel.protocol_combo, wrapper.name)
    step = panel.step_name
    broken = wrapper.default_text(step) + "{{ nobody }}"
    panel.set_text(broken)
    wait_checked(qtbot, panel, broken)
    assert panel.problem.startswith(f"prompts.{wrapper.name}.{step}: ")
    panel.revert_step()
    wait_checked(qtbot, panel, wrapper.default_text(step))
    panel.set_text(wrapper.default_text(step) + "{# a note #}")
    panel.name_edit.setText("mine")
    panel._update_save()
    assert not panel.save_button.isEnabled() and "wraps another protocol" in panel.save_button.toolTip()


def test_a_protocols_own_records_are_listed_and_read_in_the_trace_inspector(qtbot, window, tmp_path, open_project):
    """A kind no table holds (a plugin's, kept in ``protocol_records``) is a kind of the list, with
    its label in the kind filter, and its detail reads: its data, the call that made it."""
    from types import SimpleNamespace

    from workbench.core.project import runs
    from workbench.core.project.run_records import CallRecord, record_calls
    from workbench.core.project.store import Store
    from workbench.core.protocols.shared.declaration import Record
    from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Reading

    path = empty_project(tmp_path)
    store = Store.open(path)
    runs.create_run(store, run_id="toy-1", protocol="toy", label="two critiques", config={"query": "Q?"}, seed=1,
                    dispatch="concurrent", simulated=True)
    recs = []
    for key, agent, data in (("c1", "a1", {"text": "too vague"}), ("c2", "a2", {"valid": False, "problem": "empty"})):
        call = AgentCall(key, agent, "critique", ({"role": "user", "content": "Critique it."},),
                         meta={"protocol": "toy", "step": "critique"})
        reading = Reading(data, data.get("valid", True), (Record("critique", {"key": key, "agent": agent,
                                                                             "data": data}),), None)
        recs.append(CallRecord(call, AgentReply(key, "text", None, {}, reading), "sim", True, {"status": "ok"}))
    record_calls(store, "toy-1", None, recs, SimpleNamespace(protocol="toy"))
    ids = [r["id"] for r in read(path, "SELECT id FROM protocol_records ORDER BY id")]
    store.close_connection()

    open_project(path)
    inspector = window.panels["traceInspectorPanel"]
    window.show_panel("traceInspectorPanel")
    combo = inspector.filter_bar.combos["kind"]
    qtbot.waitUntil(lambda: combo.findData("protocol_record") >= 0, timeout=WAIT_MS)
    assert combo.itemText(combo.findData("protocol_record")).startswith("Kind: protocol record (2")
    inspector.filter_bar.choose("kind", "protocol_record")
    qtbot.waitUntil(lambda: [k for k in inspector.visible_keys()] == [("protocol_record", i) for i in ids],
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: inspector.select("protocol_record", ids[1]), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: inspector.detail.detail is not None and inspector.detail.detail.id == ids[1],
                    timeout=WAIT_MS)
    detail = inspector.detail
    assert detail.title.text().startswith(f"critique #{ids[1]} · a2 · toy run toy-1")
    assert "✖ invalid" in plain(detail.badges.text())
    assert "empty" in "\n".join(plain(s.text()) for s in detail.sections.values())


def test_a_hidden_editor_makes_its_preview_again_only_when_shown(qtbot, window, tmp_path, open_project):
    """A run changes the project every few calls, and each preview replays a run: the editor in
    another workspace waits until it is shown again."""
    open_project(empty_project(tmp_path))
    panel = editor_of(window)
    qtbot.waitUntil(lambda: panel.view is not None and panel.checked_text is not None, timeout=WAIT_MS)
    checks = []
    panel._checking.load = lambda job, done, **kw: checks.append(job)  # counts the previews asked for

    window.workspaces.switch("run")
    qtbot.waitUntil(lambda: not panel.isVisible(), timeout=WAIT_MS)
    panel.apply(panel.view)  # the project changed: re-read
    assert not panel._timer.isActive() and checks == []  # (a visible editor starts its pause timer)

    window.workspaces.switch("design")
    qtbot.waitUntil(lambda: len(checks) == 1, timeout=WAIT_MS)
