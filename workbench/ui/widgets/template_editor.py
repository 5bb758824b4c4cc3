"""A step's template in an editor that marks its variables (the protocol editor's text box).

A ``QSyntaxHighlighter`` over the Jinja2 text, line by line:

- ``{{ name }}`` of a variable of the step: the accent colour, bold when it is required (what the
  reply's parser needs: the template must keep it);
- an **untrusted** variable (a model's, a client's or a file's words): on the fence colour, the
  yellow that marks fenced text in every request view, underlined: it reaches the model fenced,
  whatever the template does with it;
- a name the step does not have: the error colour, wavy-underlined (the check says which line);
- ``{% … %}`` statements and blocks (a block is one chat message) and ``{# … #}`` comments:
  muted; a comment is never sent.

:func:`legend_html` says what the marks mean, beside the editor.
"""

from __future__ import annotations

import html
import re

from PySide6.QtCore import QSize
from PySide6.QtGui import QColor, QFont, QFontDatabase, QSyntaxHighlighter, QTextCharFormat
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from workbench.ui import theme
from workbench.ui.widgets.manual_prompt import escape_html

EXPRESSION = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}")
NAME = re.compile(r"(?<![\w.|'\"])([A-Za-z_]\w*)(?![\w'\"])")
STRING = re.compile(r"'[^']*'|\"[^\"]*\"")
LOCAL = re.compile(r"\{%-?\s*(?:for\s+([\w\s,]+?)\s+in\b|set\s+([\w\s,]+?)\s*=)")
# Words of Jinja2's expressions that are not a variable (tests, operators, constants, tags).
KEYWORDS = frozenset({
    "and", "or", "not", "in", "is", "if", "else", "elif", "endif", "for", "endfor", "block", "endblock", "set",
    "endset", "true", "false", "none", "True", "False", "None", "loop", "with", "endwith", "macro", "endmacro",
    "call", "endcall", "filter", "endfilter", "raw", "endraw", "recursive", "without", "context", "ignore",
    "missing", "defined", "undefined", "string", "number", "sequence", "iterable", "mapping", "divisibleby",
    "even", "odd", "lower", "upper", "system", "user", "assistant", "super", "self", "varargs", "kwargs",
})
EDITOR_LINES = 8  # the template's least height, in lines: enough to see a block and its words
FENCE_BACKGROUND = "#fff1c2"  # call_detail.FENCE_STYLE's: where untrusted text sits when sent
FENCE_INK = "#5c4300"


def monospace() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


class TemplateHighlighter(QSyntaxHighlighter):
    """Marks the variables of one step in its template (see the module's docstring)."""

    def __init__(self, document, parent=None):
        super().__init__(document)
        self.variables: dict[str, object] = {}  # name -> templates.Variable
        self._locals: frozenset[str] = frozenset()
        self._locals_at = -1
        self._formats()

    def set_variables(self, variables) -> None:
        self.variables = {v.name: v for v in variables}
        self.rehighlight()

    def restyle(self) -> None:
        """The current theme's colours (a new theme)."""
        self._formats()
        self.rehighlight()

    def _formats(self) -> None:
        self.f_variable = QTextCharFormat()
        self.f_variable.setForeground(theme.colour("accent"))
        self.f_required = QTextCharFormat(self.f_variable)
        self.f_required.setFontWeight(QFont.Weight.Bold)
        self.f_untrusted = QTextCharFormat()
        self.f_untrusted.setBackground(QColor(FENCE_BACKGROUND))
        self.f_untrusted.setForeground(QColor(FENCE_INK))
        self.f_untrusted.setFontUnderline(True)
        self.f_unknown = QTextCharFormat()
        self.f_unknown.setForeground(theme.colour("error"))
        self.f_unknown.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
        self.f_unknown.setUnderlineColor(theme.colour("error"))
        self.f_code = QTextCharFormat()
        self.f_code.setForeground(theme.colour("muted"))
        self.f_comment = QTextCharFormat(self.f_code)
        self.f_comment.setFontItalic(True)

    def format_of(self, name: str) -> QTextCharFormat:
        var = self.variables.get(name)
        if var is None:
            return self.f_unknown
        if getattr(var, "untrusted", False):
            return self.f_untrusted
        return self.f_required if getattr(var, "required", False) else self.f_variable

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt API)
        for m in EXPRESSION.finditer(text):
            piece = m.group(0)
            if piece.startswith("{#"):
                self.setFormat(m.start(), len(piece), self.f_comment)
                continue
            self.setFormat(m.start(), len(piece), self.f_code)
            inner = STRING.sub(lambda s: " " * len(s.group(0)), piece[2:-2])  # a string's words are not names
            for n in NAME.finditer(inner):
                name = n.group(1)
                if name in KEYWORDS and name not in self.variables:
                    continue
                if name in self._local_names() and name not in self.variables:
                    continue  # a name the template makes itself: {% for x in … %}, {% set x = … %}
                self.setFormat(m.start() + 2 + n.start(), len(name), self.format_of(name))

    def _local_names(self) -> frozenset[str]:
        """The names the whole template makes (loop variables, ``set``), once per edit."""
        document = self.document()
        if self._locals_at != document.revision():
            text = document.toPlainText()
            names = {n for groups in LOCAL.findall(text) for group in groups
                     for n in re.findall(r"[A-Za-z_]\w*", group)}
            self._locals, self._locals_at = frozenset(names), document.revision()
        return self._locals


class TemplateEdit(QPlainTextEdit):
    """The template's text box: monospace, wrapped at its width, at least :data:`EDITOR_LINES` lines
    high in the type of the moment (a fixed height set once would shrink to a few lines at 150 %)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("templateEdit")
        self.setFont(monospace())
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setTabChangesFocus(True)
        self.highlighter = TemplateHighlighter(self.document(), self)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 — Qt's method name
        hint = super().minimumSizeHint()
        frame = 2 * self.frameWidth() + int(self.document().documentMargin() * 2)
        return QSize(hint.width(), self.fontMetrics().lineSpacing() * EDITOR_LINES + frame)


def legend_html(variables=()) -> str:
    """What the marks mean, each shown as the editor shows it; then the step's variables. Short
    enough for two lines at 150 % beside the Clusters panel (:data:`LEGEND_TIP` says it in full)."""
    accent, error, muted = theme.css("accent"), theme.css("error"), theme.css("muted")
    marks = [f"<span style='color:{accent}'>{{{{ x }}}}</span> variable",
             f"<b style='color:{accent}'>{{{{ x }}}}</b> required",
             f"<u style='background:{FENCE_BACKGROUND}; color:{FENCE_INK}'>{{{{ x }}}}</u> untrusted, sent fenced",
             f"<span style='color:{error}; text-decoration: underline'>{{{{ x }}}}</span> unknown here",
             f"<span style='color:{muted}'>{{% %}}</span> block (a message)",
             f"<i style='color:{muted}'>{{# #}}</i> comment"]
    out = " · ".join(marks)
    names = []
    for v in variables:
        style = (f"background:{FENCE_BACKGROUND}; color:{FENCE_INK}; text-decoration: underline" if v.untrusted
                 else f"color:{accent}" + ("; font-weight: bold" if v.required else ""))
        names.append(f"<span style='{style}' title=\"{html.escape(v.description)}\">{escape_html(v.name)}</span>")
    if names:
        out += f"<br>This step's variables: {', '.join(names)}"
    return out


LEGEND_TIP = ("Variables of the step are in the accent colour, bold when required (the reply's parser needs it: "
              "the template must keep it). Untrusted ones (a model's, a client's or a file's words) are marked as "
              "fenced text is in every request view: they reach the model fenced, whatever the template does. A "
              "name the step does not have is wavy-underlined. {% … %} blocks and statements are muted (each "
              "block is one chat message); {# … #} comments are never sent. Hover a variable for what it holds.")


def preview_html(preview, step: str) -> str:
    """``template_preview.Preview`` as the editor's Preview tab shows it: where it comes from, then
    the request as sent (the fence marked as every request view marks it)."""
    from workbench.ui.widgets.call_detail import request_html

    muted = theme.css("muted")
    if preview is None or not preview.messages:
        reason = preview.problem if preview is not None and preview.problem else "no preview"
        return (f"<p style='color:{muted}'>The preview waits for a template the step can use "
                f"({escape_html(reason)}).</p>")
    head = (f"<p style='margin:0 0 4px 0; color:{muted}'>The first <b>{escape_html(step)}</b> call a run would send "
            f"with these templates: <code>{escape_html(preview.key)}</code> to <b>{escape_html(preview.agent)}</b>, "
            f"template @{escape_html(preview.sha256[:12])}. Rendered from {escape_html(preview.source)}.</p>")
    return head + request_html(list(preview.messages), preview.fence)


def template_diff_html(default: str, text: str) -> str:
    """``text`` against the step's ``default``, word by word, as the Inspector's R1 → R2 shows it."""
    from workbench.ui.widgets.record_diff import diff_html

    muted = theme.css("muted")
    if text == default:
        head = f"<p style='color:{muted}'>The step's default template, unchanged.</p>"
    else:
        head = (f"<p style='color:{muted}'>Against the default: <s>struck</s> is only in the default, "
                "<u>underlined</u> only in yours.</p>")
    return f"{head}<div style='font-family:monospace'>{diff_html(default, text)}</div>"
