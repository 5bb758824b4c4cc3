"""Files shipped in the ``resources/`` folder (template banks, scenario banks): the repository's
in a checkout, the package's own copy when installed (``core.paths``)."""

from __future__ import annotations

from pathlib import Path

from workbench.core.paths import resources_dir

RESOURCES = resources_dir()


def resource_path(name: str) -> Path:
    path = RESOURCES / name
    if not path.exists():
        raise FileNotFoundError(f"resource {name!r} is missing from {RESOURCES}")
    return path
