"""The Anchors & Restoration panel's teaching scenario: its run configuration and its narration.

The run is the ``rcp-echo`` template cut down to two agents on the simulated panel: ``a2`` with room
to spare, and ``c1``, the one to watch, with a 300-token window that truncates silently and an
anchor given only at session start (stateful), checked every 3 turns. Two refinement rounds are
enough for c1 to forget its marker, for a check to catch it, and for the restoration to bring it back.

:func:`story_steps` turns the records read so far into the story's steps in plain words, each with
the agent's records as they stood at that step (what the panel shows while the step is on screen):
the marker given, then lost, then the loss caught, then the restoration, one at a time (the panel
moves on at Next, or by itself after Play). It is pure.

The scenario is one run per project: pressing the button again replays that run (found by its
:data:`LABEL`) rather than adding runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from workbench.core.runs.templates import TEMPLATES

if TYPE_CHECKING:  # the records are read off the GUI thread; the window's start does not import them
    from workbench.core.project.echo_view import AgentEcho

AGENT = "c1"
BUDGET = 300
LABEL = "Teaching scenario"  # the run's label: the one scenario run of a project is found by it


def teaching_config() -> dict:
    d = TEMPLATES["rcp-echo"].run_config()
    d["label"] = "Teaching: a silently truncated agent is restored (simulated)"
    d["clusters"][0]["agents"] = [a for a in d["clusters"][0]["agents"] if a["id"] == "a2"]
    d["clusters"][1]["agents"] = [a for a in d["clusters"][1]["agents"] if a["id"] == AGENT]
    d["clusters"][1]["agents"][0]["params"].update(context_budget=BUDGET, overflow="silent_truncation", footers=True)
    d["refinement_rounds"] = 2
    d["echo"] = {**d["echo"], "interval": 3, "patterns": {AGENT: "stateful"}}
    return d


@dataclass(frozen=True)
class StoryStep:
    key: str  # start | loss | detection | restoration
    text: str  # in plain words, numbered
    agent: AgentEcho | None  # the agent's records as they stood at this step (None: not read yet)


def story_steps(agent: AgentEcho | None, *, finished: str | None = None) -> list[StoryStep]:
    """The steps the records reach so far; the last says how the run ended, once it has."""
    steps = [StoryStep("start", "1. Starting a simulated RCP run wrapped in Resonance Echo. Agent c1 has a "
                                f"{BUDGET}-token context window that drops old text silently, and its marker was "
                                "given only once, at session start.", _upto(agent, first=True))]
    if agent is not None and agent.marker and agent.checks and agent.checks[0].success:
        steps[0] = replace(steps[0], text=steps[0].text + f" c1 recited its marker ({agent.checks[0].marker_hex}) "
                                                          "at the first check.")
    lost_at = next((i for i, c in enumerate(agent.checks) if not c.success and c.trigger != "restoration"), None) \
        if agent is not None else None
    if lost_at is not None:
        lost = agent.checks[lost_at]
        last_ok = next((c for c in reversed(agent.checks[:lost_at]) if c.success), None)
        since = f"after turn {last_ok.turn}" if last_ok is not None and last_ok.turn else "since its last check"
        steps.append(StoryStep("loss", f"2. The marker is lost: {since}, c1's window filled up and its oldest text, "
                                       f"the marker {lost.marker_hex} with it, was dropped. Silently: c1 does not "
                                       "know, and its footer still reads Stable.", _upto(agent, before=lost_at)))
        steps.append(StoryStep("detection", f"3. Loss detected: at turn {lost.turn}, asked to recite its marker, c1 "
                                            "could not. Its state is now Degraded, and the restoration protocol "
                                            "starts.", _upto(agent, through=lost_at)))
    episode = agent.episodes[0] if agent is not None and agent.episodes else None
    if episode is not None:
        if episode.status == "resumed":
            new = next((s.text.rsplit("— ", 1)[-1] for s in episode.steps if s.step == "inject"), "?")
            text = (f"4. Restored: the conductor read c1's session seed, injected its persona, decisions, tasks "
                    f"and a new marker ({new}); c1 recited it, and the session resumed. State: Stable.")
        elif episode.status == "escalated":
            text = "4. Restoration failed: c1 could not recite the new marker, so it was escalated to the conductor."
        else:
            text = f"4. Restoring c1: {episode.steps[-1].text}."
        steps.append(StoryStep("restoration", text, agent))
    if finished:
        last = steps[-1]
        steps[-1] = replace(last, text=f"{last.text} The run is {finished}.")
    return steps


def _upto(agent: AgentEcho | None, *, first: bool = False, before: int | None = None,
          through: int | None = None) -> AgentEcho | None:
    """``agent`` as its records stood: at its first check, before check ``before``, or just
    after check ``through`` (no restoration yet)."""
    if agent is None:
        return None
    end = 1 if first else before if before is not None else (through + 1 if through is not None else len(agent.checks))
    checks = agent.checks[:end]
    if not checks:
        return replace(agent, checks=(), states=agent.states[:1], episodes=())
    at = checks[-1].time
    states = tuple(s for s in agent.states if s.time <= at) or agent.states[:1]
    return replace(agent, checks=checks, states=states, episodes=())


def narrate(agent: AgentEcho | None, *, started: bool, finished: str | None = None) -> list[str]:
    """The whole story so far, one plain sentence per step reached (every step at once)."""
    if not started:
        return []
    return [step.text for step in story_steps(agent, finished=finished)]
