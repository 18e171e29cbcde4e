"""Where a result came from: commit, package versions, host, GPU."""

from __future__ import annotations

import functools
import importlib.metadata
import socket
import subprocess
from pathlib import Path
from typing import Any

from matchbench.results.schema import to_json

_PACKAGES = (
    "matchbench", "numpy", "scipy", "numba", "pandas", "pyarrow", "dask", "distributed",
    "hydra-core", "fast-matrix-market", "cupy-cuda12x", "cupy-cuda13x", "cupy", "dask-cuda",
    "python-igraph", "networkit", "lap",
)


@functools.cache
def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout matchbench runs from, or (None, None)."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if commit.returncode != 0:
            return None, None
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10,
        )
        return commit.stdout.strip(), bool(status.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None, None


@functools.cache
def package_versions() -> str:
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return to_json(out)


def client_provenance() -> dict[str, Any]:
    """Columns fixed for a whole run, computed once where the sweep starts."""
    import matchbench

    commit, dirty = git_state()
    return {
        "git_commit": commit,
        "git_dirty": dirty,
        "matchbench_version": matchbench.__version__,
        "package_versions": package_versions(),
    }


def worker_provenance(device: str) -> dict[str, Any]:
    """Host and GPU columns, computed where the task runs."""
    out: dict[str, Any] = {"host": socket.gethostname()}
    if device == "gpu":
        from matchbench.solvers.gpu.common import device_info

        info = device_info()
        out.update({k: info[k] for k in ("gpu_model", "gpu_count", "cuda_driver_version", "cuda_runtime_version")})
    return out
