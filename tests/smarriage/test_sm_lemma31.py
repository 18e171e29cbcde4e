"""Lemma 3.1 (Manne, Naim, Lerring & Halappanavar, CSC 2016): preferences from one global
edge order make the stable matching unique and equal to GREEDY's matching.

The bipartite instance of ``sm_lemma31`` and the weighted graph of ``lemma31_graph`` are
built from the same edges; ``gs`` and ``mw`` on the first must return, pair for pair, the
greedy matching of the second (woman j is vertex ``n_men + j``), for continuous weights
and for heavy ties (where only the global order's tie-breaking makes them agree).
"""

from __future__ import annotations

import numpy as np
import pytest

from matchbench.families.smarriage.datasets import lemma31_graph, sm_lemma31
from matchbench.families.smarriage.problem import SM
from matchbench.families.smarriage.refs import GaleShapley, McVitieWilson
from matchbench.families.wmatch.problem import WMatch
from matchbench.families.wmatch.refs import Greedy


def _solve(solver, instance):
    solver.prepare(instance)
    solver.run()
    return solver.result()


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("n_men", "n_women", "deg"), [(30, 30, 3.0), (50, 35, 6.0), (5, 60, 2.0)])
def test_stable_marriage_of_a_global_order_is_greedy(n_men, n_women, deg, seed, ties):
    kw = dict(n_men=n_men, n_women=n_women, avg_degree=deg, seed=seed, ties=ties)
    prefs = sm_lemma31(**kw)
    graph = lemma31_graph(**kw)
    greedy = _solve(Greedy(), graph)
    assert WMatch().verify(graph, greedy).verified
    mate = greedy.mate(graph.n)
    want = np.where(mate[:n_men] >= 0, mate[:n_men] - n_men, -1)
    for cls in (GaleShapley, McVitieWilson):
        got = _solve(cls(), prefs)
        assert SM().verify(prefs, got).verified
        assert np.array_equal(np.asarray(got.wife, dtype=np.int64), want), cls.name
