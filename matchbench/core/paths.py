"""Where data lives: the data directory and dataset file paths."""

from __future__ import annotations

import os
from pathlib import Path


def default_data_dir() -> Path:
    """Where downloaded datasets and generated instances are cached.

    ``$MATCHBENCH_DATA_DIR`` when set, else ``<user cache dir>/matchbench/datasets``
    (``platformdirs.user_cache_dir``; ``~/.cache/matchbench/datasets`` on Linux).
    """
    env = os.environ.get("MATCHBENCH_DATA_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("matchbench")) / "datasets"


def resolve_path(path: str | os.PathLike, data_dir: str | os.PathLike | None = None) -> Path:
    """A dataset file's path: ``path`` itself, or, when it is relative and does not exist
    from the working directory, ``data_dir / path`` if that exists (``data_dir`` defaults
    to :func:`default_data_dir`). The readers report a missing file under the returned path.
    """
    p = Path(path).expanduser()
    if not p.is_absolute() and not p.exists():
        alt = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
        if (alt / p).exists():
            p = alt / p
    return p
