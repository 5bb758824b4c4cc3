"""The Clusters & Agents panel's edits, each an undoable command over ``core.project.panel_edits``.

Every method builds the edit's write and its inverse (``fn(store) -> Changes``; the SQL stays in
:mod:`workbench.core.project.panel_edits`) and hands them to :func:`workbench.ui.undo.edit`: pushed
on the panel's ``history`` when it has one, applied directly otherwise. The values an inverse
needs are those on screen when the edit is made (the old name, the old theta), or a snapshot
taken in the same job just before a delete.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QUndoStack

from workbench.core.project import panel_edits as pe
from workbench.core.project.changes import Changes
from workbench.core.project.store import Store
from workbench.ui.undo import EditQueue, edit

Done = Callable[[Changes], None] | None


class ClustersEdits:
    def __init__(self, queue: EditQueue, history: Callable[[], QUndoStack | None]):
        self.queue = queue
        self._history = history

    def _edit(self, text: str, redo, undo, on_redone: Done = None, merge: tuple | None = None) -> None:
        edit(self._history(), self.queue, text, redo, undo, on_redone=on_redone, merge=merge)

    # ----- settings --------------------------------------------------------------------------
    def set_tau(self, old: float, new: float) -> None:
        self._edit(f"Set τ to {new:g}", lambda s: pe.set_tau(s, new), lambda s: pe.set_tau(s, old))

    def set_project_theta(self, old: float, new: float) -> None:
        self._edit(f"Set the project's θ to {new:g}", lambda s: pe.set_theta(s, new), lambda s: pe.set_theta(s, old))

    def set_weighted(self, old: bool, new: bool) -> None:
        self._edit(f"{'Weight' if new else 'Stop weighting'} the clusters", lambda s: pe.set_weighted(s, new),
                   lambda s: pe.set_weighted(s, old))

    # ----- clusters --------------------------------------------------------------------------
    def create_cluster(self, name: str, on_created: Callable[[object], None] | None = None) -> None:
        state: dict = {}

        def redo(store: Store) -> Changes:
            changes = pe.create_cluster(store, name)
            state["id"] = changes.keys_of("clusters")[0]
            return changes

        def done(_changes: Changes) -> None:
            if on_created is not None:
                on_created(state["id"])

        self._edit(f"Add cluster {name}", redo, lambda s: pe.delete_cluster(s, state["id"]), done)

    def rename_cluster(self, cluster_id: object, old: str, new: str) -> None:
        self._edit(f"Rename cluster {old} to {new}", lambda s: pe.rename_cluster(s, cluster_id, new),
                   lambda s: pe.rename_cluster(s, cluster_id, old))

    def set_theta(self, cluster_id: object, name: str, old: float | None, new: float | None) -> None:
        shown = "global" if new is None else f"{new:g}"
        self._edit(f"Set θ of {name} to {shown}", lambda s: pe.set_cluster_theta(s, cluster_id, new),
                   lambda s: pe.set_cluster_theta(s, cluster_id, old))

    def set_weight(self, cluster_id: object, name: str, old: float, new: float) -> None:
        self._edit(f"Set the weight of {name} to {new:g}", lambda s: pe.set_cluster_weight(s, cluster_id, new),
                   lambda s: pe.set_cluster_weight(s, cluster_id, old))

    def set_description(self, cluster_id: object, name: str, old: str, new: str) -> None:
        self._edit(f"Describe cluster {name}", lambda s: pe.set_cluster_description(s, cluster_id, new),
                   lambda s: pe.set_cluster_description(s, cluster_id, old))

    def set_reference(self, old: object | None, new: object | None, name: str) -> None:
        text = f"Make {name} the reference cluster" if new is not None else f"Unmark {name} as reference"
        self._edit(text, lambda s: pe.set_reference(s, new), lambda s: pe.set_reference(s, old))

    def move_cluster(self, cluster_id: object, name: str, delta: int) -> None:
        self._edit(f"Move cluster {name} {'up' if delta < 0 else 'down'}",
                   lambda s: pe.move_cluster(s, cluster_id, delta), lambda s: pe.move_cluster(s, cluster_id, -delta))

    def delete_cluster(self, cluster_id: object, name: str) -> None:
        state: dict = {}

        def redo(store: Store) -> Changes:
            state["snapshot"] = pe.cluster_snapshot(store, cluster_id)
            return pe.delete_cluster(store, cluster_id)

        self._edit(f"Delete cluster {name}", redo, lambda s: pe.restore_cluster(s, state["snapshot"]))

    # ----- agents ----------------------------------------------------------------------------
    def add_agent(self, cluster_id: object, agent_id: str, provider: str | None, *, make_sim: bool = False,
                  on_added: Callable[[str], None] | None = None) -> None:
        """``make_sim``: the project has no provider yet; the simulated panel is added with the agent."""
        def redo(store: Store) -> Changes:
            changes = Changes()
            if make_sim:
                changes = pe.save_provider(store, {"name": provider, "model": "sim"})
            return changes | pe.add_agent(store, cluster_id, agent_id, provider=provider)

        def undo(store: Store) -> Changes:
            changes = pe.remove_agent(store, agent_id)
            if make_sim:
                changes = changes | pe.delete_provider(store, provider)
            return changes

        self._edit(f"Add agent {agent_id}", redo, undo, (lambda _c: on_added(agent_id)) if on_added else None)

    def duplicate_agent(self, agent_id: str, new_id: str, on_added: Callable[[str], None] | None = None) -> None:
        self._edit(f"Duplicate agent {agent_id} as {new_id}", lambda s: pe.duplicate_agent(s, agent_id, new_id),
                   lambda s: pe.remove_agent(s, new_id), (lambda _c: on_added(new_id)) if on_added else None)

    def remove_agent(self, agent_id: str) -> None:
        state: dict = {}

        def redo(store: Store) -> Changes:
            state["row"] = pe.agent_snapshot(store, agent_id)
            return pe.remove_agent(store, agent_id)

        self._edit(f"Remove agent {agent_id}", redo, lambda s: pe.restore_agent(s, state["row"]))

    def move_agent(self, agent_id: str, delta: int) -> None:
        self._edit(f"Move agent {agent_id} {'up' if delta < 0 else 'down'}", lambda s: pe.move_agent(s, agent_id, delta),
                   lambda s: pe.move_agent(s, agent_id, -delta))

    def rename_agent(self, old: str, new: str, on_renamed: Callable[[str], None] | None = None) -> None:
        self._edit(f"Rename agent {old} to {new}", lambda s: pe.rename_agent(s, old, new),
                   lambda s: pe.rename_agent(s, new, old), (lambda _c: on_renamed(new)) if on_renamed else None)

    def set_agent_cluster(self, agent_id: str, old: object, new: object, name: str) -> None:
        self._edit(f"Move agent {agent_id} to {name}", lambda s: pe.set_agent_cluster(s, agent_id, new),
                   lambda s: pe.set_agent_cluster(s, agent_id, old))

    def set_provider(self, agent_id: str, old: str | None, new: str | None) -> None:
        self._edit(f"Set the provider of {agent_id} to {new or 'none'}", lambda s: pe.set_agent_provider(s, agent_id, new),
                   lambda s: pe.set_agent_provider(s, agent_id, old))

    def set_role(self, agent_id: str, old: str | None, new: str | None) -> None:
        self._edit(f"Set the role of {agent_id} to {new or 'none'}", lambda s: pe.set_agent_role(s, agent_id, new),
                   lambda s: pe.set_agent_role(s, agent_id, old))

    def set_persona(self, agent_id: str, old: str, new: str) -> None:
        self._edit(f"Edit the persona of {agent_id}", lambda s: pe.set_agent_persona(s, agent_id, new),
                   lambda s: pe.set_agent_persona(s, agent_id, old), merge=("persona", agent_id))

    def set_sampling(self, agent_id: str, old: dict, new: dict) -> None:
        self._edit(f"Set the sampling of {agent_id}", lambda s: pe.set_agent_sampling(s, agent_id, new),
                   lambda s: pe.set_agent_sampling(s, agent_id, old))

    def set_params(self, agent_id: str, old: dict, new: dict, done: Done = None) -> None:
        self._edit(f"Tune the simulated persona of {agent_id}", lambda s: pe.set_agent_params(s, agent_id, new),
                   lambda s: pe.set_agent_params(s, agent_id, old), done)

    # ----- providers -------------------------------------------------------------------------
    def save_provider(self, record: dict, old: dict | None) -> None:
        """Add ``record`` (``old`` None) or replace the provider ``old`` by it."""
        if old is None:
            self._edit(f"Add provider {record['name']}", lambda s: pe.save_provider(s, record),
                       lambda s: pe.delete_provider(s, record["name"]))
            return
        old_row = {**{k: old.get(k) for k in pe.PROVIDER_COLUMNS}, "options_json": old.get("options_json") or {}}
        self._edit(f"Edit provider {old['name']}", lambda s: pe.save_provider(s, record, replacing=old["name"]),
                   lambda s: pe.save_provider(s, old_row, replacing=record["name"]))

    def delete_provider(self, name: str) -> None:
        state: dict = {}

        def redo(store: Store) -> Changes:
            state["snapshot"] = pe.provider_snapshot(store, name)
            return pe.delete_provider(store, name)

        self._edit(f"Remove provider {name}", redo, lambda s: pe.restore_provider(s, state["snapshot"]))

    # ----- the whole panel -------------------------------------------------------------------
    def apply_config(self, text: str, config: dict, save_as: str | None = None) -> None:
        """Replace the panel by a run configuration's (a template), undoably."""
        state: dict = {}

        def redo(store: Store) -> Changes:
            state["snapshot"] = pe.panel_snapshot(store, save_as)
            return pe.apply_run_config(store, config, save_as=save_as)

        self._edit(text, redo, lambda s: pe.restore_panel(s, state["snapshot"]))

    def import_from_run(self, run_id: str) -> None:
        state: dict = {}

        def redo(store: Store) -> Changes:
            state["snapshot"] = pe.panel_snapshot(store)
            return pe.import_panel_from_run(store, run_id)

        self._edit(f"Import the panel of run {run_id}", redo, lambda s: pe.restore_panel(s, state["snapshot"]))
