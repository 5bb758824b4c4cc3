"""The Providers tab of Clusters & Agents: the project's providers, added, edited, removed, tested.

Each row names where the provider's key lives (an environment variable or a keyring entry), never
the key, and what the preflight would say about it (checked without the network). Add and Edit
open the provider dialog (through :func:`workbench.ui.prompts.edit_provider`); a key typed there
is stored in the OS keyring, on a worker, before the provider is saved. Removing a provider that
agents use asks first (:func:`workbench.ui.prompts.confirm`); every change is undoable.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from workbench.core.project.changes import Changes
from workbench.ui import prompts
from workbench.ui.widgets.field_check import FieldMessage, css, worst
from workbench.ui.widgets.record_table import RecordTable

if TYPE_CHECKING:
    from workbench.ui.panels.clusters_panel import ClustersPanel

COLUMNS = (("name", "Provider"), ("model", "Model"), ("api_base", "API base"), ("key", "Key"),
           ("used", "Agents"), ("check", "Check"))


class ProvidersView(QWidget):
    def __init__(self, panel: ClustersPanel):
        super().__init__(panel)
        self.panel = panel
        self.rows: dict[str, dict] = {}
        self.users: dict[str, list[str]] = {}
        self._issues: dict[str, list] = {}
        self.testing = False
        self.table = RecordTable(COLUMNS, "Filter providers…", self)
        self.table.model.decorate = self._decorate
        self.add_button = QPushButton("Add…", self)
        self.add_button.setObjectName("addProvider")
        self.add_button.setToolTip("Add a cloud model or a local server (Ollama, vLLM, llama.cpp, LM Studio)")
        self.edit_button = QPushButton("Edit…", self)
        self.edit_button.setObjectName("editProvider")
        self.remove_button = QPushButton("Remove", self)
        self.remove_button.setObjectName("removeProvider")
        self.test_button = QPushButton("Test", self)
        self.test_button.setObjectName("testProvider")
        self.test_button.setToolTip("Send the selected provider one short request and show the answer or the error")
        self.result = FieldMessage(self)
        self.result.setObjectName("providerTestResult")
        self.add_button.clicked.connect(self._on_add)
        self.edit_button.clicked.connect(self._on_edit)
        self.remove_button.clicked.connect(self._on_remove)
        self.test_button.clicked.connect(self._on_test)
        self.table.view.doubleClicked.connect(lambda _index: self._on_edit())
        self.table.view.selectionModel().selectionChanged.connect(lambda *_a: self._update_buttons())
        note = QLabel("Keys live in the OS keyring or in environment variables; the project records where, "
                      "never a key.", self)
        note.setWordWrap(True)
        note.setStyleSheet("color: palette(placeholder-text);")
        buttons = QHBoxLayout()
        for button in (self.add_button, self.edit_button, self.remove_button, self.test_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.result)
        layout.addWidget(note)
        self._writable = False
        self._update_buttons()

    # ----- showing ---------------------------------------------------------------------------
    def show_providers(self, providers: dict[str, dict], agents: list[dict]) -> None:
        self.rows = dict(providers)
        self.users = {}
        for a in agents:
            if a["provider"]:
                self.users.setdefault(a["provider"], []).append(a["id"])
        self._refill()

    def show_issues(self, issues: list, key_issues: dict[str, str]) -> None:
        found: dict[str, list] = {}
        for issue in issues:
            found.setdefault(issue.key, []).append((issue.level, issue.message))
        for name, message in key_issues.items():
            found.setdefault(name, []).append(("warning", message))
        if found != self._issues:
            self._issues = found
            self._refill()

    def _refill(self) -> None:
        rows = []
        for name, p in sorted(self.rows.items()):
            key = f"env {p['key_env']}" if p.get("key_env") else f"keyring {p['key_keyring']}" \
                if p.get("key_keyring") else ("—" if p.get("model") != "sim" else "")
            issues = self._issues.get(name, [])
            level = worst([lvl for lvl, _m in issues])
            check = "✔" if level is None else ("✖ " if level == "error" else "▲ ") + \
                "; ".join(m for lvl, m in issues if lvl == level)
            rows.append({"name": name, "model": p.get("model"), "api_base": p.get("api_base") or "", "key": key,
                         "used": len(self.users.get(name, [])), "check": check, "_level": level})
        self.table.set_rows(rows)
        self._update_buttons()

    def _decorate(self, row: dict, key: str, role: int) -> object:
        if row.get("_level") is None:
            return None
        if role == Qt.ItemDataRole.ForegroundRole and key in ("name", "check"):
            return QColor(css(row["_level"]))
        if role == Qt.ItemDataRole.ToolTipRole:
            return row["check"]
        return None

    def selected(self) -> dict | None:
        rows = self.table.view.selectionModel().selectedRows()
        if not rows:
            return None
        name = self.table.model.row(self.table.proxy.mapToSource(rows[0]).row())["name"]
        return self.rows.get(name)

    def select(self, name: str) -> bool:
        for row in range(self.table.proxy.rowCount()):
            source = self.table.proxy.mapToSource(self.table.proxy.index(row, 0)).row()
            if self.table.model.row(source)["name"] == name:
                self.table.view.selectRow(row)
                return True
        return False

    def set_writable(self, writable: bool) -> None:
        self._writable = writable
        self._update_buttons()

    def _update_buttons(self) -> None:
        chosen = self.selected() is not None
        self.add_button.setEnabled(self._writable)
        self.edit_button.setEnabled(self._writable and chosen)
        self.remove_button.setEnabled(self._writable and chosen)
        self.test_button.setEnabled(chosen and not self.testing)

    # ----- commands --------------------------------------------------------------------------
    def _on_add(self) -> None:
        self._save(prompts.edit_provider(self, self.panel.model.workers, None, set(self.rows)), None)

    def _on_edit(self) -> None:
        provider = self.selected()
        if provider is not None and self._writable:
            self._save(prompts.edit_provider(self, self.panel.model.workers, provider, set(self.rows)), provider)

    def _save(self, result, old: dict | None) -> None:
        """Store the typed key (if any) in the keyring first, on a worker; then save the provider."""
        if result is None:
            return
        record, key = result.record, result.key
        edits = self.panel.edits
        if not key:
            edits.save_provider(record, old)
            return
        entry = record["key_keyring"]

        def store_key(_store) -> Changes:
            from workbench.services.llm.keystore import store_key as keep

            keep(entry, key)
            return Changes()

        def stored(_changes: Changes) -> None:
            self.result.show_message("ok", f"The key is in the OS keyring (entry “{entry}”).")
            edits.save_provider(record, old)

        self.panel.queue.run(f"store the key of {record['name']}", store_key, stored)

    def _on_remove(self) -> None:
        provider = self.selected()
        if provider is None:
            return
        name = provider["name"]
        users = self.users.get(name, [])
        if users:
            shown = ", ".join(users[:8]) + (f" and {len(users) - 8} more" if len(users) > 8 else "")
            if not prompts.confirm(self, "Remove provider",
                                   f"{len(users)} agent(s) use the provider “{name}”: {shown}. They will have no "
                                   "provider until you choose one. Remove it?", "Remove"):
                return
        self.panel.edits.delete_provider(name)

    def _on_test(self) -> None:
        provider = self.selected()
        if provider is None or self.testing:
            return
        record = {k: v for k, v in provider.items() if k != "options_json"}
        from workbench.services.llm.probe import missing_credentials

        problem = missing_credentials(record, keyring=False)  # no key: said at once, nothing imported or sent
        if problem is not None:
            self.result.show_message("error", f"{record['name']}: {problem}")
            return
        self.testing = True
        self._update_buttons()
        self.result.show_message("warning", f"Testing {provider['name']}…")

        def job(cancel: threading.Event):
            from workbench.services.llm.probe import probe_provider

            return probe_provider(record, cancel=cancel)

        def done(result) -> None:
            self.testing = False
            self._update_buttons()
            self.result.show_message("ok" if result.ok else "error", f"{record['name']}: {result.message}")

        def failed(error) -> None:
            self.testing = False
            self._update_buttons()
            self.result.show_message("error", f"{record['name']}: {error.message}")

        self.panel.model.workers.start(f"test provider {record['name']}", job, done, failed)
