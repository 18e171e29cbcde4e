"""smarriage datasets: the preference-list file format, generators, smoke set, configs."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import numpy as np
import pytest

from matchbench.datasets import (
    DatasetError,
    clear_cache,
    disk_cache_path,
    expand,
    load,
    spec_problem,
)
from matchbench.families.smarriage import datasets as P
from matchbench.families.smarriage.problem import SM, Preferences, man_optimal
from matchbench.families.wmatch.problem import edge_order, edge_order_key

CONF = Path(__file__).resolve().parents[2] / "conf" / "dataset"

VALID = """\
# a stable-marriage instance
# with comments

3 2
1 0
# man 1 has an empty list:

0
# women
2 0 1
0
"""


def _write(tmp_path: Path, text: str, name: str = "p.txt") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _lists(inst: Preferences) -> tuple[list[list[int]], list[list[int]]]:
    return (
        [inst.man_list(m).tolist() for m in range(inst.n_men)],
        [inst.woman_list(w).tolist() for w in range(inst.n_women)],
    )


# ---------------------------------------------------------------------------------------
# The file format


def test_valid_file_with_comments_empty_lists_and_purging(tmp_path):
    p = _write(tmp_path, VALID, "small.prefs")
    inst = P.prefs_file(p)
    assert (inst.n_men, inst.n_women, inst.name, inst.family) == (3, 2, "small", "prefs_file")
    # woman 0 lists man 1, who lists nobody: purged; so is her listing of man 1 only
    assert _lists(inst) == ([[1, 0], [], [0]], [[2, 0], [0]])
    assert inst.purged == 1 and inst.params == {"path": str(p), "purged": 1}
    assert not inst.master


def test_gzip_file_reads_the_same(tmp_path):
    p = tmp_path / "small.prefs.gz"
    p.write_bytes(gzip.compress(VALID.encode()))
    inst = P.prefs_file(p, name="zipped")
    assert inst.name == "zipped" and _lists(inst) == _lists(P.prefs_file(_write(tmp_path, VALID)))
    assert P.prefs_file(p).name == "small"


def test_trailing_blank_lines_and_crlf_are_accepted(tmp_path):
    text = "2 2\r\n0 1\r\n1 0\r\n1 0\r\n0 1\r\n\r\n\n"
    inst = P.prefs_file(_write(tmp_path, text))
    assert _lists(inst) == ([[0, 1], [1, 0]], [[1, 0], [0, 1]])
    # an empty last list is a list line, not a trailing blank
    inst = P.prefs_file(_write(tmp_path, "1 2\n0\n0\n\n"))
    assert _lists(inst) == ([[0]], [[0], []])


def test_purging_with_an_empty_last_list(tmp_path):
    # every entry is one-sided: man 0 / woman 0 and man 1 / woman 1 (her list is empty)
    inst = P.prefs_file(_write(tmp_path, "2 2\n0\n1\n1\n\n"))
    assert _lists(inst) == ([[], []], [[], []]) and inst.purged == 3


@pytest.mark.parametrize(
    ("text", "line", "fragments"),
    [
        ("", 1, ["empty file", "no header"]),
        ("# only\n\n", 2, ["only comments", "no header"]),
        ("# c\n3\n", 2, ["header", "two integers", "'3'"]),
        ("2 x\n", 1, ["header", "two integers", "'2 x'"]),
        ("2 2 2\n", 1, ["header", "two integers"]),
        ("\n-1 2\n", 2, ["negative", "-1 men"]),
        ("2 1\n0\n0 x1\n0 1\n", 3, ["'x1'", "man 1", "not an integer"]),
        ("1 1\n0\n0.5\n", 3, ["'0.5'", "woman 0", "not an integer"]),
        ("1 1\n1_0\n0\n", 2, ["'1_0'", "not an integer"]),
        ("2 2\n0 1\n# c\n1 2\n0\n0\n", 4, ["man 1", "woman 2", "outside [0, 2)"]),
        ("2 2\n0\n1\n0\n-1\n", 5, ["woman 1", "man -1", "outside [0, 2)"]),
        ("1 1\n99999999999999999999\n0\n", 2, ["man 0", "99999999999999999999", "outside [0, 1)"]),
        ("2 3\n0 2 0\n1\n0\n1\n0\n", 2, ["man 0", "woman 0", "twice"]),
        ("2 1\n0\n0\n1 0 1\n", 4, ["woman 0", "man 1", "twice"]),
        ("2 2\n0\n1\n0\n# end\n", 5, ["expected 4 list lines", "2 men, 2 women", "found 3"]),
        ("2 2\n", 1, ["expected 4 list lines", "found 0"]),
        ("1 1\n0\n0\n\n# c\n0\n", 6, ["too many lines", "'0'"]),
    ],
)
def test_bad_files_name_file_line_and_problem(tmp_path, text, line, fragments):
    p = _write(tmp_path, text, "bad.txt")
    with pytest.raises(DatasetError) as info:
        P.prefs_file(p)
    msg = str(info.value)
    assert str(p) in msg and f"line {line}:" in msg, msg
    for f in fragments:
        assert f in msg, msg


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(DatasetError, match=r"prefs_file .*nope\.txt: no such file"):
        P.prefs_file(tmp_path / "nope.txt")
    bad = tmp_path / "bad.gz"
    bad.write_bytes(b"\x1f\x8b not gzip")
    with pytest.raises(DatasetError, match="bad.gz: corrupt or truncated gzip data"):
        P.prefs_file(bad)


def test_a_gzip_bomb_is_refused_at_the_input_limit(tmp_path, monkeypatch):
    import gzip

    bomb = tmp_path / "bomb.prefs.gz"
    with gzip.open(bomb, "wb") as f:
        f.write(b"1 1\n")
        for _ in range(16):
            f.write(b"0 " * (1 << 19))
    assert bomb.stat().st_size < 100_000
    monkeypatch.setenv("MATCHBENCH_MAX_INPUT_BYTES", "8MiB")
    with pytest.raises(DatasetError, match=r"bomb\.prefs\.gz: expands to more than 8\.0 MiB"):
        P.prefs_file(bomb)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"1 1\n0\n\xe9\n")
    with pytest.raises(DatasetError, match=r"latin.txt: line 3: not UTF-8"):
        P.prefs_file(latin)


def test_relative_path_is_looked_up_in_data_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    _write(tmp_path / "data", VALID, "rel.txt")
    assert P.prefs_file("rel.txt", data_dir=tmp_path / "data").n_men == 3


# ---------------------------------------------------------------------------------------
# Generators


def test_sm_easy_lists():
    n = 3000
    inst = P.sm_easy(n, seed=5)
    assert (inst.n_men, inst.n_women, inst.name, inst.family) == (
        n,
        n,
        "sm_easy_n3000_s5",
        "sm_easy",
    )
    assert not inst.master and inst.purged == 0
    lens = np.diff(inst.mptr)
    assert lens.min() >= 1 and lens.max() <= n
    ln = np.log(n)
    assert lens.min() >= round(ln) and lens.max() <= round(2 * ln)
    assert abs(lens.mean() - 1.5 * ln) < 0.5
    suitors: list[set[int]] = [set() for _ in range(n)]
    for m in range(n):
        lst = inst.man_list(m).tolist()
        assert len(set(lst)) == len(lst)
        for w in lst:
            suitors[w].add(m)
    for w in range(n):
        lst = inst.woman_list(w).tolist()
        assert len(lst) == len(suitors[w]) and set(lst) == suitors[w]
    # random order, not sorted: most lists of length >= 3 are unsorted on both sides
    unsorted_m = np.mean([np.any(np.diff(inst.man_list(m)) < 0) for m in range(n)])
    long_w = [w for w in range(n) if inst.woman_list(w).size >= 3]
    unsorted_w = np.mean([np.any(np.diff(inst.woman_list(w)) < 0) for w in long_w])
    assert unsorted_m > 0.9 and unsorted_w > 0.6


def test_sm_easy_is_deterministic_and_small_n_works():
    a, b, c = P.sm_easy(500, seed=1), P.sm_easy(500, seed=1), P.sm_easy(500, seed=2)
    for x in ("mptr", "mlist", "wptr", "wlist", "mrank"):
        assert np.array_equal(getattr(a, x), getattr(b, x))
    assert not np.array_equal(a.mlist, c.mlist) or not np.array_equal(a.mptr, c.mptr)
    for n in (1, 2, 3, 5):
        for seed in range(20):
            inst = P.sm_easy(n, seed=seed)
            lens = np.diff(inst.mptr)
            assert lens.min() >= 1 and lens.max() <= n
            for m in range(n):
                assert len(set(inst.man_list(m).tolist())) == lens[m]
    with pytest.raises(DatasetError, match="n must be an integer >= 1"):
        P.sm_easy(0)


def test_sm_hard_is_master_lists_of_two_permutations():
    inst = P.sm_hard(1000, seed=3)
    assert inst.master and inst.name == "sm_hard_n1000_s3" and inst.family == "sm_hard"
    assert inst.n_men == inst.n_women == 1000 and inst.n_edges == 1000**2
    for order in (inst.mlist, inst.wlist):
        assert np.array_equal(np.sort(order), np.arange(1000))
    assert not np.array_equal(inst.mlist, inst.wlist)
    again = P.sm_hard(1000, seed=3)
    assert np.array_equal(again.mlist, inst.mlist) and np.array_equal(again.wlist, inst.wlist)
    assert SM().verify(inst, man_optimal(inst)).verified


@pytest.mark.parametrize("ties", [False, True])
def test_lemma31_lists_follow_the_global_edge_order(ties):
    args = dict(n_men=300, n_women=250, avg_degree=6, seed=4, ties=ties)
    g, inst = P.lemma31_graph(**args), P.sm_lemma31(**args)
    assert inst.n_men == 300 and inst.n_women == 250 and inst.n_edges == g.n_edges == 1800
    u, v, w = g.edges()
    assert (u < 300).all() and (v >= 300).all()
    if ties:
        assert set(np.unique(w)) <= {1.0, 2.0, 3.0}
    else:
        assert (w > 0).all() and (w <= 1).all()
    nbrs: dict[int, list[tuple[tuple[float, int, int], int]]] = {}
    for a, b, x in zip(u.tolist(), v.tolist(), w.tolist(), strict=True):
        key = edge_order_key(x, a, b)
        nbrs.setdefault(a, []).append((key, b - 300))
        nbrs.setdefault(b, []).append((key, a))
    for m in range(300):
        want = [y for _, y in sorted(nbrs.get(m, []), reverse=True)]
        assert inst.man_list(m).tolist() == want
    for j in range(250):
        want = [y for _, y in sorted(nbrs.get(300 + j, []), reverse=True)]
        assert inst.woman_list(j).tolist() == want


@pytest.mark.parametrize("ties", [False, True])
def test_lemma31_stable_matching_is_greedy(ties):
    args = dict(n_men=400, n_women=500, avg_degree=5, seed=9, ties=ties)
    g, inst = P.lemma31_graph(**args), P.sm_lemma31(**args)
    eu, ev, _ = edge_order(g)
    matched = np.zeros(g.n, dtype=bool)
    greedy = np.full(400, -1)
    for a, b in zip(eu.tolist(), ev.tolist(), strict=True):
        if not matched[a] and not matched[b]:
            matched[a] = matched[b] = True
            greedy[a] = b - 400
    assert np.array_equal(man_optimal(inst), greedy)
    assert SM().verify(inst, greedy).verified


# ---------------------------------------------------------------------------------------
# Smoke set


def _brute_force_man_optimal(inst: Preferences) -> np.ndarray:
    """The man-optimal stable matching of a complete n x n instance by enumeration."""
    n = inst.n_men
    rank_m = {(m, int(w)): r for m in range(n) for r, w in enumerate(inst.man_list(m))}
    rank_w = {(w, int(m)): r for w in range(n) for r, m in enumerate(inst.woman_list(w))}
    stable = []
    for wife in itertools.permutations(range(n)):
        husband = {w: m for m, w in enumerate(wife)}
        if not any(
            rank_m[m, w] < rank_m[m, wife[m]] and rank_w[w, m] < rank_w[w, husband[w]]
            for m in range(n)
            for w in range(n)
        ):
            stable.append(wife)
    best = [min(rank_m[m, s[m]] for s in stable) for m in range(n)]
    (opt,) = [s for s in stable if all(rank_m[m, s[m]] == best[m] for m in range(n))]
    return np.array(opt)


def test_smoke_set():
    for name in P.SMOKE:
        inst = P.prefs_smoke(name)
        assert inst.name == name and inst.family == "sm_smoke" and inst.n_edges > 0
        assert inst.problem == "smarriage"
        assert SM().verify(inst, man_optimal(inst)).verified
    textbook = P.prefs_smoke("textbook")
    assert man_optimal(textbook).tolist() == [1, 2, 3, 0]
    assert np.array_equal(_brute_force_man_optimal(textbook), [1, 2, 3, 0])
    assert np.array_equal(
        _brute_force_man_optimal(P.prefs_smoke("identical")),
        man_optimal(P.prefs_smoke("identical")),
    )
    assert P.prefs_smoke("smi_purge").purged == 3
    assert P.prefs_smoke("hard4").master
    empty = P.prefs_smoke("empty_lists")
    assert [inst.size for inst in (empty.man_list(0), empty.man_list(3), empty.woman_list(1))] == [
        0,
        0,
        0,
    ]
    with pytest.raises(DatasetError, match="available: textbook, smi_purge"):
        P.prefs_smoke("nope")
    with pytest.raises(DatasetError, match="a name is required"):
        P.prefs_smoke()


# ---------------------------------------------------------------------------------------
# Files, tags, configs


@pytest.mark.parametrize(
    "make",
    [
        lambda: P.sm_easy(200, seed=2),
        lambda: P.sm_hard(50, seed=1),
        lambda: P.prefs_smoke("smi_purge"),
    ],
)
def test_npz_round_trip(tmp_path, make):
    inst = make()
    inst.save_npz(tmp_path / "i.npz")
    back = Preferences.load_npz(tmp_path / "i.npz")
    assert (back.name, back.family, back.params, back.purged, back.master) == (
        inst.name,
        inst.family,
        inst.params,
        inst.purged,
        inst.master,
    )
    for x in ("mlist", "wlist", "mrank") + (() if inst.master else ("mptr", "wptr")):
        assert np.array_equal(getattr(back, x), getattr(inst, x)), x


def test_dataset_functions_are_tagged():
    for fn in (P.sm_easy, P.sm_hard, P.sm_lemma31):
        assert fn.matchbench_problem == "smarriage" and fn.matchbench_disk_cache is True
    for fn in (P.prefs_file, P.prefs_smoke):
        assert fn.matchbench_problem == "smarriage" and fn.matchbench_disk_cache is False
    assert P.lemma31_graph.matchbench_problem == "wmatch"
    assert spec_problem({"_target_": "matchbench.families.smarriage.datasets.prefs_smoke"}) == "smarriage"


def test_disk_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.delenv("MATCHBENCH_NO_DISK_CACHE", raising=False)
    for spec in (
        {"_target_": "matchbench.families.smarriage.datasets.sm_easy", "n": 300, "seed": 1},
        {"_target_": "matchbench.families.smarriage.datasets.sm_hard", "n": 30, "seed": 1},
    ):
        (spec,) = expand(spec)
        path = disk_cache_path(spec, tmp_path)
        assert path is not None and not path.exists()
        clear_cache()
        first = load(spec, data_dir=tmp_path)
        assert path.exists()
        clear_cache()
        second = load(spec, data_dir=tmp_path)
        assert second is not first and second.name == first.name
        assert np.array_equal(second.mlist, first.mlist) and np.array_equal(
            second.wlist, first.wlist
        )
    clear_cache()


@pytest.mark.parametrize(
    "name", ["prefs_file", "sm_smoke", "sm_easy", "sm_hard", "sm_lemma31", "sm_suite"]
)
def test_dataset_configs_name_smarriage_functions(name):
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml"))
    if name == "prefs_file":
        assert cfg["path"] == "???"
        cfg["path"] = "x.txt"
    specs = expand(cfg)
    assert specs and all(spec_problem(s) == "smarriage" for s in specs)
    if name == "sm_smoke":
        assert [s["name"] for s in specs] == list(P.SMOKE)
        for s in specs:
            assert load(s).n_edges > 0
    if name == "sm_suite":
        got = sorted((s["_target_"].rsplit(".", 1)[-1], s["n"], s["seed"]) for s in specs)
        assert got == sorted(
            [("sm_easy", n, 1) for n in (5_000_000, 10_000_000, 25_000_000)]
            + [("sm_hard", n, 1) for n in (100_000, 200_000, 500_000)]
        )
