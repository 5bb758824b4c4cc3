"""The architecture, checked over the source: the import direction ui -> services -> core, protocols
that never import each other, no import cycles, and SQL only in workbench.core.project. Then the
same direction checked by watching what a real import of the core and of the headless CLI loads.

The static checks read every import statement of workbench/ with ``ast``: at module level, in
class bodies, inside functions (a lazy import is still a dependency) and under
``if TYPE_CHECKING:``. Each failure lists every offender, as ``file:line: statement``.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "workbench"
HEAVY = ("PySide6", "shiboken6", "pyqtgraph", "litellm")


# -- reading the imports -------------------------------------------------------------------------

def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def sources() -> tuple[Path, ...]:
    """Every module of workbench/, listed when a test first asks (not at collection time)."""
    return tuple(sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts))


@functools.cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sources()}


def within(name: str, prefix: str) -> bool:
    """``name`` is the module ``prefix`` or inside it (by dotted components, not characters)."""
    return name == prefix or name.startswith(prefix + ".")


def ancestors(name: str) -> list[str]:
    """``a.b.c`` -> ``["a", "a.b"]``: the packages whose ``__init__`` importing it runs first."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    statement: str
    targets: tuple[str, ...]  # the modules it names, resolved (see resolve)
    in_function: bool
    type_checking: bool

    @property
    def importer(self) -> str:
        return module_name(self.path)

    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}: {self.statement}"


def resolve(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool) -> tuple[str, ...]:
    """The modules an import statement names. ``from a.b import c`` is the module ``a.b.c`` when
    that is a workbench module, else ``a.b`` (``c`` is a name defined there). Outside workbench
    the submodule cannot be told from a name without importing, so both are kept: ``from PySide6
    import QtWidgets`` names ``PySide6.QtWidgets``."""
    if isinstance(node, ast.Import):
        return tuple(alias.name for alias in node.names)
    base = node.module or ""
    if node.level:  # relative: from the importer's package, up level - 1 packages
        package = importer.split(".") if is_package else importer.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join(package + ([base] if base else []))
    targets = []
    for alias in node.names:
        full = f"{base}.{alias.name}" if base else alias.name
        if alias.name == "*":
            targets.append(base)
        elif within(base, "workbench"):
            targets.append(full if full in modules() else base)
        else:
            targets.extend((base, full))
    return tuple(dict.fromkeys(targets))


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(node: ast.AST, in_function: bool, type_checking: bool) -> Iterator[tuple[ast.AST, bool, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and is_type_checking(child.test):
            for stmt in child.body:
                yield from _visit(stmt, in_function, True)
            for stmt in child.orelse:
                yield from _visit(stmt, in_function, type_checking)
        else:
            yield from _visit(child, in_function, type_checking)


def _visit(node: ast.AST, in_function: bool, type_checking: bool) -> Iterator[tuple[ast.AST, bool, bool]]:
    yield node, in_function, type_checking
    nested = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    yield from _statements(node, nested, type_checking)


_PARSED: dict[Path, ast.Module] = {}


def parse(path: Path) -> ast.Module:
    if path not in _PARSED:
        _PARSED[path] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return _PARSED[path]


def imports_in(path: Path) -> list[Import]:
    source = path.read_text(encoding="utf-8")
    importer, is_package = module_name(path), path.name == "__init__.py"
    found = []
    for node, in_function, type_checking in _statements(parse(path), False, False):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            text = " ".join((ast.get_source_segment(source, node) or "").split())
            found.append(Import(path, node.lineno, text, resolve(node, importer, is_package),
                                in_function, type_checking))
    return found


def all_imports(folder: str = "") -> list[Import]:
    root = PACKAGE / folder
    return [imp for path in sources() if path.is_relative_to(root) for imp in imports_in(path)]


def report(title: str, offenders: list[str]) -> str:
    return f"{title} ({len(offenders)}):\n  " + "\n  ".join(offenders)


# -- the heavy libraries -------------------------------------------------------------------------

def test_core_imports_no_qt_no_pyqtgraph_no_litellm():
    offenders = [imp.where() for imp in all_imports("core")
                 if any(t.split(".")[0] in HEAVY for t in imp.targets)]
    assert not offenders, report("workbench.core imports a heavy library", offenders)


def test_services_use_qtcore_at_most():
    banned = ("PySide6.QtWidgets", "PySide6.QtGui", "pyqtgraph")
    offenders = [imp.where() for imp in all_imports("services")
                 if any(within(t, b) for t in imp.targets for b in banned)]
    assert not offenders, report("workbench.services imports QtWidgets, QtGui or pyqtgraph", offenders)


def test_litellm_is_imported_only_by_the_gateway():
    gateway = PACKAGE / "services" / "llm" / "gateway.py"
    offenders = [imp.where() for imp in all_imports()
                 if imp.path != gateway and any(within(t, "litellm") for t in imp.targets)]
    assert not offenders, report("litellm imported outside the gateway", offenders)


def test_commands_import_only_the_standard_library_at_module_level():
    # Heavy imports happen inside run(), so ``rwb --help`` and Qt-free commands stay light.
    offenders = [imp.where() for imp in all_imports("commands")
                 if not imp.in_function and any(t.split(".")[0] in HEAVY for t in imp.targets)]
    assert not offenders, report("a command imports a heavy library at module level", offenders)


# -- (a) layers: ui -> services -> core ----------------------------------------------------------

ENTRY_POINTS = ("workbench.commands", "workbench.cli", "workbench.__main__")
OUTWARD = {
    "core": ("workbench.services", "workbench.ui", *ENTRY_POINTS),
    "services": ("workbench.ui", *ENTRY_POINTS),
}


@pytest.mark.parametrize("layer", sorted(OUTWARD))
def test_layers_import_nothing_outward(layer):
    offenders = [f"{imp.where()}  -> {t}" for imp in all_imports(layer) for t in imp.targets
                 if any(within(t, outer) for outer in OUTWARD[layer])]
    assert not offenders, report(f"workbench.{layer} imports from {', '.join(OUTWARD[layer])}", offenders)


# -- (b) protocols are independent and pure ------------------------------------------------------

PROTOCOLS_DIR = PACKAGE / "core" / "protocols"
PROTOCOLS = sorted(p.name for p in PROTOCOLS_DIR.iterdir() if (p / "__init__.py").exists() and p.name != "shared")
IMPURE = ("workbench.core.project", "workbench.core.runs", "workbench.core.sim")


def test_every_protocol_package_is_checked():
    assert {"rcp", "findings", "cons", "arm", "echo"} <= set(PROTOCOLS)
    assert (PROTOCOLS_DIR / "shared" / "__init__.py").exists()


def protocol_offenders() -> list[str]:
    offenders = []
    for imp in all_imports("core/protocols"):
        parts = imp.path.relative_to(PROTOCOLS_DIR).parts
        own = parts[0] if len(parts) > 1 else None  # None: protocols/__init__.py itself
        for t in imp.targets:
            if within(t, "workbench.core.protocols") and t.count(".") >= 3:
                other = t.split(".")[3]
                # a protocol may use itself and shared; shared uses no protocol
                if other != own and other != "shared":
                    offenders.append(f"{imp.where()}  -> {t} (protocol {own or '-'} imports protocol {other})")
            elif any(within(t, impure) for impure in IMPURE):
                offenders.append(f"{imp.where()}  -> {t} (protocols are pure: no project, runs or sim)")
    return offenders


def test_protocols_import_no_other_protocol_and_nothing_impure():
    offenders = protocol_offenders()
    assert not offenders, report("workbench.core.protocols: a cross-protocol or impure import", offenders)


# -- (b2) central code never branches on a protocol's name (SPEC §7) -------------------------------

# Modules that may compare with a built-in protocol's name, and why. Central code asks the
# registry and the declarations (validity, report, config fields, record kinds) instead.
NAME_COMPARISONS_ALLOWED = {
    "workbench/core/project/drift.py": "the Drift view is ARM's own results view",
    "workbench/core/project/quadrant.py": "the Quadrant is RCP's own results view",
    "workbench/core/project/arm_import.py": "ARM's trace files, in and out (rwb arm)",
    "workbench/core/sim/scenarios.py": "the scenario bank says what a scenario needs for each protocol it serves",
}
NAME_EXEMPT_DIRS = (PACKAGE / "core" / "protocols", PACKAGE / "ui")  # the protocols' own code; the GUI (its own check)


def builtin_protocol_names() -> set[str]:
    """The built-in protocols' names, less those that are also record kinds (the ``vote``
    control shares its name with a vote on an artifact: central code compares kinds with it)."""
    from workbench.core import registry
    from workbench.core.project.protocol_records import WRITERS

    return {name for name, p in registry.protocols().items() if p.source == "built-in"} - set(WRITERS)


def name_comparisons(tree: ast.Module, names: set[str]) -> Iterator[tuple[int, str]]:
    """Each comparison (``==``, ``!=``, ``in``... and ``match`` cases) with a protocol's name as a
    string literal, alone or in a literal tuple, list or set."""
    def named(node: ast.expr) -> list[str]:
        items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return [i.value for i in items if isinstance(i, ast.Constant) and i.value in names]

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            found = [n for side in (node.left, *node.comparators) for n in named(side)]
        elif isinstance(node, ast.MatchValue):
            found = named(node.value)
        else:
            continue
        if found:
            yield node.lineno, f"{ast.unparse(node)[:90]}  (names {', '.join(sorted(set(found)))})"


def name_offenders() -> list[str]:
    names = builtin_protocol_names()
    offenders = []
    for path in sources():
        rel = path.relative_to(REPO).as_posix()
        if any(path.is_relative_to(d) for d in NAME_EXEMPT_DIRS) or rel in NAME_COMPARISONS_ALLOWED:
            continue
        offenders += [f"{rel}:{line}: {text}" for line, text in name_comparisons(parse(path), names)]
    return offenders


def test_the_name_scan_sees_comparisons_and_only_comparisons():
    tree = ast.parse('if cfg.protocol == "rcp": pass\n'
                     'ok = p in ("arm", "other") or "cons" != q\n'
                     'match name:\n    case "echo": pass\n'
                     'label = {"rcp": "RCP"}.get(name)\n'  # a table keyed by names: not a branch
                     'text = "run rcp first"\nsame = x == "rcpx"\n')
    found = [text.split("  (names ")[1] for _, text in name_comparisons(tree, {"rcp", "arm", "cons", "echo"})]
    assert found == ["rcp)", "arm)", "cons)", "echo)"]


def test_central_code_never_compares_with_a_protocols_name():
    assert {"rcp", "arm", "findings", "cons", "echo"} <= builtin_protocol_names()
    stale = [rel for rel in NAME_COMPARISONS_ALLOWED if not (REPO / rel).exists()]
    assert not stale, f"allowed modules that no longer exist: {stale}"
    offenders = name_offenders()
    assert not offenders, report("a comparison with a protocol's name outside core/protocols and ui "
                                 "(ask the registry or the declaration instead)", offenders)


# -- (c) no import cycles ------------------------------------------------------------------------

def import_graph() -> dict[str, dict[str, list[Import]]]:
    """Module -> module it imports -> the statements that do. Importing ``a.b.c`` also runs the
    ``__init__`` of ``a`` and ``a.b``, so those are edges too, except for the importer's own
    packages: Python initialised them before the importer started. Imports under
    ``if TYPE_CHECKING:`` never run, so they make no edge."""
    graph: dict[str, dict[str, list[Import]]] = {m: defaultdict(list) for m in modules()}
    for imp in all_imports():
        importer = imp.importer
        own = set(ancestors(importer))
        if imp.type_checking:
            continue
        for t in imp.targets:
            if t not in modules():
                continue
            for dep in [*ancestors(t), t]:
                if dep != importer and dep in modules() and (dep == t or dep not in own):
                    graph[importer][dep].append(imp)
    return graph


def strongly_connected(graph: dict[str, dict[str, list]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; the components of more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_strongly_connected_finds_cycles_and_only_cycles():
    graph = {"a": {"b": []}, "b": {"c": []}, "c": {"a": [], "d": []}, "d": {}, "e": {"e": []},
             "f": {"g": []}, "g": {"f": []}}
    assert strongly_connected(graph) == [["a", "b", "c"], ["f", "g"]]
    assert shortest_cycle(graph, {"a", "b", "c"}, "a") == ["a", "b", "c", "a"]
    assert shortest_cycle(graph, {"f", "g"}, "g") == ["g", "f", "g"]


def test_import_graph_counts_package_inits_but_not_the_importers_own():
    graph = import_graph()
    runner = graph["workbench.services.runs.runner"]
    assert "workbench.core.project.store" in runner and "workbench.core.project" in runner
    assert "workbench.services.runs" not in runner and "workbench.services" not in runner


def shortest_cycle(graph: dict[str, dict[str, list]], members: set[str], start: str) -> list[str]:
    """A shortest path start -> ... -> start inside one strongly connected component (BFS)."""
    previous: dict[str, str] = {}
    queue = [start]
    for node in queue:
        for nxt in sorted(graph[node]):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, node, start]
            if nxt in members and nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"{start} is on no cycle")


def test_no_import_cycles_among_workbench_modules():
    graph = import_graph()
    cycles = []
    for component in strongly_connected(graph):
        members = set(component)
        example = " -> ".join(shortest_cycle(graph, members, component[0]))
        edges = [f"    {src} -> {dst}: {imp.where()}" for src in component for dst in sorted(graph[src])
                 if dst in members for imp in graph[src][dst]]
        cycles.append(f"cycle of {len(component)} modules: {', '.join(component)}\n"
                      f"  for example {example}; every import inside it:\n" + "\n".join(edges))
    assert not cycles, report("import cycles (module-level and function-level imports)", cycles)


# -- (d) SQL only in workbench.core.project ------------------------------------------------------

PROJECT_DIR = PACKAGE / "core" / "project"
SQL = re.compile("|".join((
    r"\bSELECT\b.+\bFROM\b",
    r"\bINSERT\s+(OR\s+\w+\s+)?INTO\b",
    r"\bUPDATE\s+\w+\s+SET\b",
    r"\bDELETE\s+FROM\b",
    r"\bCREATE\s+(TABLE|INDEX|TRIGGER)\b",
    r"\bPRAGMA\b",
)), re.IGNORECASE)
SQL_MODULES = ("sqlite3", "sqlite_utils", "workbench.core.project._sql")


def docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring nodes of the module, its classes and its functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def string_literals(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Every string literal but docstrings; an f-string as one text with ``{}`` for each field."""
    skip = docstrings(tree)
    inside_fstrings = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(p.value if isinstance(p, ast.Constant) else "{}" for p in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in skip and id(node) not in inside_fstrings:
            yield node.lineno, node.value


def sql_offenders() -> list[str]:
    offenders: list[tuple[Path, int, str]] = []
    for path in sources():
        if path.is_relative_to(PROJECT_DIR):
            continue
        offenders += [(path, imp.line, f"{imp.where()}  -> {t}") for imp in imports_in(path) for t in imp.targets
                      if any(within(t, m) for m in SQL_MODULES)]
        for line, text in string_literals(parse(path)):
            if SQL.search(text):
                snippet = " ".join(text.split())
                offenders.append((path, line, f"{path.relative_to(REPO)}:{line}: SQL string "
                                              f"{snippet[:90]!r}{'...' if len(snippet) > 90 else ''}"))
    return [text for _, _, text in sorted(offenders)]


def test_the_sql_scan_sees_sql_and_skips_docstrings_and_prose():
    tree = ast.parse('"""SELECT x FROM y in a docstring."""\n'
                     'def f():\n    """PRAGMA in a docstring."""\n'
                     '    q = f"SELECT {cols} FROM runs WHERE id = ?"\n'
                     '    p = "pragma user_version"\n    n = "insert into calls"\n    ok = "Run selected."\n')
    hits = [text for _, text in string_literals(tree) if SQL.search(text)]
    assert hits == ["SELECT {} FROM runs WHERE id = ?", "pragma user_version", "insert into calls"]


def test_no_sql_outside_the_project_package():
    offenders = sql_offenders()
    assert not offenders, report("SQL outside workbench/core/project (an sqlite import or an SQL string)",
                                 offenders)


# -- what a real import loads --------------------------------------------------------------------

def loaded_heavy_modules(code: str) -> list[str]:
    probe = code + (
        "\nimport sys, json\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_whole_core_loads_no_qt_and_no_litellm():
    code = (
        "import importlib, pkgutil, workbench.core\n"
        "for m in pkgutil.walk_packages(workbench.core.__path__, 'workbench.core.'):\n"
        "    importlib.import_module(m.name)\n"
    )
    assert loaded_heavy_modules(code) == []


def test_cli_classify_and_project_commands_load_no_qt_and_no_litellm(tmp_path):
    rcp = tmp_path / "rcp.json"
    rcp.write_text(json.dumps({
        "clusters": [{"name": "a", "agents": ["a1", "a2"]}, {"name": "c", "agents": ["c1", "c2"]}],
        "artifacts": [{"id": "w1", "author": "a1", "votes": {"a2": 1, "c1": 1, "c2": 0}}],
    }))
    project = tmp_path / "p.rwb"
    code = (
        "import contextlib, io\n"
        "from workbench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['classify', 'rcp', {str(rcp)!r}]) == 0\n"
        f"    assert main(['new', {str(project)!r}]) == 0\n"
        f"    assert main(['info', {str(project)!r}]) == 0\n"
        f"    assert main(['echo', 'marker']) == 0\n"
    )
    assert loaded_heavy_modules(code) == []


def test_a_simulated_run_from_the_cli_loads_no_qt_and_no_litellm(tmp_path):
    sample = REPO / "sample_runs" / "rcp-sim.json"
    code = (
        "import contextlib, io\n"
        "from workbench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['run', {str(sample)!r}, '--project', {str(tmp_path / 'p.rwb')!r}, '--quiet']) == 0\n"
    )
    assert loaded_heavy_modules(code) == []
