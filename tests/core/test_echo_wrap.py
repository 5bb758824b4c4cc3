"""Resonance Echo around any protocol: ``with_echo`` driven by a scripted fake agent.

The fake agent remembers the last whole marker it was sent, forgets on the calls a test names,
and recites only what it remembers. The inner "protocol" is a tiny generator that records what
it receives, so the tests see exactly what the inner protocol sees.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project import echo as records
from workbench.core.protocols.echo import drive, find_markers
from workbench.core.protocols.echo.wrap import echo_options, pattern_for, strip_echo_trailer, with_echo
from workbench.core.protocols.shared.fencing import fenced, mask_fences
from workbench.core.protocols.shared.steps import AgentCall, AgentReply, Batch, Note
from workbench.core.runs.config import parse_run_config
from workbench.core.sim import SimPanel

FULL = ["log", "read_seed", "new_session", "inject", "verify", "resume"]


def config(agents: dict[str, dict], echo: dict | None = None, **extra):
    """``agents``: id -> {"provider": "sim" | "real", "params": {...}}."""
    return parse_run_config({
        "protocol": "rcp", "query": "Should the city close its downtown to private cars?", "seed": 3,
        "providers": {"sim": {"model": "sim"}, "real": {"model": "openai/any-model"},
                      "person": {"model": "manual"}},
        "clusters": [{"name": "c", "agents": [{"id": a, "provider": spec.get("provider", "sim"),
                                                "params": spec.get("params", {})} for a, spec in agents.items()]}],
        "echo": {} if echo is None else echo, **extra})


def protocol(agents, rounds=3, per_agent=1, seen=None, fence=False):
    """A stand-in protocol: each round, ``per_agent`` calls per agent in one batch."""
    seen = [] if seen is None else seen
    for r in range(1, rounds + 1):
        calls = []
        for a in agents:
            for i in range(per_agent):
                key = f"r{r}/work/{a}/{i}"
                user = f"Question: round {r}, item {i}."
                meta = {}
                if fence:
                    meta["delimiter"] = f"ARTIFACT-{r}{i}"
                    user += "\n" + fenced(f"An artifact of round {r}.", meta["delimiter"])
                calls.append(AgentCall(key, a, "generate", ({"role": "system", "content": "You are careful."},
                                                            {"role": "user", "content": user}), round_no=r, meta=meta))
        replies = yield Batch(tuple(calls), f"Round {r}")
        seen.append((tuple(c.key for c in calls), replies))
        assert (yield Note("progress", f"round {r} done")) is None
    return {"rounds": rounds}


class Fake:
    """Remembers the latest whole marker sent to each agent; forgets on the calls in ``forget``
    (and, with ``amnesiac``, never learns again); recites what it remembers."""

    def __init__(self, forget=(), amnesiac=(), events=None, fail=(), quoted_only=()):
        self.forget, self.amnesiac = set(forget), set(amnesiac)
        self.events = events or {}
        self.fail, self.quoted_only = set(fail), set(quoted_only)
        self.known: dict[str, object] = {}
        self.calls: list[AgentCall] = []

    def __call__(self, call: AgentCall) -> AgentReply:
        self.calls.append(call)
        sent = "\n".join(m["content"] for m in call.messages)
        found = find_markers(sent)
        if found and call.agent not in self.amnesiac:
            self.known[call.agent] = found[-1]
        if call.key in self.forget:
            self.known.pop(call.agent, None)
        meta = {"events": list(self.events.get(call.key, ()))}
        if call.key in self.fail:
            return AgentReply(call.key, None, error="context_limit: at the wall",
                              meta={**meta, "events": ["context_limit"], "error_kind": "context_limit"})
        marker = self.known.get(call.agent)
        if call.purpose == "verify":
            return AgentReply(call.key, f'Resonance: "{marker}"' if marker else "I cannot recall one.", meta=meta)
        text = f"Work for {call.key}."
        if call.key in self.quoted_only and marker:
            return AgentReply(call.key, text + "\n" + fenced(f"quoting {marker}", call.meta["delimiter"]), meta=meta)
        if "[Resonance check:" in sent and marker:
            text += f'\nResonance: "{marker}"'
        return AgentReply(call.key, text, meta=meta)


def run(cfg, fake, **kw):
    seen, notes = [], []
    agents = kw.pop("agents", [a.id for a in cfg.agents])
    gen = with_echo(protocol(agents, seen=seen, **kw), cfg, run_id=None, issue_marker=None)
    result = drive(gen, fake, notes.append)
    return result, seen, notes


def of(notes, kind, agent=None):
    return [n for n in notes if n.kind == kind and (agent is None or n.data.get("agent") == agent)]


def verify_keys(fake, agent):
    """The explicit checks (restorations have their own verify call)."""
    return [c.key for c in fake.calls if c.agent == agent and c.purpose == "verify" and "/check/" in c.key]


# ----- injection per pattern -------------------------------------------------------------------
def test_patterns_default_by_provider_and_persona_and_can_be_set():
    agents = {"st": {}, "hr": {"params": {"overflow": "hard_rejection"}}, "ca": {"params": {"overflow": "compaction"}},
              "real": {"provider": "real"}, "me": {"provider": "person"}}
    cfg = config(agents)
    defaults = echo_options(cfg)
    assert {a: pattern_for(cfg, defaults, a) for a in ("st", "hr", "ca", "real", "me", "conductor")} == {
        "st": "stateless", "hr": "stateful", "ca": "compaction_aware", "real": "stateless", "me": None,
        "conductor": None}
    cfg = config(agents, echo={"patterns": {"st": "stateful", "*": "compaction_aware"}})
    chosen = echo_options(cfg)
    assert [pattern_for(cfg, chosen, a) for a in ("st", "hr", "real", "me")] == [
        "stateful", "compaction_aware", "compaction_aware", None]


def test_markers_are_injected_per_pattern_on_the_right_calls():
    cfg = config({"st": {}, "hr": {"params": {"overflow": "hard_rejection"}},
                  "ca": {"params": {"overflow": "compaction"}}, "real": {"provider": "real"}})
    fake = Fake()
    _, _, notes = run(cfg, fake)
    anchors = {n.data["agent"]: n.data for n in of(notes, "echo.anchor")}
    assert {a: d["injection"] for a, d in anchors.items()} == {
        "st": "stateless", "hr": "stateful", "ca": "compaction_aware", "real": "stateless"}
    hexes = {a: d["marker"][-6:] for a, d in anchors.items()}
    assert len(set(hexes.values())) == 4

    # Stateless: the context seed block and the check token in EVERY call, and no explicit check.
    st_calls = [c for c in fake.calls if c.agent == "st"]
    assert [c.key for c in st_calls] == ["r1/work/st/0", "r2/work/st/0", "r3/work/st/0"]
    for c in st_calls:
        user = c.messages[-1]["content"]
        assert user.startswith("[CONTEXT SEED]") and f'Resonance: "{anchors["st"]["marker"]}"' in user
        assert user.endswith(f"[Resonance check: {hexes['st']}]") and "[USER MESSAGE]\nQuestion: round" in user
        assert c.messages[0] == {"role": "system", "content": "You are careful."}

    # Stateful and compaction-aware: the session-start message in the first call only (the boot
    # check), never again in the protocol's calls.
    for agent in ("hr", "ca"):  # ("real" models default to stateless: they keep no session)
        calls = [c for c in fake.calls if c.agent == agent]
        first = calls[0]
        assert first.key == f"echo/{agent}/check/1" and first.purpose == "verify"
        assert first.meta["reasons"] == ["boot"]
        assert f'Resonance marker: "{anchors[agent]["marker"]}"' in first.messages[0]["content"]
        assert ("After any compaction" in first.messages[0]["content"]) == (agent == "ca")
        assert first.messages[-1]["content"] == f"{agent}, recite the resonance marker."
        for c in calls[1:]:
            assert hexes[agent] not in json.dumps(c.messages)


def test_checks_are_due_at_the_interval_and_batches_go_in_waves():
    cfg = config({"hr": {"params": {"overflow": "hard_rejection"}}}, echo={"interval": 3})
    fake = Fake()
    run(cfg, fake, rounds=8)
    assert verify_keys(fake, "hr") == ["echo/hr/check/1", "echo/hr/check/4", "echo/hr/check/7"]
    reasons = [c.meta["reasons"] for c in fake.calls if c.purpose == "verify"]
    assert reasons == [["boot"], ["interval"], ["interval"]]

    # Three calls of one agent in one batch: forwarded one at a time, each with its check point.
    fake = Fake()
    _, seen, _ = run(cfg, fake, rounds=3, per_agent=3)
    order = [c.key for c in fake.calls]
    assert order[:5] == ["echo/hr/check/1", "r1/work/hr/0", "r1/work/hr/1", "r1/work/hr/2", "echo/hr/check/4"]
    assert verify_keys(fake, "hr") == ["echo/hr/check/1", "echo/hr/check/4", "echo/hr/check/7"]
    turns = [c.meta["echo"]["turn"] for c in fake.calls if c.purpose == "generate"]
    assert turns == list(range(1, 10))
    assert [sorted(replies) for _, replies in seen] == [sorted(keys) for keys, _ in seen]


def test_errors_and_compaction_make_a_check_due_at_the_next_check_point():
    cfg = config({"hr": {"params": {"overflow": "hard_rejection"}}, "ca": {"params": {"overflow": "compaction"}}},
                 echo={"interval": 50})
    fake = Fake(fail={"r2/work/hr/0"}, events={"r2/work/ca/0": ["compaction"]})
    run(cfg, fake, rounds=4)
    checks = {c.key: c.meta["reasons"] for c in fake.calls if c.purpose == "verify"}
    assert checks["echo/hr/check/3"] == ["error"] and checks["echo/ca/check/3"] == ["compaction"]
    assert "echo/hr/check/2" not in checks and "echo/hr/check/4" not in checks


# ----- failure, restoration, escalation --------------------------------------------------------
def test_a_failed_check_triggers_restoration_whose_transitions_come_in_order():
    cfg = config({"hr": {"params": {"overflow": "hard_rejection"}}}, echo={"interval": 2})
    fake = Fake(forget={"r2/work/hr/0"})
    result, _, notes = run(cfg, fake, rounds=5)
    assert result == {"rounds": 5}
    checks = of(notes, "echo.verification")
    failed = [n for n in checks if not n.data["entry"]["success"]]
    assert [(n.data["entry"]["turn"], n.data["entry"]["trigger"], n.data["entry"]["action"]) for n in failed] == [
        (3, "interval", "restoration_triggered")]
    assert failed[0].data["call_key"] == "echo/hr/check/3"
    transitions = of(notes, "echo.transition")
    assert [n.data["step"] for n in transitions] == FULL  # stateful: always a new session
    lost = failed[0].data["marker_hex"]
    assert {n.data["restoration"] for n in transitions} == {f"restore-{lost}"}
    # The restoration's one call has a run-stable key and starts a new session.
    (restore_call,) = [c for c in fake.calls if "/restore/" in c.key]
    assert restore_call.key == "echo/hr/restore/1/verify" and restore_call.meta["new_session"] is True
    # The new marker is the one issued for "echo/hr/restore/1", and it is checked from then on.
    new = [n for n in of(notes, "echo.anchor") if n.data.get("replaces") == lost]
    assert len(new) == 1
    new_hex = new[0].data["marker"][-6:]
    assert transitions[3].data["detail"]["hex"] == new_hex
    later = [n.data["marker_hex"] for n in checks if n.data["entry"]["turn"] > 3]
    assert later and set(later) == {new_hex}
    # Order of the notes: failed check, then log..resume, then the new anchor.
    kinds = [(n.kind, n.data.get("step")) for n in notes if n.kind.startswith("echo.")]
    i = kinds.index(("echo.transition", "log"))
    assert kinds[i - 1][0] == "echo.verification" and kinds[i + 6][0] == "echo.anchor"
    (end,) = of(notes, "echo.session_end")
    assert end.data["status"] == "completed" and end.data["restorations"] == [f"restore-{lost}"]
    assert end.data["marker"] == new[0].data["marker"] and end.data["failures"] == 1


def test_an_escalated_agent_keeps_working_flagged():
    cfg = config({"hr": {"params": {"overflow": "hard_rejection"}}, "ca": {"params": {"overflow": "compaction"}}},
                 echo={"interval": 2})
    fake = Fake(amnesiac={"hr"})  # hr never takes a marker in: the boot check fails, restoration too
    result, seen, notes = run(cfg, fake, rounds=5)
    assert result == {"rounds": 5}
    steps = [n.data["step"] for n in of(notes, "echo.transition", "hr")]
    assert steps == ["log", "read_seed", "new_session", "inject", "verify", "escalate"]
    (warning,) = [n for n in notes if n.kind == "warning"]
    assert warning.data["agent"] == "hr" and "escalated to the conductor" in warning.message
    assert of(notes, "echo.anchor_retired", "hr")
    # Still working: every round has its reply, and no more checks after the escalation.
    assert all("r%d/work/hr/0" % r in replies for r, (_, replies) in enumerate(seen, 1))
    assert verify_keys(fake, "hr") == ["echo/hr/check/1"]
    ends = {n.data["agent"]: n.data for n in of(notes, "echo.session_end")}
    assert ends["hr"]["status"] == "escalated" and ends["hr"]["marker"] is None and ends["hr"]["turns"] == 5
    assert ends["ca"]["status"] == "completed"


# ----- what the inner protocol sees ------------------------------------------------------------
def test_the_inner_generator_sees_exactly_its_own_keys_and_replies():
    cfg = config({"st": {}, "hr": {"params": {"overflow": "hard_rejection"}}}, echo={"interval": 2})
    fake = Fake(forget={"r2/work/hr/0"})
    result, seen, notes = run(cfg, fake, rounds=4, per_agent=2)
    assert result == {"rounds": 4}
    for keys, replies in seen:
        assert set(replies) == set(keys)
        for key, reply in replies.items():
            assert reply.key == key and reply.text == f"Work for {key}."  # the Echo recital is removed
    assert [n.message for n in notes if n.kind == "progress"] == [f"round {r} done" for r in range(1, 5)]
    echo_keys = [c.key for c in fake.calls if c.key.startswith("echo/")]
    assert echo_keys and all(re.fullmatch(r"echo/(st|hr)/(check/\d+|restore/\d+/verify)", k) for k in echo_keys)


def test_stateless_agents_are_verified_silently_on_their_own_replies():
    cfg = config({"st": {}}, echo={"interval": 2})
    fake = Fake(forget={"r3/work/st/0"}, quoted_only={"r2/work/st/0"})
    _, _, notes = run(cfg, fake, rounds=5, fence=True)
    assert not verify_keys(fake, "st")  # no explicit check: the ordinary replies are checked
    checks = [n.data for n in of(notes, "echo.verification") if n.data["entry"]["trigger"] != "restoration"]
    assert [(c["entry"]["turn"], c["entry"]["success"]) for c in checks] == [
        (1, True), (2, False), (3, False), (4, True), (5, True)]
    assert checks[0]["entry"]["trigger"] == "boot,every_turn"
    assert all("every_turn" in c["entry"]["trigger"] for c in checks)
    assert [c["call_key"] for c in checks] == [f"r{t}/work/st/0" for t in range(1, 6)]
    # Turn 2: the hex appears only inside the fenced artifact, which is data and does not count.
    assert checks[1]["result"]["in_quoted"] is True and checks[2]["result"]["in_quoted"] is False
    # Each failure was restored in the same session (stateless, no context wall).
    steps = [n.data["step"] for n in of(notes, "echo.transition")]
    assert steps == ["log", "read_seed", "inject", "verify", "resume"] * 2


def test_a_forgotten_stateless_marker_fails_its_silent_check():
    cfg = config({"st": {}}, echo={"interval": 10, "check_token": False})
    fake = Fake(forget={"r2/work/st/0"}, amnesiac={"st"})
    _, _, notes = run(cfg, fake, rounds=2)
    checks = [n.data["entry"] for n in of(notes, "echo.verification")]
    assert [c["success"] for c in checks][:2] == [False, False]
    assert all("[Resonance check:" not in c.messages[-1]["content"] for c in fake.calls)


def test_the_same_config_and_seed_give_the_same_keys_and_prompts():
    cfg = config({"st": {}, "hr": {"params": {"overflow": "hard_rejection"}}}, echo={"interval": 2})
    first, second = Fake(forget={"r2/work/hr/0"}), Fake(forget={"r2/work/hr/0"})
    run(cfg, first, rounds=4)
    run(cfg, second, rounds=4)
    masked = lambda fake: [(c.key, [mask_fences(m["content"]) for m in c.messages]) for c in fake.calls]
    assert masked(first) == masked(second)  # up to the fence names, fresh per call (SPEC §6)


def test_each_session_ends_with_its_summary_and_a_final_seed():
    cfg = config({"st": {}, "ca": {"params": {"overflow": "compaction"}}}, echo={"interval": 2})
    _, _, notes = run(cfg, Fake(), rounds=3)
    ends = of(notes, "echo.session_end")
    assert [n.data["agent"] for n in ends] == ["st", "ca"]
    assert {k for k in ends[0].data} >= {"agent", "pattern", "interval", "status", "turns", "checks", "failures",
                                          "restorations", "marker", "session_id", "footer_states", "ended_at",
                                          "text", "run_id"}
    assert ends[0].data["turns"] == 3 and ends[0].data["checks"] == 3 and ends[1].data["checks"] == 2
    finals = [n for n in of(notes, "echo.seed") if n.data["final"]]
    assert [n.data["seed"]["agent"] for n in finals] == ["st", "ca"]
    assert notes[-1].kind == "echo.session_end"


def test_calls_echo_does_not_manage_pass_through_untouched():
    cfg = config({"me": {"provider": "person"}, "st": {}})
    fake = Fake()
    _, seen, notes = run(cfg, fake, rounds=2, agents=["me", "st", "conductor"])
    mine = [c for c in fake.calls if c.agent in ("me", "conductor")]
    assert [c.key for c in mine] == ["r1/work/me/0", "r1/work/conductor/0", "r2/work/me/0", "r2/work/conductor/0"]
    assert all("echo" not in c.meta and len(c.messages) == 2 for c in mine)
    assert {n.data["agent"] for n in of(notes, "echo.anchor")} == {"st"}
    assert all(set(replies) == set(keys) for keys, replies in seen)


# ----- options ---------------------------------------------------------------------------------
@pytest.mark.parametrize("echo, field, words", [
    ({"patterns": {"a9": "stateless"}}, "echo.patterns.a9", "no such agent"),
    ({"patterns": {"st": "sometimes"}}, "echo.patterns.st", "must be one of"),
    ({"patterns": ["st"]}, "echo.patterns", "must be an object"),
    ({"interval": 0}, "echo.interval", "must be at least 1"),
    ({"interval": "10"}, "echo.interval", "whole number"),
    ({"project": " "}, "echo.project", "must not be empty"),
    ({"check_token": "yes"}, "echo.check_token", "true or false"),
    ({"decisions": "none"}, "echo.decisions", "list"),
    ({"intervall": 5}, "echo.intervall", "unknown key"),
])
def test_invalid_echo_options_name_their_field(echo, field, words):
    with pytest.raises(InputError) as err:  # refused with the configuration, before any run
        config({"st": {}}, echo=echo)
    assert err.value.field == field and words in err.value.message
    cfg = config({"st": {}}).model_copy(update={"echo": echo})
    with pytest.raises(InputError) as err:
        with_echo(protocol(["st"]), cfg, run_id=None, issue_marker=None)  # and by the wrapper itself
    assert err.value.field == field and words in err.value.message


def test_echo_that_is_not_an_object_is_refused():
    cfg = config({"st": {}})
    cfg = cfg.model_copy(update={"echo": ["stateless"]})
    with pytest.raises(InputError) as err:
        echo_options(cfg)
    assert err.value.field == "echo"


def test_strip_echo_trailer_removes_only_echo_lines_at_the_end():
    assert strip_echo_trailer('Answer.\nResonance: "salt on the threshold — 7f3a9c"\n') == "Answer."
    footer = ":: SYSTEM :: [Resonance: 7f3a9c] [Role: a1] [State: Stable]"
    assert strip_echo_trailer(f"Answer.\n\n{footer}") == "Answer."
    assert strip_echo_trailer("Resonance: is a word.\nAnswer.") == "Resonance: is a word.\nAnswer."
    assert strip_echo_trailer('{"vote": "YES"}') == '{"vote": "YES"}'
    assert strip_echo_trailer(None) is None


# ----- the simulated panel in a wrapped run ------------------------------------------------------
def sim_run(personas: dict, echo: dict, rounds=6, per_agent=2, seed=3):
    agents = {a: {"params": p} for a, p in personas.items()}
    cfg = config(agents, echo=echo)
    panel = SimPanel(seed, personas)
    replies: list[AgentReply] = []

    def answer(call):
        replies.append(panel.answer(call))
        return replies[-1]

    notes: list[Note] = []
    result = drive(with_echo(protocol(list(personas), rounds=rounds, per_agent=per_agent), cfg, run_id=None,
                             issue_marker=None), answer, notes.append)
    return result, notes, replies


def test_ordinary_protocol_work_pushes_the_marker_out_of_a_small_sim_window():
    result, notes, replies = sim_run({"c1": {"context_budget": 200, "overflow": "silent_truncation"}},
                                     {"patterns": {"c1": "stateful"}, "interval": 3})
    assert result == {"rounds": 6}
    # Ground truth from sim: which hexes were in the window when each reply was written.
    work = [(r.meta["sim"]["echo"]["turn"], r.meta["sim"]["echo"]["window_hexes"]) for r in replies
            if not r.key.startswith("echo/")]
    first = of(notes, "echo.anchor")[0].data["marker"][-6:]
    lost = next(turn for turn, hexes in work if first not in hexes)
    failed = [n.data["entry"] for n in of(notes, "echo.verification")
              if not n.data["entry"]["success"] and n.data["marker_hex"] == first]
    assert failed and lost <= failed[0]["turn"] <= lost + 3
    assert [n.data["step"] for n in of(notes, "echo.transition")][:6] == FULL


def test_sim_windows_depend_on_the_session_not_on_the_order_calls_are_answered():
    persona = {"context_budget": 200, "overflow": "compaction"}
    _, _, once = sim_run({"a": persona, "b": persona}, {"interval": 2})
    _, _, again = sim_run({"a": persona, "b": persona}, {"interval": 2})
    assert [(r.key, r.text, r.meta.get("events")) for r in once] == [(r.key, r.text, r.meta.get("events"))
                                                                      for r in again]
    # A fresh panel answering one late call from its session alone gives the same reply.
    cfg = config({"a": {"params": persona}}, echo={"interval": 2})
    calls: list[AgentCall] = []
    panel = SimPanel(3, {"a": persona})

    def answer(call):
        calls.append(call)
        return panel.answer(call)

    drive(with_echo(protocol(["a"], rounds=5), cfg, run_id=None, issue_marker=None), answer)
    late = calls[-1]
    assert SimPanel(3, {"a": persona}).answer(late).text == panel.answer(late).text


def test_echo_does_not_change_what_a_sim_agent_says():
    """The reply is written from the protocol's own messages: only the recital is added."""
    persona = {"context_budget": 8000}
    panel = SimPanel(5, {"a": persona})
    call = AgentCall("r1/generate/a", "a", "generate", (
        {"role": "system", "content": "You are careful."},
        {"role": "user", "content": "Should the city close its downtown to private cars?\n\n"
                                    "Answer in one or two short paragraphs."}), meta={"artifact": "r1-a"})
    plain = panel.answer(call).text
    cfg = config({"a": {"params": persona}})
    sent: list[AgentReply] = []

    def inner():
        got = yield Batch((call,))
        return got

    got = drive(with_echo(inner(), cfg, run_id=None, issue_marker=None),
                lambda c: sent.append(SimPanel(5, {"a": persona}).answer(c)) or sent[-1])
    assert got["r1/generate/a"].text == plain  # what the protocol sees
    assert sent[0].text.startswith(plain) and "Resonance:" in sent[0].text  # what the agent said


def test_sim_hard_rejection_fails_the_call_and_a_new_session_restores_it():
    result, notes, replies = sim_run({"g": {"context_budget": 300, "overflow": "hard_rejection"}},
                                     {"interval": 50}, rounds=8, per_agent=1)
    failed = [r for r in replies if not r.ok]
    assert failed and failed[0].meta["error_kind"] == "context_limit"
    first_fail = failed[0].meta["sim"]["echo"]["turn"]
    checks = [n.data["entry"] for n in of(notes, "echo.verification") if n.data["entry"]["trigger"] != "restoration"]
    assert any(c["trigger"] == "error" and c["turn"] == first_fail + 1 for c in checks)
    assert [n.data["step"] for n in of(notes, "echo.transition")][:6] == FULL
    assert result == {"rounds": 8}


# ----- markers in the project file ---------------------------------------------------------------
def test_issue_marker_for_returns_the_same_marker_for_the_same_key(project):
    _sql.insert(project, "runs", {"id": "r1", "protocol": "rcp", "status": "running", "seed": 4,
                            "started_at": "2026-01-31T10:00:00.000Z"})
    _sql.insert(project, "runs", {"id": "r2", "protocol": "rcp", "status": "running", "seed": 4,
                            "started_at": "2026-01-31T10:00:00.000Z"})
    a = records.issue_marker_for(project, "r1", "echo/a1/session", rng=random.Random(1))
    again = records.issue_marker_for(project, "r1", "echo/a1/session", rng=random.Random(99))
    assert again == a
    row = _sql.get(project, "echo_markers", a.hex)
    assert (row["run_id"], row["issue_key"], row["marker"]) == ("r1", "echo/a1/session", str(a))
    # Another key, or the same key in another run: a new marker, never a hex issued before,
    # even when the generator replays the same draws.
    b = records.issue_marker_for(project, "r1", "echo/a1/restore/1", rng=random.Random(1))
    c = records.issue_marker_for(project, "r2", "echo/a1/session", rng=random.Random(1))
    assert len({a.hex, b.hex, c.hex}) == 3 and _sql.count(project, "echo_markers") == 3
    # Same seed and key in another run: same words, another hex.
    assert c.fragment == a.fragment
    with pytest.raises(InputError):
        records.issue_marker_for(project, "r1", "", rng=random.Random(1))


def test_a_replayed_run_does_not_duplicate_its_echo_records(project):
    _sql.insert(project, "runs", {"id": "r1", "protocol": "rcp", "status": "running", "seed": 4,
                            "started_at": "2026-01-31T10:00:00.000Z"})
    cfg = config({"hr": {"params": {"overflow": "hard_rejection"}}, "st": {}}, echo={"interval": 2})

    def once():
        fake = Fake(forget={"r2/work/hr/0", "r3/work/st/0"})
        gen = with_echo(protocol(["hr", "st"], rounds=4), cfg, run_id="r1",
                        issue_marker=lambda key: records.issue_marker_for(project, "r1", key, rng=random.Random(key)))
        drive(gen, fake, lambda n: records.persist_note(project, n) if n.kind.startswith("echo.") else None)

    def counts():  # (a check is recognised by its call, which only a runner records: see tests/runs)
        return {t: _sql.count(project, t) for t in ("echo_markers", "echo_anchors", "echo_restorations",
                                              "echo_session_seeds")}

    once()
    before = counts()
    assert before["echo_restorations"] >= 5 and before["echo_markers"] == before["echo_anchors"]
    once()  # a replay: same keys, same markers, same notes
    assert counts() == before
