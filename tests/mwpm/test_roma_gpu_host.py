"""``roma1_gpu`` and ``roma2_gpu`` checks that need no GPU: parameters, configs, life cycle,
skip rules, and the verifier's device switch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from matchbench.core.params import configured
from matchbench.families.mwpm.datasets import complete_uniform
from matchbench.families.mwpm.init import shuffled_matching
from matchbench.families.mwpm.problem import GPU_CHECK_MIN_N, best_flip
from matchbench.families.mwpm.roma_gpu import Roma1GPU, Roma2GPU

CONF = Path(__file__).resolve().parents[2] / "conf" / "algorithm"


@pytest.mark.parametrize("cls", [Roma1GPU, Roma2GPU])
@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"max_phases": -1}, "max_phases"),
        ({"max_phases": True}, "max_phases"),
        ({"max_phases": 2.0}, "max_phases"),
        ({"threshold": -1e-9}, "threshold"),
        ({"threshold": float("nan")}, "threshold"),
        ({"threshold": "0"}, "threshold"),
        ({"threads_per_block": 48}, "threads_per_block"),
        ({"threads_per_block": 2048}, "threads_per_block"),
        ({"threads_per_block": None}, "threads_per_block"),
    ],
)
def test_rejects_bad_parameters_naming_the_solver(cls, kw, match):
    with pytest.raises(ValueError, match=match) as err:
        configured(cls, **kw)
    assert cls.name in str(err.value)


@pytest.mark.parametrize(("name", "cls"), [("roma1_gpu", Roma1GPU), ("roma2_gpu", Roma2GPU)])
def test_configs_instantiate_with_the_thesis_settings(name, cls):
    s = instantiate(OmegaConf.load(CONF / f"{name}.yaml"))
    assert type(s) is cls and s.name == name and s.problem == "mwpm" and s.device == "gpu"
    want = {"max_phases": 8, "threshold": 1e-5, "threads_per_block": 1024}
    if name == "roma2_gpu":
        want["on_fail"] = "wait"
    assert s.params == want
    assert s.kernel_families == ("roma",)


def test_on_fail_is_a_roma2_choice():
    assert configured(Roma2GPU, on_fail="rescan").params["on_fail"] == "rescan"
    for bad in ("retry", None, True):
        with pytest.raises(ValueError, match="roma2_gpu: on_fail must be one of 'wait', 'rescan'"):
            configured(Roma2GPU, on_fail=bad)
    with pytest.raises(ValueError, match="roma1_gpu: on_fail must be one of 'wait'"):
        configured(Roma1GPU, on_fail="rescan")
    assert "on_fail" not in configured(Roma1GPU).params


def test_grids_one_block_per_vertex_or_one_thread_per_vertex():
    assert configured(Roma2GPU, threads_per_block=256)._grid(1000) == (1000, 256)
    assert configured(Roma1GPU, threads_per_block=256)._grid(1000) == (4, 256)
    assert configured(Roma1GPU, threads_per_block=1024)._grid(131072) == (128, 1024)


@pytest.mark.parametrize("cls", [Roma1GPU, Roma2GPU])
def test_life_cycle_errors_before_prepare(cls):
    s = configured(cls)
    with pytest.raises(RuntimeError, match="before prepare"):
        s.run()
    with pytest.raises(RuntimeError, match="before run"):
        s.result()
    assert s.counters() == {} and s.timings() == {}


def test_skip_names_a_reason_or_estimates_the_matrix():
    g = complete_uniform(64, seed=1)
    s = configured(Roma2GPU)
    assert s.estimate_bytes(g) >= 4 * 64 * 64
    skip, reason = s.skip(g)
    if skip:  # only for want of a device: this instance needs 17 KiB
        assert "CUDA device" in reason, reason
    else:
        assert reason is None


def test_best_flip_device_switch():
    g = complete_uniform(40, seed=2)
    mate = shuffled_matching(g.n, 1)
    # below GPU_CHECK_MIN_N, and with no matrix resident, "auto" is the CPU scan
    assert g.n < GPU_CHECK_MIN_N
    assert best_flip(g, mate, 0.0) == best_flip(g, mate, 0.0, device="cpu")
    with pytest.raises(ValueError, match="device must be"):
        best_flip(g, mate, 0.0, device="tpu")
    assert np.isfinite(best_flip(g, mate, 0.0, device="cpu")["gain"])
