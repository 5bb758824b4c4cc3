"""The restoration diagram draws one box per state of the engine's state machine (the widget does
not import the engine: it stays out of the window's start)."""

from workbench.core.protocols.echo.restore import STEPS
from workbench.ui.widgets.echo_diagram import LABELS, MAIN


def test_the_diagram_has_a_box_for_each_restoration_step_and_no_other():
    assert set(LABELS) == set(STEPS)
    assert set(MAIN) <= set(STEPS)
