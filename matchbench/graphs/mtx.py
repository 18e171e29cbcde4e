"""Matrix Market files as bipartite graphs, and as weighted undirected graphs.

:func:`read` is the bipartite reading (below); :func:`read_weighted` is the one weighted
reading of a square file that the weighted-matching and community families share (vertex i
per row and column, an edge per off-diagonal entry, duplicates merged by the largest value,
a ``general`` file symmetrized), each family adding its own policy for values and loops.

A matrix with ``m`` rows and ``n`` columns is the bipartite graph rows x columns: stored
entry (i, j) is the edge between row vertex i and column vertex j (Deveci et al. 2013,
Sec. 4, reads the SuiteSparse matrices this way). Only the pattern matters:

- field ``pattern``, ``integer`` and ``real`` are read; ``complex`` is refused (a
  ``DatasetError``): no matching benchmark uses it, and refusing it keeps hermitian
  files, whose pattern rule needs the complex field, out as well. ``real hermitian``
  (which the format does not define) is read like ``symmetric``.
- ``symmetric`` and ``skew-symmetric`` files store one triangle; both mean the pattern
  of both triangles, so entry (i, j) also gives edge (j, i).
- an explicitly stored zero is an edge (the structure is what the file stores, as in
  the SuiteSparse pattern); ``params["n_explicit_zeros"]`` says how many.
- a diagonal entry (i, i) is the edge row i - column i, legitimate in a bipartite
  reading, and kept; ``params["n_diagonal"]`` counts them.
- duplicate entries (after the symmetric expansion) are merged, counted in
  ``params["n_duplicates"]`` and reported by a :class:`DatasetWarning`.

Parsing is fast_matrix_market's (multi-threaded, ``.mtx`` or ``.mtx.gz``). Every problem
with a file raises :class:`DatasetError` naming the file, the line where the reader
reports one, and the problem. A file that the reader accepts but that cannot be a graph
(dense ``array`` format, a vector, a non-square symmetric header, no rows, no entries, a
header promising more entries than the file can hold) is refused before parsing.
Values are not checked beyond what the reader parses: trailing extra tokens on an entry
line are ignored and an ``integer`` field's ``1.5`` reads as 1 (fast_matrix_market does
not check these; the pattern is all a graph needs).
"""

from __future__ import annotations

import gzip
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from matchbench.core import limits
from matchbench.core.errors import DatasetError, DatasetWarning
from matchbench.core.paths import missing_file, resolve_path
from matchbench.graphs.bipartite import INT32_MAX, BipartiteGraph

__all__ = ["WeightedEntries", "load", "read", "read_weighted", "stem", "write"]

_FIELDS = ("pattern", "integer", "real")
_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")
# Smallest entry line: "1 1\n" (pattern) or "1 1 0\n" (gzip: limits.GZIP_MAX_RATIO).
_MIN_ENTRY_BYTES = {"pattern": 4, "integer": 6, "real": 6}


def stem(path: Path) -> str:
    """The file name without ``.mtx`` / ``.mtx.gz``: the default instance name."""
    name = path.name
    for ext in (".gz", ".mtx"):
        if name.endswith(ext):
            name = name[: -len(ext)]
    return name


def _open_text(path: Path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    if gz:
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _line(path: Path, lineno: int) -> str | None:
    """Line ``lineno`` (1-based) of the file, stripped; only read on the error path."""
    try:
        with _open_text(path) as f:
            for i, text in enumerate(f, 1):
                if i == lineno:
                    return text.strip()
    except (OSError, EOFError):
        return None
    return None


def _size_line(path: Path) -> tuple[int, str] | None:
    """(line number, text) of the header's size line: the first after the comments."""
    try:
        with _open_text(path) as f:
            for i, text in enumerate(f, 1):
                if i > 1 and text.strip() and not text.startswith("%"):
                    return i, text.strip()
    except (OSError, EOFError):
        return None
    return None


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _translate(path: Path, exc: BaseException, header: Any | None) -> DatasetError:
    """fast_matrix_market's message made specific: file, line, what is wrong."""
    msg = str(exc).strip() or type(exc).__name__
    where = str(path)
    m = re.match(r"Line (\d+): (.*)", msg, re.DOTALL)
    lineno, what = (int(m.group(1)), m.group(2).strip()) if m else (None, msg)
    nnz = getattr(header, "nnz", None)

    if isinstance(exc, MemoryError):
        return DatasetError(f"{where}: not enough memory for the {nnz} entries its header claims")
    if what.startswith("Truncated file"):
        k = re.search(r"another (\d+)", what)
        missing = f" ({k.group(1)} missing)" if k else ""
        return DatasetError(
            f"{where}: fewer entries than the {nnz} the header says: file ends early{missing}"
        )
    if what.startswith("Too many lines"):
        return DatasetError(f"{where}: line {lineno}: more entries than the {nnz} the header says")
    if "Missing banner" in what:
        return DatasetError(
            f"{where}: line 1: not a Matrix Market file (no '%%MatrixMarket' banner)"
        )
    if "header" in what.lower() and "dimension line" not in what:
        prefix = f"line {lineno}: " if lineno is not None else ""
        return DatasetError(f"{where}: {prefix}bad header ({what.rstrip('.')})")
    if lineno is not None and "index out of bounds" in what and header is not None:
        side = "row" if what.startswith("Row") else "column"
        bound = header.nrows if side == "row" else header.ncols
        text = _line(path, lineno)
        value = None
        if text is not None:
            tokens = text.split()
            pos = 0 if side == "row" else 1
            value = tokens[pos] if len(tokens) > pos else None
        shown = f" {value}" if value is not None else ""
        return DatasetError(
            f"{where}: line {lineno}: {side} index{shown} out of range [1, {bound}]"
        )
    if lineno is None and ("dimension line" in what or "Invalid integer" in what):
        size = _size_line(path)
        if size is not None and header is None:
            return DatasetError(
                f"{where}: line {size[0]}: bad size line {_short(size[1])!r} "
                f"(expected 'rows columns entries')"
            )
    if lineno is not None and ("Invalid" in what or "out of range" in what):
        text = _line(path, lineno)
        kind = {"Invalid integer value.": "non-numeric or non-integer field"}.get(
            what, "non-numeric field" if "Invalid" in what else what.rstrip(".").lower()
        )
        shown = f" in {_short(text)!r}" if text is not None else ""
        return DatasetError(f"{where}: line {lineno}: {kind}{shown} ({what.rstrip('.')})")
    prefix = f"line {lineno}: " if lineno is not None else ""
    return DatasetError(f"{where}: {prefix}{what}")


def _read_header(path: Path):
    import fast_matrix_market as fmm

    try:
        header = fmm.read_header(str(path))
    except (ValueError, OverflowError, RuntimeError, OSError, EOFError) as exc:
        raise _translate(path, exc, None) from None
    where = str(path)
    if header.object != "matrix":
        raise DatasetError(f"{where}: a Matrix Market {header.object}, not a matrix")
    if header.format != "coordinate":
        raise DatasetError(
            f"{where}: dense '{header.format}' format; a graph needs the sparse 'coordinate' format"
        )
    if header.field == "complex":
        raise DatasetError(f"{where}: field 'complex' is not supported (pattern, integer, real)")
    if header.field not in _FIELDS:
        raise DatasetError(f"{where}: unknown field {header.field!r}")
    if header.symmetry not in _SYMMETRIES:
        raise DatasetError(f"{where}: unknown symmetry {header.symmetry!r}")
    if header.symmetry != "general" and header.nrows != header.ncols:
        raise DatasetError(
            f"{where}: {header.symmetry} header but the matrix is not square "
            f"({header.nrows} x {header.ncols})"
        )
    if header.nrows == 0 or header.ncols == 0:
        raise DatasetError(f"{where}: empty graph ({header.nrows} rows x {header.ncols} columns)")
    if header.nnz == 0:
        raise DatasetError(f"{where}: empty graph (the header says 0 entries)")
    # A wrong count in the header would otherwise make the reader allocate it up front.
    size = path.stat().st_size * (limits.GZIP_MAX_RATIO if limits.is_gzip(path) else 1)
    if header.nnz * _MIN_ENTRY_BYTES[header.field] > size:
        raise DatasetError(
            f"{where}: the header says {header.nnz} entries, more than the file can hold "
            "(wrong count or truncated file)"
        )
    # ... and absurd dimensions would make it allocate index arrays of nrows + 1 entries
    # (a 90-byte file declaring 2e9 x 2e9 asked for 16 GB) before reading any entry.
    limits.check_dimensions(int(header.nrows), int(header.ncols), int(header.nnz), path, "")
    return header


def read(
    path: str | os.PathLike,
    *,
    name: str | None = None,
    family: str = "mtx",
    params: dict[str, Any] | None = None,
) -> BipartiteGraph:
    """Read a Matrix Market file (``.mtx`` or ``.mtx.gz``) as a bipartite graph.

    Parameters
    ----------
    path : path
        The file; gzip-compressed files are recognised by their content.
    name : str, optional
        Instance name; default the file name without ``.mtx``/``.mtx.gz``.
    family : str
        Dataset family recorded on the graph.
    params : dict, optional
        Extra entries for ``graph.params``.

    Returns
    -------
    BipartiteGraph
        ``params`` holds ``path``, ``field``, ``symmetry``, ``n_entries`` (stored in the
        file), ``n_explicit_zeros``, ``n_diagonal`` and ``n_duplicates`` (see the module
        docstring for what each means).

    Raises
    ------
    DatasetError
        For a missing or unreadable file, a bad header, fewer or more entries than the
        header says, a non-numeric field, an index out of range, a complex field, or an
        empty graph; the message names the file and, where known, the line.

    Notes
    -----
    Deveci et al. 2013, Sec. 4: a matrix is the bipartite graph of its rows and columns.
    """
    path = Path(path).expanduser()
    if (why := missing_file(path)) is not None:
        raise DatasetError(f"{path}: {why}")
    header = _read_header(path)
    long_type = max(header.nrows, header.ncols) > INT32_MAX
    (data, (rows, cols)), shape = _read_coo(path, header, long_type)

    n_rows, n_cols = (int(s) for s in shape)
    n_entries = int(rows.shape[0])
    n_zeros = 0 if header.field == "pattern" else int(np.count_nonzero(data == 0))
    del data
    diagonal = rows == cols
    n_diagonal = int(np.count_nonzero(diagonal))
    if header.symmetry != "general":
        off = ~diagonal
        rows, cols = np.concatenate([rows, cols[off]]), np.concatenate([cols, rows[off]])
    del diagonal

    idx = np.int32 if max(n_rows, n_cols) <= INT32_MAX else np.int64
    ones = np.ones(rows.shape[0], dtype=bool)  # bool sums saturate: duplicates never cancel
    a = sp.coo_matrix(
        (ones, (rows.astype(idx, copy=False), cols.astype(idx, copy=False))),
        shape=(n_rows, n_cols),
    ).tocsr()
    n_duplicates = int(rows.shape[0] - a.nnz)
    del rows, cols, ones
    if n_duplicates:
        warnings.warn(
            f"{path}: {n_duplicates} duplicate entries merged", DatasetWarning, stacklevel=2
        )
    info = {
        "path": str(path),
        "field": header.field,
        "symmetry": header.symmetry,
        "n_entries": n_entries,
        "n_explicit_zeros": n_zeros,
        "n_diagonal": n_diagonal,
        "n_duplicates": n_duplicates,
    }
    info.update(params or {})
    return BipartiteGraph.from_scipy(a, name=name or stem(path), family=family, params=info)


def _read_coo(path: Path, header: Any, long_type: bool):
    """fast_matrix_market's ``read_coo`` of a checked file, its errors made specific."""
    import fast_matrix_market as fmm

    try:
        return fmm.read_coo(str(path), long_type=long_type, generalize_symmetry=False)
    except (ValueError, OverflowError, RuntimeError, MemoryError, OSError, EOFError) as exc:
        raise _translate(path, exc, header) from None


# ---------------------------------------------------------------------------------------
# Weighted undirected graphs


@dataclass(eq=False)
class WeightedEntries:
    """The stored entries of a square Matrix Market file, read by :func:`read_weighted`.

    A family applies its policy to ``values`` (absolute values, negative entries, loops)
    and then calls :meth:`edges`. Errors name ``where`` (the family's reader) and the file.

    Attributes
    ----------
    path : Path
    header : fast_matrix_market header
        ``field``, ``symmetry``, ``nrows``, ...
    n : int
        The matrix order: the vertex count.
    rows, cols : ndarray
        int64, 0-based, one per stored entry (one triangle of a symmetric file).
    values : ndarray
        float64 per entry, finite: 1 in a ``pattern`` file, ``|a_ij|`` when read with
        ``absolute=True``.
    where : str
        Prefix of the messages (``"wmatch graph_mtx"``).
    absolute : bool
        Whether ``values`` are absolute values (said in the duplicate warning).
    """

    path: Path
    header: Any
    n: int
    rows: np.ndarray
    cols: np.ndarray
    values: np.ndarray
    where: str
    absolute: bool = False

    @property
    def pattern(self) -> bool:
        return self.header.field == "pattern"

    @property
    def n_entries(self) -> int:
        return int(self.rows.shape[0])

    def fail(self, msg: str) -> DatasetError:
        """An error naming the reader and the file."""
        return DatasetError(f"{self.where} {self.path}: {msg}")

    def entry_error(self, k: int, why: str) -> DatasetError:
        """An error about entry ``k`` (1-based indices and its value in the message)."""
        r, c = self.rows[k] + 1, self.cols[k] + 1
        return self.fail(f"entry ({r}, {c}) is {self.values[k]}; {why}")

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """The undirected graph of the entries: ``(u, v, w, params)``, ``u < v``, ascending.

        Diagonal entries are dropped; duplicates (an entry for a pair already given) are
        merged by the largest value, with a :class:`DatasetWarning`; a ``general`` file is
        symmetrized, weight ``max(a_ij, a_ji)`` with an absent entry counting 0; zero
        weights are dropped. The arrays are handed over: the entries hold none afterwards
        (a large matrix is not kept twice).

        Returns
        -------
        tuple
            ``params`` holds ``path``, ``field``, ``symmetry``, ``n_entries``,
            ``n_diagonal``, ``n_zero``, ``n_duplicates``, ``symmetrized`` and
            ``n_asymmetric`` (pairs stored in one direction only or with two values).

        Raises
        ------
        DatasetError
            When no edge is left.
        """
        # Here, not at the top: the bipartite reading needs no numba (weighted.py's import).
        from matchbench.graphs.weighted import merge_max, merge_min

        n, n_entries = self.n, self.n_entries
        rows, cols, values = self.rows, self.cols, self.values
        self.rows = self.cols = self.values = np.zeros(0)
        diagonal = rows == cols
        n_diagonal = int(np.count_nonzero(diagonal))
        off = ~diagonal
        rows, cols, values = rows[off], cols[off], values[off]
        del diagonal, off
        symmetrized = self.header.symmetry == "general"
        n_asymmetric = 0
        if symmetrized:
            dkey, dval = merge_max(rows * n + cols, values)
            n_duplicates = int(rows.shape[0] - dkey.shape[0])
            r, c = np.divmod(dkey, n)
            ukey = np.minimum(r, c) * n + np.maximum(r, c)
            key, w = merge_max(ukey, dval)
            # A pair is asymmetric when stored in one direction only or with two values.
            counts = np.unique(ukey, return_counts=True)[1]
            n_asymmetric = int(np.count_nonzero((counts == 1) | (w != merge_min(ukey, dval))))
            del dkey, dval, r, c, ukey
        else:
            key, w = merge_max(np.minimum(rows, cols) * n + np.maximum(rows, cols), values)
            n_duplicates = int(rows.shape[0] - key.shape[0])
        del rows, cols, values
        if n_duplicates:
            largest = "largest |value|" if self.absolute else "largest value"
            warnings.warn(
                f"{self.where} {self.path}: {n_duplicates} duplicate entries merged ({largest})",
                DatasetWarning,
                stacklevel=3,  # the caller of the family's reader
            )
        nonzero = w > 0
        n_zero = int(np.count_nonzero(~nonzero))
        key, w = key[nonzero], w[nonzero]
        if key.shape[0] == 0:
            raise self.fail("no edge left after dropping the diagonal and zero weights")
        u, v = np.divmod(key, n)
        params = {
            "path": str(self.path),
            "field": self.header.field,
            "symmetry": self.header.symmetry,
            "n_entries": n_entries,
            "n_diagonal": n_diagonal,
            "n_zero": n_zero,
            "n_duplicates": n_duplicates,
            "symmetrized": symmetrized,
            "n_asymmetric": n_asymmetric,
        }
        return u, v, w, params


def read_weighted(
    path: str | os.PathLike,
    data_dir: str | os.PathLike | None = None,
    *,
    where: str,
    absolute: bool = False,
) -> WeightedEntries:
    """Read a square Matrix Market file (``.mtx`` or ``.mtx.gz``) as weighted entries.

    Parameters
    ----------
    path : path
        The file; a relative path not found from the working directory is looked up in
        ``data_dir`` (default :func:`~matchbench.core.paths.default_data_dir`).
    where : str
        The family's reader, first in every message (``"community community_mtx"``).
    absolute : bool
        Read ``|a_ij|`` at once, so that the checks and messages see absolute values (the
        weighted-matching family's reading, Naim et al. 2015).

    Returns
    -------
    WeightedEntries
        The entries, values finite; :meth:`WeightedEntries.edges` makes the graph.

    Raises
    ------
    DatasetError
        Naming ``where`` and the file: a missing file, what :func:`read`'s header checks
        reject (bad header, complex field, array format, empty matrix, wrong entry count,
        a non-numeric field, an index out of range), a non-square matrix, or a NaN or
        infinite value (naming the first such entry and the count).
    """
    p = resolve_path(path, data_dir)
    if (why := missing_file(p)) is not None:
        raise DatasetError(f"{where} {p}: {why}")
    try:
        header = _read_header(p)
    except DatasetError as exc:
        raise DatasetError(f"{where}: {exc}") from None
    if header.nrows != header.ncols:
        raise DatasetError(
            f"{where} {p}: the matrix is not square ({header.nrows} x {header.ncols}); "
            "a graph needs n x n"
        )
    try:
        (data, (rows, cols)), shape = _read_coo(p, header, header.nrows > INT32_MAX)
    except DatasetError as exc:
        raise DatasetError(f"{where}: {exc}") from None
    n_entries = int(rows.shape[0])
    if header.field == "pattern":
        values = np.ones(n_entries)
    else:
        values = np.asarray(data, dtype=np.float64)
        values = np.abs(values) if absolute else values
    del data
    entries = WeightedEntries(
        p,
        header,
        int(shape[0]),
        rows.astype(np.int64),
        cols.astype(np.int64),
        values,
        where,
        absolute,
    )
    bad = ~np.isfinite(values)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise entries.entry_error(k, f"weights must be finite ({int(bad.sum())} such entries)")
    return entries


def load(path: str | os.PathLike, data_dir: str | os.PathLike | None = None) -> BipartiteGraph:
    """Dataset function of ``conf/dataset/mtx.yaml``: one Matrix Market file.

    A relative ``path`` that does not exist from the working directory is looked up in
    ``data_dir`` (default :func:`~matchbench.datasets.default_data_dir`).
    """
    p = resolve_path(path, data_dir)
    return read(p, family="mtx")


def write(
    path: str | os.PathLike,
    matrix: BipartiteGraph | sp.spmatrix | sp.sparray | np.ndarray,
    *,
    field: str | None = None,
    symmetry: str = "general",
    comment: str | None = None,
) -> Path:
    """Write a graph's pattern or a sparse matrix as a Matrix Market file.

    Parameters
    ----------
    path : path
        Target; a name ending in ``.gz`` is written gzip-compressed.
    matrix : BipartiteGraph or sparse matrix
        A graph is written as its pattern (``field`` default ``"pattern"``); a matrix
        with its values (``field`` default from its dtype).
    field : {"pattern", "integer", "real"}, optional
    symmetry : {"general", "symmetric", "skew-symmetric"}
        With a symmetric header only the lower triangle is written (the matrix must be
        symmetric for a faithful round trip).
    comment : str, optional
        Header comment.
    """
    import fast_matrix_market as fmm

    if isinstance(matrix, BipartiteGraph):
        a = matrix.to_scipy().tocoo()
        field = field or "pattern"
    else:
        a = sp.coo_matrix(matrix)
    path = Path(path)
    kwargs = {"field": field, "symmetry": symmetry, "comment": comment}
    if path.name.endswith(".gz"):
        with gzip.open(path, "wb") as f:
            fmm.mmwrite(f, a, **kwargs)
    else:
        with open(path, "wb") as f:
            fmm.mmwrite(f, a, **kwargs)
    return path
