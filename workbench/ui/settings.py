"""What the workbench remembers between sessions (QSettings): recent files, the layout, the theme
and the zoom. They are kept in ``settings.ini`` in the application's data folder
(``core.paths.settings_file()``), beside the demo project."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from workbench.core.paths import settings_file

MAX_RECENT = 10


class AppSettings:
    def __init__(self, settings: QSettings | None = None):
        self._s = settings or QSettings(str(settings_file()), QSettings.Format.IniFormat)

    def recent_files(self) -> list[Path]:
        value = self._s.value("recentFiles", [])
        items = [value] if isinstance(value, str) else list(value or [])
        return [Path(p) for p in items if p]

    def add_recent(self, path: Path) -> list[Path]:
        path = Path(path).absolute()
        items = [path] + [p for p in self.recent_files() if p != path]
        self._s.setValue("recentFiles", [str(p) for p in items[:MAX_RECENT]])
        return self.recent_files()

    def last_dir(self) -> str:
        return str(self._s.value("lastDir", "") or "")

    def set_last_dir(self, path: Path) -> None:
        self._s.setValue("lastDir", str(Path(path).parent))

    def window_state(self) -> tuple[QByteArray | None, QByteArray | None]:
        return self._s.value("window/geometry"), self._s.value("window/state")

    def save_window_state(self, geometry: QByteArray, state: QByteArray) -> None:
        self._s.setValue("window/geometry", geometry)
        self._s.setValue("window/state", state)
        self._s.sync()

    def theme(self) -> str:
        return str(self._s.value("view/theme", "") or "")

    def set_theme(self, name: str) -> None:
        self._s.setValue("view/theme", name)

    def zoom(self) -> float:
        try:
            return float(self._s.value("view/zoom", 1.0))
        except (TypeError, ValueError):
            return 1.0

    def set_zoom(self, factor: float) -> None:
        self._s.setValue("view/zoom", float(factor))

    def tour_step(self) -> str:
        """The key of the step a guided tour was left at ("" when none)."""
        return str(self._s.value("tour/step", "") or "")

    def set_tour_step(self, key: str | None) -> None:
        if key:
            self._s.setValue("tour/step", key)
        else:
            self._s.remove("tour/step")
