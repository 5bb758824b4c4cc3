"""The Qt bindings keep Python's reference counts straight.

PySide6 6.12.0 on Python 3.11 drops a reference to None on every call of a void method
(``setText``, ``show``, ``processEvents``...): None's count falls by one per call until Python
aborts with "deallocating None", a few thousand calls into a session. pyproject.toml excludes
that release; this test fails if a release with the same fault is installed.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QLabel

CALLS = 2_000


def test_void_calls_do_not_drop_references_to_none(qapp):
    label, timer = QLabel(), QTimer()
    before = sys.getrefcount(None)
    for _ in range(CALLS):
        label.setText("x")
        timer.setInterval(5)
        QApplication.processEvents()
    # Other objects may take or drop a few references meanwhile; a leak drops three per loop.
    assert abs(sys.getrefcount(None) - before) < CALLS // 10
