"""``mw_gpu`` checks that need no GPU: parameters, config, life cycle, skip rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from matchbench.core.params import configured
from matchbench.families.smarriage.mw_gpu import MWGPU
from matchbench.families.smarriage.problem import Preferences

CONF = Path(__file__).resolve().parents[2] / "conf" / "algorithm"


@pytest.mark.parametrize("tpb", [0, 31, 48, 2048, None, True, 64.0])
def test_rejects_bad_threads_per_block(tpb):
    with pytest.raises(ValueError, match="threads_per_block"):
        configured(MWGPU, threads_per_block=tpb)


@pytest.mark.parametrize("kernel", [True, "Fast", "", None])
def test_rejects_an_unknown_master_kernel(kernel):
    with pytest.raises(ValueError, match="master_kernel must be one of 'fast', 'lists'"):
        configured(MWGPU, master_kernel=kernel)


def test_config_instantiates():
    s = instantiate(OmegaConf.load(CONF / "mw_gpu.yaml"))
    assert s.params == {"threads_per_block": 256, "master_kernel": "fast"}
    assert type(s) is MWGPU and s.name == "mw_gpu" and s.problem == "smarriage"
    assert s.device == "gpu" and s.kernel_families == ("smarriage",)


def test_life_cycle_errors_before_prepare():
    s = configured(MWGPU)
    with pytest.raises(RuntimeError, match="before prepare"):
        s.run()
    assert s.counters() == {}


def test_skip_names_a_reason_without_gpu():
    p = Preferences.from_lists([[0]], [[0]], name="n1")
    skip, reason = configured(MWGPU).skip(p)
    if skip:  # only for want of a device: this instance needs a few bytes
        assert "CUDA device" in reason, reason
    else:
        assert reason is None
