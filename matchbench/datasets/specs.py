"""Instance specs: the instances a dataset config names, and their names.

:func:`expand` turns a dataset config (one instance, a set of them, or ``many`` seeded
instances of one generator) into instance specs, plain picklable dicts: one task each.
:func:`instance_key` names a spec by a short stable hash (result rows, resuming a sweep,
the disk cache's file names), :func:`spec_label` names it in messages. Nothing here
imports or calls a dataset function; a ``_target_`` spelled as before the family layout
(#29) is rewritten to its new spelling here, with a :class:`FutureWarning`
(:func:`matchbench.core.legacy.upgrade_name`).
"""

from __future__ import annotations

import hashlib
import json
import numbers
from collections.abc import Mapping
from typing import Any

from matchbench.core.errors import DatasetError
from matchbench.core.legacy import frozen_targets, upgrade_name

__all__ = ["expand", "instance_key", "spec_label"]


_SET_KEYS = frozenset({"instances", "rcp", "rcp_seed", "name", "description"})

_MANY_KEYS = frozenset({"many", "count", "seed", "draw", "rcp", "rcp_seed", "name", "description"})


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


def spec_label(spec: Mapping[str, Any]) -> str:
    """``kronecker(scale=16, seed=1)``: how messages name an instance before it exists."""
    target = str(spec.get("_target_", "?")).rsplit(".", 1)[-1]
    args = ", ".join(f"{k}={v!r}" for k, v in spec.items() if not str(k).startswith("_"))
    return f"{target}({args})"


_label = spec_label  # the name the planner and the other modules here use


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
    many = "many" in cfg
    if many:
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
        if isinstance(spec["_target_"], str):
            spec["_target_"] = upgrade_name(spec["_target_"], stacklevel=3)
        modes = _rcp_modes(spec.pop("rcp", rcp), f"{where}: instances[{i}]")
        seed = _seed(spec.pop("rcp_seed", rcp_seed), f"{where}: instances[{i}]")
        for mode in modes:
            one = dict(spec, rcp=mode)
            if mode:
                one["rcp_seed"] = seed
            if i == 0 or not many:  # a many set's specs differ only in integers
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
    if isinstance(base["_target_"], str):  # once, not for each of the set's instances
        base = dict(base, _target_=upgrade_name(base["_target_"], stacklevel=4))
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


#: ``json.dumps(spec, sort_keys=True, separators=(",", ":"), allow_nan=False)``, its
#: encoder made once (``dumps`` makes one per call where it is given options)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False).encode


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
        return _CANONICAL(spec)
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"{_label(spec)}: a spec must be plain JSON data ({exc})") from None


def instance_key(spec: Mapping[str, Any], *, frozen: bool = False) -> str:
    """A short stable name of an instance spec: 16 hex digits of its canonical JSON's SHA-256.

    Equal for specs that differ only in key order, or in ``rcp_seed`` when ``rcp`` is false.
    ``frozen``: ``spec`` is already :func:`~matchbench.core.legacy.frozen_targets`'s form
    of a plain spec (the planner makes it once for a task's id and its key).

    Notes
    -----
    The dataset function enters as its identity, not its import path: the ``_target_``
    as :func:`matchbench.core.legacy.frozen_name` spells it (the name before the family
    layout of #29 where it had one). Keys, and so the ``instance_key`` of result rows and
    the disk cache's file names, are those of the specs before the move, for either
    spelling of the target.
    """
    return key_of_canonical(_canonical(spec if frozen else frozen_targets(_plain(spec))))


def key_of_canonical(canonical: str) -> str:
    """:func:`instance_key` of a spec from its canonical JSON (:func:`canonical_spec`)."""
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def canonical_spec(frozen: Mapping[str, Any]) -> str:
    """The canonical JSON that :func:`instance_key` hashes, of a spec in
    :func:`~matchbench.core.legacy.frozen_targets`'s form.

    Raises
    ------
    DatasetError
        For a spec that is no plain JSON data, or a bad ``rcp``.
    """
    return _canonical(frozen)


def _base_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The spec of the unpermuted instance (RCP is applied in-process, after the cache)."""
    return {k: v for k, v in spec.items() if k not in ("rcp", "rcp_seed")}
