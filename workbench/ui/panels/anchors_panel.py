"""Anchors & Restoration: Resonance Echo markers, verifications and restorations, per agent.

A thin view over :func:`workbench.core.project.echo_view.read_echo_view` (read off the GUI thread):
per agent its current marker and injection pattern (agent type A, B or C), the verification history
as a pass/fail strip with the footer state beneath, the session seed; the restoration state machine
as a diagram with the current step highlighted and the event log beside it; the conductor's
checklist with each item's status and when it changed.

Actions: "Recite marker" and "Inject" (``services.runs.echo_actions`` through ``ProjectModel.write``),
"Open in Trace Inspector" (``ProjectModel.reveal``) and the teaching scenario, a run started through
the window's :class:`RunService` (the same one Live Run uses), narrated as it goes.
"""

from __future__ import annotations

import html
import threading
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.project.changes import Changes
from workbench.core.project.refs import RecordRef
from workbench.core.project.store import Store
from workbench.ui import theme
from workbench.ui.panels.base import Panel
from workbench.ui.panels.dock_room import unwrap_summary
from workbench.ui.widgets.echo_diagram import EchoDiagram
from workbench.ui.widgets.echo_teaching import AGENT as TEACH_AGENT
from workbench.ui.widgets.echo_teaching import LABEL as TEACH_LABEL
from workbench.ui.widgets.echo_teaching import StoryStep, story_steps, teaching_config
from workbench.ui.widgets.echo_timeline import EchoTimeline

if TYPE_CHECKING:  # read off the GUI thread, in load(): the Echo engine stays out of the window's start
    from workbench.core.project.echo_view import AgentEcho, EchoView

PLAY_MS = 4000  # Play: how long each step of the teaching scenario stays on screen
STORY_STEPS = 4  # start, loss, detection, restoration (echo_teaching.story_steps)
STATUS_MARK = {"done": ("✓ done", "ok"), "pending": ("… pending", "muted"), "failed": ("✖ failed", "error"),
               "not_applicable": ("– n/a", "muted")}


def _time(at: str | None) -> str:
    return at[11:19] if at and len(at) >= 19 else (at or "")


class AnchorsPanel(Panel):
    TITLE = "Anchors & Restoration"
    OBJECT_NAME = "anchorsPanel"
    SUMMARY = "Resonance markers per agent, every verification, and each restoration step by step."
    TABLES = ("runs", "echo_markers", "echo_anchors", "echo_verifications", "echo_session_seeds",
              "echo_restorations")

    def __init__(self, model, parent: QWidget | None = None):
        super().__init__(model, parent)
        self.view: EchoView | None = None
        self.run_choice: str | None = None  # None: the newest run with Echo records
        self._runs_service = None
        self._teach_run: str | None = None
        self._teach_status: str | None = None
        self._teaching = False  # the scenario's run is being made (or resumed)
        self._steps: list[StoryStep] = []  # the story so far, from the records read
        self._step = 0  # the step on screen: it stays until Next (or Play)
        self.play_ms = PLAY_MS
        self._play = QTimer(self)  # Play: the rest of the story, a step every play_ms
        self._play.timeout.connect(self._on_play_tick)
        self._agent_chosen = False  # a person picked an agent in the box (not a read restoring it)
        self._selected: RecordRef | None = None
        self.story_lines: list[str] = []
        unwrap_summary(self)
        self._build()

    # ----- construction -------------------------------------------------------------------------
    def _build(self) -> None:
        body = QWidget(self)
        self.body = body
        outer = QVBoxLayout(body)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(4)
        bar = QHBoxLayout()
        self.run_box = QComboBox(body)
        self.run_box.setObjectName("echoRunBox")
        self.run_box.setMinimumContentsLength(18)
        self.run_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.agent_box = QComboBox(body)
        self.agent_box.setObjectName("echoAgentBox")
        self.agent_box.setMinimumContentsLength(4)
        self.teach_button = QPushButton("▶ Teaching scenario", body)
        self.teach_button.setToolTip("Run a simulated Echo-wrapped RCP run in which agent c1 silently forgets its "
                                     "marker, the loss is detected, and c1 is restored; narrated step by step.")
        self.recite_button = QPushButton("Recite marker", body)
        self.recite_button.setToolTip("Ask the selected agent to recite its resonance marker, now")
        self.inject_button = QPushButton("Inject", body)
        self.inject_button.setToolTip("Re-inject the agent's persona, decisions, tasks and a new marker "
                                      "(the restoration protocol, same session)")
        self.open_button = QPushButton("Open in Trace Inspector", body)
        self.open_button.setToolTip("Show the selected verification or restoration's call (click a mark or a log line)")
        bar.addWidget(QLabel("Run", body))
        bar.addWidget(self.run_box, 2)
        bar.addWidget(QLabel("Agent", body))
        bar.addWidget(self.agent_box, 1)
        for b in (self.teach_button, self.recite_button, self.inject_button, self.open_button):
            bar.addWidget(b)
        outer.addLayout(bar)

        self.narration = QLabel(body)
        self.narration.setObjectName("echoNarration")
        self.narration.setWordWrap(True)
        self.narration.setTextFormat(Qt.TextFormat.RichText)
        self.narration.hide()
        # The teaching scenario's controls: each step stays on screen until Next; Play shows the rest.
        self.story_bar = QWidget(body)
        story = QHBoxLayout(self.story_bar)
        story.setContentsMargins(0, 0, 0, 0)
        self.step_label = QLabel(self.story_bar)
        self.step_label.setObjectName("echoStoryStep")
        self.next_step_button = QPushButton("Next ▸", self.story_bar)
        self.next_step_button.setObjectName("echoStoryNext")
        self.next_step_button.setToolTip("Show the next step of the story")
        self.play_button = QPushButton("Play ▶▶", self.story_bar)
        self.play_button.setObjectName("echoStoryPlay")
        self.play_button.setToolTip("Show the rest of the story, one step every few seconds")
        story.addWidget(self.step_label)
        story.addWidget(self.next_step_button)
        story.addWidget(self.play_button)
        self.story_bar.hide()
        narration_row = QHBoxLayout()
        narration_row.addWidget(self.narration, 1)
        narration_row.addWidget(self.story_bar, 0, Qt.AlignmentFlag.AlignTop)
        outer.addLayout(narration_row)

        split = QSplitter(Qt.Orientation.Horizontal, body)
        split.setChildrenCollapsible(False)
        # The agent: marker, pattern, history strip, state changes, seed.
        left = QWidget(split)
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.setSpacing(3)
        self.agent_card = QLabel(left)
        self.agent_card.setObjectName("echoAgentCard")
        self.agent_card.setWordWrap(True)
        self.agent_card.setTextFormat(Qt.TextFormat.RichText)
        self.agent_card.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.agent_card.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.timeline = EchoTimeline(left)
        self.seed_label = QLabel(left)
        self.seed_label.setObjectName("echoSeed")
        self.seed_label.setWordWrap(True)
        self.seed_label.setTextFormat(Qt.TextFormat.RichText)
        self.seed_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        lv.addWidget(self.agent_card)
        lv.addWidget(self.timeline)
        lv.addWidget(self.seed_label, 1)
        # The restoration: the diagram and its event log.
        mid = QWidget(split)
        mv = QVBoxLayout(mid)
        mv.setContentsMargins(0, 0, 0, 0)
        mv.setSpacing(3)
        self.diagram = EchoDiagram(mid)
        self.episode_label = QLabel("Restoration: none yet", mid)
        self.episode_label.setObjectName("echoEpisode")
        self.log = EventLog(mid)
        self.log.setObjectName("echoEventLog")
        # The event log and the conductor's checklist share the room under the diagram: a third
        # column beside the diagram left the checklist ~200 px, too narrow for its items.
        self.log_tabs = QTabWidget(mid)
        self.log_tabs.setObjectName("echoLogTabs")
        self.log_tabs.setDocumentMode(True)
        mv.addWidget(self.episode_label)
        mv.addWidget(self.diagram)
        mv.addWidget(self.log_tabs, 1)
        self.log_tabs.addTab(self.log, "Event log")
        self.checklist = QTreeWidget(self.log_tabs)
        self.checklist.setObjectName("echoChecklist")
        self.checklist.setHeaderLabels(["Conductor's checklist", "Status", "At"])
        self.checklist.setRootIsDecorated(False)
        self.checklist.setUniformRowHeights(True)
        self.checklist.setWordWrap(False)
        from PySide6.QtWidgets import QHeaderView

        head = self.checklist.header()
        head.setStretchLastSection(False)
        head.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        head.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        head.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.log_tabs.addTab(self.checklist, "Conductor's checklist")
        split.addWidget(left)
        split.addWidget(mid)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 5)
        split.setSizes([300, 500])  # the agent's card reads in ~300 px; the rest to the diagram
        self.split = split
        outer.addWidget(split, 1)
        self._layout.addWidget(body, 1)
        body.hide()

        self.run_box.activated.connect(self._on_run_chosen)
        self.agent_box.currentIndexChanged.connect(self._on_agent_chosen)
        self.agent_box.activated.connect(self._on_agent_picked_by_hand)
        self.teach_button.clicked.connect(self._on_teach_clicked)
        self.next_step_button.clicked.connect(self.next_step)
        self.play_button.clicked.connect(self._on_play_clicked)
        self.recite_button.clicked.connect(self._on_recite_clicked)
        self.inject_button.clicked.connect(self._on_inject_clicked)
        self.open_button.clicked.connect(self._on_open_clicked)
        self.timeline.check_clicked.connect(self._on_check_clicked)
        self.log.currentRowChanged.connect(self._on_log_row)
        self._sync_buttons()

    # ----- the run service (the window's, shared with Live Run) --------------------------------
    def attach(self, runs) -> None:
        self._runs_service = runs

    def _runs(self):
        if self._runs_service is None:
            runs = getattr(self.window(), "runs", None)
            from workbench.services.runs.service import RunService

            if isinstance(runs, RunService):
                self.attach(runs)
        return self._runs_service

    # ----- reads ---------------------------------------------------------------------------------
    def load(self, store: Store, changes: Changes | None, cancel: threading.Event) -> EchoView:
        from workbench.core.project.echo_view import read_echo_view

        return read_echo_view(store, self.run_choice)

    def apply(self, view: EchoView) -> None:
        self.view = view
        self.empty_label.setText("No Resonance Echo run yet. Click “▶ Teaching scenario” to run one."
                                 if not view.runs else "")
        self.empty_label.setVisible(not view.runs and not self._teaching)
        self.body.show()
        self.run_box.blockSignals(True)
        self.run_box.clear()
        from workbench.ui.widgets.run_names import run_titles, run_tooltip

        # By label, protocol, status and start time, as every list names a run.
        for r, title in zip(view.runs, run_titles(view.runs)):
            self.run_box.addItem(title, r.id)
            self.run_box.setItemData(self.run_box.count() - 1, run_tooltip(r), Qt.ItemDataRole.ToolTipRole)
        if view.run_id is not None:
            self.run_box.setCurrentIndex(self.run_box.findData(view.run_id))
        self.run_box.blockSignals(False)
        current = self.agent_box.currentText()
        self.agent_box.blockSignals(True)
        self.agent_box.clear()
        for a in view.agents:
            self.agent_box.addItem(a.agent)
        # The teaching run shows its agent to watch, once its anchor exists, unless the person has
        # chosen another agent since: an early read (only a2 anchored yet) must not pin a2.
        teaching = view.run_id == self._teach_run and view.agent(TEACH_AGENT) and not self._agent_chosen
        pick = TEACH_AGENT if teaching else current if view.agent(current) else None
        pick = pick or next((a.agent for a in view.agents if a.episodes), None)
        if pick:
            self.agent_box.setCurrentText(pick)
        self.agent_box.blockSignals(False)
        self._show_agent()

    def clear(self) -> None:
        """No project: nothing of the last one stays (its scenario, its narration, its run)."""
        self.view = None
        self.run_choice = None
        self._teach_run, self._teach_status, self._teaching = None, None, False
        self._steps, self._step, self.story_lines = [], 0, []
        self._play.stop()
        self._agent_chosen, self._selected, self._action = False, None, None
        self.run_box.clear()
        self.agent_box.clear()
        self.body.hide()
        self.narration.clear()
        self.narration.hide()
        self.story_bar.hide()
        self.empty_label.setText("No project is open. Use File ▸ New or File ▸ Open.")

    def current_agent(self) -> AgentEcho | None:
        return self.view.agent(self.agent_box.currentText()) if self.view else None

    def _shown_agent(self) -> AgentEcho | None:
        """The agent as shown: during the teaching scenario, its records as they stood at the step
        on screen (the later ones wait for Next)."""
        a = self.current_agent()
        if a is not None and a.agent == TEACH_AGENT and self._presenting():
            self._steps = story_steps(a, finished=self._teach_status)
            self._step = min(self._step, len(self._steps) - 1)
            return self._steps[self._step].agent or a
        return a

    def _presenting(self) -> bool:
        return self._teach_run is not None and self.view is not None and self.view.run_id == self._teach_run

    def _show_agent(self) -> None:
        a = self._shown_agent()
        self._selected = None
        if a is None:
            self.agent_card.setText("<i>No agent with a resonance anchor in this run.</i>")
            self.timeline.set_data([], [])
            self.seed_label.setText("")
            self.diagram.set_state([], None)
            self.log.clear()
            self.checklist.clear()
            self.log_tabs.setTabText(1, "Conductor's checklist")
            self._narrate()
            self._sync_buttons()
            return
        state_key = {"Stable": "ok", "Degraded": "error", "Recovering": "warning"}.get(a.state, "muted")
        fails = sum(1 for c in a.checks if not c.success)
        self.agent_card.setText(
            f"<b>{html.escape(a.agent)}</b> · {html.escape(a.pattern_text)}<br>"
            f"Marker: <b>“{html.escape(a.marker or '—')}”</b><br>"
            f"Session {html.escape(a.session_id or '—')} · State: "
            f"<b style='color:{theme.css(state_key)}'>{html.escape(a.state)}</b> · "
            f"{len(a.checks)} checks, {fails} failed")
        self.timeline.set_data(
            [(c.success, f"{'✓ recited' if c.success else '✗ not recited'} {c.marker_hex} · turn {c.turn or '—'}"
                         f" · {c.trigger or ''} · {_time(c.time)}") for c in a.checks],
            self._state_marks(a))
        states = " → ".join(f"{s.state} ({_time(s.time)})" for s in a.states)
        seed = a.seed or {}
        self.seed_label.setText(
            f"<span style='color:{theme.css('muted')}'>Footer state:</span> {html.escape(states)}<br>"
            f"<span style='color:{theme.css('muted')}'>Session seed:</span> persona "
            f"{html.escape(str(seed.get('persona') or '—'))}; tasks: "
            f"{html.escape('; '.join(seed.get('active_tasks') or []) or '—')}; decisions: "
            f"{html.escape('; '.join(seed.get('settled_decisions') or []) or '—')}; checkpoint "
            f"{_time(seed.get('last_checkpoint'))}")
        self.seed_label.setToolTip("\n".join(f"{k}: {v}" for k, v in seed.items()))
        episode = a.episodes[-1] if a.episodes else None
        if episode is not None:
            self.diagram.set_state([s.step for s in episode.steps], episode.current)
            self.episode_label.setText(f"Restoration {episode.id}: {episode.status} "
                                       f"({len(a.episodes)} in this run)")
        else:
            self.diagram.set_state([], None)
            self.episode_label.setText("Restoration: none yet (no check has failed)")
        self.log.clear()
        for e in a.episodes:
            for s in e.steps:
                item = QTableWidgetItem(f"{_time(s.at)}  {s.text}")
                item.setData(Qt.ItemDataRole.UserRole, (e.call_id, s.step))
                item.setToolTip(f"{e.id} · {s.step} · {s.at}")
                self.log.addItem(item)
        if self.log.count():
            self.log.scrollToBottom()
        self.checklist.clear()
        phase = None
        for row in a.checklist:
            if row.phase != phase:
                phase = row.phase
                head = QTreeWidgetItem([phase, "", ""])
                font = head.font(0)
                font.setBold(True)
                head.setFont(0, font)
                head.setFlags(Qt.ItemFlag.ItemIsEnabled)
                self.checklist.addTopLevelItem(head)
            word, key = STATUS_MARK.get(row.status, (row.status, "muted"))
            item = QTreeWidgetItem(["  " + row.text, word, _time(row.changed_at)])
            item.setForeground(1, theme.colour(key))
            item.setToolTip(0, row.text)
            item.setToolTip(1, row.detail)
            item.setToolTip(2, row.changed_at or "")
            self.checklist.addTopLevelItem(item)
        done = sum(row.status == "done" for row in a.checklist)
        self.log_tabs.setTabText(1, f"Conductor's checklist ({done} of {len(a.checklist)} done)")
        self._narrate()
        self._sync_buttons()

    @staticmethod
    def _state_marks(a: AgentEcho) -> list[tuple[int, str]]:
        """Each footer state, from the index of the first check at or after the time it began."""
        out = []
        for s in a.states:
            i = next((k for k, c in enumerate(a.checks) if c.time >= s.time), len(a.checks))
            out.append((i, s.state))
        return out

    # ----- actions -----------------------------------------------------------------------------
    def _sync_buttons(self) -> None:
        a = self.current_agent()
        runs = self._runs_service
        busy = bool(runs is not None and runs.running)
        writable = self.store is not None and not self.store.read_only
        scenario = self._scenario_run()
        replay = scenario is not None and scenario.status == "completed"
        self.teach_button.setEnabled(self.store is not None and (replay or (writable and not busy)))
        self.teach_button.setToolTip(
            "Tell the story again, step by step, over this project's teaching scenario run (no new run)" if replay
            else "Run a simulated Echo-wrapped RCP run in which agent c1 silently forgets its marker, the loss is "
                 "detected, and c1 is restored; told step by step, each step on screen until Next.")
        can_act = writable and a is not None and a.marker is not None and not busy and self._action is None
        self.recite_button.setEnabled(can_act)
        self.inject_button.setEnabled(can_act)
        self.open_button.setEnabled(self._selected is not None)

    _action: str | None = None

    def _on_run_chosen(self, index: int) -> None:
        self.run_choice = self.run_box.itemData(index)
        self.refresh()

    def _on_agent_chosen(self, _index: int) -> None:
        self._show_agent()

    def _act(self, name: str, fn) -> None:
        a, view = self.current_agent(), self.view
        if a is None or view is None or view.run_id is None:
            return
        run_id, agent = view.run_id, a.agent
        self._action = name
        self._sync_buttons()
        self.narration.setText(f"{'Asking' if name == 'recite' else 'Re-injecting'} {html.escape(agent)}…")
        self.narration.show()

        def write(store: Store) -> Changes:
            from workbench.services.runs import echo_actions

            return getattr(echo_actions, fn)(store, run_id, agent)

        self.model.write(f"{name} {agent}", write, self._on_action_done)

    def _on_action_done(self, _changes) -> None:
        name, self._action = self._action, None
        self.narration.setText(f"{'Recital' if name == 'recite' else 'Re-injection'} recorded; "
                               "see the history strip and the event log.")
        self._sync_buttons()

    def _on_recite_clicked(self) -> None:
        self._act("recite", "recite")

    def _on_inject_clicked(self) -> None:
        self._act("inject", "inject")

    def _on_check_clicked(self, index: int) -> None:
        a = self.current_agent()
        if a is None or index >= len(a.checks):
            return
        c = a.checks[index]
        run_id = self.view.run_id if self.view else None
        self._selected = RecordRef("call", c.call_id, run_id) if c.call_id else (
            RecordRef("run", run_id) if run_id else None)
        self._sync_buttons()

    def _on_log_row(self, row: int) -> None:
        item = self.log.item(row) if row >= 0 else None
        run_id = self.view.run_id if self.view else None
        if item is None:
            return
        call_id, _step = item.data(Qt.ItemDataRole.UserRole)
        self._selected = RecordRef("call", call_id, run_id) if call_id else (
            RecordRef("run", run_id) if run_id else None)
        self._sync_buttons()

    def _on_open_clicked(self) -> None:
        if self._selected is not None:
            self.model.reveal(self._selected)

    # ----- the teaching scenario ---------------------------------------------------------------
    def _scenario_run(self):
        """The project's teaching scenario run, if it has one (the newest)."""
        return next((r for r in (self.view.runs if self.view else ()) if r.label == TEACH_LABEL), None)

    def _on_teach_clicked(self) -> None:
        """Tell the story from its first step: over the project's scenario run when it has one
        (a run left unfinished is resumed), else over a new one."""
        runs = self._runs()
        if runs is None:
            self.narration.setText("The teaching scenario needs the main window's run service.")
            self.narration.show()
            return
        self._play.stop()
        self._steps, self._step, self._teach_status = [], 0, None
        self._agent_chosen = False
        existing = self._scenario_run()
        if existing is not None and existing.status == "completed":
            self._teach_run = self.run_choice = existing.id
            self._teach_status = existing.status
            self._narrate()
            self.refresh()
            return
        runs.started.connect(self._on_teach_started, Qt.ConnectionType.UniqueConnection)
        runs.finished.connect(self._on_teach_finished, Qt.ConnectionType.UniqueConnection)
        runs.running_changed.connect(self._on_running_changed, Qt.ConnectionType.UniqueConnection)
        self._teaching, self._teach_run = True, None
        if existing is not None:  # interrupted or failed: finished, not made again
            self._teach_run = self.run_choice = existing.id
            started = runs.resume(existing.id)
        else:
            from workbench.core.runs.config import parse_run_config

            started = runs.start_config(parse_run_config(teaching_config()), label=TEACH_LABEL)
        if not started:
            self._teaching = False
        self._narrate()

    def _on_agent_picked_by_hand(self, _index: int) -> None:
        self._agent_chosen = True

    def _on_teach_started(self, run_id: str) -> None:
        if self._teaching and self._teach_run in (None, run_id):
            self._teach_run = self.run_choice = run_id
            self.refresh()

    def _on_teach_finished(self, summary: dict) -> None:
        if self._teaching and summary.get("run_id", self._teach_run) == self._teach_run:
            self._teaching = False
            self._teach_status = str(summary.get("status", "finished"))
            self.refresh()  # the last records, then the narration's last line

    def _on_running_changed(self, _running: bool) -> None:
        self._sync_buttons()

    def next_step(self) -> bool:
        """Show the next step of the story, once its records are read; False at the end."""
        if self._step + 1 >= len(self._steps):
            self._play.stop()
            return False
        self._step += 1
        self._show_agent()
        return True

    def _on_play_clicked(self) -> None:
        if self.next_step():
            self._play.start(self.play_ms)

    def _on_play_tick(self) -> None:
        if not self.next_step() and not self._teaching:  # the whole story is on screen
            self._play.stop()

    @property
    def step_key(self) -> str | None:
        """The step on screen (start, loss, detection, restoration); None outside the scenario."""
        return self._steps[self._step].key if self._steps and (self._teaching or self._teach_run) else None

    def _narrate(self) -> None:
        if not (self._teaching or self._teach_run):
            return
        if not self._teaching and not self._presenting():  # another run is chosen: the story waits
            self._play.stop()
            self.narration.hide()
            self.story_bar.hide()
            return
        a = self.view.agent(TEACH_AGENT) if self._presenting() else None
        self._steps = story_steps(a, finished=self._teach_status)
        self._step = min(self._step, len(self._steps) - 1)
        lines = [s.text for s in self._steps[:self._step + 1]]
        self.story_lines = lines
        # The step on screen in large type; the story up to it in the tooltip (a small dock).
        self.narration.setText(f"<b>{html.escape(lines[-1])}</b>")
        self.narration.setToolTip("\n".join(lines))
        self.narration.show()
        more = self._step + 1 < len(self._steps)
        self.step_label.setText(f"Step {self._step + 1} of {STORY_STEPS}")
        self.next_step_button.setEnabled(more)
        self.play_button.setEnabled(more and not self._play.isActive())
        self.story_bar.show()

    def story(self) -> str:
        """The narration up to the step on screen, as plain text (tests read it)."""
        return "\n".join(self.story_lines)


class EventLog(QTableWidget):
    """The restoration event log: one line per step, in one column. A table, not a QListWidget,
    so that every tool reading item models (``columnCount()`` with no argument) can read it."""

    currentRowChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(0, 1, parent)
        self.horizontalHeader().hide()
        self.verticalHeader().hide()
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.setWordWrap(True)
        self.setShowGrid(False)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.currentCellChanged.connect(lambda row, _col, _prev_row, _prev_col: self.currentRowChanged.emit(row))

    def clear(self) -> None:
        self.setRowCount(0)

    def addItem(self, item: QTableWidgetItem) -> None:  # noqa: N802 (as QListWidget's)
        row = self.rowCount()
        self.insertRow(row)
        self.setItem(row, 0, item)

    def count(self) -> int:
        return self.rowCount()

    def item(self, row: int, column: int = 0):  # noqa: D102 — QTableWidget's item(), the list's own call
        return super().item(row, column)
