"""The RCP quadrant (n = 2): each artifact at (C+ approval rate, C- approval rate).

:class:`TierScatterPlot` is the part the quadrant shares with the resonance-ratio chart
(:mod:`.ratio_plot`): one ScatterPlotItem per marker style, created once and updated with
``setData``; points at the same place jittered (never across a threshold line) with their count;
regions filled faintly and labelled with the engine's tier and count; what-if changes ringed;
refinement-round movers drawn as arrows from round k to round k + 1; against a known answer
(SPEC §8) each point marked correct, incorrect or unscorable by a shape in the text's ink (never a
colour: the colours are the tiers'); hover and click on the nearest point within a few pixels
(``hovered`` / ``clicked`` carry the row of the point set).

:class:`QuadrantPlot` adds the paper's 2x2 layout (UI.md): x the reference cluster's rate, y the
opposing cluster's, a vertical line at theta(C+) and a horizontal one at theta(C-). A null rate
(the cluster cast no vote) puts the point on that axis's edge strip, drawn hollow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QCursor, QFont, QFontMetrics, QPainterPath, QPen, QTransform
from PySide6.QtWidgets import QApplication, QGraphicsRectItem, QToolTip

from workbench.core.protocols.shared.tiers import KINDS as PERSUASION_KINDS
from workbench.core.protocols.shared.tiers import LABELS, SHORT_LABELS, TIERS
from workbench.ui import theme
from workbench.ui.plots.style import (
    background,
    foreground,
    html,
    muted,
    pen,
    pg,
    plot_min,
    region_brush,
    region_text_colour,
    style_plot,
    tier_style,
    type_font,
    with_alpha,
    zoom,
)

pyqtgraph = pg()

KINDS = (None, *PERSUASION_KINDS)  # a point's marker: its tier's, or its persuasion kind's
EDGE = -0.07  # where a null rate sits: the axis's edge strip
JITTER = 0.022  # the largest jitter, in rate units
MAX_COUNT_LABELS = 120
HIT_PX = 9.0  # how close (in pixels) the pointer must be to a point
COUNT_GAP_PX = 3.0  # between a group of points and its "×n" label (beside it, never on it)
# The quadrant's room outside the data (0..1 and the null strip), in pixels: the region labels sit
# in bands above and below where a point can be, the "×n" labels of groups at x = 1 to its right.
MARKER_PX = 9.0  # the largest marker's half size (times the zoom)
LABEL_BAND_PX = 20.0  # one line of a region's label, with a little air
COUNT_ROOM_PX = 26.0  # "×12" beside a group at the right edge
# A point's verdict against the run's known answer (PointSet.marks: an index into MARKS; 0: none).
MARKS = (None, "correct", "incorrect", "unscorable")
# Each verdict's shape over the point, as a share of the point's size, and its legend: in the
# text's ink (outlined in the background's), so it reads over every tier's fill in both themes.
MARK_SHARE = {"correct": 0.42, "incorrect": 0.8, "unscorable": 0.75}
MARK_LEGEND = ("against the known answer: <b>•</b> in a point: correct · <b>×</b> over it: incorrect · "
               "<b>–</b> over it: unscorable (no answer read)")


def _label_pt() -> str:
    """The regions' labels at the body's size (times the window's type scale: zoom, presenter
    mode, in style.html); their fit in a region is measured in the same font (style.type_font)."""
    return f"{theme.base_point_size():g}pt"


@dataclass
class PointSet:
    """What the plot draws; every array has one entry per point (row = the caller's index)."""

    rows: np.ndarray  # int: the caller's row of each point (an artifact)
    x: np.ndarray  # float: true coordinates (NaN: on the edge strip)
    y: np.ndarray
    tier: np.ndarray  # int8: index into TIERS
    kind: np.ndarray  # int8: index into KINDS
    size: np.ndarray  # float: marker size in pixels
    changed: np.ndarray  # bool: tier differs from the run's own (what-if)
    # Threshold lines jitter must not cross, per axis: (value, whether the value itself lies above).
    sides: tuple[tuple[tuple[float, bool], ...], tuple[tuple[float, bool], ...]] = ((), ())
    arrows: list[tuple[float, float, int]] = field(default_factory=list)  # (x0, y0, point index)
    marks: np.ndarray | None = None  # int8: index into MARKS (None: no known answer, nothing marked)

    @classmethod
    def empty(cls) -> PointSet:
        z = np.zeros(0)
        return cls(z.astype(np.int64), z, z, z.astype(np.int8), z.astype(np.int8), z, z.astype(bool))

    def __len__(self) -> int:
        return len(self.rows)


def jitter(x: np.ndarray, y: np.ndarray, sides: tuple[tuple[tuple[float, bool], ...], ...] = ((), ()),
           radius: float = JITTER) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Drawn positions: points sharing a place spread on a small sunflower spiral around it,
    never across a threshold line in ``sides``. Returns (dx, dy, group of each point, group sizes)."""
    m = len(x)
    if m == 0:
        z = np.zeros(0)
        return z, z, z.astype(np.int64), z.astype(np.int64)
    kx = np.round(np.nan_to_num(x, nan=EDGE) * 1e6).astype(np.int64)
    ky = np.round(np.nan_to_num(y, nan=EDGE) * 1e6).astype(np.int64)
    _, inv, counts = np.unique(np.stack([kx, ky], axis=1), axis=0, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    order = np.argsort(inv, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(m, dtype=np.int64)
    rank[order] = np.arange(m) - np.repeat(starts, counts)
    n_in = counts[inv]
    r = np.where(n_in > 1, radius * np.sqrt(rank / np.maximum(n_in - 1, 1)), 0.0)
    angle = rank * 2.399963229728653  # the golden angle
    ox, oy = r * np.cos(angle), r * np.sin(angle)
    bx, by = np.nan_to_num(x, nan=EDGE), np.nan_to_num(y, nan=EDGE)
    for axis, (base, off) in enumerate(((bx, ox), (by, oy))):
        for line, closed_above in sides[axis]:
            near = np.abs(base - line) < radius + 1e-9
            above = base >= line - 1e-9 if closed_above else base > line + 1e-9
            off = np.where(near & above, np.abs(off), np.where(near & ~above, -np.abs(off), off))
        if axis == 0:
            ox = off
        else:
            oy = off
    return bx + ox, by + oy, inv, counts


def _bar_path() -> QPainterPath:
    """The unscorable mark: a short bar (pyqtgraph has no such symbol)."""
    path = QPainterPath()
    path.addRect(QRectF(-0.5, -0.11, 1.0, 0.22))
    return path


def mark_style(mark: str) -> dict[str, Any]:
    """``symbol``, ``pen`` and ``brush`` of a verdict's mark (MARKS): ink filled, background outlined."""
    symbol = {"correct": "o", "incorrect": "x", "unscorable": _bar_path()}[mark]
    return {"symbol": symbol, "pen": pen(background(), 1.0), "brush": QBrush(foreground())}


def _arrow_path(angle_deg: float) -> QPainterPath:
    path = QPainterPath()
    path.moveTo(0.5, 0.0)
    path.lineTo(-0.5, -0.35)
    path.lineTo(-0.25, 0.0)
    path.lineTo(-0.5, 0.35)
    path.closeSubpath()
    return QTransform().rotate(angle_deg).map(path)


class TierScatterPlot(pyqtgraph.PlotWidget):
    """Tier-styled points over labelled regions; hover and click report the point's row."""

    hovered = Signal(int)  # the caller's row, or -1
    clicked = Signal(int)

    X_RANGE = (-0.16, 1.16)
    Y_RANGE = (-0.16, 1.16)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName(type(self).__name__)
        self.setMinimumSize(*plot_min())  # (made again when the type size changes)
        self.describe = lambda row: ""  # the hover text of a row (set by the panel)
        style_plot(self)
        item = self.getPlotItem()
        item.setMouseEnabled(x=False, y=False)
        item.setXRange(*self.X_RANGE, padding=0)
        item.setYRange(*self.Y_RANGE, padding=0)
        item.showGrid(x=False, y=False)
        self._regions: list[QGraphicsRectItem] = []
        self.regions: list[dict] = []  # as last set: what each region shows
        self._region_labels: list[Any] = []
        # One item per marker style, created once: (tier, kind, hollow) -> ScatterPlotItem.
        self._items: dict[tuple[int, int, bool], Any] = {}
        for t, tier in enumerate(TIERS):
            for k, kind in enumerate(KINDS):
                if kind is not None and tier != "positive_consensus":
                    continue
                for hollow in (False, True):
                    spi = pyqtgraph.ScatterPlotItem(pxMode=True, **tier_style(tier, hollow=hollow, kind=kind))
                    spi.setZValue(10 + k)
                    item.addItem(spi)
                    self._items[(t, k, hollow)] = spi
        # One item per verdict mark, over the points (below the what-if's rings).
        self._marks: dict[int, Any] = {}
        for m, mark in enumerate(MARKS):
            if mark is not None:
                spi = pyqtgraph.ScatterPlotItem(pxMode=True, **mark_style(mark))
                spi.setZValue(15)
                item.addItem(spi)
                self._marks[m] = spi
        self._rings = pyqtgraph.ScatterPlotItem(pxMode=True, symbol="o", pen=pen(QColor("#1f5fa8"), 2.2),
                                                brush=QBrush(Qt.BrushStyle.NoBrush))
        self._rings.setZValue(20)
        item.addItem(self._rings)
        self._arrow_lines = pyqtgraph.PlotDataItem(connect="pairs", pen=pen(muted(), 1.4))
        self._arrow_lines.setZValue(5)
        item.addItem(self._arrow_lines)
        self._arrow_heads = pyqtgraph.ScatterPlotItem(pxMode=True, pen=pen(muted(), 1), brush=QBrush(muted()))
        self._arrow_heads.setZValue(6)
        item.addItem(self._arrow_heads)
        self._ghosts = pyqtgraph.ScatterPlotItem(pxMode=True, symbol="o", size=7, pen=pen(muted(), 1.2),
                                                 brush=QBrush(Qt.BrushStyle.NoBrush))
        self._ghosts.setZValue(4)
        item.addItem(self._ghosts)
        self._count_labels: list[Any] = []
        self._arrow_symbols = [_arrow_path(a) for a in range(0, 360, 10)]
        self.points = PointSet.empty()
        self.drawn_x = np.zeros(0)
        self.drawn_y = np.zeros(0)
        self._hover = -1
        scene = self.scene()
        scene.sigMouseMoved.connect(self._on_mouse_moved)
        scene.sigMouseClicked.connect(self._on_mouse_clicked)
        item.getViewBox().sigResized.connect(lambda *_: self._on_view_resized())

    def _on_view_resized(self) -> None:
        self._place_counts()

    # ----- regions ---------------------------------------------------------------------------
    def _ensure_regions(self, count: int) -> None:
        item = self.getPlotItem()
        while len(self._regions) < count:
            rect = QGraphicsRectItem()
            rect.setPen(QPen(Qt.PenStyle.NoPen))
            rect.setZValue(-10)
            item.addItem(rect, ignoreBounds=True)
            self._regions.append(rect)
            label = pyqtgraph.TextItem(anchor=(0, 0))
            label.setZValue(30)
            item.addItem(label, ignoreBounds=True)
            self._region_labels.append(label)

    def set_regions(self, regions: list[dict]) -> None:
        """``regions``: dicts of rect (x0, y0, x1, y1), tier, text, at (x, y) and anchor."""
        self.regions = regions
        self._ensure_regions(len(regions))
        for i, rect in enumerate(self._regions):
            label = self._region_labels[i]
            if i >= len(regions):
                rect.hide()
                label.hide()
                continue
            r = regions[i]
            x0, y0, x1, y1 = r["rect"]
            rect.setRect(QRectF(x0, y0, x1 - x0, y1 - y0))
            rect.setBrush(region_brush(r["tier"]))
            rect.show()
            label.setAnchor(r.get("anchor", (0, 0)))
            label.setHtml(html(r["text"], region_text_colour(r["tier"]), bold=True, size=_label_pt()))
            label.setPos(*r["at"])
            label.show()

    # ----- points ----------------------------------------------------------------------------
    def set_points(self, points: PointSet) -> None:
        """Draw ``points`` (every item is updated with setData; nothing is created or cleared)."""
        self.points = points
        dx, dy, group, counts = jitter(points.x, points.y, points.sides)
        self.drawn_x, self.drawn_y = dx, dy
        hollow = np.isnan(points.x) | np.isnan(points.y)
        kind = points.kind.astype(np.int64)
        for (t, k, h), spi in self._items.items():
            mask = (points.tier == t) & (kind == k) & (hollow == h)
            if mask.any():
                spi.setData(x=dx[mask], y=dy[mask], size=points.size[mask])
            else:
                spi.setData(x=[], y=[])
        marks = points.marks if points.marks is not None else np.zeros(len(points), dtype=np.int8)
        for m, spi in self._marks.items():
            mask = marks == m
            if mask.any():
                spi.setData(x=dx[mask], y=dy[mask], size=points.size[mask] * MARK_SHARE[MARKS[m]])
            else:
                spi.setData(x=[], y=[])
        changed = np.nonzero(points.changed)[0]
        if changed.size:
            self._rings.setData(x=dx[changed], y=dy[changed], size=points.size[changed] + 9)
        else:
            self._rings.setData(x=[], y=[])
        self._draw_counts(points, group, counts)
        self._draw_arrows(points)

    def marks_shown(self) -> dict[str, int]:
        """How many points carry each verdict's mark (tests count what a user sees)."""
        return {MARKS[m]: len(spi.data) for m, spi in self._marks.items()}

    def _draw_counts(self, points: PointSet, group: np.ndarray, counts: np.ndarray) -> None:
        shown = 0
        if len(points):
            multi = np.nonzero(counts > 1)[0]
            multi = multi[np.argsort(-counts[multi], kind="stable")][:MAX_COUNT_LABELS]
            first = np.full(len(counts), -1, dtype=np.int64)
            first[group[::-1]] = np.arange(len(group))[::-1]  # the first point of each group
            item = self.getPlotItem()
            for g in multi.tolist():
                k = int(first[g])
                if shown >= len(self._count_labels):
                    label = pyqtgraph.TextItem(anchor=(0, 1))
                    label.setZValue(25)
                    item.addItem(label, ignoreBounds=True)
                    self._count_labels.append(label)
                label = self._count_labels[shown]
                bx = EDGE if math.isnan(points.x[k]) else float(points.x[k])
                by = EDGE if math.isnan(points.y[k]) else float(points.y[k])
                members = group == g
                reach = float(points.size[members].max()) / 2 if members.any() else MARKER_PX
                label.setHtml(html(f"×{int(counts[g])}", foreground(), size="8pt"))
                label.setAnchor((0, 0.5))
                label.count_at = (bx, by, reach)
                label.show()
                shown += 1
        for label in self._count_labels[shown:]:
            label.hide()
        self._shown_counts = shown
        self._place_counts()

    def _place_counts(self) -> None:
        """Each "×n" beside its group, right of the jitter's reach and the markers (in pixels,
        so it never covers a point of the group however small the chart)."""
        pw, _ph = self._pixel_size()
        for label in self._count_labels[:getattr(self, "_shown_counts", 0)]:
            bx, by, reach = label.count_at
            label.setPos(bx + JITTER + (reach + COUNT_GAP_PX) * pw, by)

    def _draw_arrows(self, points: PointSet) -> None:
        if not points.arrows:
            self._arrow_lines.setData(x=[], y=[])
            self._arrow_heads.setData(x=[], y=[])
            self._ghosts.setData(x=[], y=[])
            return
        pw, ph = self._pixel_size()
        xs, ys, hx, hy, symbols, gx, gy = [], [], [], [], [], [], []
        for x0, y0, k in points.arrows:
            x0 = EDGE if math.isnan(x0) else x0
            y0 = EDGE if math.isnan(y0) else y0
            x1, y1 = float(self.drawn_x[k]), float(self.drawn_y[k])
            gx.append(x0)
            gy.append(y0)
            if abs(x1 - x0) < 1e-9 and abs(y1 - y0) < 1e-9:
                continue
            xs += [x0, x1]
            ys += [y0, y1]
            t = 0.78
            hx.append(x0 + (x1 - x0) * t)
            hy.append(y0 + (y1 - y0) * t)
            angle = math.degrees(math.atan2(-(y1 - y0) / ph, (x1 - x0) / pw)) % 360
            symbols.append(self._arrow_symbols[int(round(angle / 10)) % 36])
        self._arrow_lines.setData(x=xs, y=ys)
        self._arrow_heads.setData(x=hx, y=hy, symbol=symbols, size=11)
        self._ghosts.setData(x=gx, y=gy)

    def _pixel_size(self) -> tuple[float, float]:
        vb = self.getPlotItem().getViewBox()
        try:
            pw, ph = vb.viewPixelSize()
        except Exception:
            pw = ph = 0.0
        if not (pw > 0 and ph > 0):
            (x0, x1), (y0, y1) = self.X_RANGE, self.Y_RANGE
            pw, ph = (x1 - x0) / 400, (y1 - y0) / 400
        return pw, ph

    # ----- hover and click -------------------------------------------------------------------
    def nearest(self, x: float, y: float, max_px: float = HIT_PX) -> int:
        """The index (into ``points``) of the point drawn nearest (x, y), within ``max_px``; -1."""
        if not len(self.drawn_x):
            return -1
        pw, ph = self._pixel_size()
        d2 = ((self.drawn_x - x) / pw) ** 2 + ((self.drawn_y - y) / ph) ** 2
        k = int(np.argmin(d2))
        reach = max(max_px, float(self.points.size[k]) / 2 + 2)
        return k if d2[k] <= reach * reach else -1

    def view_pos(self, k: int):
        """Where point ``k`` is drawn, in viewport pixels, as a QPoint (tests click there)."""
        scene = self.getPlotItem().getViewBox().mapViewToScene(QPointF(float(self.drawn_x[k]),
                                                                       float(self.drawn_y[k])))
        return self.mapFromScene(scene)

    def _on_mouse_moved(self, scene_pos) -> None:
        vb = self.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(scene_pos):
            k = -1
        else:
            p = vb.mapSceneToView(scene_pos)
            k = self.nearest(p.x(), p.y())
        if k == self._hover:
            return
        self._hover = k
        row = int(self.points.rows[k]) if k >= 0 else -1
        if row >= 0:
            QToolTip.showText(QCursor.pos(), self.describe(row), self)
        else:
            QToolTip.hideText()
        self.hovered.emit(row)

    def _on_mouse_clicked(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        vb = self.getPlotItem().getViewBox()
        p = vb.mapSceneToView(event.scenePos())
        k = self.nearest(p.x(), p.y())
        if k >= 0:
            event.accept()
            self.clicked.emit(int(self.points.rows[k]))

    # ----- export ----------------------------------------------------------------------------
    def export_item(self) -> Any:
        return self.getPlotItem()


class QuadrantPlot(TierScatterPlot):
    """The 2x2 quadrant of the paper's figure (UI.md's orientation).

    Nothing is written where a point can be: the view keeps bands above and below the data
    (0..1 and the null strip, with the markers' and the jitter's reach) sized in pixels, and the
    region labels sit in them, in the corners; θ(C+) and θ(C−) are the ticks of the top and right
    axes, where their lines end; a group's "×n" is beside it."""

    # The data and the null strip, with the jitter's reach: where a point's centre can be.
    CORE = (EDGE - JITTER, 1.0 + JITTER)

    def __init__(self, parent=None):
        super().__init__(parent)
        item = self.getPlotItem()
        dash = pen(foreground(), 1.4, Qt.PenStyle.DashLine)
        self.theta_x = pyqtgraph.InfiniteLine(pos=0.5, angle=90, pen=dash, movable=False)
        self.theta_y = pyqtgraph.InfiniteLine(pos=0.5, angle=0, pen=dash, movable=False)
        for line in (self.theta_x, self.theta_y):
            line.setZValue(8)
            item.addItem(line, ignoreBounds=True)
        # The thresholds' values on the top and right axes, outside the plot (never over a point).
        for name in ("top", "right"):
            item.showAxis(name)
            axis = item.getAxis(name)
            axis.setStyle(hideOverlappingLabels=60, tickLength=6)
            axis.setTicks([[]])
        ticks = [(EDGE, "∅"), (0.0, "0"), (0.25, "0.25"), (0.5, "0.5"), (0.75, "0.75"), (1.0, "1")]
        for name in ("left", "bottom"):
            item.getAxis(name).setTicks([ticks])
        edge_pen = pen(with_alpha(muted(), 90), 1, Qt.PenStyle.DotLine)
        for angle in (90, 0):
            line = pyqtgraph.InfiniteLine(pos=EDGE / 2 - 0.005, angle=angle, pen=edge_pen, movable=False)
            item.addItem(line, ignoreBounds=True)
        self._corners: list[tuple[bool, bool]] = []  # (right, top) of each region's label
        self.theta_text = ("", "")  # what the top and right axes say
        self.set_axes("C+", "C-")
        self._fit_view()

    def set_axes(self, reference: str, other: str) -> None:
        item = self.getPlotItem()
        fg = foreground().name()
        item.setLabel("bottom", f"C+ approval rate: {reference} (reference)  ·  ∅ no vote cast", color=fg)
        item.setLabel("left", f"C− approval rate: {other}  ·  ∅ no vote cast", color=fg)

    def view_range(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """The x and y ranges shown: the core, plus the bands (in pixels) around it."""
        vb = self.getPlotItem().getViewBox()
        width, height = max(vb.width(), 1.0), max(vb.height(), 1.0)
        lo, hi = self.CORE
        span = hi - lo
        marker = MARKER_PX * max(zoom(), 0.5)
        band = LABEL_BAND_PX * max(zoom(), 0.5)
        # Pixels per data unit: what is left after the bands (never less than a third of the view).
        ppu_y = max(height - 2 * (marker + band), height / 3) / span
        room = COUNT_ROOM_PX * max(zoom(), 0.5)  # the "×n" label grows with the type (presenter mode)
        ppu_x = max(width - 2 * marker - room, width / 3) / span
        y = (lo - (marker + band) / ppu_y, hi + (marker + band) / ppu_y)
        x = (lo - marker / ppu_x, hi + (marker + room) / ppu_x)
        return x, y

    def _on_view_resized(self) -> None:
        self._fit_view()

    def _fit_view(self) -> None:
        (x0, x1), (y0, y1) = self.view_range()
        item = self.getPlotItem()
        item.setXRange(x0, x1, padding=0)
        item.setYRange(y0, y1, padding=0)
        self._place_region_labels()
        self._place_counts()

    def _place_region_labels(self) -> None:
        """Each region's label in its corner, in the band above or below the data; shortened
        ("pos. consensus · 3") when its region is too narrow for the whole name."""
        (x0, x1), (y0, y1) = self.view_range()
        vb = self.getPlotItem().getViewBox()
        pw, ph = (x1 - x0) / max(vb.width(), 1.0), (y1 - y0) / max(vb.height(), 1.0)
        font = QFont(type_font() or QApplication.font())
        font.setBold(True)
        metrics = QFontMetrics(font)
        theta = self.theta_x.value()
        for label, (right, top), region in zip(self._region_labels, self._corners, self.regions):
            room_px = ((x1 - theta) if right else (theta - x0)) / pw - 10
            text = region["text"]
            if metrics.horizontalAdvance(text) > room_px:
                text = region.get("short", text)
            if getattr(label, "shown_text", None) != text:
                label.shown_text = text
                label.setHtml(html(text, region_text_colour(region["tier"]), bold=True, size=_label_pt()))
            label.setAnchor((1 if right else 0, 0 if top else 1))
            label.setPos(x1 - 4 * pw if right else x0 + 4 * pw, y1 - 2 * ph if top else y0 + 2 * ph)

    def set_thresholds(self, theta_x: float, theta_y: float, region_tiers: dict[tuple[bool, bool], str],
                       counts: dict[tuple[bool, bool], int]) -> None:
        """Lines at theta(C+) and theta(C-); each region labelled with the engine's tier there."""
        self.theta_x.setValue(theta_x)
        self.theta_y.setValue(theta_y)
        far = 100.0  # the regions' fills reach past any range shown
        regions, corners = [], []
        for ax in (True, False):
            for ay in (True, False):
                tier = region_tiers[(ax, ay)]
                rx = (theta_x, far) if ax else (-far, theta_x)
                ry = (theta_y, far) if ay else (-far, theta_y)
                count = f"{counts.get((ax, ay), 0):,}"
                regions.append({"rect": (rx[0], ry[0], rx[1], ry[1]), "tier": tier,
                                "text": f"{LABELS[tier]} · {count}", "at": (0.5, 0.5),
                                "short": f"{SHORT_LABELS.get(tier, LABELS[tier])} · {count}",
                                "anchor": (1 if ax else 0, 0 if ay else 1)})
                corners.append((ax, ay))
        self._corners = corners
        for label in self._region_labels:
            label.shown_text = None
        self.set_regions(regions)
        self.theta_text = (f"θ(C+) = {theta_x:.2f}", f"θ(C−) = {theta_y:.2f}")
        item = self.getPlotItem()
        item.getAxis("top").setTicks([[(theta_x, self.theta_text[0])]])
        item.getAxis("right").setTicks([[(theta_y, f"θ(C−)\n{theta_y:.2f}")]])  # two lines: a narrow axis
        self._place_region_labels()
