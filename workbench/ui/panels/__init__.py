"""One module per panel. ``ALL_PANELS`` is the order of the View menu."""

from workbench.ui.panels.anchors_panel import AnchorsPanel
from workbench.ui.panels.clusters_panel import ClustersPanel
from workbench.ui.panels.drift_panel import DriftPanel
from workbench.ui.panels.findings_panel import FindingsPanel
from workbench.ui.panels.live_run_panel import LiveRunPanel
from workbench.ui.panels.protocol_editor_panel import ProtocolEditorPanel
from workbench.ui.panels.quadrant_panel import QuadrantPanel
from workbench.ui.panels.study_panel import StudyPanel
from workbench.ui.panels.trace_inspector_panel import TraceInspectorPanel

ALL_PANELS = (ClustersPanel, ProtocolEditorPanel, LiveRunPanel, TraceInspectorPanel, QuadrantPanel, DriftPanel,
              AnchorsPanel, FindingsPanel, StudyPanel)
