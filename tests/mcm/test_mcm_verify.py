"""The MCM verifier (König certificate) and the cheap matching: mutation tests.

Every check of :meth:`MCM.verify` is exercised by breaking a correct answer; maximum
cardinalities come from networkx's Hopcroft-Karp, independent of our code.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from _graphs import bipartite_graphs, nx_maximum
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matchbench.core.problem import get_problem
from matchbench.families.mcm.cheap import cheap_matching
from matchbench.families.mcm.problem import MCM
from matchbench.graphs.bipartite import BipartiteGraph, Matching

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def edges_of(g: BipartiteGraph) -> set[tuple[int, int]]:
    return {
        (i, int(j)) for i in range(g.n_rows) for j in g.row_ind[g.row_ptr[i] : g.row_ptr[i + 1]]
    }


def test_registry_gives_mcm():
    p = get_problem("mcm")
    assert isinstance(p, MCM)
    assert (p.name, p.objective, p.sense, p.exact) == ("mcm", "cardinality", "max", True)


@SETTINGS
@given(bipartite_graphs())
def test_maximum_matching_is_certified(g):
    m = nx_maximum(g)
    v = MCM().verify(g, m)
    assert v.verified, v.reason
    assert v.reason is None
    assert v.objective == v.bound == v.reference == m.cardinality


@SETTINGS
@given(bipartite_graphs(), st.data())
def test_dropping_a_pair_is_not_maximum(g, data):
    m = nx_maximum(g)
    if m.cardinality == 0:
        return
    j = data.draw(st.sampled_from(np.flatnonzero(m.col_match >= 0).tolist()))
    broken = m.copy()
    broken.row_match[broken.col_match[j]] = -1
    broken.col_match[j] = -1
    v = MCM().verify(g, broken)
    assert not v.verified
    assert v.reason.startswith("not maximum")
    assert v.objective == m.cardinality - 1
    assert v.reference == m.cardinality
    assert v.bound == m.cardinality
    assert f"(maximum is {m.cardinality}, got {m.cardinality - 1})" in v.reason
    # The named ends of the augmenting path are free vertices of the broken matching.
    c, r = map(int, re.search(r"from column (\d+) to row (\d+)", v.reason).groups())
    assert broken.col_match[c] == -1 and broken.row_match[r] == -1


@SETTINGS
@given(bipartite_graphs(), st.data())
def test_non_edge_pair_is_invalid(g, data):
    non_edges = sorted({(i, j) for i in range(g.n_rows) for j in range(g.n_cols)} - edges_of(g))
    if not non_edges:
        return
    i, j = data.draw(st.sampled_from(non_edges))
    m = nx_maximum(g)
    # Free i and j, then match them to each other: consistent arrays, but not an edge.
    if m.row_match[i] >= 0:
        m.col_match[m.row_match[i]] = -1
    if m.col_match[j] >= 0:
        m.row_match[m.col_match[j]] = -1
    m.row_match[i] = j
    m.col_match[j] = i
    v = MCM().verify(g, m)
    assert not v.verified
    assert v.reason.startswith("invalid")
    assert "not an edge" in v.reason
    assert math.isnan(v.objective)


def star() -> tuple[BipartiteGraph, Matching]:
    """Rows 0-2 all adjacent to column 0, row 1 also to column 1; maximum matching size 2."""
    g = BipartiteGraph.from_coo(np.array([0, 1, 2, 1]), np.array([0, 0, 0, 1]), 3, 2)
    m = Matching(row_match=np.array([0, 1, -1]), col_match=np.array([0, 1]))
    return g, m


def test_star_is_certified():
    g, m = star()
    v = MCM().verify(g, m)
    assert v.verified and v.bound == 2 and v.reference == 2


@pytest.mark.parametrize(
    "mutate, expected",
    [
        # A row matched to two columns; row_match points to one of them.
        (lambda m: m.col_match.__setitem__(1, 0), "col_match[1] = 0 but row_match[0] = 0"),
        # Mate arrays that disagree.
        (lambda m: m.row_match.__setitem__(2, 0), "row_match[2] = 0 but col_match[0] = 0"),
        (lambda m: m.col_match.__setitem__(0, -1), "row_match[0] = 0 but col_match[0] = -1"),
        (lambda m: m.row_match.__setitem__(1, -1), "col_match[1] = 1 but row_match[1] = -1"),
        # Out of range.
        (lambda m: m.col_match.__setitem__(1, 3), "col_match[1] = 3 is not a row index"),
        (lambda m: m.row_match.__setitem__(2, 2), "row_match[2] = 2 is not a column index"),
        (lambda m: m.row_match.__setitem__(2, -2), "row_match[2] = -2 is not a column index"),
    ],
)
def test_mutated_matching_is_invalid(mutate, expected):
    g, m = star()
    mutate(m)
    v = MCM().verify(g, m)
    assert not v.verified
    assert v.reason.startswith("invalid")
    assert expected in v.reason
    assert math.isnan(v.objective)


def test_vertex_matched_twice_consistently_is_invalid():
    # Both arrays agree pairwise as far as they can: row 0 claims column 0, columns 0
    # and 1 both claim row 0.
    g = BipartiteGraph.from_coo(np.array([0, 0]), np.array([0, 1]), 1, 2)
    m = Matching(row_match=np.array([0]), col_match=np.array([0, 0]))
    v = MCM().verify(g, m)
    assert not v.verified
    assert "col_match[1] = 0 but row_match[0] = 0" in v.reason


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: (np.array([0, 1, -1]), np.array([0, 1, -1])), "col_match has shape (3,)"),
        (lambda: (np.array([0, 1]), np.array([0, 1])), "row_match has shape (2,)"),
        (lambda: (np.array([0.0, 1.0, -1.0]), np.array([0, 1])), "row_match has dtype float64"),
        (lambda: (np.array([[0, 1, -1]]), np.array([0, 1])), "row_match has shape (1, 3)"),
        (lambda: ([0, 1, -1], np.array([0, 1])), "row_match is a list"),
    ],
)
def test_malformed_arrays_are_invalid(make, expected):
    g, _ = star()
    rm, cm = make()
    v = MCM().verify(g, Matching(row_match=rm, col_match=cm))
    assert not v.verified
    assert expected in v.reason


def test_not_a_matching_object_is_invalid():
    g, m = star()
    v = MCM().verify(g, (m.row_match, m.col_match))
    assert not v.verified
    assert "expected a Matching" in v.reason


def test_any_integer_dtype_is_accepted():
    g, m = star()
    for dt in (np.int16, np.int32, np.int64):
        v = MCM().verify(g, Matching(m.row_match.astype(dt), m.col_match.astype(dt)))
        assert v.verified, (dt, v.reason)


def test_int64_graph():
    # Graphs past 2^31 entries use int64 indices; the verifier must take them too.
    g32, m = star()
    g = BipartiteGraph(
        g32.n_rows,
        g32.n_cols,
        *(a.astype(np.int64) for a in (g32.row_ptr, g32.row_ind, g32.col_ptr, g32.col_ind)),
    )
    assert MCM().verify(g, m).verified
    broken = Matching(np.array([0, -1, -1]), np.array([0, -1]))
    v = MCM().verify(g, broken)
    assert not v.verified and v.reference == 2


def test_empty_sides():
    for n_rows, n_cols in ((0, 0), (0, 4), (3, 0), (3, 4)):
        g = BipartiteGraph.from_coo(np.array([], int), np.array([], int), n_rows, n_cols)
        m = cheap_matching(g)
        v = MCM().verify(g, m)
        assert v.verified and v.objective == 0 and v.bound == 0


@SETTINGS
@given(bipartite_graphs())
def test_cheap_matching(g):
    m = cheap_matching(g)
    p = MCM()
    v = p.verify(g, m)
    assert v.objective == m.cardinality == p.initial_objective(m)
    assert v.reference == nx_maximum(g).cardinality
    assert v.verified == (m.cardinality == v.reference)
    # Maximal: every edge has a matched endpoint.
    for i, j in edges_of(g):
        assert m.row_match[i] >= 0 or m.col_match[j] >= 0
    # Greedy by columns in order: column j took the first row not taken by columns < j.
    for j in range(g.n_cols):
        adj = g.col_ind[g.col_ptr[j] : g.col_ptr[j + 1]]
        free = [int(i) for i in adj if not (0 <= m.row_match[i] < j)]
        assert m.col_match[j] == (free[0] if free else -1)
    assert p.initialize(g).cardinality == m.cardinality
