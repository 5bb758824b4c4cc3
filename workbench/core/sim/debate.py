"""sim's answers for multi-agent debate: round 1 with the agent's skill; each later round, with
probability ``conformity`` the plurality of the peers' previous answers (the call's
``peer_answers``), otherwise afresh with its skill (:mod:`.answers`)."""

from __future__ import annotations

from workbench.core.sim.answers import answer
from workbench.core.sim.text import Ask


def debate(ask: Ask) -> tuple[str, dict]:
    peers = [str(p) for p in ask.input("peer_answers") or [] if p]
    return answer(ask, ask.call.round_no, peers)


# What answers each debate step (the declaration's ``sim`` names this module).
HANDLERS = {"answer": answer, "debate": debate}
