"""Presenter mode's controls, below the panel presented (the Teach workspace, or F11).

Presenter mode shows one panel filling the window, in type of at least ``theme.PRESENTER_PT``
(the zoom multiplies it) and the theme's high-contrast palette; the window applies both
(``MainWindow.set_presenter``). This bar picks the panel (a list, Previous, Next) and leaves.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLabel, QSizePolicy, QToolBar, QToolButton, QWidget

from workbench.ui.workspaces import Workspaces


class PresenterBar(QToolBar):
    def __init__(self, workspaces: Workspaces, titles: dict[str, str], parent: QWidget):
        super().__init__("Presenter controls", parent)
        self.setObjectName("presenterBar")
        self.workspaces = workspaces
        self.setMovable(False)
        self.setFloatable(False)
        self.toggleViewAction().setVisible(False)  # shown in Teach, and only there
        self.addWidget(QLabel(" Presenting ", self))
        self.panel_combo = QComboBox(self)
        self.panel_combo.setObjectName("presentedPanel")
        self.panel_combo.setToolTip("The panel presented")
        for name in workspaces.order:
            self.panel_combo.addItem(titles[name], name)
        self.panel_combo.activated.connect(lambda i: workspaces.present(self.panel_combo.itemData(i)))
        self.addWidget(self.panel_combo)
        self.previous_button = self._button("◀ Previous", "presenterPrevious", "The previous panel (Alt+Left)",
                                            lambda: workspaces.step(-1))
        self.next_button = self._button("Next ▶", "presenterNext", "The next panel (Alt+Right)",
                                        lambda: workspaces.step(1))
        spacer = QWidget(self)
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.addWidget(spacer)
        self.exit_button = self._button("Exit presenter mode", "presenterExit",
                                        "Back to the workspace before (F11)", workspaces.leave_presenter)
        self.previous_button.setShortcut("Alt+Left")
        self.next_button.setShortcut("Alt+Right")
        workspaces.presented.connect(self._on_presented)
        self.hide()

    def _button(self, text: str, name: str, tip: str, slot) -> QToolButton:
        button = QToolButton(self)
        button.setText(text)
        button.setObjectName(name)
        button.setToolTip(tip)
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        button.clicked.connect(lambda _checked=False: slot())
        self.addWidget(button)
        return button

    def _on_presented(self, panel: str) -> None:
        index = self.panel_combo.findData(panel)
        if index >= 0:
            self.panel_combo.setCurrentIndex(index)
