"""The import direction ui -> services -> core, checked two ways: statically over the source,
and by watching what a real import of the core and the headless CLI loads."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "workbench"
HEAVY = ("PySide6", "shiboken6", "pyqtgraph", "litellm")


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules_in(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


def test_core_imports_no_qt_no_litellm_and_nothing_outward():
    for path in modules_in("core"):
        bad = {m for m in imports_of(path)
               if m.split(".")[0] in HEAVY or m.startswith(("workbench.services", "workbench.ui"))}
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


def test_services_use_qtcore_at_most():
    for path in modules_in("services"):
        bad = {m for m in imports_of(path)
               if m.startswith(("PySide6.QtWidgets", "PySide6.QtGui", "pyqtgraph", "workbench.ui"))}
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


def test_litellm_is_imported_only_by_the_gateway():
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "services" / "llm" / "gateway.py":
            continue
        assert not {m for m in imports_of(path) if m.split(".")[0] == "litellm"}, path


def test_commands_import_only_the_standard_library_at_module_level():
    # Heavy imports happen inside run(), so ``rwb --help`` and Qt-free commands stay light.
    for path in sorted((PACKAGE / "commands").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for name in names:
                    assert name.split(".")[0] not in HEAVY, f"{path.name} imports {name} at module level"


def loaded_heavy_modules(code: str) -> list[str]:
    probe = code + (
        "\nimport sys, json\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_whole_core_loads_no_qt_and_no_litellm():
    code = (
        "import importlib, pkgutil, workbench.core\n"
        "for m in pkgutil.walk_packages(workbench.core.__path__, 'workbench.core.'):\n"
        "    importlib.import_module(m.name)\n"
    )
    assert loaded_heavy_modules(code) == []


def test_cli_classify_and_project_commands_load_no_qt_and_no_litellm(tmp_path):
    rcp = tmp_path / "rcp.json"
    rcp.write_text(json.dumps({
        "clusters": [{"name": "a", "agents": ["a1", "a2"]}, {"name": "c", "agents": ["c1", "c2"]}],
        "artifacts": [{"id": "w1", "author": "a1", "votes": {"a2": 1, "c1": 1, "c2": 0}}],
    }))
    project = tmp_path / "p.rwb"
    code = (
        "import contextlib, io\n"
        "from workbench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['classify', 'rcp', {str(rcp)!r}]) == 0\n"
        f"    assert main(['new', {str(project)!r}]) == 0\n"
        f"    assert main(['info', {str(project)!r}]) == 0\n"
        f"    assert main(['echo', 'marker']) == 0\n"
    )
    assert loaded_heavy_modules(code) == []


def test_a_simulated_run_from_the_cli_loads_no_qt_and_no_litellm(tmp_path):
    sample = REPO / "sample_runs" / "rcp-sim.json"
    code = (
        "import contextlib, io\n"
        "from workbench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['run', {str(sample)!r}, '--project', {str(tmp_path / 'p.rwb')!r}, '--quiet']) == 0\n"
    )
    assert loaded_heavy_modules(code) == []
