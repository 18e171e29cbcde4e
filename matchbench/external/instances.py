"""Instance files for outside programs: written once per machine, reused by every program
and repetition, never inside a timed region.

A file is named by the instance's content (a BLAKE2 digest of its pickle, streamed: no
copy of the arrays) and the format, in :func:`cache_dir`; it is written to a temporary
name and renamed into place, so workers that write the same instance at once never see a
half-written file. Within a process the digest is computed once per instance object.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import weakref
from pathlib import Path
from typing import Any

#: Environment variable naming the directory of instance files (default: a folder of
#: the system's temporary directory, per user).
ENV_DIR = "MATCHBENCH_EXTERNAL_DIR"

_digests: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def cache_dir() -> Path:
    """Where instance files are written (``$MATCHBENCH_EXTERNAL_DIR`` or a per-user temp folder)."""
    env = os.environ.get(ENV_DIR)
    if env:
        path = Path(env).expanduser()
    else:
        user = os.environ.get("USER") or str(os.getuid()) if hasattr(os, "getuid") else "user"
        path = Path(tempfile.gettempdir()) / f"matchbench-external-{user}"
    path.mkdir(parents=True, exist_ok=True)
    return path


class _Hasher:
    """A file-like sink that hashes what pickle writes, so nothing is copied."""

    def __init__(self) -> None:
        self.h = hashlib.blake2b(digest_size=16)

    def write(self, b: Any) -> int:
        self.h.update(b)
        return len(memoryview(b))


def digest(obj: Any) -> str:
    """32 hex digits naming ``obj``'s content (its pickle, hashed as it streams).

    Computed once per object of a process (instances are not changed after loading).
    """
    try:
        return _digests[obj]
    except (KeyError, TypeError):
        pass
    sink = _Hasher()
    pickle.dump(obj, sink, protocol=5)
    value = sink.h.hexdigest()
    try:
        _digests[obj] = value
    except TypeError:  # not weak-referenceable: hash again next time
        pass
    return value


def instance_file(objs: Any, fmt: str, suffix: str, write: Any) -> tuple[Path, float | None]:
    """The file of ``objs`` (an instance, or a list of them) in format ``fmt``.

    ``write(objs, path)`` makes it when it is not there yet. Returns the path and the
    seconds writing took (None: it was there).
    """
    import time

    key = digest(list(objs)) if isinstance(objs, list) else digest(objs)
    path = cache_dir() / f"{key}.{fmt}{suffix}"
    if path.exists():
        return path, None
    t0 = time.perf_counter()
    fd, tmp = tempfile.mkstemp(prefix=f".{key}.", dir=path.parent)
    os.close(fd)
    try:
        write(objs, Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path, time.perf_counter() - t0
