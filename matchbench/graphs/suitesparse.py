"""The SuiteSparse Matrix Collection: download once, cache, read as bipartite graphs.

A matrix ``Group/Name`` is cached as ``<data_dir>/suitesparse/Group/Name/Name.mtx`` (or
``Name.mtx.gz``, when placed there by hand). When it is missing, :func:`resolve`
downloads ``<base URL>/Group/Name.tar.gz`` (base URL ``https://sparse.tamu.edu/MM``,
overridden by the ``base_url`` argument or ``$MATCHBENCH_SUITESPARSE_URL``) to a
temporary file, renames it into place, and extracts only ``Name.mtx`` from it with
tarfile's ``data`` filter (no absolute paths, links out of the folder or device files).
A complete ``Name.tar.gz`` already in the matrix's folder is extracted without
downloading. Without a network, the error says which file to fetch and where to put it.

Deveci et al. 2013, Sec. 4, take their 70 test matrices from this collection (then
called the University of Florida collection).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import shutil
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, TypeVar

from matchbench.core.errors import DatasetError
from matchbench.core.paths import default_data_dir
from matchbench.graphs.bipartite import BipartiteGraph

__all__ = ["DEFAULT_URL", "cache_path", "load", "read_with", "resolve", "split_name"]

DEFAULT_URL = "https://sparse.tamu.edu/MM"
_G = TypeVar("_G")
_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def split_name(name: str) -> tuple[str, str]:
    """``("HB", "bcsstk01")`` of ``"HB/bcsstk01"``.

    Raises
    ------
    DatasetError
        For a name not of the form ``Group/Name`` (letters, digits, ``_.+-``).
    """
    parts = str(name).strip().strip("/").split("/")
    if len(parts) != 2 or not all(_PART.match(p) for p in parts):
        raise DatasetError(
            f"suitesparse: {name!r} is not a matrix name of the form 'Group/Name' "
            "(e.g. 'HB/bcsstk01')"
        )
    return parts[0], parts[1]


def _base_url(base_url: str | None) -> str:
    return (base_url or os.environ.get("MATCHBENCH_SUITESPARSE_URL") or DEFAULT_URL).rstrip("/")


def cache_path(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """Where matrix ``Group/Name`` is cached: ``<data_dir>/suitesparse/Group/Name/Name.mtx``."""
    group, matrix = split_name(name)
    root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
    return root / "suitesparse" / group / matrix / f"{matrix}.mtx"


def _cached(target: Path) -> Path | None:
    for candidate in (target, target.with_name(target.name + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def _instructions(url: str, target: Path) -> str:
    return f"download {url} and extract {target.name} to {target}"


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


class _Progress:
    """Bytes received on stderr: one line redrawn on a terminal, else a line per quarter."""

    def __init__(self, label: str, total: int | None, stream: TextIO | None = None):
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.done = 0
        self.quarter = 0
        self.last = 0.0
        of = f" ({_size(total)})" if total else ""
        if not self.tty:
            self._write(f"downloading {label}{of}\n")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def _line(self) -> str:
        if self.total:
            pct = 100.0 * self.done / self.total
            return f"{self.label}: {_size(self.done)} / {_size(self.total)} ({pct:.0f}%)"
        return f"{self.label}: {_size(self.done)}"

    def update(self, n: int) -> None:
        self.done += n
        if self.tty:
            now = time.monotonic()
            if now - self.last >= 0.2:
                self.last = now
                self._write("\r" + self._line())
        elif self.total:
            quarter = min(4, 4 * self.done // self.total)
            if quarter > self.quarter and quarter < 4:
                self.quarter = quarter
                self._write(self._line() + "\n")

    def finish(self) -> None:
        self._write(("\r" if self.tty else "") + self._line() + "\n")


def _download(url: str, archive: Path, label: str, timeout: float) -> None:
    """``url`` to ``archive``, through a temporary file renamed into place when complete."""
    fd, tmp = tempfile.mkstemp(prefix=f".{archive.name}.", suffix=".part", dir=archive.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            request = urllib.request.Request(url, headers={"User-Agent": "matchbench"})
            with urllib.request.urlopen(request, timeout=timeout) as response:
                length = response.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else None
                progress = _Progress(label, total)
                while chunk := response.read(1 << 20):
                    out.write(chunk)
                    progress.update(len(chunk))
                progress.finish()
        if total is not None and progress.done != total:
            raise DatasetError(
                f"{label}: {url}: download ended after {progress.done} of {total} bytes"
            )
        os.replace(tmp, archive)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _extract(archive: Path, target: Path, label: str) -> None:
    """``Name.mtx`` from the archive to ``target``, through a temporary folder."""
    want = target.name
    scratch = Path(tempfile.mkdtemp(prefix=".extract-", dir=target.parent))
    try:
        found = None
        seen = []
        with tarfile.open(archive, "r:*") as tar:
            # Streaming: a collection archive is read once, however large.
            for member in tar:
                if len(seen) < 10:
                    seen.append(member.name)
                if member.isfile() and Path(member.name).name == want:
                    tar.extract(member, path=scratch, filter="data")
                    found = scratch / member.name
                    break
        if found is None:
            raise DatasetError(
                f"{label}: {archive} holds no {want} (first members: {', '.join(seen) or 'none'})"
            )
        os.replace(found, target)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise DatasetError(f"{label}: {archive}: cannot extract {want}: {exc}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def resolve(
    name: str,
    data_dir: str | os.PathLike | None = None,
    offline: bool = False,
    *,
    base_url: str | None = None,
    timeout: float = 60.0,
) -> Path:
    """The cached Matrix Market file of SuiteSparse matrix ``Group/Name``, fetched if needed.

    Parameters
    ----------
    name : str
        ``Group/Name`` as in the collection (``HB/bcsstk01``).
    data_dir : path, optional
        Cache root (default :func:`~matchbench.datasets.default_data_dir`).
    offline : bool
        Never download: a matrix not in the cache is an error.
    base_url : str, optional
        Collection's Matrix Market root; default ``$MATCHBENCH_SUITESPARSE_URL`` or
        ``https://sparse.tamu.edu/MM``.
    timeout : float
        Seconds to wait on the network per read.

    Returns
    -------
    Path
        ``.../suitesparse/Group/Name/Name.mtx`` (or ``Name.mtx.gz``).

    Raises
    ------
    DatasetError
        For a bad name, an HTTP error (404: no such matrix), no network or ``offline``
        (the message says which file to download and where to extract it), or an
        archive without ``Name.mtx``.
    """
    group, matrix = split_name(name)
    target = cache_path(name, data_dir)
    hit = _cached(target)
    if hit is not None:
        return hit
    url = f"{_base_url(base_url)}/{group}/{matrix}.tar.gz"
    label = f"suitesparse {group}/{matrix}"
    archive = target.with_name(f"{matrix}.tar.gz")
    if not archive.is_file():
        if offline:
            raise DatasetError(
                f"{label}: not in the cache and offline; {_instructions(url, target)}"
            )
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            _download(url, archive, label, timeout)
        except urllib.error.HTTPError as exc:
            hint = " (no such matrix in the collection?)" if exc.code == 404 else ""
            raise DatasetError(
                f"{label}: {url}: HTTP {exc.code} {exc.reason}{hint}; "
                f"or {_instructions(url, target)}"
            ) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise DatasetError(
                f"{label}: cannot download {url} ({reason}); {_instructions(url, target)}"
            ) from None
    try:
        _extract(archive, target, label)
    except DatasetError:
        # Another process of the same sweep may have extracted it and removed the archive.
        hit = _cached(target)
        if hit is not None:
            return hit
        raise
    archive.unlink(missing_ok=True)
    return target


def read_with(
    reader: Callable[..., _G],
    name: str,
    data_dir: str | os.PathLike | None = None,
    offline: bool = False,
    *,
    base_url: str | None = None,
    **options: Any,
) -> _G:
    """Matrix ``Group/Name``, fetched by :func:`resolve`, read by a Matrix Market reader.

    ``reader(path, name="Name", family="suitesparse", params={"suitesparse":
    "Group/Name"}, **options)``: every family's SuiteSparse dataset is its Matrix Market
    reader applied so (:func:`load` with :func:`matchbench.graphs.mtx.read`).
    """
    if base_url is None:
        path = resolve(name, data_dir, offline)
    else:
        path = resolve(name, data_dir, offline, base_url=base_url)
    group, matrix = split_name(name)
    params = {"suitesparse": f"{group}/{matrix}"}
    return reader(path, name=matrix, family="suitesparse", params=params, **options)


def load(
    name: str,
    data_dir: str | os.PathLike | None = None,
    offline: bool = False,
    base_url: str | None = None,
) -> BipartiteGraph:
    """Dataset function of ``conf/dataset/suitesparse.yaml``: matrix ``Group/Name``.

    The graph is named ``Name``, family ``suitesparse``; ``params["suitesparse"]`` holds
    ``Group/Name``. See :func:`resolve` for the cache and the download.
    """
    from matchbench.graphs.mtx import read

    return read_with(read, name, data_dir, offline, base_url=base_url)
