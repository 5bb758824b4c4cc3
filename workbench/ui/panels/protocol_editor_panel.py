"""Protocol Editor (Design): a protocol's prompts, step by step, edited, checked, previewed and
saved as a named prompt set (SPEC §7, issue 27).

- **Which protocol, which step**: any registered protocol (the registry's: plugins too), each of
  its steps with its template in an editor that marks its variables, untrusted ones apart
  (``widgets/template_editor``; the legend says what the marks mean).
- **Checked as you type**, with the words ``rwb run`` uses for a config's ``prompts``
  (``prompts.STEP: line N: …``), a moment after the typing stops, off the GUI thread.
- **Preview**: the first call of the step a real run would send with these templates, fenced
  exactly as sent, made by the protocol's own generator and ``Prompts.call`` from the project's
  newest run of the protocol (its agents, its stored replies: real artifacts); see
  ``ui/template_preview``.
- **Diff** against the step's default, word by word (the Inspector's R1 → R2 marks: struck is
  only in the default, underlined only in yours).
- **Prompt sets**: the edited steps saved in the project under a name, one version per hash
  (``core/project/prompt_sets``); Live Run picks one (Configure ▸ Prompts), a config names one
  (``"prompt_set": "NAME"``); each version is listed with every run that used it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from workbench.core.project.changes import Changes
from workbench.core.project.store import Store
from workbench.services.project_model import ProjectModel
from workbench.services.reads import Reader
from workbench.ui import theme
from workbench.ui.panels.base import Panel
from workbench.ui.widgets.manual_prompt import escape_html
from workbench.ui.widgets.prompt_set_list import PromptSetList, save_blocker, save_set
from workbench.ui.widgets.step_picker import DEFAULTS, StepPicker
from workbench.ui.widgets.template_editor import LEGEND_TIP, TemplateEdit, legend_html, preview_html, template_diff_html

CHECK_MS = 350  # the pause in typing after which the template is checked and the preview made


@dataclass(frozen=True)
class _View:
    protocols: list  # (name, label, runnable, steps: ((name, description), ...)) in the registry's order
    failures: list  # plugins that could not be loaded: (name, source, error)
    uses: list  # prompt_sets.SetUse, newest first


@dataclass
class _Draft:
    """A protocol's templates as being edited: every step's text, and the set they came from."""

    texts: dict[str, str] = field(default_factory=dict)
    loaded: tuple[str, str] | None = None  # (name, version) of the set loaded, if any


class ProtocolEditorPanel(Panel):
    TITLE = "Protocol Editor"
    OBJECT_NAME = "protocolEditorPanel"
    SUMMARY = ("Edit the prompts a protocol sends, step by step: checked as you type, shown against the default "
               "and as a real run would send them, and saved as a prompt set that Live Run or a config can use.")
    TABLES = ("prompt_sets", "runs", "clusters", "agents", "providers", "settings")

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.view: _View | None = None
        self.drafts: dict[str, _Draft] = {}
        self.protocol_name = ""
        self.step_name = ""
        self.problem: str | None = None  # the last check's message (None: valid)
        self.preview = None  # the last template_preview.Preview shown
        self.checked_text: str | None = None  # the text the last check and preview were made of
        self._filling = False
        self._preview_stale = False  # the project changed while the editor was hidden
        self._checking = Reader(model.reads, self, name="check and preview a template")
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(CHECK_MS)
        self._timer.timeout.connect(self._check)
        self._build()

    # ----- construction ------------------------------------------------------------------------
    def _build(self) -> None:
        self.content = QWidget(self)
        layout = QVBoxLayout(self.content)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)

        self.picker = StepPicker(self)
        self.picker.protocol_chosen.connect(self.choose_protocol)
        self.picker.set_chosen.connect(self._on_set_chosen)
        self.picker.step_chosen.connect(self.choose_step)
        self.picker.revert_wanted.connect(self.revert_step)
        # (the combos by name: what tests and the screenshots choose in)
        self.protocol_combo, self.set_combo = self.picker.protocol_combo, self.picker.set_combo
        self.step_combo = self.picker.step_combo
        layout.addWidget(self.picker)

        # One column, no splitter: the check and the legend wrap, and a box layout gives wrapped
        # text the height it needs at its width (a splitter reads its panes' least sizes only);
        # a dock too short for the least height scrolls the panel (dock_room).
        self.editor = TemplateEdit(self)  # (at least EDITOR_LINES lines high, in the type of the moment)
        self.editor.textChanged.connect(self._on_text_changed)
        layout.addWidget(self.editor, 3)
        self.check_label = QLabel(self)
        self.check_label.setObjectName("editorCheck")
        self.check_label.setTextFormat(Qt.TextFormat.RichText)
        self.check_label.setWordWrap(True)
        self.check_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.check_label)
        self.legend = QLabel(self)
        self.legend.setObjectName("editorLegend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        self.legend.setToolTip(LEGEND_TIP)
        layout.addWidget(self.legend)

        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("editorTabs")
        self.tabs.setDocumentMode(True)
        self.preview_view = self._browser("editorPreview")
        self.diff_view = self._browser("editorDiff")
        self.tabs.addTab(self.preview_view, "Preview")
        self.tabs.addTab(self.diff_view, "Diff")
        self.set_list = PromptSetList(self)
        self.set_list.load_wanted.connect(self.load_use)
        self.set_list.run_wanted.connect(self._open_run)
        self.tabs.addTab(self.set_list, "Prompt sets")
        layout.addWidget(self.tabs, 3)

        save = QHBoxLayout()
        self.name_edit = QLineEdit(self)
        self.name_edit.setObjectName("editorSetName")
        self.name_edit.setPlaceholderText("A name for the prompt set")
        self.name_edit.textEdited.connect(lambda _t: self._update_save())
        self.save_button = QPushButton("Save as prompt set", self)
        self.save_button.setObjectName("editorSave")
        self.save_button.clicked.connect(self.save_set)
        save.addWidget(self.name_edit, 1)
        save.addWidget(self.save_button)
        layout.addLayout(save)
        self.save_note = QLabel(self)
        self.save_note.setObjectName("editorSaveNote")
        self.save_note.setWordWrap(True)
        self.save_note.setTextFormat(Qt.TextFormat.RichText)
        self.save_note.hide()
        layout.addWidget(self.save_note)

        self._layout.addWidget(self.content, 1)
        self.content.hide()

    def _browser(self, name: str) -> QTextBrowser:
        browser = QTextBrowser(self)
        browser.setObjectName(name)
        browser.setOpenLinks(False)
        browser.setMinimumHeight(browser.fontMetrics().lineSpacing() * 5)
        return browser

    # ----- reading the project -------------------------------------------------------------------
    def load(self, store: Store, changes: Changes | None, cancel: threading.Event) -> _View:
        from workbench.core import registry
        from workbench.core.project import prompt_sets

        protocols = [(name, _label(p), p.runnable, tuple((s.name, s.description) for s in p.steps))
                     for name, p in registry.protocols().items() if p.steps]
        failures = [(f.name, f.source, f.error) for f in registry.failures()]
        return _View(protocols, failures, prompt_sets.with_runs(store))

    def apply(self, view: _View) -> None:
        first = self.view is None
        self.view = view
        self.picker.set_protocols([(name, label) for name, label, _r, _s in view.protocols], view.failures,
                                  self.protocol_name)
        self.set_list.set_uses(view.uses)
        if first or self.protocol_name not in {n for n, *_ in view.protocols}:
            if view.protocols:
                self.choose_protocol(self.protocol_name or view.protocols[0][0])
        else:
            self._fill_set_combo()
            # The project changed: the preview's run (or panel) may have too. Made again now only if
            # the editor is on screen: a run in progress changes the project every few calls, and
            # each preview replays a run; a hidden editor makes it when it is shown again.
            if self.isVisible():
                self._check_soon()
            else:
                self._preview_stale = True
        self.content.show()
        self._update_save()

    def clear(self) -> None:
        self._timer.stop()
        self._checking.cancel()
        self.view, self.preview, self.problem, self.checked_text = None, None, None, None
        self.drafts, self.protocol_name, self.step_name = {}, "", ""
        self.content.hide()
        self.set_list.set_uses([])
        self.save_note.hide()

    # ----- choosing -------------------------------------------------------------------------------
    @property
    def protocol(self):
        from workbench.core import registry

        return registry.get(self.protocol_name)

    def draft(self, protocol_name: str | None = None) -> _Draft:
        name = protocol_name or self.protocol_name
        if name not in self.drafts:
            from workbench.core import registry

            p = registry.get(name)
            self.drafts[name] = _Draft({s.name: p.default_text(s) for s in p.steps})
        return self.drafts[name]

    def choose_protocol(self, name: str) -> None:
        """Show ``name``'s steps (its draft kept: switching back finds the edits)."""
        if self.view is None or name not in {n for n, *_ in self.view.protocols}:
            return
        self.protocol_name = name
        self.protocol_combo.setCurrentIndex(max(self.protocol_combo.findData(name), 0))
        self._fill_set_combo()
        steps = [s for n, _l, _r, s in self.view.protocols if n == name][0]
        self.choose_step(self.step_name if self.step_name in {s for s, _ in steps} else steps[0][0])

    def choose_step(self, step: str) -> None:
        self.step_name = step
        self._fill_step_combo()
        p = self.protocol
        self._filling = True
        try:
            self.editor.setPlainText(self.draft().texts[step])
        finally:
            self._filling = False
        self.editor.highlighter.set_variables(p.step(step).variables)
        self.legend.setText(legend_html(p.step(step).variables))
        self._show_diff()
        self._check_now()

    def _fill_step_combo(self) -> None:
        if self.view is None:
            return
        steps = [s for n, _l, _r, s in self.view.protocols if n == self.protocol_name][0]
        texts, p = self.draft().texts, self.protocol
        self.picker.set_steps(steps, self.step_name, {n for n, _d in steps if texts[n] != p.default_text(n)},
                              self.step_name if self.problem else None)

    def _fill_set_combo(self) -> None:
        names: dict[str, str] = {}  # (newest first: the first version seen of a name is its newest)
        for use in (self.view.uses if self.view is not None else []):
            if use.prompt_set.protocol == self.protocol_name:
                names.setdefault(use.prompt_set.name, use.prompt_set.sha256)
        draft = self.draft() if self.protocol_name else None
        self.picker.set_sets(list(names.items()), draft.loaded[0] if draft is not None and draft.loaded else DEFAULTS)

    # ----- editing --------------------------------------------------------------------------------
    def _on_text_changed(self) -> None:
        if self._filling or not self.step_name:
            return
        draft = self.draft()
        before = draft.texts[self.step_name]
        draft.texts[self.step_name] = self.editor.toPlainText()
        default = self.protocol.default_text(self.step_name)
        if (before == default) != (draft.texts[self.step_name] == default):
            self._fill_step_combo()  # its ✎ comes or goes
        self._show_diff()
        self.save_note.hide()
        self._check_soon()

    def set_text(self, text: str) -> None:
        """Put ``text`` in the editor as typing would (tests, scripting)."""
        self.editor.setPlainText(text)

    def revert_step(self) -> None:
        if self.step_name:
            self.editor.setPlainText(self.protocol.default_text(self.step_name))

    def _on_set_chosen(self, name) -> None:
        if name is DEFAULTS:
            self.load_templates({}, None)
            return
        use = next((u for u in self.view.uses if u.prompt_set.name == name
                    and u.prompt_set.protocol == self.protocol_name), None) if self.view else None
        if use is not None:
            self.load_templates(use.prompt_set.templates, (use.prompt_set.name, use.prompt_set.sha256))

    def load_templates(self, templates: dict, loaded: tuple[str, str] | None) -> None:
        """The current protocol's steps from ``templates`` (a set's), the others' defaults."""
        p = self.protocol
        self.drafts[self.protocol_name] = _Draft({s.name: templates.get(s.name, p.default_text(s)) for s in p.steps},
                                                 loaded)
        if loaded is not None:
            self.name_edit.setText(loaded[0])
        self._fill_set_combo()
        self.choose_step(self.step_name)
        self._update_save()

    # ----- checking and previewing -----------------------------------------------------------------
    def _check_soon(self) -> None:
        self._timer.start()

    def _check_now(self) -> None:
        self._timer.stop()
        self._check()

    def _check(self) -> None:
        """The step's template checked as ``rwb run`` checks it, and the preview made, off the GUI
        thread (the newest request wins; a stale answer is dropped)."""
        reading = self._reading
        if reading is None or not self.step_name:
            return
        protocol_name, step, texts = self.protocol_name, self.step_name, dict(self.draft().texts)
        if texts[step] != self.checked_text:  # (the same text read again after a project change: no flicker)
            self.check_label.setText(f"<span style='color:{theme.css('muted')}'>checking…</span>")

        def job(_cancel):
            from workbench.ui.template_preview import check_and_preview

            return check_and_preview(reading, protocol_name, step, texts)

        self._checking.load(job, lambda got: self._on_checked(protocol_name, step, texts[step], got),
                            cleanup=reading.close_connection,
                            on_failed=lambda e: self._on_checked(protocol_name, step, texts[step],
                                                                 (f"could not be checked: {e.message}", None)))

    def _on_checked(self, protocol_name: str, step: str, text: str, got) -> None:
        if (protocol_name, step) != (self.protocol_name, self.step_name):
            return
        problem, preview = got
        if preview is not None and preview.problem and not problem:
            problem = preview.problem  # the config's refusal of the templates (a rehearsal, say)
        had = self.problem
        self.problem, self.checked_text = problem, text
        if problem:
            self.check_label.setText(f"<span style='color:{theme.css('error')}'>✖ {escape_html(problem)}</span>")
            self.check_label.setToolTip("The message rwb run gives for this template in a config's prompts")
        else:
            edited = text != self.protocol.default_text(step)
            self.check_label.setText(f"<span style='color:{theme.css('ok')}'>✔</span> "
                                     f"prompts.{escape_html(_key(self.protocol, step))}: "
                                     f"{'valid' if edited else 'the default'}")
            self.check_label.setToolTip("rwb run would take this template in a config's prompts")
        if bool(had) != bool(problem):
            self._fill_step_combo()
        self._show_preview(preview)
        self._update_save()

    def _show_preview(self, preview) -> None:
        self.preview = preview
        self.preview_view.setHtml(preview_html(preview, self.step_name))

    def _show_diff(self) -> None:
        if not self.step_name:
            self.diff_view.clear()
            return
        self.diff_view.setHtml(template_diff_html(self.protocol.default_text(self.step_name),
                                                  self.draft().texts[self.step_name]))

    # ----- prompt sets -------------------------------------------------------------------------------
    def load_use(self, use) -> None:
        """Edit from a saved version (``prompt_sets.SetUse``), its protocol chosen first."""
        if use.prompt_set.protocol != self.protocol_name:
            self.choose_protocol(use.prompt_set.protocol)
        self.load_templates(use.prompt_set.templates, (use.prompt_set.name, use.prompt_set.sha256))

    def _open_run(self, run_id: str) -> None:
        from workbench.core.project.refs import RecordRef

        self.model.reveal(RecordRef("run", run_id, run_id))

    def save_blocker(self) -> str | None:
        """Why Save cannot save now, in words; None when it can."""
        protocol = self.protocol if self.protocol_name else None
        texts = self.draft().texts if self.protocol_name else {}
        return save_blocker(self.store, protocol, texts, self.problem, self.name_edit.text().strip())

    def _update_save(self) -> None:
        blocker = self.save_blocker()
        self.save_button.setEnabled(blocker is None)
        self.save_button.setToolTip(blocker or "Save the edited steps in the project under this name (a new version "
                                               "if the name has one already)")

    def save_set(self) -> None:
        """Save the protocol's edited steps as the newest version of the named set."""
        from workbench.ui.template_preview import edited

        if self.save_blocker() is not None:
            return
        protocol, name = self.protocol, self.name_edit.text().strip()

        def saved(made) -> None:
            self.draft(protocol.name).loaded = (made.name, made.sha256)
            self._show_saved(f"<span style='color:{theme.css('ok')}'>✔</span> Saved <b>{escape_html(made.name)}</b> "
                             f"@{made.sha256[:8]} ({', '.join(sorted(made.templates))}). Pick it in Live Run "
                             f"▸ Configure ▸ Prompts, or name it in a config: "
                             f"<code>\"prompt_set\": \"{escape_html(made.name)}\"</code>.")

        def refused(message: str) -> None:
            self._show_saved(f"<span style='color:{theme.css('error')}'>✖ Not saved: {escape_html(message)}</span>")

        save_set(self.model, protocol, name, edited(protocol, self.draft().texts), saved, refused)

    def _show_saved(self, html: str) -> None:
        self.save_note.setText(html)
        self.save_note.show()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        if self._preview_stale and self.view is not None:
            self._preview_stale = False
            self._check_now()

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "editor"):  # a new theme
            self.editor.highlighter.restyle()
            if self.step_name:
                self.legend.setText(legend_html(self.protocol.step(self.step_name).variables))
                self._show_diff()
                self._show_preview(self.preview)


def _label(protocol) -> str:
    from workbench.ui.widgets.run_config_editor import protocol_label

    return protocol_label(protocol) + ("" if protocol.runnable else " (wraps a run)")


def _key(protocol, step: str) -> str:
    from workbench.ui.template_preview import override_key

    return override_key(protocol, step)
