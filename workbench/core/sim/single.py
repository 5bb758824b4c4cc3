"""sim's answer for the ``single`` control: the agent answers with its skill (:mod:`.answers`)."""

from __future__ import annotations

from workbench.core.sim.answers import answer

# What answers each step of ``single`` (the declaration's ``sim`` names this module).
HANDLERS = {"answer": answer}
