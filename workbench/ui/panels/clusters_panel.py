"""Clusters & Agents: the adversarial clusters of the panel and the agents in each.

Selecting an agent shows its simulated persona in a :class:`PersonaEditor` below the tables.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QWidget

from workbench.services.project_model import ProjectModel
from workbench.ui.panels.base import Panel
from workbench.ui.widgets.persona_editor import PersonaEditor
from workbench.ui.widgets.record_table import RecordTable

CLUSTER_COLUMNS = (("name", "Cluster"), ("reference", "Reference"), ("theta", "θ"),
                   ("weight", "Weight"), ("agents", "Agents"), ("description", "Description"))
AGENT_COLUMNS = (("id", "Agent"), ("cluster", "Cluster"), ("provider", "Provider"),
                 ("role", "Role"), ("persona", "Persona"))


class ClustersPanel(Panel):
    TITLE = "Clusters & Agents"
    OBJECT_NAME = "clustersPanel"
    SUMMARY = "The adversarial clusters and the agents in each: who votes, through which provider."
    TABLES = ("clusters", "agents", "providers")

    def __init__(self, model: ProjectModel, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.clusters = RecordTable(CLUSTER_COLUMNS, "Filter clusters…", self)
        self.agents = RecordTable(AGENT_COLUMNS, "Filter agents…", self)
        self.persona = PersonaEditor(model, self)
        self.agents.view.selectionModel().selectionChanged.connect(self._on_agent_selected)
        self._providers: dict[str, dict] = {}
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.clusters)
        split.addWidget(self.agents)
        split.addWidget(self.persona)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 2)
        split.setStretchFactor(2, 3)
        self._layout.addWidget(split, 1)
        self._content = split
        self._agent_rows: list[dict] = []
        split.hide()

    def load(self, store, changes, cancel):
        from workbench.core.project.panel import panel_rows

        return panel_rows(store)

    def apply(self, view) -> None:
        clusters, agents = view.clusters, view.agents
        names = {c["id"]: c["name"] for c in clusters}
        self._providers = view.providers
        per_cluster: dict[object, int] = {}
        for a in agents:
            per_cluster[a["cluster_id"]] = per_cluster.get(a["cluster_id"], 0) + 1
        self.clusters.set_rows([
            {**c, "reference": "★ reference" if c["is_reference"] else "",
             "theta": "global" if c["theta"] is None else c["theta"],
             "agents": per_cluster.get(c["id"], 0)}
            for c in clusters
        ])
        rows = [{**a, "cluster": names.get(a["cluster_id"], "—"), "persona": _first_line(a["persona"])}
                for a in agents]
        if rows != self._agent_rows:  # an unchanged table keeps its selection and scroll position
            self._agent_rows = rows
            keep = self.persona.agent_id
            self.agents.set_rows(rows)
            if keep is not None:
                self.select_agent(keep)
        self._reload_persona()
        self._content.show()

    def clear(self) -> None:
        self._content.hide()
        self._agent_rows = []
        self.clusters.set_rows([])
        self.agents.set_rows([])
        self.persona.load(None)

    # ----- the persona of the selected agent -------------------------------------------------
    def select_agent(self, agent_id: str) -> bool:
        table = self.agents
        for row in range(table.proxy.rowCount()):
            index = table.proxy.index(row, 0)
            if table.model.row(table.proxy.mapToSource(index).row())["id"] == agent_id:
                table.view.selectRow(row)
                return True
        return False

    def selected_agent(self) -> dict | None:
        rows = self.agents.view.selectionModel().selectedRows()
        return self.agents.model.row(self.agents.proxy.mapToSource(rows[0]).row()) if rows else None

    def _on_agent_selected(self, *_args) -> None:
        agent = self.selected_agent()  # None while the table resets: the editor keeps its agent
        if agent is not None and agent["id"] != self.persona.agent_id:
            self.persona.load(agent, self._providers.get(agent["provider"]))

    def _reload_persona(self) -> None:
        """Show what is stored now for the agent being tuned, unless the form has unsaved edits."""
        agent = next((a for a in self._agent_rows if a["id"] == self.persona.agent_id), None)
        if agent is None:
            if self.persona.agent_id is not None:
                self.persona.load(None)  # the agent was deleted
        elif not self.persona.dirty and ((agent["params_json"] or {}) != self.persona.loaded
                                         or agent["provider"] != (self.persona.agent or {}).get("provider")):
            self.persona.load(agent, self._providers.get(agent["provider"]))


def _first_line(text: str, limit: int = 90) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
