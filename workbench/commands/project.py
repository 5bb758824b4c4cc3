"""Project-file commands: ``rwb new FILE``, ``rwb info FILE`` and ``rwb demo``.

``new`` and ``demo --out`` never replace an existing file unless given ``--force``; both build
the file under a temporary name beside it and move it into place once complete.
"""

from __future__ import annotations

import argparse

from workbench.commands.io import print_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("new", help="create an empty project file")
    p.add_argument("file", metavar="FILE", help="path of the new .rwb file")
    p.add_argument("--name", help="project name (default: the file name)")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists (default: refuse)")
    p.set_defaults(run=run_new)

    p = sub.add_parser("info", help="check a project and print its identity, schema and row counts as JSON")
    p.add_argument("file", metavar="FILE", help="a .rwb project")
    p.set_defaults(run=run_info)

    p = sub.add_parser("demo", help="build the bundled demo project")
    p.add_argument("--out", metavar="FILE", help="where to write it (default: the demo path the GUI opens, "
                                                 "rebuilt in place)")
    p.add_argument("--force", action="store_true", help="replace the --out FILE if it exists (default: refuse)")
    p.set_defaults(run=run_demo)


def run_new(args: argparse.Namespace) -> int:
    from workbench.core.project.files import with_suffix
    from workbench.core.project.store import Store

    store = Store.create(with_suffix(args.file), args.name, overwrite=args.force)
    try:
        print_json(store.info())
    finally:
        store.close_connection()
    return 0


def run_info(args: argparse.Namespace) -> int:
    from workbench.core.project.store import Store

    store = Store.open(args.file)
    try:
        print_json(store.info())
    finally:
        store.close_connection()
    return 0


def run_demo(args: argparse.Namespace) -> int:
    from pathlib import Path

    from workbench.core.project.demo import build_default_demo, build_demo, demo_path
    from workbench.services.runs.demo_runs import populate

    if args.out:
        from workbench.commands.io import refuse_link

        refuse_link(args.out)  # never written through, --force or not (SPEC §11)
        print(build_demo(Path(args.out), overwrite=args.force, populate=populate))
    else:
        print(build_default_demo(demo_path(), populate=populate))
    return 0
