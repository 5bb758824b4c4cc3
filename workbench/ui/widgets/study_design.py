"""Designing a study in the window (issue 29, SPEC §9): a base configuration, arms as a table,
each arm's changes as form fields beside its JSON, replicates and baseline; checked as it is
edited, estimated, warned about, saved, loaded, and run.

- The base: a configuration saved in the project, the one Live Run shows, or a file.
- The arms' table: name, the contaminated tag (ARM), the paths changed, the estimate (calls,
  tokens, cost; a rule-only arm makes no call) and, while a study runs, its results done / planned.
- The arm chosen: its changes as rows (a setting picked from the base's, a value of the setting's
  type; ``study_changes``) and its JSON (the study file's arm object) beside, each rewritten from
  the other as it is edited.
- Checked 300 ms after the last edit, off the GUI thread, by ``study_service.check_design``: the
  ``parse_study`` ``rwb study run`` refuses with (its one line, naming the arm), the estimate and
  the warnings of ``rwb study run --estimate``. Run is enabled only for a design that passes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.services.reads import Reader
from workbench.ui.widgets import study_changes as changes

ARM_HEADERS = ("Arm", "Contaminated", "Changes", "Calls", "Tokens", "Cost", "Results")
CHECK_MS = 300  # the design is checked this long after the last edit


class StudyDesign(QWidget):
    run_requested = Signal(dict)  # the study document
    cancel_requested = Signal()

    def __init__(self, model, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = model
        self.base: dict | None = None
        self._base_source = ""  # shown as the base's first choice: "File: rcp-sim.json", …
        self.extra: dict = {}  # a loaded file's keys the form does not edit (items, budget, notes)
        self.arms: list[dict] = [{"name": "as configured"}]
        self.check: dict | None = None  # the last check's answer
        self.running = False
        self._current = 0
        self._filling = False
        self._kept: list = []
        self._checking = Reader(model.reads, self, name="check the study design")
        self._reading = Reader(model.reads, self, name="read a base configuration")
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(CHECK_MS)
        self._timer.timeout.connect(self._check_now)
        self._build()
        model.opened.connect(lambda _store: self.read_configs())

    # ----- construction ------------------------------------------------------------------------
    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        self.base_combo = QComboBox(self)
        self.base_combo.setObjectName("studyBase")
        self.base_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.base_combo.setMinimumContentsLength(14)
        self.base_combo.setToolTip("The base: the configuration every arm changes")
        self.base_combo.activated.connect(self._on_base_chosen)
        top.addWidget(QLabel("Base", self))
        top.addWidget(self.base_combo, 2)
        self.name_edit = QLineEdit(self)
        self.name_edit.setPlaceholderText("Study name")
        self.name_edit.textEdited.connect(lambda _t: self.schedule())
        top.addWidget(self.name_edit, 2)
        top.addWidget(QLabel("Replicates", self))
        self.replicates = QSpinBox(self)
        self.replicates.setRange(1, 10_000)
        self.replicates.setValue(5)
        self.replicates.setToolTip("Paired replicates: replicate r of every arm runs with seed base seed + r")
        self.replicates.valueChanged.connect(lambda _v: self.schedule())
        top.addWidget(self.replicates)
        top.addWidget(QLabel("Baseline", self))
        self.baseline = QComboBox(self)
        self.baseline.setToolTip("The arm every other arm is compared with")
        self.baseline.activated.connect(lambda _i: self.schedule())
        top.addWidget(self.baseline, 1)
        layout.addLayout(top)

        buttons = QHBoxLayout()
        self.add_arm_button = self._button("Add arm", "A new arm, as the base until you change it", self.add_arm)
        self.remove_arm_button = self._button("Remove arm", "Remove the arm chosen", self.remove_arm)
        self.load_button = self._button("Load…", "Load a study file (JSON or YAML)", self.load_file)
        self.save_button = self._button("Save…", "Save this study as a study file (JSON, the base inline)",
                                        self.save_file)
        self.run_button = self._button("Run study", "Run every arm's replicates in this project", self._on_run)
        self.run_button.setObjectName("studyRun")
        self.cancel_button = self._button("Cancel", "Stop at the next call: Resume finishes it later",
                                          self.cancel_requested.emit)
        for b in (self.add_arm_button, self.remove_arm_button, self.load_button, self.save_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        layout.addLayout(buttons)

        split = QSplitter(Qt.Orientation.Vertical, self)
        self.arms_table = QTableWidget(0, len(ARM_HEADERS), split)
        self.arms_table.setObjectName("studyDesignArms")
        self.arms_table.setHorizontalHeaderLabels(ARM_HEADERS)
        self.arms_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.arms_table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.arms_table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.arms_table.verticalHeader().hide()
        self.arms_table.setWordWrap(False)  # one line a row (the changes in full in their tooltip)
        self.arms_table.itemChanged.connect(self._on_arm_item_changed)
        self.arms_table.itemSelectionChanged.connect(self._on_arm_selected)
        split.addWidget(self.arms_table)

        lower = QSplitter(Qt.Orientation.Horizontal, split)
        left = QWidget(lower)
        box = QVBoxLayout(left)
        box.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.changes_title = QLabel("Changes", left)
        row.addWidget(self.changes_title, 1)
        self.add_change_button = self._button("Add change", "A setting of the base this arm changes",
                                              self.add_change)
        self.remove_change_button = self._button("Remove change", "Remove the change chosen", self.remove_change)
        row.addWidget(self.add_change_button)
        row.addWidget(self.remove_change_button)
        box.addLayout(row)
        self.changes_table = QTableWidget(0, 2, left)
        self.changes_table.setObjectName("studyChanges")
        self.changes_table.setHorizontalHeaderLabels(("Setting", "Value"))
        self.changes_table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.changes_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.changes_table.verticalHeader().hide()
        self.changes_table.itemChanged.connect(lambda _item: self._on_rows_edited())
        box.addWidget(self.changes_table, 1)
        lower.addWidget(left)
        # The arm's JSON and the design's warnings share the right side: a long list of warnings
        # scrolls there instead of pushing the arms off a 720-pixel screen (its count on the tab).
        self.side = QTabWidget(lower)
        self.json_edit = QPlainTextEdit(self.side)
        self.json_edit.setObjectName("studyArmJson")
        self.json_edit.setToolTip("The arm as the study file has it: set is a JSON Merge Patch, patch a JSON Patch")
        self.json_edit.textChanged.connect(self._on_json_edited)
        self.side.addTab(self.json_edit, "Arm JSON")
        self.warnings = QPlainTextEdit(self.side)
        self.warnings.setObjectName("studyDesignWarnings")
        self.warnings.setReadOnly(True)
        self.side.addTab(self.warnings, "Warnings")
        lower.addWidget(self.side)
        split.addWidget(lower)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        layout.addWidget(split, 1)

        self.message = QLabel(self)
        self.message.setObjectName("studyDesignMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.message)
        self.fill_base_choices([])
        self._fill()

    def _button(self, text: str, tip: str, slot) -> QPushButton:
        button = QPushButton(text, self)
        button.setToolTip(tip)
        button.clicked.connect(lambda _checked=False: slot())
        return button

    # ----- the base ----------------------------------------------------------------------------
    def fill_base_choices(self, configs: list) -> None:
        current = self.base_combo.currentData()
        self.base_combo.blockSignals(True)
        self.base_combo.clear()
        self.base_combo.addItem(self._base_source or "Choose a base…", None)  # where the base came from
        for c in configs:
            self.base_combo.addItem(f"{c.name} ({c.protocol})", ("saved", c.id))
        self.base_combo.addItem("The configuration Live Run shows", ("live", None))
        self.base_combo.addItem("A configuration file…", ("file", None))
        self.base_combo.setCurrentIndex(max(self.base_combo.findData(current), 0) if current else 0)
        self.base_combo.blockSignals(False)

    def read_configs(self) -> None:
        store = self.model.store
        if store is None:
            return

        def read(_cancel):
            from workbench.core.project.panel import saved_configs

            return saved_configs(store)

        self._reading.load(read, self.fill_base_choices, cleanup=store.close_connection)

    def _on_base_chosen(self, index: int) -> None:
        choice = self.base_combo.itemData(index)
        if not choice:
            return
        kind, config_id = choice
        if kind == "file":
            path, _ = QFileDialog.getOpenFileName(self, "Base configuration", "", "Run configuration (*.json *.yaml *.yml)")
            if path:
                self.load_base_file(path)
        elif kind == "live":
            document = self._live_document()
            if document is None:
                self._say("Live Run shows no configuration that validates.", error=True)
            else:
                self.set_base(document, "Live Run's configuration")
        elif self.model.store is not None:
            store = self.model.store

            def read(_cancel):
                from workbench.core.project.run_configs import saved_config_document

                return saved_config_document(store, config_id)

            label = self.base_combo.itemText(index)
            self._reading.load(read, lambda document: self.set_base(document, label), cleanup=store.close_connection,
                               on_failed=lambda e: self._say(e.message, error=True))

    def _live_document(self) -> dict | None:
        panels = getattr(self.window(), "panels", {})
        live = panels.get("liveRunPanel")
        editor = getattr(live, "editor", None)
        return editor.document() if editor is not None and editor.valid else None

    def load_base_file(self, path: str | Path) -> None:
        from workbench.core.errors import WorkbenchError
        from workbench.core.runs.config import read_config_file, with_files_read

        try:
            self.set_base(with_files_read(read_config_file(Path(path)), Path(path).parent), f"File: {Path(path).name}")
        except WorkbenchError as exc:
            self._say(f"base: {exc}", error=True)

    def set_base(self, document: dict, source: str = "") -> None:
        self.base = copy.deepcopy(document)
        self._show_source(source or "A base")
        if not self.name_edit.text():
            self.name_edit.setText(str(document.get("label") or "study"))
        self._fill()
        self.schedule()

    # ----- the arms ----------------------------------------------------------------------------
    def add_arm(self) -> None:
        names = {a["name"] for a in self.arms}
        n = len(self.arms) + 1
        while f"arm {n}" in names:
            n += 1
        self.arms.append({"name": f"arm {n}"})
        self._current = len(self.arms) - 1
        self._fill()
        self.schedule()

    def remove_arm(self) -> None:
        if len(self.arms) > 1:
            del self.arms[self._current]
            self._current = min(self._current, len(self.arms) - 1)
            self._fill()
            self.schedule()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().showEvent(event)
        self.read_configs()  # a configuration saved since (Live Run, Clusters & Agents) is offered

    def _show_source(self, source: str) -> None:
        self._base_source = source
        self.base_combo.setItemText(0, source)
        self.base_combo.setCurrentIndex(0)

    def _protocol(self) -> str:
        return str((self.base or {}).get("protocol") or "")

    def _fill(self) -> None:
        """The tables and the JSON from ``self.arms`` (signals held: this is not an edit)."""
        self._filling = True
        try:
            table = self.arms_table
            table.setRowCount(len(self.arms))
            for r, arm in enumerate(self.arms):
                name = QTableWidgetItem(arm.get("name", ""))
                table.setItem(r, 0, name)
                tag = QTableWidgetItem()
                tag.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsSelectable)
                tag.setCheckState(Qt.CheckState.Checked if (arm.get("tags") or {}).get("contaminated") is True
                                  else Qt.CheckState.Unchecked)
                tag.setToolTip("ARM: tags the arm {\"contaminated\": true} (or false), for the drift AUC")
                table.setItem(r, 1, tag)
                item = QTableWidgetItem(changes.summary(arm))
                item.setToolTip(item.text())
                item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
                table.setItem(r, 2, item)
                for c in (3, 4, 5, 6):
                    if table.item(r, c) is None:
                        item = QTableWidgetItem("")
                        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
                        table.setItem(r, c, item)
            table.setColumnHidden(1, self._protocol() != "arm")
            table.selectRow(self._current)
            names = [a.get("name", "") for a in self.arms]
            chosen = self.baseline.currentText() if self.baseline.currentText() in names else names[0]
            self.baseline.clear()
            self.baseline.addItems(names)
            self.baseline.setCurrentText(chosen)
            self._fill_changes()
        finally:
            self._filling = False
        self._show_check()

    def _fill_changes(self) -> None:
        arm = self.arms[self._current]
        rows, self._kept = changes.rows_of(arm)
        self.changes_title.setText(f"Changes of “{arm.get('name', '')}”"
                                   + (f" (+{len(self._kept)} in the JSON only)" if self._kept else ""))
        self.changes_table.setRowCount(0)
        for path, value in rows:
            self._append_change(path, changes.shown(value))
        self._write_json()

    def _append_change(self, path: str, value: str) -> None:
        table = self.changes_table
        r = table.rowCount()
        table.insertRow(r)
        picker = QComboBox(table)
        picker.setEditable(True)
        picker.addItems(changes.leaf_paths(self.base or {}))
        picker.setEditText(path)
        picker.setToolTip("A setting of the base (type a path to add one it lacks)")
        picker.currentTextChanged.connect(lambda _t: self._on_rows_edited())
        table.setCellWidget(r, 0, picker)
        table.setItem(r, 1, QTableWidgetItem(value))

    def _write_json(self) -> None:
        self.json_edit.blockSignals(True)
        self.json_edit.setPlainText(json.dumps(self.arms[self._current], indent=2, ensure_ascii=False))
        self.json_edit.blockSignals(False)

    def add_change(self, path: str = "", value: str = "") -> None:
        was, self._filling = self._filling, True
        self._append_change(path, value)
        self._filling = was
        self._on_rows_edited()

    def remove_change(self) -> None:
        row = self.changes_table.currentRow()
        if row >= 0:
            self.changes_table.removeRow(row)
            self._on_rows_edited()

    def _on_arm_selected(self) -> None:
        if self._filling:
            return
        rows = self.arms_table.selectionModel().selectedRows()
        if rows and rows[0].row() != self._current and rows[0].row() < len(self.arms):
            self._current = rows[0].row()
            self._filling = True
            try:
                self._fill_changes()
            finally:
                self._filling = False

    def _on_arm_item_changed(self, item: QTableWidgetItem) -> None:
        if self._filling or item.column() > 1:
            return
        arm = self.arms[item.row()]
        if item.column() == 0:
            arm["name"] = item.text()
        elif item.column() == 1:
            tags = dict(arm.get("tags") or {})
            tags["contaminated"] = item.checkState() == Qt.CheckState.Checked
            arm["tags"] = tags
        self._fill()
        self.schedule()

    def _on_rows_edited(self) -> None:
        """A row edited: the arm's set and patch made again from the rows, the JSON rewritten."""
        if self._filling:
            return
        rows, problems = [], []
        for r in range(self.changes_table.rowCount()):
            picker = self.changes_table.cellWidget(r, 0)
            path = picker.currentText().strip() if picker is not None else ""
            item = self.changes_table.item(r, 1)
            if not path:
                continue
            if not path.startswith("/"):
                path = "/" + path  # a path as people write it: clusters/1/theta
            try:
                rows.append((path, changes.parsed(item.text() if item else "", self.base or {}, path)))
            except ValueError as exc:
                problems.append(str(exc))
        arm = changes.arm_with_rows(self.arms[self._current], rows, self._kept, self.base or {})
        self.arms[self._current] = arm
        self._write_json()
        self._refresh_arm_row()
        if problems:
            self._form_error = f"arms[{self._current}] ({arm.get('name')}): {problems[0]}"
        else:
            self._form_error = None
        self.schedule()

    def _on_json_edited(self) -> None:
        """The arm's JSON edited: the rows made again from it (when it reads as an object)."""
        try:
            arm = json.loads(self.json_edit.toPlainText())
            if not isinstance(arm, dict):
                raise ValueError("an arm is a JSON object with a name")
        except ValueError as exc:
            self._form_error = f"arms[{self._current}]: the JSON does not read: {exc}"
            self.schedule()
            return
        self._form_error = None
        self.arms[self._current] = arm
        self._filling = True
        try:
            rows, self._kept = changes.rows_of(arm)
            self.changes_table.setRowCount(0)
            for path, value in rows:
                self._append_change(path, changes.shown(value))
            self.arms_table.item(self._current, 0).setText(str(arm.get("name", "")))
        finally:
            self._filling = False
        self._refresh_arm_row()
        self.schedule()

    def _refresh_arm_row(self) -> None:
        item = self.arms_table.item(self._current, 2)
        if item is not None:
            self._filling, was = True, self._filling  # not an edit of the arms' table
            try:
                item.setText(changes.summary(self.arms[self._current]))
                item.setToolTip(item.text())
            finally:
                self._filling = was

    # ----- the document, checked ---------------------------------------------------------------
    _form_error: str | None = None

    def document(self) -> dict:
        """The study as its file has it (the base inline)."""
        doc = {**self.extra, "study": self.name_edit.text().strip(), "base": self.base or {},
               "replicates": self.replicates.value(), "arms": self.arms}
        if self.baseline.currentText():
            doc["baseline"] = self.baseline.currentText()
        return doc

    def schedule(self) -> None:
        self.check = None
        self._timer.start()
        self._show_check()

    def _check_now(self) -> None:
        if self.base is None or self._form_error:
            self.check = {"error": self._form_error} if self._form_error else None  # settled: nothing to ask
            self._show_check()
            return
        document = json.loads(json.dumps(self.document()))  # the worker's own copy

        def check(_cancel):
            from workbench.services.runs.study_service import check_design

            return check_design(document)

        self._checking.load(check, self._on_checked,
                            on_failed=lambda e: self._on_checked({"error": e.message}))

    def _on_checked(self, answer: dict) -> None:
        self.check = answer
        self._show_check()

    @property
    def pending(self) -> bool:
        """A check is due or running (tests wait for it to settle)."""
        return self._timer.isActive() or self._checking.loading

    @property
    def valid(self) -> bool:
        return bool(self.check) and "error" not in self.check and not self._form_error

    def _show_check(self) -> None:
        from workbench.ui import theme

        check = self.check or {}
        if self.base is None:
            text, error = "Choose a base configuration: the arms change its settings.", False
        elif self._form_error:
            text, error = self._form_error, True
        elif "error" in check:
            text, error = check["error"], True
        elif check:
            cost = "—" if check.get("cost_usd") is None else f"${check['cost_usd']:.4f}"
            text, error = (f"{check['runs']:,} runs · {check['calls']:,} calls · {check['tokens']:,} tokens · {cost}"
                           " (estimate: each arm's runs dry-run on the simulated panel)"), False
        else:
            text, error = "Checking…", False
        self.message.setStyleSheet(f"color: {theme.css('error')}" if error else "")
        warnings = check.get("warnings") or []
        self.warnings.setPlainText("\n".join(f"⚠ {w}" for w in warnings) or "No warnings.")
        self.side.setTabText(1, f"⚠ Warnings ({len(warnings)})" if warnings else "Warnings")
        if warnings and not error:
            text += f" · ⚠ {len(warnings)} warning{'s' if len(warnings) != 1 else ''} (see Warnings)"
        self.message.setText(text)
        by_arm = {a["name"]: a for a in check.get("arms") or []} if "error" not in check else {}
        self._filling, was = True, self._filling
        try:
            for r, arm in enumerate(self.arms):
                est = by_arm.get(arm.get("name"))
                cells = ("", "", "")
                tip = ""
                if est:
                    cost = est.get("cost_usd")
                    cells = (f"{est['calls']:,}", f"{est['tokens']:,}", "—" if cost is None else f"${cost:.4f}")
                    if est.get("rule_only_of"):
                        tip = (f"Rule-only: re-classifies the {est.get('reused_calls', 0):,} calls of "
                               f"“{est['rule_only_of']}”, no call of its own")
                for c, text in zip((3, 4, 5), cells):
                    item = self.arms_table.item(r, c)
                    if item is not None:
                        item.setText(text)
                        item.setToolTip(tip)
        finally:
            self._filling = was
        self._update_buttons()

    def show_progress(self, done: dict[str, int], planned: int) -> None:
        """Results stored per arm, of ``planned`` each (from the study's summary)."""
        self._filling, was = True, self._filling
        try:
            for r, arm in enumerate(self.arms):
                item = self.arms_table.item(r, 6)
                if item is not None:
                    item.setText(f"{done.get(arm.get('name'), 0):,} / {planned:,}" if planned else "")
        finally:
            self._filling = was

    def set_running(self, running: bool) -> None:
        self.running = running
        self._update_buttons()

    def _update_buttons(self) -> None:
        store = self.model.store
        can_write = store is not None and not store.read_only
        self.run_button.setEnabled(self.valid and can_write and not self.running)
        self.run_button.setToolTip("Run every arm's replicates in this project" if can_write
                                   else "Open (or create) a project to run a study in it")
        self.cancel_button.setEnabled(self.running)
        for w in (self.add_arm_button, self.remove_arm_button, self.load_button, self.arms_table,
                  self.changes_table, self.json_edit, self.add_change_button, self.remove_change_button):
            w.setEnabled(not self.running)
        self.remove_arm_button.setEnabled(not self.running and len(self.arms) > 1)

    def _on_run(self) -> None:
        if self.valid and not self.running:
            self.run_requested.emit(self.document())

    def _say(self, text: str, *, error: bool = False) -> None:
        from workbench.ui import theme

        self.message.setText(text)
        self.message.setStyleSheet(f"color: {theme.css('error')}" if error else "")

    # ----- files -------------------------------------------------------------------------------
    def load_file(self, path: str | Path | None = None) -> None:
        """A study file (its base and dataset read relative to it) into the form."""
        from workbench.core.errors import WorkbenchError
        from workbench.core.studies.spec import read_study_file

        if path is None:
            path, _ = QFileDialog.getOpenFileName(self, "Load a study", "", "Study file (*.json *.yaml *.yml)")
            if not path:
                return
        try:
            data = read_study_file(path)
        except WorkbenchError as exc:
            text = str(exc)
            self._say(text if str(path) in text else f"{Path(path).name}: {text}", error=True)
            return
        arms = data.get("arms")
        if not isinstance(arms, list) or not arms or not all(isinstance(a, dict) for a in arms):
            self._say(f"{Path(path).name}: arms: a list of arm objects is needed", error=True)
            return
        self.extra = {k: v for k, v in data.items() if k not in ("study", "base", "replicates", "arms", "baseline")}
        self.base = data["base"]
        self._show_source(f"The base of {Path(path).name}")
        self.arms = copy.deepcopy(arms)
        self._current = 0
        self.name_edit.setText(str(data.get("study") or ""))
        self.replicates.blockSignals(True)
        replicates = data.get("replicates", 1)
        self.replicates.setValue(replicates if isinstance(replicates, int) else 1)
        self.replicates.blockSignals(False)
        self._fill()
        if data.get("baseline"):
            self.baseline.setCurrentText(str(data["baseline"]))
        self.schedule()

    def save_file(self, path: str | Path | None = None) -> bool:
        """The study as a JSON study file (the base inline), written whole or not at all."""
        from workbench.core.errors import WorkbenchError
        from workbench.core.project.files import check_destination, publish, temporary_beside

        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Save the study", f"{self.name_edit.text() or 'study'}.json",
                                                  "Study file (*.json)")
            if not path:
                return False
        dest = Path(path)
        try:  # the dialog asked before replacing a file; a folder, a pipe is refused
            check_destination(dest, overwrite=True)
            tmp = temporary_beside(dest, "tmp")
            tmp.write_text(json.dumps(self.document(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            publish(tmp, dest, overwrite=True)
        except (OSError, WorkbenchError) as exc:
            self._say(f"Not saved: {exc}", error=True)
            return False
        self._say(f"Saved {path}")
        return True
