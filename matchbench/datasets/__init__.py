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

Families here: :mod:`~matchbench.graphs.mtx` (any Matrix Market file),
:mod:`~matchbench.graphs.suitesparse` (the SuiteSparse Matrix Collection, downloaded
and cached), :mod:`~matchbench.graphs.generators` (Kronecker, Delaunay, random
geometric, grid, road-like, Erdos-Renyi) and :func:`smoke` (tiny instances shipped in
the package).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import numbers
import os
import threading
import uuid
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from matchbench.core.errors import DatasetError, DatasetWarning
from matchbench.core.paths import default_data_dir, resolve_path

__all__ = [
    "CACHE_FORMAT",
    "CACHE_SIZE",
    "DatasetError",
    "DatasetWarning",
    "clear_cache",
    "dataset",
    "default_data_dir",
    "resolve_path",
    "disk_cache_path",
    "expand",
    "instance_key",
    "load",
    "spec_problem",
    "warm_disk_cache",
]


#: How many instances :func:`load` keeps per process (an RCP variant counts apart from
#: its original).
CACHE_SIZE = 4

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

_F = TypeVar("_F", bound=Callable[..., Any])

_SET_KEYS = frozenset({"instances", "rcp", "rcp_seed", "name", "description"})
_MANY_KEYS = frozenset({"many", "count", "seed", "draw", "rcp", "rcp_seed", "name", "description"})


# ---------------------------------------------------------------------------------------
# Dataset functions


def dataset(problem: str, *, disk_cache: bool = False) -> Callable[[_F], _F]:
    """Mark a function as a dataset function of a problem family.

    Parameters
    ----------
    problem : str
        The problem its instances belong to (``"mcm"``, ``"lap"``: a name of
        :func:`~matchbench.problems.get_problem`).
    disk_cache : bool
        Keep the instances it returns on disk across runs (see :func:`load`). Only for
        deterministic functions (a generator with a seed), whose instance class has
        ``save_npz``/``load_npz``; not for file readers, whose file already is the cache.

    Returns
    -------
    callable
        A decorator that sets ``fn.matchbench_problem`` and ``fn.matchbench_disk_cache``
        and returns ``fn`` itself (signature, name and docstring unchanged).
    """
    if not isinstance(problem, str) or not problem:
        raise TypeError(f"dataset: problem must be a non-empty string, not {problem!r}")

    def mark(fn: _F) -> _F:
        fn.matchbench_problem = problem  # type: ignore[attr-defined]
        fn.matchbench_disk_cache = bool(disk_cache)  # type: ignore[attr-defined]
        return fn

    return mark


def _resolve(target: Any) -> Callable[..., Any]:
    """The function a ``_target_`` names; raises what ``hydra.utils.get_method`` raises."""
    if not isinstance(target, str) or not target:
        raise ValueError(f"_target_ must name a function, not {target!r}")
    from hydra.utils import get_method

    return get_method(target)


def spec_problem(spec: Mapping[str, Any]) -> str | None:
    """The problem (``"mcm"``, ``"lap"``) of the instances an instance spec names.

    Read from the :func:`dataset` tag of the spec's ``_target_`` function; nothing is
    loaded, so a planner can drop (solver, instance) pairs of different problems first.

    Returns
    -------
    str or None
        None for an untagged function, or a target that cannot be resolved (never
        raises: :func:`load` reports such a spec's error when it is run).
    """
    try:
        fn = _resolve(_plain(spec).get("_target_"))
    except Exception:  # any import error of any module: load() reports it
        return None
    problem = getattr(fn, "matchbench_problem", None)
    return problem if isinstance(problem, str) else None


# ---------------------------------------------------------------------------------------
# Specs


def _plain(cfg: Any) -> Any:
    """A resolved plain container, also when handed an OmegaConf config."""
    if type(cfg).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(cfg, resolve=True)
    return cfg


def _rcp_modes(value: Any, where: str) -> list[bool]:
    if value is None or value is False:
        return [False]
    if value is True:
        return [True]
    if isinstance(value, str) and value.lower() == "both":
        return [False, True]
    raise DatasetError(f"{where}: rcp must be true, false or 'both', not {value!r}")


def _seed(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DatasetError(f"{where}: rcp_seed must be an integer, not {value!r}")
    return value


def _label(spec: Mapping[str, Any]) -> str:
    """``kronecker(scale=16, seed=1)``: how messages name an instance before it exists."""
    target = str(spec.get("_target_", "?")).rsplit(".", 1)[-1]
    args = ", ".join(f"{k}={v!r}" for k, v in spec.items() if not str(k).startswith("_"))
    return f"{target}({args})"


def expand(cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The instance specs of a dataset config.

    Parameters
    ----------
    cfg : mapping
        A dataset config: one instance (``_target_`` and its arguments), a set
        (``instances``: a list of such dicts, plus optional ``name``/``description``),
        or many seeded instances of one generator (``many``, below). ``rcp`` (true,
        false or ``"both"``) and ``rcp_seed`` (int, default 0) apply to every instance;
        an instance's own ``rcp``/``rcp_seed`` take precedence.

    Returns
    -------
    list of dict
        One plain dict per instance, with ``rcp`` a bool and, where it is true,
        ``rcp_seed``. ``rcp: both`` gives each instance twice, original first.

    Raises
    ------
    DatasetError
        For a config that is none of the forms, an empty set, a bad ``many`` set, or a
        bad ``rcp``/``rcp_seed``.

    Notes
    -----
    ``many: {_target_: ..., args}`` with ``count: N``, ``seed: S`` (default 1) and
    ``draw: {arg: range, ...}`` (optional) is ``N`` instances of the generator: instance
    ``i`` (from 0) is ``{_target_, args, seed: S + i}`` and each drawn argument's value is
    drawn for it from ``numpy.random.default_rng(S)``: ``[low, high]`` for integers
    uniform in ``low..high`` (both included), ``{low: .., high: .., log: true}`` for
    log-uniform integers (as many of each order of magnitude). Instance ``i`` does not
    depend on ``N``: a smaller ``count`` gives the first instances of a larger one. The
    generator's own ``seed`` is the set's to give. ``conf/dataset/lap_many.yaml`` and
    ``mcm_many.yaml`` are such sets; run them with ``run.batch``
    (:mod:`matchbench.runner.batch`).

    RCP (random row and column permutation) is the second instance set of Deveci et al.
    2013, Sec. 4: it makes augmenting paths long and cheap initial matchings poor.
    """
    cfg = _plain(cfg)
    if not isinstance(cfg, Mapping):
        raise DatasetError(f"a dataset config must be a mapping, not {type(cfg).__name__}")
    where = str(cfg.get("name") or cfg.get("_target_") or "dataset")
    rcp = cfg.get("rcp", False)
    rcp_seed = cfg.get("rcp_seed", 0)
    if "many" in cfg:
        specs = _many(cfg, where)
    elif "instances" in cfg:
        if "_target_" in cfg:
            raise DatasetError(f"{where}: a dataset config has either _target_ or instances")
        extra = sorted(set(cfg) - _SET_KEYS)
        if extra:
            raise DatasetError(
                f"{where}: unknown keys {extra} next to instances "
                f"(allowed: {', '.join(sorted(_SET_KEYS))})"
            )
        specs = cfg["instances"]
        if not isinstance(specs, list | tuple) or not specs:
            raise DatasetError(f"{where}: instances must be a non-empty list")
    elif "_target_" in cfg:
        specs = [{k: v for k, v in cfg.items() if k not in ("rcp", "rcp_seed")}]
    else:
        raise DatasetError(f"{where}: a dataset config needs _target_ or instances")

    out: list[dict[str, Any]] = []
    for i, spec in enumerate(specs):
        if not isinstance(spec, Mapping) or "_target_" not in spec:
            raise DatasetError(f"{where}: instances[{i}] is not a mapping with _target_")
        spec = dict(spec)
        modes = _rcp_modes(spec.pop("rcp", rcp), f"{where}: instances[{i}]")
        seed = _seed(spec.pop("rcp_seed", rcp_seed), f"{where}: instances[{i}]")
        for mode in modes:
            one = dict(spec, rcp=mode)
            if mode:
                one["rcp_seed"] = seed
            _canonical(one)  # fail here, not in a worker, on data that is not plain
            out.append(one)
    return out


def _int(value: Any, what: str, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < lo:
        raise DatasetError(f"{what} must be an integer >= {lo}, not {value!r}")
    return int(value)


def _many(cfg: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """The specs of a ``many`` set (see :func:`expand`), before ``rcp``."""
    import numpy as np

    if "_target_" in cfg or "instances" in cfg:
        raise DatasetError(f"{where}: a dataset config has one of _target_, instances and many")
    extra = sorted(set(cfg) - _MANY_KEYS)
    if extra:
        raise DatasetError(
            f"{where}: unknown keys {extra} next to many (allowed: {', '.join(sorted(_MANY_KEYS))})"
        )
    base = cfg["many"]
    if not isinstance(base, Mapping) or "_target_" not in base:
        raise DatasetError(f"{where}: many must be a mapping with _target_ (the generator)")
    count = _int(cfg.get("count"), f"{where}: count", 1)
    seed = _int(cfg.get("seed", 1), f"{where}: seed", 0)
    draw = cfg.get("draw") or {}
    if not isinstance(draw, Mapping):
        raise DatasetError(f"{where}: draw must map arguments to ranges, not {draw!r}")
    taken = sorted({"seed", "rcp", "rcp_seed"} & (set(base) | set(draw)))
    if taken:
        raise DatasetError(
            f"{where}: many sets {taken} itself (seed: the set's seed + i; rcp: next to many)"
        )
    names = sorted(map(str, draw))
    columns: dict[str, list[int]] = {}
    u = np.random.default_rng(seed).random((count, len(names)))
    for j, name in enumerate(names):
        spec = draw[name]
        what = f"{where}: draw.{name}"
        if isinstance(spec, Mapping):
            unknown = sorted(set(map(str, spec)) - {"low", "high", "log"})
            if unknown:
                raise DatasetError(f"{what}: unknown keys {unknown} (allowed: low, high, log)")
            low, high, log = spec.get("low"), spec.get("high"), spec.get("log", False)
        elif isinstance(spec, list | tuple) and len(spec) == 2:
            (low, high), log = spec, False
        else:
            raise DatasetError(f"{what} must be [low, high] or {{low, high, log}}, not {spec!r}")
        if not isinstance(log, bool):
            raise DatasetError(f"{what}: log must be true or false, not {log!r}")
        low = _int(low, f"{what}.low", 1 if log else -(2**62))
        high = _int(high, f"{what}.high", low)
        if log:
            lo, hi = np.log(low), np.log(high + 1)
            values = np.floor(np.exp(lo + u[:, j] * (hi - lo)))
        else:
            values = low + np.floor(u[:, j] * (high - low + 1))
        columns[name] = np.clip(values, low, high).astype(np.int64).tolist()
    specs = []
    for i in range(count):
        spec = dict(base, seed=seed + i)
        for name in names:
            spec[name] = columns[name][i]
        specs.append(spec)
    return specs


def _canonical(spec: Mapping[str, Any]) -> str:
    """The spec as canonical JSON; ``rcp_seed`` only counts when ``rcp`` is true."""
    spec = dict(spec)
    rcp = spec.pop("rcp", False)
    seed = spec.pop("rcp_seed", 0)
    if rcp not in (True, False):
        raise DatasetError(f"{_label(spec)}: rcp must be a bool here (expand() the config first)")
    if rcp:
        spec["rcp"] = True
        spec["rcp_seed"] = _seed(seed, _label(spec))
    try:
        return json.dumps(spec, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"{_label(spec)}: a spec must be plain JSON data ({exc})") from None


def instance_key(spec: Mapping[str, Any]) -> str:
    """A short stable name of an instance spec: 16 hex digits of its canonical JSON's SHA-256.

    Equal for specs that differ only in key order, or in ``rcp_seed`` when ``rcp`` is false.
    """
    return hashlib.sha256(_canonical(_plain(spec)).encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------------------
# Loading

_cache: OrderedDict[Any, Any] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget the instances :func:`load` keeps."""
    with _cache_lock:
        _cache.clear()


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
        while len(_cache) > max(CACHE_SIZE, 1):
            _cache.popitem(last=False)
    return value


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _check_nonempty(inst: Any, label: str) -> None:
    if inst is None:
        raise DatasetError(f"{label}: the dataset function returned None")
    name = getattr(inst, "name", None)
    label = f"{name} ({label})" if isinstance(name, str) else label
    for attr in ("n_rows", "n_cols", "n_edges"):
        value = getattr(inst, attr, None)
        if isinstance(value, numbers.Integral) and value == 0:
            raise DatasetError(f"{label}: empty instance ({attr} = 0)")
    size = getattr(inst, "size", None)
    if type(inst).__module__ == "numpy" and size == 0:
        raise DatasetError(f"{label}: empty instance (no elements)")


def _instantiate(spec: dict[str, Any], data_dir: str | os.PathLike | None) -> Any:
    label = _label(spec)
    target = spec.get("_target_")
    if not isinstance(target, str) or not target:
        raise DatasetError(f"{label}: _target_ must name a function")
    from hydra.errors import InstantiationException
    from hydra.utils import get_method, instantiate

    try:
        fn = get_method(target)
    except (ImportError, AttributeError, ValueError) as exc:
        reason = str(exc).splitlines()
        raise DatasetError(
            f"unknown dataset {label}: no function {target}"
            + (f" ({reason[1].strip()})" if len(reason) > 1 else "")
        ) from None
    kwargs = {k: v for k, v in spec.items() if not str(k).startswith("_")}
    try:
        inspect.signature(fn).bind(**kwargs)
    except TypeError as exc:
        raise DatasetError(f"{label}: bad parameters for {target}: {exc}") from None
    except ValueError:  # no signature (a builtin): let the call decide
        pass
    extra = {}
    if data_dir is not None and "data_dir" not in spec and _accepts(fn, "data_dir"):
        extra["data_dir"] = str(data_dir)
    cfg = dict(spec)
    cfg.setdefault("_convert_", "all")
    try:
        inst = instantiate(cfg, **extra)
    except InstantiationException as exc:
        # Hydra wraps what the function raised; callers want the function's own error.
        if exc.__cause__ is not None:
            raise exc.__cause__ from None
        raise DatasetError(f"{label}: {exc}") from None
    _check_nonempty(inst, label)
    return inst


# ---------------------------------------------------------------------------------------
# Generated instances on disk


def _base_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The spec of the unpermuted instance (RCP is applied in-process, after the cache)."""
    return {k: v for k, v in spec.items() if k not in ("rcp", "rcp_seed")}


def disk_cache_path(
    spec: Mapping[str, Any], data_dir: str | os.PathLike | None = None
) -> Path | None:
    """The file that keeps the (unpermuted) instance of a spec across runs.

    Parameters
    ----------
    spec : mapping
        An instance spec (``rcp``/``rcp_seed`` are ignored: the file holds the original).
    data_dir : path, optional
        Default :func:`default_data_dir`.

    Returns
    -------
    Path or None
        ``<data_dir>/generated/<instance_key>-v<CACHE_FORMAT>.npz``, whether or not it
        exists yet; None when the spec's function is not tagged ``disk_cache`` (or cannot
        be resolved, or the spec is not plain data). ``$MATCHBENCH_NO_DISK_CACHE`` does not
        change the answer, only whether :func:`load` uses the file.
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
    """The class a cache file's ``kind`` (``"module:Class"``) names."""
    import importlib

    module, sep, qualname = kind.partition(":")
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


def load(spec: Mapping[str, Any], *, data_dir: str | os.PathLike | None = None) -> Any:
    """The instance a spec names, from a per-process cache when it was loaded recently.

    Parameters
    ----------
    spec : mapping
        One item of :func:`expand`: ``_target_``, its arguments, ``rcp`` (bool) and
        ``rcp_seed``.
    data_dir : path, optional
        Passed to target functions that take a ``data_dir`` argument (downloaded data);
        also where generated instances are kept (default :func:`default_data_dir`).

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
    :func:`disk_cache_path` if that file exists, else generated and written there (to a
    temporary name first, then renamed, so that concurrent workers never read half a
    file). A bad cache file is deleted and the instance generated again, and a cache
    that cannot be written is skipped, each with a :class:`DatasetWarning`; neither fails
    the load. ``$MATCHBENCH_NO_DISK_CACHE=1`` bypasses the disk. The RCP permutation is
    always computed here, from the cached original.
    """
    spec = dict(_plain(spec))
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
