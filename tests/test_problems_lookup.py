"""Problem families are found by module name: ``matchbench.families.<name>``, no registry."""

from __future__ import annotations

import pytest

from matchbench.core.problem import Problem, get_problem, problem_table
from matchbench.families.community.problem import Community
from matchbench.families.lap.problem import LAP
from matchbench.families.mcm.problem import MCM
from matchbench.families.mwpm.problem import MWPM
from matchbench.families.smarriage.problem import SM
from matchbench.families.wmatch.problem import WMatch


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("mcm", MCM),
        ("lap", LAP),
        ("wmatch", WMatch),
        ("smarriage", SM),
        ("mwpm", MWPM),
        ("community", Community),
    ],
)
def test_get_problem_finds_the_family_module(name, cls):
    p = get_problem(name)
    assert type(p) is cls
    assert isinstance(p, Problem)
    assert p.name == name


@pytest.mark.parametrize(
    "name",
    [
        "nope",  # no such module
        "base",  # a module of the package, but no family
        "bipartite",  # likewise
        "lap.LAP",  # malformed: not an identifier
        "../mcm",
        "",
        "assignment",  # the family's old module name
    ],
)
def test_unknown_or_malformed_name_names_the_known_ones(name):
    with pytest.raises(KeyError) as info:
        get_problem(name)
    message = str(info.value)
    assert repr(name) in message
    assert "known: community, lap, mcm, mwpm, smarriage, wmatch" in message


def test_problem_table_lists_exactly_the_families():
    assert problem_table() == {
        "community": {"objective": "modularity", "sense": "max", "exact": False},
        "lap": {"objective": "cost", "sense": "min", "exact": True},
        "mcm": {"objective": "cardinality", "sense": "max", "exact": True},
        "mwpm": {"objective": "weight", "sense": "max", "exact": False},
        "smarriage": {"objective": "pairs", "sense": "max", "exact": True},
        "wmatch": {"objective": "weight", "sense": "max", "exact": False},
    }


def test_problem_table_skips_modules_that_fail_or_hold_no_family(monkeypatch):
    import pkgutil
    import sys
    import types

    real = pkgutil.iter_modules

    def with_strays(path=None, prefix=""):
        yield from real(path, prefix)
        for name in ("broken", "stray"):
            yield pkgutil.ModuleInfo(None, name, False)

    stray = types.ModuleType("matchbench.problems.stray")
    stray.MCM = MCM  # a family class under another module's name is not a family
    monkeypatch.setitem(sys.modules, "matchbench.problems.stray", stray)
    monkeypatch.setattr(pkgutil, "iter_modules", with_strays)
    assert sorted(problem_table()) == ["community", "lap", "mcm", "mwpm", "smarriage", "wmatch"]


_CLASSES = {
    "louvain": "Louvain",
    "nk_plm": "NkPLM",
    "igraph_louvain": "IgraphLouvain",
    "nx_louvain": "NxLouvain",
}


@pytest.mark.parametrize("name", sorted(_CLASSES))
def test_community_references_and_their_datasets_name_the_community_family(name):
    from hydra.utils import get_class

    from matchbench.datasets import spec_problem

    cls = get_class(f"matchbench.families.community.louvain.{_CLASSES[name]}")
    assert cls.name == name and get_problem(cls.problem).name == "community"
    assert spec_problem({"_target_": "matchbench.families.community.datasets.community_mtx"}) == "community"


def test_a_non_finite_objective_is_never_verified():
    from matchbench.core.problem import Verification

    for bad in (float("inf"), float("-inf"), float("nan")):
        v = Verification(True, None, bad)
        assert not v.verified and "not finite" in v.reason
    assert Verification(True, None, 3.0).verified
