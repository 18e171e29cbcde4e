"""Shared fixtures; ``gpu`` tests skip (with the reason) where no GPU is usable."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_data_dir(tmp_path_factory):
    """Generated-instance cache files go to a temporary folder, not the user's cache
    (task processes and subprocess sweeps inherit the variable)."""
    old = os.environ.get("MATCHBENCH_DATA_DIR")
    os.environ["MATCHBENCH_DATA_DIR"] = str(tmp_path_factory.mktemp("matchbench-data"))
    yield
    if old is None:
        os.environ.pop("MATCHBENCH_DATA_DIR", None)
    else:
        os.environ["MATCHBENCH_DATA_DIR"] = old


def _gpu_available() -> tuple[bool, str]:
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install
        return False, f"cupy not importable: {exc}"
    try:
        if cupy.is_available():
            return True, ""
    except Exception as exc:
        return False, f"cupy.is_available() failed: {exc}"
    return False, "cupy.is_available() is false (no usable CUDA device)"


def pytest_collection_modifyitems(config, items):
    ok, reason = _gpu_available()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {reason}")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)
