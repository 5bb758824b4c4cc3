"""The application around the panels: project switch, undo/redo, shortcuts, themes and zoom, the
message area and its history, Help, the bundled glyphs, and a window that fits a projector."""

from __future__ import annotations

import ast
import itertools
import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QFontMetrics, QKeySequence, QPalette, QRawFont, QUndoCommand
from PySide6.QtWidgets import QApplication

from tests.ui.conftest import WAIT_MS
from workbench.core.project import _sql
from workbench.core.project.store import Store
from workbench.services.project_model import ProjectModel
from workbench.ui import prompts, theme
from workbench.ui.main_window import MainWindow, fit_geometry
from workbench.ui.settings import AppSettings

REPO = Path(__file__).resolve().parents[2]
UI_SOURCES = REPO / "workbench" / "ui"


@pytest.fixture(autouse=True)
def default_look(qapp):
    """Each test starts, and leaves the application, in the light theme at 100%."""
    yield
    theme.apply_theme(qapp, "light")
    theme.apply_zoom(qapp, 1.0)


def make_project(path: Path, name: str, clusters: list[str], providers: list[str]) -> Path:
    store = Store.create(path, name)
    for cluster in clusters:
        _sql.insert(store, "clusters", {"name": cluster})
    for provider in providers:
        _sql.insert(store, "providers", {"name": provider, "model": "openai/gpt-4o-mini"})
    store.close_connection()
    return path


def cluster_names(window) -> list[str]:
    table = window.panels["clustersPanel"].clusters
    return [table.model.row(i)["name"] for i in range(table.model.rowCount())]


def shown_text(window) -> str:
    """What the window shows as text: labels, combo boxes, and the cells of every table and list."""
    from PySide6.QtWidgets import QAbstractItemView, QComboBox, QLabel

    parts = [w.text() for w in window.findChildren(QLabel)]
    parts += [w.itemText(i) for w in window.findChildren(QComboBox) for i in range(w.count())]
    for view in window.findChildren(QAbstractItemView):
        model = view.model()
        if model is None:
            continue
        for row in range(min(model.rowCount(), 200)):
            parts += [str(model.index(row, col).data() or "") for col in range(model.columnCount())]
    return "\n".join(parts)


def wait_idle(qtbot, window) -> None:
    # (the model's own work after an open, its integrity check, included)
    qtbot.waitUntil(lambda: window.reads_idle() and not window._status_reader.loading and not window.model.busy,
                    timeout=WAIT_MS)


class Note(QUndoCommand):
    """A command that only counts what was done to it."""

    def __init__(self, text: str, log: list):
        super().__init__(text)
        self.log = log

    def redo(self) -> None:
        self.log.append(("redo", self.text()))

    def undo(self) -> None:
        self.log.append(("undo", self.text()))


# ----- the project switch ------------------------------------------------------------------------
def test_switching_projects_refreshes_every_panel_and_the_status_bar(qtbot, window, tmp_path, open_project):
    a = make_project(tmp_path / "a.rwb", "Alpha study", ["advocate"], ["openai-a"])
    b = make_project(tmp_path / "b.rwb", "Beta study", ["critic", "safety"], [])
    open_project(a)
    wait_idle(qtbot, window)
    assert cluster_names(window) == ["advocate"]
    assert window.provider_label.text() == "Providers: openai-a"
    assert "advocate" in shown_text(window)
    window.history.push(Note("Rename cluster", []))
    counts = {name: panel.refresh_count for name, panel in window.panels.items()}

    open_project(b)
    wait_idle(qtbot, window)
    # Every panel read B (not A) after the switch, and shows it.
    for name, panel in window.panels.items():
        assert panel.refresh_count > counts[name], name
        assert panel._reading is not None and panel._reading.path == b, name
    assert cluster_names(window) == ["critic", "safety"]
    shown = shown_text(window)
    assert "critic" in shown and "advocate" not in shown and "openai-a" not in shown  # nothing of A
    # The status bar and the title say B, and nothing of A is left.
    assert window.project_label.text() == str(b)
    assert window.provider_label.text() == "Providers: none configured"
    assert window.windowTitle().startswith("Beta study — b.rwb")
    assert "a.rwb" not in window.project_label.toolTip()
    assert not window.job.isVisible(), window.job.text  # the opening's progress is gone
    assert window.history.count() == 0  # an edit of A can never be undone into B

    window.action_close.trigger()
    assert window.project_label.text() == "No project open" and window.provider_label.text() == ""


# ----- undo and redo -----------------------------------------------------------------------------
def test_undo_and_redo_follow_the_one_stack_every_panel_shares(qtbot, window):
    menus, log = window.menus, []
    assert not menus.undo.isEnabled() and not menus.redo.isEnabled()
    assert QKeySequence("Ctrl+Z") in menus.undo.shortcuts()
    assert {QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")} <= set(menus.redo.shortcuts())
    for panel in window.panels.values():
        if panel.objectName() != "findingsPanel":  # its "history" is its vote table
            assert panel.history is window.history

    window.history.push(Note("Rename cluster", log))
    assert menus.undo.isEnabled() and not menus.redo.isEnabled()
    assert menus.undo.text().replace("&", "") == "Undo Rename cluster"
    menus.undo.trigger()
    assert log == [("redo", "Rename cluster"), ("undo", "Rename cluster")]
    assert not menus.undo.isEnabled() and menus.redo.isEnabled()
    assert menus.redo.text().replace("&", "") == "Redo Rename cluster"
    menus.redo.trigger()
    assert log[-1] == ("redo", "Rename cluster") and menus.undo.isEnabled()
    edit_menu = {a.text().replace("&", ""): a.menu() for a in window.menuBar().actions()}["Edit"]
    assert menus.undo in edit_menu.actions() and menus.redo in edit_menu.actions()


# ----- shortcuts ---------------------------------------------------------------------------------
def test_the_shortcut_list_is_the_actions_own_and_covers_the_main_actions(qtbot, window):
    menus = window.menus
    for action in (menus.new, menus.open, menus.save_as, menus.close, menus.quit, menus.undo, menus.redo,
                   menus.start_run, menus.cancel_run, menus.zoom_in, menus.zoom_out, menus.zoom_reset,
                   menus.toggle_theme, menus.protocols, menus.shortcuts):
        assert action.shortcuts(), action.text()

    shown = window.show_shortcuts()
    assert not shown.isModal()
    rows = shown.rows()
    fmt = QKeySequence.SequenceFormat.NativeText
    expected = [(a.text().replace("&", "").rstrip("…"), ", ".join(k.toString(fmt) for k in a.shortcuts()))
                for a in menus.all_actions() if a.shortcuts()]
    assert [(text, keys) for _, text, keys in rows][:len(expected)] == expected
    assert ("File", "Save As", "Ctrl+Shift+S") in rows
    # No key does two things (Qt would then do neither).
    keys = [k.toString() for a in menus.all_actions() for k in a.shortcuts()]
    assert len(keys) == len(set(keys))


# ----- themes and zoom ---------------------------------------------------------------------------
def test_the_theme_switches_the_palette_and_is_remembered(qtbot, window, qapp):
    assert window.theme_name == "light" and window.menus.themes["light"].isChecked()
    with qtbot.waitSignal(window.theme_changed, timeout=WAIT_MS) as changed:
        window.menus.themes["dark"].trigger()
    assert changed.args == ["dark"]
    assert qapp.palette().color(QPalette.ColorRole.Window) == QColor(theme.PALETTES["dark"]["Window"])
    assert window.palette().color(QPalette.ColorRole.Text) == QColor(theme.PALETTES["dark"]["Text"])
    assert theme.colour("error") == QColor(theme.COLOURS["dark"]["error"])
    assert window.settings.theme() == "dark"
    window.close()

    again = MainWindow(ProjectModel(), AppSettings())
    qtbot.addWidget(again)
    assert again.theme_name == "dark" and again.menus.themes["dark"].isChecked()
    assert qapp.palette().color(QPalette.ColorRole.Base) == QColor(theme.PALETTES["dark"]["Base"])
    again.menus.toggle_theme.trigger()
    assert again.theme_name == "light" and again.settings.theme() == "light"
    again.close()


@pytest.mark.parametrize("name", sorted(theme.PALETTES))
def test_body_text_reads_on_a_projector_in_both_themes(name):
    colours = theme.PALETTES[name]
    for text, background in theme.BODY_TEXT:
        ratio = theme.contrast(colours[text], colours[background])
        assert ratio >= theme.MIN_BODY_CONTRAST, f"{name}: {text} on {background} is {ratio:.2f}:1"
    for key, value in theme.COLOURS[name].items():  # status words and glyphs: at least AA
        for background in ("Window", "Base", "AlternateBase"):
            assert theme.contrast(value, colours[background]) >= 4.5, f"{name}: {key} on {background}"
    for tier, value in theme.TIERS[name].items():  # chips and plot marks: graphics, at least 3:1
        for background in ("Window", "Base"):
            assert theme.contrast(value, colours[background]) >= 3.0, f"{name}: {tier} on {background}"


# Machado, Oliveira and Fernandes (2009), severity 1.0, on linear RGB.
CVD = {"protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
       "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
       "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900))}


def _linear_rgb(value: str) -> list[float]:
    c = QColor(value)
    return [theme._linear(x) for x in (c.red(), c.green(), c.blue())]


def _lab(rgb: list[float]) -> tuple[float, float, float]:
    r, g, b = (min(max(x, 0.0), 1.0) for x in rgb)
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


@pytest.mark.parametrize("name", sorted(theme.TIERS))
def test_the_tier_colours_stay_apart_in_both_themes_and_for_colour_blind_readers(name):
    tiers = theme.TIERS[name]
    # Negative polar is the positive polar orange, hatched; unclassified is the invalid grey, hollow.
    distinct = {t: tiers[t] for t in ("positive_consensus", "positive_polar", "negative_consensus", "invalid")}
    for (a, ca), (b, cb) in itertools.combinations(distinct.items(), 2):
        assert math.dist(_lab(_linear_rgb(ca)), _lab(_linear_rgb(cb))) >= 40, f"{name}: {a} vs {b}"
        for vision, m in CVD.items():
            seen = [[sum(row[j] * c[j] for j in range(3)) for row in m] for c in (_linear_rgb(ca), _linear_rgb(cb))]
            assert math.dist(_lab(seen[0]), _lab(seen[1])) >= 15, f"{name}, {vision}: {a} vs {b}"


def test_zoom_scales_the_application_font_and_is_remembered(qtbot, window, qapp):
    base = theme.base_point_size()
    assert qapp.font().pointSizeF() == pytest.approx(base)
    with qtbot.waitSignal(window.zoom_changed, timeout=WAIT_MS) as zoomed:
        window.menus.zoom_in.trigger()
    assert zoomed.args == [pytest.approx(1.15)] and window.zoom == pytest.approx(1.15)
    assert qapp.font().pointSizeF() == pytest.approx(base * 1.15, abs=0.01)
    label = window.panels["clustersPanel"].empty_label
    assert label.font().pointSizeF() == pytest.approx(base * 1.15, abs=0.01)  # widgets follow
    window.menus.zoom_in.trigger()
    assert window.zoom == pytest.approx(1.3) and window.settings.zoom() == pytest.approx(1.3)
    assert "130%" in window.menus.zoom_reset.text()
    window.close()

    again = MainWindow(ProjectModel(), AppSettings())
    qtbot.addWidget(again)
    assert again.zoom == pytest.approx(1.3)
    assert qapp.font().pointSizeF() == pytest.approx(base * 1.3, abs=0.01)
    again.menus.zoom_out.trigger()
    assert again.zoom == pytest.approx(1.15)
    again.menus.zoom_reset.trigger()
    assert again.zoom == 1.0 and qapp.font().pointSizeF() == pytest.approx(base)
    for _ in range(20):
        again.zoom_out()
    assert again.zoom == theme.ZOOM_MIN and not again.menus.zoom_out.isEnabled()
    again.close()


def test_zoom_scales_the_plots_axes_and_the_dock_titles(qtbot, window, qapp, tmp_path, open_project):
    from tests.core.test_quadrant_reads import rcp_config
    from tests.ui.test_quadrant import project, quadrant

    path, _ids, _states = project(tmp_path, rcp_config())
    open_project(path)
    panel, plot = quadrant(window, qtbot)
    base = theme.base_point_size()

    def sizes(chart) -> tuple[float, float]:
        axis = chart.getPlotItem().getAxis("bottom")
        return axis.style["tickFont"].pointSizeF(), axis.label.font().pointSizeF()

    assert sizes(plot) == (pytest.approx(base, abs=0.01), pytest.approx(base, abs=0.01))
    window.menus.zoom_in.trigger()
    window.menus.zoom_in.trigger()  # 130%
    qtbot.waitUntil(lambda: panel._plot() is not None and panel._plot() is not plot, timeout=WAIT_MS)
    zoomed = panel._plot()
    assert sizes(zoomed) == (pytest.approx(base * 1.3, abs=0.01), pytest.approx(base * 1.3, abs=0.01))
    # A dock draws its title in its own font only when that differs from the application's
    # (else in the platform's title font, read once): so the titles zoom too.
    for dock in window.docks.values():
        assert dock.font().pointSizeF() == pytest.approx(base * 1.3, abs=0.01)
        assert dock.font() != QApplication.font("QDockWidget")
    # A label styled by a stylesheet (its colour) zooms like the rest.
    model_label = window.panels["clustersPanel"].agent_editor.model_label
    assert model_label.styleSheet() and model_label.font().pointSizeF() == pytest.approx(base * 1.3, abs=0.01)
    window.menus.zoom_reset.trigger()
    qtbot.waitUntil(lambda: panel._plot() is not None and panel._plot() is not zoomed, timeout=WAIT_MS)
    assert sizes(panel._plot())[0] == pytest.approx(base, abs=0.01)


# ----- the message area and its history ----------------------------------------------------------
def test_ten_notices_never_grow_the_window_and_the_history_keeps_them(qtbot, window, tmp_path, open_project):
    from workbench.core.project.demo import ensure_demo

    open_project(ensure_demo(tmp_path / "demo.rwb"))  # panels full of rows: their real minimum sizes
    window.resize(780, 560)  # inside the offscreen screen (800×800), so nothing adjusts it
    qtbot.wait(50)
    size, geometry = window.size(), window.geometry()
    for i in range(10):
        window.notices.add("warning" if i % 2 else "error", f"Notice {i}: " + "a long message " * 12,
                           f"Traceback {i}" if i % 3 == 0 else "")
        qtbot.wait(10)
    assert window.size() == size
    assert window.minimumSizeHint().height() <= size.height()
    assert window._notices_bar.isVisible()
    assert window.notices.height() <= window.notices.max_height()
    assert len(window.notices.messages) == window.notices.MAX_MESSAGES
    assert window.notices.messages[-1].text.startswith("Notice 9")  # the newest is on screen

    shown = window.show_message_history()
    assert not shown.isModal()
    records = shown.records()
    assert [r.text.split(":")[0] for r in records] == [f"Notice {i}" for i in reversed(range(10))]
    assert [r.level for r in records][:2] == ["warning", "error"]
    shown.tree.setCurrentItem(shown.tree.topLevelItem(9))  # Notice 0, which had details
    assert "Traceback 0" in shown.details.toPlainText() and records[9].time is not None
    window.notices.clear_messages()
    assert len(shown.records()) == 10  # dismissed from the area, kept in the history
    window.notices.add("info", "One more")
    assert shown.records()[0].text == "One more"

    window.close()
    again = MainWindow(ProjectModel(), AppSettings())
    qtbot.addWidget(again)
    again.show()
    qtbot.wait(20)
    assert again.size() == geometry.size()  # the user's size, not a grown one
    assert abs(again.x() - geometry.x()) <= 8 and abs(again.y() - geometry.y()) <= 8  # (frame guesses)
    again.close()


def test_the_area_history_button_opens_the_history(qtbot, window):
    window.notices.add("info", "Hello")
    window.notices.history_button.click()
    assert window.message_history.isVisible()
    assert window.message_history.records()[0].text == "Hello"


# ----- long actions: progress and Cancel ---------------------------------------------------------
def test_an_import_shows_its_progress_and_stops_between_files_when_cancelled(
        qtbot, window, tmp_path, open_project, monkeypatch):
    from types import SimpleNamespace

    from workbench.core.project import arm_import

    open_project(make_project(tmp_path / "p.rwb", "p", [], []))
    paths = [tmp_path / f"trace{i}.json" for i in range(5)]
    gate, seen = threading.Event(), []

    def slow_import(_store, path):
        seen.append(path)
        gate.wait(WAIT_MS / 1000)
        return SimpleNamespace(already_imported=False, traces=1)

    monkeypatch.setattr(arm_import, "import_arm_file", slow_import)
    monkeypatch.setattr(prompts, "import_arm_paths", lambda *a: paths)
    # The project's own background work (its integrity check, its search index) done first: the
    # import's words are then the status bar's.
    qtbot.waitUntil(lambda: not window.model.busy, timeout=WAIT_MS)
    window.menus.import_arm.trigger()
    qtbot.waitUntil(lambda: window.job.text.startswith("Importing 1/5: trace0.json"), timeout=WAIT_MS)
    assert window.job.isVisible() and window.cancel_button.isVisible()
    assert window.progress.maximum() == 5
    qtbot.mouseClick(window.cancel_button, Qt.MouseButton.LeftButton)
    gate.set()
    qtbot.waitUntil(lambda: bool(window.notices.messages), timeout=WAIT_MS)
    assert seen == paths[:1]
    assert "Imported 1 ARM run(s)" in window.notices.messages[0].text
    assert "Cancelled: 4 file(s) not imported" in window.notices.messages[0].text
    qtbot.waitUntil(lambda: not window.job.isVisible(), timeout=WAIT_MS)


def test_the_status_bar_progress_is_never_clipped(qtbot, window):
    window.set_zoom(1.5)
    window.job.show_progress("3/16 calls, 0 failed, ETA 4 s", 3, 16, cancellable=True)
    qtbot.wait(20)
    bar, status = window.progress, window.statusBar()
    assert bar.height() >= bar.fontMetrics().height()
    top_left = bar.mapTo(window, bar.rect().topLeft())
    bottom = bar.mapTo(window, bar.rect().bottomRight())
    assert status.geometry().contains(top_left) and status.geometry().contains(bottom)
    assert window.job.label.text().endswith("ETA 4 s")


def inked_width(label) -> int:
    """How far right the label's painted text reaches, in pixels."""
    image = label.grab().toImage()
    background = image.pixelColor(image.width() - 1, image.height() // 2)
    for x in range(image.width() - 1, -1, -1):
        if any(image.pixelColor(x, y) != background for y in range(image.height())):
            return x + 1
    return 0


def test_an_eta_under_a_second_is_shown_as_written_not_read_as_markup(qtbot, window):
    job = window.job
    job.show_progress("30/36 calls, 0 failed, ETA 1 s", 30, 36, cancellable=True)
    job.label.resize(400, job.label.height())
    without = inked_width(job.label)
    job.show_progress("30/36 calls, 0 failed, ETA <1 s", 30, 36, cancellable=True)
    job.label.resize(400, job.label.height())
    assert job.label.textFormat() == Qt.TextFormat.PlainText and job.text.endswith("ETA <1 s")
    # The "<" is drawn: the text reaches further right by its width (rich text would have read
    # "<1 s" as the start of a tag and drawn nothing from there on).
    less = job.label.fontMetrics().horizontalAdvance("<")
    assert inked_width(job.label) - without >= less - 2


# ----- Help --------------------------------------------------------------------------------------
def test_about_shows_the_versions_and_the_open_project(qtbot, window, tmp_path, open_project):
    import platform

    import PySide6

    import workbench
    from workbench.core.project.versions import sqlite_version

    had_litellm = "litellm" in sys.modules
    path = make_project(tmp_path / "about.rwb", "about", [], [])
    open_project(path)
    about = window.show_about()
    assert about.isVisible() and not about.isModal()
    text = about.as_text()
    for expected in (f"Resonance Workbench: {workbench.__version__}", f"Python: {platform.python_version()}",
                     f"PySide6: {PySide6.__version__}", f"SQLite: {sqlite_version()}",
                     "litellm: 1.106.2 (pinned ==1.106.2)", f"Open project: {path}"):
        assert expected in text
    assert str(path) in about.label.text()
    assert ("litellm" in sys.modules) == had_litellm  # read from package metadata, not imported
    window.model.close()
    assert "Open project: none open" in about.as_text()


def test_the_protocol_notes_open_rendered_beside_the_window(qtbot, window):
    notes = window.show_protocols()
    assert notes.isVisible() and not notes.isModal()
    text = notes.browser.toPlainText()
    # A page for users, shipped with the program: what each protocol measures and how to read it.
    assert notes.path.parent.name == "help" and notes.path.is_file()
    assert text.splitlines()[0] == "Protocol notes" and "# " not in text.splitlines()[0]
    for protocol in ("Resonant Consensus (RCP)", "Consensus Server findings", "CONS", "ARM", "Resonance Echo"):
        assert protocol in text
    assert "How to read it" in text and "positive consensus" in text
    # No developer's material: no module path, no source file, no file outside the checkout.
    import re

    assert not re.search(r"workbench/|\.py\b|core/protocols|shared/|SPEC §|seeds/", text), \
        re.search(r"workbench/|\.py\b|core/protocols|shared/|SPEC §|seeds/", text)
    # The Contents' links lead to their headings (Qt's Markdown gives headings no anchors).
    fragments = re.findall(r"\]\(#([\w-]+)\)", notes.path.read_text(encoding="utf-8"))
    assert len(fragments) >= 6
    for fragment in fragments:
        assert notes.go_to(fragment), fragment
    assert notes.go_to("resonant-consensus-rcp")
    assert notes.browser.textCursor().block().text() == "Resonant Consensus (RCP)"
    assert not notes.go_to("no-such-heading")


# ----- glyphs and fonts --------------------------------------------------------------------------
def ui_glyphs() -> set[str]:
    """Every non-ASCII character in a string of workbench/ui, and the run-status icons of UI.md."""
    found = set("✓⚠⏸↻✖")
    for path in UI_SOURCES.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found |= {c for c in node.value if ord(c) > 127}
    return found


def test_every_glyph_the_ui_draws_is_in_a_bundled_font(qapp, window):
    glyphs = ui_glyphs()
    assert {"⏸", "⧗", "✔", "★", "θ", "∅"} <= glyphs
    fonts = [QRawFont(str(theme.FONT_DIR / name), 12) for name in theme.FONT_FILES]
    assert all(f.isValid() for f in fonts)
    missing = sorted(c for c in glyphs if not any(f.supportsCharacter(ord(c)) for f in fonts))
    assert not missing, f"no bundled font draws {' '.join(missing)} ({[hex(ord(c)) for c in missing]})"
    # The application font falls back on the bundled families, so it draws them all.
    families = qapp.font().families()
    assert "DejaVu Sans" in families and "Workbench Symbols" in families
    metrics = QFontMetrics(qapp.font())
    assert [c for c in sorted(glyphs) if not metrics.inFontUcs4(ord(c))] == []


def test_the_bundled_fonts_are_small_and_keep_their_licences():
    files = list(theme.FONT_DIR.glob("*.ttf"))
    assert sum(f.stat().st_size for f in files) < 2 * 1024 * 1024
    assert (theme.FONT_DIR / "LICENSE-DejaVu.txt").exists() and (theme.FONT_DIR / "LICENSE-OFL.txt").exists()
    assert theme.ICON_FILE.exists()


# ----- a projector's screen ----------------------------------------------------------------------
def test_the_default_geometry_fits_the_screen():
    for screen in (QRect(0, 0, 1280, 720), QRect(0, 27, 1280, 693), QRect(0, 0, 1024, 600), QRect(0, 0, 2560, 1440)):
        rect = fit_geometry(screen)
        assert screen.contains(rect), (screen, rect)
        assert rect.width() <= 1400 and rect.height() <= 880


PROJECTOR = r"""
import json, sys, time
from pathlib import Path
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
app = QApplication([])
QSettings.setDefaultFormat(QSettings.Format.IniFormat)
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, sys.argv[1] + "/settings")
from workbench.core.project.demo import ensure_demo
from workbench.services.project_model import ProjectModel
from workbench.ui.main_window import MainWindow
from workbench.ui.settings import AppSettings

def pump(seconds, until=lambda: False):
    end = time.monotonic() + seconds
    while time.monotonic() < end and not until():
        app.processEvents(); time.sleep(0.005)

def size(w): return [w.width(), w.height()]
out = {"screen": [app.primaryScreen().availableGeometry().width(), app.primaryScreen().availableGeometry().height()]}
w = MainWindow(ProjectModel(), AppSettings()); w.show(); pump(0.2)
out["default"] = [w.geometry().x(), w.geometry().y()] + size(w)
w.open_path(ensure_demo(Path(sys.argv[1]) / "demo.rwb"))
pump(20, lambda: w.model.store is not None and w.reads_idle()); pump(0.2)
out["opened"] = size(w)
out["minimum"] = [w.minimumSizeHint().width(), w.minimumSizeHint().height()]
for i in range(10):
    w.notices.add("error", f"Notice {i}: " + "a long message " * 15, "details"); pump(0.02)
w.project_label.setText("/very/long/path/" * 80)
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTabBar
status = w.statusBar().geometry()
out["stray_bars"] = [b.geometry().getRect() for b in w.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly)
                     if b.isVisible() and (b.geometry().intersects(status) or not w.rect().contains(b.geometry()))]
front = w.docks["quadrantPanel"].geometry()  # the Results workspace's dock in front
out["front_dock"] = [front.top(), front.bottom(), status.top()]
pump(0.2)
out["after_notices"] = size(w)
out["minimum_after"] = [w.minimumSizeHint().width(), w.minimumSizeHint().height()]
out["history"] = len(w.notices.history)
geometry = w.geometry()
w.close(); pump(0.1)
again = MainWindow(ProjectModel(), AppSettings()); again.show(); pump(0.2)
out["moved"] = [again.x() - geometry.x(), again.y() - geometry.y()]
out["restarted"] = size(again)
again.persist_layout = False; again.close()
print(json.dumps(out))
"""


def test_the_window_fits_a_1280x720_projector_and_keeps_its_size(tmp_path):
    """In a process of its own whose (offscreen) screen is 1280×720."""
    config = tmp_path / "screen.json"
    config.write_text(json.dumps({"screens": [{"name": "projector", "x": 0, "y": 0, "width": 1280,
                                               "height": 720, "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={config}"}
    run = subprocess.run([sys.executable, "-c", PROJECTOR, str(tmp_path)], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=90)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["screen"] == [1280, 720]
    x, y, width, height = out["default"]
    assert x >= 0 and y >= 0 and x + width <= 1280 and y + height <= 720
    assert out["opened"] == [width, height]  # the panels' rows did not push it either
    assert out["minimum"][0] <= width and out["minimum"][1] <= height
    assert out["after_notices"] == [width, height]  # ten notices and a long path: not one pixel more
    assert out["minimum_after"][0] <= width and out["minimum_after"][1] <= height
    assert out["history"] == 10
    assert out["restarted"] == [width, height] and all(abs(d) <= 8 for d in out["moved"]), out
    # The workspace's dock in front runs the window's height (its tab group's bar below it), and
    # no tab bar left over from building the layout sits over the status bar.
    top, bottom, status_top = out["front_dock"]
    assert bottom >= status_top - 40 and bottom - top >= 0.75 * height, out
    assert out["stray_bars"] == [], out


def test_every_help_window_is_modeless(qtbot, window):
    for show in (window.show_about, window.show_protocols, window.show_shortcuts, window.show_message_history):
        shown = show()
        assert shown.windowModality() == Qt.WindowModality.NonModal and shown.isWindow()
    assert QApplication.activeModalWidget() is None
