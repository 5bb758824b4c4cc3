"""The Anchors & Restoration panel's teaching scenario: its run configuration and its narration.

The run is the ``rcp-echo`` template cut down to two agents on the simulated panel: ``a2`` with room
to spare, and ``c1``, the one to watch, with a 300-token window that truncates silently and an
anchor given only at session start (stateful), checked every 3 turns. Two refinement rounds are
enough for c1 to forget its marker, for a check to catch it, and for the restoration to bring it back.

:func:`narrate` turns the records read so far into the story's steps in plain words; it is pure.
"""

from __future__ import annotations

from workbench.core.project.echo_view import AgentEcho
from workbench.core.runs.templates import TEMPLATES

AGENT = "c1"
BUDGET = 300


def teaching_config() -> dict:
    d = TEMPLATES["rcp-echo"].run_config()
    d["label"] = "Teaching: a silently truncated agent is restored (simulated)"
    d["clusters"][0]["agents"] = [a for a in d["clusters"][0]["agents"] if a["id"] == "a2"]
    d["clusters"][1]["agents"] = [a for a in d["clusters"][1]["agents"] if a["id"] == AGENT]
    d["clusters"][1]["agents"][0]["params"].update(context_budget=BUDGET, overflow="silent_truncation", footers=True)
    d["refinement_rounds"] = 2
    d["echo"] = {**d["echo"], "interval": 3, "patterns": {AGENT: "stateful"}}
    return d


def narrate(agent: AgentEcho | None, *, started: bool, finished: str | None = None) -> list[str]:
    """The story so far, one plain sentence per step reached."""
    out = ["1. Starting a simulated RCP run wrapped in Resonance Echo. Agent c1 has a "
           f"{BUDGET}-token context window that drops old text silently, and its marker was given "
           "only once, at session start."] if started else []
    if agent is None:
        return out
    if agent.marker:
        first = agent.checks[0] if agent.checks else None
        if first is not None:
            out[0] += f" c1 recited its marker ({first.marker_hex}) at the first check."
    lost = next((c for c in agent.checks if not c.success and c.trigger != "restoration"), None)
    if lost is not None:
        out.append(f"2. Loss detected: at turn {lost.turn}, asked to recite its marker, c1 could not. "
                   f"The marker {lost.marker_hex} fell out of its window without c1 noticing; its state is now Degraded.")
    episode = agent.episodes[0] if agent.episodes else None
    if episode is not None:
        last = episode.steps[-1]
        if episode.status == "resumed":
            new = next((s.text.rsplit("— ", 1)[-1] for s in episode.steps if s.step == "inject"), "?")
            out.append(f"3. Restored: the conductor read c1's session seed, injected its persona, decisions, tasks "
                       f"and a new marker ({new}); c1 recited it, and the session resumed. State: Stable.")
        elif episode.status == "escalated":
            out.append("3. Restoration failed: c1 could not recite the new marker, so it was escalated to the conductor.")
        else:
            out.append(f"3. Restoring c1: {last.text}.")
    if finished:
        out.append(f"The run is {finished}.")
    return out
