"""SPEC §11 in the provider dialog: a key typed where a name or an address belongs is refused
inline, and no label of the dialog ever shows it."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel

from tests.support.fake_keyring import memory_keyring
from workbench.ui.dialogs.provider_dialog import ProviderDialog

KEY = "sk-proj-Ab3_xY9-qQ7zLm2Np4Rs8Tv6Wu1Kj5Hd"


def typed(qtbot, line, text: str) -> None:
    line.selectAll()
    line.del_()
    qtbot.keyClicks(line, text)


def shown_text(dialog: ProviderDialog) -> str:
    return "\n".join(label.text() for label in dialog.findChildren(QLabel))


def test_a_key_in_the_address_or_the_variable_is_refused_without_being_shown(qtbot):
    with memory_keyring():
        dialog = ProviderDialog(None)
        qtbot.addWidget(dialog)
        typed(qtbot, dialog.name, "local")
        typed(qtbot, dialog.model, "openai/qwen")
        dialog.key_none.setChecked(True)
        typed(qtbot, dialog.api_base, f"http://127.0.0.1:8000/v1?api-key={KEY}")
        assert "holds a key in a query parameter" in dialog.messages["api_base"].text()
        assert not dialog.save_button.isEnabled() and KEY[8:20] not in shown_text(dialog)
        typed(qtbot, dialog.api_base, f"http://user:{KEY}@127.0.0.1:8000/v1")
        assert "credentials before the host" in dialog.messages["api_base"].text()
        typed(qtbot, dialog.api_base, "http://127.0.0.1:8000/v1")
        dialog.key_env_choice.setChecked(True)
        typed(qtbot, dialog.key_env, "Ab3xY9qQ7zLm2Np4Rs8Tv6Wu1Kj5HdZZ")  # a key, though it could be a name
        assert "not hold the key itself" in dialog.messages["key"].text()
        assert "Ab3xY9qQ7zLm" not in shown_text(dialog) and not dialog.save_button.isEnabled()
        typed(qtbot, dialog.key_env, "LOCAL_API_KEY")
        assert dialog.save_button.isEnabled()


def test_a_provider_named_like_a_key_cannot_name_its_keyring_entry(qtbot):
    with memory_keyring():
        dialog = ProviderDialog(None)
        qtbot.addWidget(dialog)
        typed(qtbot, dialog.name, "hf_inference_endpoint")  # a key's prefix and 8 more characters
        typed(qtbot, dialog.model, "openai/gpt-4o-mini")
        dialog.key_keyring.setChecked(True)
        typed(qtbot, dialog.key, "hf_the-real-key-0123456789")
        assert "choose another name" in dialog.messages["name"].text()
        assert not dialog.save_button.isEnabled() and "0123456789" not in shown_text(dialog)
        typed(qtbot, dialog.name, "huggingface")
        assert dialog.save_button.isEnabled()
        assert dialog.edit().record["key_keyring"] == "huggingface"
