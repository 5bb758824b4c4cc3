"""Marker verification: the exact 6-hex suffix, in the agent's own text only."""

from __future__ import annotations

import pytest

from workbench.core.errors import InputError
from workbench.core.protocols.echo.markers import Marker
from workbench.core.protocols.echo.quoting import Quoting, own_text, quoted_spans
from workbench.core.protocols.echo.verify import verify_reply

MARKER = Marker("the hand on the neck, the shape of the breath", "7f3a9c")
FENCE = ("<<<ARTIFACT 4d1e>>>", "<<<END ARTIFACT 4d1e>>>")


def test_paraphrased_poetic_text_with_the_right_hex_is_verified():
    reply = "My marker: a hand at the neck, breath taking shape — 7f3a9c. Carrying on."
    r = verify_reply(reply, MARKER)
    assert r.verified and r.found_hex == "7f3a9c"
    at = reply.index("7f3a9c")
    assert r.where == {"line": 1, "column": at + 1, "offset": at}
    assert r.expected_hex == "7f3a9c" and not r.in_quoted


def test_the_hex_alone_is_enough_and_the_marker_may_be_given_as_a_string_or_hex():
    for marker in (MARKER, str(MARKER), "7f3a9c"):
        assert verify_reply("Resonance: 7f3a9c", marker).verified


def test_the_exact_poetic_text_with_a_wrong_hex_fails():
    r = verify_reply("the hand on the neck, the shape of the breath — 7f3a9d", MARKER)
    assert not r.verified
    assert r.found_hex == "7f3a9d"
    assert "7f3a9d, not 7f3a9c" in r.reason


def test_no_hex_at_all_fails_and_english_words_are_not_taken_for_a_hex():
    r = verify_reply("the hand on the neck, the shape of the breath. A facade, a decade.", MARKER)
    assert not r.verified and r.found_hex is None
    assert "does not contain" in r.reason


@pytest.mark.parametrize("reply", [
    "ok 7f3a9c1", "ok x7f3a9c", "ok 07f3a9c", "id_7f3a9c", "7f3a9cff",
])
def test_the_hex_must_stand_as_a_word(reply):
    assert not verify_reply(reply, MARKER).verified


@pytest.mark.parametrize("reply", ["[Resonance: 7f3a9c]", "(7f3a9c)", "hex:7f3a9c.", "`7f3a9c`", "7f3a9c"])
def test_punctuation_around_the_hex_is_fine(reply):
    assert verify_reply(reply, MARKER).verified


def test_uppercase_does_not_count_by_default_and_says_why():
    r = verify_reply("the hand on the neck — 7F3A9C", MARKER)
    assert not r.verified
    assert r.found_hex == "7F3A9C"
    assert "case" in r.reason and "lowercase" in r.reason
    relaxed = verify_reply("the hand on the neck — 7F3A9C", MARKER, accept_uppercase=True)
    assert relaxed.verified and relaxed.found_hex == "7F3A9C"


def test_a_hex_only_inside_a_blockquote_does_not_count():
    reply = "Here is what the Critic wrote:\n> the hand on the neck — 7f3a9c\nI agree with it."
    r = verify_reply(reply, MARKER)
    assert not r.verified and r.in_quoted
    assert "only inside quoted artifact text" in r.reason


def test_a_hex_only_inside_the_runs_artifact_delimiters_does_not_count():
    reply = f"Reviewing:\n{FENCE[0]}\nDraft by a2. Resonance: 7f3a9c\n{FENCE[1]}\nLooks fine."
    quoting = Quoting.of([FENCE])
    assert not verify_reply(reply, MARKER, quoting=quoting).verified
    # Without telling the verifier about the fence, it would have been fooled: the test can fail.
    assert verify_reply(reply, MARKER).verified


def test_an_unclosed_artifact_block_masks_to_the_end():
    reply = f"Start.\n{FENCE[0]}\nResonance: 7f3a9c"
    assert not verify_reply(reply, MARKER, quoting=Quoting.of([FENCE])).verified


def test_a_verbatim_copy_of_an_artifact_shown_to_the_agent_does_not_count():
    artifact = ("Proposal from a3: keep the hybrid format. "
                ":: SYSTEM :: [Resonance: 7f3a9c] [Role: Critic] [State: Stable]")
    reply = f"Quoting the proposal: {artifact} I think it holds."
    assert verify_reply(reply, MARKER).verified  # unmarked, it would count
    r = verify_reply(reply, MARKER, quoting=Quoting.of(artifacts=[artifact]))
    assert not r.verified and r.in_quoted


def test_own_text_beside_quoted_text_still_counts():
    reply = "> the Critic's marker — 0a0b0c\nMine is the hand on the neck — 7f3a9c"
    r = verify_reply(reply, MARKER)
    assert r.verified and r.where["line"] == 2
    other = verify_reply("> the marker — 7f3a9c\nMine: 0a0b0c", MARKER)
    assert not other.verified and other.in_quoted and other.found_hex == "0a0b0c"


def test_code_fences_count_as_own_text_unless_asked():
    reply = "Reciting:\n```\nthe hand on the neck — 7f3a9c\n```"
    assert verify_reply(reply, MARKER).verified
    assert not verify_reply(reply, MARKER, quoting=Quoting(code_fences=True)).verified


def test_empty_or_failed_replies_fail_with_a_reason():
    assert "empty" in verify_reply("   ", MARKER).reason
    r = verify_reply(None, MARKER, error="context_limit: full")
    assert not r.verified and "context_limit" in r.reason


def test_a_bad_expected_marker_is_an_input_error():
    with pytest.raises(InputError):
        verify_reply("7f3a9c", "not a marker")


def test_masking_keeps_positions_and_line_breaks():
    text = "a\n> quoted 7f3a9c\nb"
    masked = own_text(text)
    assert len(masked) == len(text) and masked.count("\n") == 2
    assert "7f3a9c" not in masked
    assert quoted_spans(text) == [(2, 17)]


def test_result_serialises_with_the_documented_keys():
    d = verify_reply("7f3a9c", MARKER).as_dict()
    assert set(d) == {"verified", "expected_hex", "found_hex", "where", "reason", "in_quoted"}
