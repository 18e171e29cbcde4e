"""Where files live: the data directory, dataset file paths, and the files shipped with
matchbench (the Hydra configs, the CUDA sources).

The configs and kernels sit at the top of the checkout (``conf/``, ``kernels/``); a wheel
carries them inside the package (``matchbench/conf``, ``matchbench/kernels``: the mapping
is in ``setup.py``). :func:`resource_dir` is the one place that knows both.
"""

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


#: The folder of the ``matchbench`` package: ``site-packages/matchbench`` of an install,
#: ``matchbench/`` of a checkout.
PACKAGE_DIR = Path(__file__).resolve().parents[1]


def resource_dir(name: str, marker: str, env: str | None = None) -> Path:
    """The folder ``name`` of files shipped with matchbench, found from any working directory.

    Looked for, in order: ``$env`` (when ``env`` names a set variable), ``matchbench/<name>``
    of an installed wheel, ``<name>/`` at the top of the checkout. A folder counts only
    when it holds ``marker`` (so a stray folder of the same name is passed over).

    Raises
    ------
    FileNotFoundError
        Naming every place looked in, and ``env`` if there is one.

    >>> (resource_dir("conf", "config.yaml") / "algorithm").is_dir()
    True
    """
    candidates = []
    if env and os.environ.get(env):
        candidates.append(Path(os.environ[env]).expanduser())
    candidates += [PACKAGE_DIR / name, PACKAGE_DIR.parent / name]
    for c in candidates:
        if (c / marker).is_file():
            return c
    hint = f"; set {env} to a folder holding {marker}" if env else ""
    raise FileNotFoundError(
        f"matchbench's {name}/ not found: no {marker} in "
        + ", ".join(str(c) for c in candidates)
        + f" (a wheel carries it as matchbench/{name}, a checkout as {name}/{hint})"
    )


def conf_dir() -> Path:
    """The shipped Hydra configs: ``matchbench/conf`` of an install, else ``conf/`` of the
    checkout. A user's own config folder is added beside it with ``--config-dir DIR``."""
    return resource_dir("conf", "config.yaml")


def __getattr__(name: str) -> str:
    # ``from matchbench.core.paths import CONFIG_DIR``: conf_dir() as a string, looked up
    # when asked for, so that importing this module never fails where the configs are not.
    if name == "CONFIG_DIR":
        return str(conf_dir())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def missing_file(path: Path) -> str | None:
    """Why ``path`` is not a dataset file to read (None when it is one): the readers'
    shared wording, so that a folder given as a path is named as such.

    >>> missing_file(Path("/"))
    'is a directory, not a file'
    >>> missing_file(Path("/no/such/place.mtx"))
    'no such file'
    """
    if path.is_file():
        return None
    if path.is_dir():
        return "is a directory, not a file"
    return "no such file"
