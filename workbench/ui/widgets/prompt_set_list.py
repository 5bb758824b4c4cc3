"""The Protocol Editor's "Prompt sets" tab and its save rule (SPEC §7, issue 27).

- :class:`PromptSetList`: every version of every prompt set saved in the project
  (``prompt_sets.with_runs``), and beside it every run made with the version selected. A
  double-click on a version asks to edit from it, on a run to open it in the Trace Inspector.
- :func:`save_blocker`: why the editor's Save cannot save now, in words (None when it can), so
  the button's tooltip says what to do rather than greying out in silence.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout, QWidget

from workbench.ui.widgets.record_table import RecordTable

SET_COLUMNS = (("name", "Set"), ("version", "Version"), ("protocol", "Protocol"), ("steps", "Edited steps"),
               ("saved", "Saved"), ("runs", "Runs"))
RUN_COLUMNS = (("title", "Run using the version selected"), ("id", "Id"))


class PromptSetList(QWidget):
    """The sets and the runs that used the one selected (``set_uses`` fills it)."""

    load_wanted = Signal(object)  # prompt_sets.SetUse: edit from this version
    run_wanted = Signal(str)  # a run's id: open it

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.uses: list = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 0)
        layout.setSpacing(2)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.setChildrenCollapsible(False)
        self.sets_table = RecordTable(SET_COLUMNS, "Filter prompt sets…", self)
        self.sets_table.setObjectName("editorSets")
        self.sets_table.view.selectionModel().selectionChanged.connect(self._on_set_selected)
        self.sets_table.view.doubleClicked.connect(lambda _i: self.load_selected())
        self.runs_table = RecordTable(RUN_COLUMNS, "Filter runs…", self)
        self.runs_table.setObjectName("editorSetRuns")
        self.runs_table.view.doubleClicked.connect(lambda _i: self._open_run())
        split.addWidget(self.sets_table)
        split.addWidget(self.runs_table)
        layout.addWidget(split, 1)
        note = QLabel("Double-click a version to edit from it; double-click a run to open it in the "
                      "Trace Inspector.", self)
        note.setWordWrap(True)
        note.setStyleSheet("color: palette(placeholder-text);")
        layout.addWidget(note)

    def set_uses(self, uses: list) -> None:
        from workbench.ui.widgets.run_names import started_text

        self.uses = list(uses)
        rows = []
        for use in self.uses:
            s = use.prompt_set
            rows.append({"name": s.name, "version": s.sha256[:8], "protocol": s.protocol,
                         "steps": ", ".join(sorted(s.templates)), "saved": started_text(s.created_at),
                         "runs": len(use.runs), "_sha": s.sha256})
        self.sets_table.set_rows(rows)
        self._on_set_selected()

    def selected_use(self):
        rows = self.sets_table.view.selectionModel().selectedRows()
        if not rows:
            return None
        row = self.sets_table.model.row(self.sets_table.proxy.mapToSource(rows[0]).row())
        return next((u for u in self.uses if (u.prompt_set.name, u.prompt_set.sha256) == (row["name"], row["_sha"])),
                    None)

    def load_selected(self) -> None:
        use = self.selected_use()
        if use is not None:
            self.load_wanted.emit(use)

    def _on_set_selected(self, *_args) -> None:
        from workbench.ui.widgets.run_names import run_titles

        use = self.selected_use()
        runs = list(use.runs) if use is not None else []
        self.runs_table.set_rows([{"title": t, "id": r["id"]} for t, r in zip(run_titles(runs), runs, strict=True)])

    def _open_run(self) -> None:
        rows = self.runs_table.view.selectionModel().selectedRows()
        if rows:
            self.run_wanted.emit(self.runs_table.model.row(self.runs_table.proxy.mapToSource(rows[0]).row())["id"])


def save_blocker(store, protocol, texts: dict, problem: str | None, name: str) -> str | None:
    """Why ``protocol``'s edited ``texts`` cannot be saved as the set ``name`` now; None when they can."""
    from workbench.core.limits import MAX_NAME_CHARS, check_name
    from workbench.ui.template_preview import edited

    if store is None:
        return "No project is open."
    if store.read_only:
        return "This project is open read-only."
    if protocol is None:
        return "No protocol is chosen."
    if not protocol.runnable:
        return (f"{protocol.title} wraps another protocol's run: its steps are edited in a config's prompts "
                f"(prompts.{protocol.name}.STEP), not saved as a set of their own.")
    if not edited(protocol, texts):
        return "No step differs from its default: a prompt set holds edited templates."
    if problem:
        return f"A template is not valid yet: {problem}"
    if not name:
        return "Name the prompt set first."
    if len(name) > MAX_NAME_CHARS:
        return f"The name is too long ({len(name)} characters; at most {MAX_NAME_CHARS})."
    try:
        check_name(name)
    except ValueError as exc:
        return f"The name {exc}."
    return None


def save_set(model, protocol, name: str, templates: dict[str, str], on_saved, on_refused) -> None:
    """Save ``templates`` (the edited steps) as the newest version of the set ``name`` through the
    project model's writer; ``on_saved(prompt_sets.PromptSet)`` or ``on_refused(message)`` after.
    Every edited step is checked as ``rwb run`` checks it first, not only the one on screen."""
    from workbench.core.errors import InputError
    from workbench.ui.template_preview import check_template

    for step, text in templates.items():
        problem = check_template(protocol, step, text)
        if problem:
            on_refused(problem)
            return
    saved: list = []  # filled by the writer's thread, read once it has finished

    def write(store):
        from workbench.core.project import prompt_sets

        try:
            made, changes = prompt_sets.save(store, name, protocol.name, templates)
        except InputError as exc:
            return exc
        saved.append(made)
        return changes

    def done(result) -> None:
        if isinstance(result, InputError):
            on_refused(str(result))
        elif saved:
            on_saved(saved[0])

    model.write(f"save prompt set {name}", write, done)
