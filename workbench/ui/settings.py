"""What the workbench remembers between sessions (QSettings): recent files, the window's geometry,
its workspace and each workspace's arrangement, the theme and the zoom. They are kept in
``settings.ini`` in the application's data folder (``core.paths.settings_file()``), beside the
demo project."""

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

    def window_geometry(self) -> QByteArray | None:
        value = self._s.value("window/geometry")
        return value if isinstance(value, QByteArray) else None

    def workspaces(self, version: int) -> tuple[str, dict[str, QByteArray]]:
        """The workspace the window was left in and each workspace's arrangement, as saved by
        this layout ``version``; an older version's are ignored (its docks were others)."""
        try:
            saved_version = int(self._s.value("workspaces/version", 0))
        except (TypeError, ValueError):
            saved_version = 0
        if saved_version != version:
            return "", {}
        current = str(self._s.value("workspaces/current", "") or "")
        self._s.beginGroup("workspaces/states")
        states = {key: self._s.value(key) for key in self._s.childKeys()}
        self._s.endGroup()
        return current, {k: v for k, v in states.items() if isinstance(v, QByteArray)}

    def save_workspaces(self, version: int, geometry: QByteArray, current: str,
                        states: dict[str, QByteArray]) -> None:
        self._s.remove("window/state")  # the single layout of versions before workspaces
        self._s.remove("workspaces/states")  # a workspace reset to its own arrangement has none
        self._s.setValue("window/geometry", geometry)
        self._s.setValue("workspaces/version", version)
        self._s.setValue("workspaces/current", current)
        for key, state in states.items():
            self._s.setValue(f"workspaces/states/{key}", state)
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
