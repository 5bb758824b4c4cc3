"""A run configuration as a form (with a "Show JSON" toggle): the protocol, the query or the
question set of a batch, the seed, dispatch and each provider's concurrency, the protocol's
options, Resonance Echo, and a batch's axes (questions × provider mixes × replicates).

The form edits one SPEC §6 document, the very dict ``rwb run`` reads: keys the form has no
field for (providers, clusters, personas, echo patterns, notes...) pass through unchanged, and
a field the user never touched adds nothing. Every change is validated off the GUI thread by
the models ``rwb run`` uses (``parse_run_config``; ``expand_batch`` for a batch), and the
outcome is shown inline, with the field at fault outlined.
"""

from __future__ import annotations

import copy
import json
import secrets
from dataclasses import dataclass, field as dc_field

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtCore import QRegularExpression
from PySide6.QtGui import QFontDatabase, QRegularExpressionValidator
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel,
                               QLineEdit, QPlainTextEdit, QPushButton, QScrollArea, QSizePolicy, QSpinBox, QStackedWidget,
                               QVBoxLayout, QWidget)

from workbench.ui.widgets.manual_prompt import escape_html

PROTOCOL_NAMES = (("rcp", "RCP (resonant consensus)"), ("arm", "ARM (mesh)"),
                  ("findings", "Consensus Server findings"), ("cons", "CONS"))
# The keys each protocol owns at the top level of a document (dropped when the protocol changes).
PROJECT_KEYS = ("tau", "theta", "weighted")  # RCP's keys the project's settings set (Clusters & Agents)
PROTOCOL_KEYS = {"rcp": ("theta", "tau", "weighted", "ballot_mode", "refinement_rounds"),
                 "findings": ("threshold", "findings", "findings_from_run", "findings_tiers"),
                 "cons": ("question_id", "options", "consensus_threshold", "count_threshold", "min_voters",
                          "max_challenge_rounds"),
                 "arm": ("arm",)}
SEED_BITS = 31  # "New seed": a random 31-bit whole number
OK_COLOUR, BAD_COLOUR, WARN_COLOUR = "#2e7d32", "#b3261e", "#b26a00"
INVALID_STYLE = "border: 1px solid #b3261e;"
EMPTY_TEXT = ("No configuration yet. Start here: <b>New ▸</b> a template (a ready-made run on the simulated "
              "panel), or the project's own clusters; or open a JSON or YAML file from <b>Save ▸</b>.")


@dataclass(frozen=True)
class Check:
    """The validation of a document: ``ok``, or the field at fault and the models' message."""

    ok: bool
    message: str
    field: str = ""
    runs: int = 0
    warnings: list[str] = dc_field(default_factory=list)
    simulated: bool = False  # every agent answers through the simulated panel (a room's pace applies)


def check_document(doc: object) -> Check:
    """Validate ``doc`` as ``rwb run`` would (pure; runs on a worker thread)."""
    from workbench.core.errors import InputError
    from workbench.core.runs.batch import expand_batch, is_batch
    from workbench.core.runs.config import parse_run_config

    try:
        if is_batch(doc):
            spec, planned = expand_batch(doc)  # type: ignore[arg-type]
            cfg = planned[0].config if planned else parse_run_config({k: v for k, v in doc.items() if k != "batch"})
            mixes = len(spec.provider_mixes) or 1
            questions = len(spec.questions) or 1
            text = (f"a batch of {len(planned)} run(s): {questions} question(s) × {mixes} provider mix(es) × "
                    f"{spec.replicates} replicate(s)")
            runs = len(planned)
        else:
            cfg = parse_run_config(doc)
            text, runs = "one run", 1
    except InputError as exc:
        return Check(False, str(exc), exc.field)
    warnings: list[str] = []
    if cfg.protocol == "rcp":
        from workbench.core.protocols.rcp.config import config_warnings

        try:
            warnings = config_warnings({"clusters": cfg.classification_panel(), "reference": cfg.reference,
                                        "theta": cfg.theta, "tau": cfg.tau, "weighted": cfg.weighted})
        except InputError:
            warnings = []
    sim = " on the simulated panel (SIM)" if cfg.simulated else ""
    return Check(True, f"Valid: {cfg.protocol.upper()}, {len(cfg.agents)} agent(s), seed {cfg.seed}, "
                       f"{text}{sim}", runs=runs, warnings=warnings, simulated=cfg.simulated)


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


def mixes_text(mixes: list) -> str:
    return "\n".join(f"{m.get('name', '')}: " + ", ".join(f"{k}={v}" for k, v in (m.get("providers") or {}).items())
                     for m in mixes if isinstance(m, dict))


def parse_mixes(text: str) -> list[dict]:
    """One provider mix a line: "name: agent=provider, *=provider"."""
    out = []
    for line in (x for x in text.splitlines() if x.strip()):
        name, _, rest = line.partition(":")
        providers = {}
        for pair in rest.split(","):
            key, eq, value = pair.partition("=")
            if eq:
                providers[key.strip()] = value.strip()
        out.append({"name": name.strip(), "providers": providers})
    return out


def _lines(text: str) -> list[str]:
    return [x.strip() for x in text.splitlines() if x.strip()]


def _double(low: float, high: float, step: float = 0.05, decimals: int = 2) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setRange(low, high)
    box.setSingleStep(step)
    box.setDecimals(decimals)
    return box


def _int(low: int, high: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    return box


def _text_box(lines: float, placeholder: str) -> QPlainTextEdit:
    box = QPlainTextEdit()
    box.setPlaceholderText(placeholder)
    box.setTabChangesFocus(True)
    box.setFixedHeight(int(box.fontMetrics().lineSpacing() * lines + 10))
    return box


def _combo(items) -> QComboBox:
    box = QComboBox()
    for value, text in items:
        box.addItem(text, value)
    return box


def _form(parent: QWidget) -> QFormLayout:
    form = QFormLayout(parent)
    form.setContentsMargins(6, 4, 6, 4)
    form.setVerticalSpacing(3)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return form


class RunConfigEditor(QWidget):
    """The form. ``document()`` is the document as edited; ``check`` its last validation."""

    changed = Signal()  # the document changed
    validated = Signal(object)  # a Check, once the newest document has been validated

    def __init__(self, reads=None, parent: QWidget | None = None):
        super().__init__(parent)
        self._doc: dict = {}
        self._stash: dict[str, dict] = {}  # protocol -> its keys, kept while another protocol is chosen
        self._echo_stash: dict | None = None
        self._batch_stash: dict | None = None
        self._loading = False
        self.check: Check | None = None
        self.pending = False  # a validation is due or running
        # tau, theta and weighting live in one place, the project's settings (Clusters & Agents):
        # a document of the project follows them; a file or template keeps its own (and says so).
        self.project_settings: dict | None = None
        self.follows_project = False
        self._reader = None
        if reads is not None:
            from workbench.services.reads import Reader

            self._reader = Reader(reads, self, name="check run configuration", busy_delay_ms=10_000)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(120)
        self._timer.timeout.connect(self._validate)
        self._json_timer = QTimer(self)
        self._json_timer.setSingleShot(True)
        self._json_timer.setInterval(300)
        self._json_timer.timeout.connect(self._on_json_edited)
        self._build()
        self.set_document({}, validate=False)

    # ----- construction ----------------------------------------------------------------------
    def _build(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(2)
        top = QHBoxLayout()
        self.status = QLabel(self)
        self.status.setObjectName("configStatus")
        self.status.setTextFormat(Qt.TextFormat.RichText)
        self.status.setWordWrap(True)
        top.addWidget(self.status, 1)
        self.json_button = QPushButton("Show JSON", self)
        self.json_button.setCheckable(True)
        self.json_button.setToolTip("The configuration as the JSON file `rwb run` reads; edit it here or in the form")
        self.json_button.toggled.connect(self._on_json_toggled)
        top.addWidget(self.json_button, 0, Qt.AlignmentFlag.AlignTop)
        outer.addLayout(top)

        columns = QWidget(self)
        row = QHBoxLayout(columns)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(4)
        row.addWidget(self._build_run(), 3)
        row.addWidget(self._build_options(), 3)
        row.addWidget(self._build_batch(), 3)
        self.json_box = QPlainTextEdit(self)
        self.json_box.setObjectName("configJson")
        self.json_box.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.json_box.textChanged.connect(lambda: None if self._loading else self._json_timer.start())
        self.json_box.hide()
        row.addWidget(self.json_box, 4)
        scroll = QScrollArea(self)
        scroll.setWidget(columns)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        # As needed: in a dock narrower than the three columns the last one scrolls into view
        # instead of being cut off at the right edge.
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        outer.addWidget(scroll, 1)

    def _build_run(self) -> QGroupBox:
        box = QGroupBox("Run", self)
        form = _form(box)
        self.name_edit = QLineEdit(box)
        self.name_edit.setObjectName("configName")
        self.name_edit.setPlaceholderText("A name (the runs list and the saved configuration use it)")
        self.protocol_combo = _combo(PROTOCOL_NAMES)
        self.protocol_combo.setObjectName("configProtocol")
        self.query_edit = _text_box(2.2, "The question put to the agents")
        self.query_edit.setObjectName("configQuery")
        seed_row = QHBoxLayout()
        self.seed_edit = QLineEdit(box)
        self.seed_edit.setObjectName("configSeed")
        self.seed_edit.setValidator(QRegularExpressionValidator(QRegularExpression(r"\d{0,19}"), self.seed_edit))
        self.new_seed_button = QPushButton("New seed", box)
        self.new_seed_button.setToolTip(f"A random {SEED_BITS}-bit seed")
        self.new_seed_button.clicked.connect(self.new_seed)
        seed_row.addWidget(self.seed_edit, 1)
        seed_row.addWidget(self.new_seed_button)
        self.dispatch_combo = _combo((("concurrent", "concurrent"), ("sequential", "sequential")))
        self.concurrency_box = QWidget(box)
        # Its own height only: a plain widget's Preferred policy let the form give it the column's
        # spare height, which opened a gap between "Concurrency" and its boxes.
        self.concurrency_box.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._concurrency = QHBoxLayout(self.concurrency_box)
        self._concurrency.setContentsMargins(0, 0, 0, 0)
        self._concurrency_spins: dict[str, QSpinBox] = {}
        echo_row = QHBoxLayout()
        self.echo_check = QCheckBox("wrap agents, check every", box)
        self.echo_check.setToolTip("Wrap every agent in Resonance Echo, and check each one every so many turns")
        self.echo_interval = _int(1, 1000)
        self.echo_interval.setSuffix(" turns")
        echo_row.addWidget(self.echo_check)
        echo_row.addWidget(self.echo_interval, 1)
        form.addRow("Name", self.name_edit)
        form.addRow("Protocol", self.protocol_combo)
        form.addRow("Query", self.query_edit)
        form.addRow("Seed", seed_row)
        form.addRow("Dispatch", self.dispatch_combo)
        form.addRow("Concurrency", self.concurrency_box)
        form.addRow("Echo", echo_row)
        self.name_edit.textEdited.connect(lambda t: self._set(("label",), t.strip()))
        self.protocol_combo.currentIndexChanged.connect(self._on_protocol_changed)
        self.query_edit.textChanged.connect(lambda: self._set(("query",), self.query_edit.toPlainText().strip()))
        self.seed_edit.textEdited.connect(self._on_seed_edited)
        self.dispatch_combo.currentIndexChanged.connect(lambda _i: self._set(("dispatch",), self.dispatch_combo.currentData()))
        self.echo_check.toggled.connect(self._on_echo_toggled)
        self.echo_interval.valueChanged.connect(lambda v: self._set(("echo", "interval"), v) if "echo" in self._doc else None)
        return box

    def _build_options(self) -> QGroupBox:
        box = QGroupBox("Protocol options", self)
        layout = QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        self.options_stack = QStackedWidget(box)
        layout.addWidget(self.options_stack)
        self.fields: dict[tuple, QWidget] = {}

        rcp = QWidget()
        form = _form(rcp)
        self.settings_note = QLabel(rcp)
        self.settings_note.setObjectName("projectSettingsNote")
        self.settings_note.setWordWrap(True)
        self.settings_note.setTextFormat(Qt.TextFormat.PlainText)
        form.addRow(self.settings_note)
        self._field(form, "Theta", ("theta",), _double(0, 1))
        self._field(form, "Tau", ("tau",), _double(0, 1))
        self._field(form, "Weighted clusters", ("weighted",), QCheckBox())
        self.reference_combo = QComboBox()
        self._field(form, "Reference cluster", ("reference",), self.reference_combo)
        self._field(form, "Ballot mode", ("ballot_mode",), QCheckBox("one ballot call per voter"))
        self._field(form, "Refinement rounds", ("refinement_rounds",), _int(0, 20))
        findings = QWidget()
        form = _form(findings)
        self._field(form, "Threshold", ("threshold",), _double(-1, 1))
        self.findings_edit = _text_box(4.2, "One finding a line: id: claim")
        self._field(form, "Findings", ("findings",), self.findings_edit)
        cons = QWidget()
        form = _form(cons)
        self._field(form, "Question id", ("question_id",), QLineEdit())
        self.options_edit = _text_box(2.2, "One option a line")
        self._field(form, "Options", ("options",), self.options_edit)
        self._field(form, "Consensus threshold", ("consensus_threshold",), _double(0, 1))
        self._field(form, "Count threshold", ("count_threshold",), _double(0, 1))
        self._field(form, "Min voters", ("min_voters",), _int(0, 1000))
        self._field(form, "Max challenge rounds", ("max_challenge_rounds",), _int(0, 100))
        arm = QWidget()
        form = _form(arm)
        self._field(form, "Silent baseline answers", ("arm", "silent_draw"),
                    _combo((("gamma", "gamma's prompt"), ("alpha", "alpha's prompt"), ("beta", "beta's prompt"))))
        self._field(form, "Gamma sees", ("arm", "gamma_context"),
                    _combo((("arm+r1", "all round-1 traces"), ("arm", "ARM's context only"))))
        self._field(form, "Role injection", ("arm", "role_injection"), QCheckBox("ethical frames"))
        self._field(form, "FAP threshold", ("arm", "fap_threshold"), _double(-1, 1, 0.01, 3))
        self._field(form, "FAP attempts", ("arm", "fap_max_attempts"), _int(1, 20))
        self._field(form, "FAP requeue", ("arm", "fap_requeue"), QCheckBox())
        self._field(form, "ARM dispatch", ("arm", "dispatch"),
                    _combo(((None, "the run's"), ("sequential", "sequential"), ("concurrent", "concurrent"))))
        self._field(form, "Trace schema", ("arm", "schema_version"),
                    _combo((("arm-trace-v1.3", "v1.3"), ("arm-trace-v1.2", "v1.2"))))
        self._pages = {"rcp": rcp, "findings": findings, "cons": cons, "arm": arm}
        for page in self._pages.values():
            self.options_stack.addWidget(page)
        return box

    def _build_batch(self) -> QGroupBox:
        box = QGroupBox("Batch", self)
        form = _form(box)
        # Short: the three columns share a 1280 px window's Live Run dock, the Batch one last.
        self.batch_check = QCheckBox("run a batch", box)
        self.batch_check.setObjectName("batchCheck")
        self.batch_check.setToolTip("Run every question × provider mix × replicate below, as one batch")
        self.batch_check.toggled.connect(self._on_batch_toggled)
        form.addRow(self.batch_check)
        self._field(form, "Name", ("batch", "name"), QLineEdit())
        self.questions_edit = _text_box(2.2, "One question a line (none: the query)")
        self._field(form, "Questions", ("batch", "questions"), self.questions_edit)
        self.mixes_edit = _text_box(2.2, "One mix a line: name: agent=provider, *=provider")
        self._field(form, "Provider mixes", ("batch", "provider_mixes"), self.mixes_edit)
        self._field(form, "Replicates", ("batch", "replicates"), _int(1, 10_000))
        return box

    def _field(self, form: QFormLayout, label: str, path: tuple, widget: QWidget) -> None:
        self.fields[path] = widget
        form.addRow(label, widget)
        handler = lambda *_a, p=path: self._on_field(p)  # noqa: E731
        if isinstance(widget, (QDoubleSpinBox, QSpinBox)):
            widget.valueChanged.connect(handler)
        elif isinstance(widget, QCheckBox):
            widget.toggled.connect(handler)
        elif isinstance(widget, QComboBox):
            widget.currentIndexChanged.connect(handler)
        elif isinstance(widget, QLineEdit):
            widget.textEdited.connect(handler)
        elif isinstance(widget, QPlainTextEdit):
            widget.textChanged.connect(handler)

    # ----- the document ----------------------------------------------------------------------
    def document(self) -> dict:
        return copy.deepcopy(self._doc)

    @property
    def protocol(self) -> str:
        return self._doc.get("protocol", "rcp")

    @property
    def name(self) -> str:
        return self.name_edit.text().strip()

    @property
    def valid(self) -> bool:
        return not self.pending and self.check is not None and self.check.ok

    def set_document(self, doc: dict, *, validate: bool = True) -> None:
        """Show ``doc`` (a SPEC §6 document, a batch's too); the form adds no key to it."""
        self._doc = copy.deepcopy(doc) if isinstance(doc, dict) else {}
        self._doc.update(self._project_values())  # the project's tau, theta, weighting, if it follows them
        self._stash, self._echo_stash, self._batch_stash = {}, None, None
        self._show(self._doc)
        self._show_json()
        if not validate:  # the last document's check must not pass for this one's
            self._timer.stop()
            if self._reader is not None:
                self._reader.cancel()
            self.pending, self.check = False, None
            from workbench.ui import theme

            self.status.setText("" if self._doc else f"<span style='color:{theme.css('muted')}'>{EMPTY_TEXT}</span>")
            self.changed.emit()
        if validate:  # at once, not after the typing pause: a read is then always under way
            self.pending = True
            self.changed.emit()
            self._timer.stop()
            self._validate()

    def _show(self, doc: dict) -> None:
        from workbench.core.protocols.arm.config import DEFAULTS as ARM
        from workbench.core.protocols.cons import config as cons
        from workbench.core.protocols.findings.config import DEFAULT_THRESHOLD
        from workbench.core.protocols.rcp.config import DEFAULT_TAU, DEFAULT_THETA

        self._loading = True
        try:
            self.name_edit.setText(str(doc.get("label", "")))
            protocol = doc.get("protocol", "rcp")
            self.protocol_combo.setCurrentIndex(max(self.protocol_combo.findData(protocol), 0))
            self.options_stack.setCurrentWidget(self._pages.get(protocol, self._pages["rcp"]))
            self.query_edit.setPlainText(str(doc.get("query", "")))
            self.seed_edit.setText(str(doc.get("seed", 0)))
            self.dispatch_combo.setCurrentIndex(max(self.dispatch_combo.findData(doc.get("dispatch", "concurrent")), 0))
            self._show_providers(doc.get("providers") or {})
            echo = doc.get("echo")
            self.echo_check.setChecked(isinstance(echo, dict))
            self.echo_interval.setValue(int((echo or {}).get("interval", 10)) if isinstance(echo, dict) else 10)
            self.echo_interval.setEnabled(isinstance(echo, dict))
            self.reference_combo.clear()
            self.reference_combo.addItem("(the first cluster)", None)
            for c in doc.get("clusters") or []:
                if isinstance(c, dict):
                    self.reference_combo.addItem(str(c.get("name", "")), c.get("name"))
            arm = doc.get("arm") or {}
            batch = doc.get("batch") if isinstance(doc.get("batch"), dict) else None
            values = {("theta",): doc.get("theta", DEFAULT_THETA), ("tau",): doc.get("tau", DEFAULT_TAU),
                      ("weighted",): doc.get("weighted", False), ("reference",): doc.get("reference"),
                      ("ballot_mode",): doc.get("ballot_mode", False),
                      ("refinement_rounds",): doc.get("refinement_rounds", 0),
                      ("threshold",): doc.get("threshold", DEFAULT_THRESHOLD),
                      ("findings",): findings_text(doc.get("findings") or []),
                      ("question_id",): doc.get("question_id", cons.DEFAULT_QUESTION_ID),
                      ("options",): "\n".join(str(o) for o in doc.get("options") or []),
                      ("consensus_threshold",): doc.get("consensus_threshold", cons.DEFAULT_CONSENSUS_THRESHOLD),
                      ("count_threshold",): doc.get("count_threshold", cons.DEFAULT_COUNT_THRESHOLD),
                      ("min_voters",): doc.get("min_voters", cons.DEFAULT_MIN_VOTERS),
                      ("max_challenge_rounds",): doc.get("max_challenge_rounds", cons.DEFAULT_MAX_CHALLENGE_ROUNDS),
                      ("batch", "name"): (batch or {}).get("name", ""),
                      ("batch", "questions"): "\n".join(str(q) for q in (batch or {}).get("questions") or []),
                      ("batch", "provider_mixes"): mixes_text((batch or {}).get("provider_mixes") or []),
                      ("batch", "replicates"): (batch or {}).get("replicates", 1)}
            for key in ("silent_draw", "gamma_context", "role_injection", "fap_threshold", "fap_max_attempts",
                        "fap_requeue", "dispatch", "schema_version"):
                values[("arm", key)] = arm.get(key, ARM[key]) if isinstance(arm, dict) else ARM[key]
            for path, value in values.items():
                self._put(self.fields[path], value)
            self.batch_check.setChecked(batch is not None)
            for path, w in self.fields.items():
                if path[0] == "batch":
                    w.setEnabled(batch is not None)
            self._show_settings_note()
        finally:
            self._loading = False

    # ----- tau, theta and weighting: the project's ---------------------------------------------
    def set_origin(self, follows_project: bool) -> None:
        """Whether the document is the project's (a saved configuration, the project's clusters):
        then the project's tau, theta and weighting apply, and their fields are read-only here."""
        self.follows_project = follows_project
        self.set_project_settings(self.project_settings)

    def set_project_settings(self, settings: dict | None) -> None:
        """The project's tau, theta and weighting (read with the panel): a document that follows
        the project takes them at once (and is checked again)."""
        self.project_settings = dict(settings) if settings else None
        wanted = self._project_values()
        if wanted and any(self._doc.get(k) != v for k, v in wanted.items()):
            self._doc.update(wanted)
            self._show(self._doc)
            self._show_json()
            self._changed()
        else:
            self._show_settings_note()

    def _project_values(self) -> dict:
        """The keys the project sets in this document (none unless it follows the project and is RCP)."""
        if not (self.follows_project and self.project_settings and self._doc.get("protocol", "rcp") == "rcp"
                and self._doc):
            return {}
        return {k: self.project_settings[k] for k in PROJECT_KEYS if k in self.project_settings}

    def _show_settings_note(self) -> None:
        follows = self.follows_project and self.project_settings is not None
        for key in PROJECT_KEYS:
            self.fields[(key,)].setEnabled(not follows)
        settings = self.project_settings or {}
        if follows:
            self.settings_note.setText(f"τ {settings.get('tau', '?'):g}, θ {settings.get('theta', '?'):g}, "
                                       f"{'weighted' if settings.get('weighted') else 'unweighted'}: the project's, "
                                       "set in Clusters & Agents (one place for every run made in the project).")
        else:
            own = [f"{'τ' if k == 'tau' else 'θ' if k == 'theta' else k} {self._doc[k]}" for k in PROJECT_KEYS
                   if k in self._doc and k in settings and self._doc[k] != settings[k]]
            self.settings_note.setText(
                f"This configuration sets its own {', '.join(own)}: its values win for its runs (the project's "
                f"are τ {settings.get('tau'):g}, θ {settings.get('theta'):g}). Saved in the project, it takes "
                "the project's." if own else "")
        self.settings_note.setVisible(bool(self.settings_note.text()))

    def _show_providers(self, providers: dict) -> None:
        while self._concurrency.count():
            item = self._concurrency.takeAt(0)
            if item.widget() is not None:
                item.widget().hide()  # at once: deleteLater waits for the event loop
                item.widget().deleteLater()
        self._concurrency_spins = {}
        for name, spec in providers.items():
            if not isinstance(spec, dict):
                continue
            spin = _int(1, 256)
            spin.setPrefix(f"{name}: ")
            spin.setValue(int(spec.get("max_concurrency", 4)) if isinstance(spec.get("max_concurrency", 4), int) else 4)
            spin.setToolTip(f"Calls to provider {name!r} ({spec.get('model', '?')}) in flight at once")
            spin.valueChanged.connect(lambda v, n=name: self._set(("providers", n, "max_concurrency"), v))
            self._concurrency.addWidget(spin)
            self._concurrency_spins[name] = spin
        if not self._concurrency_spins:
            self._concurrency.addWidget(QLabel("(no providers)"))
        self._concurrency.addStretch(1)

    @staticmethod
    def _put(widget: QWidget, value) -> None:
        if isinstance(widget, QDoubleSpinBox):
            widget.setValue(float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0)
        elif isinstance(widget, QSpinBox):
            widget.setValue(int(value) if isinstance(value, int) and not isinstance(value, bool) else 0)
        elif isinstance(widget, QCheckBox):
            widget.setChecked(bool(value))
        elif isinstance(widget, QComboBox):
            widget.setCurrentIndex(max(widget.findData(value), 0))
        elif isinstance(widget, QLineEdit):
            widget.setText("" if value is None else str(value))
        elif isinstance(widget, QPlainTextEdit):
            widget.setPlainText(str(value))

    @staticmethod
    def _value(widget: QWidget):
        if isinstance(widget, QDoubleSpinBox):
            return round(widget.value(), widget.decimals())
        if isinstance(widget, QSpinBox):
            return widget.value()
        if isinstance(widget, QCheckBox):
            return widget.isChecked()
        if isinstance(widget, QComboBox):
            return widget.currentData()
        if isinstance(widget, QLineEdit):
            return widget.text().strip()
        return widget.toPlainText()

    # ----- editing ---------------------------------------------------------------------------
    def _on_field(self, path: tuple) -> None:
        if self._loading:
            return
        value = self._value(self.fields[path])
        if path == ("findings",):
            value = parse_findings(value, self._doc.get("findings") or [])
        elif path in (("options",), ("batch", "questions")):
            value = _lines(value)
        elif path == ("batch", "provider_mixes"):
            value = parse_mixes(value)
        if path[0] == "batch" and "batch" not in self._doc:
            return
        if value is None and path in (("reference",), ("arm", "dispatch")):
            self._set(path, None, remove=True)
        else:
            self._set(path, value)

    def _set(self, path: tuple, value, *, remove: bool = False) -> None:
        if self._loading:
            return
        node = self._doc
        for key in path[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        if remove:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = value
        self._show_json()
        self._changed()

    def _on_seed_edited(self, text: str) -> None:
        if text.strip():
            self._set(("seed",), int(text))
        else:
            self._set(("seed",), None, remove=True)

    def new_seed(self) -> int:
        seed = secrets.randbelow(2 ** SEED_BITS)
        self.seed_edit.setText(str(seed))
        self._set(("seed",), seed)
        return seed

    def _on_protocol_changed(self, _index: int) -> None:
        if self._loading:
            return
        new = self.protocol_combo.currentData()
        old = self.protocol
        if new == old:
            return
        mine = {k: self._doc.pop(k) for k in PROTOCOL_KEYS.get(old, ()) if k in self._doc}
        self._stash[old] = mine
        self._doc.update(self._stash.pop(new, {}))
        self._doc["protocol"] = new
        self.options_stack.setCurrentWidget(self._pages[new])
        self._show(self._doc)
        self._show_json()
        self._changed()

    def _on_echo_toggled(self, on: bool) -> None:
        self.echo_interval.setEnabled(on)
        if self._loading:
            return
        if on:
            self._doc["echo"] = self._echo_stash or {"interval": self.echo_interval.value()}
        else:
            self._echo_stash = self._doc.pop("echo", None)
        self._show_json()
        self._changed()

    def _on_batch_toggled(self, on: bool) -> None:
        for path, w in self.fields.items():
            if path[0] == "batch":
                w.setEnabled(on)
        if self._loading:
            return
        if on:
            query = self._doc.get("query")
            self._doc["batch"] = self._batch_stash or {"questions": [query] if query else [], "replicates": 1}
            self._show(self._doc)
        else:
            self._batch_stash = self._doc.pop("batch", None)
        self._show_json()
        self._changed()

    # ----- JSON --------------------------------------------------------------------------------
    def _on_json_toggled(self, on: bool) -> None:
        self.json_box.setVisible(on)
        self.json_button.setText("Hide JSON" if on else "Show JSON")
        self._show_json()

    def _show_json(self) -> None:
        if not self.json_box.isVisible() or self.json_box.hasFocus():
            return
        self._loading = True
        try:
            self.json_box.setPlainText(json.dumps(self._doc, indent=2, ensure_ascii=False))
        finally:
            self._loading = False

    def json_text(self) -> str:
        """The document as the JSON file ``rwb run`` reads."""
        return json.dumps(self._doc, indent=2, ensure_ascii=False) + "\n"

    def _on_json_edited(self) -> None:
        try:
            data = json.loads(self.json_box.toPlainText())
        except json.JSONDecodeError as exc:
            self._show_check(Check(False, f"JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"))
            return
        if not isinstance(data, dict):
            self._show_check(Check(False, "JSON: a run configuration is a JSON object"))
            return
        self._doc = data
        self._show(self._doc)
        self._changed()

    # ----- validation --------------------------------------------------------------------------
    def _changed(self) -> None:
        self.pending = True
        self.changed.emit()
        self._timer.start()

    def _validate(self) -> None:
        doc = self.document()
        if self._reader is None:
            self._on_checked(check_document(doc))
            return
        self._reader.load(lambda _cancel: check_document(doc), self._on_checked,
                          on_failed=lambda e: self._on_checked(Check(False, f"could not be checked: {e.message}")))

    def _on_checked(self, check: Check) -> None:
        self.pending = self._timer.isActive()
        self._show_check(check)
        if not self.pending:
            self.validated.emit(check)

    def _show_check(self, check: Check) -> None:
        self.check = check
        flagged, self._flagged = getattr(self, "_flagged", None), None
        if flagged is not None:
            flagged.setStyleSheet("")
            flagged.setToolTip("")
        if check.ok:
            warn = "".join(f"<br><span style='color:{WARN_COLOUR}'>⚠ {escape_html(w)}</span>" for w in check.warnings)
            self.status.setText(f"<span style='color:{OK_COLOUR}'>✔</span> {escape_html(check.message)}{warn}")
            return
        self.status.setText(f"<span style='color:{BAD_COLOUR}'>✖ {escape_html(check.message)}</span>")
        target = self._widget_for(check.field)
        if target is not None:
            target.setStyleSheet(INVALID_STYLE)
            target.setToolTip(check.message)
            self._flagged = target

    def _widget_for(self, path: str) -> QWidget | None:
        head = path.split(".")[0].split("[")[0]
        second = path.split(".")[1].split("[")[0] if "." in path else ""
        if (head, second) in self.fields:
            return self.fields[(head, second)]
        if (head,) in self.fields:
            return self.fields[(head,)]
        return {"query": self.query_edit, "seed": self.seed_edit, "dispatch": self.dispatch_combo,
                "protocol": self.protocol_combo, "providers": self.concurrency_box, "label": self.name_edit,
                "echo": self.echo_interval}.get(head)

