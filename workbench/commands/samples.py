"""``rwb samples``: (re)build the sample projects of ``sample_runs/`` from their committed
configurations, or check that the committed files are what those configurations give.

The list of samples, their configurations and their human steps is ``sample_runs/samples.json``
(docs/samples.md). A sample that needs the third-party ARM corpus is built only when the corpus
is found (``../shared/corpus`` beside the repository, or ``--corpus DIR``).
"""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("samples", help="rebuild the sample projects of sample_runs/ (or --check them)",
                       description="Rebuild every sample project listed in sample_runs/samples.json from its "
                                   "committed configurations, on the simulated panel. Each file is written "
                                   "under a temporary name and moved into place once complete.")
    p.add_argument("--out", metavar="DIR", help="where to write the .rwb files (default: the sample_runs folder)")
    p.add_argument("--corpus", metavar="DIR", help="the corpus folder for the samples that import real traces "
                                                   "(default: ../shared/corpus beside the repository)")
    p.add_argument("--check", action="store_true",
                   help="rebuild into a temporary folder and compare with the files in --out (or sample_runs) "
                        "row for row, ignoring timestamps, run and batch ids and fence tokens; exit 1 if any differ")
    p.add_argument("--only", metavar="NAME", action="append", help="only this sample (repeatable)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workbench.core.errors import InputError
    from workbench.core.paths import samples_dir
    from workbench.services.samples.build import build_all, check_all, default_corpus, load_manifest

    folder = samples_dir()
    out = Path(args.out) if args.out else folder
    corpus = Path(args.corpus) if args.corpus else default_corpus(folder)
    if args.corpus and not corpus.is_dir():
        raise InputError("--corpus", f"{corpus} is not a folder")
    known = [s.name for s in load_manifest(folder)]
    for name in args.only or ():
        if name not in known:
            raise InputError("--only", f"no sample named {name!r}; one of {', '.join(known)}")
    if not out.is_dir():
        raise InputError("--out", f"{out} is not a folder")

    if args.check:
        found = check_all(out, folder=folder, corpus=corpus, names=args.only)
        differing = {name: diffs for name, diffs in found.items() if diffs}
        for name, diffs in found.items():
            print(f"{name}: {'differs' if diffs else 'same'}")
            for line in diffs[:20]:
                print(f"  {line}")
            if len(diffs) > 20:
                print(f"  … and {len(diffs) - 20} more")
        if differing:
            print(f"rwb samples: {len(differing)} sample(s) differ from their configurations: "
                  f"{', '.join(differing)}; run rwb samples to rebuild them", file=sys.stderr)
            return 1
        return 0

    def report(result) -> None:
        if result.path is None:
            print(f"{result.sample.name}: skipped, {result.skipped}")
        else:
            size = result.path.stat().st_size
            print(f"{result.sample.name}: {result.path} ({size / 1024:.0f} KB, {len(result.runs)} run(s), "
                  f"{result.seconds:.1f} s)", flush=True)

    build_all(out, folder=folder, corpus=corpus, names=args.only, on_built=report)
    return 0
