"""Generated instances kept on disk across runs.

A dataset function tagged ``@dataset(..., disk_cache=True)`` (a generator: deterministic,
and slower to run than to read back) has each instance it makes kept in
``<data_dir>/generated/<instance_key>-v<CACHE_FORMAT>.npz`` (:func:`disk_cache_path`),
written once by whichever worker makes it first and read by every later run. The file's
header ``kind`` names the instance's class (``module:Class``), whose ``load_npz`` reads it
back. ``MATCHBENCH_NO_DISK_CACHE=1`` turns the disk cache off.
"""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matchbench.core.errors import DatasetError, DatasetWarning
from matchbench.core.legacy import current_kind
from matchbench.core.paths import default_data_dir
from matchbench.datasets.registry import _check_nonempty, _instantiate, _resolve
from matchbench.datasets.specs import _base_spec, _label, _plain, instance_key

__all__ = ["CACHE_FORMAT", "NO_DISK_CACHE_ENV", "disk_cache_path", "warm_disk_cache"]


#: Version of the generated instances kept on disk; part of every cache file's name.
#: Bump it whenever a ``disk_cache`` generator could return something else for the same
#: arguments (a fixed bug, another vertex numbering, other random draws, new ``params``)
#: or the ``save_npz`` layout of an instance class changes: files of the old version are
#: then never read again (delete ``<data_dir>/generated`` to reclaim the space). A file,
#: once written, also outlives numpy and scipy upgrades that would change a fresh draw:
#: that keeps instances the same across runs, which is what a benchmark wants.
CACHE_FORMAT = 1

#: Set to 1 (or true, yes, on) to neither read nor write generated instances on disk.
NO_DISK_CACHE_ENV = "MATCHBENCH_NO_DISK_CACHE"


def disk_cache_path(
    spec: Mapping[str, Any], data_dir: str | os.PathLike | None = None
) -> Path | None:
    """The file that keeps the (unpermuted) instance of a spec across runs.

    Parameters
    ----------
    spec : mapping
        An instance spec (``rcp``/``rcp_seed`` are ignored: the file holds the original).
    data_dir : path, optional
        Default :func:`~matchbench.core.paths.default_data_dir`.

    Returns
    -------
    Path or None
        ``<data_dir>/generated/<instance_key>-v<CACHE_FORMAT>.npz``, whether or not it
        exists yet; None when the spec's function is not tagged ``disk_cache`` (or cannot
        be resolved, or the spec is not plain data). ``$MATCHBENCH_NO_DISK_CACHE`` does not
        change the answer, only whether :func:`~matchbench.datasets.load` uses the file.
    """
    spec = _base_spec(_plain(spec))
    try:
        fn = _resolve(spec.get("_target_"))
    except Exception:  # load() reports an unknown target
        return None
    if getattr(fn, "matchbench_disk_cache", False) is not True:
        return None
    try:
        key = instance_key(spec)
    except DatasetError:
        return None
    root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
    return root / "generated" / f"{key}-v{CACHE_FORMAT}.npz"


def _disk_cache_enabled() -> bool:
    flag = os.environ.get(NO_DISK_CACHE_ENV, "").strip().lower()
    return flag in ("", "0", "false", "no", "off")


def _npz_class(kind: str) -> type:
    """The class a cache file's ``kind`` (``"module:Class"``) names.

    A ``kind`` written before the family layout (#29) names the class's old module; it
    is read, quietly, as the class's new home (:func:`~matchbench.core.legacy.current_kind`):
    the file holds the same instance, and its name (the instance key) is unchanged.
    """
    import importlib

    module, sep, qualname = current_kind(kind).partition(":")
    if not sep or not module or not qualname:
        raise ValueError(f"kind {kind!r} is not 'module:Class'")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type) or not callable(getattr(obj, "load_npz", None)):
        raise ValueError(f"kind {kind!r} is not a class with a load_npz method")
    return obj


def _read_disk(path: Path, label: str) -> Any | None:
    """The instance kept in ``path``, or None (no file, or a bad one, now deleted)."""
    import numpy as np

    try:
        f = open(path, "rb")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        warnings.warn(
            f"{label}: cannot read the cached instance {path} ({exc}); generating it",
            DatasetWarning,
            stacklevel=2,
        )
        return None
    try:
        with f:
            with np.load(f, allow_pickle=False) as z:
                kind = str(z["kind"][()])
            f.seek(0)
            inst = _npz_class(kind).load_npz(f)
        _check_nonempty(inst, label)
        return inst
    except Exception as exc:  # corrupt data fails in many ways (zip, numpy, json, import)
        warnings.warn(
            f"{label}: the cached instance {path} is unreadable "
            f"({type(exc).__name__}: {exc}); deleting it and generating the instance again",
            DatasetWarning,
            stacklevel=2,
        )
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only cache: the write after generating will say so
        return None


def _write_disk(inst: Any, path: Path, label: str) -> None:
    """Keep ``inst`` in ``path``; warns instead of failing (the instance is already made)."""
    save = getattr(inst, "save_npz", None)
    if not callable(save):
        warnings.warn(
            f"{label}: {type(inst).__name__} has no save_npz method; not cached on disk",
            DatasetWarning,
            stacklevel=2,
        )
        return
    # A unique name in the same folder, renamed over the target when complete: readers
    # in other workers see the old state or the whole file, never a part of it. (Not
    # mkstemp: its 0600 mode would hide the file from others sharing a data_dir.)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "xb") as f:
            save(f)
        os.replace(tmp, path)
    except Exception as exc:  # read-only or full disk, or params that are not JSON
        warnings.warn(
            f"{label}: cannot cache the generated instance in {path} "
            f"({type(exc).__name__}: {exc}); going on without",
            DatasetWarning,
            stacklevel=2,
        )
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def _make(spec: dict[str, Any], data_dir: str | os.PathLike | None) -> Any:
    """The unpermuted instance: read from the disk cache, or made (and then kept there)."""
    path = disk_cache_path(spec, data_dir) if _disk_cache_enabled() else None
    if path is None:
        return _instantiate(spec, data_dir)
    label = _label(spec)
    inst = _read_disk(path, label)
    if inst is None:
        inst = _instantiate(spec, data_dir)
        _write_disk(inst, path, label)
    return inst


def warm_disk_cache(
    spec: Mapping[str, Any], data_dir: str | os.PathLike | None = None
) -> str | None:
    """Make the disk-cache file of a spec (:func:`disk_cache_path`) if it is missing.

    What the sweep's CPU workers run ahead of the GPU tasks, so that large generated
    instances are made in parallel instead of one after the other by the GPU worker.
    Keeps nothing in memory and never raises: a spec that fails here fails again, with
    its error row, in the task that loads it.

    Returns
    -------
    str or None
        What happened, for the log: None when there was nothing to do.
    """
    if not _disk_cache_enabled():
        return None
    try:
        plain = _base_spec(_plain(spec))
        path = disk_cache_path(plain, data_dir)
        if path is None or path.exists():
            return None
        _make(plain, data_dir)
        return f"generated {_label(plain)} into {path}"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
