"""The run configuration form's few protocol-specific parts: those that are a protocol's own view.

Every protocol's options page is built from its declared config model (``option_fields``), so a
plugin's protocol gets one with no code here. What stays named, each for its reason:

- **RCP's page** is the view of the project's own settings: τ, θ and weighting are set once in
  Clusters & Agents for every run of the project (``panel_edits.PROJECT_KEYS``), and shown here,
  read-only, with a note saying so; the reference cluster is picked from the document's clusters;
  θ and τ take values in (0, 1], which their model checks with validators a form cannot read.
  Its configuration warnings (empty polar tiers, a one-agent cluster) are RCP's engine's.
- **The findings' list** is edited one finding a line ("id: claim"), the way the Findings panel
  lists them; its other options come from the model.

Central code looks a protocol up here by name (:data:`OWN_PAGES`, :data:`OWN_FIELDS`,
:data:`WARNINGS`) and falls back to the model; it never branches on a name.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QLabel, QWidget


def rcp_page(editor) -> QWidget:
    from workbench.ui.widgets.option_fields import double_box, form_layout, int_box

    page = QWidget()
    form = form_layout(page)
    editor.settings_note = QLabel(page)
    editor.settings_note.setObjectName("projectSettingsNote")
    editor.settings_note.setWordWrap(True)
    editor.settings_note.setTextFormat(Qt.TextFormat.PlainText)
    form.addRow(editor.settings_note)
    editor._field(form, "Theta", ("theta",), double_box(0, 1))
    editor._field(form, "Tau", ("tau",), double_box(0, 1))
    editor._field(form, "Weighted clusters", ("weighted",), QCheckBox())
    editor.reference_combo = QComboBox()
    editor._field(form, "Reference cluster", ("reference",), editor.reference_combo)
    editor._field(form, "Ballot mode", ("ballot_mode",), QCheckBox("one ballot call per voter"))
    editor._field(form, "Refinement rounds", ("refinement_rounds",), int_box(0, 20))
    return page


def findings_fields(editor, form: QFormLayout) -> None:
    from workbench.ui.widgets.option_fields import text_box

    editor.findings_edit = text_box(4.2, "One finding a line: id: claim")
    editor._field(form, "Findings", ("findings",), editor.findings_edit,
                  shown=lambda v: findings_text(v or []),
                  parsed=lambda text, doc: parse_findings(text, doc.get("findings") or []))


def findings_text(findings: list) -> str:
    return "\n".join(f"{f.get('id', '')}: {f.get('claim', '')}" for f in findings if isinstance(f, dict))


def parse_findings(text: str, before: list) -> list[dict]:
    """One finding a line, "id: claim" (an id left out: f1, f2...). A finding whose id was
    there before keeps its context and threshold."""
    old = {f.get("id"): f for f in before if isinstance(f, dict)}
    out = []
    for n, line in enumerate(x for x in text.splitlines() if x.strip()):
        head, sep, claim = line.partition(":")
        fid, claim = (head.strip(), claim.strip()) if sep and head.strip() and " " not in head.strip() \
            else (f"f{n + 1}", line.strip())
        out.append({**old.get(fid, {}), "id": fid, "claim": claim})
    return out


def rcp_warnings(cfg) -> list[str]:
    from workbench.core.errors import InputError
    from workbench.core.protocols.rcp.config import config_warnings

    try:
        return config_warnings({"clusters": cfg.classification_panel(), "reference": cfg.reference,
                                "theta": cfg.theta, "tau": cfg.tau, "weighted": cfg.weighted})
    except InputError:
        return []


# A protocol's own page (it replaces the page built from the model), its own fields (added to
# the page built from the model; the model's fields of the same keys are left out), and the
# warnings its engine gives about a valid configuration.
OWN_PAGES: dict[str, Callable[..., QWidget]] = {"rcp": rcp_page}
OWN_FIELDS: dict[str, tuple[tuple[str, ...], Callable[..., None]]] = {"findings": (("findings",), findings_fields)}
WARNINGS: dict[str, Callable[..., list[str]]] = {"rcp": rcp_warnings}


def page_warnings(cfg) -> list[str]:
    found = WARNINGS.get(cfg.protocol)
    return list(found(cfg)) if found is not None else []
