"""``MCM.verify_batch``: the verdicts of ``MCM.verify``, one by one, for many answers at once.

Correct answers are certified in bulk (without a call of ``verify``); every broken answer
(the mutations of ``test_mcm_verify.py``) and every form the bulk path does not take gets
exactly the ``Verification`` that ``verify`` alone gives. Maximum matchings come from
SciPy's and networkx's Hopcroft-Karp, independent of our code.
"""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import numpy as np
import pytest
from _graphs import bipartite_graphs, nx_maximum
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import maximum_bipartite_matching

from matchbench.core.problem import Verification
from matchbench.families.mcm import datasets as D
from matchbench.families.mcm import problem as P
from matchbench.families.mcm.cheap import cheap_matching
from matchbench.families.mcm.problem import MCM
from matchbench.graphs.bipartite import BipartiteGraph, Matching

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def same(a: Verification, b: Verification) -> bool:
    """Field by field, NaN equal to NaN (an invalid answer's objective)."""

    def eq(x, y):
        return (x == y) or (
            isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)
        )

    return all(
        eq(getattr(a, f), getattr(b, f))
        for f in ("verified", "reason", "objective", "bound", "reference", "columns")
    )


def assert_same_as_verify(instances, answers) -> list[Verification]:
    p = MCM()
    batch = p.verify_batch(instances, answers)
    alone = [p.verify(g, m) for g, m in zip(instances, answers, strict=True)]
    assert len(batch) == len(alone)
    for k, (b, a) in enumerate(zip(batch, alone, strict=True)):
        assert same(b, a), (k, b, a)
    return batch


def scipy_maximum(g: BipartiteGraph) -> Matching:
    if g.n_rows == 0 or g.n_cols == 0:
        return nx_maximum(g)
    cm = maximum_bipartite_matching(g.to_scipy(), perm_type="row")
    return Matching.from_col_match(cm.astype(g.col_ind.dtype), g.n_rows)


def _empty(n_rows: int, n_cols: int) -> BipartiteGraph:
    return BipartiteGraph.from_coo(np.array([], int), np.array([], int), n_rows, n_cols)


def tiny_graphs() -> list[BipartiteGraph]:
    star = BipartiteGraph.from_coo(np.array([0, 1, 2, 1]), np.array([0, 0, 0, 1]), 3, 2)
    # rows 1 and 4, columns 0 and 5 isolated
    isolated = BipartiteGraph.from_coo(np.array([0, 2, 3, 3]), np.array([1, 2, 2, 4]), 5, 6)
    int64 = BipartiteGraph(
        star.n_rows, star.n_cols,
        *(a.astype(np.int64) for a in (star.row_ptr, star.row_ind, star.col_ptr, star.col_ind)),
    )  # fmt: skip
    return [_empty(0, 0), _empty(0, 4), _empty(3, 0), _empty(3, 4), star, isolated, int64]


def dataset_graphs() -> list[BipartiteGraph]:
    out = [D.rgg(s, seed=i) for i, s in enumerate((3, 4, 5, 6, 7, 8))]
    out += [D.erdos_renyi(s, avg_degree=d, seed=s, aspect=a)
            for s, d, a in ((3, 1.0, 1.0), (4, 2.0, 0.5), (5, 1.5, 2.0), (6, 3.0, 1.0), (7, 0.5, 1.0))]  # fmt: skip
    out += [D.grid(s) for s in (1, 2, 3, 5, 7)]
    out += [D.rgg(s, seed=10 + s) for s in (8, 9, 10)]
    return out


@pytest.fixture(scope="module")
def graphs() -> list[BipartiteGraph]:
    return tiny_graphs() + dataset_graphs()


# ------------------------------------------------------------------ broken answers
def _matched_cols(m: Matching) -> np.ndarray:
    return np.flatnonzero(m.col_match >= 0)


def drop_pair(g, m):
    cols = _matched_cols(m)
    if not cols.size:
        return None
    j = int(cols[len(cols) // 2])
    m.row_match[m.col_match[j]] = -1
    m.col_match[j] = -1
    return m


def swap_col_mates(g, m):  # inconsistent: row_match no longer agrees
    cols = _matched_cols(m)
    if cols.size < 2:
        return None
    a, b = int(cols[0]), int(cols[-1])
    m.col_match[[a, b]] = m.col_match[[b, a]]
    return m


def swap_both_mates(g, m):  # consistent, usually pairs that are not edges
    cols = _matched_cols(m)
    if cols.size < 2:
        return None
    a, b = int(cols[0]), int(cols[1])
    ia, ib = int(m.col_match[a]), int(m.col_match[b])
    m.col_match[a], m.col_match[b] = ib, ia
    m.row_match[ia], m.row_match[ib] = b, a
    return m


def match_non_edge(g, m):
    for i in range(g.n_rows):
        adj = set(g.row_ind[g.row_ptr[i] : g.row_ptr[i + 1]].tolist())
        for j in range(g.n_cols):
            if j not in adj:
                if m.row_match[i] >= 0:
                    m.col_match[m.row_match[i]] = -1
                if m.col_match[j] >= 0:
                    m.row_match[m.col_match[j]] = -1
                m.row_match[i], m.col_match[j] = j, i
                return m
    return None


def claim_free_column(g, m):  # row_match names a column whose col_match is -1
    rows = np.flatnonzero(m.row_match < 0)
    cols = np.flatnonzero(m.col_match < 0)
    if not (rows.size and cols.size):
        return None
    m.row_match[rows[0]] = cols[0]
    return m


def matched_twice(g, m):
    cols = _matched_cols(m)
    free = np.flatnonzero(m.col_match < 0)
    if not (cols.size and free.size):
        return None
    m.col_match[free[0]] = m.col_match[cols[0]]
    return m


def row_out_of_range(g, m):
    if g.n_rows == 0:
        return None
    m.row_match[0] = g.n_cols
    return m


def col_below_minus_one(g, m):
    if g.n_cols == 0:
        return None
    m.col_match[-1] = -2
    return m


def empty_matching(g, m):
    return Matching(np.full(g.n_rows, -1, np.int64), np.full(g.n_cols, -1, np.int64))


def cheap(g, m):
    return cheap_matching(g)


def longer_row_match(g, m):
    return Matching(np.append(m.row_match, -1), m.col_match)


def shorter_col_match(g, m):
    return Matching(m.row_match, m.col_match[:-1]) if g.n_cols else None


def two_dimensional(g, m):
    return Matching(m.row_match[None, :], m.col_match)


def float_mates(g, m):
    return Matching(m.row_match.astype(np.float64), m.col_match)


def bool_mates(g, m):
    return Matching(m.row_match, m.col_match >= 0)


def uint64_mates(g, m):  # -1 wraps to 2**64 - 1: out of range for verify too
    return Matching(m.row_match.astype(np.uint64), m.col_match.astype(np.uint64))


def uint32_mates(g, m):
    return Matching(m.row_match.astype(np.uint32), m.col_match.astype(np.uint32))


def int8_mates(g, m):  # wraps where an index exceeds 127
    return Matching(m.row_match.astype(np.int8), m.col_match.astype(np.int8))


def int16_mates(g, m):
    return Matching(m.row_match.astype(np.int16), m.col_match.astype(np.int16))


def big_endian_mates(g, m):
    return Matching(m.row_match.astype(">i8"), m.col_match.astype(">i4"))


def strided_mates(g, m):
    return Matching(np.repeat(m.row_match, 2)[::2], np.repeat(m.col_match, 2)[::2])


def list_mates(g, m):
    return Matching(m.row_match.tolist(), m.col_match)


def a_tuple(g, m):
    return (m.row_match, m.col_match)


#: Answers that are not correct, or not in a form the bulk path takes (None: the mutation
#: does not apply to the graph; :func:`broken_answers` adds an answer of None by hand).
MUTATIONS = [
    drop_pair, swap_col_mates, swap_both_mates, match_non_edge, claim_free_column,
    matched_twice, row_out_of_range, col_below_minus_one, empty_matching, cheap,
    longer_row_match, shorter_col_match, two_dimensional, float_mates, bool_mates,
    uint64_mates, uint32_mates, int8_mates, int16_mates, big_endian_mates, strided_mates,
    list_mates, a_tuple,
]  # fmt: skip


def broken_answers(graphs):
    insts, answers = [], []
    for g in graphs:
        m = scipy_maximum(g)
        for mutate in MUTATIONS:
            a = mutate(g, m.copy())
            if a is not None:
                insts.append(g)
                answers.append(a)
        insts.append(g)
        answers.append(None)
    return insts, answers


# ------------------------------------------------------------------ tests
def test_correct_answers_are_certified_in_bulk(graphs, monkeypatch):
    answers = [scipy_maximum(g) for g in graphs]
    alone = [MCM().verify(g, m) for g, m in zip(graphs, answers, strict=True)]
    assert all(v.verified for v in alone)

    def no_verify(self, instance, solution):
        raise AssertionError("a correct answer was left to verify()")

    monkeypatch.setattr(MCM, "verify", no_verify)
    batch = MCM().verify_batch(graphs, answers)
    assert all(same(b, a) for b, a in zip(batch, alone, strict=True))
    for v, m in zip(batch, answers, strict=True):
        assert v == Verification(
            True, None, float(m.cardinality), bound=float(m.cardinality),
            reference=float(m.cardinality),
        )  # fmt: skip


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16])
def test_any_integer_dtype_of_a_correct_answer_is_certified_in_bulk(dtype, monkeypatch):
    # perfect matchings (no -1, so unsigned dtypes hold them) of small grids
    graphs = [g for g in (D.grid(s) for s in (2, 4, 6)) if scipy_maximum(g).cardinality == g.n_rows]
    assert graphs
    answers = []
    for g in graphs:
        m = scipy_maximum(g)
        answers.append(Matching(m.row_match.astype(dtype), m.col_match.astype(dtype)))
    expected = [MCM().verify(g, m) for g, m in zip(graphs, answers, strict=True)]
    assert all(v.verified for v in expected)
    monkeypatch.setattr(MCM, "verify", lambda *_: pytest.fail("left to verify()"))
    batch = MCM().verify_batch(graphs, answers)
    assert all(same(b, a) for b, a in zip(batch, expected, strict=True))


def test_broken_answers_get_the_verdicts_of_verify(graphs):
    insts, answers = broken_answers(graphs)
    batch = assert_same_as_verify(insts, answers)
    assert len(batch) > 10 * len(graphs)
    reasons = {v.reason.split(":")[0] for v in batch if not v.verified}
    assert {"invalid", "not maximum"} <= reasons


def test_mixed_good_and_bad_answers_with_repeated_instances(graphs):
    insts, answers = broken_answers(graphs)
    insts += graphs * 3  # an instance once per repetition
    answers += [scipy_maximum(g) for g in graphs] * 3
    order = list(range(len(insts)))
    random.Random(7).shuffle(order)
    batch = assert_same_as_verify([insts[k] for k in order], [answers[k] for k in order])
    assert sum(v.verified for v in batch) >= 3 * len(graphs)


def test_chunks_do_not_change_verdicts(graphs, monkeypatch):
    insts, answers = broken_answers(graphs[:12])
    insts += graphs
    answers += [scipy_maximum(g) for g in graphs]
    calls = []
    real = P._certify_many
    monkeypatch.setattr(P, "_certify_many", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(P, "VERIFY_CHUNK_ENTRIES", 40)
    assert_same_as_verify(insts, answers)
    assert len(calls) > 5


def test_forms_left_to_verify():
    g = D.rgg(6, seed=3)
    m = scipy_maximum(g)
    # a graph-like object that is not a BipartiteGraph: verify reads its attributes
    duck = SimpleNamespace(**{k: getattr(g, k) for k in (
        "n_rows", "n_cols", "row_ptr", "row_ind", "col_ptr", "col_ind")})  # fmt: skip
    # the two CSR directions disagree: the row CSR has edge (0, 1), the column CSR not
    corrupt = BipartiteGraph(
        2, 2, np.array([0, 2, 2]), np.array([0, 1]), np.array([0, 1, 1]), np.array([0]),
    )  # fmt: skip
    corrupt_m = Matching(np.array([0, -1]), np.array([0, -1]))
    # a CSR that does not start at 0: left to verify, which still certifies it
    shifted = BipartiteGraph(
        1, 1, np.array([1, 2]), np.array([9, 0]), np.array([0, 1]), np.array([0])
    )
    shifted_m = Matching(np.array([0]), np.array([0]))
    insts = [duck, corrupt, shifted, g, g]
    answers = [m, corrupt_m, shifted_m, m, None]
    batch = assert_same_as_verify(insts, answers)
    assert batch[0].verified and batch[2].verified and batch[3].verified
    assert batch[1].reason == "no certificate: edge (row 0, column 1) is not covered"
    assert not batch[4].verified and "expected a Matching" in batch[4].reason


def test_nothing_and_unequal_lengths():
    assert MCM().verify_batch([], []) == []
    g = D.grid(3)
    with pytest.raises(ValueError, match="2 instances but 1 answers"):
        MCM().verify_batch([g, g], [scipy_maximum(g)])


def test_warm_up():
    MCM().warm_up()


@SETTINGS
@given(st.lists(st.tuples(bipartite_graphs(), st.integers(-1, len(MUTATIONS) - 1)), max_size=8))
def test_random_graphs_and_mutations(cases):
    insts, answers = [], []
    for g, which in cases:
        m = nx_maximum(g)
        a = m if which < 0 else MUTATIONS[which](g, m.copy())
        insts.append(g)
        answers.append(m if a is None else a)
    assert_same_as_verify(insts, answers)
