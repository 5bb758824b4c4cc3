"""The Markdown the reports are written in, and its HTML.

Two halves, both pure (no I/O, no Qt):

- writing: :func:`text` escapes a value (model output included) so Markdown shows it literally,
  :func:`cell` does the same for a table cell, and :func:`num`, :func:`pct`, :func:`usd` and
  :func:`label` round numbers to the precision that means something and turn keys into labels.
  Exact values stay in the JSONL and CSV exports.
- reading: :func:`to_html` renders exactly the subset the reports emit (ATX headings, paragraphs,
  ``-`` and ``1.`` lists with one level of nesting, pipe tables, ``>`` quotes, ``---`` rules,
  fenced code, ``**strong**``, ``*emphasis*``, ```code``` and backslash escapes). Every character
  of text is HTML-escaped, so a reply that contains ``<script>`` shows as text, never as markup.

There is no Markdown library in the lock, and a general one would accept raw HTML in the input
(CommonMark does), which is exactly what a report quoting model output must never do.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

# ----- writing ----------------------------------------------------------------------------------

_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")
_LINE_START = re.compile(r"^(\s*)([-+>]|\d+[.)])(?=\s|$)")


def text(value: object) -> str:
    """``value`` as inline Markdown that shows literally: on one line, every special escaped."""
    s = " ".join(str(value if value is not None else "").split())
    s = _SPECIAL.sub(r"\\\1", s)
    return _LINE_START.sub(lambda m: m.group(1) + (m.group(2)[:-1] + "\\" + m.group(2)[-1]), s)


def block(value: object) -> list[str]:
    """Multi-line text (an artifact, a claim) as paragraph lines, each escaped; blank lines kept."""
    out = []
    for line in str(value or "").splitlines():
        out.append(text(line) if line.strip() else "")
    while out and not out[-1]:
        out.pop()
    return out or [""]


def cell(value: object) -> str:
    """A table cell: escaped, on one line, ``—`` when empty."""
    s = text(value)
    return s if s else "—"


def num(value: float | int | None, places: int = 2) -> str:
    """A number rounded for reading (``0.38333`` → ``0.38``); ``—`` for none."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    s = f"{value:.{places}f}"
    return "0." + "0" * places if s in ("-0." + "0" * places,) else s


def signed(value: float | None, places: int = 2) -> str:
    """A change, with its sign (``+0.07``, ``-0.04``)."""
    return "—" if value is None else ("+" if round(value, places) > 0 else "") + num(value, places)


def pct(value: float | None, places: int = 0) -> str:
    """A share as a percentage (``0.8089`` → ``81%``)."""
    return "—" if value is None else f"{value * 100:.{places}f}%"


def usd(value: float | None) -> str:
    if value is None:
        return "—"
    return f"${value:.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"


def yes_no(value: object) -> str:
    return "—" if value is None else ("yes" if value else "no")


def label(key: object) -> str:
    """A key as a label: ``positive_consensus`` → ``Positive consensus``."""
    s = str(key or "").replace("_", " ").replace("-", " ").strip()
    return s[:1].upper() + s[1:] if s else "—"


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    """A pipe table; cells are taken as already-escaped Markdown."""
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


# ----- reading: Markdown to HTML ----------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|(\d+)[.)])\s+(.*)$")
_RULE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,})\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)\s*$")


def inline(src: str) -> str:
    """One line of inline Markdown to HTML: escapes, code, strong, emphasis; everything escaped."""
    out: list[str] = []
    i, n = 0, len(src)
    stack: list[str] = []  # open "**" / "*"
    while i < n:
        c = src[i]
        if c == "\\" and i + 1 < n and not src[i + 1].isalnum() and not src[i + 1].isspace():
            out.append(html.escape(src[i + 1]))
            i += 2
        elif c == "`":
            j = i
            while j < n and src[j] == "`":
                j += 1
            ticks = src[i:j]
            end = src.find(ticks, j)
            if end < 0:
                out.append(html.escape(ticks))
                i = j
            else:
                out.append(f"<code>{html.escape(src[j:end].strip())}</code>")
                i = end + len(ticks)
        elif c in "*_" and (src.startswith(c * 2, i)):
            mark = c * 2
            if stack and stack[-1] == mark:
                stack.pop()
                out.append("</strong>")
            elif src.find(mark, i + 2) > i + 2:
                stack.append(mark)
                out.append("<strong>")
            else:
                out.append(html.escape(mark))
            i += 2
        elif c in "*_" and (c == "*" or _word_boundary(src, i)):
            if stack and stack[-1] == c:
                stack.pop()
                out.append("</em>")
            elif i + 1 < n and not src[i + 1].isspace() and src.find(c, i + 1) > i + 1:
                stack.append(c)
                out.append("<em>")
            else:
                out.append(html.escape(c))
            i += 1
        else:
            out.append(html.escape(c))
            i += 1
    while stack:  # an unclosed mark: close it, so the markup stays balanced
        out.append("</strong>" if len(stack.pop()) == 2 else "</em>")
    return "".join(out)


def _word_boundary(src: str, i: int) -> bool:
    """``_`` emphasises only at a word's edge (snake_case stays as it is)."""
    before = src[i - 1] if i > 0 else " "
    after = src[i + 1] if i + 1 < len(src) else " "
    return not (before.isalnum() and after.isalnum())


def _split_row(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    cells, cur, i = [], [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            cur.append(s[i:i + 2])
            i += 2
            continue
        if s[i] == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(s[i])
        i += 1
    cells.append("".join(cur).strip())
    return cells


def _is_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def body_html(md: str) -> str:
    """The HTML of a Markdown document (no ``<html>`` wrapper)."""
    lines = md.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            j = i + 1
            while j < n and not (lines[j].strip().startswith(fence.group(1)) and not lines[j].strip()[len(fence.group(1)):].strip()):
                j += 1
            lang = f' class="language-{html.escape(fence.group(2))}"' if fence.group(2) else ""
            out.append(f"<pre><code{lang}>" + html.escape("\n".join(lines[i + 1:j])) + "</code></pre>")
            i = j + 1
            continue
        m = _HEADING.match(line)
        if m:
            level = len(m.group(1))
            out.append(f"<h{level}>{inline(m.group(2))}</h{level}>")
            i += 1
            continue
        if _RULE.match(line):
            out.append("<hr>")
            i += 1
            continue
        if _is_row(line) and i + 1 < n and _TABLE_RULE.match(lines[i + 1]) and "-" in lines[i + 1]:
            head = _split_row(line)
            out.append("<table>\n<thead><tr>" + "".join(f"<th>{inline(c)}</th>" for c in head) + "</tr></thead>\n<tbody>")
            i += 2
            while i < n and _is_row(lines[i]):
                cells = _split_row(lines[i])
                cells = (cells + [""] * len(head))[:max(len(head), 1)]
                out.append("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in cells) + "</tr>")
                i += 1
            out.append("</tbody>\n</table>")
            continue
        if line.lstrip().startswith(">"):
            quoted = []
            while i < n and lines[i].lstrip().startswith(">"):
                quoted.append(re.sub(r"^\s*>\s?", "", lines[i]))
                i += 1
            out.append("<blockquote>\n" + body_html("\n".join(quoted)) + "\n</blockquote>")
            continue
        if _ITEM.match(line):
            i = _list(lines, i, out)
            continue
        para = []
        while i < n and lines[i].strip() and not _starts_block(lines, i):
            para.append(lines[i].strip())
            i += 1
        out.append("<p>" + "<br>\n".join(inline(p) for p in para) + "</p>")
    return "\n".join(out)


def _starts_block(lines: list[str], i: int) -> bool:
    line = lines[i]
    return bool(_HEADING.match(line) or _RULE.match(line) or _ITEM.match(line) or _FENCE.match(line)
                or line.lstrip().startswith(">")
                or (_is_row(line) and i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1])))


def _list(lines: list[str], i: int, out: list[str]) -> int:
    """A list starting at ``lines[i]`` (and its indented sub-items); returns the next line."""
    first = _ITEM.match(lines[i])
    assert first is not None
    indent, ordered = len(first.group(1)), first.group(2) is not None
    tag = "ol" if ordered else "ul"
    start = f' start="{int(first.group(2))}"' if ordered and int(first.group(2)) != 1 else ""
    out.append(f"<{tag}{start}>")
    n = len(lines)
    while i < n:
        m = _ITEM.match(lines[i])
        if not m or len(m.group(1)) != indent:
            break
        parts = [m.group(3)]
        i += 1
        # continuation lines (indented, not an item) join the item's text
        while i < n and lines[i].strip() and not _ITEM.match(lines[i]) and lines[i].startswith(" "):
            parts.append(lines[i].strip())
            i += 1
        item = ["<li>" + "<br>\n".join(inline(p) for p in parts)]
        sub = _ITEM.match(lines[i]) if i < n else None
        if sub and len(sub.group(1)) > indent:
            nested: list[str] = []
            i = _list(lines, i, nested)
            item.append("\n" + "\n".join(nested))
        out.append("".join(item) + "</li>")
    out.append(f"</{tag}>")
    return i


STYLE = """body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:60rem;margin:2rem auto;
padding:0 1rem;line-height:1.5;color:#1b1b1b;background:#fff}
table{border-collapse:collapse;margin:1rem 0}th,td{border:1px solid #bbb;padding:.25rem .5rem;
text-align:left;vertical-align:top}th{background:#eee}code{background:#f3f3f3;padding:0 .2rem}
pre{background:#f3f3f3;padding:.5rem;overflow-x:auto;white-space:pre-wrap}
blockquote{border-left:4px solid #bbb;margin:1rem 0;padding:0 1rem;color:#333}"""


def to_html(md: str, title: str | None = None) -> str:
    """A whole HTML page of ``md``; the title is the first heading's text unless given."""
    if title is None:
        first = next((m.group(2) for m in map(_HEADING.match, md.split("\n")) if m), "Report")
        title = re.sub(r"\\(.)", r"\1", first)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n"
            f"{body_html(md)}\n</body>\n</html>\n")
