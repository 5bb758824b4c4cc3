"""``rwb study export``'s bundle (SPEC §9): everything an appendix needs, in one folder.

``study.json`` (the study as run: its document, and every arm's full resolved configuration and
its templates by hash), ``prompts/`` (every effective template, named by its sha256),
``runs.csv`` (one row per result), ``artifacts.csv`` (one per arm, replicate, item and artifact),
``votes.csv``, ``calls.csv``, ``report.md`` and ``report.html`` (plots as inline SVG). Every CSV
goes through the shared safe writer (formula protection, SPEC §11); every file is written the safe
way (``commands.io.write_output``), never through a symbolic link.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from workbench.core.errors import InputError

FILES = ("study.json", "runs.csv", "artifacts.csv", "votes.csv", "calls.csv", "report.md", "report.html")


def _folder(out: str, force: bool) -> Path:
    """The bundle's folder: new, or empty, or (``--force``) one to write the bundle's files into."""
    from workbench.commands.io import refuse_link

    refuse_link(out)
    path = Path(out)
    if path.exists():
        if not path.is_dir():
            raise InputError("--out", f"{out} is not a folder; give the path of a new folder")
        if any(path.iterdir()) and not force:
            raise InputError("--out", f"{out} already holds files; give a new or empty folder, or add --force")
    else:
        try:
            path.mkdir()
        except FileNotFoundError:
            raise InputError("--out", f"{out}: its parent folder does not exist") from None
        except OSError as exc:
            raise InputError("--out", f"{out} cannot be made: {exc.strerror or exc}") from None
    prompts = path / "prompts"
    refuse_link(str(prompts))
    if prompts.exists() and not prompts.is_dir():
        raise InputError("--out", f"{prompts} is not a folder")
    prompts.mkdir(exist_ok=True)
    return path


def _csv(header, rows) -> str:
    from workbench.core.safe_output import write_csv

    out = io.StringIO()
    write_csv(out, header, rows)
    return out.getvalue()


def write_bundle(store, study_id: str, out: str, *, force: bool = False) -> list[Path]:
    from workbench.commands.io import write_output
    from workbench.core.project import study_export as tables
    from workbench.core.project.studies import get_study
    from workbench.core.safe_output import json_text
    from workbench.core.studies.paths import changed_paths
    from workbench.core.studies.report import metric_order
    from workbench.services.runs.studies import load, report_of

    row = get_study(store, study_id)
    if row is None:
        raise InputError("study", f"no study {study_id!r} in this project")
    study = load(store, study_id)
    folder = _folder(out, force)
    written: list[Path] = []

    def put(name: str, text: str) -> None:
        written.append(write_output(str(folder / name), text, force=True))

    report = report_of(store, study_id)
    present = {m for a in report["arms"] for m in a["metrics"]}
    metrics = [m for m in metric_order() if m in present] + sorted(present - set(metric_order()))
    first = study.items[0]
    configs = {arm.name: study.config(arm, first, 0).model_dump(mode="json", by_alias=True) for arm in study.arms}
    base = configs.get(study.baseline)
    settings_of = {name: {p: _at(cfg, p) for p in changed_paths(base, cfg)} for name, cfg in configs.items()}
    arm_prompts = tables.arm_prompts(store, study_id)
    put("study.json", json_text({
        "study_id": study_id, "study": row.name, "created_at": row.created_at, "baseline": study.baseline,
        "replicates": study.replicates, "seed": study.seed, "items": [i.id for i in study.items],
        "pairing": "replicate r of every arm runs with seed + r; a pair is one (item, replicate) across two arms",
        "arms": [{**arm.to_json(), "notes": arm.notes,
                  "config": configs[arm.name],  # replicate 0 of the first item; replicate r: seed + r
                  "prompts": arm_prompts.get(arm.name, {})} for arm in study.arms],
        "document": row.document}, indent=2) + "\n")
    for sha, text in sorted(tables.prompt_texts(store, study_id).items()):
        put(os.path.join("prompts", f"{sha}.j2"), text)
    put("runs.csv", _csv(*tables.runs_table(store, study_id, metrics, settings_of)))
    put("artifacts.csv", _csv(*tables.artifacts_table(store, study_id)))
    put("votes.csv", _csv(*tables.votes_table(store, study_id)))
    put("calls.csv", _csv(*tables.calls_table(store, study_id)))
    put("report.md", report_text(store, study_id, "md"))
    put("report.html", report_text(store, study_id, "html"))
    return written


def _at(document: object, path: str) -> object:
    from workbench.core.studies.paths import split

    for part in split(path):
        try:
            document = document[int(part)] if isinstance(document, list) else document[part]
        except (KeyError, IndexError, ValueError, TypeError):
            return None  # removed by the arm
    return document


def report_text(store, study_id: str, fmt: str) -> str:
    """The report in ``fmt``: JSON (exact, SPEC §9), Markdown or HTML with its plots, or CSV."""
    from workbench.core.project.studies import get_study
    from workbench.core.safe_output import json_text
    from workbench.core.studies import render
    from workbench.services.runs.studies import report_of

    report = report_of(store, study_id)
    row = get_study(store, study_id)
    title = row.name or study_id
    if fmt == "json":
        return json_text(report, indent=2) + "\n"
    if fmt == "md":
        return render.to_markdown(report, row.plan, title)
    if fmt == "html":
        return render.to_html(report, row.plan, title)
    return render.to_csv(report)
