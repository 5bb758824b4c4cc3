"""What the Clusters & Agents panel's buttons and forms do: each turns into an undoable edit.

A mixin of :class:`~workbench.ui.panels.clusters_panel.ClustersPanel` (which holds the view on
screen, the forms and ``self.edits``): adding, duplicating, moving and removing clusters and
agents, writing a form's field once its editing is finished and nothing is wrong with it, the
project's tau and weighting, templates and "Import panel from a run".
"""

from __future__ import annotations

import threading

from workbench.ui import prompts
from workbench.ui.widgets.cluster_editor import parse_number


class ClustersActions:
    """Edits of the panel, for ClustersPanel (which defines the attributes used here)."""

    def _on_queue_idle_changed(self, idle: bool) -> None:
        if not idle and self.message.level == "error":  # a new edit: the last failure is history
            self.message.show_message(None)

    def _on_edit_failed(self, message: str) -> None:
        self.message.show_message("error", f"Not saved: {message}")

    def _say(self, text: str, level: str | None = "ok") -> None:
        self.message.show_message(level, text)

    def _on_add_cluster(self) -> None:
        from workbench.core.project.panel_edits import next_agent_id

        name = next_agent_id({c["name"] for c in self.view.clusters}, "cluster")
        self._say("")
        self.edits.create_cluster(name, on_created=lambda cluster_id: self._select_later("cluster", cluster_id))

    def _select_later(self, kind: str, key: object) -> None:
        self._want = (kind, key)
        self._restore_selection()

    def _target_cluster(self) -> object | None:
        if self._current and self._current[0] == "cluster":
            return self._current[1]
        if self._current:
            agent = self._stored_agent(self._current[1])
            if agent is not None:
                return agent["cluster_id"]
        return self.view.clusters[-1]["id"] if self.view.clusters else None

    def _on_add_agent(self) -> None:
        from workbench.core.project.panel_edits import next_agent_id

        cluster_id = self._target_cluster()
        cluster = self._stored_cluster(cluster_id)
        if cluster is None:
            return
        prefix = "".join(ch for ch in cluster["name"][:1].lower() if ch.isalnum()) or "agent"
        agent_id = next_agent_id({a["id"] for a in self.view.agents}, prefix)
        providers = self.view.providers
        provider = "sim" if "sim" in providers else (sorted(providers)[0] if providers else "sim")
        self._say("")
        self.edits.add_agent(cluster_id, agent_id, provider, make_sim=not providers,
                             on_added=lambda aid: self._select_later("agent", aid))

    def _on_duplicate(self) -> None:
        from workbench.core.project.panel_edits import next_agent_id

        if not self._current or self._current[0] != "agent":
            return
        source = str(self._current[1])
        prefix = source.rstrip("0123456789") or source
        new_id = next_agent_id({a["id"] for a in self.view.agents}, prefix)
        self.edits.duplicate_agent(source, new_id, on_added=lambda aid: self._select_later("agent", aid))

    def _on_remove(self) -> None:
        if not self._current:
            return
        kind, key = self._current
        if kind == "cluster":
            cluster = self._stored_cluster(key)
            if cluster is not None:
                self.edits.delete_cluster(key, cluster["name"])
        else:
            self.agent_editor.flush()
            self.edits.remove_agent(str(key))

    def _on_move(self, delta: int) -> None:
        if not self._current:
            return
        kind, key = self._current
        if kind == "cluster":
            order = [c["id"] for c in self.view.clusters]
            cluster = self._stored_cluster(key)
            if cluster is not None and 0 <= order.index(key) + delta < len(order):
                self.edits.move_cluster(key, cluster["name"], delta)
        else:
            agent = self._stored_agent(key)
            siblings = [a["id"] for a in sorted(self.view.agents, key=lambda a: (a["position"], a["id"]))
                        if agent is not None and a["cluster_id"] == agent["cluster_id"]]
            if agent is not None and 0 <= siblings.index(key) + delta < len(siblings):
                self.edits.move_agent(str(key), delta)

    def _on_cluster_committed(self, field: str) -> None:
        shown = self.cluster_editor.cluster  # the cluster the form shows (the selection may move on)
        cluster = self._stored_cluster(shown["id"]) if shown else None
        if cluster is None:
            return
        ok, value = self.cluster_editor.parsed(field)
        self._recheck()
        if not ok or self.cluster_editor.has_error(field):
            return
        self.cluster_editor.dirty.discard(field)
        old = cluster.get(field)
        if value == old or (field == "description" and value == (old or "")):
            return
        cid, name = cluster["id"], cluster["name"]
        if field == "name":
            self.edits.rename_cluster(cid, name, value)
        elif field == "theta":
            self.edits.set_theta(cid, name, old, value)
        elif field == "weight":
            self.edits.set_weight(cid, name, old, value)
        else:
            self.edits.set_description(cid, name, old or "", value)

    def _on_reference_toggled(self, checked: bool) -> None:
        shown = self.cluster_editor.cluster
        cluster = self._stored_cluster(shown["id"]) if shown else None
        if cluster is None:
            return
        old = next((c["id"] for c in self.view.clusters if c["is_reference"]), None)
        new = cluster["id"] if checked else None
        if old != new:
            self.edits.set_reference(old, new, cluster["name"])

    def _on_agent_committed(self, field: str) -> None:
        shown = self.agent_editor.agent  # the agent the form shows (the selection may move on)
        agent = self._stored_agent(shown["id"]) if shown else None
        if agent is None:
            return
        value = self.agent_editor.value(field)
        self._recheck()
        if field == "id" and self.agent_editor.has_error("id"):
            return
        self.agent_editor.dirty.discard(field)
        aid = agent["id"]
        if field == "id" and value != aid:
            self.edits.rename_agent(aid, value, on_renamed=lambda new: self._select_later("agent", new))
        elif field == "cluster" and value != agent["cluster_id"]:
            self.edits.set_agent_cluster(aid, agent["cluster_id"], value, (self._stored_cluster(value) or {}).get("name", "?"))
        elif field == "provider" and value != agent["provider"]:
            self.edits.set_provider(aid, agent["provider"], value)
        elif field == "role" and value != agent["role"]:
            self.edits.set_role(aid, agent["role"], value)
        elif field == "persona" and value != (agent["persona"] or ""):
            self.edits.set_persona(aid, agent["persona"] or "", value)
        elif field == "sampling":
            from workbench.ui.widgets.agent_editor import stored_sampling

            if value != stored_sampling(agent):
                self.edits.set_sampling(aid, stored_sampling(agent), value)

    def _commit_params(self, agent_id: str, old: dict, new: dict, done) -> None:
        self.edits.set_params(agent_id, old, new, done)

    def _on_tau_edited(self, _text: str) -> None:
        self._tau_dirty = True
        self._recheck()

    def _on_tau_committed(self) -> None:
        if not self._tau_dirty or self.view is None:
            return
        ok, value = parse_number(self.tau.text())
        self._recheck()
        if not ok or any(i.level == "error" for i in self._issues_of("tau")):
            return
        self._tau_dirty = False
        if value != self.view.tau:
            self.edits.set_tau(self.view.tau, value)

    def _on_theta_edited(self, _text: str) -> None:
        self._theta_dirty = True
        self._recheck()

    def _on_theta_committed(self) -> None:
        if not self._theta_dirty or self.view is None:
            return
        ok, value = parse_number(self.theta.text())
        self._recheck()
        if not ok or any(i.level == "error" for i in self._issues_of("theta")):
            return
        self._theta_dirty = False
        if value != self.view.theta:
            self.edits.set_project_theta(self.view.theta, value)

    def _on_weighted_clicked(self, checked: bool) -> None:
        if self.view is not None and checked != (self.view.weighted is True):
            self.edits.set_weighted(self.view.weighted is True, checked)
        self._recheck()

    # ----- templates and runs ------------------------------------------------------------------
    def _fill_templates_menu(self) -> None:
        from workbench.core.runs.templates import TEMPLATES

        self.templates_menu.clear()
        for key, template in TEMPLATES.items():
            action = self.templates_menu.addAction(template.name)
            action.setToolTip(template.description)
            action.setStatusTip(template.description)
            action.triggered.connect(lambda _checked=False, k=key: self.apply_template(k))
        self.templates_menu.setToolTipsVisible(True)
        self.templates_menu.addSeparator()
        self.templates_menu.addAction("Import panel from a run…").triggered.connect(self.import_from_run)

    def apply_template(self, key: str) -> None:
        from workbench.core.runs.templates import TEMPLATES

        template = TEMPLATES[key]
        text = (f"Replace the project's providers, clusters and agents by the template “{template.name}”?\n\n"
                f"{template.description}\n\nIts run options are saved as the configuration “Template: "
                f"{template.name}”. Edit ▸ Undo puts the panel back.")
        if not prompts.confirm(self, "Apply template", text, "Apply"):
            return
        self._say("")
        self.edits.apply_config(f"Apply template {template.name}", template.run_config(),
                                save_as=f"Template: {template.name}")

    def import_from_run(self) -> None:
        reading = self._reading
        if reading is None:
            return

        def job(_cancel: threading.Event) -> list:
            from workbench.core.project.runs import run_list

            try:
                return run_list(reading, 500)
            finally:
                reading.close_connection()

        self.model.reads.start("list runs", job, self._on_runs_listed,
                               lambda error: self._say(f"Could not list the runs: {error.message}", "error"))

    def _on_runs_listed(self, runs: object) -> None:
        from workbench.ui.widgets.run_names import run_titles

        choices = list(zip((r.id for r in runs), run_titles(runs)))  # type: ignore[attr-defined]
        if not choices:
            self._say("This project has no runs yet: there is no panel to import.", "warning")
            return
        run_id = prompts.choose_run(self, choices)
        if run_id is None:
            return
        if prompts.confirm(self, "Import panel", f"Replace the project's providers, clusters and agents by those "
                                                 f"run {run_id} was configured with? Edit ▸ Undo puts them back.",
                           "Import"):
            self.edits.import_from_run(run_id)
