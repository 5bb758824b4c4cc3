"""Add or edit a provider: a cloud model by its litellm name, or a local server from a preset.

The dialog checks the provider as it is typed with the run configuration's own model
(:func:`~workbench.core.project.panel_edits.check_provider_record`), names the field at fault
inline, and can test the connection: one short call through the gateway
(:func:`~workbench.services.llm.probe.probe_provider`) on a worker, showing "OK: replied in N ms"
or the provider's own error text.

Keys. A key typed here goes to the OS keyring (service ``resonance-workbench``, user: the
provider's name) when the dialog is accepted; the project records only the entry's name
(``key_keyring``). A stored key is never shown again. Where no keyring exists (keyring's fail
backend, as on a headless machine), the dialog says so and offers an environment variable
(``key_env``) instead. A key never reaches the project file: the providers table has no column
for it, and a key-looking value is refused as a variable's name.

Opened through :func:`workbench.ui.prompts.edit_provider`, which tests patch.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.core.errors import InputError
from workbench.core.limits import MAX_CONCURRENCY, MAX_RETRIES, MAX_RPM, MAX_TIMEOUT_S
from workbench.core.runs.providers import DEFAULT_REASK, MAX_REASK, PROVIDER_OPTIONS, STRUCTURED_OUTPUT
from workbench.services.workers import WorkerPool
from workbench.ui.widgets.field_check import FieldMessage, css, mark
from workbench.ui.widgets.sampling_fields import SamplingFields


@dataclass(frozen=True)
class Kind:
    label: str
    api_base: str | None  # the preset address
    prefix: str  # the litellm prefix of its models
    example: str


KINDS: dict[str, Kind] = {
    "cloud": Kind("Cloud model (litellm name)", None, "", "openai/gpt-4o-mini"),
    "ollama": Kind("Ollama (local)", "http://127.0.0.1:11434", "ollama/", "ollama/llama3.1"),
    "vllm": Kind("vLLM (local)", "http://127.0.0.1:8000/v1", "openai/", "openai/Qwen2.5-7B-Instruct"),
    "llamacpp": Kind("llama.cpp server (local)", "http://127.0.0.1:8080/v1", "openai/", "openai/gemma3-270m"),
    "lmstudio": Kind("LM Studio (local)", "http://127.0.0.1:1234/v1", "openai/", "openai/qwen2.5-7b-instruct"),
    "custom": Kind("Other OpenAI-compatible server", "http://127.0.0.1:8000/v1", "openai/", "openai/my-model"),
    "sim": Kind("Simulated panel (offline)", None, "sim", "sim"),
}
KEY_MODES = ("none", "keyring", "env")
PREFERRED_WIDTH = 540  # px: the key notes wrap to three lines, not five (the dialog fits a 720 px screen)


@dataclass(frozen=True)
class ProviderEdit:
    """What the dialog gives back: the provider row, and a key to store in the keyring first
    (under ``record["key_keyring"]``), if one was typed."""

    record: dict
    key: str | None = None


def kind_of(provider: dict | None) -> str:
    if not provider:
        return "cloud"
    if provider.get("model") == "sim":
        return "sim"
    base = (provider.get("api_base") or "").rstrip("/")
    for key, kind in KINDS.items():
        if kind.api_base and base == kind.api_base.rstrip("/") and (provider.get("model") or "").startswith(kind.prefix):
            return key
    return "custom" if base else "cloud"


class ProviderDialog(QDialog):
    tested = Signal(bool, str)  # ok, the message shown
    keyring_known = Signal(bool)  # whether a keyring is usable, once checked

    def __init__(self, workers: WorkerPool | None, provider: dict | None = None, taken: set[str] | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("providerDialog")
        self.setWindowTitle("Edit provider" if provider else "Add provider")
        self.workers = workers
        self.original = dict(provider) if provider else None
        self.taken = set(taken or ()) - ({provider["name"]} if provider else set())
        self.keyring_available: bool | None = None
        self.keyring_reason = ""
        self._probe_cancel: threading.Event | None = None
        self.testing = False

        self.kind = QComboBox(self)
        self.kind.setObjectName("providerKind")
        for key, kind in KINDS.items():
            self.kind.addItem(kind.label, key)
        self.name = QLineEdit(self)
        self.name.setObjectName("providerName")
        self.model = QLineEdit(self)
        self.model.setObjectName("providerModel")
        self.api_base = QLineEdit(self)
        self.api_base.setObjectName("providerApiBase")
        self.api_base.setPlaceholderText("none: the provider's own service")
        self.max_concurrency = QSpinBox(self)
        self.max_concurrency.setRange(1, MAX_CONCURRENCY)
        self.max_concurrency.setToolTip("Requests in flight at once to this provider")
        self.rpm = QSpinBox(self)
        self.rpm.setRange(0, MAX_RPM)
        self.rpm.setSpecialValueText("no limit")
        self.rpm.setToolTip("Requests per 60 s window, retries included")
        self.timeout = QDoubleSpinBox(self)
        self.timeout.setRange(0.5, MAX_TIMEOUT_S)
        self.timeout.setDecimals(1)
        self.timeout.setSuffix(" s")
        self.retries = QSpinBox(self)
        self.retries.setRange(0, MAX_RETRIES)
        self.messages = {f: FieldMessage(self) for f in ("name", "model", "api_base", "key", "limits", "sampling")}
        self.sampling = SamplingFields(self)
        self.structured_output = QComboBox(self)
        self.structured_output.setObjectName("providerStructuredOutput")
        for mode in STRUCTURED_OUTPUT:
            self.structured_output.addItem(mode, mode)
        self.structured_output.setToolTip("How a JSON reply's schema is sent: auto (json_schema where litellm "
                                          "knows the model takes one), json_schema, json_object (llama-cpp-python), off")
        self.reask = QSpinBox(self)
        self.reask.setObjectName("providerReask")
        self.reask.setRange(0, MAX_REASK)
        self.reask.setToolTip("Times an unreadable JSON reply is asked again, with the parse error")
        self.use_form = QPushButton(self)
        self.use_form.setObjectName("providerUseForm")
        self.use_form.hide()
        self.use_form.clicked.connect(self._on_use_form)

        # The key: none, the OS keyring, or an environment variable.
        self.key_box = QGroupBox("API key", self)
        self.key_none = QRadioButton("No key (a local server, or litellm finds it)", self.key_box)
        self.key_keyring = QRadioButton("Store a key in the OS keyring", self.key_box)
        self.key_env_choice = QRadioButton("Read it from an environment variable", self.key_box)
        self.key_mode = QButtonGroup(self)
        for i, button in enumerate((self.key_none, self.key_keyring, self.key_env_choice)):
            self.key_mode.addButton(button, i)
        self.key = QLineEdit(self.key_box)
        self.key.setObjectName("providerKey")
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("paste the key (it is stored in the keyring, never in the project)")
        self.key_env = QLineEdit(self.key_box)
        self.key_env.setObjectName("providerKeyEnv")
        self.key_env.setPlaceholderText("the variable's NAME, e.g. OPENAI_API_KEY")
        self.keyring_note = QLabel("Checking for an OS keyring…", self.key_box)
        self.keyring_note.setObjectName("keyringNote")
        self.keyring_note.setWordWrap(True)
        self.stored_note = QLabel(self.key_box)
        self.stored_note.setWordWrap(True)
        self.stored_note.setStyleSheet("color: palette(placeholder-text);")
        self.stored_note.hide()
        key_layout = QVBoxLayout(self.key_box)
        key_layout.setSpacing(3)
        key_layout.addWidget(self.key_none)
        key_layout.addWidget(self.key_keyring)
        key_layout.addWidget(self.key)
        key_layout.addWidget(self.stored_note)
        key_layout.addWidget(self.keyring_note)
        key_layout.addWidget(self.key_env_choice)
        key_layout.addWidget(self.key_env)
        key_layout.addWidget(self.messages["key"])

        self.test_button = QPushButton("Test connection", self)
        self.test_button.setObjectName("providerTest")
        self.test_button.setToolTip("Send one short request (a few tokens) and show the answer or the error")
        self.test_result = QLabel(self)
        self.test_result.setObjectName("providerTestResult")
        self.test_result.setWordWrap(True)
        self.test_result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel,
                                        self)
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setVerticalSpacing(4)
        form.addRow("Kind", self.kind)
        form.addRow("Name", _cell(self, self.name, self.messages["name"]))
        form.addRow("Model", _cell(self, self.model, self.messages["model"]))
        form.addRow("API base", _cell(self, self.api_base, self.messages["api_base"]))
        # Two rows of label and box: in one row the four pairs were squeezed until a label touched
        # the box of the pair before it.
        limits = QGridLayout()
        limits.setContentsMargins(0, 0, 0, 0)
        limits.setHorizontalSpacing(6)
        limits.setVerticalSpacing(4)
        pairs = (("Concurrency", self.max_concurrency), ("RPM", self.rpm), ("Timeout", self.timeout),
                 ("Retries", self.retries))
        for n, (label, widget) in enumerate(pairs):
            row, column = divmod(n, 2)
            text = QLabel(label, self)
            text.setBuddy(widget)
            text.setToolTip(widget.toolTip())
            limits.addWidget(text, row, column * 3, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            limits.addWidget(widget, row, column * 3 + 1)
            widget.setMinimumWidth(widget.sizeHint().width())
        limits.setColumnMinimumWidth(2, 18)  # a clear gap between the two pairs of a row
        limits.setColumnStretch(5, 1)
        form.addRow("Limits", limits)
        form.addRow("", self.messages["limits"])
        form.addRow("Sampling", self.sampling)
        form.addRow("", self.messages["sampling"])
        output = QHBoxLayout()
        output.setContentsMargins(0, 0, 0, 0)
        output.addWidget(self.structured_output)
        reask_label = QLabel("Re-asks", self)
        reask_label.setBuddy(self.reask)
        output.addWidget(reask_label)
        output.addWidget(self.reask)
        output.addStretch(1)
        form.addRow("Structured output", output)
        test = QHBoxLayout()
        test.addWidget(self.test_button)
        test.addWidget(self.test_result, 1)
        test.addWidget(self.use_form)
        # The form scrolls when the screen is short (a 1280x720 laptop, a projector): squeezed into
        # a dialog capped at two thirds of the screen, its rows were drawn cut in half.
        self.body = QWidget(self)
        inner = QVBoxLayout(self.body)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addLayout(form)
        inner.addWidget(self.key_box)
        inner.addLayout(test)
        self.scroll = QScrollArea(self)
        self.scroll.setObjectName("providerScroll")
        self.scroll.setWidget(self.body)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        layout = QVBoxLayout(self)
        layout.addWidget(self.scroll, 1)
        layout.addWidget(self.buttons)
        self.body.installEventFilter(self)  # a note that wraps anew (the keyring's, a test's result)

        # Validated on edit, not on open: a field's error shows once that field is edited (or at
        # Save or Test connection); until then only Save says the form is not complete.
        self.edited_fields: set[str] = set()
        self._show_all = False
        self._fill(provider)
        self.kind.activated.connect(self._on_kind_chosen)
        for field, widget in (("name", self.name), ("model", self.model), ("api_base", self.api_base),
                              ("key", self.key_env), ("key", self.key)):
            widget.textEdited.connect(lambda *_a, f=field: self._on_edited(f))
        for spin in (self.max_concurrency, self.rpm, self.retries, self.timeout, self.reask):
            spin.valueChanged.connect(lambda *_a: self._on_edited("limits"))
        self.sampling.edited.connect(lambda: self._on_edited("sampling"))
        self.structured_output.activated.connect(lambda *_a: self._on_edited("sampling"))
        self.key_mode.idToggled.connect(lambda _i, on: on and self._on_edited("key"))
        self.test_button.clicked.connect(self._on_test_clicked)
        self._check_keyring()
        self._refresh()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt API)
        """As tall as the form needs (its wrapped notes at this width included), up to the screen."""
        super().showEvent(event)
        self._fit_to_screen()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if watched is self.body and event.type() == QEvent.Type.LayoutRequest:
            self._hold_body_height()
        return super().eventFilter(watched, event)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._hold_body_height()

    def _hold_body_height(self) -> None:
        """The form never shorter than its wrapped notes need at its width: it scrolls instead (a
        scroll area sizes its widget by its minimum size, which leaves the wrapping out)."""
        if self.body.hasHeightForWidth():
            # Never below the layout's own minimum either: the wrapped height at a width the
            # scroll bar has just narrowed can come out a few pixels short, and the key's fields
            # were then drawn squashed.
            self.body.setMinimumHeight(max(self.body.heightForWidth(self.scroll.viewport().width()),
                                           self.body.layout().minimumSize().height()))

    def _fit_to_screen(self) -> None:
        width = max(self.width(), PREFERRED_WIDTH, self.body.minimumSizeHint().width()
                    + self.scroll.verticalScrollBar().sizeHint().width() + 2 * self.layout().contentsMargins().left())
        inner = width - 2 * self.layout().contentsMargins().left()
        body = self.body.heightForWidth(inner) if self.body.hasHeightForWidth() else -1
        need = max(body, self.body.sizeHint().height()) + self.buttons.sizeHint().height() \
            + self.layout().spacing() + self.layout().contentsMargins().top() + self.layout().contentsMargins().bottom()
        screen = self.screen().availableGeometry() if self.screen() is not None else None
        height = min(need, int(screen.height() * 0.92)) if screen is not None else need
        self.setMinimumHeight(min(height, 240))
        self.resize(width, height)
        self._hold_body_height()

    # ----- the form ----------------------------------------------------------------------------
    def _fill(self, provider: dict | None) -> None:
        p = provider or {}
        kind = kind_of(provider)
        self.kind.setCurrentIndex(self.kind.findData(kind))
        self.name.setText(p.get("name") or "")
        self.model.setText(p.get("model") or "")
        self.api_base.setText(p.get("api_base") or "")
        self.max_concurrency.setValue(int(p.get("max_concurrency") or 4))
        self.rpm.setValue(int(p.get("rpm") or 0))
        self.timeout.setValue(float(p.get("timeout_s") or 60.0))
        self.retries.setValue(int(p["max_retries"]) if p.get("max_retries") is not None else 3)
        self.key_env.setText(p.get("key_env") or "")
        options = {**(p.get("options_json") or {}), **{k: p[k] for k in PROVIDER_OPTIONS if k in p}}
        self.sampling.set_values(options)
        self.structured_output.setCurrentIndex(max(self.structured_output.findData(
            options.get("structured_output") or "auto"), 0))
        self.reask.setValue(int(options["reask"]) if options.get("reask") is not None else DEFAULT_REASK)
        if p.get("key_keyring"):
            self.key_keyring.setChecked(True)
            self.stored_note.setText(f"A key is stored in the keyring entry “{p['key_keyring']}”; it is never shown. "
                                     "Type a new key to replace it, or leave the box empty to keep it.")
            self.stored_note.show()
        elif p.get("key_env"):
            self.key_env_choice.setChecked(True)
        else:
            self.key_none.setChecked(True)
        if provider is None:
            self._on_kind_chosen()
        self._sync_enabled()

    def _on_kind_chosen(self, *_args) -> None:
        kind = KINDS[self.kind.currentData()]
        model = self.model.text().strip()
        if kind.prefix == "sim":
            self.model.setText("sim")
            self.api_base.setText("")
            self.key_none.setChecked(True)
        else:
            rest = model.split("/", 1)[1] if "/" in model else ("" if model == "sim" else model)
            if kind.prefix:
                self.model.setText(kind.prefix + rest)
            elif model == "sim":
                self.model.setText("")
            self.api_base.setText(kind.api_base or "")
            if kind.api_base and self.key_mode.checkedId() < 0:
                self.key_none.setChecked(True)
        self.model.setPlaceholderText(kind.example)
        if not self.name.text().strip():
            base = "sim" if kind.prefix == "sim" else self.kind.currentData()
            name, n = base, 2
            while name in self.taken:
                name, n = f"{base}{n}", n + 1
            self.name.setText(name)
        self._sync_enabled()
        self._refresh()

    def _sync_enabled(self) -> None:
        sim = self.kind.currentData() == "sim"
        for widget in (self.api_base, self.key_box, self.test_button, self.max_concurrency, self.rpm, self.timeout,
                       self.retries):
            widget.setEnabled(not sim)
        self.model.setReadOnly(sim)
        keyring_ok = self.keyring_available is True
        self.key_keyring.setEnabled(keyring_ok and not sim)
        self.key.setEnabled(keyring_ok and self.key_keyring.isChecked())
        self.key_env.setEnabled(self.key_env_choice.isChecked())

    def record(self) -> dict:
        """The provider row as the form holds it (not yet checked)."""
        mode = KEY_MODES[max(self.key_mode.checkedId(), 0)]
        keyring_entry = None
        if mode == "keyring":
            keyring_entry = (self.original or {}).get("key_keyring") if not self.key.text() else None
            keyring_entry = keyring_entry or self.name.text().strip()
        return {"name": self.name.text().strip(), "model": self.model.text().strip(),
                "api_base": self.api_base.text().strip() or None,
                "key_env": self.key_env.text().strip() or None if mode == "env" else None,
                "key_keyring": keyring_entry, "max_concurrency": self.max_concurrency.value(),
                "rpm": self.rpm.value() or None, "timeout_s": float(self.timeout.value()),
                "max_retries": self.retries.value(), **self.sampling.values(),
                "structured_output": self.structured_output.currentData(), "reask": self.reask.value()}

    def check(self, *, show: bool = True) -> dict | None:
        """The checked row, or None with the field at fault marked inline (``show``: whatever the
        field; else only a field the person has edited)."""
        from workbench.core.project.panel_edits import check_provider_record

        for label in self.messages.values():
            label.show_message(None)
        for widget in (self.name, self.model, self.api_base, self.key_env, self.key):
            mark(widget, None)
        record = self.record()
        problem: tuple[str, str] | None = None
        if record["name"] in self.taken:
            problem = ("name", f"a provider named {record['name']!r} already exists")
        elif record["key_env"] is None and KEY_MODES[max(self.key_mode.checkedId(), 0)] == "env":
            problem = ("key", "name the environment variable that holds the key")
        elif (KEY_MODES[max(self.key_mode.checkedId(), 0)] == "keyring" and not self.key.text()
              and not (self.original or {}).get("key_keyring")):
            problem = ("key", "paste the key to store in the keyring")
        else:
            try:
                record = check_provider_record(record)
            except InputError as exc:
                field = {"api_key_env": "key", "key_keyring": "key"}.get(exc.field, exc.field)
                if field in PROVIDER_OPTIONS:
                    field = "sampling"
                problem = (field if field in self.messages else "limits", f"{exc.field}: {exc.message}"
                           if field == "sampling" else exc.message)
                if exc.field == "key_keyring" and record["key_keyring"] == record["name"]:
                    # The entry is named after the provider, so its name is what looks like a key (SPEC §11).
                    problem = ("name", "looks like an API key, so it cannot name this provider's keyring "
                                       "entry: choose another name")
        if problem is None:
            return record
        field, message = problem
        if not (show or self._show_all or field in self.edited_fields):
            return None  # not edited yet: no error before anything is typed
        self.messages[field].show_message("error", message)
        widget = {"name": self.name, "model": self.model, "api_base": self.api_base,
                  "key": self.key_env if self.key_env_choice.isChecked() else self.key}.get(field)
        if widget is not None:
            mark(widget, "error")
        return None

    def edit(self) -> ProviderEdit | None:
        """What was entered, once accepted; the typed key is taken out of the form."""
        record = self.check()
        if record is None:
            return None
        key = self.key.text() if self.key_keyring.isChecked() and self.key.text() else None
        self.key.clear()
        return ProviderEdit(record, key)

    def _on_edited(self, field: str | None = None) -> None:
        """A person edited ``field``: its error, if any, shows from now on."""
        if field is not None:
            self.edited_fields.add(field)
        self._refresh()

    def _refresh(self) -> None:
        self._sync_enabled()
        self.save_button.setEnabled(self.check(show=False) is not None)

    def accept(self) -> None:
        if self.check() is not None:
            super().accept()

    def done(self, result: int) -> None:
        if self._probe_cancel is not None:
            self._probe_cancel.set()
        super().done(result)

    # ----- the keyring ---------------------------------------------------------------------------
    def _check_keyring(self) -> None:
        from workbench.services.llm.keystore import keyring_status

        if self.workers is None:
            self._on_keyring_status(keyring_status())
        else:
            self.workers.start("check the keyring", lambda _cancel: keyring_status(), self._on_keyring_status,
                               lambda error: self._on_keyring_status(None))

    def _on_keyring_status(self, status) -> None:
        self.keyring_available = bool(status and status.available)
        if self.keyring_available:
            self.keyring_note.setText(f"Keys go to the OS keyring ({status.backend}), service "
                                      "“resonance-workbench”; the project records only the entry's name.")
            self.keyring_note.setStyleSheet("color: palette(placeholder-text);")
        else:
            reason = status.reason if status else "the keyring could not be checked"
            self.keyring_reason = reason
            self.keyring_note.setText(f"{reason[0].upper()}{reason[1:]}, so a key cannot be stored here. Name an "
                                      "environment variable that holds the key instead (set it before starting "
                                      "the workbench).")
            self.keyring_note.setStyleSheet(f"color: {css('warning')};")
            if self.key_keyring.isChecked() and not (self.original or {}).get("key_keyring"):
                edited = set(self.edited_fields)
                self.key_env_choice.setChecked(True)
                self.edited_fields = edited  # chosen for the person, not by them: no error yet
        self._sync_enabled()
        self._refresh()
        if self.isVisible():  # the note's new text: as tall as it now needs
            self._fit_to_screen()
        self.keyring_known.emit(self.keyring_available)

    # ----- test connection -----------------------------------------------------------------------
    def _on_test_clicked(self) -> None:
        from workbench.services.llm.probe import ProbeResult, missing_credentials

        record = self.check()
        if record is None or self.testing:
            return
        key = self.key.text() if self.key_keyring.isChecked() and self.key.text() else None
        # No key where one is needed: said at once, before litellm is imported or anything is sent.
        problem = missing_credentials(record, api_key=key, keyring=False)
        if problem is not None:
            self.use_form.hide()
            self._on_tested(ProbeResult(False, problem, error_kind="auth"))
            return
        cancel = self._probe_cancel = threading.Event()
        self.testing = True
        self.test_button.setEnabled(False)
        self.test_result.setStyleSheet("")
        self.test_result.setText("Testing…")

        self.use_form.hide()

        def job(_cancel: threading.Event):
            from workbench.services.llm.probe import probe_provider

            return probe_provider(record, api_key=key, cancel=cancel, structured=True)

        if self.workers is None:
            self._on_tested(job(cancel))
        else:
            self.workers.start(f"test provider {record['name']}", job, self._on_tested, self._on_test_failed)

    def _on_tested(self, result) -> None:
        self.testing = False
        self.test_button.setEnabled(self.kind.currentData() != "sim")
        level = "ok" if result.ok else "error"
        forms = getattr(result, "structured", None)
        extra = f"\n{forms.message}" if forms is not None else ""
        self.test_result.setText(("✔ " if result.ok else "✖ ") + result.message + extra)
        self.test_result.setStyleSheet(f"color: {css(level)};")
        if forms is not None and forms.proposed != self.structured_output.currentData():
            self.use_form.setText(f"Use {forms.proposed}")
            self.use_form.setProperty("form", forms.proposed)
            self.use_form.show()
        self.tested.emit(result.ok, result.message)

    def _on_test_failed(self, error) -> None:
        from workbench.services.llm.probe import ProbeResult

        self._on_tested(ProbeResult(False, error.message))


    def _on_use_form(self) -> None:
        """One click applies the structured-output form the test proposed."""
        form = self.use_form.property("form")
        self.structured_output.setCurrentIndex(max(self.structured_output.findData(form), 0))
        self.use_form.hide()
        self._on_edited("sampling")


def _cell(parent: QWidget, field: QWidget, message: FieldMessage) -> QWidget:
    from workbench.ui.widgets.cluster_editor import field_cell

    return field_cell(parent, field, message)
