"""Resonance Echo's prompts as declared templates (SPEC §7): the steps, their overrides as
``prompts["echo.STEP"]``, the untrusted recent exchange, and a simulated panel that reads the
calls' values, never their wording."""

from __future__ import annotations

import random

import pytest

from tests.core.test_echo_wrap import Fake, config, protocol
from workbench.core import registry
from workbench.core.errors import InputError
from workbench.core.protocols.echo import EchoPlan, MarkerIssuer, drive, echo_session
from workbench.core.protocols.echo.steps import IDENTITY, echo_values
from workbench.core.protocols.echo.wrap import with_echo
from workbench.core.protocols.shared.declaration import Prompts
from workbench.core.protocols.shared.fencing import mask_fences
from workbench.core.protocols.shared.steps import Batch
from workbench.core.protocols.shared.templates import TemplateProblem
from workbench.core.runs.config import parse_run_config, protocol_generator
from workbench.core.runs.provenance import prompts_for, provenance, stored_prompts, summary_fields
from workbench.core.sim import SimPanel

RECITE = "{% block user %}{{ name }}, what is the phrase you were given to keep?{% endblock %}"
SEED = """{% block user %}[SEED]
{{ role }} | {{ marker }} | {{ recent_exchange if recent_exchange else "-" }}
{{ message }}{% if check_hex %} [Resonance check: {{ check_hex }}]{% endif %}{% endblock %}"""


def test_echo_declares_a_template_for_every_text_it_sends():
    echo = registry.get("echo")
    assert not echo.runnable and [s.name for s in echo.steps] == ["context_seed", "anchor", "recite", "restore"]
    for step in echo.steps:
        template = echo.default_template(step).check()
        untrusted = {v.name for v in step.variables if v.untrusted}
        assert untrusted <= {"recent_exchange"} and ("recent_exchange" in untrusted) == (
            step.name in ("context_seed", "restore"))
        required = {v.name for v in step.variables if v.required}
        assert required == (set() if step.name == "recite" else {"marker", "message"})
        assert template.used() <= {v.name for v in step.variables}


def test_no_echo_prompt_text_is_left_in_python():
    """Every string constant of Echo's code and of sim's Echo agent (docstrings aside) is free of
    the prompts' words: they live in the templates only."""
    import ast
    from pathlib import Path

    import workbench.core.protocols.echo as package
    import workbench.core.sim.echo as sim_echo

    words = ("recite the resonance marker", "[CONTEXT SEED]", "[USER MESSAGE]", "[Resonance check",
             "Include this marker", "Your working context", "After any compaction", "You are ")
    paths = [*Path(package.__file__).parent.glob("*.py"), Path(sim_echo.__file__)]
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        texts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                 and id(n) not in docstrings]
        assert not [t for t in texts if any(w in t for w in words)], path.name


# ----- overrides through with_echo ----------------------------------------------------------------
def run_with(cfg, fake, prompts, **kw):
    notes = []
    agents = [a.id for a in cfg.agents]
    drive(with_echo(protocol(agents, **kw), cfg, run_id=None, issue_marker=None, prompts=prompts), fake, notes.append)
    return notes


def test_an_override_of_the_context_seed_reaches_exactly_the_stateless_agents_calls():
    cfg = config({"st": {}, "hr": {"params": {"overflow": "hard_rejection"}}}, echo={"interval": 2})
    plain, edited = Fake(forget={"r2/work/hr/0"}), Fake(forget={"r2/work/hr/0"})
    run_with(cfg, plain, None, rounds=4, fence=True)
    run_with(cfg, edited, Prompts(IDENTITY, {"context_seed": SEED}), rounds=4, fence=True)
    assert [c.key for c in plain.calls] == [c.key for c in edited.calls]
    for before, after in zip(plain.calls, edited.calls):
        if before.agent == "st":  # every call of the stateless agent: the edited block, the same message
            assert after.messages[-1]["content"].startswith("[SEED]\nst | ")
            assert after.messages[-1]["content"].endswith(before.messages[-1]["content"].split("[USER MESSAGE]\n")[1])
            assert after.meta["echo"]["step"] == "context_seed" and after.meta["echo"]["inputs"]["role"] == "st"
        else:
            # hr's calls (checks, work, restoration) untouched, up to the restoration's fresh fence
            assert [mask_fences(m["content"]) for m in after.messages] == [
                mask_fences(m["content"]) for m in before.messages]
    # The quoted exchange arrives fenced in the edited template too, in the protocol's own fence.
    later = [c for c in edited.calls if c.agent == "st"][-1]
    assert f"<<<{later.meta['delimiter']}>>>" in later.messages[-1]["content"]
    assert later.meta["delimiter"].startswith("ARTIFACT-")  # the protocol's own fence, reused


def test_an_override_of_recite_changes_every_recital_request_and_nothing_else():
    cfg = config({"hr": {"params": {"overflow": "hard_rejection"}}}, echo={"interval": 2})
    fake = Fake(forget={"r2/work/hr/0"})
    run_with(cfg, fake, Prompts(IDENTITY, {"recite": RECITE}), rounds=4)
    asking = [c for c in fake.calls if "what is the phrase you were given" in c.messages[-1]["content"]]
    assert [c.key for c in asking] == [c.key for c in fake.calls if c.purpose == "verify"]
    assert {c.meta["step"] for c in asking} == {"anchor", "recite", "restore"}  # alone, or carried
    assert all(c.meta["protocol"] == "echo" and c.meta["template_sha256"] for c in asking)


def test_a_template_that_cuts_the_quoted_exchange_is_refused():
    cfg = config({"st": {}}, echo={"interval": 2})
    sly = SEED.replace("{{ recent_exchange if recent_exchange else \"-\" }}", "{{ (recent_exchange | string)[:18] }}")
    with pytest.raises(TemplateProblem, match="untrusted variable was cut"):
        run_with(cfg, Fake(), Prompts(IDENTITY, {"context_seed": sly}), rounds=3)


# ----- the simulated panel reads values -----------------------------------------------------------
def session(persona: dict, prompts=None, queries=None, pattern="stateful"):
    plan = EchoPlan(agent="e1", persona="The Librarian", pattern=pattern, interval=2,
                    queries=queries or ["Draft the lending rules for the tool shelf."] * 5)
    panel, issuer, replies = SimPanel(3, {"e1": persona}), MarkerIssuer(random.Random(3)), []

    def answer(call):
        replies.append((call, panel.answer(call)))
        return replies[-1][1]

    summary = drive(echo_session(plan, issuer(), new_marker=issuer, prompts=prompts), answer)
    return summary, replies


def test_sim_recites_when_asked_whatever_the_recital_request_says():
    _, plain = session({"context_budget": 8000})
    _, edited = session({"context_budget": 8000}, Prompts(IDENTITY, {"recite": RECITE}))
    checks = [(c.key, r.text) for c, r in edited if c.purpose == "verify"]
    assert checks and all("Resonance: " in text for _, text in checks)
    assert checks == [(c.key, r.text) for c, r in plain if c.purpose == "verify"]


def test_sim_answers_a_turn_as_work_even_when_its_query_mentions_a_recital():
    query = "Please recite the resonance marker of the library's old catalogue, then draft the rules."
    _, replies = session({"context_budget": 8000}, queries=[query] * 3)
    turns = [(c, r) for c, r in replies if c.purpose == "turn"]
    assert turns and all("Resonance:" not in r.text for _, r in turns)
    assert turns[0][0].messages[-1]["content"] == query and echo_values(turns[0][0]) == {}  # sent as it is


def test_sim_stamps_the_role_the_session_states():
    _, replies = session({"context_budget": 8000, "footers": True}, pattern="stateless")
    assert all("[Role: The Librarian]" in r.text for _, r in replies)


# ----- a run config's prompts["echo.STEP"] ---------------------------------------------------------
def rcp(**extra) -> dict:
    return {"protocol": "rcp", "query": "Q?", "seed": 1, "providers": {"sim": {"model": "sim"}},
            "clusters": [{"name": "a", "agents": [{"id": "a1", "provider": "sim"}]},
                         {"name": "b", "agents": [{"id": "b1", "provider": "sim"}]}], **extra}


@pytest.mark.parametrize("prompts, field, words", [
    ({"echo.nope": "x"}, "prompts.echo.nope", "echo has no step 'nope' (its steps: context_seed, anchor"),
    ({"echo.recite": "{% block user %}{{ name }{% endblock %}"}, "prompts.echo.recite", "line 1: syntax error"),
    ({"echo.recite": "{% block user %}{{ name }} {{ api_key }}{% endblock %}"}, "prompts.echo.recite",
     "unknown variable 'api_key'"),
    ({"echo.anchor": "{% block user %}{{ message }}{% endblock %}"}, "prompts.echo.anchor",
     "leaves out the required variable 'marker'"),
    ({"echo.context_seed": "{% block user %}{{ marker }}{% endblock %}"}, "prompts.echo.context_seed",
     "leaves out the required variable 'message'"),
    ({"echo.recite": "{% block system %}x{% endblock %}"}, "prompts.echo.recite", "has no {% block user %}"),
    # Faults that only rendering shows: refused with the config too, not at the first restoration.
    ({"echo.restore": "{% block system %}{{ marker }}{% endblock %}{% block user %}{{ message.__class__ }}"
                      "{{ message }}{% endblock %}"}, "prompts.echo.restore", "access to attribute '__class__'"),
    ({"echo.restore": "{% block system %}{{ marker }} {{ (recent_exchange | string)[:18] }}{% endblock %}"
                      "{% block user %}{{ message }}{% endblock %}"}, "prompts.echo.restore",
     "an untrusted variable was cut"),
    ({"echo.context_seed": "{% block user %}{{ marker }} {{ message }}{% if not check_hex %}{{ 1 / 0 }}{% endif %}"
                           "{% endblock %}"}, "prompts.echo.context_seed", "could not be rendered"),
])
def test_a_bad_echo_override_names_its_step(prompts, field, words):
    with pytest.raises(InputError) as err:
        parse_run_config(rcp(echo={}, prompts=prompts))
    assert err.value.field == field and words in err.value.message


def test_an_echo_override_needs_a_run_wrapped_in_echo():
    with pytest.raises(InputError) as err:
        parse_run_config(rcp(prompts={"echo.recite": RECITE}))
    assert err.value.field == "prompts.echo.recite" and 'no "echo" object' in err.value.message


def test_echo_steps_are_in_the_run_provenance_and_summary():
    cfg = parse_run_config(rcp(echo={}, prompts={"echo.recite": RECITE}))
    made = prompts_for(cfg)
    assert made.echo is not None and made.echo.template("recite").text == RECITE and made.edited
    stored = provenance(cfg, made)
    assert stored["protocols"] == {"rcp": "1.0", "echo": "1.0"}
    assert stored["prompts"]["echo.recite"]["text"] == RECITE and stored["prompts"]["echo.recite"]["default"] is False
    assert stored["prompts"]["echo.anchor"]["default"] is True and stored["prompts"]["vote"]["default"] is True
    summary = summary_fields(cfg, made)
    assert list(summary["prompts"]) == ["generate", "vote", "ballot", "echo.context_seed", "echo.anchor",
                                        "echo.recite", "echo.restore"]
    assert summary["prompts"]["echo.recite"]["default"] is False and summary["warnings"]
    # A resumed run takes Echo's templates from its provenance, not from its config.
    again = stored_prompts(cfg.model_copy(update={"prompts": {}}), stored)
    assert again.echo.template("recite").text == RECITE and again.echo.is_default("anchor")
    # Without echo there are no Echo steps anywhere.
    bare = parse_run_config(rcp())
    assert prompts_for(bare).echo is None and not any(k.startswith("echo.") for k in
                                                      summary_fields(bare, prompts_for(bare))["prompts"])


def test_protocol_generator_hands_the_run_its_echo_templates():
    cfg = parse_run_config(rcp(echo={"patterns": {"a1": "stateful", "b1": "stateful"}},
                               prompts={"echo.recite": RECITE}))
    gen = protocol_generator(cfg)
    batch = next(gen)
    while not isinstance(batch, Batch):
        batch = gen.send(None)
    assert [c.key for c in batch.calls] == ["echo/a1/check/1", "echo/b1/check/1"]
    assert all("what is the phrase you were given" in c.messages[-1]["content"] for c in batch.calls)
