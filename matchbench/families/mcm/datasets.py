"""The MCM family's datasets: bipartite graphs from generators, files and the smoke set.

The graph constructions live in the shared :mod:`matchbench.graphs` layer (the weighted
and community families build on them too); this module tags them as MCM datasets, the
names the ``conf/dataset`` files point at. :func:`csr_stack` reads one graph of the
family's bulk file (many graphs in one ``.npz``, the arrays of ``solve_batch``), whose
format :mod:`matchbench.families.mcm.stackfile` defines.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matchbench.core.errors import DatasetError
from matchbench.datasets import dataset, sizes
from matchbench.families.mcm import stackfile
from matchbench.graphs import generators, mtx, suitesparse
from matchbench.graphs.bipartite import BipartiteGraph
from matchbench.graphs.mtx import read

__all__ = [
    "SMOKE_DIR", "csr_stack", "delaunay", "erdos_renyi", "grid", "kronecker", "mtx_file",
    "read", "rgg", "road", "smoke", "smoke_names", "suitesparse_matrix",
]

SMOKE_DIR = Path(__file__).resolve().parent / "smoke"


def _mcm(
    fn: Callable[..., Any], *, disk_cache: bool = False, size_hint: Callable[..., float] | None = None
) -> Callable[..., Any]:
    """``fn`` as an MCM dataset function of this module (the shared function stays untagged)."""

    @functools.wraps(fn)
    def tagged(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    tagged.__module__ = __name__
    return dataset("mcm", disk_cache=disk_cache, size_hint=size_hint)(tagged)


kronecker = _mcm(generators.kronecker, disk_cache=True, size_hint=lambda scale, edge_factor=16, **_: sizes.scaled(scale, edge_factor))
delaunay = _mcm(generators.delaunay, disk_cache=True, size_hint=lambda scale, **_: sizes.scaled(scale))
rgg = _mcm(generators.rgg, disk_cache=True, size_hint=lambda scale, **_: sizes.scaled(scale))
#: Many small graphs of a batch at once, each equal to its own call (``run.batch``).
rgg.matchbench_bulk = generators.rgg_bulk  # type: ignore[attr-defined]
grid = _mcm(generators.grid, disk_cache=True, size_hint=lambda scale, **_: sizes.scaled(scale))
road = _mcm(generators.road, disk_cache=True, size_hint=lambda scale, **_: sizes.scaled(scale))
erdos_renyi = _mcm(
    generators.erdos_renyi, disk_cache=True,
    size_hint=lambda scale, avg_degree=8.0, **_: sizes.scaled(scale, avg_degree),
)
#: ``dataset=mtx``: any Matrix Market file as the bipartite graph rows x columns.
mtx_file = _mcm(mtx.load)
#: ``dataset=suitesparse``: a SuiteSparse matrix, downloaded and cached.
suitesparse_matrix = _mcm(suitesparse.load)
#: ``dataset=mcm_stack``: graph ``seed`` of a bulk file (``.npz`` of ``indptr``, ``indices``,
#: ``shapes``), sized from the file's shapes and pointers; its bulk hook opens a file once
#: for all the graphs of a batch.
csr_stack = _mcm(stackfile.csr_stack, size_hint=stackfile.graph_bytes)
csr_stack.matchbench_bulk = stackfile.csr_stack_bulk  # type: ignore[attr-defined]


def smoke_names() -> list[str]:
    """The names (file stems) of the instances in ``matchbench/families/mcm/smoke/``."""
    return sorted(p.name[: -len(".mtx")] for p in SMOKE_DIR.glob("*.mtx"))


@dataset("mcm")
def smoke(name: str | None = None) -> BipartiteGraph:
    """One of the tiny instances shipped in the package (``smoke/README.md`` lists them).

    Parameters
    ----------
    name : str
        File stem in ``matchbench/families/mcm/smoke/``; required (the default only turns a
        config without ``name`` into a message that lists the choices).

    Raises
    ------
    DatasetError
        For a missing or unknown name.
    """
    names = smoke_names()
    if name is None or name not in names:
        what = "a name is required" if name is None else f"no smoke instance {name!r}"
        raise DatasetError(f"smoke: {what}; available: {', '.join(names)}")
    return read(SMOKE_DIR / f"{name}.mtx", name=name, family="smoke")
