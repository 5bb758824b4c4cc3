"""Files shipped in the repository's ``resources/`` folder (template banks, scenario banks)."""

from __future__ import annotations

from pathlib import Path

RESOURCES = Path(__file__).resolve().parents[2] / "resources"


def resource_path(name: str) -> Path:
    path = RESOURCES / name
    if not path.exists():
        raise FileNotFoundError(f"resource {name!r} is missing from {RESOURCES}")
    return path
