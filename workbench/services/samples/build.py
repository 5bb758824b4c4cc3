"""Building the sample projects of ``sample_runs/`` (``rwb samples``) and filling the demo with them.

One list, ``sample_runs/samples.json``, names every sample and its steps, in order:

- ``{"run": CONFIG, "decisions": FILE?}``: run a committed configuration (a single run or a
  batch) to its end, as ``rwb run CONFIG --decisions FILE`` does; the decisions file answers the
  CONS conductor where a question escalates;
- ``{"review_findings": FILE}``: a reviewer's decisions on findings, recorded by the same core
  function the Findings panel's Confirm/Reject calls (:func:`finding_review.decide`);
- ``{"import_arm": PATH}``: import an ARM trace found in the corpus folder (``rwb arm import``);
- ``{"audit_notes": FILE}``: an auditor's notes on the imported traces (:func:`audit.add_note`).

A sample marked ``"corpus": true`` needs the third-party corpus (``../shared/corpus`` beside the
repository, or ``--corpus DIR``); it is built only when the corpus is there and is never
committed. Runs get ids from the sample's name (``rcp-tiers-1``, ``arm-study-3``...), and every
configuration dispatches sequentially, so two builds write the same rows in the same order
(:mod:`workbench.core.project.compare` checks it, ignoring timestamps and fence tokens).

Each file is built under a temporary name beside its destination, compacted, then moved into
place, so an interrupted build never leaves half a file.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from workbench.core.errors import InputError, WorkbenchError
from workbench.core.paths import samples_dir
from workbench.core.project.store import Store

MANIFEST = "samples.json"
CORPUS_TRACE_ENV = "RWB_CORPUS"


@dataclass(frozen=True)
class Sample:
    name: str
    title: str
    steps: tuple[dict, ...]
    corpus: bool = False  # needs the third-party corpus; never committed

    @property
    def file_name(self) -> str:
        return f"{self.name}.rwb"

    def configs(self) -> list[str]:
        return [s["run"] for s in self.steps if "run" in s]


@dataclass
class BuildResult:
    sample: Sample
    path: Path | None  # None: skipped
    seconds: float = 0.0
    skipped: str = ""  # why it was not built
    runs: list[str] = field(default_factory=list)


STEP_KINDS = ("run", "study", "review_findings", "import_arm", "audit_notes")


def load_manifest(folder: Path | None = None) -> list[Sample]:
    folder = folder or samples_dir()
    path = folder / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(str(path), "no such file: the list of sample projects is missing") from None
    except ValueError as exc:
        raise InputError(str(path), f"not valid JSON ({exc})") from None
    samples, seen = [], set()
    for i, entry in enumerate(data.get("samples", [])):
        where = f"{MANIFEST}: samples[{i}]"
        name = entry.get("name")
        if not isinstance(name, str) or not name or name in seen:
            raise InputError(where, f"needs a unique name, got {name!r}")
        seen.add(name)
        steps = tuple(entry.get("steps", ()))
        for j, step in enumerate(steps):
            kinds = [k for k in STEP_KINDS if k in step]
            if len(kinds) != 1:
                raise InputError(f"{where}.steps[{j}]", f"must name exactly one of {', '.join(STEP_KINDS)}")
        samples.append(Sample(name, entry.get("title", name), steps, bool(entry.get("corpus", False))))
    return samples


def default_corpus(folder: Path | None = None) -> Path:
    """The corpus beside the repository: ``<repo>/../shared/corpus``."""
    return (folder or samples_dir()).resolve().parent.parent / "shared" / "corpus"


# ----- running a sample's steps into a project ---------------------------------------------------
def _sample_runner(store: Store, prefix: str, counter: Iterator[int], manual=None):
    """A Runner whose runs get the ids ``{prefix}-1``, ``{prefix}-2``... (a sample's own), so a
    rebuild writes the same ids (Echo's markers are drawn from the run id, too)."""
    from workbench.core.project import runs as run_rows
    from workbench.services.runs.runner import Runner

    class SampleRunner(Runner):
        # Runner.create with the id given; the rest is Runner.create's own bookkeeping.
        def create(self, cfg, *, label: str = "", batch_id: str | None = None, replicate: int | None = None,
                   study: tuple[str, str, str] | None = None) -> str:
            from workbench.services.runs.runner import with_findings

            cfg = with_findings(self.store, cfg)
            run_id = f"{prefix}-{next(counter)}"
            run_rows.create_run(self.store, run_id=run_id, protocol=cfg.protocol,
                                label=label or cfg.label or cfg.query[:60],
                                config=cfg.model_dump(mode="json", by_alias=True), seed=cfg.seed,
                                dispatch=cfg.dispatch, simulated=cfg.simulated, batch_id=batch_id,
                                replicate=replicate, study=study)
            return run_id

    return SampleRunner(store, manual=manual)


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(str(path), "no such file") from None
    except ValueError as exc:
        raise InputError(str(path), f"not valid JSON ({exc})") from None


def populate_sample(store: Store, sample: Sample, *, folder: Path | None = None, corpus: Path | None = None,
                    prefix: str | None = None) -> list[str]:
    """Run every step of ``sample`` into ``store``; returns the run ids made. Run ids start with
    ``prefix`` (default: the sample's name)."""
    from itertools import count

    from workbench.core.project import runs as run_rows
    from workbench.core.runs.batch import expand_batch, is_batch
    from workbench.core.runs.config import parse_run_config, with_files_read
    from workbench.services.runs.agents import DecisionsFile
    from workbench.services.runs.preflight import preflight

    folder = folder or samples_dir()
    prefix = prefix or sample.name
    counter, batches, studies, made = count(1), count(1), count(1), []
    for step in sample.steps:
        if "run" in step:
            # as rwb run reads it: the files it names (a dataset, a template) read beside it
            data = with_files_read(_read_json(folder / step["run"]), folder)
            manual = None
            if "decisions" in step:
                decisions = _read_json(folder / step["decisions"])
                manual = DecisionsFile({k: v for k, v in decisions.items() if k != "about"}, step["decisions"])
            runner = _sample_runner(store, prefix, counter, manual)
            if is_batch(data):
                spec, planned = expand_batch(data)
                batch_id = f"{prefix}-batch-{next(batches)}"
                run_rows.create_batch(store, batch_id, spec.name, data)
                for planned_run in planned:
                    preflight(planned_run.config)
                ids = [runner.create(r.config, label=r.label, batch_id=batch_id, replicate=r.replicate)
                       for r in planned]
            else:
                cfg = parse_run_config(data)
                preflight(cfg)
                ids = [runner.create(cfg)]
            for run_id in ids:
                summary = runner.execute(run_id)
                if summary.get("status") != "completed":
                    raise WorkbenchError(f"sample {sample.name}: {step['run']} ended {summary.get('status')}: "
                                         f"{summary.get('error') or 'see the run'}")
            made += ids
        elif "study" in step:
            made += _populate_study(store, sample, step, folder, prefix, _sample_runner(store, prefix, counter),
                                    next(studies))
        elif "review_findings" in step:
            from workbench.core.project import finding_review

            review = _read_json(folder / step["review_findings"])
            for d in review.get("decisions", []):
                finding_review.decide(store, d["finding"], d["decision"], d.get("reason", ""),
                                      reviewer=review.get("reviewer", finding_review.REVIEWER))
        elif "import_arm" in step:
            from workbench.core.project.arm_import import import_arm_file

            if corpus is None:
                raise InputError("--corpus", f"sample {sample.name} needs the corpus folder")
            made.append(import_arm_file(store, corpus / step["import_arm"]).run_id)
        elif "audit_notes" in step:
            _add_audit_notes(store, made, _read_json(folder / step["audit_notes"]))
    return made


def _populate_study(store: Store, sample: Sample, step: dict, folder: Path, prefix: str, runner, n: int) -> list[str]:
    """``{"study": FILE, "replicates": R, "items": N}``: run a study file (``rwb study run``), with at
    most ``replicates`` replicates and its dataset's first ``items`` items when given, so the sample
    project stays small while the file itself is the whole study."""
    from workbench.core.project.studies import study_runs
    from workbench.core.studies.spec import parse_study, read_study_file
    from workbench.services.runs.studies import StudyRunner
    from workbench.services.runs.study_checks import design_warnings

    data = read_study_file(folder / step["study"])
    # Sequential dispatch, as every sample's (two builds write the same rows in the same order).
    data["base"] = {**data["base"], "dispatch": "sequential"}
    if "replicates" in step:
        data["replicates"] = min(int(step["replicates"]), int(data.get("replicates", 1)))
    if "items" in step and isinstance(data.get("items"), list):
        data["items"] = data["items"][:int(step["items"])]
    study = parse_study(data)
    runner = StudyRunner(store, runner)
    study_id = runner.create(study, study_id=f"{prefix}-study-{n}", warnings=design_warnings(study))
    summary = runner.run(study_id)
    if summary["status"] != "completed":
        raise WorkbenchError(f"sample {sample.name}: {step['study']} ended {summary['status']}")
    return [r.id for r in study_runs(store, study_id)]


def _add_audit_notes(store: Store, run_ids: list[str], notes: dict) -> None:
    """Notes on the traces of the runs imported so far, named by round and role."""
    from workbench.core.project import audit, records

    traces = {}
    for run_id in run_ids:
        for row in records.window(store, records.RecordFilter(kind="trace", run=run_id), offset=0, limit=1000):
            traces.setdefault((row["round"], row["agent"]), row["id"])
    for n in notes.get("notes", []):
        trace_id = traces.get((n["round"], n["role"]))
        if trace_id is not None:
            audit.add_note(store, "trace", trace_id, n["verdict"], n["note"], author=notes.get("author", ""))
        else:
            raise InputError("audit_notes", f"no trace of round {n['round']} and role {n['role']!r} to note")


# ----- building files -------------------------------------------------------------------------
def build_sample(sample: Sample, out_dir: Path, *, folder: Path | None = None, corpus: Path | None = None) -> BuildResult:
    """Build ``sample`` into ``out_dir/<name>.rwb``: under a temporary name, compacted, then moved
    into place (an existing file is replaced only once the new one is complete)."""
    import time

    from workbench.core.project.compare import compact
    from workbench.core.project.files import publish, temporary_beside

    started = time.perf_counter()
    dest = (out_dir / sample.file_name).absolute()
    tmp = temporary_beside(dest, "building")
    try:
        store = Store.create(tmp, f"Sample: {sample.title}")
        try:
            runs = populate_sample(store, sample, folder=folder, corpus=corpus)
        finally:
            store.close_connection()
        compact(tmp)
        publish(tmp, dest, overwrite=True)
    finally:
        tmp.unlink(missing_ok=True)
    return BuildResult(sample, dest, time.perf_counter() - started, runs=runs)


def corpus_for(sample: Sample, corpus: Path | None) -> str:
    """Why ``sample`` cannot be built with this corpus folder ("" when it can)."""
    if not sample.corpus:
        return ""
    if corpus is None or not corpus.is_dir():
        return f"the corpus is absent (looked in {corpus})"
    missing = [s["import_arm"] for s in sample.steps if "import_arm" in s and not (corpus / s["import_arm"]).is_file()]
    return f"the corpus has no {missing[0]}" if missing else ""


def build_all(out_dir: Path, *, folder: Path | None = None, corpus: Path | None = None,
              names: list[str] | None = None,
              on_built: Callable[[BuildResult], None] = lambda _r: None) -> list[BuildResult]:
    """Build every sample (or those named) into ``out_dir``; a corpus sample without its corpus is skipped."""
    results = []
    for sample in load_manifest(folder):
        if names and sample.name not in names:
            continue
        why = corpus_for(sample, corpus)
        result = BuildResult(sample, None, skipped=why) if why else build_sample(sample, out_dir, folder=folder,
                                                                                corpus=corpus)
        on_built(result)
        results.append(result)
    return results


def check_all(committed: Path, *, folder: Path | None = None, corpus: Path | None = None,
              names: list[str] | None = None) -> dict[str, list[str]]:
    """Rebuild every sample in a temporary folder and compare it with the file in ``committed``.
    Returns sample name -> the differences found (empty: the same), for the samples built."""
    from workbench.core.project.compare import differences

    out: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="rwb-samples-") as tmp:
        for result in build_all(Path(tmp), folder=folder, corpus=corpus, names=names):
            if result.path is None:
                continue
            mine = committed / result.sample.file_name
            if not mine.is_file() and result.sample.corpus:
                continue  # never committed: nothing to compare it with until it is built here
            if not mine.is_file():
                out[result.sample.name] = [f"{mine} is missing"]
                continue
            out[result.sample.name] = [str(d) for d in differences(mine, result.path)]
    return out


# ----- the demo ----------------------------------------------------------------------------------
def populate_demo(store: Store, *, folder: Path | None = None, corpus: Path | None = None) -> None:
    """Every sample into the demo; a corpus sample only when the corpus
    is there. Run ids keep the sample's name, so they do not clash with each other."""
    corpus = corpus if corpus is not None else default_corpus(folder)
    # Built last-listed first: panels open on the newest run of their protocol, so the manifest's
    # first samples (the four RCP tiers, the ARM study) are the ones a first launch shows.
    for sample in reversed(load_manifest(folder)):
        if not corpus_for(sample, corpus):
            populate_sample(store, sample, folder=folder, corpus=corpus)


def demo_sources(folder: Path | None = None) -> list[Path]:
    """The files the demo's runs are made from: a demo older than any of them is rebuilt."""
    folder = folder or samples_dir()
    files = {folder / MANIFEST}
    for sample in load_manifest(folder):
        for step in sample.steps:
            for key in ("run", "study", "decisions", "review_findings", "audit_notes"):
                if key in step:
                    files.add(folder / step[key])
            if "study" in step:  # its base and its dataset
                data = _read_json(folder / step["study"])
                files.update(folder / data[key] for key in ("base", "dataset") if isinstance(data.get(key), str))
    return sorted(files)
