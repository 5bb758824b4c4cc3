"""The restoration state machine: the pure transition function and the resumable generator."""

from __future__ import annotations

import random

import pytest

from workbench.core.protocols.echo import MarkerIssuer, drive
from workbench.core.protocols.echo.models import SessionSeed
from workbench.core.protocols.echo.restore import (
    RestorationContext,
    RestorationError,
    Transition,
    check_sequence,
    next_step,
    restore,
)
from workbench.core.protocols.shared.steps import AgentReply, Batch, Note

LOST = "salt on the threshold — 7f3a9c"


@pytest.mark.parametrize("step, kwargs, expected", [
    (None, {}, "log"),
    ("log", {}, "read_seed"),
    ("read_seed", {"new_session_required": True}, "new_session"),
    ("read_seed", {"new_session_required": False}, "inject"),
    ("new_session", {}, "inject"),
    ("inject", {}, "verify"),
    ("verify", {"verified": True}, "resume"),
    ("verify", {"verified": False}, "escalate"),
    ("resume", {}, None),
    ("escalate", {}, None),
])
def test_next_step(step, kwargs, expected):
    assert next_step(step, **kwargs) == expected


def test_next_step_refuses_nonsense():
    with pytest.raises(RestorationError):
        next_step("verify")
    with pytest.raises(RestorationError):
        next_step("dance")


def test_check_sequence():
    check_sequence(["log", "read_seed", "new_session", "inject", "verify", "resume"], new_session_required=True)
    check_sequence(["log", "read_seed", "inject", "verify", "escalate"], new_session_required=False)
    with pytest.raises(RestorationError, match="step 2"):
        check_sequence(["log", "inject"], new_session_required=False)
    with pytest.raises(RestorationError, match="after the episode ended"):
        check_sequence(["log", "read_seed", "inject", "verify", "resume", "log"], new_session_required=False)


def ctx(new_session: bool = True) -> RestorationContext:
    seed = SessionSeed(agent="gemini", persona="The Architect", active_tasks=["Review memory schema"],
                       settled_decisions=["Using hybrid marker format"], resonance_marker=LOST,
                       last_checkpoint="2026-01-31T10:30:00.000Z")
    return RestorationContext(restoration_id="restore-7f3a9c", agent="gemini", seed=seed, lost_marker=LOST,
                              lost_at="2026-01-31T10:40:00.000Z", session_id="2026-01-31-001",
                              new_session_required=new_session, turn=12)


def reciting(call):
    """An agent that recites whatever marker it was just given."""
    line = next(ln for m in call.messages for ln in m["content"].splitlines() if ln.startswith("Resonance marker:"))
    return AgentReply(call.key, line)


def clock():
    t = iter(range(10_000))
    return lambda: f"2026-01-31T11:00:{next(t):02d}.000Z"


def test_a_full_episode_runs_every_step_and_resumes_with_a_new_marker():
    issuer = MarkerIssuer(random.Random(1), issued={"7f3a9c"})
    notes = []
    outcome = drive(restore(ctx(), new_marker=issuer, now=clock()), reciting, notes.append)
    assert outcome.steps == ["log", "read_seed", "new_session", "inject", "verify", "resume"]
    assert [n.data["step"] for n in notes] == outcome.steps
    assert outcome.status == "resumed" and outcome.new_marker == issuer.markers[0]
    assert outcome.new_marker.hex != "7f3a9c"
    assert outcome.session_id == "2026-01-31-002" and outcome.new_session
    log, read, new, inject, verify, resume = outcome.transitions
    assert log.detail["message"] == "Resonance anchor lost at 2026-01-31T10:40:00.000Z"
    assert read.detail["key"] == "session_seed_gemini" and read.detail["persona"] == "The Architect"
    assert inject.detail["marker"] == str(outcome.new_marker)
    assert any("Using hybrid marker format" in m["content"] for m in inject.detail["messages"])
    assert verify.detail["result"]["verified"] is True
    assert resume.detail["last_checkpoint"] == "2026-01-31T10:30:00.000Z"


def test_the_verify_call_starts_a_new_session_only_when_required():
    seen = []

    def answer(call):
        seen.append(call)
        return reciting(call)

    drive(restore(ctx(new_session=False), new_marker=MarkerIssuer(random.Random(2))), answer)
    (call,) = seen
    assert call.purpose == "verify" and call.meta["new_session"] is False


def test_a_failed_reverification_escalates():
    outcome = drive(restore(ctx(), new_marker=MarkerIssuer(random.Random(3))),
                    lambda call: AgentReply(call.key, "I am not sure what you mean."))
    assert outcome.steps[-2:] == ["verify", "escalate"]
    assert outcome.status == "escalated" and outcome.new_marker is None
    assert outcome.transitions[-1].detail["to"] == "conductor"


def test_an_interrupted_episode_continues_from_its_persisted_steps():
    issuer = MarkerIssuer(random.Random(4))
    gen = restore(ctx(), new_marker=issuer, now=clock())
    done = []
    item = next(gen)
    while not isinstance(item, Batch):  # run until the verify call, then "crash"
        done.append(Transition(item.data["step"], item.data["detail"], item.data["at"]))
        item = gen.send(None)
    gen.close()
    assert [t.step for t in done] == ["log", "read_seed", "new_session", "inject"]

    def no_new_marker():
        raise AssertionError("the marker is read back from the inject row")

    notes: list[Note] = []
    outcome = drive(restore(ctx(), new_marker=no_new_marker, done=done, now=clock()), reciting, notes.append)
    assert [n.data["step"] for n in notes] == ["verify", "resume"]
    assert outcome.steps == ["log", "read_seed", "new_session", "inject", "verify", "resume"]
    assert outcome.new_marker == issuer.markers[0] and outcome.session_id == "2026-01-31-002"


def test_a_finished_episode_does_nothing_more():
    outcome = drive(restore(ctx(), new_marker=MarkerIssuer(random.Random(5))), reciting)
    again = drive(restore(ctx(), new_marker=MarkerIssuer(), done=outcome.transitions), reciting)
    assert again.steps == outcome.steps and again.status == "resumed"
