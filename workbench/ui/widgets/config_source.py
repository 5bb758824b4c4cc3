"""Where Live Run's configuration comes from and goes to: the project's saved configurations
(``protocol_configs``), the templates (``core.runs.templates``; the files in ``sample_runs/``
until that module exists), the project's own clusters, and JSON or YAML files that ``rwb run``
reads unchanged. Reads and writes run off the GUI thread; file dialogs go through
``workbench.ui.prompts``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMenu

from workbench.core.paths import samples_dir
from workbench.services.reads import Reader

SAMPLES = samples_dir()


@dataclass(frozen=True)
class TemplateChoice:
    key: str
    name: str
    description: str
    protocol: str
    document: dict


def templates() -> list[TemplateChoice]:
    """The run templates: core.runs.templates' (imported lazily), else the sample files."""
    try:
        from workbench.core.runs.templates import TEMPLATES
    except ImportError:
        TEMPLATES = None
    if TEMPLATES:
        return [TemplateChoice(key, t.name, t.description, t.protocol, t.run_config()) for key, t in TEMPLATES.items()]
    out = []
    for path in sorted(SAMPLES.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "protocol" in data and "clusters" in data:
            out.append(TemplateChoice(path.stem, data.get("label") or path.stem, f"sample_runs/{path.name}",
                                      data["protocol"], data))
    return out


class ConfigSource(QObject):
    """The editor's document's origin (a saved configuration's id, or none) and its commands."""

    def __init__(self, panel):
        super().__init__(panel)
        self.panel = panel
        self.config_id: int | None = None  # the saved configuration the editor was loaded from
        self._loaded: dict | None = None  # ... as it was loaded
        self._reader = Reader(panel.model.reads, self, name="read run configuration")

    @property
    def busy(self) -> bool:
        return self._reader.loading

    def unchanged(self, doc: dict) -> bool:
        """The document is the saved configuration as loaded (the project's tau, theta and
        weighting aside: they follow the project's settings, wherever those are edited)."""
        return self.config_id is not None and _own(doc) == _own(self._loaded)

    def opened(self) -> None:
        self.config_id, self._loaded = None, None

    def clear(self) -> None:
        self._reader.cancel()
        self.config_id, self._loaded = None, None
        self.panel.editor.set_origin(False)
        self.panel.editor.set_document({}, validate=False)

    # ----- loading ---------------------------------------------------------------------------
    def _read(self, fn, on_done) -> None:
        reading = self.panel._reading
        if reading is None:
            return
        self._reader.load(lambda _cancel: fn(reading), on_done, cleanup=reading.close_connection,
                          on_failed=lambda e: self._show_problem(f"Could not read the configuration: {e.message}"))

    def load_saved(self, config_id: int) -> None:
        def read(store):
            from workbench.core.project.run_configs import saved_config_document

            return saved_config_document(store, config_id)

        def show(doc: dict) -> None:
            self.config_id, self._loaded = config_id, doc
            self.panel.editor.follows_project = True  # a saved configuration is the project's
            self.panel.editor.set_document(doc)
            self.panel._sync_combo()

        self._read(read, show)

    def _new(self, doc: dict, *, project: bool = False) -> None:
        """``project``: made from the project (its clusters), so it follows the project's tau,
        theta and weighting; a template or a file keeps its own."""
        self.config_id, self._loaded = None, None
        self.panel.editor.follows_project = project
        self.panel.editor.set_document(doc)
        self.panel.tabs.setCurrentWidget(self.panel.editor)

    def new_from_template(self, choice: TemplateChoice) -> None:
        self._new(dict(choice.document))

    def new_from_clusters(self, protocol: str) -> None:
        def read(store):
            from workbench.core.project.run_configs import panel_config

            return panel_config(store, protocol, label=f"New {protocol.upper()} run", query="",
                                seed=random.SystemRandom().randrange(2 ** 31))

        self._read(read, lambda doc: self._new(doc, project=True))

    def fill_new_menu(self, menu: QMenu) -> None:
        menu.clear()
        menu.setToolTipsVisible(True)
        for choice in templates():
            action = menu.addAction(f"From template: {choice.name}")
            action.setToolTip(choice.description)
            action.triggered.connect(lambda _c=False, t=choice: self.new_from_template(t))
        menu.addSeparator()
        from workbench.ui.widgets.run_config_editor import protocol_choices

        for protocol, name in protocol_choices():  # every registered protocol a run may name, plugins too
            action = menu.addAction(f"From the project's clusters: {name}")
            action.triggered.connect(lambda _c=False, p=protocol: self.new_from_clusters(p))

    # ----- saving ----------------------------------------------------------------------------
    def save_in_project(self) -> None:
        """Save the edited configuration in the project under its name (the combo lists it)."""
        editor, model = self.panel.editor, self.panel.model
        if model.store is None or not editor.valid:
            return
        doc = editor.document()
        name = editor.name or f"{doc.get('protocol', 'run').upper()} configuration"
        saved: dict = {}

        def write(store):
            from workbench.core.project.run_configs import save_config

            saved["id"], changes = save_config(store, name, doc)
            return changes

        def done(_changes) -> None:
            if "id" in saved:  # the combo shows it once the change is read
                self.config_id, self._loaded = saved["id"], doc
                editor.set_origin(True)  # saved in the project: the project's tau, theta and weighting apply
                self.panel._sync_combo()

        model.write(f"save configuration {name}", write, done)

    def save_to_file(self) -> Path | None:
        from workbench.ui import prompts

        editor = self.panel.editor
        name = (editor.name or editor.protocol).replace("/", "-").replace(" ", "-").lower() + ".json"
        path = prompts.save_run_config_path(self.panel, self._start_dir(), name)
        if path is None:
            return None
        try:
            path.write_text(editor.json_text(), encoding="utf-8")
        except OSError as exc:
            self._show_problem(f"Could not save {path.name}: {exc.strerror or exc}")
            return None
        return path

    def open_file(self) -> None:
        from workbench.core.errors import InputError
        from workbench.core.runs.config import read_config_file
        from workbench.ui import prompts

        path = prompts.open_run_config_path(self.panel, self._start_dir())
        if path is None:
            return
        try:
            data = read_config_file(path)
        except InputError as exc:
            self._show_problem(str(exc))
            return
        if not isinstance(data, dict):
            self._show_problem(f"{path.name}: a run configuration is a JSON object")
            return
        self._new(data)

    def _show_problem(self, message: str) -> None:
        from workbench.ui.widgets.run_config_editor import Check

        self.panel.editor._show_check(Check(False, message))
        self.panel.tabs.setCurrentWidget(self.panel.editor)

    def _start_dir(self) -> str:
        store = self.panel.model.store
        return str(store.path.parent) if store is not None else ""


def _own(doc: dict | None) -> dict | None:
    """``doc`` without the keys the project's settings set (those its protocol's config takes:
    RCP's tau, theta and weighting; ``panel_edits.project_keys``)."""
    from workbench.core.project.panel_edits import project_keys
    from workbench.ui.widgets.run_config_editor import default_protocol

    if not isinstance(doc, dict):
        return doc
    keys = project_keys(doc.get("protocol") or default_protocol())
    return {k: v for k, v in doc.items() if k not in keys}
