"""Take the README's screenshots of the whole window, on the demo project, in both themes.

A real window on a 1280×720 screen (a projector's), not an offscreen grab:

    apt-get install -y xvfb libxcb-icccm4 libxcb-keysyms1
    QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1280x720x24" .venv/bin/python docs/screenshots/take_screenshots.py

It builds the demo in a temporary folder, runs its configuration once (the simulated panel:
offline), and saves main-window-light.png, main-window-dark.png and main-window.png (light)
beside this script. Settings go to the temporary folder too: yours are not touched.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))


def main() -> int:
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from workbench.core.project.demo import ensure_demo
    from workbench.services.project_model import ProjectModel
    from workbench.ui.app import create_application
    from workbench.ui.main_window import MainWindow
    from workbench.ui.settings import AppSettings

    tmp = Path(tempfile.mkdtemp(prefix="rwb-shots-"))
    app = create_application()
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "settings"))
    window = MainWindow(ProjectModel(), AppSettings())
    window.persist_layout = False
    screen = app.primaryScreen().geometry()
    window.setGeometry(screen)
    window.show()

    def pump(seconds: float, until=lambda: False) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not until():
            app.processEvents()
            time.sleep(0.01)

    demo = ensure_demo(tmp / "demo.rwb")
    window.open_path(demo)
    pump(20, lambda: window.model.store is not None and window.reads_idle())
    finished: list[dict] = []
    window.runs.finished.connect(finished.append)
    window.start_run()
    pump(60, lambda: bool(finished))
    pump(3 * window.model.POLL_MS / 1000)  # the poll shows the run to every panel
    pump(20, window.reads_idle)
    pump(0.5)
    for name in ("light", "dark"):
        window.set_theme(name)
        pump(0.5)
        shot = window.screen().grabWindow(0)
        shot.save(str(HERE / f"main-window-{name}.png"))
        if name == "light":
            shot.save(str(HERE / "main-window.png"))
        print(f"saved main-window-{name}.png ({shot.width()}×{shot.height()})")
    window.close()
    QApplication.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
