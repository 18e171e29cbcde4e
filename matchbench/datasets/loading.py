"""Loading an instance: :func:`load`, with the instances of a process kept in memory.

An instance is made from its spec once per process (while it is among the last
:data:`CACHE_SIZE` loaded), read from the disk cache where its function's tag asks for
one (:mod:`matchbench.datasets.disk_cache`), or made by its dataset function.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from matchbench.core.errors import DatasetError
from matchbench.core.legacy import upgrade_name
from matchbench.datasets.disk_cache import _make
from matchbench.datasets.specs import _canonical, _label, _plain, _seed

__all__ = ["CACHE_SIZE", "clear_cache", "load"]


#: How many instances :func:`load` keeps per process (an RCP variant counts apart from
#: its original).
CACHE_SIZE = 4


_cache: OrderedDict[Any, Any] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget the instances :func:`load` keeps."""
    with _cache_lock:
        _cache.clear()


def _size() -> int:
    """:data:`CACHE_SIZE` as ``matchbench.datasets.CACHE_SIZE``, its public name, says it
    (setting that name, as tests do, takes effect), and at least 1."""
    import matchbench.datasets as package

    return max(getattr(package, "CACHE_SIZE", CACHE_SIZE), 1)


def _cached(key: Any, make: Callable[[], Any]) -> Any:
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    # Built outside the lock: threads of one worker may load different instances at once.
    value = make()
    with _cache_lock:
        _cache[key] = value
        _cache.move_to_end(key)
        while len(_cache) > _size():
            _cache.popitem(last=False)
    return value


def load(spec: Mapping[str, Any], *, data_dir: str | os.PathLike | None = None) -> Any:
    """The instance a spec names, from a per-process cache when it was loaded recently.

    Parameters
    ----------
    spec : mapping
        One item of :func:`~matchbench.datasets.expand`: ``_target_``, its arguments, ``rcp`` (bool) and
        ``rcp_seed``.
    data_dir : path, optional
        Passed to target functions that take a ``data_dir`` argument (downloaded data);
        also where generated instances are kept (default :func:`~matchbench.core.paths.default_data_dir`).

    Returns
    -------
    object
        What the target returns (for graph families a ``BipartiteGraph``), permuted by
        ``instance.permuted(rcp_seed)`` when ``rcp`` is true. Cached objects are shared
        between calls: do not modify them.

    Raises
    ------
    DatasetError
        For an unknown target or bad parameters, an empty instance, or ``rcp`` on an
        instance type without a ``permuted`` method; errors of the target function
        (themselves ``DatasetError`` for bad data) pass through unchanged.

    Notes
    -----
    When the instance is not in the per-process cache and its function is tagged
    ``@dataset(..., disk_cache=True)``, the unpermuted instance is read from
    :func:`~matchbench.datasets.disk_cache_path` if that file exists, else generated and written there (to a
    temporary name first, then renamed, so that concurrent workers never read half a
    file). A bad cache file is deleted and the instance generated again, and a cache
    that cannot be written is skipped, each with a :class:`DatasetWarning`; neither fails
    the load. ``$MATCHBENCH_NO_DISK_CACHE=1`` bypasses the disk. The RCP permutation is
    always computed here, from the cached original.
    """
    spec = dict(_plain(spec))
    if isinstance(spec.get("_target_"), str):
        spec["_target_"] = upgrade_name(spec["_target_"], stacklevel=3)
    rcp = spec.pop("rcp", False)
    seed = spec.pop("rcp_seed", 0)
    label = _label(spec)
    if rcp not in (True, False):
        raise DatasetError(f"{label}: rcp must be a bool here (expand() the config first)")
    seed = _seed(seed, label)
    where = None if data_dir is None else str(Path(data_dir))
    key = (_canonical(spec), where)
    base = _cached(key, lambda: _make(spec, data_dir))
    if not rcp:
        return base
    permuted = getattr(base, "permuted", None)
    if not callable(permuted):
        raise DatasetError(f"{label}: rcp is set but {type(base).__name__} cannot be permuted")
    return _cached((key, "rcp", seed), lambda: permuted(seed))
