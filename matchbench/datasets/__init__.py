"""Datasets: Matrix Market files, the SuiteSparse collection, synthetic generators.

A dataset config (one file of the Hydra ``dataset`` group, resolved to a plain dict)
names either one instance, by a ``_target_`` function and its arguments::

    {"_target_": "matchbench.families.mcm.datasets.kronecker", "scale": 16, "seed": 1,
     "rcp": False}

or a set of them, as ``instances: [spec, ...]``, or many seeded instances of one
generator, as ``many: spec`` with ``count``, ``seed`` and optional ``draw`` (see
:func:`expand`: 10,000 small instances in a config of a few lines, one Hydra job).
:func:`expand` turns a config into a list of instance specs (plain, picklable dicts: one
task each), :func:`load` turns one spec into an instance, and :func:`instance_key` names
a spec by a short stable hash (for result rows and resuming a sweep).

Adding a dataset family takes one function that returns an instance (for the MCM family
a :class:`~matchbench.graphs.bipartite.BipartiteGraph`, for the LAP family a
:class:`~matchbench.families.lap.problem.CostMatrix`), decorated with :func:`dataset` to say
which problem its instances belong to, and one YAML file whose ``_target_`` names it::

    @dataset("mcm", disk_cache=True)
    def kronecker(scale: int, seed: int = 1) -> BipartiteGraph: ...

The function may take a ``data_dir`` argument; :func:`load` passes its own ``data_dir``
to those functions that do. The problem tag lets the planner pair solvers with
instances (:func:`spec_problem`) without loading anything.

``disk_cache=True`` (for generators: deterministic, and slower to run than to read back)
keeps each generated instance in ``<data_dir>/generated/<key>-v<CACHE_FORMAT>.npz``
(:func:`disk_cache_path`), written once by whichever worker makes it first and read by
every later run; the instance's class must then have ``save_npz(path)`` and a classmethod
``load_npz(path)``. Bump :data:`CACHE_FORMAT` when a generator's output changes.
``MATCHBENCH_NO_DISK_CACHE=1`` turns the disk cache off.

The dataset functions live with their families (``matchbench.families.<family>.datasets``;
the MCM family's wrap the shared readers and generators of :mod:`matchbench.graphs`). A
``_target_`` spelled as before the family layout (#29) still works, with a
:class:`FutureWarning` naming the new spelling (:mod:`matchbench.core.legacy`), and
:func:`instance_key` is the same for either spelling as before the move.

This package is the public face of four modules, one job each; import from here:

- :mod:`~matchbench.datasets.specs`: configs to instance specs, their keys and labels;
- :mod:`~matchbench.datasets.registry`: the :func:`dataset` tag and what it tells
  (:func:`spec_problem`, :func:`spec_size_hint`), resolving and calling a function;
- :mod:`~matchbench.datasets.disk_cache`: generated instances kept on disk;
- :mod:`~matchbench.datasets.loading`: :func:`load` and the per-process cache.
"""

from __future__ import annotations

from matchbench.core.errors import DatasetError, DatasetWarning
from matchbench.core.paths import default_data_dir, resolve_path
from matchbench.datasets.disk_cache import (
    CACHE_FORMAT,
    NO_DISK_CACHE_ENV,
    disk_cache_path,
    warm_disk_cache,
)
from matchbench.datasets.loading import CACHE_SIZE, clear_cache, load
from matchbench.datasets.registry import dataset, spec_problem, spec_size_hint
from matchbench.datasets.specs import _label as _label  # the planner's import of spec_label
from matchbench.datasets.specs import expand, instance_key, spec_label

__all__ = [
    "CACHE_FORMAT",
    "CACHE_SIZE",
    "DatasetError",
    "DatasetWarning",
    "NO_DISK_CACHE_ENV",
    "clear_cache",
    "dataset",
    "default_data_dir",
    "resolve_path",
    "disk_cache_path",
    "expand",
    "instance_key",
    "load",
    "spec_label",
    "spec_problem",
    "spec_size_hint",
    "warm_disk_cache",
]
