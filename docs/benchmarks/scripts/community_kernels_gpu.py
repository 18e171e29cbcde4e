"""Where leiden_gpu's or louvain_gpu's time goes, kernel by kernel (issue #33): a
diagnostic, not a benchmark.

Times ``--method`` (``leiden_gpu``, the default, or ``louvain_gpu_fast``) with its preset
(``conf/algorithm/<method>.yaml``) on the family's graphs (best of three after a warm-up,
CUDA events around the solve), recomputes each answer's modularity on the host and counts
its disconnected communities; with ``--profile``, one more run records every kernel
launch (but those captured into a CUDA graph, louvain's ``iteration_graphs``: the graph's
launch is inside the ``iterate`` step) and every host step of the driver with CUDA events
and prints their sums per level (levels 3 and up together), and the host's own time: how
long the launch calls and the host syncs took on the host clock. A solve whose kernels sum
to much less than its time, while its launch calls sum to about as much, is bound by the
host's launch loop. The graphs are generated once, in parallel processes, into
``--cache``.

Run from the repository root on a GPU host, with the package importable::

    export PYTHONPATH=/tmp/site:$PWD
    python docs/benchmarks/scripts/community_kernels_gpu.py --graphs delaunay22,road22 --profile
    python docs/benchmarks/scripts/community_kernels_gpu.py --graphs delaunay22 --set polish=2
    python docs/benchmarks/scripts/community_kernels_gpu.py --method louvain_gpu_fast \
        --graphs road22 --profile --set t_level=0.01

The benchmark pages come from the pipeline's rows (``+experiment=leiden_sota``,
``+experiment=louvain_sota``); this script only says which kernels to look at, and
compares two trees on one machine when run from each in turn.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import os
import time
import types
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

#: name -> (generator in matchbench.families.community.datasets, its arguments)
GRAPHS = {
    "delaunay22": ("community_delaunay", {"scale": 22, "seed": 1}),
    "road22": ("community_road", {"scale": 22, "seed": 1}),
    "rgg22": ("community_rgg", {"scale": 22, "seed": 1}),
    "kron20": ("community_kron", {"scale": 20, "edge_factor": 16, "seed": 1}),
    "kron20ef48": ("community_kron", {"scale": 20, "edge_factor": 48, "seed": 1}),
}


def make(name: str, cache: str) -> str:
    """Generate graph ``name`` into ``cache/name.npz`` (CSR arrays); returns its name."""
    from matchbench.families.community import datasets

    fn, kwargs = GRAPHS[name]
    made = getattr(datasets, fn)(**kwargs)
    g = getattr(made, "graph", made)
    np.savez(Path(cache) / f"{name}.npz", n=g.n, ptr=g.ptr, ind=g.ind, weight=g.weight)
    return name


def load(name: str, cache: str) -> types.SimpleNamespace:
    z = np.load(Path(cache) / f"{name}.npz")
    return types.SimpleNamespace(n=int(z["n"]), ptr=z["ptr"], ind=z["ind"], weight=z["weight"])


#: method -> (its module in matchbench.families.community, the driver steps of the
#: module's _DeviceLevels to time, the method of _DeviceLevels that syncs to read back)
METHODS = {
    "leiden_gpu": ("leiden_gpu", ("setup", "move_iteration", "renumber", "refine_start",
                                  "refine_round", "pieces", "aggregate", "dense", "quality"),
                   "scalar_array"),
    "louvain_gpu_fast": ("louvain_gpu", ("setup", "iterate", "accept", "reject", "renumber",
                                         "labels", "contract", "host_graph", "compose"),
                         "_get"),
}


def module(method: str) -> Any:
    return importlib.import_module(f"matchbench.families.community.{METHODS[method][0]}")


def preset(method: str = "leiden_gpu") -> dict:
    import yaml

    path = Path(__file__).resolve().parents[3] / "conf" / "algorithm" / f"{method}.yaml"
    return {k: v for k, v in yaml.safe_load(path.read_text()).items() if k != "_target_"}


def solve(method: str, g: Any, params: dict) -> tuple[Any, dict, dict]:
    """One run of ``method`` on ``g``: (partition, counters, timings)."""
    mod = module(method)
    return getattr(mod, METHODS[method][0])(g, **params)


class Profile:
    """CUDA events around every kernel launch and every step of the driver, by level, and
    the host clock around the launch calls and the host syncs."""

    def __init__(self, method: str = "leiden_gpu") -> None:
        import cupy as cp

        self.cp, self.level, self.events = cp, -1, []
        self.host = collections.Counter()  # seconds on the host clock: launches, syncs
        self.calls = collections.Counter()
        self.cls = cls = module(method)._DeviceLevels
        _, self.steps, sync = METHODS[method]
        self._saved = {name: getattr(cls, name) for name in ("_launch", sync, *self.steps)}
        launch, get = self._saved["_launch"], self._saved[sync]

        def timed_launch(levels, name, grid, args):
            if cp.cuda.get_current_stream().is_capturing():  # louvain's iteration_graphs
                t = time.perf_counter()
                launch(levels, name, grid, args)
                self.host["captured launch"] += time.perf_counter() - t
                self.calls["captured launch"] += 1
                return
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            t = time.perf_counter()
            launch(levels, name, grid, args)
            self.host["launch"] += time.perf_counter() - t
            self.calls["launch"] += 1
            b.record()
            self.events.append((f"L{min(self.level, 3)} {name}", a, b))

        def timed_get(levels, arr):
            t = time.perf_counter()
            out = get(levels, arr)
            self.host["sync"] += time.perf_counter() - t
            self.calls["sync"] += 1
            return out

        cls._launch = timed_launch
        setattr(cls, sync, timed_get)
        for step in self.steps:
            setattr(cls, step, self._step(step, self._saved[step]))

    def _step(self, name, method):
        cp = self.cp

        def timed(levels, *args, **kwargs):
            if name == "setup":
                self.level += 1
            a = cp.cuda.Event()
            a.record()
            out = method(levels, *args, **kwargs)
            b = cp.cuda.Event()
            b.record()
            self.events.append((f"L{min(self.level, 3)} step {name}", a, b))
            return out

        return timed

    def close(self) -> None:
        for name, method in self._saved.items():
            setattr(self.cls, name, method)

    def report(self, top: int = 20) -> None:
        sums, counts = collections.defaultdict(float), collections.Counter()
        for key, a, b in self.events:
            sums[key] += self.cp.cuda.get_elapsed_time(a, b) / 1e3
            counts[key] += 1
        kernels = {k: v for k, v in sums.items() if " step " not in k}
        steps = {k: v for k, v in sums.items() if " step " in k}
        print(f"   kernels: {sum(kernels.values()) * 1e3:.1f} ms in all (L3: levels 3 and up)")
        for key, s in sorted(kernels.items(), key=lambda kv: -kv[1])[:top]:
            print(f"     {key:36s} {s * 1e3:8.2f} ms {counts[key]:5d} launches")
        print("   driver steps (their kernels included):")
        for key, s in sorted(steps.items(), key=lambda kv: -kv[1])[:top]:
            print(f"     {key:36s} {s * 1e3:8.2f} ms")
        for what in ("launch", "captured launch", "sync"):
            n = self.calls[what]
            if n:
                print(f"   host clock, {what} calls: {self.host[what] * 1e3:.1f} ms in {n} "
                      f"({self.host[what] / n * 1e6:.1f} us each)")


def overrides(pairs: list[str], method: str = "leiden_gpu") -> dict:
    """``--set key=value`` pairs (values read as YAML) over the preset, checked by the
    solver's own parameter check.

    >>> overrides(["polish=2", "cycle_stop=false"])
    {'polish': 2, 'cycle_stop': False}
    """
    import yaml

    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--set {pair!r}: expected key=value")
        out[key.strip()] = yaml.safe_load(value)
    p = {**preset(method), **out}
    if method == "leiden_gpu":
        module(method).check_params(**p)
    else:  # louvain_gpu: the paper's parameters, then the options by name
        from matchbench.families.community.louvain_stages import check_params

        head = [p.pop(k) for k in ("t_bin", "t_final", "bin_limit", "commit", "max_iterations")]
        try:
            check_params(*head, **p)
        except TypeError as exc:  # an unknown option
            raise ValueError(str(exc)) from None
    return out


def run(names: list[str], cache: str, profile: bool, extra: dict | None = None,
        method: str = "leiden_gpu") -> None:
    import cupy as cp

    from matchbench.families.community.connectivity import disconnected_communities
    from matchbench.families.community.problem import modularity
    from matchbench.graphs.weighted import WeightedGraph

    params = {**preset(method), **(extra or {})}
    print(f"{method}:", params)
    for name in names:
        g = load(name, cache)
        best = None
        for rep in range(4):  # a warm-up, then three
            part, counters, timings = solve(method, g, params)
            if rep:
                best = timings["solve"] if best is None else min(best, timings["solve"])
        graph = WeightedGraph(n=g.n, ptr=g.ptr, ind=g.ind, weight=g.weight)
        q = modularity(graph, part.community)
        cut = disconnected_communities(graph, part.community)
        print(f"== {name}: {best * 1e3:.2f} ms (best of 3), Q {q:.6f} recomputed ({part.modularity:.6f} "
              f"claimed), {counters['communities']} communities, {cut.count} disconnected, "
              f"{counters['kernel_launches']} launches, {counters.get('graph_launches', 0)} "
              f"graph launches, {counters['host_syncs']} syncs, "
              f"iterations {counters['level_iterations']}", flush=True)
        if profile:
            prof = Profile(method)
            try:
                cp.cuda.Device().synchronize()
                _, _, timings = solve(method, g, params)
                print(f"   profiled run: {timings['solve'] * 1e3:.1f} ms (events around each launch add to it); "
                      + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in timings.items() if k != "solve"))
                prof.report()
            finally:
                prof.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", default="delaunay22,road22,rgg22,kron20",
                        help=f"comma-separated, of {', '.join(GRAPHS)}")
    parser.add_argument("--cache", default="/tmp/leiden_kernels_graphs", help="where the graphs are kept")
    parser.add_argument("--profile", action="store_true", help="also time every launch and step")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a parameter over the preset (e.g. polish=2); repeatable")
    parser.add_argument("--method", default="leiden_gpu", choices=sorted(METHODS))
    args = parser.parse_args()
    try:
        extra = overrides(args.set, args.method)
    except ValueError as exc:
        parser.error(str(exc))
    names = [n.strip() for n in args.graphs.split(",") if n.strip()]
    unknown = [n for n in names if n not in GRAPHS]
    if unknown:
        parser.error(f"unknown graphs {unknown}; known: {', '.join(GRAPHS)}")
    os.makedirs(args.cache, exist_ok=True)
    todo = [n for n in names if not (Path(args.cache) / f"{n}.npz").exists()]
    if todo:
        t = time.perf_counter()
        with ProcessPoolExecutor(len(todo)) as ex:
            for name in ex.map(make, todo, [args.cache] * len(todo)):
                print(f"{name} generated ({time.perf_counter() - t:.0f} s)", flush=True)
    run(names, args.cache, args.profile, extra, args.method)


if __name__ == "__main__":
    main()
