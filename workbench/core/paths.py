"""Where the workbench finds the files it ships and keeps the files it makes. One place, so a
checkout and an installed package answer the same way, and the CLI and the GUI agree.

Shipped, read-only: the template and scenario banks, fonts and icons (``resources/``), the
sample run configurations and projects (``sample_runs/``) and the protocol notes
(``docs/protocols.md``). In a checkout (and an editable install) they are the repository's
top-level folders; a built wheel carries them inside the package, under ``workbench/_data/``
(``setup.py`` maps them there).

Made by the program: the demo project and the GUI's settings (recent files, layout) live in the
platform's application data folder, the one ``QStandardPaths.AppDataLocation`` names for the
app. It is computed here without Qt, so ``rwb`` commands never load it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
# The wheel's copy of the shipped folders; absent in a checkout.
SHIPPED = PACKAGE / "_data"
REPO_ROOT = PACKAGE.parent

# The QApplication's organisation and application names (ui/app.py sets both): Qt derives the
# data folder from them, so they are defined once, here.
ORGANIZATION = "Resonance Workbench"
APPLICATION = "Resonance Workbench"


def _shipped(name: str, repo_name: str) -> Path:
    inside = SHIPPED / name
    return inside if inside.is_dir() else REPO_ROOT / repo_name


def resources_dir() -> Path:
    """The shipped ``resources/`` folder."""
    return _shipped("resources", "resources")


def samples_dir() -> Path:
    """The shipped ``sample_runs/`` folder (run configurations and sample projects)."""
    return _shipped("samples", "sample_runs")


def docs_dir() -> Path:
    """The shipped documentation the GUI shows (``docs/protocols.md``)."""
    return _shipped("docs", "docs")


def app_data_dir() -> Path:
    """The application's data folder: ``$RWB_DATA_DIR`` when set, else the folder
    ``QStandardPaths.writableLocation(AppDataLocation)`` gives for the workbench, by Qt's rule:

    - Linux and other Unix: ``$XDG_DATA_HOME`` (``~/.local/share`` when unset or relative)
      ``/Resonance Workbench/Resonance Workbench``
    - macOS: ``~/Library/Application Support/Resonance Workbench/Resonance Workbench``
    - Windows: ``%APPDATA%\\Resonance Workbench\\Resonance Workbench``

    The folder is not created here."""
    override = os.environ.get("RWB_DATA_DIR")
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:  # a relative $XDG_DATA_HOME is ignored, as the XDG spec (and Qt) say
        xdg = os.environ.get("XDG_DATA_HOME", "")
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / ORGANIZATION / APPLICATION


def settings_file() -> Path:
    """The GUI's settings (recent files, window layout, theme, zoom), an INI file."""
    return app_data_dir() / "settings.ini"


__all__ = ["APPLICATION", "ORGANIZATION", "app_data_dir", "docs_dir", "resources_dir", "samples_dir",
           "settings_file"]
