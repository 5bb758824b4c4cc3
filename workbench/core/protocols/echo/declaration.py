"""Resonance Echo, declared (SPEC §7): markers that detect silent context loss around any
protocol's agents, and restoration. A wrapper: configured under ``echo`` in any run, never run
alone; its steps (:mod:`.steps`) are overridden as ``prompts["echo.STEP"]``."""

from __future__ import annotations

from dataclasses import replace

from workbench.core.protocols.echo.metrics import METRICS
from workbench.core.protocols.echo.report import section
from workbench.core.protocols.echo.steps import IDENTITY

PROTOCOL = replace(IDENTITY, report=section, metrics=METRICS)
