"""Exporting a plot: PNG and SVG through pyqtgraph's exporters, and a CSV of the points drawn.

Every plot exports all three (UI.md: "Every plot exports PNG and SVG"). Paths come from
:func:`workbench.ui.prompts.export_path` (tests patch it); :func:`export_menu` builds the
"Export" button's menu that asks for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QMenu, QToolButton, QWidget

from workbench.core.safe_output import write_csv as write_safe_csv  # labels are untrusted: no live formulas
from workbench.ui.plots.style import pg

PNG_WIDTH = 1600  # pixels: sharp on a projector and in a paper


def _exporters():
    pg()  # configured first
    import pyqtgraph.exporters

    return pyqtgraph.exporters


def export_png(item: Any, path: Path | str, width: int = PNG_WIDTH) -> Path:
    """``item`` (a PlotItem, a GraphicsLayout or a scene) as a PNG ``width`` pixels wide."""
    exporter = _exporters().ImageExporter(item)
    params = exporter.parameters()
    params["width"] = int(width)
    exporter.export(str(path))
    return Path(path)


def export_svg(item: Any, path: Path | str) -> Path:
    """``item`` as SVG through pyqtgraph's SVGExporter.

    pyqtgraph 0.14.0 cannot read a path holding a ``Z`` (closepath), which Qt 6.11's SVG
    generator writes for every closed shape (axes included), so every export failed with
    "not enough values to unpack". Upstream fixed it after 0.14.0 (commit 1b84c2b2). Until the
    lock moves past it, each ``Z`` is rewritten, just before pyqtgraph reads the path, as a line
    back to the start of its subpath: the same drawing, in a form that version reads.
    """
    import importlib

    module = importlib.import_module("pyqtgraph.exporters.SVGExporter")
    original = module.correctCoordinates

    def correct(node, defs, item, options):
        _closepaths_as_lines(node)
        return original(node, defs, item, options)

    module.correctCoordinates = correct
    try:
        _exporters().SVGExporter(item).export(str(path))
    finally:
        module.correctCoordinates = original
    return Path(path)


def _closepaths_as_lines(node) -> None:
    """Rewrite every ``Z`` of the paths under ``node`` as ``L`` to its subpath's first point."""
    for path in node.getElementsByTagName("path"):
        d = path.getAttribute("d").strip()
        if not d or "Z" not in d.upper():
            continue
        out, start = [], None
        for token in d.split():
            if "," not in token:
                if token.upper() == "Z" and start is not None:
                    out.append("L" + start)
                continue
            if token[0] in "Mm":
                start = token[1:]
            out.append(token)
        path.setAttribute("d", " ".join(out))


def write_csv(path: Path | str, header: Sequence[str], rows: Iterable[Sequence[object]]) -> Path:
    """The points as CSV (UTF-8, a header line; None written as an empty cell)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        write_safe_csv(fh, header, (["" if v is None else (f"{v:.12g}" if isinstance(v, float) else v) for v in row]
                                    for row in rows))
    return Path(path)


class Exportable:
    """What an exportable chart offers: the item to render and its points as a table."""

    def export_item(self) -> Any:  # a PlotItem, GraphicsLayout or scene
        raise NotImplementedError

    def csv_table(self) -> tuple[list[str], list[list[object]]]:
        raise NotImplementedError


def export_chart(chart: Exportable, kind: str, path: Path | str) -> Path:
    if kind == "png":
        return export_png(chart.export_item(), path)
    if kind == "svg":
        return export_svg(chart.export_item(), path)
    header, rows = chart.csv_table()
    return write_csv(path, header, rows)


def export_button(parent: QWidget, chart: Callable[[], Exportable | None], name: Callable[[], str],
                  done: Callable[[Path], None] | None = None,
                  failed: Callable[[str], None] | None = None) -> QToolButton:
    """An "Export" button with PNG, SVG and CSV; ``chart()`` gives the chart on screen now."""
    from workbench.ui import prompts

    button = QToolButton(parent)
    button.setText("Export")
    button.setToolTip("Export the chart as a PNG or SVG image, or its points as CSV")
    button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
    menu = QMenu(button)

    def run(kind: str) -> None:
        target = chart()
        if target is None:
            return
        path = prompts.export_path(parent, kind, "", name())
        if path is None:
            return
        try:
            written = export_chart(target, kind, path)
        except Exception as exc:  # a full disk, a folder without write access: said, not raised
            if failed:
                failed(f"Could not export {path.name}: {exc}")
            return
        if done:
            done(written)

    for kind, text in (("png", "Image (PNG)…"), ("svg", "Vector image (SVG)…"), ("csv", "Points (CSV)…")):
        action = menu.addAction(text)
        action.setObjectName(f"export_{kind}")
        action.triggered.connect(lambda _checked=False, k=kind: run(k))
    button.setMenu(menu)
    button.export_actions = {a.objectName().removeprefix("export_"): a for a in menu.actions()}  # tests
    return button
