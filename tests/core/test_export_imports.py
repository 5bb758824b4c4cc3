"""Exporting a run imports only what its records need: ARM's package (and pydantic with it, 0.25 s)
only once the run has a trace to export. ``rwb export`` of one RCP run took 0.65 s for 289 records
when every export imported it (docs/performance.md, 2026-11-28, third session)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
from workbench.core.project import export
from workbench.core.project.store import Store
store = Store.open(sys.argv[1]).reader()
run_id = store._connection().execute("SELECT id FROM runs WHERE protocol = ? LIMIT 1", (sys.argv[2],)).fetchone()[0]
records = sum(1 for _ in export.run_records(store, run_id))
print(records, "workbench.core.protocols.arm" in sys.modules, "pydantic" in sys.modules)
"""


def exported(tmp_path: Path, sample: str, protocol: str) -> list[str]:
    path = tmp_path / f"{sample}.rwb"
    shutil.copyfile(REPO / "sample_runs" / f"{sample}.rwb", path)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(path), protocol], cwd=REPO, capture_output=True,
                         text=True, check=True, timeout=120)
    return out.stdout.split()


def test_an_rcp_run_exports_without_arms_package_and_an_arm_run_with_it(tmp_path):
    records, arm, pydantic = exported(tmp_path, "rcp-tiers", "rcp")
    assert int(records) > 100 and (arm, pydantic) == ("False", "False")
    records, arm, _ = exported(tmp_path, "arm-study", "arm")
    assert int(records) > 0 and arm == "True"  # its traces need ARM's fields
