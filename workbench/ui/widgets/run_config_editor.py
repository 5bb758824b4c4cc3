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
from dataclasses import dataclass
from dataclasses import field as dc_field

from PySide6.QtCore import QRegularExpression, Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QRegularExpressionValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

# PROJECT_KEYS: the keys the project's settings set (Clusters & Agents) in a document whose
# protocol takes them (panel_edits.project_keys).
from workbench.core.project.panel_edits import PROJECT_KEYS, project_keys
from workbench.ui.widgets.manual_prompt import escape_html
from workbench.ui.widgets.option_fields import form_layout as _form
from workbench.ui.widgets.option_fields import int_box as _int
from workbench.ui.widgets.option_fields import text_box as _text_box

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


def check_document(doc: object, prompt_sets: list | None = None) -> Check:
    """Validate ``doc`` as ``rwb run`` would (pure; runs on a worker thread). ``prompt_sets``: the
    project's (``prompt_sets.all_sets``), to check the set a document names as a run would; None:
    not known (not checked)."""
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
        if cfg.prompt_set and prompt_sets is not None:
            from workbench.core.project.prompt_sets import pick

            pick(prompt_sets, cfg.prompt_set, cfg.protocol)
    except InputError as exc:
        return Check(False, str(exc), exc.field)
    from workbench.ui.widgets.protocol_pages import page_warnings

    warnings = page_warnings(cfg)
    if cfg.simulated and (cfg.prompt_set or _edits_prompts(cfg)):
        from workbench.core.runs.provenance import SIM_PROMPTS_WARNING

        warnings.append(SIM_PROMPTS_WARNING)  # SPEC §7: the GUI says it too
    sim = " on the simulated panel (SIM)" if cfg.simulated else ""
    return Check(True, f"Valid: {cfg.protocol.upper()}, {len(cfg.agents)} agent(s), seed {cfg.seed}, "
                       f"{text}{sim}", runs=runs, warnings=warnings, simulated=cfg.simulated)


def _edits_prompts(cfg) -> bool:
    """The config's own ``prompts`` change a template (the same text as the default changes nothing)."""
    if not cfg.prompts:
        return False
    from workbench.core.runs.provenance import prompts_for

    return prompts_for(cfg).edited


def protocol_label(protocol) -> str:
    """A protocol as the lists name it: its title, and its name unless the title says it."""
    return protocol.title if protocol.name.lower() in protocol.title.lower() else f"{protocol.title} ({protocol.name})"


def protocol_choices() -> list[tuple[str, str]]:
    """Every protocol a run config may name (the registry's: plugins too), as (name, label)."""
    from workbench.core import registry

    return [(name, protocol_label(p)) for name, p in registry.runnable().items()]


def default_protocol() -> str:
    """The protocol of a document that names none: the first registered (built-in first)."""
    from workbench.core import registry

    return next(iter(registry.runnable()))


def own_keys(protocol: str) -> tuple[str, ...]:
    """The keys a protocol's declared config adds to a document's shared ones (dropped, and kept
    aside, when the document switches to another protocol)."""
    from workbench.core.runs.config import RunConfigBase, model_for

    try:
        fields = model_for(protocol).model_fields
    except KeyError:
        return ()
    return tuple(k for k in fields if k not in RunConfigBase.model_fields)


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


def _at(doc: dict, path: tuple, default=None):
    """The document's value at ``path`` ("arm", "fap_threshold"), or ``default``."""
    node = doc
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node


def _lines(text: str) -> list[str]:
    return [x.strip() for x in text.splitlines() if x.strip()]


def _combo(items) -> QComboBox:
    box = QComboBox()
    for value, text in items:
        box.addItem(text, value)
    return box


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
        self._prompt_sets: list | None = None  # the project's (None: not read yet)
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
        self.protocol_combo = QComboBox(box)  # filled from the registry (_fill_protocols)
        self.protocol_combo.setObjectName("configProtocol")
        self.protocol_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.protocol_combo.setMinimumContentsLength(12)
        # The prompt set the run uses (SPEC §7): the project's sets of the document's protocol.
        self.prompt_set_combo = QComboBox(box)
        self.prompt_set_combo.setObjectName("configPromptSet")
        self.prompt_set_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.prompt_set_combo.setMinimumContentsLength(12)
        self.prompt_set_combo.setToolTip("The templates the run's calls are made with: the protocol's defaults, or a "
                                         "prompt set saved in the project (Design ▸ Protocol Editor)")
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
        form.addRow("Prompts", self.prompt_set_combo)
        form.addRow("Query", self.query_edit)
        form.addRow("Seed", seed_row)
        form.addRow("Dispatch", self.dispatch_combo)
        form.addRow("Concurrency", self.concurrency_box)
        form.addRow("Echo", echo_row)
        self.name_edit.textEdited.connect(lambda t: self._set(("label",), t.strip()))
        self.protocol_combo.currentIndexChanged.connect(self._on_protocol_changed)
        self.prompt_set_combo.currentIndexChanged.connect(self._on_prompt_set_chosen)
        self.query_edit.textChanged.connect(lambda: self._set(("query",), self.query_edit.toPlainText().strip()))
        self.seed_edit.textEdited.connect(self._on_seed_edited)
        self.dispatch_combo.currentIndexChanged.connect(lambda _i: self._set(("dispatch",), self.dispatch_combo.currentData()))
        self.echo_check.toggled.connect(self._on_echo_toggled)
        self.echo_interval.valueChanged.connect(lambda v: self._set(("echo", "interval"), v) if "echo" in self._doc else None)
        return box

    def _build_options(self) -> QGroupBox:
        """One page per protocol, made the first time a document of that protocol is shown (the
        registry is read then, not when the window starts): a protocol's own page if it has one
        (``protocol_pages``), else one built from its declared config model (``option_fields``)."""
        box = QGroupBox("Protocol options", self)
        layout = QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        self.options_stack = QStackedWidget(box)
        layout.addWidget(self.options_stack)
        self._pages: dict[str, QWidget] = {}
        self._page_fields: dict[str, dict[tuple, QWidget]] = {}  # protocol -> its fields by path
        self._batch_fields: dict[tuple, QWidget] = {}
        self._building: dict[tuple, QWidget] = self._batch_fields  # where _field puts a new field
        self._defaults: dict[tuple, object] = {}  # (protocol, path) -> the model's default
        self._shown_as: dict[tuple, object] = {}  # (protocol, path) -> document value to widget value
        self._parsed_as: dict[tuple, object] = {}  # (protocol, path) -> widget value to (value, remove)
        self.settings_note: QLabel | None = None  # RCP's page: the project's tau, theta and weighting
        self.reference_combo: QComboBox | None = None
        return box

    @property
    def fields(self) -> dict[tuple, QWidget]:
        """The fields of the protocol shown, and the batch's, by their path in the document."""
        return {**self._page_fields.get(self.protocol, {}), **self._batch_fields}

    def _page(self, protocol: str) -> QWidget:
        if protocol in self._pages:
            return self._pages[protocol]
        from workbench.ui.widgets.protocol_pages import OWN_FIELDS, OWN_PAGES

        self._building = self._page_fields.setdefault(protocol, {})
        try:
            builder = OWN_PAGES.get(protocol)
            own = OWN_FIELDS.get(protocol, ((), None))
            page = builder(self) if builder is not None else self._model_page(protocol, *own)
        finally:
            self._building = self._batch_fields
        try:
            from workbench.core.runs.config import model_for

            model = model_for(protocol)
            for path in self._page_fields[protocol]:
                field = model.model_fields.get(path[0])
                if len(path) == 1 and field is not None and not field.is_required():
                    self._defaults.setdefault((protocol, path), field.get_default(call_default_factory=True))
        except KeyError:
            pass
        self._pages[protocol] = page
        self.options_stack.addWidget(page)
        return page

    def _model_page(self, protocol: str, own: tuple = (), add_own=None) -> QWidget:
        """The page of the fields ``protocol``'s declared config adds to the shared ones."""
        from workbench.core.runs.config import RunConfigBase, model_for
        from workbench.ui.widgets.option_fields import option_fields, shown_value, value_of

        page = QWidget()
        form = _form(page)
        try:
            model = model_for(protocol)
        except KeyError:
            note = QLabel(f"No protocol named {protocol!r} is registered: the options are the JSON's.", page)
            note.setWordWrap(True)
            form.addRow(note)
            return page
        made = option_fields(model, skip=(*RunConfigBase.model_fields, *own))
        for f in made:
            self._defaults[(protocol, f.path)] = f.default
            self._field(form, f.label, f.path, f.widget, shown=lambda v, f=f: shown_value(f, v),
                        parsed=lambda raw, _doc, f=f: value_of(f, raw))
            f.widget.setToolTip(f.tip)
        if add_own is not None:
            add_own(self, form)
        if not made and add_own is None:
            note = QLabel("This protocol has no options of its own.", page)
            note.setStyleSheet("color: palette(placeholder-text);")
            form.addRow(note)
        return page

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

    def _field(self, form: QFormLayout, label: str, path: tuple, widget: QWidget, *, shown=None, parsed=None) -> None:
        """A field of the page being built: ``shown(value)`` is what the widget shows for the
        document's value, ``parsed(raw, doc)`` the document's value for the widget's (a pair
        ``(value, remove)`` from an option field's, a plain value from a page's own)."""
        self._building[path] = widget
        protocol = next((p for p, fields in self._page_fields.items() if fields is self._building), None)
        if shown is not None:
            self._shown_as[(protocol, path)] = shown
        if parsed is not None:
            self._parsed_as[(protocol, path)] = parsed
        form.addRow(label, widget)

        def handler(*_a, p=path) -> None:  # (any signal's arguments: the field's path says which)
            self._on_field(p)

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
        return self._doc.get("protocol") or (default_protocol() if self._doc else "")

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
        self._loading = True
        try:
            self.name_edit.setText(str(doc.get("label", "")))
            protocol = (doc.get("protocol") or default_protocol()) if doc else ""
            if doc:
                self._fill_protocols(protocol)
                self.options_stack.setCurrentWidget(self._page(protocol))
            self.protocol_combo.setCurrentIndex(max(self.protocol_combo.findData(protocol), 0))
            self._show_prompt_sets(doc)
            self.query_edit.setPlainText(str(doc.get("query", "")))
            self.seed_edit.setText(str(doc.get("seed", 0)))
            self.dispatch_combo.setCurrentIndex(max(self.dispatch_combo.findData(doc.get("dispatch", "concurrent")), 0))
            self._show_providers(doc.get("providers") or {})
            echo = doc.get("echo")
            self.echo_check.setChecked(isinstance(echo, dict))
            self.echo_interval.setValue(int((echo or {}).get("interval", 10)) if isinstance(echo, dict) else 10)
            self.echo_interval.setEnabled(isinstance(echo, dict))
            fields = self._page_fields.get(protocol, {}) if doc else {}
            reference = fields.get(("reference",))
            if isinstance(reference, QComboBox):  # the reference cluster: one of the document's clusters
                reference.clear()
                reference.addItem("(the first cluster)", None)
                for c in doc.get("clusters") or []:
                    if isinstance(c, dict):
                        reference.addItem(str(c.get("name", "")), c.get("name"))
            for path, widget in fields.items():
                value = _at(doc, path, self._defaults.get((protocol, path)))
                shown = self._shown_as.get((protocol, path))
                self._put(widget, shown(value) if shown is not None else value)
            batch = doc.get("batch") if isinstance(doc.get("batch"), dict) else None
            values = {("batch", "name"): (batch or {}).get("name", ""),
                      ("batch", "questions"): "\n".join(str(q) for q in (batch or {}).get("questions") or []),
                      ("batch", "provider_mixes"): mixes_text((batch or {}).get("provider_mixes") or []),
                      ("batch", "replicates"): (batch or {}).get("replicates", 1)}
            for path, value in values.items():
                self._put(self._batch_fields[path], value)
            self.batch_check.setChecked(batch is not None)
            for w in self._batch_fields.values():
                w.setEnabled(batch is not None)
            self._show_settings_note()
        finally:
            self._loading = False

    def set_protocols(self, choices: list[tuple[str, str]]) -> None:
        """The protocol list, as the panel read it from the registry (off the GUI thread)."""
        if self.protocol_combo.count() == 0 and choices:
            self._loading = True
            try:
                for name, text in choices:
                    self.protocol_combo.addItem(text, name)
                self.protocol_combo.setCurrentIndex(max(self.protocol_combo.findData(self.protocol), 0))
            finally:
                self._loading = False

    def _fill_protocols(self, current: str) -> None:
        """The protocol list: every registered protocol a run may name (plugins too), from the
        registry (read the first time a document is shown, unless the panel gave it already); a
        document naming a protocol not registered keeps it, marked."""
        combo = self.protocol_combo
        if combo.count() == 0:
            for name, text in protocol_choices():
                combo.addItem(text, name)
        if current and combo.findData(current) < 0:
            combo.addItem(f"{current} (not registered)", current)

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
        """The keys the project sets in this document: none unless it follows the project and its
        protocol's config takes them (``panel_edits.project_keys``: RCP's tau, theta, weighting)."""
        if not (self.follows_project and self.project_settings and self._doc):
            return {}
        return {k: self.project_settings[k] for k in project_keys(self.protocol) if k in self.project_settings}

    def _show_settings_note(self) -> None:
        if self.settings_note is None:  # no page showing the project's settings yet
            return
        follows = self.follows_project and self.project_settings is not None
        fields = self._page_fields.get(self.protocol, {})
        for key in PROJECT_KEYS:
            if (key,) in fields:
                fields[(key,)].setEnabled(not follows)
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
        parsed = self._parsed_as.get((self.protocol, path)) if path[0] != "batch" else None
        remove = False
        if parsed is not None:
            value = parsed(value, self._doc)
            if isinstance(value, tuple):  # an option field's (value, remove)
                value, remove = value
        elif path == ("batch", "questions"):
            value = _lines(value)
        elif path == ("batch", "provider_mixes"):
            value = parse_mixes(value)
        if path[0] == "batch" and "batch" not in self._doc:
            return
        if remove or value is None:  # a choice left at "(default)", an optional text emptied
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
        # Its own options go aside, and so do its templates (a prompt set, a step's override: the
        # steps are the protocol's), until it is chosen again.
        mine = {k: self._doc.pop(k) for k in (*own_keys(old), "prompt_set", "prompts") if k in self._doc}
        self._stash[old] = mine
        self._doc.update(self._stash.pop(new, {}))
        self._doc["protocol"] = new
        self.options_stack.setCurrentWidget(self._page(new))
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
            self._on_checked(check_document(doc, self._prompt_sets))
            return
        sets = self._prompt_sets
        self._reader.load(lambda _cancel: check_document(doc, sets), self._on_checked,
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
        parts = tuple(p.split("[")[0] for p in path.split("."))
        fields = self.fields
        for n in range(len(parts), 0, -1):  # the deepest field holding the path ("arm.budgets.r1")
            if parts[:n] in fields:
                return fields[parts[:n]]
        return {"query": self.query_edit, "seed": self.seed_edit, "dispatch": self.dispatch_combo,
                "protocol": self.protocol_combo, "providers": self.concurrency_box, "label": self.name_edit,
                "echo": self.echo_interval, "prompt_set": self.prompt_set_combo}.get(parts[0])

    # ----- prompt sets -----------------------------------------------------------------------
    def set_prompt_sets(self, sets: list) -> None:
        """The project's prompt sets (``prompt_sets.all_sets``, read with the panel): the picker
        offers those of the document's protocol, and a document naming another is refused as a
        run would refuse it."""
        sets = list(sets)
        if sets == self._prompt_sets:
            return
        self._prompt_sets = sets
        self._loading = True
        try:
            self._show_prompt_sets(self._doc)
        finally:
            self._loading = False
        if self._doc.get("prompt_set"):
            self._changed()  # checked again against the sets the project has now

    def _show_prompt_sets(self, doc: dict) -> None:
        combo, protocol = self.prompt_set_combo, self.protocol if doc else ""
        wanted: list[tuple[str, object]] = [("the protocol's default templates", None)]
        newest: dict[str, object] = {}
        for s in self._prompt_sets or []:  # newest first: the first of each name is what a run uses
            if s.protocol == protocol and s.name not in newest:
                newest[s.name] = s
                steps = ", ".join(sorted(s.templates))
                wanted.append((f"{s.name} @{s.sha256[:8]} ({steps})", s.name))
        named = doc.get("prompt_set") if isinstance(doc.get("prompt_set"), str) else None
        if named and named not in newest:
            wanted.append((f"{named} (not in this project)", named))
        if [(combo.itemText(i), combo.itemData(i)) for i in range(combo.count())] != wanted:
            combo.blockSignals(True)
            combo.clear()
            for text, data in wanted:
                combo.addItem(text, data)
            combo.blockSignals(False)
        combo.blockSignals(True)
        combo.setCurrentIndex(max(combo.findData(named), 0) if named else 0)
        combo.blockSignals(False)
        combo.setEnabled(bool(doc))

    def _on_prompt_set_chosen(self, _index: int) -> None:
        if self._loading or not self._doc:
            return
        name = self.prompt_set_combo.currentData()
        self._set(("prompt_set",), name, remove=name is None)

