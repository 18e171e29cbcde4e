"""matchbench: benchmarking and batch processing of GPU graph-matching algorithms.

Importing this package needs neither a GPU nor CuPy: GPU modules import ``cupy``
inside the functions that use it.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
