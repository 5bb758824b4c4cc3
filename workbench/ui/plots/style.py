"""What every plot shares: the lazy pyqtgraph import, the theme's colours, and UI.md's tier look.

pyqtgraph is heavy, so it is imported by :func:`pg` the first time a plot is built (when a plot
is first shown), never when the window starts. Every tier pairs its colour with a shape (and
negative polar with a hatch), so the tiers stay apart for colour-blind readers (UI.md):

| tier | colour | marker |
|---|---|---|
| positive_consensus | green | filled circle |
| positive_polar | orange | filled triangle pointing up |
| negative_polar | orange | hatched triangle pointing down, outlined |
| negative_consensus | red | filled square |
| accelerator / mitigator (positive consensus) | green | star / diamond, dark outline |
| a null rate on one axis | the tier's colour | the tier's shape, hollow |
"""

from __future__ import annotations

from functools import cache
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QPalette, QPen
from PySide6.QtWidgets import QApplication

from workbench.core.protocols.shared.tiers import GLYPHS, KIND_GLYPHS, KIND_SYMBOLS, LABELS, SYMBOLS, TIERS
from workbench.ui import theme

ROLE_COLOURS = {"light": {"alpha": "#1f5fa8", "beta": "#7b3fa0", "gamma": "#00766c", "silent": "#5f5f5f"},
                "dark": {"alpha": "#7fb3f0", "beta": "#c49be0", "gamma": "#4fd1c0", "silent": "#b4b4b4"}}
ROLE_SYMBOLS = {"alpha": "o", "beta": "s", "gamma": "t1", "silent": "star"}
# A chart's smallest size (UI.md: at least 300 px of height at 1280×720, 240 at 150 %): a dock with
# less room scrolls its panel rather than draw a chart nobody can read. Larger type (zoom,
# presenter mode) takes more of it for titles, ticks and labels: see plot_min().
PLOT_MIN = (400, 300)
PLOT_TEXT_ROWS = 4  # the lines of text a chart's height holds beside its data (title, ticks, axis title)


@cache
def pg() -> Any:
    """pyqtgraph, imported (and configured) on first use."""
    import pyqtgraph

    pyqtgraph.setConfigOptions(antialias=True, useOpenGL=False, exitCleanup=False)
    return pyqtgraph


def pen(colour: QColor | str, width: float = 1.0, style: Qt.PenStyle = Qt.PenStyle.SolidLine) -> QPen:
    """A cosmetic pen: its width is in pixels whatever the view's scale (a plain QPen's width
    is in data units, so a 1.4-wide line over a 0..1 axis would paint the whole view)."""
    p = QPen(QColor(colour), width, style)
    p.setCosmetic(True)
    return p


def palette_colour(role: QPalette.ColorRole) -> QColor:
    app = QApplication.instance()
    return app.palette().color(role) if app is not None else QColor("#ffffff")


def background() -> QColor:
    return palette_colour(QPalette.ColorRole.Base)


def foreground() -> QColor:
    return palette_colour(QPalette.ColorRole.Text)


def muted() -> QColor:
    return theme.colour("muted")


def tier_colour(tier: str) -> QColor:
    return theme.colour(tier)


def role_colour(role: str) -> QColor:
    return QColor(ROLE_COLOURS[theme.current_theme()].get(role, ROLE_COLOURS["light"]["silent"]))


def with_alpha(colour: QColor, alpha: int) -> QColor:
    c = QColor(colour)
    c.setAlpha(alpha)
    return c


def dark_background() -> bool:
    """Whether the plots' background (the palette's Base) is dark: outlines go lighter then."""
    return theme.luminance(background()) < 0.2


def tier_style(tier: str, *, hollow: bool = False, kind: str | None = None) -> dict[str, Any]:
    """``symbol``, ``pen`` and ``brush`` of a tier's markers (``kind``: accelerator or mitigator).
    On a dark background an outline is lighter than the fill (a darker one vanishes there)."""
    c = tier_colour(tier)
    dark = dark_background()
    outline = QColor(c).lighter(150) if dark else QColor(c).darker(150)
    symbol = KIND_SYMBOLS.get(kind or "", SYMBOLS.get(tier, "o"))
    if hollow:  # no fill: the outline alone must carry the tier, so it is bright and thick on dark
        return {"symbol": symbol, "pen": pen(QColor(c).lighter(140) if dark else c, 2.4 if dark else 1.8),
                "brush": QBrush(Qt.BrushStyle.NoBrush)}
    if tier == "negative_polar":  # orange, outlined over a pale fill (UI.md: hatched or outlined)
        return {"symbol": symbol, "pen": pen(outline, 2.2 if dark else 1.8), "brush": QBrush(with_alpha(c, 90))}
    if kind:
        return {"symbol": symbol, "pen": pen(foreground(), 1.2), "brush": QBrush(c)}
    return {"symbol": symbol, "pen": pen(outline, 0.8), "brush": QBrush(c)}


def region_text_colour(tier: str) -> QColor:
    """A region label's colour: the tier's, a step towards the text colour of the theme."""
    if tier == "unclassified":
        return foreground()
    c = tier_colour(tier)
    return QColor(c).lighter(115) if dark_background() else QColor(c).darker(125)


def region_brush(tier: str) -> QBrush:
    """A region's faint fill; negative polar's is hatched, as its markers are."""
    c = with_alpha(tier_colour(tier), 34)
    if tier == "negative_polar":
        return QBrush(with_alpha(tier_colour(tier), 60), Qt.BrushStyle.BDiagPattern)
    return QBrush(c)


def style_plot(widget: Any, *, left: str = "", bottom: str = "") -> None:
    """The theme's background, axis and text colours on a PlotWidget (or PlotItem)."""
    item = widget.getPlotItem() if hasattr(widget, "getPlotItem") else widget
    if hasattr(widget, "setBackground"):
        widget.setBackground(background())
    fg = foreground()
    font = type_font()
    for name in ("left", "bottom", "right", "top"):
        axis = item.getAxis(name)
        axis.setPen(pen(muted()))
        axis.setTextPen(pen(fg))
        axis.enableAutoSIPrefix(False)  # never "(x0.001)": rates and confidences are read as they are
        if font is not None:
            axis.setStyle(tickFont=font)
            axis.label.setFont(font)
    if left:
        item.setLabel("left", left, color=fg.name())
    if bottom:
        item.setLabel("bottom", bottom, color=fg.name())
    item.setMenuEnabled(False)
    item.hideButtons()


def zoom() -> float:
    """The window's type scale: its zoom, times presenter mode's (markers scale with it, as the
    fonts do)."""
    return theme.type_scale()


def legend_html(extra: str = "") -> str:
    """One line naming every marker, in the tiers' colours (for a label beside a chart)."""
    parts = []
    for tier in TIERS:
        parts.append(f'<span style="color:{tier_colour(tier).name()}">{GLYPHS[tier]}</span> {LABELS[tier]}')
    green = tier_colour("positive_consensus").name()
    parts.append(f'<span style="color:{green}">{KIND_GLYPHS["accelerator"]}</span> accelerator')
    parts.append(f'<span style="color:{green}">{KIND_GLYPHS["mitigator"]}</span> mitigator')
    parts.append("hollow: a cluster cast no vote (∅)")
    return " &nbsp; ".join(parts) + (f" &nbsp; {extra}" if extra else "")


def plot_min() -> tuple[int, int]:
    """A chart's smallest size at the window's type scale: PLOT_MIN, and the room its larger
    text takes on top (the data area keeps its size)."""
    line = 14  # a line of text at the normal size, in pixels (about)
    grow = max(theme.type_scale() - 1.0, 0.0) * line
    return PLOT_MIN[0] + int(PLOT_TEXT_ROWS * grow), PLOT_MIN[1] + int(PLOT_TEXT_ROWS * grow)


def type_font():
    """The application font at the window's type scale (presenter mode's larger type included)."""
    from PySide6.QtGui import QFont

    app = QApplication.instance()
    if app is None:
        return None
    font = QFont(app.font())
    if theme.presenter_scale() != 1.0:
        font.setPointSizeF(font.pointSizeF() * theme.presenter_scale())
    return font


def title(plot: Any, text: str) -> None:
    """A plot's title in the theme's text colour."""
    plot.setTitle(html(text, size="9pt"))


def text_item(text: str = "", colour: QColor | None = None, size: str = "", anchor=(0, 0)) -> Any:
    """A TextItem showing ``text`` as HTML in the theme's colours."""
    item = pg().TextItem(anchor=anchor)
    if text:
        item.setHtml(html(text, colour, size=size))
    return item


def html(text: str, colour: QColor | None = None, bold: bool = False, size: str = "") -> str:
    """A TextItem's HTML with the theme's colour; a size in pt follows the window's zoom."""
    c = (colour or foreground()).name()
    weight = "font-weight:600;" if bold else ""
    if size.endswith("pt"):
        size = f"{float(size[:-2]) * theme.type_scale():.1f}pt"
    fs = f"font-size:{size};" if size else ""
    return f'<span style="color:{c};{weight}{fs}">{text}</span>'
