"""Resonance markers: format, parsing, the template bank, uniqueness, never reused in a project."""

from __future__ import annotations

import random
import re

import pytest

from workbench.core.errors import InputError
from workbench.core.project import _sql
from workbench.core.project import echo as echo_records
from workbench.core.protocols.echo.markers import (
    HEX_SPACE,
    Marker,
    MarkerSpaceExhausted,
    find_markers,
    generate_marker,
    generate_markers,
    load_templates,
    parse_hex_or_marker,
    parse_marker,
    parse_templates,
)

MARKER_RE = re.compile(r"^[^—\[\]\"]+ — [0-9a-f]{6}$")
SEED_EXAMPLES = ("the hand on the neck, the shape of the breath", "the weight of the morning",
                 "salt on the threshold", "the shape left by leaving")


# ----- format and parsing -----------------------------------------------------------------------
def test_a_generated_marker_has_the_spec_format():
    m = generate_marker(rng=random.Random(1))
    text = str(m)
    assert MARKER_RE.match(text), text
    assert text == f"{m.fragment} — {m.hex}"
    assert "\u2014" in text and " \u2014 " in text  # an em dash with a space each side
    assert m.fragment in load_templates()
    assert parse_marker(text) == m


def test_the_default_rng_is_secrets_and_a_seed_is_reproducible():
    a = [str(m) for m in generate_markers(5, rng=random.Random(42))]
    b = [str(m) for m in generate_markers(5, rng=random.Random(42))]
    assert a == b
    assert MARKER_RE.match(str(generate_marker()))  # secrets.SystemRandom


@pytest.mark.parametrize("text", [
    "the hand on the neck, the shape of the breath — 7f3a9c",
    '"the hand on the neck, the shape of the breath — 7f3a9c"',
    "  salt on the threshold — 000000  ",
    "“salt on the threshold — abcdef”",
])
def test_valid_markers_parse(text):
    m = parse_marker(text)
    assert len(m.hex) == 6 and m.fragment == m.fragment.strip()


@pytest.mark.parametrize("text, words", [
    ("salt on the threshold - 7f3a9c", "em dash"),
    ("salt on the threshold – 7f3a9c", "em dash"),
    ("salt on the threshold —7f3a9c", "one space on each side"),
    ("salt on the threshold  — 7f3a9c", "exactly one space"),
    ("salt on the threshold — 7F3A9C", "lowercase"),
    ("salt on the threshold — 7f3a9", "6 lowercase hex"),
    ("salt on the threshold — 7f3a9c0", "6 lowercase hex"),
    ("salt on the threshold — 7g3a9c", "6 lowercase hex"),
    (" — 7f3a9c", "fragment before the em dash is empty"),
    ("", "empty"),
    ("just words", "not a resonance marker"),
    ("salt [on] the threshold — 7f3a9c", "must not contain"),
])
def test_invalid_markers_are_refused_with_a_clear_reason(text, words):
    with pytest.raises(InputError) as err:
        parse_marker(text)
    assert words in str(err.value)


def test_a_bare_hex_or_a_marker_gives_the_hex():
    assert parse_hex_or_marker("7f3a9c") == "7f3a9c"
    assert parse_hex_or_marker("salt on the threshold — 7f3a9c") == "7f3a9c"
    with pytest.raises(InputError, match="lowercase"):
        parse_hex_or_marker("7F3A9C")


def test_find_markers_in_running_text():
    text = 'Resonance marker: "salt on the threshold — 7f3a9c"\nthen: a lantern held under water — 00ff11.'
    assert find_markers(text) == [Marker("salt on the threshold", "7f3a9c"),
                                  Marker("a lantern held under water", "00ff11")]
    assert find_markers("no marker — 7f3a9") == []


# ----- the template bank ------------------------------------------------------------------------
def test_the_template_bank_has_the_seed_examples_and_forty_more():
    bank = load_templates()
    for example in SEED_EXAMPLES:
        assert example in bank
    assert len(set(bank) - set(SEED_EXAMPLES)) >= 40
    assert len(bank) == len(set(bank))
    for fragment in bank:
        assert "—" not in fragment and fragment == fragment.strip() and fragment


def test_template_lines_skip_comments_and_refuse_bad_fragments():
    assert parse_templates(["# c", "", "a — {hex}", "b"]) == ("a", "b")
    with pytest.raises(InputError, match="echo_templates.txt:2"):
        parse_templates(["ok", "bad [x]"])
    with pytest.raises(InputError, match="no fragments"):
        parse_templates(["# only a comment"])


# ----- uniqueness -------------------------------------------------------------------------------
def test_ten_thousand_draws_are_unique():
    markers = generate_markers(10_000, rng=random.Random(2026))
    assert len({m.hex for m in markers}) == 10_000
    assert len({str(m) for m in markers}) == 10_000
    assert all(MARKER_RE.match(str(m)) for m in markers)


class ReplayRng(random.Random):
    """Returns chosen 24-bit values first (to force collisions), then random ones."""

    def __init__(self, values, seed=0):
        super().__init__(seed)
        self.values = list(values)

    def getrandbits(self, k):
        if k == 24 and self.values:  # the hex draw; choice() of a fragment draws fewer bits
            return self.values.pop(0)
        return super().getrandbits(k)


def test_a_collision_draws_again():
    rng = ReplayRng([0x7F3A9C, 0x7F3A9C, 0x000001])
    assert generate_marker({"7f3a9c"}, rng=rng).hex == "000001"


def test_an_exhausted_space_is_reported_not_looped():
    class Full(set):
        def __len__(self):
            return HEX_SPACE

    with pytest.raises(MarkerSpaceExhausted):
        generate_marker(Full(), rng=random.Random(0))


def test_the_10001st_draw_against_a_project_avoids_every_issued_hex(project):
    first = generate_markers(10_000, rng=random.Random(99))
    echo_records.record_markers(project, first)
    assert _sql.count(project, "echo_markers") == 10_000
    # The same seed replays the first draw's sequence: without the collision check it would
    # return the hex issued first.
    replay = random.Random(99)
    new = echo_records.issue_marker(project, rng=replay)
    assert new.hex not in {m.hex for m in first}
    assert _sql.count(project, "echo_markers") == 10_001
    # And a rigged RNG that offers every issued hex first still gets a fresh one.
    rigged = ReplayRng([int(m.hex, 16) for m in first[:50]] + [int(new.hex, 16)])
    newer = echo_records.issue_marker(project, rng=rigged)
    assert newer.hex not in echo_records.issued_hexes(project) - {newer.hex}
    assert _sql.count(project, "echo_markers") == 10_002


def test_a_marker_is_never_recorded_twice(project):
    m = echo_records.issue_marker(project, rng=random.Random(5))
    with pytest.raises(echo_records.MarkerReusedError):
        echo_records.record_marker(project, m)
    with pytest.raises(echo_records.MarkerReusedError):  # same hex, other words: still the same marker
        echo_records.record_marker(project, Marker("a lantern held under water", m.hex))
    assert _sql.count(project, "echo_markers") == 1
