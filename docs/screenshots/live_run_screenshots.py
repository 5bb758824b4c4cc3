"""Take the Live Run screenshots: a 1280×720 main window (a projector's) on the demo project.

    QT_QPA_PLATFORM=offscreen .venv/bin/python docs/screenshots/live_run_screenshots.py [OUT_DIR]

- live-run.png: a simulated RCP run in progress (calls in flight, the phase strip, the progress
  bar), with a finished vote call selected: its fenced request beside the timeline;
- live-run-escalation.png: a contested CONS run waiting for its conductor: the conflict, each
  side's rationales, and the decision form (override, with a reason);
- live-run-after.png, live-run-config.png: the finished run, and the Configure tab.

Offline: every agent is on the simulated panel, slowed down so the run can be seen going.
Settings go to a temporary folder: yours are not touched. OUT_DIR defaults to this folder.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))


def main(out: Path) -> int:
    from PySide6.QtCore import QSettings

    from workbench.core.project.demo import build_demo
    from workbench.core.runs.templates import TEMPLATES
    from workbench.services.project_model import ProjectModel
    from workbench.services.runs.agents import AgentRouter
    from workbench.ui.app import create_application
    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import AppSettings

    tmp = Path(tempfile.mkdtemp(prefix="rwb-live-shots-"))
    app = create_application()
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "settings"))

    def pump(seconds: float, until=lambda: False) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not until():
            app.processEvents()
            time.sleep(0.01)

    simulate = AgentRouter._simulate

    def slowly(self, call, name):  # the simulated panel answers at once: slow it to watch it go
        time.sleep(1.2)
        return simulate(self, call, name)

    AgentRouter._simulate = slowly
    window = MainWindow(ProjectModel(), AppSettings())
    window.persist_layout = False
    window.resize(1280, 720)
    window.show()
    window.open_path(build_demo(tmp / "demo.rwb"))
    pump(20, lambda: window.model.store is not None and window.reads_idle())
    panel = window.panels["liveRunPanel"]

    # A run going: a vote call that has ended is selected while others are in flight.
    doc = TEMPLATES["rcp-advocate-critic"].run_config()
    panel.source._new(doc)
    pump(10, lambda: panel.editor.valid)
    panel.tabs.setCurrentWidget(panel.editor)
    pump(0.5)
    window.grab().save(str(out / "live-run-config.png"))
    panel.start_button.click()
    pump(30, lambda: any(r["id"] is not None for r in panel.timeline.rows if r["purpose"] == "vote"))
    vote = next(r for r in panel.timeline.rows if r["purpose"] == "vote" and r["id"] is not None)
    panel.timeline.select(vote["id"])
    panel.timeline._follow = True
    pump(1.0, lambda: panel.call_view.call_id == vote["id"])
    window.grab().save(str(out / "live-run.png"))
    pump(60, lambda: not window.runs.running)
    pump(20, window.reads_idle)
    pump(1.0)
    window.grab().save(str(out / "live-run-after.png"))

    # A contested CONS question waiting for its conductor.
    AgentRouter._simulate = simulate

    def voters(prefix: str, stance: float, n: int) -> list[dict]:
        return [{"id": f"{prefix}{i}", "provider": "sim", "persona": f"Reviewer {prefix}{i}.",
                 "params": {"stance": stance, "strictness": 0.2, "sycophancy": 0.0}} for i in range(1, n + 1)]

    panel.source._new({"protocol": "cons", "label": "Caching strategy (contested)", "seed": 0,
                       "max_challenge_rounds": 0,
                       "query": "Which caching strategy should the API gateway use for product data: "
                                "write-through or cache-aside with a time limit?",
                       "options": ["Write-through", "Cache-aside with TTL"], "providers": {"sim": {"model": "sim"}},
                       "clusters": [{"name": "panel", "agents": voters("w", 0.95, 3) + voters("c", 0.05, 2)}]})
    pump(10, lambda: panel.editor.valid)
    panel.start_button.click()
    form = panel.decision_form
    pump(30, lambda: form.isVisible() and form.view is not None)
    form.override_radio.setChecked(True)
    other = next(o for o in form.view.options if o != form.view.leading_option)
    form.option_combo.setCurrentText(other)
    form.reason.setText("Ops can run only the simpler one this quarter; revisit in Q3.")
    pump(0.5)
    window.grab().save(str(out / "live-run-escalation.png"))
    form.decide_button.click()
    pump(30, lambda: not window.runs.running)
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE))
