"""Context budgets, the three overflow behaviours, and the simulated agent."""

from __future__ import annotations

import pytest

from workbench.core.errors import InputError
from workbench.core.protocols.echo.context import (
    AgentContext,
    ContextLimitError,
    SimulatedAgent,
    count_tokens,
    summary_keeping_markers,
)
from workbench.core.protocols.echo.footer import parse_footer
from workbench.core.protocols.shared.steps import AgentCall

MARKER = "salt on the threshold — 7f3a9c"


def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def call(key: str, *texts: str, **meta) -> AgentCall:
    return AgentCall(key=key, agent="a1", purpose="turn",
                     messages=tuple({"role": "user", "content": t} for t in texts), meta=meta)


def test_tokens_are_whitespace_words():
    assert count_tokens("one two\tthree\nfour  ") == 4
    assert count_tokens("") == 0


def test_silent_truncation_drops_the_oldest_without_a_word():
    ctx = AgentContext(10, "silent_truncation")
    assert ctx.add("system", f'Marker: "{MARKER}"') == []  # 7 words
    assert ctx.add("user", words(3)) == []
    assert MARKER in ctx.window_text()
    assert ctx.add("user", words(2, "x")) == []  # over budget: the marker message goes, silently
    assert MARKER not in ctx.window_text()
    assert ctx.used <= 10 and ctx.dropped == 1


def test_silent_truncation_keeps_the_tail_of_an_overlong_message():
    ctx = AgentContext(5, "silent_truncation")
    ctx.add("user", words(8))
    assert ctx.window_text() == "w3 w4 w5 w6 w7"


def test_hard_rejection_refuses_at_the_wall_and_stays_there():
    ctx = AgentContext(10, "hard_rejection")
    ctx.add("user", words(8))
    with pytest.raises(ContextLimitError, match="context limit"):
        ctx.add("user", words(3))
    assert ctx.used == 8  # nothing was lost...
    with pytest.raises(ContextLimitError):  # ...but the session is at its wall
        ctx.add("user", "hi")
    ctx.reset()
    assert ctx.add("user", "hi") == [] and ctx.used == 1


def test_compaction_summarises_old_turns_and_reports_it():
    ctx = AgentContext(12, "compaction", keep_recent=1)
    ctx.add("system", f'Marker: "{MARKER}"')
    ctx.add("user", words(4))
    assert ctx.add("user", words(4, "x")) == ["compaction"]
    assert MARKER not in ctx.window_text()  # the default summary keeps no detail
    assert ctx.window_text().startswith("[Summary: 2 earlier messages") and ctx.compactions == 1

    faithful = AgentContext(20, "compaction", keep_recent=1, summariser=summary_keeping_markers)
    faithful.add("system", f'Marker: "{MARKER}"')
    faithful.add("user", words(8))
    assert faithful.add("user", words(8, "x")) == ["compaction"]
    assert MARKER in faithful.window_text()


def test_compaction_cannot_save_a_message_larger_than_the_budget():
    with pytest.raises(ContextLimitError):
        AgentContext(5, "compaction").add("user", words(6))


@pytest.mark.parametrize("budget, behaviour", [(0, "compaction"), (10, "forgetful"), (True, "compaction")])
def test_bad_context_settings(budget, behaviour):
    with pytest.raises(InputError):
        AgentContext(budget, behaviour)


def test_the_simulated_agent_recites_only_what_is_in_its_window():
    agent = SimulatedAgent("a1", AgentContext(30, "silent_truncation"), persona="The Architect")
    start = AgentCall(key="c1", agent="a1", purpose="verify", messages=(
        {"role": "system", "content": f'Resonance marker: "{MARKER}"'},
        {"role": "user", "content": "Architect, recite the resonance marker."}))
    reply = agent.answer(start)
    assert reply.ok and "7f3a9c" in reply.text
    agent.answer(call("t1", words(25)))  # pushes the marker out of the 30-word window
    assert agent.hexes_in_window() == []
    lost = agent.answer(AgentCall(key="c2", agent="a1", purpose="verify", messages=(
        {"role": "user", "content": "Architect, recite the resonance marker."},)))
    assert lost.ok and "7f3a9c" not in lost.text and "cannot find a resonance marker" in lost.text
    assert [h["hexes"] for h in agent.history][0] == ["7f3a9c", "7f3a9c"]


def test_the_simulated_agent_reports_context_limits_and_compaction():
    rejecting = SimulatedAgent("g", AgentContext(10, "hard_rejection"))
    reply = rejecting.answer(call("t1", words(12)))
    assert not reply.ok and reply.error.startswith("context_limit") and "context_limit" in reply.meta["events"]

    compacting = SimulatedAgent("c", AgentContext(20, "compaction"))
    compacting.answer(call("t1", words(9)))
    reply = compacting.answer(call("t2", words(9, "x")))
    assert reply.ok and reply.meta["events"] == ["compaction"]


def test_new_session_meta_resets_the_window():
    agent = SimulatedAgent("a1", AgentContext(50, "silent_truncation"))
    agent.answer(call("t1", f'Resonance marker: "{MARKER}"'))
    assert agent.hexes_in_window() == ["7f3a9c"]
    agent.answer(call("t2", "hello", new_session=True))
    assert agent.hexes_in_window() == []


def test_footers_are_stamped_when_asked():
    agent = SimulatedAgent("a1", AgentContext(50, "silent_truncation"), persona="Builder", footers=True)
    reply = agent.answer(call("t1", f'Resonance marker: "{MARKER}"'))
    f = parse_footer(reply.text)
    assert (f.resonance, f.role, f.state) == ("7f3a9c", "Builder", "Stable")
