"""The built wheel is a working application on its own: installed into a fresh venv, run from a
folder outside the checkout with a clean environment, ``rwb`` finds its banks, fonts, icons, sample
configurations and demo spec inside the package, and keeps what it makes in the data folder.

The dependencies are not downloaded: the fresh venv sees this environment's site-packages
through a ``.pth`` line, which adds the folder but does not run the ``.pth`` files in it, so the
checkout's editable install (its ``__editable__`` finder) is not picked up; the test checks that
``workbench`` is imported from the fresh venv."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STEP_S = 150  # any one step; each takes seconds on an idle machine
# What setup.py builds the wheel from (a copy, so the build writes nothing into the checkout).
SOURCES = ("pyproject.toml", "setup.py", "README.md", "workbench", "resources", "sample_runs")


def shipped_in_repo() -> dict[str, list[str]]:
    """The files the program reads from the repository's shipped folders, each as the name the
    wheel must hold it under."""
    folders = {"resources": ("resources", ["*.txt", "*.json", "fonts/*.ttf", "fonts/LICENSE-*", "icons/*.svg",
                                           "help/*.md"]),
               "sample_runs": ("samples", ["*.json", "*.jsonl", "*.yaml", "*.yml", "*.rwb"]),
               "docs": ("docs", ["protocols.md"])}
    return {folder: [f"workbench/_data/{inside}/{path.relative_to(REPO / folder).as_posix()}"
                     for pattern in patterns for path in (REPO / folder).glob(pattern)]
            for folder, (inside, patterns) in folders.items()}


def run(cmd: list, *, cwd: Path, env: dict | None = None, timeout: float = STEP_S) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def copy_sources(dest: Path) -> Path:
    dest.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SOURCES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)
    (dest / "docs").mkdir()
    shutil.copy2(REPO / "docs" / "protocols.md", dest / "docs")
    for licence in REPO.glob("LICEN[CS]E*"):
        shutil.copy2(licence, dest / licence.name)
    return dest


def fresh_venv(path: Path, cwd: Path) -> Path:
    """A venv without pip or the workbench; this environment's packages importable after its own."""
    run([sys.executable, "-m", "venv", "--without-pip", path], cwd=cwd)
    python = path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=cwd).stdout.strip()
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    Path(purelib, "rwb-test-dependencies.pth").write_text("".join(f"{p}\n" for p in ours), encoding="utf-8")
    return python


def clean_env(home: Path) -> dict[str, str]:
    keep = ("PATH", "SYSTEMROOT", "TEMP", "TMP", "TMPDIR", "LANG", "LC_ALL")  # Windows needs SYSTEMROOT
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(HOME=str(home), USERPROFILE=str(home), XDG_DATA_HOME=str(home / "data"),
               XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"),
               LITELLM_LOCAL_MODEL_COST_MAP="True", QT_QPA_PLATFORM="offscreen", PYTHONNOUSERSITE="1",
               PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    if not sys.platform.startswith("linux"):  # Qt's data folder there does not follow $HOME
        env["RWB_DATA_DIR"] = str(home / "data" / "rwb")
    return env


@pytest.mark.timeout(300)
def test_the_wheel_installs_into_a_fresh_venv_and_runs_outside_the_checkout(tmp_path):
    if importlib.util.find_spec("venv") is None:
        pytest.skip("this Python has no venv module (Debian: apt-get install python3.11-venv)")
    assert not tmp_path.is_relative_to(REPO), "the temporary folder must be outside the checkout"
    work = tmp_path / "elsewhere"
    work.mkdir()

    # The wheel, built from a copy of the sources, holds every file the program reads.
    source = copy_sources(tmp_path / "source")
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", tmp_path / "dist", source], cwd=work)
    (wheel,) = (tmp_path / "dist").glob("resonance_workbench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, files in shipped_in_repo().items():
        assert files, f"nothing found in {folder}/"
        assert not [f for f in files if f not in names], f"the wheel lacks files of {folder}/"
    assert any(f.endswith(".ttf") for f in shipped_in_repo()["resources"])
    assert "workbench/py.typed" in names and "workbench/cli.py" in names

    # Installed into a fresh venv, it is the workbench that venv imports.
    python = fresh_venv(tmp_path / "venv", work)
    home = tmp_path / "home"
    env = clean_env(home)
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", wheel], cwd=work, env=env)
    venv = (tmp_path / "venv").resolve()
    where = json.loads(run([python, "-c", "import json, workbench; from workbench.core import paths; "
                                          "print(json.dumps([workbench.__file__, str(paths.resources_dir()), "
                                          "str(paths.samples_dir()), str(paths.app_data_dir())]))"],
                           cwd=work, env=env).stdout)
    package, resources, samples, data = (Path(p).resolve() for p in where)
    assert package.is_relative_to(venv), f"workbench was imported from {package}, not the fresh venv"
    assert resources.is_relative_to(venv) and samples.is_relative_to(venv), (resources, samples)
    assert data.is_relative_to(home.resolve()), data

    rwb = venv / ("Scripts/rwb.exe" if os.name == "nt" else "bin/rwb")
    assert run([rwb, "--version"], cwd=work, env=env).stdout.strip()

    # rwb demo builds the demo from the spec inside the package.
    run([rwb, "demo", "--out", "demo.rwb"], cwd=work, env=env)
    info = json.loads(run([rwb, "info", "demo.rwb"], cwd=work, env=env).stdout)
    assert info["counts"]["runs"] > 0 and info["read_only"] is False, info

    # rwb run on a sample configuration taken out of the installed package.
    shutil.copy2(samples / "rcp-sim.json", work / "rcp-sim.json")
    done = run([rwb, "run", "rcp-sim.json", "--project", "study.rwb", "--quiet"], cwd=work, env=env)
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["status"] == "completed", summary

    # rwb gui opens the demo, built into the data folder, and nothing lands beside the command.
    done = run([rwb, "gui", "--demo", "--exit-when-shown"], cwd=work, env=env)
    assert "opened" in done.stdout.split(), done.stdout + done.stderr[-2000:]
    assert (data / "demo.rwb").is_file()
    assert sorted(p.name for p in work.iterdir()) == ["demo.rwb", "rcp-sim.json", "study.rwb"]
