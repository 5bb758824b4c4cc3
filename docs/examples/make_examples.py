"""Regenerate the example reports in this folder (run from the repository root):

    .venv/bin/python docs/examples/make_examples.py

Each is a deterministic simulated run of a sample configuration (sample_runs/), exported with
the same function as ``rwb export RUN_ID --format md|html``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    import pytest

    from tests.support.report_runs import run_sample
    from workbench.core.project.export import export_bytes
    from workbench.core.project.store import Store

    here = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.create(Path(tmp) / "examples.rwb")
        patch = pytest.MonkeyPatch()
        try:
            for name in ("rcp", "rcp-echo", "findings", "cons", "arm"):
                run_id = run_sample(store, name, patch, suffix="example")
                (here / f"{name}.md").write_bytes(export_bytes(store, run_id, "md"))
                if name == "rcp":
                    (here / f"{name}.html").write_bytes(export_bytes(store, run_id, "html"))
        finally:
            patch.undo()
            store.close_connection()


if __name__ == "__main__":
    main()
