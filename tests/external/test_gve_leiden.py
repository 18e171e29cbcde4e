"""GVE-Leiden (conf/algorithm/gve_leiden.yaml) as an outside program: its YAML's patterns
read the lines the patched program really prints, a stand-in that writes its files as the
patch does is certified through the YAML, and, where ``$GVE_LEIDEN_BIN`` names a build
(docs/peers/README.md; a CPU program, so any machine), the real program's answers are
certified, its Leiden guarantee (connected communities) included."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
from pathlib import Path

import pytest
import yaml

from matchbench.core.problem import get_problem
from matchbench.external import ExternalSolver

ROOT = Path(__file__).parents[2]
CONFIG = yaml.safe_load((ROOT / "conf" / "algorithm" / "gve_leiden.yaml").read_text())

#: The result lines of the unpatched program at the commit the YAML names, on karate (both
#: methods run when $MATCHBENCH_LEIDEN is unset): the patterns must take the Leiden one.
PRINTED = """\
2026-11-26 14:07:24 OMP_NUM_THREADS=2
2026-11-26 14:07:24 Loading graph /tmp/gl/karate.mtx ...
2026-11-26 14:07:24 order: 34 size: 156 [directed] {}
{0000012.5ms, 0000000.0ms mark, 0000000.0ms init, 0000000.1ms firstpass, 0000000.1ms locmove, \
0000000.0ms refine, 0000000.0ms aggr, 0.000e+00 aff, 0008 iters, 003 passes, 0.418803419 \
modularity, 0/4 disconnected} louvainStaticOmp
{0000001.5ms, 0000000.0ms mark, 0000000.0ms init, 0000000.0ms firstpass, 0000000.0ms locmove, \
0000000.0ms refine, 0000000.0ms aggr, 1.600e+01 aff, 0011 iters, 004 passes, 0.402038133 \
modularity, 0/3 disconnected} leidenStaticOmp
"""

#: A stand-in for the patched program: reads the Matrix Market file, writes a membership
#: (the connected components, 1-based, slot 0 first) where $MATCHBENCH_MEMBERSHIP_LEIDEN
#: says, and prints the Leiden line only when $MATCHBENCH_LEIDEN is "leiden".
STAND_IN = """\
import os, sys
import numpy as np
import scipy.io
import scipy.sparse.csgraph as cg
assert sys.argv[2:] == ["1", "1"] and os.environ["MATCHBENCH_LEIDEN"] == "leiden"
a = scipy.io.mmread(sys.argv[1])
_, label = cg.connected_components(a, directed=False)
with open(os.environ["MATCHBENCH_MEMBERSHIP_LEIDEN"], "w") as f:
    f.write("".join(f"{c}\\n" for c in [1, *(label + 1).tolist()]))
print(LINES)
"""


def _solver(**changes) -> ExternalSolver:
    cfg = {k: v for k, v in CONFIG.items() if k != "_target_"} | changes
    return ExternalSolver(**cfg)


@pytest.fixture(autouse=True)
def instance_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MATCHBENCH_EXTERNAL_DIR", str(tmp_path / "instances"))


def _smoke(name: str):
    from matchbench.families.community.datasets import community_smoke

    return community_smoke(name=name)


def test_the_patterns_take_the_leiden_line_of_the_real_output():
    flags = re.MULTILINE
    assert re.findall(CONFIG["time_pattern"], PRINTED, flags) == ["0000001.5"]
    assert re.findall(CONFIG["objective_pattern"], PRINTED, flags) == ["0.402038133"]
    assert CONFIG["time_unit"] == "ms"


def test_the_yaml_runs_a_stand_in_of_the_patched_program_and_certifies_it(tmp_path):
    program = tmp_path / "gve_leiden"
    leiden_line = PRINTED.splitlines()[-1]
    program.write_text(f"#!{sys.executable}\n" + STAND_IN.replace("LINES", repr(leiden_line)))
    program.chmod(0o755)
    s = _solver(bin=str(program), timeout_s=60)
    instance = _smoke("weighted_isolated")
    assert s.skip(instance) == (False, None)
    s.prepare(instance)
    s.run()
    answer = s.result()
    m = s.measurements()
    assert m.counters["time_source"] == "reported" and math.isclose(m.solve, 1.5e-3)
    assert m.counters["reported_objective"] == pytest.approx(0.402038133)
    v = get_problem("community").verify(instance, answer)
    assert v.verified and v.columns["disconnected_communities"] == 0


def test_without_a_build_it_is_skipped_naming_the_variable(monkeypatch):
    monkeypatch.delenv("GVE_LEIDEN_BIN", raising=False)
    skipped, why = _solver().skip(_smoke("karate"))
    assert skipped and "GVE_LEIDEN_BIN" in why


@pytest.mark.skipif(
    not os.environ.get("GVE_LEIDEN_BIN"),
    reason="no GVE-Leiden build ($GVE_LEIDEN_BIN; docs/peers/README.md says how)",
)
@pytest.mark.parametrize(
    "name", ["two_triangles", "ring_of_cliques", "karate", "weighted_isolated"]
)
def test_the_real_program_is_certified_with_connected_communities(name):
    instance = _smoke(name)
    s = _solver(timeout_s=120)
    assert s.skip(instance) == (False, None)
    s.prepare(instance)
    s.run()
    answer = s.result()
    m = s.measurements()
    assert m.counters["time_source"] == "reported" and m.process >= m.solve >= 0
    problem = get_problem("community")
    v = problem.verify(instance, answer)
    assert v.verified, v.reason
    # it prints Q computed in float weights, 9 digits
    assert m.counters["reported_objective"] == pytest.approx(v.objective, abs=1e-5)
    # Leiden's guarantee, checked by the certificate once the answer claims it
    claimed = problem.verify(instance, dataclasses.replace(answer, connected=True))
    assert claimed.verified, claimed.reason
