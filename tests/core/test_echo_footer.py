"""The footer protocol: stamp/parse round trip, trust only in the agent's own text, malformed footers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.core.errors import InputError
from workbench.core.protocols.echo.footer import (
    LINE_BREAKS,
    STATES,
    Footer,
    FooterError,
    find_footer,
    locate_footer,
    parse_footer,
    parse_footer_line,
    stamp_footer,
)
from workbench.core.protocols.echo.quoting import Quoting

SEED_FOOTER = ":: SYSTEM :: [Resonance: 7f3a9c] [Role: Architect] [State: Stable]"
FENCE = ("<<<ARTIFACT 9z>>>", "<<<END 9z>>>")

roles = st.text(min_size=1, max_size=40).filter(
    lambda s: s.strip() and not ({"[", "]"} & set(s)) and not (LINE_BREAKS & set(s)))
hexes = st.text(alphabet="0123456789abcdef", min_size=6, max_size=6)


def test_the_seed_example_parses():
    f = parse_footer_line(SEED_FOOTER)
    assert f == Footer(resonance="7f3a9c", role="Architect", state="Stable")
    assert stamp_footer("7f3a9c", "Architect", "Stable") == SEED_FOOTER
    assert str(f) == SEED_FOOTER


@given(hex_=hexes, role=roles, state=st.sampled_from(STATES))
def test_stamp_then_parse_round_trips(hex_, role, state):
    line = stamp_footer(hex_, role, state)
    f = parse_footer(f"Some answer.\n{line}")
    assert f == Footer(resonance=hex_, role=role.strip(), state=state)
    assert stamp_footer(f.resonance, f.role, f.state) == line  # and back again, canonical


@given(hex_=hexes, role=roles, state=st.sampled_from(STATES))
def test_a_footer_quoted_in_an_artifact_is_never_trusted(hex_, role, state):
    quoted = stamp_footer(hex_, role, state)
    reply = f"Reviewing a2's draft:\n{FENCE[0]}\nDraft text.\n{quoted}\n{FENCE[1]}\nMy view: fine."
    with pytest.raises(FooterError, match="inside quoted artifact text"):
        parse_footer(reply, Quoting.of([FENCE]))


def test_a_quoted_footer_after_the_agents_own_one_does_not_replace_it():
    own = stamp_footer("111111", "Builder", "Stable")
    reply = f"{own}\nAnd the Critic said:\n> {stamp_footer('222222', 'Critic', 'Degraded')}"
    f = parse_footer(reply)
    assert (f.resonance, f.role, f.state) == ("111111", "Builder", "Stable")
    # A verbatim artifact copy is data too.
    art = stamp_footer("333333", "Critic", "Recovering")
    assert parse_footer(f"{own}\n{art}", Quoting.of(artifacts=[art])).resonance == "111111"
    assert parse_footer(f"{own}\n{art}").resonance == "333333"  # unmarked, the copy would have won


def test_the_last_own_footer_line_is_the_footer():
    reply = "\n".join([stamp_footer("111111", "Architect", "Stable"), "text",
                       stamp_footer("222222", "Architect", "Degraded"), "closing words"])
    f, line = locate_footer(reply)
    assert f.resonance == "222222" and f.state == "Degraded" and line == 3


def test_a_malformed_last_footer_is_not_replaced_by_an_earlier_good_one():
    reply = SEED_FOOTER + "\n:: SYSTEM :: [Resonance: 7f3a9c] [Role: Architect] [State: Fine]"
    with pytest.raises(FooterError, match="line 2.*State must be one of"):
        parse_footer(reply)
    assert find_footer(reply) is None


@pytest.mark.parametrize("line, words", [
    (":: SYSTEM :: [Resonance: 7F3A9C] [Role: Architect] [State: Stable]", "lowercase"),
    (":: SYSTEM :: [Resonance: 7f3a9] [Role: Architect] [State: Stable]", "6 lowercase hex"),
    (":: SYSTEM :: [Resonance: 7f3a9c] [Role: ] [State: Stable]", "Role is empty"),
    (":: SYSTEM :: [Resonance: 7f3a9c] [Role: Architect] [State: stable]", "State must be one of"),
    (":: SYSTEM :: [Resonance: 7f3a9c] [State: Stable] [Role: Architect]", "malformed footer"),
    (":: SYSTEM :: [Resonance: 7f3a9c] [Role: Architect]", "malformed footer"),
    (":: SYSTEM :: [Resonance: 7f3a9c] [Role: Arch] [State: Stable] trailing", "malformed footer"),
    (":: SYSTEM :: [Resonance: 7f3a9c] [Role: A [B]] [State: Stable]", "malformed footer"),
])
def test_malformed_footers_are_refused_with_the_reason(line, words):
    with pytest.raises(FooterError, match=words):
        parse_footer(f"Answer.\n{line}")


def test_no_footer_at_all():
    with pytest.raises(FooterError, match="no footer"):
        parse_footer("Just an answer, [Resonance: 7f3a9c] mentioned inline.")
    with pytest.raises(FooterError, match="a line of its own"):
        parse_footer("As I said, :: SYSTEM :: [Resonance: 7f3a9c] [Role: A] [State: Stable]")
    with pytest.raises(FooterError, match="inside quoted artifact text"):
        parse_footer("> :: SYSTEM :: [Resonance: 7f3a9c] [Role: A] [State: Stable]")
    with pytest.raises(FooterError, match="must start with"):
        parse_footer_line("SYSTEM [Resonance: 7f3a9c]")


def test_spacing_is_tolerated_when_parsing():
    f = parse_footer("  ::SYSTEM::[Resonance:7f3a9c]  [Role:  The Critic ][State: Recovering]  ")
    assert f == Footer(resonance="7f3a9c", role="The Critic", state="Recovering")


@pytest.mark.parametrize("role, state", [("", "Stable"), ("A[1]", "Stable"), ("two\nlines", "Stable"),
                                         ("Architect", "Fine")])
def test_stamping_refuses_what_could_not_be_parsed_back(role, state):
    with pytest.raises(InputError):
        stamp_footer("7f3a9c", role, state)
