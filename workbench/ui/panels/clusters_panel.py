"""Clusters & Agents: build the panel a project runs with, and see at once what a run would refuse.

The Panel tab lists the clusters and the agents; selecting one shows its form below (a cluster's
name, theta, weight, reference mark; an agent's id, cluster, provider and model, role, persona or
system prompt, and its simulated-panel parameters in a :class:`PersonaEditor`). The project's
default tau sits above the lists. The Providers tab lists the providers, with a dialog to add or
edit one (a cloud model or a local server) and a connection test.

Every edit is a QUndoCommand pushed on ``self.history`` (the window gives each panel a
QUndoStack; without one an edit is applied directly), whose redo and undo are writes through
``ProjectModel.write`` (:mod:`workbench.ui.clusters_edits`, over
:mod:`workbench.core.project.panel_edits`). The panel reads off the GUI thread (``load``) and
checks the panel as an RCP run configuration would be checked, as the user types
(:func:`~workbench.core.project.panel_check.check_panel`): errors and warnings show next to
their fields. Provider keys are checked as the preflight checks them, on a worker, without any
network. Templates (:mod:`workbench.core.runs.templates`) and "Import panel from a run" replace
the whole panel, after a confirmation, undoably.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QAction, QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.services.project_model import ProjectModel
from workbench.ui.clusters_edits import ClustersEdits
from workbench.ui.panels.base import Panel
from workbench.ui.panels.clusters_actions import ClustersActions
from workbench.ui.panels.dock_room import RoomWatch, room
from workbench.ui.undo import EditQueue
from workbench.ui.widgets.agent_editor import AgentEditor
from workbench.ui.widgets.cluster_editor import ClusterEditor, parse_number
from workbench.ui.widgets.field_check import FieldMessage, css, mark, worst
from workbench.ui.widgets.persona_editor import PersonaEditor
from workbench.ui.widgets.record_table import RecordTable

WIDE_PX = 1000  # from this width the editor sits beside the lists
CLUSTER_COLUMNS = (("name", "Cluster"), ("reference", "Reference"), ("theta", "θ"),
                   ("weight", "Weight"), ("agents", "Agents"), ("description", "Description"))
HINT = "Select a cluster or an agent to edit it."
# What an empty project shows first, instead of the checks' "clusters: must not be empty".
START_HERE = ("<b>Start here.</b> A panel is the clusters of agents that vote in a run. "
              "<a href='template'>Pick a template</a> (ready-made, on the simulated panel: no provider, no key), "
              "or <a href='provider'>add a provider</a> (a cloud model or a local server), then "
              "<a href='cluster'>add a cluster</a> and its agents. Then start a run from Live Run.")
# The persona third, where a narrow dock still shows it: it takes the width the others leave.
AGENT_COLUMNS = (("id", "Agent"), ("cluster", "Cluster"), ("persona", "Persona"), ("role", "Role"),
                 ("provider", "Provider"), ("model", "Model"))
PERSONA_COLUMN = [k for k, _ in AGENT_COLUMNS].index("persona")
PERSONA_MIN_WIDTH = 140  # below this the persona elides into its tooltip and the table scrolls sideways


@dataclass(frozen=True)
class PanelView:
    clusters: list[dict]
    agents: list[dict]
    providers: dict[str, dict]
    tau: object
    weighted: object
    theta: object = None  # the project's θ: every cluster that sets none uses it


class ClustersPanel(ClustersActions, Panel):
    TITLE = "Clusters & Agents"
    OBJECT_NAME = "clustersPanel"
    SUMMARY = "The adversarial clusters and the agents in each: who votes, through which provider."
    TABLES = ("clusters", "agents", "providers", "settings")

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.queue = EditQueue(model, self)
        self.queue.failed.connect(self._on_edit_failed)
        self.queue.idle_changed.connect(self._on_queue_idle_changed)
        self.edits = ClustersEdits(self.queue, lambda: getattr(self, "history", None))
        self.view: PanelView | None = None
        self.issues: list = []
        self.key_issues: dict[str, str] = {}  # provider -> what the preflight would say about its key
        self._keys_checked: dict[str, dict] = {}
        self._key_jobs = 0
        self._current: tuple[str, object] | None = None  # ("cluster", id) or ("agent", id)
        self._want: tuple[str, object] | None = None  # select this once a view holds it
        self._agent_rows: list[dict] = []
        self._providers: dict[str, dict] = {}

        self.clusters = RecordTable(CLUSTER_COLUMNS, "Filter clusters…", self)
        self.agents = RecordTable(AGENT_COLUMNS, "Filter agents…", self)
        self.clusters.model.decorate = lambda row, key, role: self._decorate("cluster", row["id"], role)
        self.agents.model.decorate = lambda row, key, role: self._decorate("agent", row["id"], role, key, row)
        self.agents.view.viewport().installEventFilter(self)  # the persona column fits the width
        self.persona = PersonaEditor(model, self)
        self.persona.commit = self._commit_params
        self.cluster_editor = ClusterEditor(self)
        self.agent_editor = AgentEditor(self.persona, self)
        self.clusters.view.selectionModel().selectionChanged.connect(self._on_cluster_selected)
        self.agents.view.selectionModel().selectionChanged.connect(self._on_agent_selected)
        self.cluster_editor.edited.connect(self._recheck)
        self.cluster_editor.committed.connect(self._on_cluster_committed)
        self.cluster_editor.reference_toggled.connect(self._on_reference_toggled)
        self.agent_editor.edited.connect(self._recheck)
        self.agent_editor.committed.connect(self._on_agent_committed)

        self.tabs = _Tabs(self)
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self._build_panel_tab(), "Panel")
        from workbench.ui.widgets.provider_health import ProviderHealth
        from workbench.ui.widgets.providers_view import ProvidersView

        self.providers_view = ProvidersView(self)
        # Provider health (issue 19) below the list: it reads calls and votes on its own Reader,
        # so this panel's TABLES stay the configuration's.
        self.provider_health = ProviderHealth(model, self)
        providers_page = QSplitter(Qt.Orientation.Vertical, self)
        providers_page.setObjectName("providersSplit")
        providers_page.setChildrenCollapsible(False)
        providers_page.addWidget(self.providers_view)
        providers_page.addWidget(self.provider_health)
        providers_page.setStretchFactor(0, 1)
        providers_page.setStretchFactor(1, 1)
        self.tabs.addTab(providers_page, "Providers")
        self._layout.addWidget(self.tabs, 1)
        self._content = self.tabs
        self.tabs.hide()
        self._update_buttons()

    # ----- layout ----------------------------------------------------------------------------
    def _tool(self, text: str, tip: str, slot, name: str) -> QAction:
        action = self.toolbar.addAction(text)
        action.setToolTip(tip)
        action.setObjectName(name)
        action.triggered.connect(lambda _checked=False: slot())
        return action

    def tool_button(self, action: QAction) -> QToolButton:
        """The button that shows ``action`` in the tool bar (tests click it)."""
        return self.toolbar.widgetForAction(action)  # type: ignore[return-value]

    def _build_panel_tab(self) -> QWidget:
        page = QWidget(self)
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        # A tool bar: in a narrow dock the buttons that do not fit go behind its » button.
        self.toolbar = QToolBar("Clusters and agents", page)
        self.toolbar.setObjectName("clustersToolBar")
        self.toolbar.setIconSize(QSize(1, 1))
        self.toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.add_cluster_button = self._tool("+ Cluster", "Add a cluster", self._on_add_cluster, "addCluster")
        self.add_agent_button = self._tool("+ Agent", "Add an agent to the selected cluster", self._on_add_agent,
                                           "addAgent")
        self.remove_button = self._tool("Remove", "Remove the selected agent, or delete the selected cluster and "
                                                  "its agents (undoable)", self._on_remove, "removeItem")
        self.up_button = self._tool("▲", "Move the selected cluster or agent up", lambda: self._on_move(-1), "moveUp")
        self.down_button = self._tool("▼", "Move the selected cluster or agent down", lambda: self._on_move(1),
                                      "moveDown")
        self.duplicate_button = self._tool("Duplicate", "Duplicate the selected agent", self._on_duplicate,
                                           "duplicateAgent")
        self.templates_button = QToolButton(page)
        self.templates_button.setText("Templates")
        self.templates_button.setObjectName("templates")
        self.templates_button.setToolTip("Replace the panel by a ready-made one, or by the panel of a run")
        self.templates_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.templates_menu = QMenu(self.templates_button)
        self.templates_menu.aboutToShow.connect(self._fill_templates_menu)
        self.templates_button.setMenu(self.templates_menu)
        layout.addWidget(self.toolbar)

        settings = QHBoxLayout()
        settings.setSpacing(6)
        # τ, θ and weighting live here, in one place: every RCP run made in the project takes them
        # (Live Run's configuration shows them read-only; docs/runs.md).
        tau_label = QLabel("Project τ", page)
        tau_label.setToolTip("The resonance ratio a consensus tier needs, in (0.5, 1]: the project's, which every "
                             "RCP run made in the project takes (one value per run, SPEC §1).")
        self.tau = QLineEdit(page)
        self.tau.setObjectName("projectTau")
        self.tau.setToolTip(tau_label.toolTip())
        self.tau.setFixedWidth(self.tau.fontMetrics().horizontalAdvance("0.0000") + 16)
        theta_label = QLabel("θ", page)
        theta_label.setToolTip("The share of a cluster's votes an artifact needs for the cluster to approve it, in "
                               "(0, 1]: the project's, for every cluster that sets no θ of its own.")
        self.theta = QLineEdit(page)
        self.theta.setObjectName("projectTheta")
        self.theta.setToolTip(theta_label.toolTip())
        self.theta.setFixedWidth(self.tau.fontMetrics().horizontalAdvance("0.0000") + 16)
        self.weighted = QCheckBox("Weighted", page)
        self.weighted.setObjectName("projectWeighted")
        self.weighted.setToolTip("RCP runs use the clusters' weights: rho = sum of the approving clusters' weights "
                                 "over the sum of all weights.")
        self.status = QLabel(page)
        self.status.setObjectName("panelStatus")
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        settings.addWidget(tau_label)
        settings.addWidget(self.tau)
        settings.addWidget(theta_label)
        settings.addWidget(self.theta)
        settings.addWidget(self.weighted)
        settings.addStretch(1)
        settings.addWidget(self.templates_button)
        layout.addLayout(settings)
        self.tau_message = FieldMessage(page)
        self.tau_message.setObjectName("tauMessage")
        layout.addWidget(self.tau_message)
        self.panel_message = FieldMessage(page)
        layout.addWidget(self.panel_message)
        # An empty project: where to start, at the top where a short dock still shows it.
        self.start_here = QLabel(START_HERE, page)
        self.start_here.setObjectName("clustersStartHere")
        self.start_here.setTextFormat(Qt.TextFormat.RichText)
        self.start_here.setWordWrap(True)
        self.start_here.linkActivated.connect(self._on_start_link)
        self.start_here.hide()
        layout.addWidget(self.start_here)
        self._tau_dirty = self._theta_dirty = False
        self.tau.textEdited.connect(self._on_tau_edited)
        self.tau.editingFinished.connect(self._on_tau_committed)
        self.theta.textEdited.connect(self._on_theta_edited)
        self.theta.editingFinished.connect(self._on_theta_committed)
        self.weighted.clicked.connect(self._on_weighted_clicked)

        self.hint = QLabel(HINT, page)
        self.hint.setObjectName("clustersHint")
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("color: palette(placeholder-text);")
        cluster_scroll = QScrollArea(page)
        cluster_scroll.setWidgetResizable(True)
        cluster_scroll.setFrameShape(QFrame.Shape.NoFrame)
        cluster_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        cluster_scroll.setWidget(self.cluster_editor)
        self.editor = QStackedWidget(page)
        self.editor.addWidget(self.hint)
        self.editor.addWidget(cluster_scroll)
        self.editor.addWidget(self.agent_editor)

        # The lists (clusters over agents) and the editor: beside each other in a wide dock (the
        # Design workspace), one above the other in a narrow one (RoomWatch decides).
        self.lists = QSplitter(Qt.Orientation.Vertical, page)
        self.lists.setObjectName("clusterLists")
        self.lists.setChildrenCollapsible(False)
        self.lists.addWidget(self.clusters)
        self.lists.addWidget(self.agents)
        self.lists.setStretchFactor(0, 1)  # the clusters (often two) room for theirs,
        self.lists.setStretchFactor(1, 2)  # the agents (often six or more) for their rows
        self.split = QSplitter(Qt.Orientation.Vertical, page)
        self.split.setObjectName("clustersSplit")
        self.split.setChildrenCollapsible(False)
        self.split.addWidget(self.lists)
        self.split.addWidget(self.editor)
        self.split.setStretchFactor(0, 6)
        self.split.setStretchFactor(1, 5)
        self._room_watch = RoomWatch(self, self._fit_room)
        layout.addWidget(self.split, 1)
        self.message = FieldMessage(page)
        self.message.setObjectName("clustersMessage")
        bottom = QHBoxLayout()
        bottom.addWidget(self.message, 1)
        bottom.addWidget(self.status, 0, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignRight)
        layout.addLayout(bottom)
        return page

    def _fit_room(self) -> None:
        """The editor beside the lists when the dock is wide enough for both, else under them."""
        from workbench.ui import theme

        size = room(self)
        wide = size.width() >= WIDE_PX * theme.type_scale()  # larger type needs more room for the same
        orientation = Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical
        if self.split.orientation() != orientation:
            self.split.setOrientation(orientation)
            total = max(size.width() if wide else size.height(), 1)  # (in proportion: the splitter scales them)
            self.split.setSizes([total * 11 // 20, total - total * 11 // 20])

    # ----- the read cycle --------------------------------------------------------------------
    def load(self, store, changes, cancel):
        from workbench.core.project.panel import panel_rows
        from workbench.core.project.panel_edits import panel_settings
        from workbench.core.runs import config  # noqa: F401 - the check's models, imported off the GUI thread

        rows = panel_rows(store)
        settings = panel_settings(store)
        return PanelView(rows.clusters, rows.agents, rows.providers, settings["tau"], settings["weighted"],
                         settings["theta"])

    def apply(self, view) -> None:
        self.view = view
        self._providers = view.providers
        names = {c["id"]: c["name"] for c in view.clusters}
        per_cluster: dict[object, int] = {}
        for a in view.agents:
            per_cluster[a["cluster_id"]] = per_cluster.get(a["cluster_id"], 0) + 1
        self.clusters.set_rows([
            {**c, "reference": "★ reference" if c["is_reference"] else "",
             "theta": f"{_fmt(view.theta)} (project)" if c["theta"] is None else c["theta"],
             "agents": per_cluster.get(c["id"], 0)}
            for c in view.clusters
        ])
        rows = [{**a, "cluster": names.get(a["cluster_id"], "—"), "persona": _first_line(a["persona"]),
                 "persona_text": a["persona"],
                 "model": (view.providers.get(a["provider"]) or {}).get("model", "")}
                for a in view.agents]
        if rows != self._agent_rows:  # an unchanged table keeps its selection and scroll position
            self._agent_rows = rows
            self.agents.set_rows(rows)
            self._fit_agent_columns()
        self.agent_editor.set_choices(view.clusters, view.providers)
        self.providers_view.show_providers(view.providers, view.agents)
        if not self._tau_dirty:
            self.tau.setText(_fmt(view.tau))
        if not self._theta_dirty:
            self.theta.setText(_fmt(view.theta))
        self.cluster_editor.set_project_theta(view.theta)
        self.weighted.setChecked(view.weighted is True)
        self._content.show()
        self._restore_selection()
        self._reload_persona()
        self._recheck()
        self._check_keys(view.providers)
        self._update_buttons()

    def clear(self) -> None:
        self.queue.clear()  # edits made for the project just closed are not written to the next
        self.key_issues, self._keys_checked = {}, {}
        self._tau_dirty = self._theta_dirty = False
        self._content.hide()
        self.view = None
        self._agent_rows = []
        self._current = None
        self.clusters.set_rows([])
        self.agents.set_rows([])
        self.persona.load(None)
        self.cluster_editor.load(None)
        self.agent_editor.load(None)
        self.providers_view.show_providers({}, [])
        self.editor.setCurrentIndex(0)
        self.start_here.hide()
        self.issues = []  # nothing of the last project's checks stays on screen
        for message in (self.tau_message, self.panel_message, self.message):
            message.show_message(None)
        self.status.setText("")
        self.status.setToolTip("")

    def _fit_agent_columns(self) -> None:
        """The persona takes the width the other columns (at their contents' width) leave."""
        view = self.agents.view
        others = sum(view.columnWidth(c) for c in range(len(AGENT_COLUMNS)) if c != PERSONA_COLUMN)
        view.setColumnWidth(PERSONA_COLUMN, max(PERSONA_MIN_WIDTH, view.viewport().width() - others))

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.Resize and watched is self.agents.view.viewport():
            self._fit_agent_columns()
        return super().eventFilter(watched, event)

    @property
    def busy(self) -> bool:
        """Edits waiting or being written, or provider keys being checked."""
        return not self.queue.idle or self._key_jobs > 0

    # ----- selection -------------------------------------------------------------------------
    def _row_of(self, table: RecordTable, key: object) -> int | None:
        for row in range(table.proxy.rowCount()):
            source = table.proxy.mapToSource(table.proxy.index(row, 0)).row()
            if table.model.row(source)["id"] == key:
                return row
        return None

    def select_agent(self, agent_id: str) -> bool:
        row = self._row_of(self.agents, agent_id)
        if row is None:
            return False
        self.agents.view.selectRow(row)
        self.agents.view.scrollTo(self.agents.proxy.index(row, 0))
        self._show_agent(self.agents.model.row(self.agents.proxy.mapToSource(self.agents.proxy.index(row, 0)).row()))
        return True

    def select_cluster(self, cluster_id: object) -> bool:
        row = self._row_of(self.clusters, cluster_id)
        if row is None:
            return False
        self.clusters.view.selectRow(row)
        self.clusters.view.scrollTo(self.clusters.proxy.index(row, 0))
        return True

    def selected_agent(self) -> dict | None:
        rows = self.agents.view.selectionModel().selectedRows()
        return self.agents.model.row(self.agents.proxy.mapToSource(rows[0]).row()) if rows else None

    def selected_cluster(self) -> dict | None:
        rows = self.clusters.view.selectionModel().selectedRows()
        return self.clusters.model.row(self.clusters.proxy.mapToSource(rows[0]).row()) if rows else None

    def _on_cluster_selected(self, *_args) -> None:
        cluster = self.selected_cluster()
        if cluster is None:
            return
        self.agents.view.selectionModel().clearSelection()
        if self._current != ("cluster", cluster["id"]):
            self.agent_editor.flush()
            self._current = ("cluster", cluster["id"])
            self.cluster_editor.load(self._stored_cluster(cluster["id"]), cluster["agents"])
            self.editor.setCurrentIndex(1)
            self._recheck()
        self._update_buttons()

    def _on_agent_selected(self, *_args) -> None:
        agent = self.selected_agent()  # None while the table resets: the editor keeps its agent
        if agent is not None:
            self._show_agent(agent)

    def _show_agent(self, agent: dict) -> None:
        self.clusters.view.selectionModel().clearSelection()
        if self._current != ("agent", agent["id"]):
            self.agent_editor.flush()  # a persona still being typed goes to its own agent first
            self._current = ("agent", agent["id"])
            self.agent_editor.load(self._stored_agent(agent["id"]))
            self.editor.setCurrentIndex(2)
            self._recheck()
        if agent["id"] != self.persona.agent_id:
            self.persona.load(self._stored_agent(agent["id"]), self._providers.get(agent["provider"]))
        self._update_buttons()

    def _restore_selection(self) -> None:
        """After a refresh: select what was asked for, keep what was selected, or show nothing."""
        want, self._want = self._want, None
        target = want or self._current
        found = False
        if target is not None:
            kind, key = target
            found = (self.select_cluster(key) if kind == "cluster" else self.select_agent(key))
        if not found:
            if want is not None:
                self._want = want  # not in this view yet
            if self._current is not None and (want is None or not found):
                still = self._stored_cluster(self._current[1]) if self._current[0] == "cluster" \
                    else self._stored_agent(self._current[1])
                if still is None:
                    self._current = None
                    self.editor.setCurrentIndex(0)
            return
        kind, key = target
        if kind == "cluster":
            self.cluster_editor.load(self._stored_cluster(key), self._count(key), keep_typing=True)
            if want is not None:
                self.cluster_editor.name.setFocus()
                self.cluster_editor.name.selectAll()
        else:
            self.agent_editor.load(self._stored_agent(key), keep_typing=True)

    def _stored_cluster(self, cluster_id: object) -> dict | None:
        return next((c for c in (self.view.clusters if self.view else []) if c["id"] == cluster_id), None)

    def _stored_agent(self, agent_id: object) -> dict | None:
        return next((a for a in (self.view.agents if self.view else []) if a["id"] == agent_id), None)

    def _count(self, cluster_id: object) -> int:
        return sum(1 for a in (self.view.agents if self.view else []) if a["cluster_id"] == cluster_id)

    def _reload_persona(self) -> None:
        """Show what is stored now for the agent being tuned, unless the form has unsaved edits."""
        agent = self._stored_agent(self.persona.agent_id)
        if agent is None:
            if self.persona.agent_id is not None:
                self.persona.load(None)  # the agent was deleted
        elif not self.persona.dirty and ((agent["params_json"] or {}) != self.persona.loaded
                                         or agent["provider"] != (self.persona.agent or {}).get("provider")):
            self.persona.load(agent, self._providers.get(agent["provider"]))

    # ----- checking as the user types --------------------------------------------------------
    def _typed_rows(self) -> tuple[list[dict], list[dict], object]:
        view = self.view
        clusters = [dict(c) for c in view.clusters]
        agents = [dict(a) for a in view.agents]
        if self._current and self._current[0] == "cluster":
            for c in clusters:
                if c["id"] == self._current[1]:
                    c.update(self.cluster_editor.typed())
        elif self._current:
            typed = self.agent_editor.typed()
            for a in agents:
                if a["id"] == self._current[1]:
                    a["key"] = a["id"]
                    a.update({("cluster_id" if k == "cluster" else k): v for k, v in typed.items()})
        tau = view.tau
        if self._tau_dirty:
            ok, value = parse_number(self.tau.text())
            tau = value if ok else tau
        return clusters, agents, tau

    def _typed_theta(self) -> object:
        if self._theta_dirty:
            ok, value = parse_number(self.theta.text())
            if ok:
                return value
        return self.view.theta if self.view is not None else None

    @property
    def empty(self) -> bool:
        """The project has no cluster and no agent yet: it opens on where to start, not an error."""
        return self.view is not None and not self.view.clusters and not self.view.agents

    def _show_start_here(self) -> None:
        empty = self.empty
        self.start_here.setVisible(empty)
        if empty:
            self.editor.setCurrentIndex(0)

    def _on_start_link(self, link: str) -> None:
        """The start-here text's links: a template, a provider, or a first cluster."""
        if link == "template":
            self.templates_button.showMenu()
        elif link == "provider":
            self.tabs.setCurrentIndex(1)
            self.providers_view._on_add()
        elif link == "cluster":
            self._on_add_cluster()

    def _recheck(self, *_args) -> None:
        if self.view is None:
            return
        from workbench.core.project.panel_check import check_panel

        self._show_start_here()
        if self.empty:  # nothing to check yet: the start-here text says what to do first
            self.issues = []
            self._show_issues()
            return
        clusters, agents, tau = self._typed_rows()
        self.issues = check_panel(clusters, agents, list(self.view.providers.values()), tau=tau,
                                  weighted=self.weighted.isChecked(), theta=self._typed_theta())
        self._show_issues()

    def _issues_of(self, kind: str, key: object = None) -> list:
        return [i for i in self.issues if i.kind == kind and (key is None or i.key == key)]

    def _show_issues(self) -> None:
        if self._current and self._current[0] == "cluster":
            self.cluster_editor.show_issues(self._issues_of("cluster", self._current[1]))
        elif self._current:
            agent = self._stored_agent(self._current[1]) or {}
            found = self._issues_of("agent", self._current[1])
            provider = self.agent_editor.value("provider") if agent else None
            if provider in self.key_issues and not any(i.field == "provider" for i in found):
                found.append(_KeyIssue(f"provider {provider!r}: {self.key_issues[provider]}"))
            self.agent_editor.show_issues(found)
        tau_issues = self._issues_of("tau") + self._issues_of("weighted")
        if self._tau_dirty and not parse_number(self.tau.text())[0]:
            tau_issues = [_LocalIssue("τ: not a number")]
        theta_issues = self._issues_of("theta")
        if self._theta_dirty and not parse_number(self.theta.text())[0]:
            theta_issues = [_LocalIssue("θ: not a number")]
        level = worst([i.level for i in tau_issues + theta_issues])
        self.tau_message.show_message(level, " ".join(i.message for i in tau_issues + theta_issues
                                                      if i.level == level))
        mark(self.tau, worst([i.level for i in tau_issues]))
        mark(self.theta, worst([i.level for i in theta_issues]))
        panel = self._issues_of("panel")
        level = worst([i.level for i in panel])
        self.panel_message.show_message(level, " ".join(i.message for i in panel if i.level == level))
        self.providers_view.show_issues(self._issues_of("provider"), self.key_issues)
        errors = sum(i.level == "error" for i in self.issues)
        warnings = sum(i.level == "warning" for i in self.issues) + len(self.key_issues)
        if errors or warnings:
            parts = ([f"✖ {errors} error{'s' if errors != 1 else ''}"] if errors else []) + \
                    ([f"▲ {warnings} warning{'s' if warnings != 1 else ''}"] if warnings else [])
            self.status.setText(" · ".join(parts))
            self.status.setStyleSheet(f"color: {css('error' if errors else 'warning')};")
            self.status.setToolTip("\n".join(i.message for i in self.issues))
        elif self.empty:
            self.status.setText("")
            self.status.setToolTip("")
        else:
            self.status.setText("✔ valid RCP panel")
            self.status.setStyleSheet(f"color: {css('ok')};")
            self.status.setToolTip("The panel passes the checks of an RCP run configuration.")
        for table in (self.clusters, self.agents):
            table.view.viewport().update()

    def _decorate(self, kind: str, key: object, role: int, column: str = "", row: dict | None = None) -> object:
        if role not in (Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.ToolTipRole):
            return None
        found = self._issues_of(kind, key)
        level = worst([i.level for i in found])
        if level is None:
            if column == "persona" and role == Qt.ItemDataRole.ToolTipRole and row is not None:
                return (row.get("persona_text") or "").strip() or None  # the cell shows what fits
            return None
        if role == Qt.ItemDataRole.ToolTipRole:
            return "\n".join(("✖ " if i.level == "error" else "▲ ") + i.message for i in found)
        return QColor(css(level))

    def _check_keys(self, providers: dict[str, dict]) -> None:
        """What the preflight would say about each provider's key (no network), on a worker."""
        todo = {name: dict(p) for name, p in providers.items()
                if p.get("model") not in ("sim", "manual") and self._keys_checked.get(name) != p}
        for name in list(self.key_issues):
            if name not in providers:
                self.key_issues.pop(name)
        if not todo:
            return
        self._keys_checked.update(todo)

        def job(_cancel: threading.Event) -> dict[str, str | None]:
            from workbench.services.llm.probe import key_problem

            return {name: key_problem({k: v for k, v in p.items() if k != "options_json"}) for name, p in todo.items()}

        def done(found: object) -> None:
            self._key_jobs -= 1
            for name, problem in dict(found).items():  # type: ignore[call-overload]
                if problem:
                    self.key_issues[name] = problem
                else:
                    self.key_issues.pop(name, None)
            self._show_issues()

        def failed(_error) -> None:
            self._key_jobs -= 1

        self._key_jobs += 1
        self.model.workers.start("check provider keys", job, done, failed)

    # ----- edits -----------------------------------------------------------------------------
    def _writable(self) -> bool:
        store = self.model.store
        return store is not None and not store.read_only and self.view is not None

    def _update_buttons(self) -> None:
        writable = self._writable()
        kind = self._current[0] if self._current else None
        self.add_cluster_button.setEnabled(writable)
        self.add_agent_button.setEnabled(writable and bool(self.view and self.view.clusters))
        self.duplicate_button.setEnabled(writable and kind == "agent")
        for button in (self.remove_button, self.up_button, self.down_button):
            button.setEnabled(writable and kind is not None)
        self.templates_button.setEnabled(writable)
        self.providers_view.set_writable(writable)
        for form in (self.cluster_editor, self.agent_editor.fields_area, self.tau, self.theta, self.weighted):
            form.setEnabled(writable)

class _Tabs(QTabWidget):
    """Tabs that ask for no height of their own: the window's scroll area sizes a panel by its
    height for its width, which wrapped messages would otherwise make the whole form's height."""

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt API)
        return False


class _KeyIssue:
    level, field = "warning", "provider"

    def __init__(self, message: str):
        self.message = message


class _LocalIssue:
    level, field = "error", "tau"

    def __init__(self, message: str):
        self.message = message


def _fmt(value: object) -> str:
    return f"{value:.6g}" if isinstance(value, float) else ("" if value is None else str(value))


def _first_line(text: str, limit: int = 90) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
