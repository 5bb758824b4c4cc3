"""Where the workbench finds the files it ships: the template and scenario banks, fonts and icons
(``resources/``) and the sample run configurations (``sample_runs/``). One place, so a checkout
and an installed package answer the same way."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def resources_dir() -> Path:
    """The shipped ``resources/`` folder."""
    return REPO_ROOT / "resources"


def samples_dir() -> Path:
    """The shipped ``sample_runs/`` folder (run configurations and sample projects)."""
    return REPO_ROOT / "sample_runs"


__all__ = ["resources_dir", "samples_dir"]
