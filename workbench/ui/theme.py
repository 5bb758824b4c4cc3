"""One look for every widget: the light and dark themes, the zoom, and the bundled fonts.

- **Themes** are QPalettes on the Fusion style, so every widget follows, stylesheets that say
  ``palette(...)`` included. Body text is at least 7:1 against its background in both themes,
  so both read on a projector (``tests/ui/test_app_shell.py`` computes every ratio).
- **Colours with a meaning** (a run's status, a notice's level, the tiers of UI.md) come from
  :func:`colour`, per theme: a colour readable on white is often unreadable on near-black.
  The tier colours stay apart for colour-blind readers too (checked under simulated
  protanopia, deuteranopia and tritanopia), and UI.md still pairs each with a shape.
- **Zoom** scales the application font (every widget that does not set its own); plots read the
  window's ``zoom`` and listen to its ``zoom_changed``. **Presenter mode** multiplies it: the
  window sets its own font :func:`presenter_scale` times the application's (at least
  PRESENTER_PT), and the palette turns to the theme's high-contrast variant (:data:`HIGH_CONTRAST`).
- **Fonts**: DejaVu Sans and "Workbench Symbols" are loaded from ``resources/fonts`` and placed
  after the system's default family, so every glyph the UI draws exists even on a bare machine.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QRectF, QSize
from PySide6.QtGui import QColor, QFont, QFontDatabase, QGuiApplication, QIcon, QPainter, QPalette, QPen
from PySide6.QtWidgets import QWidget

from workbench.core.paths import resources_dir

RESOURCES = resources_dir()
FONT_DIR = RESOURCES / "fonts"
FONT_FILES = ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "WorkbenchSymbols.ttf")
ICON_FILE = RESOURCES / "icons" / "workbench.svg"

THEMES = {"light": "&Light", "dark": "&Dark"}
DEFAULT_THEME = "light"
MIN_BODY_CONTRAST = 7.0  # body text against its background (WCAG AAA), for projectors

Role = QPalette.ColorRole
_ROLES = ("Window", "WindowText", "Base", "AlternateBase", "Text", "Button", "ButtonText", "BrightText",
          "Light", "Midlight", "Mid", "Dark", "Shadow", "Highlight", "HighlightedText", "Link", "LinkVisited",
          "ToolTipBase", "ToolTipText", "PlaceholderText", "Accent")

PALETTES: dict[str, dict[str, str]] = {
    "light": {
        "Window": "#f4f4f4", "WindowText": "#1a1a1a", "Base": "#ffffff", "AlternateBase": "#f0f0f0",
        "Text": "#141414", "Button": "#e4e4e4", "ButtonText": "#141414", "BrightText": "#ffffff",
        "Light": "#ffffff", "Midlight": "#ececec", "Mid": "#b0b0b0", "Dark": "#8c8c8c", "Shadow": "#5a5a5a",
        "Highlight": "#1f4f8a", "HighlightedText": "#ffffff", "Link": "#0b4a94", "LinkVisited": "#5b2a86",
        "ToolTipBase": "#ffffe1", "ToolTipText": "#141414", "PlaceholderText": "#474747", "Accent": "#1f4f8a",
    },
    "dark": {
        # Fields and tables a step lighter than the window: Fusion's outlines are the window
        # colour darkened, which a dark window hardly shows.
        "Window": "#1c1c1c", "WindowText": "#e8e8e8", "Base": "#262626", "AlternateBase": "#2e2e2e",
        "Text": "#f0f0f0", "Button": "#333333", "ButtonText": "#f0f0f0", "BrightText": "#ffffff",
        "Light": "#4a4a4a", "Midlight": "#3c3c3c", "Mid": "#5c5c5c", "Dark": "#141414", "Shadow": "#000000",
        "Highlight": "#24528a", "HighlightedText": "#ffffff", "Link": "#8cc4ff", "LinkVisited": "#c8a8ff",
        "ToolTipBase": "#333333", "ToolTipText": "#f0f0f0", "PlaceholderText": "#bdbdbd", "Accent": "#24528a",
    },
}
# Disabled widgets are dimmed on purpose (they need not reach 7:1).
DISABLED: dict[str, dict[str, str]] = {
    "light": {"WindowText": "#8a8a8a", "Text": "#8a8a8a", "ButtonText": "#8a8a8a", "Highlight": "#9a9a9a",
              "PlaceholderText": "#9a9a9a"},
    "dark": {"WindowText": "#7a7a7a", "Text": "#7a7a7a", "ButtonText": "#7a7a7a", "Highlight": "#3a3a3a",
             "PlaceholderText": "#6a6a6a"},
}
# Body text and the background it sits on: each pair reaches MIN_BODY_CONTRAST in both themes.
BODY_TEXT = (("WindowText", "Window"), ("Text", "Base"), ("Text", "AlternateBase"), ("ButtonText", "Button"),
             ("ToolTipText", "ToolTipBase"), ("HighlightedText", "Highlight"), ("PlaceholderText", "Window"),
             ("PlaceholderText", "Base"), ("Link", "Base"), ("LinkVisited", "Base"))

# Colours that mean something, as text or glyphs on the window or a table (>= 4.5:1 on both).
COLOURS: dict[str, dict[str, str]] = {
    "light": {"ok": "#1b6e20", "warning": "#8a5300", "error": "#b3261e", "info": "#1f5fa8",
              "muted": "#5f5f5f", "sim": "#6b4fbb", "accent": "#1f5fa8"},
    "dark": {"ok": "#6fcf75", "warning": "#f0b44c", "error": "#ff7a70", "info": "#7fb3f0",
             "muted": "#a8a8a8", "sim": "#b39ddb", "accent": "#7fb3f0"},
}
# The outline of a check box or radio button: >= 3:1 against the window and the fields (WCAG's
# minimum for a control's boundary). Fusion outlines them in the window colour darkened, which
# a dark window hardly shows.
INDICATOR_OUTLINE = {"light": "#767676", "dark": "#a0a0a0"}
# The tiers of UI.md: green, orange (solid for positive polar, hatched or outlined for negative
# polar), red, grey (hollow when no vote was cast). Chosen by their distance in CIELAB under
# normal vision and simulated colour blindness, and >= 3:1 against the table's background.
TIERS: dict[str, dict[str, str]] = {
    "light": {"positive_consensus": "#2b9656", "positive_polar": "#c47000", "negative_polar": "#c47000",
              "negative_consensus": "#a3121f", "unclassified": "#5f5f5f", "invalid": "#5f5f5f"},
    "dark": {"positive_consensus": "#5ae894", "positive_polar": "#d47b12", "negative_polar": "#d47b12",
             "negative_consensus": "#f04a64", "unclassified": "#cfcfcf", "invalid": "#cfcfcf"},
}

# Presenter mode's high-contrast variant of each theme (the rest of its palette is the theme's):
# pure black on white, or white on black, and darker (lighter) outlines, so text and the
# controls' edges carry across a room. The tier and status colours stay the theme's: each keeps
# its contrast against these backgrounds (tests/ui/test_workspaces.py computes it).
HIGH_CONTRAST: dict[str, dict[str, str]] = {
    "light": {"Window": "#ffffff", "WindowText": "#000000", "Base": "#ffffff", "AlternateBase": "#ededed",
              "Text": "#000000", "ButtonText": "#000000", "Mid": "#595959", "Dark": "#404040",
              "PlaceholderText": "#333333", "Highlight": "#003a7a", "ToolTipText": "#000000"},
    "dark": {"Window": "#000000", "WindowText": "#ffffff", "Base": "#000000", "AlternateBase": "#161616",
             "Text": "#ffffff", "Button": "#1e1e1e", "ButtonText": "#ffffff", "Mid": "#a6a6a6", "Light": "#8c8c8c",
             "PlaceholderText": "#d9d9d9", "Highlight": "#1a4f8f", "ToolTipBase": "#1e1e1e", "ToolTipText": "#ffffff"},
}
PRESENTER_PT = 18.0  # presenter mode's smallest type, before the zoom multiplies it

ZOOM_STEPS = (0.75, 0.85, 1.0, 1.15, 1.3, 1.5, 1.75, 2.0, 2.5)
ZOOM_MIN, ZOOM_MAX = ZOOM_STEPS[0], ZOOM_STEPS[-1]


class _State:
    theme = DEFAULT_THEME
    high_contrast = False  # presenter mode's palette
    presenter = 1.0  # presenter mode's type scale (1: off), on top of the zoom
    zoom = 1.0
    base_font: QFont | None = None  # the platform's default, before any zoom
    families: list[str] | None = None  # the bundled families, once loaded
    style = None  # the application's style (Fusion, outlined indicators)
    on_polish = None  # called with each widget the style polishes (ui/wheel_guard.py)


# ----- colours ---------------------------------------------------------------------------------
def _linear(channel: int) -> float:
    c = channel / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def luminance(colour: str | QColor) -> float:
    """WCAG relative luminance of a colour (``#rrggbb`` or a QColor)."""
    c = QColor(colour)
    return 0.2126 * _linear(c.red()) + 0.7152 * _linear(c.green()) + 0.0722 * _linear(c.blue())


def contrast(a: str | QColor, b: str | QColor) -> float:
    """WCAG contrast ratio of two colours, from 1 to 21."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def current_theme() -> str:
    return _State.theme


def colour(key: str, theme: str | None = None) -> QColor:
    """A colour with a meaning in the current (or given) theme: a semantic key of
    :data:`COLOURS` (ok, warning, error, info, muted, sim, accent) or a tier of :data:`TIERS`."""
    name = theme or _State.theme
    table = COLOURS[name] if key in COLOURS[name] else TIERS[name]
    return QColor(table[key])


def css(key: str, theme: str | None = None) -> str:
    """:func:`colour` as ``#rrggbb``, for stylesheets and rich text."""
    return colour(key, theme).name()


def colours_of(theme: str, high_contrast: bool = False) -> dict[str, str]:
    """A theme's palette roles, or presenter mode's high-contrast variant of them."""
    return {**PALETTES[theme], **(HIGH_CONTRAST[theme] if high_contrast else {})}


def palette(theme: str, high_contrast: bool = False) -> QPalette:
    pal = QPalette()
    groups = (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive, QPalette.ColorGroup.Disabled)
    colours = colours_of(theme, high_contrast)
    for role in _ROLES:
        value = QColor(colours[role])
        for group in groups:
            pal.setColor(group, getattr(Role, role), value)
    for role, value in DISABLED[theme].items():
        pal.setColor(QPalette.ColorGroup.Disabled, getattr(Role, role), QColor(value))
    return pal


# ----- installing ------------------------------------------------------------------------------
def load_fonts() -> list[str]:
    """Register the bundled fonts (once) and return their families."""
    if _State.families is None:
        families: list[str] = []
        for name in FONT_FILES:
            font_id = QFontDatabase.addApplicationFont(str(FONT_DIR / name))
            for family in QFontDatabase.applicationFontFamilies(font_id) if font_id >= 0 else ():
                if family not in families:
                    families.append(family)
        _State.families = families
    return list(_State.families)


def on_polish(hook) -> None:
    """Call ``hook(widget)`` for every widget the application's style polishes from now on (once
    before it is first shown, and again when its style sheet changes): a hook per widget, where
    an application event filter would be a Python call per event (ui/wheel_guard.py)."""
    _State.on_polish = hook


def install(app: QGuiApplication) -> None:
    """Fusion, the bundled fonts after the system's family, the window icon. Idempotent."""
    if _State.base_font is None:
        _State.base_font = QFont(app.font())
        load_fonts()
        if hasattr(app, "setStyle"):
            _State.style = _fusion()  # kept: the application does not own a Python-made style
            app.setStyle(_State.style)
        if ICON_FILE.exists():
            icon = QIcon(str(ICON_FILE))
            icon.addFile(str(ICON_FILE), QSize(64, 64))
            app.setWindowIcon(icon)
        _apply_font(app)


def font_families() -> list[str]:
    """The application font's families: the system's default first, then the bundled ones."""
    base = _State.base_font.family() if _State.base_font is not None else QFont().family()
    return [base] + [f for f in (_State.families or []) if f != base]


def apply_theme(app: QGuiApplication, theme: str, restyle: QWidget | None = None,
                high_contrast: bool | None = None) -> str:
    """Set ``theme``'s palette on the application (its high-contrast variant when
    ``high_contrast``; None keeps the current choice); with ``restyle``, set the stylesheets of
    that window and everything in it again (a theme changed while the window is open)."""
    theme = theme if theme in PALETTES else DEFAULT_THEME
    install(app)
    _State.theme = theme
    if high_contrast is not None:
        _State.high_contrast = high_contrast
    app.setPalette(palette(theme, _State.high_contrast))
    if restyle is None:
        return theme
    # Qt posts the change to each window; deliver it now, so every widget (and whatever reads a
    # colour right after) has the new palette when this returns.
    QCoreApplication.sendPostedEvents(None, QEvent.Type.ApplicationPaletteChange)
    # A widget with a stylesheet, and every widget inside it, keeps the palette it had when the
    # sheet was set (Qt's stylesheet style resolves it then): a box styled in the light theme
    # stayed white, its labels black, in the dark one. Setting the sheets again resolves them anew.
    # Only the given window's own widgets: walking QApplication.allWidgets() also reached
    # widgets of closed windows awaiting deletion, and crashed.
    for widget in [restyle, *restyle.findChildren(QWidget)]:
        sheet = widget.styleSheet()
        if sheet:
            widget.setStyleSheet(sheet)
    return theme


def apply_zoom(app: QGuiApplication, factor: float) -> float:
    """Scale the application font by ``factor`` (clamped to the zoom range); returns it."""
    install(app)
    _State.zoom = clamp_zoom(factor)
    _apply_font(app)
    return _State.zoom


def current_zoom() -> float:
    return _State.zoom


def high_contrast() -> bool:
    return _State.high_contrast


def set_presenter(on: bool) -> float:
    """Presenter mode's type scale: the smallest type PRESENTER_PT (before the zoom), or 1 when
    off. The application font stays the zoom's; the window applies this scale to its own font."""
    _State.presenter = max(PRESENTER_PT / base_point_size(), 1.0) if on else 1.0
    return _State.presenter


def presenter_scale() -> float:
    return _State.presenter


def type_scale() -> float:
    """How much larger than normal the window's type is: the zoom, times presenter mode's scale
    (plots size their marks and labels by it)."""
    return _State.zoom * _State.presenter


def clamp_zoom(factor: float) -> float:
    try:
        value = float(factor)
    except (TypeError, ValueError):
        return 1.0
    return min(max(value, ZOOM_MIN), ZOOM_MAX) if value == value else 1.0


def zoom_step(factor: float, direction: int) -> float:
    """The next zoom step up (``direction`` > 0) or down from ``factor``."""
    if direction > 0:
        return next((z for z in ZOOM_STEPS if z > factor + 1e-6), ZOOM_MAX)
    return next((z for z in reversed(ZOOM_STEPS) if z < factor - 1e-6), ZOOM_MIN)


def base_point_size() -> float:
    base = _State.base_font or QFont()
    return base.pointSizeF() if base.pointSizeF() > 0 else 10.0


def _apply_font(app: QGuiApplication) -> None:
    font = QFont(_State.base_font or app.font())
    font.setFamilies(font_families())
    font.setPointSizeF(round(base_point_size() * _State.zoom, 2))
    app.setFont(font)
    QCoreApplication.sendPostedEvents(None, QEvent.Type.ApplicationFontChange)


def _fusion():
    """Fusion, with check boxes and radio buttons outlined so they show in both themes."""
    from PySide6.QtWidgets import QProxyStyle, QStyle, QStyleFactory

    class Style(QProxyStyle):
        def polish(self, target):  # a widget, the application or a palette (Qt's overloads)
            result = super().polish(target)
            if _State.on_polish is not None and isinstance(target, QWidget):
                _State.on_polish(target)
            return result

        def drawPrimitive(self, element, option, painter, widget=None) -> None:  # noqa: N802 (Qt API)
            super().drawPrimitive(element, option, painter, widget)
            radio = element == QStyle.PrimitiveElement.PE_IndicatorRadioButton
            if not radio and element != QStyle.PrimitiveElement.PE_IndicatorCheckBox:
                return
            colour = QColor(INDICATOR_OUTLINE[_State.theme])
            if not option.state & QStyle.StateFlag.State_Enabled:
                colour.setAlphaF(0.5)
            painter.save()
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
            painter.setPen(QPen(colour, 1))
            painter.setBrush(QColor(0, 0, 0, 0))
            rect = QRectF(option.rect).adjusted(0.5, 0.5, -0.5, -0.5)
            if radio:
                side = min(rect.width(), rect.height())
                rect = QRectF(rect.center().x() - side / 2, rect.center().y() - side / 2, side, side)
                painter.drawEllipse(rect)
            else:
                painter.drawRoundedRect(rect, 1.5, 1.5)
            painter.restore()

    style = Style(QStyleFactory.create("Fusion"))
    style.setObjectName("fusion")
    return style
