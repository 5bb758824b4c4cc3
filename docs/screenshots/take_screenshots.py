"""Take the docs' screenshots: every panel in use, in both themes, from a real 1280×720 window.

A real window on a 1280×720 screen (a projector's), not an offscreen grab:

    apt-get install -y xvfb libxcb-icccm4 libxcb-keysyms1
    QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1280x720x24" .venv/bin/python docs/screenshots/take_screenshots.py [OUT_DIR]

What it does, offline, in a temporary folder (settings too: yours are not touched):

1. builds the demo project, runs every ``sample_runs/*-sim.json`` configuration and the ARM
   batch with the runner ``rwb run`` uses (the simulated panel: no key, no network), and imports
   one real ARM trace from the shared corpus when it is there (read in place, never copied);
2. opens the main window on it and, for each panel, brings it in front in the workspace that
   shows it (Design, Run, Results or Audit: each fills the 1280×720 window), selects something
   in it through its own widgets,
   waits for its reads to land (the panels read off the GUI thread: every wait polls a
   condition, with a timeout; nothing relies on a fixed sleep), and saves the whole window as
   ``<panel>-light.png`` and ``<panel>-dark.png``:

   - clusters-agents: an agent selected, its editor and persona shown;
   - protocol-editor: RCP's vote template edited in the Protocol Editor (Design), checked, its
     preview (the first vote call a run sends with it) in front; protocol-editor-diff: its diff
     against the default;
   - live-run: the finished RCP run selected, one of its vote calls selected (fenced request);
   - trace-inspector: the imported trace's gamma R2 record selected, its detail shown;
     trace-inspector-compare: the same record's R1 → R2 comparison;
   - quadrant: the two-cluster RCP run's artifacts on the 2×2 quadrant, the what-if beside it;
     quadrant-ground-truth: an RCP run over an arithmetic item (the ground-truth sample), each
     point marked correct or incorrect, the Accuracy tab beside the chart;
     trace-inspector-score: a call of that run whose answer is wrong, the list filtered on
     "Score: ✗ incorrect", its detail's "Against the known answer";
   - studies: the demo's RCP study (Results), its arms, the forest plot of positive consensus
     against the baseline, the runs of its rule-only arm "theta 0.67";
     study-design: the sample RCP study file loaded in the Studies panel's Design page, an arm's
     changes as rows beside its JSON, the estimate per arm and the warnings;
   - drift-convergence: the imported ARM run (the simulated ARM run when no trace was imported);
   - anchors-restoration: the Resonance Echo run's markers, verifications and restorations;
     anchors-checklist: the same agent's conductor's checklist;
   - findings-reports: a finding selected (a challenged one if any) with its votes;
   - findings-cons: the first CONS question's ballots; findings-cons-verdict: a question with an
     escalation, its verdict, conflicts and the human's decision; findings-cons-whatif: the
     consensus threshold moved until a verdict would change;
   - findings-report: the RCP run's report rendered;
   - main-window: the first start's workspace (Results, the Quadrant in front), also
     main-window.png (light);
   - workspace-design, -run, -results, -audit: each workspace as it came, its panel in use as
     above; presenter: presenter mode (F11, the Teach workspace) presenting the Quadrant;
     tour-quadrant, tour-drift, tour-ballot-matrix: the guided tour at those steps, in the
     workspace each goes to;

3. then the Live Run panel's moments: live-run-config (the Configure tab), live-run-running (a
   slowed simulated RCP run in progress, a finished vote call selected while others are in
   flight) and live-run-escalation (a contested CONS question waiting for its conductor, the
   decision form filled in), each in both themes.

It exits 1 with one line on stderr naming every panel (and theme) that never showed its data in
time; the screenshots it could take are still saved. The whole script stays under 3 minutes.
OUT_DIR defaults to this folder.
"""

from __future__ import annotations

import faulthandler
import os
import shutil
import sqlite3
import sys
import tempfile
import time
import traceback
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

SIZE = (1280, 720)
THEMES = ("light", "dark")
BUDGET_S = 165.0  # every wait gives up by then, so the script ends (with its message) under 3 minutes
WAIT_S = 30.0  # the longest any one panel may take to show its data
SETTLE_S = 0.3  # events processed after a panel shows its data, so the window has painted it
SAMPLE_CONFIGS = ("rcp-sim.json", "arm-sim.json", "findings-sim.json", "cons-sim.json", "rcp-echo-sim.json",
                  "batch-arm-sim.json")
ARM_TRACES = Path("/work/shared/corpus/arm-protocol/traces")
PREFERRED_TRACE = "arm-v0.9-q201-CGG-roles-1782437641004.json"  # gamma changes its mind from R1 to R2
SLOW_CALL_S = 1.2  # the simulated panel slowed down so a run in progress can be seen going
# Each workspace shown with the panel (and its driver) a person works in there; Teach presents
# the Quadrant in presenter mode.
WORKSPACE_SHOTS = (("design", "clustersPanel", "clusters"), ("run", "liveRunPanel", "live_run"),
                   ("results", "quadrantPanel", "quadrant"), ("audit", "traceInspectorPanel", "trace_inspector"))

START = time.monotonic()
END = START + BUDGET_S


def log(text: str) -> None:
    print(f"[{time.monotonic() - START:5.1f} s] {text}", flush=True)


class Failure(Exception):
    """A panel (or the project it needs) never showed what it should: one line."""


# ----- the project -------------------------------------------------------------------------------
@dataclass
class Project:
    path: Path
    runs: dict[str, str] = field(default_factory=dict)  # sample config name -> run id
    imported_run: str | None = None  # the ARM trace imported from the corpus
    imported_file: str | None = None
    trace: int | None = None  # the trace shown in the Trace Inspector
    echo_run: str | None = None
    scored_run: str | None = None  # an RCP run over a question with a known answer (SPEC §8)
    wrong_call: int | None = None  # a call of it that wrote an incorrect artifact


def build_project(tmp: Path) -> Project:
    """The demo project with a run of every protocol, and one real ARM trace imported."""
    from workbench.core.project.demo import build_demo
    from workbench.core.project.store import Store
    from workbench.core.runs.batch import expand_batch, is_batch
    from workbench.core.runs.config import parse_run_config, read_config_file
    from workbench.services.runs.batches import create_batch
    from workbench.services.runs.preflight import preflight
    from workbench.services.runs.runner import Runner

    project = Project(build_demo(tmp / "demo.rwb"))
    store = Store.open(project.path)
    try:
        for name in SAMPLE_CONFIGS:  # as `rwb run CONFIG --project FILE` runs them
            data = read_config_file(REPO / "sample_runs" / name)
            if is_batch(data):
                _, planned = expand_batch(data)
                preflight(*(run.config for run in planned))
                _, ids = create_batch(store, data, Runner(store))
            else:
                cfg = parse_run_config(data)
                preflight(cfg)
                ids = [Runner(store).create(cfg)]
            for run_id in ids:
                summary = Runner(store).execute(run_id)
                if summary.get("status") not in ("completed", "degraded"):
                    raise Failure(f"the sample run {name} ended {summary.get('status')}: {summary.get('error')}")
            project.runs[name] = ids[0]
        from workbench.services.samples.build import populate_demo

        populate_demo(store)  # every sample project's runs, as `make run`'s demo holds them
        from workbench.core.project import _sql

        imported = _sql.query(store, "SELECT id FROM runs WHERE source = 'import' LIMIT 1")
        if imported:
            project.imported_run, project.imported_file = imported[0]["id"], PREFERRED_TRACE
        traces = sorted(ARM_TRACES.glob("*.json")) if ARM_TRACES.is_dir() and not imported else []
        traces.sort(key=lambda p: p.name != PREFERRED_TRACE)
        for path in traces[:3]:  # the preferred one, or the next that imports
            from workbench.core.errors import InputError
            from workbench.core.project.arm_import import import_arm_file

            try:
                result = import_arm_file(store, path)
            except InputError as exc:
                log(f"not imported: {path.name}: {exc}")
                continue
            project.imported_run, project.imported_file = result.run_id, path.name
            break
    finally:
        store.close_connection()

    with closing(sqlite3.connect(f"file:{project.path}?mode=ro", uri=True)) as db:
        arm = project.imported_run or project.runs["arm-sim.json"]
        row = db.execute("SELECT id FROM traces WHERE run_id = ? ORDER BY (round_no = 2 AND role = 'gamma') DESC, "
                         "round_no DESC, id LIMIT 1", (arm,)).fetchone()
        project.trace = row[0] if row else None
        # An RCP run whose artifacts were scored (the ground-truth sample's first), and a call of
        # it with a wrong answer.
        row = db.execute("SELECT a.run_id, a.call_id FROM artifacts a JOIN runs r ON r.id = a.run_id "
                         "WHERE r.protocol = 'rcp' AND a.score = 'incorrect' AND a.call_id IS NOT NULL "
                         "ORDER BY r.id NOT LIKE 'ground-truth%', r.rowid, a.id LIMIT 1").fetchone()
        if row:
            project.scored_run, project.wrong_call = row
    project.echo_run = project.runs["rcp-echo-sim.json"]
    return project


# ----- the window --------------------------------------------------------------------------------
class Shooter:
    def __init__(self, out: Path, tmp: Path, project: Project):
        from PySide6.QtCore import QSettings

        from workbench.services.project_model import ProjectModel
        from workbench.ui.app import create_application
        from workbench.ui.main_window import MainWindow
        from workbench.ui.settings import AppSettings

        self.out, self.project = out, project
        self.app = create_application()
        for fmt in (QSettings.Format.IniFormat, QSettings.Format.NativeFormat):
            for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
                QSettings.setPath(fmt, scope, str(tmp / "settings"))
        self.window = MainWindow(ProjectModel(), AppSettings())
        self.window.persist_layout = False
        screen = self.app.primaryScreen().geometry()
        if (screen.width(), screen.height()) != SIZE:
            log(f"warning: the screen is {screen.width()}×{screen.height()}, not {SIZE[0]}×{SIZE[1]}")
        self.window.setGeometry(screen)
        self.window.show()
        self.failures: list[str] = []
        self.saved: list[str] = []
        self.state: dict[str, object] = {}  # what each panel's driver has already asked for
        self.focused: str | None = None  # the dock given the room

    # ----- waiting ---------------------------------------------------------------------------
    def pump(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.app.processEvents()
            time.sleep(0.01)

    def wait(self, until, timeout: float = WAIT_S) -> bool:
        """Process events until ``until()`` holds (True), or the timeout or the budget ends (False)."""
        deadline = min(time.monotonic() + timeout, END)
        while True:
            self.app.processEvents()
            if until():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def idle(self) -> bool:
        return self.window.reads_idle()

    def settle(self) -> None:
        self.wait(self.idle, 10)
        self.pump(SETTLE_S)

    # ----- shooting --------------------------------------------------------------------------
    def save(self, name: str) -> None:
        self.window.raise_()
        self.settle()
        shot = self.window.screen().grabWindow(0)
        if shot.isNull():
            raise Failure(f"{name}: the screen could not be grabbed")
        shot.save(str(self.out / name))
        self.saved.append(name)
        log(f"saved {name} ({shot.width()}×{shot.height()})")

    def guarded(self, what: str, step) -> None:
        """Run ``step``; an error in it (a panel raising, say) is a failure of ``what``, and the
        script goes on with the next step."""
        try:
            step()
        except Failure as exc:
            self.fail(f"{what}: {exc}")
        except Exception as exc:  # noqa: BLE001 (whatever a panel raises is reported, in one line)
            traceback.print_exc(file=sys.stdout)
            self.fail(f"{what}: {type(exc).__name__}: {' '.join(str(exc).split())}")

    def fail(self, what: str) -> None:
        self.failures.append(what)
        log(f"FAILED: {what}")

    def raise_dock(self, name: str) -> None:
        dock = self.window.docks[name]
        dock.show()
        dock.raise_()

    def focus(self, name: str | None) -> None:
        """The panel in front in the workspace that shows it (Design, Run, Results or Audit, each
        filling the 1280×720 window), as a link or the workspace bar brings it; None: Results."""
        window = self.window
        if name is None:
            window.workspaces.switch("results")
            window.reset_layout()
            window.docks["quadrantPanel"].raise_()
        else:
            window.show_panel(name)
        self.pump(0.05)
        self.app.processEvents()

    def themes(self) -> tuple[str, ...]:
        """Both themes, the current one first (one switch per shot, not two)."""
        first = self.window.theme_name
        return (first, *[t for t in THEMES if t != first])

    def shoot_panel(self, slug: str, dock: str, driver) -> None:
        """Focus the dock, drive its panel until it shows what it should, and save the window in
        each theme."""
        if self.focused != dock:
            self.focus(dock)
            self.focused = dock
        panel = self.window.panels[dock]
        why: list[str] = ["it never showed its data"]

        def ready() -> bool:
            try:
                done = driver(panel)
            except Failure as exc:  # the panel says what it lacks; keep waiting
                why[0] = str(exc)
                return False
            except Exception as exc:  # a panel changed under us: say what, never hang
                why[0] = f"{type(exc).__name__}: {exc}"
                return False
            return bool(done) and self.idle()

        for theme in self.themes():
            if theme != self.window.theme_name:
                self.window.set_theme(theme)
            if not self.wait(ready):
                self.fail(f"{slug} ({theme}): {why[0]}")
            self.save(f"{slug}-{theme}.png")

    # ----- the panels ------------------------------------------------------------------------
    def once(self, key: str, action) -> None:
        """Do ``action`` once per key (selections are kept across the themes)."""
        if not self.state.get(key):
            self.state[key] = True
            action()

    @staticmethod
    def _row_ids(table) -> list:
        return [table.model.row(table.proxy.mapToSource(table.proxy.index(r, 0)).row())["id"]
                for r in range(table.proxy.rowCount())]

    def clusters(self, panel) -> bool:
        agents = self._row_ids(panel.agents)
        if not agents:
            raise Failure("no agent listed")
        want = self.state.setdefault("agent", agents[min(1, len(agents) - 1)])
        selected = panel.selected_agent()
        if selected is None or selected["id"] != want:
            panel.select_agent(want)
            return False
        return panel.persona.agent_id == want

    def live_run(self, panel) -> bool:
        run_id = self.project.runs["rcp-sim.json"]
        panel.tabs.setCurrentIndex(0)
        run = panel.selected_run()
        if run is None or run["id"] != run_id:
            if run_id not in self._row_ids(panel.runs_table):
                raise Failure(f"the run {run_id} is not listed")
            panel.select_run(run_id)
            return False
        votes = [r for r in panel.timeline.rows if r["purpose"] == "vote" and r["id"] is not None]
        if not votes:
            raise Failure("the selected run shows no vote call")
        want = self.state.setdefault("call", votes[len(votes) // 2]["id"])
        selected = panel.timeline.selected()
        if selected is None or selected["id"] != want:
            panel.timeline.select(want)
            return False
        return panel.call_view.call_id == want and panel.detail_tabs.currentWidget() is panel.call_view

    def trace_inspector(self, panel, tab: str = "fields") -> bool:
        from workbench.core.project.refs import RecordRef

        trace = self.project.trace
        if trace is None:
            raise Failure("the project has no ARM trace")
        key = ("trace", trace)
        run = self.project.imported_run or self.project.runs["arm-sim.json"]
        self.once("revealed", lambda: self.window.model.reveal(RecordRef("trace", trace, run)))
        d = panel.detail.detail
        if d is None or (d.kind, d.id) != key:
            raise Failure(f"the detail of trace {trace} never showed")
        rows = panel.list.view.selectionModel().selectedRows()
        if not rows or (panel.list.model.row(rows[0].row())["_kind"], panel.list.model.row(rows[0].row())["id"]) != key:
            panel.select(*key)
            raise Failure(f"trace {trace} is not selected in the list")
        tabs = panel.detail.tabs
        index = getattr(panel.detail, "compare_index", 0) if tab == "compare" else 0
        if tabs.currentIndex() != index:
            tabs.setCurrentIndex(index)
        return True

    def trace_compare(self, panel) -> bool:
        return self.trace_inspector(panel, "compare")

    def _choose(self, combo, data, key: str) -> bool:
        """Choose ``data`` in ``combo`` as a person does (activated); False until it is offered."""
        index = combo.findData(data)
        if index < 0:
            return False
        if combo.currentData() != data or not self.state.get(key):
            self.state[key] = True
            combo.setCurrentIndex(index)
            combo.activated.emit(index)
        return True

    def quadrant(self, panel) -> bool:
        run_id = self.project.runs["rcp-sim.json"]
        if not self._choose(panel.run_combo, run_id, "quadrant-run"):
            raise Failure(f"the RCP run {run_id} is not offered")
        if panel.data is None or panel.data.run_id != run_id:
            raise Failure("the run's votes were never read")
        if panel.stack.currentWidget() is panel.placeholder or not len(panel.points_rows):
            raise Failure("no point drawn")
        return True

    def quadrant_truth(self, panel) -> bool:
        run_id = self.project.scored_run
        if run_id is None:
            raise Failure("the project has no RCP run over a question with a known answer")
        if not self._choose(panel.run_combo, run_id, "quadrant-truth-run"):
            raise Failure(f"the scored RCP run {run_id} is not offered")
        if panel.data is None or panel.data.run_id != run_id or not len(panel.points_rows):
            raise Failure("the scored run's points were never drawn")
        if panel.accuracy is None or panel.tabs.currentWidget() is not panel.accuracy_table:
            raise Failure("the Accuracy tab never showed")
        return True

    def trace_score(self, panel) -> bool:
        from workbench.core.project.refs import RecordRef

        call, run = self.project.wrong_call, self.project.scored_run
        if call is None:
            raise Failure("the project has no scored call")
        self.once("score-revealed", lambda: self.window.model.reveal(RecordRef("call", call, run)))
        self.once("score-filtered", lambda: panel.filter_bar.choose("score", "incorrect"))
        d = panel.detail.detail
        if d is None or (d.kind, d.id) != ("call", call) or "score" not in panel.detail.sections:
            raise Failure(f"the detail of call {call} never showed its score")
        if panel.filters.score != "incorrect" or ("call", call) not in panel.visible_keys():
            raise Failure("the list was never filtered on the score")
        if panel.detail.tabs.currentIndex() != 0:
            panel.detail.tabs.setCurrentIndex(0)  # the fields, where "Against the known answer" is
        return True

    def study(self, panel) -> bool:
        """The demo's RCP study (theta, strictness, cluster size), an arm chosen, its forest plot drawn."""
        self.once("study-results-page", lambda: panel.pages.setCurrentIndex(0))
        combo = panel.study_combo
        ids = [combo.itemData(i) for i in range(combo.count()) if combo.itemText(i).startswith("RCP")]
        if not ids or not self._choose(combo, ids[0], "study-chosen"):
            raise Failure("the demo's RCP study is not offered")
        if panel.view is None or panel.view["study"] != ids[0] or panel.forest is None or not panel.forest.rows:
            raise Failure("the study's comparisons were never drawn")
        self.once("study-arm", lambda: panel.select_arm("theta 0.67"))
        return True

    def study_design(self, panel) -> bool:
        """A study being designed: the sample RCP study file loaded in the Design page, its arm
        "stricter critics" chosen (its changes as rows, its JSON beside), checked: the estimate
        per arm (the rule-only theta arms at 0 calls) and the guardrail warnings."""
        design = panel.design
        self.once("design-page", lambda: panel.pages.setCurrentWidget(design))
        self.once("design-loaded", lambda: design.load_file(REPO / "sample_runs" / "study-rcp-theta.json"))
        self.once("design-arm", lambda: design.arms_table.selectRow(3))
        if design.pending or design.check is None:
            raise Failure("the design was never checked")
        if "error" in design.check:
            raise Failure(f"the sample study does not check: {design.check['error']}")
        return True

    def drift(self, panel) -> bool:
        run_id = self.project.imported_run or self.project.runs["arm-sim.json"]
        if panel.mode != "run":
            self.once("drift-mode", lambda: panel.set_mode("run"))
        if not self._choose(panel.run_combo, run_id, "drift-run"):
            raise Failure(f"the ARM run {run_id} is not offered")
        if panel.run is None or panel.run.run_id != run_id:
            raise Failure("the ARM run's drift was never read")
        if panel.pages.currentWidget() is not panel.run_page or panel.run_figure is None:
            raise Failure("no drift figure drawn")
        return True

    def anchors(self, panel) -> bool:
        """Summary panel today, richer soon: choose the echo run in any picker that offers it, select
        the first row of any list that has rows, and want some data shown."""
        from PySide6.QtCore import QItemSelectionModel
        from PySide6.QtWidgets import QAbstractItemView, QComboBox, QLabel

        if panel.refresh_count == 0:
            raise Failure("never read")
        for i, combo in enumerate(panel.findChildren(QComboBox)):
            if combo.findData(self.project.echo_run) >= 0:
                self._choose(combo, self.project.echo_run, f"anchors-combo-{i}")
        rows = 0
        for view in panel.findChildren(QAbstractItemView):
            model = view.model()
            if model is None or not view.isVisible() or model.rowCount() == 0:
                continue
            rows += model.rowCount()
            selection = view.selectionModel()
            if selection is not None and not selection.hasSelection():
                flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
                selection.select(model.index(0, 0), flags)
        summary = panel.findChild(QLabel, "panelCounts")
        counted = summary is not None and summary.isVisible() and bool(summary.text())
        if not rows and not counted:
            raise Failure("no marker, verification or restoration shown")
        return True

    def findings(self, panel) -> bool:
        from PySide6.QtWidgets import QSplitter

        if panel.tabs.currentIndex() != 0:
            panel.tabs.setCurrentIndex(0)
            return False
        model = panel.findings.model
        rows = [model.row(r) for r in range(model.rowCount())]
        if not rows:
            raise Failure("no finding listed")
        pick = next((r for r in rows if r.get("status") == "challenged"), rows[0])
        want = self.state.setdefault("finding", pick["id"])
        selected = panel.findings.view.selectionModel().selectedRows()
        if not selected or model.row(selected[0].row())["id"] != want:
            panel.select_finding(want)
            return False
        if panel.history.model.rowCount() == 0 or want not in panel.history_label.text():
            raise Failure(f"the votes on {want} never showed")
        # The list is short: drag its splitter up, as a person would, so the votes are in view.
        split = panel.findings.parentWidget()
        if isinstance(split, QSplitter) and split.indexOf(panel.findings) == 0 and not self.state.get("split"):
            self.state["split"] = True
            rows = panel.findings.view
            want_px = rows.horizontalHeader().height() + rows.rowHeight(0) * (model.rowCount() + 1) \
                + (rows.y() if rows.parentWidget() is panel.findings else 0) + 8
            total = sum(split.sizes())
            split.setSizes([min(want_px, total // 2), total - min(want_px, total // 2)])
            return False
        return True

    def cons(self, panel) -> bool:
        """The CONS tab: the first question, its ballots in the matrix and its verdict."""
        view = panel.cons
        if panel.tabs.currentWidget() is not view:
            panel.tabs.setCurrentWidget(view)
            return False
        model = view.questions.model
        if model.rowCount() == 0:
            raise Failure("no CONS question listed")
        if not view.questions.view.selectionModel().selectedRows():
            view.select_question(model.row(0)["id"])
            return False
        if view.matrix.rowCount() == 0:
            raise Failure("the voting matrix shows no ballot")
        return True

    def cons_verdict(self, panel) -> bool:
        """The CONS verdict sub-tab of a question with an escalation (decided, if any was)."""
        if not self.cons(panel):
            return False
        view = panel.cons
        rows = [view.questions.model.row(r) for r in range(view.questions.model.rowCount())]
        pick = next((r for r in rows if r.get("escalations_label", "—") != "—"), rows[0])
        if view._selected != pick["id"]:
            view.select_question(pick["id"])
            return False
        view.tabs.setCurrentWidget(view.verdict)
        return bool(view.verdict.toPlainText())

    def cons_whatif(self, panel) -> bool:
        """The thresholds what-if with the consensus threshold moved until a verdict would change."""
        if not self.cons(panel):
            return False
        view = panel.cons
        view.tabs.setCurrentWidget(view.whatif)
        whatif = view.whatif
        pending = self.state.get("whatif_pending")
        if pending is not None and view.whatif_count <= pending:
            return False  # the verdicts for the last value are still being computed
        if whatif.changed_rows():
            return True
        # Moves a person would try: the consensus threshold, then more voters than the question had.
        tried = self.state.setdefault("whatif", [(whatif.consensus.set_value, v) for v in (0.95, 0.9, 0.6, 0.5)]
                                      + [(whatif.min_voters.setValue, 6)])
        if not tried:
            raise Failure("no threshold moved changes a verdict")
        self.state["whatif_pending"] = view.whatif_count
        move, value = tried.pop(0)
        move(value)
        return False

    def checklist(self, panel) -> bool:
        """The conductor's checklist tab of the Echo run's first agent."""
        if not self.anchors(panel):
            return False
        panel.log_tabs.setCurrentWidget(panel.checklist)
        return panel.checklist.topLevelItemCount() > 0

    def reports(self, panel) -> bool:
        """The Reports tab on the RCP run of the samples: its report rendered."""
        reports = panel.reports
        if panel.tabs.currentWidget() is not panel.reports_slot:
            panel.tabs.setCurrentWidget(panel.reports_slot)
            return False
        runs = reports.runs
        if runs.count() == 0:
            raise Failure("no run listed for a report")
        want = next((runs.itemData(i) for i in range(runs.count()) if str(runs.itemData(i)).startswith("rcp-")),
                    runs.itemData(0))
        if runs.currentData() != want:
            runs.setCurrentIndex(runs.findData(want))
            return False
        if reports.view.run_id != want or not reports.view.markdown:
            raise Failure(f"the report of {want} never showed")
        return True

    def protocol_editor(self, panel, tab: str = "Preview") -> bool:
        """RCP's vote template edited (its verdict rule made stricter), checked, its preview (the
        first vote call a run sends with it, from the sample RCP run) or its diff in front."""
        from workbench.core import registry

        if panel.view is None:
            raise Failure("the editor never read the project")
        if not self._choose(panel.protocol_combo, "rcp", "editor-protocol") or \
                not self._choose(panel.step_combo, "vote", "editor-step"):
            return False
        default = registry.get("rcp").default_text("vote")
        edited = default.replace("Answer YES or NO.", "Answer YES only if every step of its reasoning holds; "
                                                      "otherwise answer NO.")
        if panel.editor.toPlainText() != edited:
            panel.set_text(edited)
            return False
        if panel.checked_text != edited or panel.preview is None or not panel.preview.messages:
            raise Failure("the edited template was never checked and previewed")
        if not panel.name_edit.text():
            panel.name_edit.setText("strict vote")
            panel._update_save()
        titles = [panel.tabs.tabText(i) for i in range(panel.tabs.count())]
        panel.tabs.setCurrentIndex(titles.index(tab))
        return True

    def protocol_editor_diff(self, panel) -> bool:
        return self.protocol_editor(panel, "Diff")

    PANELS = (("clusters-agents", "clustersPanel", "clusters"),
              ("protocol-editor", "protocolEditorPanel", "protocol_editor"),
              ("protocol-editor-diff", "protocolEditorPanel", "protocol_editor_diff"),
              ("live-run", "liveRunPanel", "live_run"),
              # (before the trace: its reveal then clears the score filter, as the later shots want)
              ("trace-inspector-score", "traceInspectorPanel", "trace_score"),
              ("trace-inspector", "traceInspectorPanel", "trace_inspector"),
              ("trace-inspector-compare", "traceInspectorPanel", "trace_compare"),
              ("quadrant", "quadrantPanel", "quadrant"),
              ("quadrant-ground-truth", "quadrantPanel", "quadrant_truth"),
              ("drift-convergence", "driftPanel", "drift"),
              ("anchors-restoration", "anchorsPanel", "anchors"),
              ("findings-reports", "findingsPanel", "findings"),
              ("anchors-checklist", "anchorsPanel", "checklist"),
              ("findings-cons", "findingsPanel", "cons"),
              ("findings-cons-verdict", "findingsPanel", "cons_verdict"),
              ("findings-cons-whatif", "findingsPanel", "cons_whatif"),
              ("findings-report", "findingsPanel", "reports"),
              ("studies", "studyPanel", "study"),
              ("study-design", "studyPanel", "study_design"))

    # ----- the whole run ---------------------------------------------------------------------
    def open_project(self) -> None:
        self.window.open_path(self.project.path)
        if not self.wait(lambda: self.window.model.store is not None and self.idle()):
            raise Failure(f"the project {self.project.path.name} never opened")

    def panels_in_both_themes(self) -> None:
        self.window.set_theme(THEMES[0])
        for slug, dock, driver in self.PANELS:
            self.guarded(slug, lambda: self.shoot_panel(slug, dock, getattr(self, driver)))
        self.guarded("main-window", self.main_window)

    def workspaces_in_both_themes(self) -> None:
        """Every workspace as a person works in it (workspace-<key>-<theme>.png), presenter mode
        (presenter-<theme>.png: Teach, presenting the Quadrant) and the tour at three of its
        steps (tour-<step>-<theme>.png), each workspace as it came (View ▸ Reset Workspace)."""
        for key, dock, driver in WORKSPACE_SHOTS:
            def shoot(key=key, dock=dock, driver=driver) -> None:
                self.window.workspaces.switch(key)
                self.window.reset_layout()
                self.focused = None
                self.shoot_panel(f"workspace-{key}", dock, getattr(self, driver))
            self.guarded(f"workspace-{key}", shoot)
        self.guarded("presenter", self.presenter)
        for step in ("quadrant", "drift", "ballot_matrix"):
            self.guarded(f"tour-{step}", lambda step=step: self.tour(step))

    def presenter(self) -> None:
        window = self.window
        window.workspaces.switch("results")
        window.docks["quadrantPanel"].raise_()
        self.pump(0.05)
        window.toggle_presenter()  # F11: the panel in front, presented
        if not self.wait(lambda: window.presenting and window.workspaces.presented_panel() == "quadrantPanel"):
            raise Failure("presenter mode never showed the Quadrant")
        panel = window.panels["quadrantPanel"]
        if not self.wait(lambda: panel._plot() is not None and panel.stack.currentWidget() is panel._plot()):
            raise Failure("the presented Quadrant drew no chart")
        self.in_both_themes("presenter")
        window.workspaces.leave_presenter()

    def tour(self, key: str) -> None:
        from workbench.ui.tour_steps import STEPS

        window = self.window
        tour = window.menus.show_tour(restart=True)
        tour.show_step(next(i for i, s in enumerate(STEPS) if s.key == key))
        if not self.wait(lambda: not tour._sync_timer.isActive() and tour.target() is not None):
            raise Failure(f"the tour's step {key} showed no target")
        self.in_both_themes(f"tour-{key.replace('_', '-')}")
        tour.leave()

    def main_window(self) -> None:
        self.window.panels["traceInspectorPanel"].detail.tabs.setCurrentIndex(0)
        self.focus(None)  # the first start's workspace (Results), the Quadrant in front
        self.focused = None
        for theme in self.themes():
            if theme != self.window.theme_name:
                self.window.set_theme(theme)
            self.save(f"main-window-{theme}.png")
            if theme == "light":
                self.save("main-window.png")

    def in_both_themes(self, slug: str) -> None:
        for theme in self.themes():
            if theme != self.window.theme_name:
                self.window.set_theme(theme)
            self.save(f"{slug}-{theme}.png")

    def live_run_moments(self) -> None:
        from workbench.core.runs.templates import TEMPLATES
        from workbench.services.runs.agents import AgentRouter

        window = self.window
        panel = window.panels["liveRunPanel"]
        self.focus("liveRunPanel")
        self.focused = "liveRunPanel"

        # The Configure tab, on the RCP template.
        panel.source._new(TEMPLATES["rcp-advocate-critic"].run_config())
        panel.tabs.setCurrentWidget(panel.editor)
        if not self.wait(lambda: panel.editor.valid and self.idle()):
            self.fail("live-run-config: the template's configuration never became valid")
        self.in_both_themes("live-run-config")

        # A run in progress: a vote call that has ended is selected while others are in flight.
        simulate = AgentRouter._simulate

        def slowly(router, call, name):
            time.sleep(SLOW_CALL_S)
            return simulate(router, call, name)

        AgentRouter._simulate = slowly
        try:
            with closing(sqlite3.connect(f"file:{self.project.path}?mode=ro", uri=True)) as db:
                last_call = db.execute("SELECT coalesce(max(id), 0) FROM llm_calls").fetchone()[0]
            panel.start_button.click()

            def ended_votes() -> list[dict]:  # of the new run (the rows of the run shown before may linger)
                return [r for r in panel.timeline.rows
                        if r["purpose"] == "vote" and r["id"] is not None and r["id"] > last_call]

            def vote_ended() -> bool:
                return bool(ended_votes()) and any(r["status"] == "running" for r in panel.timeline.rows)

            if self.wait(vote_ended):
                vote = max(ended_votes(), key=lambda r: r["id"])  # the newest: beside the calls in flight
                panel.timeline.select(vote["id"])
                if not self.wait(lambda: panel.call_view.call_id == vote["id"], 10):
                    self.fail("live-run-running: the selected call's detail never showed")
            else:
                self.fail("live-run-running: no vote call ended while the run was going")
            self.in_both_themes("live-run-running")
        finally:
            AgentRouter._simulate = simulate
        if not self.wait(lambda: not window.runs.running, 60):
            window.runs.cancel()
            self.wait(lambda: not window.runs.running, 20)

        # A contested CONS question waiting for its conductor.
        def voters(prefix: str, stance: float, n: int) -> list[dict]:
            return [{"id": f"{prefix}{i}", "provider": "sim", "persona": f"Reviewer {prefix}{i}.",
                     "params": {"stance": stance, "strictness": 0.2, "sycophancy": 0.0}} for i in range(1, n + 1)]

        panel.source._new({"protocol": "cons", "label": "Caching strategy (contested)", "seed": 0,
                           "max_challenge_rounds": 0,
                           "query": "Which caching strategy should the API gateway use for product data: "
                                    "write-through or cache-aside with a time limit?",
                           "options": ["Write-through", "Cache-aside with TTL"], "providers": {"sim": {"model": "sim"}},
                           "clusters": [{"name": "panel", "agents": voters("w", 0.95, 3) + voters("c", 0.05, 2)}]})
        if not self.wait(lambda: panel.editor.valid, 10):
            self.fail("live-run-escalation: the CONS configuration never became valid")
        panel.start_button.click()
        form = panel.decision_form
        if self.wait(lambda: form.isVisible() and form.view is not None):
            form.override_radio.setChecked(True)
            other = next((o for o in form.view.options if o != form.view.leading_option), None)
            if other is not None:
                form.option_combo.setCurrentText(other)
            form.reason.setText("Ops can run only the simpler one this quarter; revisit in Q3.")
            self.pump(SETTLE_S)
        else:
            self.fail("live-run-escalation: the conductor's decision form never showed")
        self.in_both_themes("live-run-escalation")
        if form.isVisible() and form.decide_button.isEnabled():
            form.decide_button.click()
        if not self.wait(lambda: not window.runs.running, 20):
            window.runs.cancel()
            self.wait(lambda: not window.runs.running, 10)

    def close(self) -> None:
        self.window.close()
        self.app.processEvents()


def main(out: Path) -> int:
    faulthandler.dump_traceback_later(BUDGET_S + 12, exit=True)  # a hang inside Qt still ends the script
    tmp = Path(tempfile.mkdtemp(prefix="rwb-shots-"))
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")  # nothing of the user's is read or written
    os.environ["RWB_DEMO_PATH"] = str(tmp / "demo.rwb")
    os.environ["RWB_DATA_DIR"] = str(tmp / "data")  # settings.ini (layout, recent files) too
    out.mkdir(parents=True, exist_ok=True)
    try:
        project = build_project(tmp)
    except Exception as exc:  # noqa: BLE001 (one line: the project the panels need was not built)
        traceback.print_exc(file=sys.stdout)
        print(f"take_screenshots: the project was not built: {type(exc).__name__}: {' '.join(str(exc).split())}",
              file=sys.stderr)
        return 1
    log(f"project built: {len(project.runs)} sample runs, imported {project.imported_file or 'no ARM trace'}")
    shooter = Shooter(out, tmp, project)
    try:
        shooter.open_project()
        shooter.panels_in_both_themes()
        shooter.workspaces_in_both_themes()
        shooter.guarded("live-run moments", shooter.live_run_moments)
    except Failure as exc:
        shooter.fail(str(exc))
    except Exception as exc:  # noqa: BLE001
        traceback.print_exc(file=sys.stdout)
        shooter.fail(f"{type(exc).__name__}: {' '.join(str(exc).split())}")
    finally:
        try:
            shooter.close()
        except Exception:  # noqa: BLE001 (closing must not hide what failed)
            traceback.print_exc(file=sys.stdout)
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"{len(shooter.saved)} screenshots in {out}")
    if shooter.failures:
        print("take_screenshots: failed: " + "; ".join(shooter.failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE))
