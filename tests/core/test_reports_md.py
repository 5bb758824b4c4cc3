"""The reports' Markdown helpers and the HTML renderer for exactly the subset the reports emit."""

from __future__ import annotations

import re

import pytest

from workbench.core import report_md as md

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "**bold** <b>not bold</b> & `code <i>`",
    "| a | b | <td>",
    '"><svg onload=alert(1)>',
    "[click](javascript:alert(1))",
    "# heading?\n- item?\n> quote?\n```\n<script>x</script>",
]


@pytest.mark.parametrize("payload", HOSTILE)
def test_model_text_written_with_text_renders_literally_and_never_as_markup(payload):
    doc = "\n".join(["# Report", "", md.text(payload), "", *md.block(payload), "",
                     *md.table(["a", "b"], [[md.cell(payload), md.text(payload)]]), ""])
    html = md.body_html(doc)
    tags = set(re.findall(r"</?([a-zA-Z0-9]+)", html))
    assert tags <= {"h1", "p", "br", "table", "thead", "tbody", "tr", "th", "td"}, tags
    assert "<script" not in html and "<img" not in html and "<svg" not in html and "href" not in html
    # what shows is the text itself
    shown = re.sub(r"<[^>]+>", "", html)
    import html as h

    assert h.unescape(shown).count("alert(1)") == html.count("alert(1)")


def test_raw_html_in_markdown_is_escaped_everywhere():
    for src in ("<b>x</b>", "# <b>x</b>", "- <b>x</b>", "| <b>x</b> |\n|---|\n| <i>y</i> |", "> <b>x</b>",
                "```\n<b>x</b>\n```", "`<b>x</b>`", "**<b>x</b>**"):
        out = md.body_html(src)
        assert "<b>" not in out and "<i>" not in out, (src, out)
        assert "&lt;b&gt;" in out or "&lt;i&gt;" in out


def test_the_subset_headings_paragraphs_lists_tables_emphasis_code():
    src = "\n".join(["# Title", "", "Some *em* and **strong** and `a_b`.", "Second line.", "",
                     "- one", "- two", "  - nested", "", "1. first", "2. second", "",
                     "| H1 | H2 |", "|---|---|", "| a \\| b | c |", "", "> quoted", "", "---", "",
                     "```json", '{"a": 1}', "```"])
    out = md.body_html(src)
    assert "<h1>Title</h1>" in out
    assert "<p>Some <em>em</em> and <strong>strong</strong> and <code>a_b</code>.<br>\nSecond line.</p>" in out
    assert "<ul>\n<li>one</li>\n<li>two\n<ul>\n<li>nested</li>\n</ul></li>\n</ul>" in out
    assert "<ol>\n<li>first</li>\n<li>second</li>\n</ol>" in out
    assert "<th>H1</th><th>H2</th>" in out and "<td>a | b</td><td>c</td>" in out
    assert "<blockquote>\n<p>quoted</p>\n</blockquote>" in out and "<hr>" in out
    assert '<pre><code class="language-json">{&quot;a&quot;: 1}</code></pre>' in out


def test_snake_case_is_not_emphasis_and_unclosed_marks_stay_balanced():
    assert md.inline("risk_if_acted_upon") == "risk_if_acted_upon"
    assert md.inline("a **b") == "a **b"
    out = md.inline("*a **b* c")
    assert out.count("<em>") == out.count("</em>") and out.count("<strong>") == out.count("</strong>")


def test_text_escapes_what_markdown_would_read_and_keeps_it_on_one_line():
    assert md.text("a*b*c | d\ne") == "a\\*b\\*c \\| d e"
    assert md.text("- not a list") == "\\- not a list"
    assert md.text("1. not a list") == "1\\. not a list"
    assert md.inline(md.text("<b>*x*</b>")) == "&lt;b&gt;*x*&lt;/b&gt;"
    assert md.block("one\n\n# two\n") == ["one", "", "\\# two"]


def test_numbers_are_rounded_for_reading():
    assert md.num(0.38333333333333336) == "0.38"
    assert md.num(-0.0001) == "0.00"
    assert md.num(None) == "—" and md.num(1234) == "1,234"
    assert md.pct(0.8089005235602095) == "81%" and md.pct(0.8089, 1) == "80.9%"
    assert md.signed(0.06999999999999995) == "+0.07" and md.signed(-0.04) == "-0.04" and md.signed(0.0) == "0.00"
    assert md.usd(0.0) == "$0.00" and md.usd(0.0012) == "$0.0012" and md.usd(1.234) == "$1.23"


def test_labels_instead_of_keys():
    assert md.label("positive_consensus") == "Positive consensus"
    assert md.label("partial-overlap") == "Partial overlap"


def test_to_html_is_a_whole_page_with_an_escaped_title():
    page = md.to_html("# A <b> \\*title\\*\n\ntext")
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert "<title>A &lt;b&gt; *title*</title>" in page and '<meta charset="utf-8">' in page
