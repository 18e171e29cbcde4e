"""Shared fixtures; ``gpu`` tests skip (with the reason) where no GPU is usable."""

from __future__ import annotations

import pytest


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
