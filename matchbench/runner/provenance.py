"""Where a result came from: commit, package versions, host, GPU."""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
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


#: The checkout root: the folder that contains the ``matchbench/`` package directory.
_ROOT = Path(__file__).resolve().parents[2]
#: A commit stamp for trees without their ``.git`` (set by a deploy script or GPU-host command).
COMMIT_ENV = "MATCHBENCH_COMMIT"


def _git(root: Path, *args: str) -> str | None:
    """``git -C root ARGS``'s stripped stdout, or None when git fails or is missing."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _git_commit_of(root: Path) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the git checkout whose top-level folder is ``root``, else (None, None).

    ``git rev-parse HEAD`` alone walks up from ``root`` to any enclosing repository: a
    copy of the tree without ``.git`` inside another checkout (or a site-packages inside
    a project's ``.venv``) would report that other repository's commit. The commit counts
    only when the repository's top level is ``root`` itself.
    """
    top = _git(root, "rev-parse", "--show-toplevel")
    if not top or Path(top).resolve() != Path(root).resolve():
        return None, None
    commit = _git(root, "rev-parse", "HEAD")
    if not commit:
        return None, None
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return commit, None if status is None else bool(status)


def _installed_commit() -> str | None:
    """The commit pip recorded when this matchbench was installed from a VCS URL, or None.

    Read from the distribution's ``direct_url.json`` (PEP 610) ``vcs_info.commit_id``, and
    only when that distribution's files are the ones running: a tree on ``sys.path`` that
    shadows an installed matchbench must not take the installed one's commit.
    """
    try:
        dist = importlib.metadata.distribution("matchbench")
        text = dist.read_text("direct_url.json")
        if not text:
            return None
        installed = Path(dist.locate_file("matchbench/runner/provenance.py")).resolve()
        info = json.loads(text)
    except (importlib.metadata.PackageNotFoundError, OSError, ValueError):
        return None
    if installed != Path(__file__).resolve() or not isinstance(info, dict):
        return None
    vcs = info.get("vcs_info")
    commit = vcs.get("commit_id") if isinstance(vcs, dict) else None
    return commit if isinstance(commit, str) and commit else None


@functools.cache
def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the code matchbench runs from; None where it cannot be known.

    In order: the ``MATCHBENCH_COMMIT`` environment variable, an explicit stamp that
    wins (a copied tree can carry a stale ``.git``: seen on a GPU host whose copy's
    repository stood at an older commit); the git checkout whose top level is the folder
    holding ``matchbench/`` (only this source gives ``dirty``); the commit pip recorded
    for a VCS install; else None, never a guessed commit.
    """
    stamp = os.environ.get(COMMIT_ENV, "").strip()
    if stamp:
        return stamp, None
    commit, dirty = _git_commit_of(_ROOT)
    if commit:
        return commit, dirty
    return _installed_commit(), None


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
        from matchbench.gpu.common import device_info

        info = device_info()
        out.update({k: info[k] for k in ("gpu_model", "gpu_count", "cuda_driver_version", "cuda_runtime_version")})
    return out
