"""Packaging beyond what pyproject.toml can say: the shipped folders at the top of the repository
(``resources/``, ``sample_runs/``, the protocol notes in ``docs/``) go into the wheel inside the
package, under ``workbench/_data/``. ``workbench/core/paths.py`` looks there first and falls back to
the repository's folders, so a checkout, an editable install and a wheel all find them.

Every folder shipped is listed (setuptools warns about a folder it would leave out), with the
files the program reads from it; tests/packaging/test_wheel.py checks the wheel holds them."""

from setuptools import find_packages, setup

DATA = {
    # package inside the wheel: (folder in the repository, files shipped from it)
    "workbench._data.resources": ("resources", ["*.txt", "*.json"]),
    "workbench._data.resources.fonts": ("resources/fonts", ["*.ttf", "LICENSE-*.txt", "README.md"]),
    "workbench._data.resources.icons": ("resources/icons", ["*.svg", "*.png"]),
    "workbench._data.resources.help": ("resources/help", ["*.md"]),  # Help ▸ Protocol Notes
    # *.jsonl: the datasets the ground-truth samples (SPEC §8) ask
    "workbench._data.samples": ("sample_runs", ["*.json", "*.jsonl", "*.yaml", "*.yml", "*.rwb", "README.md"]),
    "workbench._data.docs": ("docs", ["protocols.md"]),
}

setup(
    packages=find_packages(include=["workbench", "workbench.*"]) + list(DATA),
    package_dir={name: folder for name, (folder, _files) in DATA.items()},
    # Each protocol's prompt templates (SPEC §7) live in its package, beside its code.
    package_data={"workbench": ["py.typed", "core/protocols/*/prompts/*.j2"],
                  **{name: files for name, (_folder, files) in DATA.items()}},
)
