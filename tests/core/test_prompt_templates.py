"""Prompt templates (SPEC §7): checked before use, rendered in Jinja2's sandbox, and an untrusted
variable never reachable unfenced, whatever the template writes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.core import registry
from workbench.core.protocols.shared.declaration import Prompts, check_overrides
from workbench.core.protocols.shared.fencing import Fence
from workbench.core.protocols.shared.templates import PromptTemplate, TemplateProblem, Variable

VARIABLES = (Variable("query", "the question"), Variable("persona", "the persona"),
             Variable("artifact", "another agent's answer", untrusted=True),
             Variable("responses", "several answers", untrusted=True),
             Variable("reply_format", "the reply's JSON", required=True))
SECRET = "THE-UNTRUSTED-TEXT 7f3a"
VALUES = {"query": "Q?", "persona": "", "artifact": SECRET, "responses": [SECRET + " A", SECRET + " B"],
          "reply_format": "JSON"}


def user(body: str) -> str:
    return "{% block user %}" + body + "{{ reply_format }}{% endblock %}"


def render(text: str) -> tuple[dict, ...]:
    return PromptTemplate(text, VARIABLES).render(VALUES, Fence())


def test_a_template_renders_its_blocks_as_messages_in_order():
    messages = render("{% block system %}{{ persona or 'You are careful.' }}{% endblock %}\nignored\n"
                      + user("Question: {{ query }}\n"))
    assert messages == ({"role": "system", "content": "You are careful."},
                        {"role": "user", "content": "Question: Q?\nJSON"})


def test_an_untrusted_value_arrives_fenced_whole():
    fence = Fence()
    (message,) = PromptTemplate(user("{{ artifact }}\n"), VARIABLES).render(VALUES, fence)
    assert message["content"] == f"<<<{fence.name}>>>\n{SECRET}\n<<<END-{fence.name}>>>\nJSON"


def test_a_list_of_untrusted_values_is_fenced_item_by_item():
    (message,) = render(user("{% for r in responses %}[{{ r }}]{% endfor %}"))
    assert message["content"].count("<<<FENCE-") == 2 and message["content"].count("<<<END-FENCE-") == 2


# Whatever a template does with an untrusted value, the text is either absent, refused, or fenced.
ATTEMPTS = [
    "{{ artifact|upper }}", "{{ artifact|lower }}", "{{ artifact|string }}", "{{ artifact[:8] }}",
    "{{ (artifact|string)[1:] }}", "{{ (artifact|string)[:-1] }}", "{{ artifact|replace('T', 'x') }}",
    "{{ (artifact|string).split(':')|join('') }}", "{{ artifact|length }}", "{{ artifact|list|join('') }}",
    "{{ artifact|truncate(5) }}", "{{ artifact|wordwrap(3) }}", "{{ artifact|reverse|join('') }}",
    "{{ artifact._token }}", "{{ artifact.__class__ }}", "{{ artifact.__str__() }}",
    "{{ artifact|attr('_token') }}", "{{ responses|map('string')|join('|') }}", "{{ responses[0]|trim }}",
    "{% set x = artifact|string %}{{ x[0:] }}", "{{ artifact ~ '' }}", "{{ '%s'|format(artifact) }}",
    "{{ artifact|tojson }}", "{{ artifact|e }}", "{{ artifact|urlencode }}", "{{ artifact|center(80) }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}", "{{ self.__init__.__globals__ }}",
    "{{ cycler.__init__.__globals__ }}", "{{ lipsum.__globals__ }}", "{{ range.__class__ }}",
]


@pytest.mark.parametrize("attempt", ATTEMPTS)
def test_no_template_reaches_an_untrusted_value_unfenced(attempt):
    try:
        messages = render(user(attempt))
    except TemplateProblem:
        return  # refused: nothing was sent
    text = "".join(m["content"] for m in messages)
    unfenced = re.sub(r"<<<FENCE-[0-9A-F]{32}>>>\n.*?\n<<<END-FENCE-[0-9A-F]{32}>>>", "", text, flags=re.S)
    assert "UNTRUSTED" not in unfenced.upper() and "7F3A" not in unfenced.upper(), (attempt, text)


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=200))
def test_any_untrusted_text_is_fenced_and_nothing_of_it_escapes(text):
    fence = Fence()
    (message,) = PromptTemplate(user("A {{ artifact }} B "), VARIABLES).render({**VALUES, "artifact": text}, fence)
    body = message["content"]
    assert body.startswith(f"A <<<{fence.name}>>>\n") and body.endswith(f"\n<<<END-{fence.name}>>> B JSON")
    assert body.count(f"<<<END-{fence.name}>>>") == 1  # the text cannot close the fence


@pytest.mark.parametrize("text, why", [
    (user("{{ query }") , "line 1: syntax error"),
    ("{% block user %}\n\n{{ nope }}{{ reply_format }}{% endblock %}", "line 3: unknown variable 'nope'"),
    ("{% block user %}{{ query }}{% endblock %}", "leaves out the required variable 'reply_format'"),
    ("{% block system %}{{ reply_format }}{% endblock %}", "has no {% block user %}"),
    ("{% block footer %}{% endblock %}" + user(""), "unknown block 'footer'"),
])
def test_a_template_is_refused_with_its_line_and_reason(text, why):
    with pytest.raises(TemplateProblem) as refused:
        PromptTemplate(text, VARIABLES).check()
    assert why in str(refused.value)


def test_every_registered_protocols_default_templates_pass_their_own_checks():
    for protocol in registry.protocols().values():
        for step in protocol.steps:
            template = protocol.default_template(step).check()
            required = {v.name for v in step.variables if v.required}
            assert required <= template.used(), (protocol.name, step.name)


def test_an_override_is_checked_against_its_step():
    rcp = registry.get("rcp")
    with pytest.raises(ValueError, match=r"^prompts\.nope: rcp has no step 'nope'"):
        check_overrides(rcp, {"nope": "x"})
    with pytest.raises(ValueError, match=r"^prompts\.vote: leaves out the required variable 'reply_format'"):
        check_overrides(rcp, {"vote": "{% block user %}{{ artifact }}{% endblock %}"})


def test_prompts_mark_an_edited_step_and_give_every_steps_hash():
    rcp = registry.get("rcp")
    edited = "{% block user %}Sign it? {{ artifact }} {{ reply_format }}{% endblock %}"
    prompts = Prompts(rcp, {"vote": edited})
    made = prompts.provenance()
    assert made["vote"]["default"] is False and made["vote"]["text"] == edited
    assert made["generate"]["default"] is True and made["generate"]["text"] == rcp.default_text("generate")
    call = prompts.call("vote", key="k", agent="a", values={"query": "q", "persona": "", "artifact": "x",
                                                             "reply_format": "F"})
    assert call.meta["template_sha256"] == made["vote"]["sha256"] and call.meta["step"] == "vote"
    assert call.messages[0]["content"].startswith("Sign it? <<<FENCE-")
    # sim's draws hang on the prompt the default template would have made
    assert "Given your perspective" in call.meta["sim_prompt"]
