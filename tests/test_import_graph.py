"""The import graph of ``matchbench/`` and ``hydra_plugins/`` runs one way (issue #29).

Every module is parsed with :mod:`ast` (nothing is imported); every ``import x`` and
``from x import y`` counts, at module level or inside a function, relative ones resolved.
Each module sits in one layer of :data:`LAYERS`, lowest first:

====  ========  ==========================================================================
rank  layer     packages
====  ========  ==========================================================================
0     core      ``matchbench`` (the root package: its version only), ``matchbench.core``:
                the contracts (Problem, Verification, BaseSolver, params, errors, paths)
1     shared    ``matchbench.graphs``, ``matchbench.gpu``, ``matchbench.datasets``, ``matchbench.external``,
                ``matchbench.data``: graph models and readers, GPU plumbing, the dataset
                registry, data files
2     families  ``matchbench.families.<family>``: one problem family each
3     results   ``matchbench.results``: the schema, Parquet I/O, statistics, the gate
4     report    ``matchbench.report``: views of result rows
5     runner    ``matchbench.runner``: plan, Dask execution, timing (it writes the
                dashboard of a finished run, so it sits above the report)
6     entry     ``matchbench.app``, ``matchbench.cli``, ``matchbench.__main__``,
                ``hydra_plugins``: the commands
====  ========  ==========================================================================

The rules (:func:`check`):

- a module imports its own layer and those below it, never one above: so core imports
  nothing above core and graphs/gpu/datasets import no family;
- only a family imports a family module: runner, results, report and the commands sit
  above the families but find them at run time, by name (``get_problem``, the
  ``@dataset`` tag, Hydra ``_target_`` strings), never by an import;
- a family imports no other family;
- no module imports a private name (``_name``, or a private module) of another package,
  neither by ``from m import _name`` nor as ``alias._name`` of a module it imported: what a
  package shares is public. A package is a family (``matchbench.families.mcm``), another
  subpackage of ``matchbench`` (``matchbench.graphs``), a module directly under
  ``matchbench``, or a ``hydra_plugins`` plugin;
- every import of a ``matchbench``/``hydra_plugins`` name resolves to a module of the tree;
- the imports that run when a module is imported (not those inside functions, nor under
  ``if TYPE_CHECKING:``) form no cycle.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: Top-level packages whose modules are checked (folders under the repository root).
PACKAGES = ("matchbench", "hydra_plugins")

#: (layer, packages), lowest first; see the module docstring.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("matchbench.core",)),
    ("shared", ("matchbench.graphs", "matchbench.gpu", "matchbench.datasets", "matchbench.data", "matchbench.external")),
    ("families", ("matchbench.families",)),
    ("results", ("matchbench.results",)),
    ("report", ("matchbench.report",)),
    ("runner", ("matchbench.runner",)),
    ("entry", ("matchbench.app", "matchbench.cli", "matchbench.__main__", "hydra_plugins")),
)

#: Public re-export modules (``import matchbench.lap``): each re-exports one family's
#: public API and counts as a module of that family, so it sits in the families layer,
#: may import only its own family (and the layers below), and no shared layer, other
#: family, results, report or runner module may import it.
PUBLIC = {"matchbench.lap": "lap", "matchbench.mcm": "mcm"}

#: Modules placed by their exact name rather than as a package prefix.
EXACT = {"matchbench": "core", **{m: "families" for m in PUBLIC}}

_RANK = {name: rank for rank, (name, _) in enumerate(LAYERS)}
_FAMILIES = "matchbench.families"


# --------------------------------------------------------------------------- the checker


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` (a module of the tree) imports ``target`` at ``path:line``.

    ``names`` are the names taken from ``target`` (``from target import a, b``), empty for
    ``import target``; ``runtime`` is False inside a function or ``if TYPE_CHECKING:``.
    """

    source: str
    target: str
    path: str
    line: int
    names: tuple[str, ...] = ()
    runtime: bool = True


def module_files(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Module name -> file, for every ``.py`` file under ``root/<package>``."""
    out = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import node with whether it runs at import time of the module."""

    def walk(node: ast.AST, runtime: bool) -> Iterator[tuple[ast.AST, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, runtime
            inner = runtime
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = False
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                yield from walk(ast.Module(body=child.body, type_ignores=[]), False)
                yield from walk(ast.Module(body=child.orelse, type_ignores=[]), runtime)
                continue
            yield from walk(child, inner)

    yield from walk(tree, True)


def _base(module: str, is_package: bool, level: int) -> str:
    """The package a relative import of ``level`` dots in ``module`` starts from."""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    return ".".join(parts[: len(parts) - (level - 1)])


def _internal(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of dotted ``name`` that is a module of the tree."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        head = ".".join(parts[:k])
        if head in modules:
            return head
    return None


def edges(root: Path, packages: Iterable[str] = PACKAGES) -> tuple[list[Edge], list[str]]:
    """The imports of every module under ``root``, and the unresolved internal ones."""
    modules = module_files(root, packages)
    out: list[Edge] = []
    unresolved: list[str] = []
    for module, path in modules.items():
        rel = str(path.relative_to(root))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        is_package = path.name == "__init__.py"
        for node, runtime in _imports(tree):
            if isinstance(node, ast.Import):
                pairs = [(a.name, ()) for a in node.names]
            else:
                start = _base(module, is_package, node.level) if node.level else ""
                base = ".".join(p for p in (start, node.module or "") if p)
                pairs = []
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    pairs.append((sub, ()) if sub in modules else (base, (a.name,)))
            for target, names in pairs:
                if not _internal(target):
                    continue
                if target not in modules:
                    unresolved.append(
                        f"{rel}:{node.lineno}: {module} imports {target}: no such module"
                    )
                    continue
                out.append(Edge(module, target, rel, node.lineno, names, runtime))
    return out, unresolved


def layer(module: str) -> str | None:
    """The layer of ``module`` (:data:`LAYERS`), or None where it has none."""
    if module in EXACT:
        return EXACT[module]
    best, found = -1, None
    for name, prefixes in LAYERS:
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), name
    return found


def family(module: str) -> str | None:
    """``mcm`` for ``matchbench.families.mcm.apfb``; None outside a family."""
    if module in PUBLIC:
        return PUBLIC[module]
    parts = module.split(".")
    if module.startswith(_FAMILIES + ".") and len(parts) > 2:
        return parts[2]
    return None


def unit(module: str) -> str:
    """The package a module belongs to, for the private-name rule (module docstring)."""
    parts = module.split(".")
    if family(module):
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_attributes(root: Path, module: str, path: Path, modules: dict[str, Path]):
    """``alias._name`` uses in ``module`` where ``alias`` is an imported module of another
    package: ``(line, target module, name)``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    bound: dict[str, str] = {}  # local name -> module it stands for
    for node, _ in _imports(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    bound[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    bound[top] = top
        else:
            start = _base(module, is_package, node.level) if node.level else ""
            base = ".".join(p for p in (start, node.module or "") if p)
            for a in node.names:
                if f"{base}.{a.name}" in modules:
                    bound[a.asname or a.name] = f"{base}.{a.name}"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain = []
        cur: ast.expr = node
        while isinstance(cur, ast.Attribute):
            chain.append(cur.attr)
            cur = cur.value
        if not isinstance(cur, ast.Name) or cur.id not in bound:
            continue
        dotted = ".".join([bound[cur.id], *reversed(chain)]).split(".")
        target = _known(".".join(dotted), modules)
        if target is None or len(dotted) <= target.count(".") + 1:
            continue
        # The name right after the module; a nested chain yields it again (the caller
        # keeps one).
        name = dotted[target.count(".") + 1]
        if _private(name) and unit(target) != unit(module):
            yield node.lineno, target, name


def check(root: Path, packages: Iterable[str] = PACKAGES) -> list[str]:
    """Every violation of the rules (module docstring) under ``root``, one line each:
    ``path:line: source -> target: why``."""
    packages = tuple(packages)
    modules = module_files(root, packages)
    found, problems = edges(root, packages)
    for module in modules:
        if layer(module) is None:
            problems.append(f"{modules[module].relative_to(root)}: {module} has no layer")
    for e in found:
        head = f"{e.path}:{e.line}: {e.source} -> {e.target}"
        src, dst = layer(e.source), layer(e.target)
        if src is None or dst is None:
            continue
        if _RANK[dst] > _RANK[src]:
            problems.append(f"{head}: {src} imports {dst}, a higher layer")
        elif dst == "families" and src != "families":
            problems.append(f"{head}: {src} imports a family module")
        fs, ft = family(e.source), family(e.target)
        if fs and ft and fs != ft:
            problems.append(f"{head}: family {fs} imports family {ft}")
        if unit(e.source) != unit(e.target):
            private = [n for n in e.names if _private(n)]
            private += [p for p in e.target.split(".") if _private(p)][:1]
            if private:
                problems.append(f"{head}: imports private {', '.join(private)} of another package")
    seen: set[tuple[str, int, str, str]] = set()
    for module, path in modules.items():
        for line, target, name in _private_attributes(root, module, path, modules):
            key = (module, line, target, name)
            if key in seen:
                continue
            seen.add(key)
            rel = path.relative_to(root)
            problems.append(
                f"{rel}:{line}: {module} -> {target}: uses private {name} of another package"
            )
    problems += [f"import cycle: {' -> '.join(c)}" for c in cycles(found)]
    return problems


def cycles(found: Iterable[Edge]) -> list[list[str]]:
    """One cycle per strongly connected component of the import-time edges (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for e in found:
        if e.runtime and e.source != e.target:
            graph.setdefault(e.source, set()).add(e.target)
            graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(_cycle_in(graph, set(comp)))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                strong(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def _cycle_in(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """A shortest cycle through the smallest module of a strongly connected component."""
    start = min(comp)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & comp):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [*reversed(path), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return sorted(comp)


# --------------------------------------------------------------------------- the tree


def test_every_module_has_a_layer():
    missing = [m for m in module_files(REPO) if layer(m) is None]
    assert not missing, f"modules without a layer (add them to LAYERS): {missing}"


def test_import_graph_runs_one_way():
    problems = check(REPO)
    assert not problems, "import graph violations:\n" + "\n".join(problems)


# --------------------------------------------------------------------------- mutation test


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


_CLEAN = {
    "matchbench/__init__.py": "",
    "matchbench/core/__init__.py": "",
    "matchbench/core/errors.py": "class DatasetError(ValueError): ...\n",
    "matchbench/graphs/__init__.py": "",
    "matchbench/graphs/mtx.py": (
        "from matchbench.core.errors import DatasetError\n"
        "def read_header(p): ...\n"
        "def _helper(p): ...\n"
    ),
    "matchbench/families/__init__.py": "",
    "matchbench/families/mcm/__init__.py": "",
    "matchbench/families/mcm/problem.py": "from matchbench.graphs.mtx import read_header\n",
    "matchbench/families/mcm/_util.py": "def _mine(): ...\n",
    "matchbench/families/mcm/datasets.py": (
        "from . import problem\nfrom ._util import _mine\n"
        "def f():\n    from matchbench.graphs import mtx\n    return mtx.read_header\n"
    ),
    "matchbench/families/lap/__init__.py": "",
    "matchbench/families/lap/problem.py": "import matchbench.graphs.mtx as M\n",
    "matchbench/results/__init__.py": "",
    "matchbench/results/stats.py": "import numpy as np\n",
    "matchbench/report/__init__.py": "",
    "matchbench/report/build.py": "from matchbench.results import stats\n",
    "matchbench/runner/__init__.py": "",
    "matchbench/runner/execute.py": "def f():\n    from matchbench.report.build import x\n",
    "matchbench/app.py": "from matchbench.runner import execute\n",
}


def test_checker_passes_a_clean_tree(tmp_path):
    assert check(_tree(tmp_path, _CLEAN)) == []


@pytest.mark.parametrize(
    ("path", "text", "expected"),
    [
        (
            "matchbench/core/problem.py",
            "def f():\n    from matchbench.families.mcm import problem\n",
            "matchbench/core/problem.py:2: matchbench.core.problem -> "
            "matchbench.families.mcm.problem: core imports families, a higher layer",
        ),
        (
            "matchbench/graphs/weighted.py",
            "from ..families.lap.problem import M\n",
            "matchbench.graphs.weighted -> matchbench.families.lap.problem: shared imports "
            "families",
        ),
        (
            "matchbench/families/lap/refs.py",
            "from matchbench.families.mcm import problem\n",
            "matchbench.families.lap.refs -> matchbench.families.mcm.problem: family lap "
            "imports family mcm",
        ),
        (
            "matchbench/families/lap/refs.py",
            "from matchbench.graphs.mtx import _helper\n",
            "matchbench.families.lap.refs -> matchbench.graphs.mtx: imports private _helper",
        ),
        (
            "matchbench/families/lap/refs.py",
            "from matchbench.families.mcm._util import _mine\n",
            "matchbench.families.lap.refs -> matchbench.families.mcm._util: family lap imports",
        ),
        (
            "matchbench/families/lap/refs.py",
            "from matchbench.graphs import mtx as M\ny = M._helper\n",
            "matchbench/families/lap/refs.py:2: matchbench.families.lap.refs -> "
            "matchbench.graphs.mtx: uses private _helper of another package",
        ),
        (
            "matchbench/lap.py",
            "from matchbench.families.mcm import problem\n",
            "matchbench.lap -> matchbench.families.mcm.problem: family lap imports family mcm",
        ),
        (
            "matchbench/results/compare.py",
            "def main():\n    import matchbench.families.mcm.problem\n",
            "matchbench.results.compare -> matchbench.families.mcm.problem: results "
            "imports a family module",
        ),
        (
            "matchbench/report/data.py",
            "from matchbench.runner import execute\n",
            "matchbench.report.data -> matchbench.runner.execute: report imports runner",
        ),
        (
            "matchbench/results/store.py",
            "from matchbench.results.gone import x\n",
            "matchbench.results.store imports matchbench.results.gone: no such module",
        ),
        (
            "matchbench/stray.py",
            "",
            "matchbench.stray has no layer",
        ),
        (
            "matchbench/results/schema.py",
            "from matchbench.results.stats import x\n",
            None,  # with the edit of stats.py below: a cycle
        ),
    ],
)
def test_checker_catches_a_planted_bad_edge(tmp_path, path, text, expected):
    files = dict(_CLEAN, **{path: text})
    if expected is None:
        files["matchbench/results/stats.py"] = "from . import schema\n"
        expected = (
            "import cycle: matchbench.results.schema -> matchbench.results.stats -> "
            "matchbench.results.schema"
        )
    problems = check(_tree(tmp_path, files))
    assert any(expected in p for p in problems), problems
    # and nothing else: every line is about the planted module
    planted = ".".join(Path(path).with_suffix("").parts)
    assert all(planted in p for p in problems), problems


def test_function_level_imports_make_no_cycle(tmp_path):
    files = dict(
        _CLEAN,
        **{
            "matchbench/results/schema.py": "def f():\n    from . import stats\n",
            "matchbench/results/stats.py": "from . import schema\n",
        },
    )
    assert check(_tree(tmp_path, files)) == []
