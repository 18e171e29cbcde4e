"""``leiden_gpu``: the host model on the CPU (the algorithm's logic), the device on a GPU.

Host tests (CI) run :func:`leiden_gpu_model`, the kernels' steps in numba, on random graphs
of every kind: every answer is certified (:meth:`Community.verify`: a partition, its Q
recomputed, and the claimed connectedness checked), every refined sub-community of every
level is connected in its level's graph (Traag et al. 2019, the refinement's guarantee),
and Q is close to the sequential Leiden's (:mod:`.leiden`) on graphs with community
structure. GPU tests (``-m gpu``) run :func:`leiden_gpu` on the same graphs: certified, and
on integer weights (every sum exact) the model's answer partition for partition, level for
level, counter for counter; plus a stress test of the refinement on hundreds of small graphs.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from matchbench.core.params import configured
from matchbench.families.community import datasets as D
from matchbench.families.community import leiden_gpu as LG
from matchbench.families.community import leiden_gpu_model as LM
from matchbench.families.community.connectivity import disconnected_communities
from matchbench.families.community.leiden import leiden
from matchbench.families.community.leiden_gpu import LeidenGPU, check_params, leiden_gpu
from matchbench.families.community.leiden_gpu_model import leiden_gpu_model
from matchbench.families.community.problem import Community, CommunityGraph, modularity

ROOT = Path(__file__).resolve().parents[2]
P = Community()
#: The preset's departures from GVE-Leiden's rules (conf/algorithm/leiden_gpu.yaml) before
#: the polish option ...
CURRENT = {"pickless_from": 2, "cycle_stop": True}
#: ... and with it: the preset.
POLISHED = {**CURRENT, "polish": 2}


# ---------------------------------------------------------------------------------------
# Graphs


def _random(seed: int, n: int, p: float, weights: str, isolated: int = 3) -> CommunityGraph:
    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    keep[rng.integers(iu.size)] = True
    m = int(keep.sum())
    if weights == "unit":
        w = np.ones(m)
    elif weights == "int":
        w = rng.integers(1, 5, m).astype(np.float64)
    else:
        w = rng.uniform(0.05, 3.0, m)
    return CommunityGraph.from_edges(
        iu[keep], ju[keep], w, n + isolated, name=f"random_s{seed}_n{n}_p{p}_{weights}"
    )


def _union(*graphs: CommunityGraph, name: str) -> CommunityGraph:
    """The disjoint union (a disconnected input)."""
    us, vs, ws, base = [], [], [], 0
    for g in graphs:
        row = np.repeat(np.arange(g.n), np.diff(g.ptr))
        up = row < g.ind
        us.append(row[up] + base)
        vs.append(g.ind[up].astype(np.int64) + base)
        ws.append(g.weight[up])
        base += g.n
    return CommunityGraph.from_edges(np.concatenate(us), np.concatenate(vs), np.concatenate(ws),
                                     base, name=name)


def _star(leaves: int) -> CommunityGraph:
    u = np.arange(1, leaves + 1)
    return CommunityGraph.from_edges(u, np.zeros(leaves, dtype=np.int64), np.ones(leaves),
                                     leaves + 1, name=f"star{leaves}")


def _build() -> list[tuple[str, CommunityGraph, bool]]:
    """``(kind, graph, structured)``: structured graphs are held to the quality bounds."""
    out: list[tuple[str, CommunityGraph, bool]] = []
    weights = ("unit", "int", "real")
    for s in range(30):
        n = 4 + (s * 37) % 300
        p = (0.01, 0.03, 0.08, 0.2, 0.5)[s % 5]
        out.append(("random", _random(s, n, p, weights[s % 3]), False))
    for s in range(16):
        n, k = 120 + 40 * s, 2 + s % 8
        p_in, p_out = (0.3, 0.4, 0.5)[s % 3], (0.002, 0.005)[s % 2]
        w = ("unit", "uniform")[(s // 2) % 2]
        out.append(("planted", D.community_planted(n, k, p_in, p_out, seed=s, weights=w), True))
    for s in range(2):
        out.append(("rgg", D.community_rgg(9 + s, seed=s), True))
        out.append(("delaunay", D.community_delaunay(9 + s, seed=s), True))
        out.append(("road", D.community_road(9 + s, seed=s), True))
        out.append(("grid", D.community_grid(7 + s), False))
        out.append(("kron", D.community_kron(8 + s, seed=s), False))
        out.append(("kron_uniform", D.community_kron(8 + s, seed=s, weights="uniform"), False))
    for name in D.SMOKE:
        out.append(("smoke", D.community_smoke(name), False))
    out += [
        ("disconnected", _union(D.community_planted(200, 4, 0.3, 0.01, seed=3),
                                D.community_grid(6), _random(7, 40, 0.1, "int"),
                                name="union"), True),
        ("star", _star(300), False),
        ("pair", CommunityGraph.from_edges([0], [1], [2.0], 2, name="pair"), False),
        ("path", CommunityGraph.from_edges([0, 1, 2], [1, 2, 3], np.ones(3), 4, name="path"),
         False),
        ("edgeless", CommunityGraph.from_edges([], [], [], 5, name="edgeless"), False),
    ]
    return out


@pytest.fixture(scope="module")
def graphs():
    return _build()


def _integer(g: CommunityGraph) -> bool:
    return bool(np.all(g.weight == np.round(g.weight)))


def _check_answer(g, part, c, loop=None):
    """Certified (connected claim included), Q as claimed, counters consistent."""
    assert part.connected is True
    if loop is None:
        v = P.verify(g, part)
        assert v.verified, v.reason
        q = v.objective
    else:
        q = modularity(g, part.community, loop)
        assert disconnected_communities(g, part.community).count == 0
    assert abs(part.modularity - q) <= 1e-9 * max(1.0, abs(q)), (part.modularity, q)
    assert c["communities"] == part.n_communities
    if part.levels is None:  # no aggregation, or a polish that moved vertices
        assert c["levels"] == 0 or c["polish_moves"] > 0
    else:
        assert c["levels"] == len(part.levels) and c["polish_moves"] == 0
    assert c["iterations"] == sum(c["level_iterations"])
    return q


# ---------------------------------------------------------------------------------------
# Host: parameters, the kernel contract, the configuration


def test_params_are_checked_naming_the_parameter():
    assert check_params() == LG.Params()
    for bad, word in [({"rounds": 0}, "rounds"), ({"tolerance": -1.0}, "tolerance"),
                      ({"aggregation_tolerance": 1.5}, "aggregation_tolerance"),
                      ({"prune": "yes"}, "prune"), ({"max_levels": 0}, "max_levels"),
                      ({"tolerance_drop": 0.5}, "tolerance_drop"), ({"nope": 1}, "nope"),
                      ({"pickless_from": -1}, "pickless_from"),
                      ({"cycle_stop": 1}, "cycle_stop")]:
        with pytest.raises(ValueError, match=word):
            check_params(**bad)


def test_kernel_constants_match_the_driver():
    """The Python/CUDA contract: the ``#define``s the driver relies on."""
    src = (ROOT / "kernels" / "community" / "leiden.cu").read_text()
    defines = dict(re.findall(r"^#define (LD_\w+) (\S+)", src, flags=re.M))
    assert int(defines["LD_BLOCK"]) == LG.BLOCK
    assert int(defines["LD_WARP_DEGREE"]) == LG.WARP_DEGREE
    assert int(defines["LD_SUB"]) == LG.SUB_GROUP and 32 % LG.SUB_GROUP == 0
    # a group's shared-memory table holds 2 x SUB_DEGREE slots: the lists must agree
    assert int(defines["LD_SUB_DEGREE"]) == LG.SUB_DEGREE
    assert int(defines["LD_HASH_MULT"].rstrip("u")) == LG.HASH_MULT
    assert float(defines["LD_MOVE_RTOL"]) == LM.MOVE_RTOL
    assert int(defines["LD_AGG_WARP_SLOTS"]) == LG.AGG_WARP_SLOTS
    consts = LG._module_kernels.__code__.co_consts
    names = [x for c in consts for x in (c if isinstance(c, tuple) else (c,))
             if isinstance(x, str) and x.startswith("leiden_")]
    entries = re.findall(r'extern "C" __global__ void (leiden_\w+)\(', src)
    assert sorted(names) == sorted(entries)


def test_the_devices_groups_keep_the_models_rounds():
    """``group_keys`` (the device's lists: a group of LD_SUB threads, a warp or a block per
    vertex, by degree) puts every vertex in the round ``round_keys`` (the host model's)
    gives it, so the group size changes no decision; vertices without edges stay last."""
    rng = np.random.default_rng(3)
    deg = rng.choice([0, 1, 5, 16, 17, 100, 128, 129, 5000], size=2000)
    for rounds in (1, 4, 7):
        model = LG.round_keys(np, deg.size, deg, rounds)
        dev = LG.group_keys(np, deg.size, deg, rounds)
        has = deg > 0
        assert np.array_equal(model[has] // 2, dev[has] // 3)
        assert np.array_equal(dev[has] % 3, (deg[has] > LG.SUB_DEGREE).astype(int) + (deg[has] > LG.WARP_DEGREE))
        assert np.all(dev[~has] == 3 * rounds) and np.all(model[~has] == 2 * rounds)


def test_the_kernel_profile_script_follows_the_driver(tmp_path):
    """docs/benchmarks/scripts/community_kernels_gpu.py wraps the drivers' steps by name and
    runs the yamls' presets (Leiden's and louvain_gpu_fast's): both must stay true; its
    graphs are stored and read back."""
    import importlib.util

    path = ROOT / "docs" / "benchmarks" / "scripts" / "community_kernels_gpu.py"
    spec = importlib.util.spec_from_file_location("community_kernels_gpu", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    for method, (name, steps, sync) in script.METHODS.items():
        cls = script.module(method)._DeviceLevels
        assert all(callable(getattr(cls, step, None)) for step in (*steps, sync, "_launch")), method
        assert callable(getattr(script.module(method), name)), method
        want = yaml.safe_load((ROOT / "conf" / "algorithm" / f"{method}.yaml").read_text())
        assert script.preset(method) == {k: v for k, v in want.items() if k != "_target_"}
        assert script.overrides([], method) == {}
    check_params(**script.preset())
    assert script.overrides(["t_level=0.01"], "louvain_gpu_fast") == {"t_level": 0.01}
    with pytest.raises(ValueError, match="t_level"):
        script.overrides(["t_level=-1"], "louvain_gpu_fast")
    with pytest.raises(ValueError, match="unknown"):
        script.overrides(["t_levle=1"], "louvain_gpu_fast")
    assert all(hasattr(D, fn) for fn, _ in script.GRAPHS.values())
    g = D.community_grid(5)
    np.savez(tmp_path / "g.npz", n=g.n, ptr=g.ptr, ind=g.ind, weight=g.weight)
    back = script.load("g", str(tmp_path))
    assert back.n == g.n and np.array_equal(back.ind, g.ind) and np.array_equal(back.weight, g.weight)
    # --set: YAML values over the preset, checked by the solver's check, naming the problem
    assert script.overrides(["polish=2", "cycle_stop=false"]) == {"polish": 2, "cycle_stop": False}
    with pytest.raises(ValueError, match="polish"):
        script.overrides(["polish=-1"])
    with pytest.raises(ValueError, match="unknown parameters"):
        script.overrides(["polsh=2"])
    with pytest.raises(ValueError, match="key=value"):
        script.overrides(["polish"])


def test_the_yaml_builds_the_solver():
    cfg = yaml.safe_load((ROOT / "conf" / "algorithm" / "leiden_gpu.yaml").read_text())
    assert cfg.pop("_target_") == "matchbench.families.community.leiden_gpu.LeidenGPU"
    s = configured(LeidenGPU)
    assert s.name == "leiden_gpu" and s.problem == "community" and s.device == "gpu"
    assert s.params == LG.Params(**cfg).__dict__
    assert s.kernel_families == ("leiden",)
    g = D.community_smoke("karate")
    assert s.estimate_bytes(g) > g.ind.shape[0] * 12


def test_the_variant_key_of_runs_before_polish_is_kept():
    """``polish: 0`` is how runs before the option ran: their ``variant`` key stays, so
    ``matchbench compare`` matches them; another value is a variant of its own."""
    before = ("aggregation_tolerance=0.8,cycle_stop=True,max_iterations=20,max_levels=10,"
              "pickless=True,pickless_from=2,prune=True,resolution=1.0,rounds=4,tolerance=0.01,"
              "tolerance_drop=10.0")  # run 20261127T050138-139 (commit 8b4eb90)
    assert LeidenGPU(**CURRENT).variant() == before
    polished = before.replace("pickless_from=2,", "pickless_from=2,polish=2,")
    assert LeidenGPU(**POLISHED).variant() == configured(LeidenGPU).variant() == polished


# ---------------------------------------------------------------------------------------
# Host: the model (the algorithm's logic)


class _Checked(LM.HostLevels):
    """The model, checking after every refinement that each sub-community is connected in
    its level's graph and lies inside one community (lines 26-43's guarantee)."""

    checked = 0

    def refine_round(self, r, parity):
        out = super().refine_round(r, parity)
        # the level's CSR (its two directions may differ in the last bits of real weights,
        # which a CommunityGraph refuses: only the structure is needed)
        g = SimpleNamespace(n=self.n, ptr=self.ptr, ind=self.ind, name="level")
        d = disconnected_communities(g, self.R)
        assert d.count == 0, d.describe()
        # a sub-community never leaves its community
        assert np.array_equal(self.C[self.R], self.C)
        _Checked.checked += 1
        return out


def test_every_refined_sub_community_is_connected(graphs, monkeypatch):
    monkeypatch.setattr(LM, "HostLevels", _Checked)
    _Checked.checked = 0
    for _kind, g, _ in graphs:
        part, c, _ = leiden_gpu_model(g)
        _check_answer(g, part, c)
    assert _Checked.checked > 100


def test_the_model_gives_certified_partitions(graphs):
    failures = []
    for kind, g, _ in graphs:
        for kw in ({}, {"rounds": 1}, {"prune": False, "pickless": False},
                   {"aggregation_tolerance": 1.0, "max_levels": 2}, CURRENT, POLISHED):
            part, c, _ = leiden_gpu_model(g, **kw)
            try:
                _check_answer(g, part, c)
            except AssertionError as exc:
                failures.append(f"{kind} {g.name} {kw}: {exc}")
    assert not failures, "\n".join(failures[:10])


def test_q_against_the_sequential_leiden(graphs):
    ratios = []
    for _kind, g, structured in graphs:
        if not structured:
            continue
        q = P.verify(g, leiden_gpu_model(g)[0]).objective
        q_ref = P.verify(g, leiden(g)[0]).objective
        ratios.append(q / q_ref)
        assert q >= 0.97 * q_ref, (g.name, q, q_ref)
    assert len(ratios) >= 20 and np.mean(ratios) >= 0.99, np.mean(ratios)


def test_cycle_stop_ends_a_level_at_its_first_repeat():
    """Without cycle_stop the late mesh levels alternate to max_iterations; with it a
    level ends at the first iteration repeating the one two before, and Q holds."""
    g = D.community_delaunay(16, seed=1)
    base = leiden_gpu_model(g, pickless_from=2)
    part, c, _ = leiden_gpu_model(g, pickless_from=2, cycle_stop=True)
    _check_answer(g, part, c)
    assert c["iterations"] < base[1]["iterations"]
    assert part.modularity >= base[0].modularity - 1e-3
    repeats = 0
    for dqs in c["level_dq"]:
        same = [i for i in range(2, len(dqs)) if abs(dqs[i] - dqs[i - 2]) <= 1e-9 * abs(dqs[i - 2])]
        assert not same or same[0] == len(dqs) - 1 or len(dqs) == LG.Params().max_iterations
        repeats += bool(same)
    assert repeats > 0


def test_polish_moves_vertices_once_more_and_keeps_communities_connected():
    """``polish``: after the levels, local moving on the input graph from the answer, then
    connected pieces. On a 2^16 mesh it moves vertices, raises Q, and the answer (without
    levels: they no longer compose to it) is certified; at most ``polish`` iterations; a
    graph the levels never aggregate is not polished."""
    g = D.community_delaunay(16, seed=1)
    kw = {"pickless_from": 2, "cycle_stop": True}
    base, cb, _ = leiden_gpu_model(g, **kw)
    part, c, _ = leiden_gpu_model(g, **kw, polish=3)
    _check_answer(g, part, c)
    assert c["polish_moves"] > 0 and 1 <= c["polish_iterations"] <= 3
    assert part.levels is None and base.levels is not None
    assert part.modularity > base.modularity
    # the levels themselves are untouched: the same moves up to the polish
    for key in ("level_vertices", "level_iterations", "level_moves", "level_merges"):
        assert c[key] == cb[key]
    # no aggregation (edgeless), so no polish; a triangle: one level, nothing left to move
    none = CommunityGraph.from_edges([], [], [], 4, name="edgeless")
    part, c, _ = leiden_gpu_model(none, polish=5)
    assert c["polish_iterations"] == 0 and c["levels"] == 0
    tri = CommunityGraph.from_edges([0, 1, 2], [1, 2, 0], np.ones(3), 3, name="tri")
    part, c, _ = leiden_gpu_model(tri, polish=5)
    _check_answer(tri, part, c)
    assert c["polish_iterations"] == 1 and c["polish_moves"] == 0 and part.levels is not None
    with pytest.raises(ValueError, match="polish"):
        check_params(polish=-1)


def test_polish_on_every_graph_gives_certified_partitions(graphs):
    """Every graph of the set with ``polish`` (and each kind of stop): certified, connected;
    on the structured ones Q at least the unpolished Q on average."""
    failures, gains = [], []
    for kind, g, structured in graphs:
        for kw in ({"polish": 1}, {**CURRENT, "polish": 20}):
            part, c, _ = leiden_gpu_model(g, **kw)
            try:
                q = _check_answer(g, part, c)
            except AssertionError as exc:
                failures.append(f"{kind} {g.name} {kw}: {exc}")
                continue
            if structured and kw["polish"] == 1:
                gains.append(q - P.verify(g, leiden_gpu_model(g)[0]).objective)
    assert not failures, "\n".join(failures[:10])
    assert len(gains) >= 20 and np.mean(gains) >= 0.0, gains


@pytest.mark.parametrize("seed", range(6))
def test_self_loops(seed):
    g = _random(100 + seed, 30 + 20 * seed, (0.05, 0.1, 0.3)[seed % 3], ("unit", "int")[seed % 2])
    rng = np.random.default_rng(seed)
    loop = np.where(rng.random(g.n) < 0.3, rng.integers(1, 6, g.n), 0).astype(np.float64)
    part, c, _ = leiden_gpu_model(g, loop=loop)
    _check_answer(g, part, c, loop=loop)


def test_edgeless_empty_and_tiny_graphs():
    g = CommunityGraph.from_edges([], [], [], 5, name="edgeless")
    part, c, _ = leiden_gpu_model(g)
    assert part.community.tolist() == [0, 1, 2, 3, 4] and part.modularity == 0.0
    assert P.verify(g, part).verified and c["levels"] == 0
    g0 = CommunityGraph.from_edges([], [], [], 0, name="empty")
    assert leiden_gpu_model(g0)[0].community.shape == (0,)
    tri = D.community_smoke("two_triangles")
    part = leiden_gpu_model(tri)[0]
    assert part.n_communities == 2 and abs(part.modularity - 5 / 14) < 1e-12


def test_the_model_repeats_exactly(graphs):
    for _kind, g, _ in graphs[:30]:
        a = leiden_gpu_model(g)
        b = leiden_gpu_model(g)
        assert np.array_equal(a[0].community, b[0].community) and a[1] == b[1]


@pytest.mark.parametrize("seed", range(300))
def test_stress_small_random_graphs_on_the_model(seed):
    """Small random graphs of every density, several components, isolated vertices: zero
    wrong answers."""
    rng = np.random.default_rng(10_000 + seed)
    parts = [_random(seed * 7 + i, int(rng.integers(2, 40)), float(rng.choice([0.05, 0.15, 0.4])),
                     ("unit", "int", "real")[(seed + i) % 3], isolated=int(rng.integers(0, 3)))
             for i in range(int(rng.integers(1, 4)))]
    g = _union(*parts, name=f"stress{seed}")
    part, c, _ = leiden_gpu_model(g, rounds=int(rng.integers(1, 5)))
    _check_answer(g, part, c)


# ---------------------------------------------------------------------------------------
# GPU


def _same_as_model(part, c, ref, rc):
    assert np.array_equal(part.community, ref.community)
    assert (part.levels is None) == (ref.levels is None)
    for a, b in zip(part.levels or [], ref.levels or [], strict=True):
        assert np.array_equal(a, b)
    assert abs(part.modularity - ref.modularity) <= 1e-12
    for key in ("levels", "iterations", "moves", "merges", "fallbacks", "communities",
                "level_vertices", "level_edges", "level_iterations", "level_moves",
                "level_communities", "level_refine_rounds", "level_merges",
                "polish_iterations", "polish_moves"):
        assert c[key] == rc[key], (key, c[key], rc[key])


@pytest.mark.gpu
def test_gpu_every_graph_gives_a_certified_partition(graphs):
    failures = []
    for kind, g, _ in graphs:
        part, c, t = leiden_gpu(g)
        try:
            _check_answer(g, part, c)
            assert t["solve"] > 0 and c["kernel_launches"] > 0
        except AssertionError as exc:
            failures.append(f"{kind} {g.name}: {exc}")
    assert not failures, "\n".join(failures)


@pytest.mark.gpu
@pytest.mark.parametrize("kw", [{}, {"rounds": 1}, {"prune": False, "pickless": False}, CURRENT,
                                POLISHED])
def test_gpu_integer_weights_give_the_host_models_answer(graphs, kw):
    n = 0
    failures = []
    for _kind, g, _ in graphs:
        if not _integer(g):
            continue
        part, c, _ = leiden_gpu(g, **kw)
        ref, rc, _ = leiden_gpu_model(g, **kw)
        try:
            _same_as_model(part, c, ref, rc)
        except AssertionError as exc:
            failures.append(f"{g.name}: {exc}")
        n += 1
    assert n >= 30
    assert not failures, "\n".join(failures[:10])


@pytest.mark.gpu
def test_gpu_q_against_the_sequential_leiden(graphs):
    ratios = []
    for _kind, g, structured in graphs:
        if structured:
            q = P.verify(g, leiden_gpu(g)[0]).objective
            q_ref = P.verify(g, leiden(g)[0]).objective
            ratios.append(q / q_ref)
            assert q >= 0.97 * q_ref, (g.name, q, q_ref)
    assert np.mean(ratios) >= 0.99, np.mean(ratios)


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(6))
def test_gpu_self_loops(seed):
    g = _random(100 + seed, 30 + 20 * seed, (0.05, 0.1, 0.3)[seed % 3], ("unit", "int")[seed % 2])
    rng = np.random.default_rng(seed)
    loop = np.where(rng.random(g.n) < 0.3, rng.integers(1, 6, g.n), 0).astype(np.float64)
    part, c, _ = leiden_gpu(g, loop=loop)
    _check_answer(g, part, c, loop=loop)
    _same_as_model(part, c, *leiden_gpu_model(g, loop=loop)[:2])


@pytest.mark.gpu
def test_gpu_stress_refinement_on_hundreds_of_small_graphs():
    """The refinement's rounds on 400 small random graphs (several components, isolated
    vertices, all weight kinds): zero wrong answers, and the model's on integer weights."""
    wrong = []
    for seed in range(400):
        rng = np.random.default_rng(20_000 + seed)
        parts = [_random(seed * 5 + i, int(rng.integers(2, 60)),
                         float(rng.choice([0.05, 0.15, 0.4])), ("unit", "int", "real")[(seed + i) % 3],
                         isolated=int(rng.integers(0, 3)))
                 for i in range(int(rng.integers(1, 4)))]
        g = _union(*parts, name=f"stress{seed}")
        rounds = int(rng.integers(1, 5))
        part, c, _ = leiden_gpu(g, rounds=rounds)
        try:
            _check_answer(g, part, c)
            if _integer(g):
                _same_as_model(part, c, *leiden_gpu_model(g, rounds=rounds)[:2])
        except AssertionError as exc:
            wrong.append(f"{g.name}: {exc}")
    assert not wrong, "\n".join(wrong[:10])


def _expected_pieces(g: CommunityGraph, comm: np.ndarray) -> np.ndarray:
    """Each vertex's piece labelled by the piece's smallest vertex, from scipy's connected
    components of the edges inside communities (independent of the model's search)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    row = np.repeat(np.arange(g.n), np.diff(g.ptr))
    keep = comm[row] == comm[g.ind]
    sub = csr_matrix((np.ones(int(keep.sum())), (row[keep], g.ind[keep])), shape=(g.n, g.n))
    _, piece = connected_components(sub, directed=False)
    first = np.full(piece.max() + 1, g.n, dtype=np.int64)
    np.minimum.at(first, piece, np.arange(g.n))
    return first[piece]


@pytest.mark.gpu
def test_gpu_stress_pieces_on_hundreds_of_memberships():
    """``leiden_pieces_link`` / ``_flatten`` (union-find by CAS hooking, races by design) on
    300 graph and membership pairs: long paths (grids, roads: deep trees), hubs (Kronecker),
    random graphs with isolated vertices; memberships of a few large or many small
    communities, or one community (the graph's components). Every label must be its piece's
    smallest vertex: zero wrong answers."""
    import cupy as cp

    pool = [D.community_grid(6), D.community_grid(9), D.community_road(10, seed=1),
            D.community_road(12, seed=2), D.community_kron(10, seed=3),
            D.community_delaunay(11, seed=4)]
    wrong = []
    for seed in range(300):
        rng = np.random.default_rng(30_000 + seed)
        if seed % 3 == 0:
            g = _random(seed, int(rng.integers(2, 400)), float(rng.choice([0.005, 0.02, 0.1])),
                        "unit", isolated=int(rng.integers(0, 4)))
        else:
            g = pool[seed % len(pool)]
        k = int(rng.choice([1, 2, 5, max(g.n // 50, 1), max(g.n // 3, 1)]))
        if seed % 2:  # contiguous id ranges: large pieces in meshes and roads
            comm = (np.arange(g.n) * k // max(g.n, 1)).astype(np.int32)
        else:
            comm = rng.integers(0, k, g.n).astype(np.int32)
        be = LG._DeviceLevels(LG._module_kernels(), LG.sm_count(), g.n,
                              cp.asarray(g.ptr.astype(np.int64)),
                              cp.asarray(g.ind.astype(np.int32)),
                              cp.asarray(g.weight.astype(np.float64)), cp.zeros(g.n), 4)
        be.C = cp.asarray(comm)
        got = be.pieces().get()
        want = _expected_pieces(g, comm)
        if not np.array_equal(got, want):
            bad = int(np.count_nonzero(got != want))
            wrong.append(f"seed {seed} ({g.name}, k={k}): {bad} vertices mislabelled")
    assert not wrong, "\n".join(wrong[:10])


@pytest.mark.gpu
def test_gpu_runs_repeat_exactly_on_integer_weights(graphs):
    for _kind, g, _ in graphs[:40]:
        if _integer(g):
            a, ca, _ = leiden_gpu(g)
            b, cb, _ = leiden_gpu(g)
            _same_as_model(a, ca, b, cb)


@pytest.mark.gpu
def test_gpu_matches_the_model_on_a_larger_kronecker_graph():
    """2^16 vertices: hubs in the block kernels, several levels."""
    g = D.community_kron(16, seed=2)
    part, c, _ = leiden_gpu(g)
    _check_answer(g, part, c)
    _same_as_model(part, c, *leiden_gpu_model(g)[:2])


def _device_aggregate(g, lab, n_new, loop):
    """One device aggregation of ``g`` by the dense labels ``lab``, as ``drive`` calls it
    (``setup`` first: the lists and the level's hash table), and the same by the host
    model; both graphs' rows sorted by column, on the host."""
    import cupy as cp

    ptr, ind = g.ptr.astype(np.int64), g.ind.astype(np.int32)  # the kernels' types
    w = g.weight.astype(np.float64)
    be = LG._DeviceLevels(LG._module_kernels(), LG.sm_count(), g.n, cp.asarray(ptr),
                          cp.asarray(ind), cp.asarray(w), cp.asarray(loop), 4)
    be.C = cp.asarray(lab, dtype=cp.int32)  # each refined community inside one community
    be.setup()
    be.aggregate(cp.asarray(lab, dtype=cp.int32), n_new)
    host = LM.HostLevels(g.n, ptr, ind, w, loop.copy(), 4)
    host.C = lab.astype(np.int32)
    host.aggregate(lab.astype(np.int32), n_new)

    def rows(ptr, ind, w):
        ptr, ind, w = np.asarray(ptr), np.asarray(ind), np.asarray(w)
        row = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
        order = np.lexsort((ind, row))
        return ptr, ind[order], w[order]

    return (rows(be.ptr.get(), be.ind.get(), be.w.get()) + (be.loop.get(), be.C.get()),
            rows(host.ptr, host.ind, host.w) + (host.loop, host.C))


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["kron_few", "kron_many", "grid_pairs", "random_real"])
def test_gpu_aggregation_gives_the_models_graph(case):
    """``leiden_agg_*`` (hashing, rows in table order) against the host model's sort: the
    same rows, weights and loops. ``kron_few``: three new vertices of about 20,000 entries
    each (``leiden_agg_emit_block``, hubs in ``leiden_agg_block``)."""
    rng = np.random.default_rng(len(case))
    if case.startswith("kron"):
        g = D.community_kron(12, seed=4)
    elif case == "grid_pairs":
        g = D.community_grid(8)
    else:
        g = _random(9, 200, 0.1, "real")
    k = {"kron_few": 3, "kron_many": 700, "grid_pairs": g.n // 2, "random_real": 40}[case]
    lab = np.sort(rng.permutation(g.n) % k) if case == "grid_pairs" else rng.integers(0, k, g.n)
    _, lab = np.unique(lab, return_inverse=True)  # dense
    n_new = int(lab.max()) + 1
    loop = np.where(rng.random(g.n) < 0.2, rng.integers(1, 4, g.n), 0).astype(np.float64)
    dev, ref = _device_aggregate(g, lab, n_new, loop)
    assert np.array_equal(dev[0], ref[0])  # ptr
    assert np.array_equal(dev[1], ref[1])  # columns
    exact = case != "random_real"
    for got, want in ((dev[2], ref[2]), (dev[3], ref[3])):  # weights, loops
        if exact:
            assert np.array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.array_equal(dev[4], ref[4])
    if case == "kron_few":  # the tables (2 x the members' degrees) take the block path
        assert 2 * np.bincount(lab, weights=np.diff(g.ptr)).min() > LG.AGG_WARP_SLOTS


@pytest.mark.gpu
def test_gpu_solver_life_cycle(graphs):
    g = next(g for _, g, _ in graphs if g.name.startswith("planted"))
    s = configured(LeidenGPU)
    assert s.skip(g) == (False, None)
    answers = []
    for _ in range(3):
        s.prepare(g)
        s.run()
        part = s.result()
        assert P.verify(g, part).verified
        answers.append(part.community)
        t, c = s.timings(), s.counters()
        assert {"solve", "transfer", "upload", "move", "refine"} <= set(t)
        assert t["solve"] > 0 and c["kernel_launches"] > 0 and c["host_syncs"] > 0
        assert 0 < s.memory_peak_bytes() <= s.estimate_bytes(g) + g.nbytes
    if _integer(g):
        assert all(np.array_equal(answers[0], a) for a in answers)
