"""``rwb dataset arithmetic --n N --seed S [--out FILE]``: a dataset of questions with known
answers (SPEC §8), as JSONL on stdout (or in ``--out``, never replacing a file without ``--force``).

``arithmetic`` is Du et al.'s arithmetic task (2023): ``What is the result of a+b*c+d-e*f?``, six
integers drawn uniformly from 0 to 30, ``answer_type`` ``number``. The same N and S always give
the same file. Exit 0 with the file; 2 for a bad ``--n``, ``--seed`` or ``--out`` (one line on
stderr naming it), with nothing written.
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dataset", help="write a dataset of questions with known answers (JSONL)",
                       description="Datasets for ground-truth runs (SPEC §8): JSONL items with id, question, "
                                   "answer and answer_type, for a run config's dataset and item, or a batch's "
                                   "batch.dataset.")
    presets = p.add_subparsers(dest="preset", metavar="PRESET", required=True)
    a = presets.add_parser("arithmetic", help="Du et al.'s arithmetic task: What is the result of a+b*c+d-e*f?",
                           description="N items 'What is the result of a+b*c+d-e*f?', six integers drawn "
                                       "uniformly from 0-30 with the seed S, each with its exact answer.")
    a.add_argument("--n", metavar="N", required=True, help="how many items (1 to 100,000)")
    a.add_argument("--seed", metavar="S", required=True, help="the seed: the same N and S give the same items")
    a.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    a.add_argument("--force", action="store_true", help="replace the --out FILE if it exists (default: refuse)")
    a.set_defaults(run=run_arithmetic)


def _whole(text: str, field: str, low: int, high: int) -> int:
    from workbench.core.errors import InputError
    from workbench.core.limits import out_of_range

    try:
        value = int(text.strip(), 10)
    except ValueError:
        raise InputError(field, out_of_range(text, low, high)) from None
    if not low <= value <= high:
        raise InputError(field, out_of_range(value, low, high))
    return value


def run_arithmetic(args: argparse.Namespace) -> int:
    from workbench.commands.io import check_output, print_document, write_output
    from workbench.core.datasets import MAX_DATASET_ITEMS, arithmetic, to_jsonl
    from workbench.core.limits import SEED_MAX, SEED_MIN

    n = _whole(args.n, "--n", 1, MAX_DATASET_ITEMS)
    seed = _whole(args.seed, "--seed", SEED_MIN, SEED_MAX)
    if args.out:
        check_output(args.out, force=args.force)  # refused before any work, the file left as it was
    text = to_jsonl(arithmetic(n, seed))
    if args.out:
        write_output(args.out, text, force=args.force)
    else:
        print_document(text)
    return 0
