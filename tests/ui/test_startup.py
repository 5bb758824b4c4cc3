"""A real launch: the window shows, and nothing heavy is imported on the way.

The time itself is measured by bench/startup.py (a benchmark, not a timed test); this test
guards what makes it fast: litellm, pyqtgraph, mcp, numpy and scipy stay unimported until first
needed, and so do pydantic, Jinja2 and sqlite_utils (the option models, the templates and the
writer: 0.25 s of start-up between them, paid when a panel first needs them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_gui_launch_shows_the_window_without_heavy_imports(tmp_path):
    # The plots' import is paid on a worker thread once the window is up (ui/preload.py):
    # the probe records that it was asked for, and keeps it from running, so what is loaded is
    # what the start-up itself imported.
    probe = (
        "import sys, json\n"
        "HEAVY = {'litellm', 'pyqtgraph', 'mcp', 'numpy', 'scipy', 'pydantic', 'jinja2', 'sqlite_utils'}\n"
        "import workbench.ui.main_window as mw\n"
        "asked = []\n"
        "mw.import_in_background = lambda *_then: asked.append(sorted({m.split('.')[0] for m in sys.modules}"
        " & HEAVY))\n"
        "from workbench.cli import main\n"
        "rc = main(['gui', '--exit-when-shown'])\n"
        "print(json.dumps({'rc': rc, 'heavy': sorted({m.split('.')[0] for m in sys.modules}"
        " & HEAVY), 'warm_up_asked': asked[:1]}))\n"
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=60)
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "shown", out.stderr
    assert json.loads(lines[-1]) == {"rc": 0, "heavy": [], "warm_up_asked": [[]]}


def test_gui_opens_a_project_given_on_the_command_line(tmp_path):
    project = tmp_path / "p.rwb"
    subprocess.run([sys.executable, "-m", "workbench", "new", str(project)], cwd=REPO, check=True,
                   capture_output=True)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "workbench", "gui", str(project), "--exit-when-shown"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert out.stdout.split() == ["shown", "opened"]


def test_gui_reports_a_bad_project_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.rwb"
    bad.write_text("hello")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "workbench", "gui", str(bad), "--exit-when-shown"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert "failed: bad.rwb is not a workbench project" in out.stdout
    assert "Traceback" not in out.stderr
