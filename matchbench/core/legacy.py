"""Names from before the family layout (issue #29, commit f3d1b75), and what they are now.

The move gave most modules a new dotted path (``matchbench.solvers.cpu.mcm_numba`` is
now ``matchbench.families.mcm.ref_numba``) and moved a few names out of their module on
their own (the MCM dataset functions now live in ``matchbench.families.mcm.datasets``).
Those paths were part of three things kept outside the code, and this module is the one
table that lets each keep working:

- **task ids and instance keys** (:func:`matchbench.runner.plan.task_id`,
  :func:`matchbench.datasets.instance_key`): they hash a solver's or a dataset
  function's *identity*, :func:`frozen_name`, which is its spelling before the move
  where it had one. Ids of runs made before the move, result rows' ``instance_key`` and
  the files of the disk cache (named by the key) therefore stay what they were;
- **configs** written with the old ``_target_`` spellings (:func:`upgrade_target`,
  :func:`upgrade_name`): they still resolve, with one :class:`FutureWarning` naming the
  new spelling, until the release after next drops this table's use for them;
- **disk-cache files** whose header ``kind`` names the instance class by its old module
  (:func:`current_kind`): read quietly with the class's new home.

A later move adds its renames here: a module or name moved again has its right-hand side
rewritten (the left-hand side, the spelling ids were first hashed under, stays); one
moved for the first time gets a new entry. Nothing in this module imports the modules
it names.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MOVED_MODULES",
    "MOVED_NAMES",
    "current_kind",
    "current_name",
    "frozen_name",
    "frozen_targets",
    "upgrade_name",
    "upgrade_target",
]

#: Old module -> new module: every name of the old module (not in :data:`MOVED_NAMES`)
#: is the same name in the new one.
MOVED_MODULES: Mapping[str, str] = {
    "matchbench.problems.base": "matchbench.core.problem",
    "matchbench.solvers.base": "matchbench.core.solver",
    "matchbench.threads": "matchbench.core.params",
    "matchbench.problems.bipartite": "matchbench.graphs.bipartite",
    "matchbench.datasets.mtx": "matchbench.graphs.mtx",
    "matchbench.datasets.suitesparse": "matchbench.graphs.suitesparse",
    "matchbench.datasets.generators": "matchbench.graphs.generators",
    "matchbench.solvers.gpu.kernels": "matchbench.gpu.kernels",
    "matchbench.solvers.gpu.common": "matchbench.gpu.common",
    "matchbench.problems.mcm": "matchbench.families.mcm.problem",
    "matchbench.solvers.cpu.cheap": "matchbench.families.mcm.cheap",
    "matchbench.solvers.cpu.mcm_igraph": "matchbench.families.mcm.ref_igraph",
    "matchbench.solvers.cpu.mcm_numba": "matchbench.families.mcm.ref_numba",
    "matchbench.solvers.cpu.mcm_scipy": "matchbench.families.mcm.ref_scipy",
    "matchbench.solvers.gpu.apfb": "matchbench.families.mcm.apfb",
    "matchbench.solvers.gpu.gpr": "matchbench.families.mcm.gpr",
    "matchbench.solvers.gpu.mcm_auto": "matchbench.families.mcm.auto",
    "matchbench.solvers.gpu.mcm_init": "matchbench.families.mcm.init_gpu",
    "matchbench.problems.lap": "matchbench.families.lap.problem",
    "matchbench.datasets.lap": "matchbench.families.lap.datasets",
    "matchbench.solvers.cpu.lap_ref": "matchbench.families.lap.refs",
    "matchbench.solvers.gpu.hungarian": "matchbench.families.lap.hungarian",
    "matchbench.solvers.gpu.lap_batch": "matchbench.families.lap.batch_gpu",
    "matchbench.problems.wmatch": "matchbench.families.wmatch.problem",
    "matchbench.datasets.wmatch": "matchbench.families.wmatch.datasets",
    "matchbench.solvers.cpu.wmatch_ref": "matchbench.families.wmatch.refs",
    "matchbench.solvers.gpu.suitor": "matchbench.families.wmatch.suitor_gpu",
    "matchbench.problems.smarriage": "matchbench.families.smarriage.problem",
    "matchbench.datasets.prefs": "matchbench.families.smarriage.datasets",
    "matchbench.solvers.cpu.sm_ref": "matchbench.families.smarriage.refs",
    "matchbench.solvers.gpu.mw_gpu": "matchbench.families.smarriage.mw_gpu",
    "matchbench.problems.mwpm": "matchbench.families.mwpm.problem",
    "matchbench.datasets.complete": "matchbench.families.mwpm.datasets",
    "matchbench.solvers.cpu.mwpm_init": "matchbench.families.mwpm.init",
    "matchbench.solvers.cpu.roma": "matchbench.families.mwpm.roma",
    "matchbench.solvers.gpu.roma": "matchbench.families.mwpm.roma_gpu",
    "matchbench.problems.community": "matchbench.families.community.problem",
    "matchbench.datasets.community": "matchbench.families.community.datasets",
    "matchbench.solvers.cpu.louvain": "matchbench.families.community.louvain",
    "matchbench.solvers.gpu.louvain": "matchbench.families.community.louvain_gpu",
}

_MCM_DATASETS = "matchbench.families.mcm.datasets"

#: Old dotted name -> new dotted name, for names that did not follow their module: the
#: MCM dataset functions (the shared generators and readers stayed untagged in
#: ``matchbench.graphs``; the tagged ``_target_`` functions are the MCM family's now),
#: the smoke set, and the weighted graph model (now shared in ``matchbench.graphs``).
#: Every name here is a module-level name of the module before its last dot.
MOVED_NAMES: Mapping[str, str] = {
    **{
        f"matchbench.datasets.generators.{fn}": f"{_MCM_DATASETS}.{fn}"
        for fn in ("kronecker", "delaunay", "rgg", "grid", "road", "erdos_renyi")
    },
    "matchbench.datasets.mtx.load": f"{_MCM_DATASETS}.mtx_file",
    "matchbench.datasets.suitesparse.load": f"{_MCM_DATASETS}.suitesparse_matrix",
    "matchbench.datasets.smoke": f"{_MCM_DATASETS}.smoke",
    "matchbench.datasets.smoke_names": f"{_MCM_DATASETS}.smoke_names",
    "matchbench.datasets.SMOKE_DIR": f"{_MCM_DATASETS}.SMOKE_DIR",
    "matchbench.datasets.wmatch.uniform_weights": "matchbench.graphs.weighted.uniform_weights",
    **{
        f"matchbench.problems.wmatch.{name}": f"matchbench.graphs.weighted.{name}"
        for name in ("WeightedGraph", "edge_order", "edge_order_key", "precedes")
    },
}

_OLD_MODULES = {new: old for old, new in MOVED_MODULES.items()}
_OLD_NAMES = {new: old for old, new in MOVED_NAMES.items()}


def _split(name: str, modules: Mapping[str, str]) -> tuple[str, str] | None:
    """(the longest key of ``modules`` that ``name`` is or lies in, the rest: ``.attr``)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        if module in modules:
            return module, name[len(module) :]
    return None


@functools.lru_cache(maxsize=4096)  # a pure function of the name; a plan asks per task
def current_name(name: str) -> str | None:
    """The spelling since the move of a dotted name spelled as before it.

    Returns
    -------
    str or None
        None when ``name`` is no spelling from before the move (a current name, or one
        that never was).

    Examples
    --------
    >>> current_name("matchbench.solvers.cpu.mcm_numba.HopcroftKarp")
    'matchbench.families.mcm.ref_numba.HopcroftKarp'
    >>> current_name("matchbench.datasets.generators.kronecker")
    'matchbench.families.mcm.datasets.kronecker'
    >>> current_name("matchbench.families.mcm.ref_numba.HopcroftKarp") is None
    True
    """
    if name in MOVED_NAMES:
        return MOVED_NAMES[name]
    hit = _split(name, MOVED_MODULES)
    return None if hit is None else MOVED_MODULES[hit[0]] + hit[1]


@functools.lru_cache(maxsize=4096)
def frozen_name(name: str) -> str:
    """The identity of a solver class or dataset function, as ids and keys hash it.

    Its dotted path before the move where it had one, whichever spelling ``name`` uses;
    otherwise ``name`` itself. A stored spelling, not an import path: it is never
    imported, and stays the same through later moves (see the module docstring).

    Examples
    --------
    >>> frozen_name("matchbench.families.mcm.ref_numba.HopcroftKarp")
    'matchbench.solvers.cpu.mcm_numba.HopcroftKarp'
    >>> frozen_name("matchbench.solvers.cpu.mcm_numba.HopcroftKarp")
    'matchbench.solvers.cpu.mcm_numba.HopcroftKarp'
    >>> frozen_name("matchbench.families.mcm.datasets.kronecker")
    'matchbench.datasets.generators.kronecker'
    >>> frozen_name("matchbench.graphs.generators.kronecker")  # untagged, new as a target
    'matchbench.graphs.generators.kronecker'
    >>> frozen_name("my_lab.solvers.Mine")
    'my_lab.solvers.Mine'
    """
    new = current_name(name) or name
    old = _OLD_NAMES.get(new)
    if old is None:
        hit = _split(new, _OLD_MODULES)
        old = None if hit is None else _OLD_MODULES[hit[0]] + hit[1]
    # Only a name the old spelling leads back to has it: the old spelling of
    # graphs.generators.kronecker would be the one of the tagged MCM function.
    return old if old is not None and current_name(old) == new else new


#: Leaves of plain config data, told apart before the (slow) ABC check for a Mapping.
_SCALARS = (str, int, float, bool, type(None))


def _map_targets(obj: Any, rename: Any) -> Any:
    if type(obj) in _SCALARS:
        return obj
    if type(obj) is dict or isinstance(obj, Mapping):
        out = {k: _map_targets(v, rename) for k, v in obj.items()}
        target = out.get("_target_")
        if isinstance(target, str):
            out["_target_"] = rename(target)
        return out
    if isinstance(obj, list | tuple):
        return [_map_targets(v, rename) for v in obj]
    return obj


#: Options renamed with the family layout (one name for a CUDA block size,
#: ``threads_per_block``), per class by its current dotted name: ``{new option: [old
#: options it stands for]}``. The old options stay accepted (null in the YAML) for one
#: release; task ids hash the old spelling, so that pre-move runs resume.
RENAMED_OPTIONS: dict[str, dict[str, list[str]]] = {
    "matchbench.families.mcm.apfb.APFB": {"threads_per_block": ["ct_threads", "mt_threads"]},
    "matchbench.families.mcm.apfb.APsB": {"threads_per_block": ["ct_threads", "mt_threads"]},
    "matchbench.families.mcm.gpr.GPR": {"threads_per_block": ["threads"]},
    "matchbench.families.lap.batch_gpu.HungarianBatchGPU": {"threads_per_block": ["threads"]},
    "matchbench.families.mcm.init_gpu.CheapGPU": {"threads_per_block": ["threads"]},
}


def _freeze_options(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` with renamed options spelled as before (see :data:`RENAMED_OPTIONS`): an old
    option given explicitly wins, a null one is dropped, the new value fills the rest."""
    target = cfg.get("_target_")
    renames = RENAMED_OPTIONS.get(current_name(target) or target) if isinstance(target, str) else None
    if not renames:
        return cfg
    out = dict(cfg)
    for new, olds in renames.items():
        if new not in out:
            continue
        value = out.pop(new)
        for old in olds:
            if out.get(old) is None:
                out[old] = value
    return out


def frozen_targets(obj: Any) -> Any:
    """A copy of plain config data with every ``_target_`` (nested ones too) replaced by
    its :func:`frozen_name`, and renamed options by their old spelling
    (:data:`RENAMED_OPTIONS`): the form task ids and instance keys hash.

    Mappings become dicts and tuples lists (as JSON would have them); other values are
    kept as they are.

    >>> frozen_targets({"_target_": "matchbench.families.mcm.gpr.GPR", "threads_per_block": None,
    ...                 "threads": None, "k": 0.7})
    {'_target_': 'matchbench.solvers.gpu.gpr.GPR', 'threads': None, 'k': 0.7}
    """
    # One pass, bottom up: a mapping's values first, then its renamed options (looked up
    # by its own target as given), then its own ``_target_``. (Two passes, one for the
    # options and one for the targets, were a third of a million-task plan's time.)
    if type(obj) in _SCALARS:
        return obj
    if type(obj) is dict or isinstance(obj, Mapping):
        out = _freeze_options({k: frozen_targets(v) for k, v in obj.items()})
        target = out.get("_target_")
        if isinstance(target, str):
            out["_target_"] = frozen_name(target)
        return out
    if isinstance(obj, list | tuple):
        return [frozen_targets(v) for v in obj]
    return obj


def upgrade_name(name: str, *, stacklevel: int = 2) -> str:
    """``name``, or its :func:`current_name` with a :class:`FutureWarning` when it is
    spelled as before the move.

    The warning is one line naming both spellings; Python shows it once per process and
    old name (the default warning filter).
    """
    new = current_name(name)
    if new is None:
        return name
    warnings.warn(
        f"_target_ {name} is the name from before the family layout (#29); "
        f"use {new} (the old name will stop working in the next release)",
        FutureWarning,
        stacklevel=stacklevel,
    )
    return new


def upgrade_target(cfg: Any) -> Any:
    """A copy of a config (plain data) with every old ``_target_`` spelling, nested ones
    too, replaced by its new one (:func:`upgrade_name`: a FutureWarning each).

    What the planner runs over the ``algorithm``, ``init`` and ``dataset`` sections of a
    job before instantiating anything, so that configs written before the move keep
    working for one release.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     upgrade_target({"_target_": "matchbench.solvers.gpu.apfb.APFB", "variant": "bfs"})
    {'_target_': 'matchbench.families.mcm.apfb.APFB', 'variant': 'bfs'}
    """
    return _map_targets(cfg, upgrade_name)


def current_kind(kind: str) -> str:
    """The ``module:Class`` of a disk-cache file's ``kind`` header, in today's spelling.

    Examples
    --------
    >>> current_kind("matchbench.problems.bipartite:BipartiteGraph")
    'matchbench.graphs.bipartite:BipartiteGraph'
    >>> current_kind("matchbench.problems.wmatch:WeightedGraph")
    'matchbench.graphs.weighted:WeightedGraph'
    >>> current_kind("matchbench.graphs.bipartite:BipartiteGraph")
    'matchbench.graphs.bipartite:BipartiteGraph'
    """
    module, sep, qualname = kind.partition(":")
    if not sep:
        return kind
    moved = MOVED_NAMES.get(f"{module}.{qualname}")
    if moved is not None:
        new_module, _, name = moved.rpartition(".")
        return f"{new_module}:{name}"
    return f"{MOVED_MODULES.get(module, module)}:{qualname}"
