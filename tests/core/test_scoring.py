"""The scorer (SPEC §8), per answer type, against a table of tricky replies; datasets refused with
their line and field; the arithmetic preset reproducible from its seed, with right answers."""

from __future__ import annotations

import ast
import json
import operator
import re

import pytest

from workbench.core.datasets import arithmetic, parse_dataset, to_jsonl
from workbench.core.errors import InputError
from workbench.core.scoring import Score, score

TABLE = [
    # reply, answer, type, verdict, extracted
    ("The answer is 42.", "42", "number", "correct", "42"),
    ("First 12, then 15; finally 17", "17", "number", "correct", "17"),  # several numbers: the last
    ("17 at first, but really 12", "17", "number", "incorrect", "12"),
    ("forty-two", "42", "number", "unscorable", None),  # a number in words is not read
    ("I cannot tell.", "3", "number", "unscorable", None),
    ("That makes 1,234 in all", "1234", "number", "correct", "1234"),  # thousands separators
    ("It comes to -5", "-5", "number", "correct", "-5"),  # negative
    ("It comes to −5", "-5", "number", "correct", "-5"),  # a typographic minus
    ("10 - 5 = 5", "5", "number", "correct", "5"),  # a minus between numbers is not a sign
    ("3.0", "3", "number", "correct", "3"),
    ("42 km", "42", "number", "correct", "42"),  # trailing units
    ("42km", "42", "number", "correct", "42"),
    ("1/2", "0.5", "number", "correct", "0.5"),
    ("The result is 1e3", "1000", "number", "correct", "1000"),
    ("H2O needs 2 hydrogens: 2", "2", "number", "correct", "2"),
    ("0.3001", "0.3", "number", "incorrect", "0.3001"),
    ("0.3000001", "0.3", "number", "correct", "0.3000001"),  # within 1e-6 relative
    ("The answer is (B).", "B", "choice", "correct", "B"),
    ("A good case can be made for C", "C", "choice", "correct", "C"),  # "A" before a word is English
    ("I think it is D. I am sure.", "D", "choice", "correct", "D"),
    ("Between A and B, I choose B", "A", "choice", "incorrect", "B"),  # a choice in prose: the last
    ("my pick is (c)", "C", "choice", "correct", "C"),
    ("none of them", "A", "choice", "unscorable", None),
    ("  Paris. ", "paris", "exact", "correct", "paris"),
    ('"PARIS"', "Paris", "exact", "correct", "paris"),
    ("Paris, France", "Paris", "exact", "incorrect", "paris, france"),
    ("The capital is Paris", r"\bparis\b", "regex", "correct", "Paris"),
    ("The capital is Lyon", r"\bparis\b", "regex", "incorrect", None),
    ("", "42", "number", "unscorable", None),
]


@pytest.mark.parametrize("reply, answer, kind, verdict, extracted", TABLE)
def test_each_reply_scores_as_the_table_says(reply, answer, kind, verdict, extracted):
    got = score(reply, answer, kind)
    assert (got.verdict, got.extracted) == (verdict, extracted)


@pytest.mark.parametrize("line, where", [
    ('{"question": "q"}', "line 1: id"),
    ('{"id": "a"}', "line 1: question"),
    ('{"id": "a", "question": "q", "answer": "x", "answer_type": "number"}', "line 1: answer"),
    ('{"id": "a", "question": "q", "answer": "AB", "answer_type": "choice"}', "line 1: answer"),
    ('{"id": "a", "question": "q", "answer": "(", "answer_type": "regex"}', "line 1: answer"),
    ('{"id": "a", "question": "q", "answer_type": "exact"}', "line 1: answer"),
    ('{"id": "a", "question": "q", "answer": "1", "answer_type": "numeric"}', "line 1: answer_type"),
    ('{"id": "a", "question": "q", "extra": 1}', "line 1: extra"),
    ('{"id": "a\\nb", "question": "q"}', "line 1: id"),
    ('{"id": "a", "question": "q"}\n{"id": "a", "question": "r"}', "line 2: id"),
    ("[1, 2]", "line 1"),
])
def test_a_bad_item_is_refused_with_its_line_and_field(line, where):
    with pytest.raises(InputError) as refused:
        parse_dataset(line, "items.jsonl", "jsonl")
    assert str(refused.value).startswith(f"items.jsonl: {where}")


def test_a_csv_cell_past_the_csv_modules_limit_is_refused_with_its_line():
    # It was csv.Error escaping as an internal error (exit 4).
    text = "id,question\nq1,Q?\nq2," + "x" * 200_000 + "\n"
    with pytest.raises(InputError) as refused:
        parse_dataset(text, "items.csv", "csv")
    assert str(refused.value).startswith("items.csv: line 3: not valid CSV: field larger than field limit")


def test_an_answer_without_a_type_is_a_number_when_it_is_one():
    items = parse_dataset('{"id": 1, "question": "q", "answer": 7}\n{"id": "b", "question": "q", "answer": "Paris"}',
                          "d.jsonl", "jsonl")
    assert [(i.id, i.answer, i.answer_type) for i in items] == [("1", "7", "number"), ("b", "Paris", "exact")]


def test_a_csv_dataset_reads_like_a_jsonl_one():
    items = parse_dataset("id,question,answer,answer_type\nq1,Which?,B,choice\nq2,Open?,,\n", "d.csv", "csv")
    assert [i.to_json() for i in items] == [{"id": "q1", "question": "Which?", "answer": "B", "answer_type": "choice"},
                                           {"id": "q2", "question": "Open?"}]


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def _evaluate(node):
    if isinstance(node, ast.Constant):
        return node.value
    return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))


def test_the_arithmetic_preset_is_reproducible_and_its_answers_are_right():
    items = arithmetic(200, 3)
    assert items == arithmetic(200, 3) and items != arithmetic(200, 4)
    for item in items:
        expression = re.fullmatch(r"What is the result of (\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)\?", item.question)
        assert expression and all(0 <= int(v) <= 30 for v in expression.groups())
        tree = ast.parse(item.question.removeprefix("What is the result of ").rstrip("?"), mode="eval")
        assert int(item.answer) == _evaluate(tree.body) and item.answer_type == "number"
    assert parse_dataset(to_jsonl(items), "a.jsonl", "jsonl") == items


def test_a_pattern_that_backtracks_without_end_is_unscorable_not_a_hang(monkeypatch):
    import workbench.core.scoring as scoring

    monkeypatch.setattr(scoring, "REGEX_TIMEOUT_S", 0.05)  # the bound, not a timing: the verdict is checked
    assert score("a" * 60 + "b", "(a|aa)+$", "regex").verdict == "unscorable"
    assert score("aaa", "(a|aa)+$", "regex") == scoring.Score("correct", "aaa")


@pytest.mark.parametrize("pattern, why", [
    ("a{1000000000}", "unroll it to more than 100,000"),  # compiled for minutes: the library unrolls counts
    ("((a{1000}){1000}){1000}", "unroll it to more than 100,000"),  # nested counts multiply
    ("\\\\{1000000}", "unroll it to more than 100,000"),  # an escaped backslash, then a real count
    ("(" * 999 + ")" * 999, "groups nested 999 deep"),  # was a RecursionError (a traceback)
])
def test_a_pattern_that_would_compile_without_end_is_refused_when_the_dataset_is_read(pattern, why):
    line = json.dumps({"id": "a", "question": "q", "answer": pattern, "answer_type": "regex"})
    with pytest.raises(InputError) as refused:
        parse_dataset(line, "items.jsonl", "jsonl")
    assert str(refused.value).startswith("items.jsonl: line 1: answer: is not a valid regular expression")
    assert why in str(refused.value)


@pytest.mark.parametrize("reply", ["1e400", "-1e400", "9" * 400, "1e99999999999", "1e-99999999999"])
def test_a_number_past_a_floats_range_is_unscorable_never_an_error_or_a_hang(reply):
    # "1e400" raised OverflowError as the artifact was written (a model's reply ended the run with
    # exit 4); "1e99999999999" computed 10 ** 99999999999 without end.
    assert score(f"The result is {reply}", "3", "number") == Score("unscorable", None)


def test_a_known_answer_past_a_floats_range_is_refused_when_the_dataset_is_read():
    with pytest.raises(InputError) as refused:
        parse_dataset('{"id": "a", "question": "q", "answer": "1e400", "answer_type": "number"}', "d.jsonl", "jsonl")
    assert str(refused.value).startswith("d.jsonl: line 1: answer: must hold a number")


@pytest.mark.parametrize("pattern, reply, verdict", [
    ("a{1000}", "a" * 1000, "correct"),  # counts up to the bound are patterns like any other
    ("\\{99999}", "{99999}", "correct"),  # an escaped brace is a literal, not a count
    ("\\p{L}{3}", "abc", "correct"),  # an escape's own braces are not a count
    ("[(]{3}", "(((", "correct"),  # a bracket in a class opens no group
])
def test_patterns_within_the_bounds_score_as_usual(pattern, reply, verdict):
    assert score(reply, pattern, "regex").verdict == verdict
