"""Fixtures the core tests share."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from workbench.core.project.store import Store


@pytest.fixture
def project(tmp_path):
    """A new, empty project file; its connection is closed after the test."""
    store = Store.create(tmp_path / "p.rwb")
    yield store
    store.close_connection()


@pytest.fixture
def now():
    """A clock that ticks one second per reading, from 2026-01-31 10:00:00 UTC."""
    t = [datetime(2026, 1, 31, 10, 0, 0)]

    def tick() -> str:
        t[0] += timedelta(seconds=1)
        return t[0].isoformat(timespec="milliseconds") + "Z"
    return tick
