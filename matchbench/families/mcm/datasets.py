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

from matchbench.core.canonical import to_json_each
from matchbench.core.errors import DatasetError
from matchbench.core.stack import InstanceStack
from matchbench.datasets import dataset, sizes
from matchbench.families.mcm import stackfile
from matchbench.graphs import generators, mtx, suitesparse
from matchbench.graphs.bipartite import BipartiteGraph
from matchbench.graphs.mtx import read

__all__ = [
    "SMOKE_DIR", "csr_stack", "delaunay", "erdos_renyi", "grid", "kronecker", "mtx_file",
    "read", "rgg", "rgg_stack", "road", "smoke", "smoke_names", "suitesparse_matrix",
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


def rgg_stack(
    template: dict[str, Any], varying: dict[str, list[Any]], count: int, device: str | None = None
) -> InstanceStack | None:
    """:func:`rgg` for a batch's instances as one
    :class:`~matchbench.core.stack.InstanceStack` (``rgg.matchbench_stack``): the graphs
    of :func:`~matchbench.graphs.generators.rgg_stack` (a
    :class:`~matchbench.graphs.stack.GraphStack`, made on host threads, each graph
    array for array ``rgg(**kwargs)``), with the columns of the one-by-one instances.
    ``template`` holds the arguments the instances share, ``varying`` those that differ
    (``scale``, ``seed``, ``radius_factor``); None for any other varying argument.
    The graphs are made on the host; for a GPU's batch (``device="gpu"``) into pinned
    host memory, whence the solver's upload runs at the bus's speed.
    """
    keys = ("scale", "seed", "radius_factor")
    if set(varying) - set(keys) or set(template) - set(keys) - set(varying) or count < 1:
        return None
    defaults = {"seed": 1, "radius_factor": 0.55}
    cols = []
    for key in keys:
        if key in varying:
            values = list(varying[key])
            if len(values) != count:
                return None
        elif key in template:
            values = [template[key]] * count
        elif key in defaults:
            values = [defaults[key]] * count
        else:  # no scale: each instance's own call says so
            return None
        cols.append(values)
    graphs = generators.rgg_stack(*cols, empty=_pinned_empty() if device == "gpu" else None)
    # instance_params: the JSON of rgg's params, one template per (scale, radius_factor)
    params_json: list[str] = [""] * count
    groups: dict[tuple[Any, Any], list[int]] = {}
    for k, key in enumerate(zip(cols[0], cols[2], strict=True)):
        groups.setdefault(key, []).append(k)
    for members in groups.values():
        texts = to_json_each(graphs.params(members[0]), "seed", [cols[1][k] for k in members])
        for k, text in zip(members, texts, strict=True):
            params_json[k] = text
    columns = {
        "instance": list(graphs.names),
        "family": "rgg",
        "n_rows": graphs.shapes[:, 0],
        "n_cols": graphs.shapes[:, 1],
        "n_edges": graphs.n_edges,
        "instance_params": params_json,
        "rcp": False,
        "instance_bytes": graphs.nbytes,
    }
    return InstanceStack("mcm", graphs, count, columns, graphs.graph)


rgg.matchbench_stack = rgg_stack  # type: ignore[attr-defined]


def _pinned_empty() -> Callable[..., Any] | None:
    """``cupyx.empty_pinned`` (CuPy's pool of pinned host memory), or None without CuPy."""
    try:
        import cupyx
    except Exception:
        return None
    return cupyx.empty_pinned
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
#: A batch's graphs of the file as one stack (``run.batch``; ``matchbench.core.stack``).
csr_stack.matchbench_stack = stackfile.csr_stack_stack  # type: ignore[attr-defined]


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
