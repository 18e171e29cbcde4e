"""Solver and initializer parameters: one validator per kind, and where their defaults live.

Every constructor of a solver (:class:`~matchbench.core.solver.BaseSolver`) or initializer
checks its parameters with the validators below and nowhere else, so a parameter is
checked by one function whichever process builds the object (the planner builds each
solver once to describe it, a worker again from the same config). Each validator is typed,
returns the value normalized (``numpy`` integers to ``int``, ...) and raises ``ValueError``
naming the parameter; ``name`` may carry the solver's name (``"roma2_gpu: on_fail"``).

One name per concept: ``threads_per_block`` is a CUDA block size (:func:`block_size`),
``threads`` a number of host threads (:func:`parse_threads`). A renamed option keeps its
old spelling for one release (:func:`renamed`: one ``FutureWarning`` line).

Defaults live in one place, the config file ``conf/<group>/<name>.yaml`` of the solver
(``group`` ``algorithm``) or initializer (``init``): it lists every option a user can
override, with its value. Constructors take their options as required keywords;
:func:`configured` builds an object from its file with overrides, as ``algorithm=NAME
algorithm.KEY=VALUE`` does on the command line.
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from collections.abc import Iterable
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "MISSING",
    "block_size",
    "boolean",
    "choice",
    "config_defaults",
    "configured",
    "finite_float",
    "HOST_THREADS_ENV",
    "batch_threads",
    "host_cores",
    "integer",
    "non_negative_float",
    "non_negative_int",
    "parse_threads",
    "positive_float",
    "positive_int",
    "renamed",
]

T = TypeVar("T")
V = TypeVar("V", str, int)

_INTEGERS = (int, np.integer)
_REALS = (int, float, np.integer, np.floating)


def host_cores() -> int:
    """Cores this process may run on (its affinity mask on Linux, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


#: The host threads a worker's batch paths may use (a positive integer): set by the runner
#: in each worker of a sweep to its share of its host's cores (:func:`batch_threads`), or
#: by a user in the workers' environment.
HOST_THREADS_ENV = "MATCHBENCH_HOST_THREADS"


def batch_threads() -> int:
    """Host threads for a batch's bulk work (making, starting and certifying a stack of
    instances, :mod:`matchbench.graphs.stack`): :func:`host_cores`, at most
    ``$MATCHBENCH_HOST_THREADS`` where that is set (a positive integer, else
    :class:`ValueError` naming it: a batch then runs one by one, with that note). Several workers on one
    host each start their own threads; the runner gives each its share of the cores, so
    that they do not run two threads a core. (A solver's own ``threads`` default,
    :func:`host_cores`, is not capped: a multicore reference is measured on every core.)

    >>> import os
    >>> os.environ[HOST_THREADS_ENV] = "1"; batch_threads()
    1
    >>> del os.environ[HOST_THREADS_ENV]
    """
    n = host_cores()
    value = os.environ.get(HOST_THREADS_ENV, "").strip()
    if not value:
        return n
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"${HOST_THREADS_ENV} must be a positive integer (host threads), got {value!r}")
    return min(n, int(value))


def _is_int(value: Any) -> bool:
    return isinstance(value, _INTEGERS) and not isinstance(value, bool | np.bool_)


def parse_threads(value: Any, name: str = "threads") -> int | None:
    """A solver's host ``threads``: a positive integer, or None for every host core.

    >>> parse_threads(4), parse_threads(None)
    (4, None)

    Raises
    ------
    ValueError
        Naming ``threads`` for 0, a negative number, a bool or a non-integer.
    """
    if value is None:
        return None
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer or null (all cores), not {value!r}")
    return int(value)


def block_size(name: str, value: Any, *, auto: int | None = None) -> int:
    """A CUDA block size (``threads_per_block``): an integer multiple of 32 in [32, 1024].

    ``auto``: one more value accepted as is, meaning "the solver picks" (0, say).

    >>> block_size("threads_per_block", 256), block_size("threads_per_block", 0, auto=0)
    (256, 0)
    >>> block_size("threads_per_block", 100)
    Traceback (most recent call last):
    ValueError: threads_per_block must be a multiple of 32 in [32, 1024], not 100

    Raises
    ------
    ValueError
        Naming the parameter, for a bool, a non-integer or any other value.
    """
    if auto is not None and _is_int(value) and int(value) == auto:
        return int(value)
    if not _is_int(value) or not (32 <= int(value) <= 1024 and int(value) % 32 == 0):
        extra = f" (or {auto}: automatic)" if auto is not None else ""
        raise ValueError(f"{name} must be a multiple of 32 in [32, 1024]{extra}, not {value!r}")
    return int(value)


def integer(name: str, value: Any, lo: int | None = None, hi: int | None = None) -> int:
    """An integer in ``[lo, hi]`` (either bound may be None: open).

    >>> integer("batch", 16, 1, 4096)
    16
    >>> integer("batch", 0, 1, 4096)
    Traceback (most recent call last):
    ValueError: batch must be an integer in [1, 4096], not 0

    Raises
    ------
    ValueError
        Naming the parameter, for a bool, a non-integer (``2.0`` too) or a value out of range.
    """
    if not _is_int(value) or (lo is not None and value < lo) or (hi is not None and value > hi):
        if lo is not None and hi is not None:
            what = f"an integer in [{lo}, {hi}]"
        elif lo is not None:
            what = f"an integer >= {lo}"
        elif hi is not None:
            what = f"an integer <= {hi}"
        else:
            what = "an integer"
        raise ValueError(f"{name} must be {what}, not {value!r}")
    return int(value)


def positive_int(name: str, value: Any, hi: int | None = None) -> int:
    """An integer >= 1 (at most ``hi``).

    >>> positive_int("devices", 2)
    2
    """
    return integer(name, value, 1, hi)


def non_negative_int(name: str, value: Any, hi: int | None = None) -> int:
    """An integer >= 0 (at most ``hi``).

    >>> non_negative_int("seed", 0)
    0
    """
    return integer(name, value, 0, hi)


def _real(name: str, value: Any, what: str, ok: Any) -> float:
    if not isinstance(value, _REALS) or isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be {what}, not {value!r}")
    x = float(value)
    if not (math.isfinite(x) and ok(x)):
        raise ValueError(f"{name} must be {what}, not {value!r}")
    return x


def finite_float(name: str, value: Any) -> float:
    """A finite number, as a float.

    >>> finite_float("k", -1)
    -1.0
    """
    return _real(name, value, "a finite number", lambda x: True)


def positive_float(name: str, value: Any) -> float:
    """A finite number > 0, as a float.

    >>> positive_float("k", 1)
    1.0
    >>> positive_float("k", 0)
    Traceback (most recent call last):
    ValueError: k must be a finite number > 0, not 0
    """
    return _real(name, value, "a finite number > 0", lambda x: x > 0)


def non_negative_float(name: str, value: Any) -> float:
    """A finite number >= 0, as a float (a threshold, a share).

    >>> non_negative_float("threshold", 1e-5)
    1e-05
    >>> non_negative_float("threshold", float("nan"))
    Traceback (most recent call last):
    ValueError: threshold must be a finite number >= 0, not nan
    """
    return _real(name, value, "a finite number >= 0", lambda x: x >= 0)


def choice(name: str, value: Any, options: Iterable[V]) -> V:
    """One of ``options``: strings, or integers (a value of another type is refused, so
    that ``128.0`` and ``True`` are no integers).

    >>> choice("sync", "graph", ("level", "batched", "graph"))
    'graph'
    >>> choice("sync", "fast", ("level", "graph"))
    Traceback (most recent call last):
    ValueError: sync must be one of 'level', 'graph', not 'fast'
    >>> choice("threads_per_block", 128.0, (128, 192, 256))
    Traceback (most recent call last):
    ValueError: threads_per_block must be one of 128, 192, 256, not 128.0
    """
    options = tuple(options)
    ok = _is_int(value) if all(_is_int(o) for o in options) else isinstance(value, str)
    if not ok or value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}, not {value!r}")
    return int(value) if _is_int(value) else value  # type: ignore[return-value]


def boolean(name: str, value: Any) -> bool:
    """True or false (a bool; ``"yes"`` and 1 are refused: a YAML typo stays visible).

    >>> boolean("fuse", True)
    True
    >>> boolean("fuse", "yes")
    Traceback (most recent call last):
    ValueError: fuse must be true or false, not 'yes'
    """
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be true or false, not {value!r}")
    return bool(value)


class _Missing:
    """A keyword not passed (:data:`MISSING`)."""

    def __repr__(self) -> str:
        return "MISSING"


#: Default of both spellings of a renamed option in a constructor's signature
#: (:func:`renamed`): a config may spell the option either way, not neither.
MISSING: Any = _Missing()


def renamed(old: str, old_value: Any, new: str, new_value: T, group: str = "algorithm") -> T:
    """The value of an option whose old spelling ``old`` is still accepted (one release).

    Either spelling is :data:`MISSING` when not passed. A config of today spells the new
    one and keeps the old one as a null placeholder (so that ``algorithm.OLD=...`` still
    parses on the command line): ``old_value`` None or missing means the old spelling
    was not used. Otherwise, and for a config written before the rename (the new
    spelling missing, the old one's value taken as it is, null included), a
    ``FutureWarning`` of one line names both spellings and the old value wins.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     renamed("threads", 128, "threads_per_block", 256)
    128
    >>> str(w[0].message)
    'algorithm.threads is deprecated; use algorithm.threads_per_block'
    >>> renamed("threads", None, "threads_per_block", 256)
    256

    Raises
    ------
    TypeError
        When neither spelling was passed.
    """
    if new_value is MISSING:
        if old_value is MISSING:
            raise TypeError(f"missing the option {new} (formerly {old})")
    elif old_value is None or old_value is MISSING:
        return new_value
    warnings.warn(f"{group}.{old} is deprecated; use {group}.{new}", FutureWarning, stacklevel=3)
    return old_value


@functools.cache
def _config_file(group: str, name: str) -> dict[str, Any]:
    import yaml

    from matchbench.core.paths import conf_dir

    path = conf_dir() / group / f"{name}.yaml"
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    if not isinstance(data, dict) or "_target_" not in data:
        raise ValueError(f"{path} names no _target_")
    return data


def config_defaults(group: str, name: str) -> dict[str, Any]:
    """The options of ``conf/<group>/<name>.yaml`` with their values (a fresh dict).

    >>> config_defaults("algorithm", "roma2_gpu")["threads_per_block"]
    1024
    """
    return {k: v for k, v in _config_file(group, name).items() if k != "_target_"}


def configured(cls: type[T], /, **overrides: Any) -> T:
    """``cls`` built from its config file (``conf/algorithm/<cls.name>.yaml``, or
    ``conf/init/`` for an initializer) with ``overrides`` on top.

    >>> from matchbench.families.mwpm.roma import Roma
    >>> configured(Roma, seed=3).params["seed"]
    3

    Raises
    ------
    ValueError
        When the file's ``_target_`` is not ``cls``.
    """
    from hydra.utils import get_class

    from matchbench.core.solver import BaseInitializer

    group = "init" if issubclass(cls, BaseInitializer) else "algorithm"
    name = cls.name  # type: ignore[attr-defined]
    target = _config_file(group, name)["_target_"]
    if get_class(target) is not cls:
        raise ValueError(f"conf/{group}/{name}.yaml builds {target}, not {cls.__qualname__}")
    return cls(**{**config_defaults(group, name), **overrides})
