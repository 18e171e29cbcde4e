"""Dataset functions: the :func:`dataset` tag, and what a spec's function tells and makes.

A dataset function returns one instance of a problem family; its tag says which family,
whether its instances are kept on disk (:mod:`matchbench.datasets.disk_cache`) and how
large they are. The planner reads the tags of specs (:func:`spec_problem`,
:func:`spec_size_hint`) without loading anything; :func:`~matchbench.datasets.load`
calls the function. A ``_target_`` spelled as before the family layout (#29) resolves
to its new name, with a :class:`FutureWarning` (:mod:`matchbench.core.legacy`).
"""

from __future__ import annotations

import inspect
import numbers
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from matchbench.core.errors import DatasetError
from matchbench.core.legacy import upgrade_name
from matchbench.datasets.specs import _base_spec, _label, _plain

__all__ = ["dataset", "spec_problem", "spec_size_hint"]


_F = TypeVar("_F", bound=Callable[..., Any])


def dataset(
    problem: str,
    *,
    disk_cache: bool = False,
    size_hint: Callable[..., float] | None = None,
) -> Callable[[_F], _F]:
    """Mark a function as a dataset function of a problem family.

    Parameters
    ----------
    problem : str
        The problem its instances belong to (``"mcm"``, ``"lap"``: a name of
        :func:`~matchbench.problems.get_problem`).
    disk_cache : bool
        Keep the instances it returns on disk across runs (see :func:`~matchbench.datasets.load`). Only for
        deterministic functions (a generator with a seed), whose instance class has
        ``save_npz``/``load_npz``; not for file readers, whose file already is the cache.
    size_hint : callable, optional
        A guess of an instance's size in bytes from the function's own arguments, called
        with a spec's arguments as keywords (take ``**_`` for the others), without making
        the instance: the runner submits large instances first and ``run.batch`` cuts
        batches by bytes (:func:`spec_size_hint`). Helpers: :mod:`matchbench.datasets.sizes`.
        A hint whose catch-all is spelled ``**_`` declares that the arguments it does not
        name (``seed``) leave the size unchanged: its value is computed once per distinct
        named arguments (a ``many:`` set of a million seeds asks once).

    Returns
    -------
    callable
        A decorator that sets ``fn.matchbench_problem``, ``fn.matchbench_disk_cache`` and
        ``fn.matchbench_size_hint`` and returns ``fn`` itself (signature, name and
        docstring unchanged).
    """
    if not isinstance(problem, str) or not problem:
        raise TypeError(f"dataset: problem must be a non-empty string, not {problem!r}")
    if size_hint is not None and not callable(size_hint):
        raise TypeError(f"dataset: size_hint must be callable, not {size_hint!r}")

    def mark(fn: _F) -> _F:
        fn.matchbench_problem = problem  # type: ignore[attr-defined]
        fn.matchbench_disk_cache = bool(disk_cache)  # type: ignore[attr-defined]
        fn.matchbench_size_hint = size_hint  # type: ignore[attr-defined]
        return fn

    return mark


def _resolve(target: Any) -> Callable[..., Any]:
    """The function a ``_target_`` names, also in its spelling from before the family layout
    (a FutureWarning: :func:`~matchbench.core.legacy.upgrade_name`); raises what
    ``hydra.utils.get_method`` raises."""
    if not isinstance(target, str) or not target:
        raise ValueError(f"_target_ must name a function, not {target!r}")
    name = upgrade_name(target, stacklevel=3)  # warns of an old spelling each time
    fn = _RESOLVED.get(name)
    if fn is None:
        from hydra.utils import get_method

        fn = _RESOLVED[name] = get_method(name)  # a plan of a million specs asks once per spec
    return fn


#: ``_target_`` -> the function :func:`_resolve` found (failures are not kept)
_RESOLVED: dict[str, Callable[..., Any]] = {}


def spec_problem(spec: Mapping[str, Any]) -> str | None:
    """The problem (``"mcm"``, ``"lap"``) of the instances an instance spec names.

    Read from the :func:`dataset` tag of the spec's ``_target_`` function; nothing is
    loaded, so a planner can drop (solver, instance) pairs of different problems first.

    Returns
    -------
    str or None
        None for an untagged function, or a target that cannot be resolved (never
        raises: :func:`~matchbench.datasets.load` reports such a spec's error when it is run).
    """
    try:
        fn = _resolve(_plain(spec).get("_target_"))
    except Exception:  # any import error of any module: load() reports it
        return None
    problem = getattr(fn, "matchbench_problem", None)
    return problem if isinstance(problem, str) else None


def spec_size_hint(spec: Mapping[str, Any]) -> float | None:
    """The size in bytes that a spec's dataset function declares for its instance.

    The ``size_hint`` of the :func:`dataset` tag, called with the spec's arguments (not
    ``rcp``/``rcp_seed``: a permuted copy is as large as its original); nothing is
    loaded or generated.

    Returns
    -------
    float or None
        None where the function declares no hint, cannot be resolved, or its hint fails
        or gives no finite non-negative number for these arguments (a string where a
        count belongs, say): the size is then unknown. Never raises.
    """
    try:
        plain = _plain(spec)
        hint = getattr(_resolve(plain.get("_target_")), "matchbench_size_hint", None)
    except Exception:  # load() reports an unknown target
        return None
    if hint is None:
        return None
    names = _named_only(hint)
    if names is None:
        return _call_hint(hint, _base_spec(plain))
    # one value per distinct named arguments (a many set's million specs differ in seed)
    try:
        # with each value's type: True == 1, but a hint takes 1 and refuses True
        key = (hint, tuple((type(v), v) for v in (plain.get(k, _ABSENT) for k in names)))
        return _HINT_VALUES[key]
    except TypeError:  # an unhashable argument: no memo
        return _call_hint(hint, _base_spec(plain))
    except KeyError:
        pass
    value = _call_hint(hint, _base_spec(plain))
    if len(_HINT_VALUES) >= _HINT_MEMO:
        _HINT_VALUES.clear()
    _HINT_VALUES[key] = value
    return value


def size_hint_reads(spec: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The spec keys that :func:`spec_size_hint` reads for this spec's function: its
    ``_target_`` and the arguments its size hint names (where the hint's catch-all is
    spelled ``**_``); None where the hint may read every key, or there is none, or the
    target cannot be resolved. Two specs of one target that agree on these keys (values
    of the same type) have the same size hint."""
    try:
        hint = getattr(_resolve(_plain(spec).get("_target_")), "matchbench_size_hint", None)
    except Exception:  # an unknown target: its size is unknown
        return None
    names = _named_only(hint) if hint is not None else None
    return None if names is None else ("_target_", *names)


def _call_hint(hint: Callable[..., Any], plain: Mapping[str, Any]) -> float | None:
    import math

    try:
        value = hint(**{k: v for k, v in plain.items() if not str(k).startswith("_")})
        value = float(value)
    except Exception:  # arguments the generator would reject too: load() reports them
        return None
    return value if math.isfinite(value) and value >= 0 else None


_ABSENT = object()
#: ``(hint, its named arguments' values)`` -> the hint's value (see :func:`_named_only`)
_HINT_VALUES: dict[tuple[Any, ...], float | None] = {}
#: entries kept at most (the memo starts again past it)
_HINT_MEMO = 1 << 16
_NAMED: dict[Any, tuple[str, ...] | None] = {}


def _named_only(hint: Callable[..., Any]) -> tuple[str, ...] | None:
    """The arguments a size hint names, where its catch-all is spelled ``**_``: by this
    convention it ignores the rest (``lambda n, **_: sizes.dense(n)`` ignores ``seed``), so
    its value depends on the named ones only and is kept per their values. None for a
    hint that may read anything (another catch-all, or no signature)."""
    if hint not in _NAMED:
        try:
            params = inspect.signature(hint).parameters.values()
        except (TypeError, ValueError):
            _NAMED[hint] = None
        else:
            rest = [p for p in params if p.kind is p.VAR_KEYWORD]
            ok = len(rest) == 1 and rest[0].name == "_" and not any(p.kind is p.VAR_POSITIONAL for p in params)
            _NAMED[hint] = tuple(p.name for p in params if p.kind is not p.VAR_KEYWORD) if ok else None
    return _NAMED[hint]


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

    target = upgrade_name(target, stacklevel=3)
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
    cfg = dict(spec, _target_=target)
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
