"""Clusters & Agents: the adversarial clusters of the panel and the agents in each."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QWidget

from workbench.services.project_model import ProjectModel
from workbench.ui.panels.base import Panel
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
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.clusters)
        split.addWidget(self.agents)
        self._layout.addWidget(split, 1)
        self._content = split
        split.hide()

    def refresh(self) -> None:
        store = self.store
        assert store is not None
        clusters = store.rows("clusters", order_by="position, id")
        names = {c["id"]: c["name"] for c in clusters}
        agents = store.rows("agents", order_by="cluster_id, position, id")
        per_cluster: dict[object, int] = {}
        for a in agents:
            per_cluster[a["cluster_id"]] = per_cluster.get(a["cluster_id"], 0) + 1
        self.clusters.set_rows([
            {**c, "reference": "★ reference" if c["is_reference"] else "",
             "theta": "global" if c["theta"] is None else c["theta"],
             "agents": per_cluster.get(c["id"], 0)}
            for c in clusters
        ])
        self.agents.set_rows([
            {**a, "cluster": names.get(a["cluster_id"], "—"), "persona": _first_line(a["persona"])}
            for a in agents
        ])
        self._content.show()

    def clear(self) -> None:
        self._content.hide()
        self.clusters.set_rows([])
        self.agents.set_rows([])


def _first_line(text: str, limit: int = 90) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
