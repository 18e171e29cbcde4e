"""The formats a family can hand an outside program, and read its answer back from.

A family declares them in one module, ``matchbench.families.<family>.formats``, found by
name (no registry to update), with four dicts:

``WRITERS``
    ``{name: write(instance, path) -> None}``: one instance as a file a program reads.
``READERS``
    ``{name: read(instance, data: bytes, source: str) -> answer}``: the family's answer
    object (what its verifier takes) from a program's output. ``source`` names where the
    bytes came from ("ecl_mm's standard output", a file's path) for the error messages:
    a reader raises :class:`~matchbench.core.errors.AnswerError` naming it, the line and
    the defect.
``BATCH_WRITERS``, ``BATCH_READERS``
    The same for many instances in one file (``run.batch``): ``write(instances, path)``
    and ``read(instances, data, source) -> list of answers``, in input order.

Every function's docstring is the format's documentation (:func:`describe` lists them).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Where a family's formats live: ``matchbench.families.<family>.formats``.
MODULE = "matchbench.families.{family}.formats"

_KINDS = {
    "writer": "WRITERS",
    "reader": "READERS",
    "batch_writer": "BATCH_WRITERS",
    "batch_reader": "BATCH_READERS",
}


@dataclass(frozen=True)
class FamilyFormats:
    """One family's formats (the module docstring): four name -> function dicts."""

    family: str
    writers: dict[str, Callable[..., Any]] = field(default_factory=dict)
    readers: dict[str, Callable[..., Any]] = field(default_factory=dict)
    batch_writers: dict[str, Callable[..., Any]] = field(default_factory=dict)
    batch_readers: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def get(self, kind: str, name: str, setting: str) -> Callable[..., Any]:
        """The ``kind`` (see :data:`_KINDS`) function called ``name``.

        Raises
        ------
        ValueError
            Naming ``setting`` (the config key), the family and the formats it has.
        """
        table: dict[str, Callable[..., Any]] = getattr(self, kind + "s")
        if name not in table:
            known = ", ".join(sorted(table)) or "none"
            raise ValueError(
                f"{setting}={name!r}: the {self.family} family has no such "
                f"{kind.replace('_', ' ')} format; it has: {known}"
            )
        return table[name]


def family_formats(family: str) -> FamilyFormats:
    """The formats of ``family`` (empty where the family declares none).

    Raises
    ------
    KeyError
        For an unknown family (naming the known ones).
    """
    from matchbench.core.problem import get_problem

    get_problem(family)  # an unknown family: KeyError naming the known ones
    name = MODULE.format(family=family)
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return FamilyFormats(family)
    return FamilyFormats(
        family,
        **{kind + "s": dict(getattr(module, attr, {})) for kind, attr in _KINDS.items()},
    )


def describe(family: str) -> str:
    """A text listing ``family``'s formats with the first line of each one's docstring."""
    f = family_formats(family)
    lines = [f"{family}:"]
    for kind in _KINDS:
        table = getattr(f, kind + "s")
        for name, fn in sorted(table.items()):
            doc = (fn.__doc__ or "").strip().splitlines()
            lines.append(f"  {kind:<13} {name:<16} {doc[0] if doc else ''}")
    return "\n".join(lines)
