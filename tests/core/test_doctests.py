"""The examples in the shared layers' docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "matchbench.core.params",
    "matchbench.core.paths",
    "matchbench.core.legacy",
    "matchbench.core.limits",
    "matchbench.core.solver",
    "matchbench.datasets.sizes",
    "matchbench.results.store",
    "matchbench.results.stats",
    "matchbench.runner.batch",
    "matchbench.runner.cluster",
    "matchbench.cli",
]


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0 and result.attempted > 0, result
