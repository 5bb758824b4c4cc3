"""sim's answers for the ``vote`` control: each agent answers alone, with its skill (:mod:`.answers`)."""

from __future__ import annotations

from workbench.core.sim.answers import answer

# What answers each step of ``vote`` (the declaration's ``sim`` names this module).
HANDLERS = {"answer": answer}
