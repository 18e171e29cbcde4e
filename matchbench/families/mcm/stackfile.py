"""The MCM family's bulk file: many bipartite graphs in one ``.npz``, as ``solve_batch`` takes them.

File format
-----------
A NumPy ``.npz`` archive (``numpy.savez``, or ``numpy.savez_compressed``) of integer arrays
only, never pickles, holding exactly the arrays that
:func:`~matchbench.families.mcm.api.solve_batch` takes, by their keyword names:

``shapes``
    ``(B, 2)`` integers: graph ``k`` has ``n_rows, n_cols = shapes[k]``; ``B >= 1``.
``indptr``
    1-D, ``sum(n_rows + 1)`` entries: each graph's ``n_rows + 1`` row pointers in turn,
    each graph's starting at 0 and never decreasing (its last one is its edge count).
``indices``
    1-D: each graph's column indices, local (in ``[0, n_cols)``), graph after graph; row
    ``i`` of graph ``k`` is adjacent to the columns
    ``indices[off[k] + indptr_k[i] : off[k] + indptr_k[i + 1]]``. Without
    ``indices_offsets``, ``off[k]`` is the sum of the edge counts of the graphs before
    ``k`` and ``indices`` holds exactly all the graphs' edges.
``indices_offsets`` (optional)
    ``(B,)`` or ``(B + 1,)`` integers: ``off[k]``, where graph ``k``'s indices start (its
    edges then need not be consecutive).

Any integer dtype and byte order. From scipy CSR matrices ``ms`` (or use
:func:`save_csr_stack`)::

    np.savez("graphs.npz", indptr=np.concatenate([a.indptr for a in ms]),
             indices=np.concatenate([a.indices for a in ms]),
             shapes=np.array([a.shape for a in ms]))

The array API reads it as it is, ``solve_batch(**np.load("graphs.npz"))`` (or checked
first: ``solve_batch(**read_csr_stack("graphs.npz"))``); a sweep reads graph ``k`` of it as
one instance (``conf/dataset/mcm_stack.yaml``, :func:`csr_stack`).

Reading
-------
Nothing is unpickled, and nothing is allocated before it is checked against the file: the
archive's members are listed and each ``.npy`` header is read first (an object dtype is
refused by name, as are a missing, an unexpected or a doubled array, a non-integer dtype,
a wrong number of dimensions, and a declared size the member does not hold). The members
of an uncompressed archive (``numpy.savez``) are then memory-mapped, so that one graph of
a large file costs its own pages and the ``B`` boundary pointers, not the file; those of a
compressed one are read whole, within the input limit (:mod:`matchbench.core.limits`).

The checks fall in two parts. Those of the file, made when it is opened, fail every
graph of it: the arrays above, ``B >= 1``, no negative shape, ``indptr``'s length, each
graph's edge count (its last pointer) at least 0, and its edges inside ``indices``
(without ``indices_offsets``: ``indices`` exactly as long as all the edges). Those of a
graph, made when it is read, fail that graph alone: its first pointer 0, its pointers
non-decreasing, its columns in ``[0, n_cols)``, at least one edge, and its sizes within
the input limits (:func:`~matchbench.core.limits.check_dimensions` and
:func:`~matchbench.core.limits.check_allocation`). A file that passes them all is one
that ``solve_batch`` accepts (its ``check_input``, the same
:func:`~matchbench.families.mcm.batch_gpu.check_packed` rules), except that it refuses
empty graphs (an instance without an edge is no benchmark).

An edge listed twice in a row is one edge: the graph is built as the Matrix Market reader
builds its graphs (:func:`~matchbench.graphs.mtx.read`): duplicates merged, each row's
columns sorted, ``params["n_duplicates"]`` counting the merged entries, with a
:class:`~matchbench.core.errors.DatasetWarning`. ``solve_batch`` takes duplicates as
they are; the matchings are the same.
"""

from __future__ import annotations

import functools
import os
import struct
import warnings
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from matchbench.core import limits
from matchbench.core.errors import DatasetError, DatasetWarning
from matchbench.core.npy import read_header
from matchbench.core.paths import missing_file
from matchbench.families.mcm.api import batch_offsets
from matchbench.families.mcm.batch_gpu import check_packed
from matchbench.graphs.bipartite import INT32_MAX, BipartiteGraph, index_dtype

__all__ = [
    "ARRAYS",
    "OPTIONAL_ARRAYS",
    "csr_stack",
    "csr_stack_bulk",
    "graph_bytes",
    "read_csr_stack",
    "save_csr_stack",
]

#: The arrays every file holds.
ARRAYS = ("indptr", "indices", "shapes")
#: The arrays a file may hold besides.
OPTIONAL_ARRAYS = ("indices_offsets",)
_NDIM = {"indptr": 1, "indices": 1, "shapes": 2, "indices_offsets": 1}
_INT64_MAX = int(np.iinfo(np.int64).max)
#: The bytes of a zip local file header before its name and extra field.
_LOCAL_HEADER = 30


def _stem(p: Path) -> str:
    return p.name[: -len(".npz")] if p.name.endswith(".npz") else p.name


def _what(name: str) -> str:
    return f"mcm stack {name!r}:"


# --------------------------------------------------------------------------- the archive


def _data_offset(p: Path, info: zipfile.ZipInfo, what: str) -> int:
    """Where member ``info``'s bytes start in the file: after its local header, whose name
    and extra field may differ in length from the central directory's copy."""
    with open(p, "rb") as f:
        f.seek(info.header_offset)
        head = f.read(_LOCAL_HEADER)
    if len(head) != _LOCAL_HEADER or head[:4] != b"PK\x03\x04":
        raise DatasetError(
            f"{what} {p} is not a readable .npz file (a damaged zip entry {info.filename!r})"
        )
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    return info.header_offset + _LOCAL_HEADER + name_len + extra_len


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, key: str, p: Path, what: str) -> np.ndarray:
    """Array ``key`` of the archive, its header checked before any of it is read:
    memory-mapped where stored uncompressed, else read (within the input limit)."""
    from numpy.lib import format as npformat

    arr = f"its array {key!r}"
    if info.flag_bits & 0x1:
        raise DatasetError(f"{what} {p}: {arr} is encrypted")
    try:
        with zf.open(info) as f:
            shape, fortran, dtype, header_len = read_header(f)
    except (
        ValueError,
        EOFError,
        OSError,
        SyntaxError,
        RuntimeError,
        zipfile.BadZipFile,
        zlib.error,
    ) as exc:
        raise DatasetError(
            f"{what} {p}: {arr} is not a readable .npy array ({exc or type(exc).__name__})"
        ) from None
    if dtype.hasobject:
        raise DatasetError(
            f"{what} {p}: {arr} holds Python objects (dtype {dtype}); a csr stack holds integers only"
        )
    if dtype.kind not in "iu":
        raise DatasetError(f"{what} {p}: {arr} has dtype {dtype}; a csr stack holds integers only")
    want = "(B, 2)" if key == "shapes" else "1-D"
    if len(shape) != _NDIM[key] or (key == "shapes" and shape[1] != 2):
        raise DatasetError(f"{what} {p}: {arr} has shape {shape}; it must be {want}")
    nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if header_len + nbytes > info.file_size:
        raise DatasetError(
            f"{what} {p}: {arr} declares shape {shape} of {dtype} ({header_len + nbytes:,} bytes "
            f"with its header) but holds {info.file_size:,} bytes: a truncated file or a bad header"
        )
    if info.compress_type == zipfile.ZIP_STORED:
        offset = _data_offset(p, info, what) + header_len
        if offset + nbytes > p.stat().st_size:
            raise DatasetError(
                f"{what} {p}: {arr} runs past the end of the file ({offset + nbytes:,} of "
                f"{p.stat().st_size:,} bytes): a truncated file"
            )
        if nbytes == 0:  # mmap cannot map nothing
            return np.empty(shape, dtype=dtype)
        order = "F" if fortran else "C"
        return np.memmap(p, dtype=dtype, mode="r", offset=offset, shape=shape, order=order)
    limits.check_allocation(nbytes, p, what, f"{arr}, compressed,")
    try:
        with zf.open(info) as f:
            return npformat.read_array(f, allow_pickle=False)
    except (ValueError, EOFError, OSError, RuntimeError, zipfile.BadZipFile, zlib.error) as exc:
        raise DatasetError(
            f"{what} {p}: {arr} cannot be read ({exc or type(exc).__name__}): a damaged file"
        ) from None


def _members(p: Path, name: str) -> dict[str, np.ndarray]:
    """The archive's arrays by name, exactly :data:`ARRAYS` and maybe :data:`OPTIONAL_ARRAYS`."""
    what = _what(name)
    try:
        zf = zipfile.ZipFile(p)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise DatasetError(
            f"{what} {p} is not a readable .npz file ({exc or type(exc).__name__})"
        ) from None
    with zf:
        infos = zf.infolist()
        for info in infos:
            if not info.filename.endswith(".npy"):
                raise DatasetError(
                    f"{what} {p} holds {info.filename!r}, which is no .npy array; a csr stack "
                    f"holds the arrays {', '.join(ARRAYS)} (and optionally {OPTIONAL_ARRAYS[0]})"
                )
        keys = Counter(info.filename[: -len(".npy")] for info in infos)
        doubled = sorted(k for k, n in keys.items() if n > 1)
        if doubled:
            raise DatasetError(f"{what} {p} holds the array(s) {doubled} more than once")
        missing = [k for k in ARRAYS if k not in keys]
        if missing:
            raise DatasetError(
                f"{what} {p} lacks the array(s) {missing} (it holds {sorted(keys)}); a csr stack "
                f"holds {', '.join(ARRAYS)} (and optionally {OPTIONAL_ARRAYS[0]})"
            )
        extra = sorted(set(keys) - set(ARRAYS) - set(OPTIONAL_ARRAYS))
        if extra:
            raise DatasetError(
                f"{what} {p} holds unexpected array(s) {extra}; a csr stack holds exactly "
                f"{', '.join(ARRAYS)} (and optionally {OPTIONAL_ARRAYS[0]})"
            )
        out = {}
        for info in infos:
            key = info.filename[: -len(".npy")]
            out[key] = _member(zf, info, key, p, what)
        return out


def _int64(a: np.ndarray, what: str) -> np.ndarray:
    """``a`` as an int64 ndarray (a copy, off the mapping), refusing uint64 values past int64."""
    if a.dtype.kind == "u" and a.dtype.itemsize == 8 and a.size and int(a.max()) > _INT64_MAX:
        raise DatasetError(f"{what} {int(a.max())} does not fit int64")
    return np.array(a, dtype=np.int64)  # a plain ndarray, whatever a's class


# --------------------------------------------------------------------------- the checked file


@dataclass(eq=False)
class _Stack:
    """A csr stack whose file-level checks passed: ``indptr`` and ``indices`` as stored
    (memory-mapped where the archive is uncompressed); the rest int64, host memory."""

    path: Path
    name: str
    indptr: np.ndarray
    indices: np.ndarray
    shapes: np.ndarray
    ptr_off: np.ndarray
    ind_off: np.ndarray
    nnz: np.ndarray
    has_offsets: bool

    def __len__(self) -> int:
        return int(self.shapes.shape[0])


def _open(p: Path, name: str) -> _Stack:
    """The file ``p`` mapped and given its file-level checks (see the module notes)."""
    what = _what(name)
    arrays = _members(p, name)
    indptr, indices = arrays["indptr"], arrays["indices"]
    shapes = _int64(arrays["shapes"], f"{what} {p}: a shape of")
    B = int(shapes.shape[0])
    if B == 0:
        raise DatasetError(f"{what} {p} holds no graphs (shapes is empty)")
    bad = np.flatnonzero((shapes < 0).any(axis=1))
    if bad.size:
        k = int(bad[0])
        raise DatasetError(
            f"{what} {p}: graph {k} has a negative shape {tuple(shapes[k].tolist())}"
        )
    n_ptr = int(indptr.shape[0])
    rows = shapes[:, 0]
    # The float sum first: an int64 sum of wild row counts could wrap around to n_ptr.
    if float(rows.sum(dtype=np.float64)) > n_ptr or int(rows.sum()) + B != n_ptr:
        need = sum(int(r) + 1 for r in shapes[:, 0])
        raise DatasetError(
            f"{what} {p}: indptr has {n_ptr:,} entries; the shapes need {need:,} (n_rows + 1 per graph)"
        )
    offsets = arrays.get("indices_offsets")
    if offsets is not None:
        offsets = _int64(offsets, f"{what} {p}: an entry of indices_offsets,")
    try:
        _, ptr_off, ind_off = batch_offsets(indptr, shapes, offsets)
    except ValueError as exc:  # indices_offsets of another length than B or B + 1
        raise DatasetError(f"{what} {p}: {exc}") from None
    nnz = _int64(indptr[ptr_off + shapes[:, 0]], f"{what} {p}: a row pointer,")
    bad = np.flatnonzero(nnz < 0)
    if bad.size:
        k = int(bad[0])
        raise DatasetError(
            f"{what} {p}: graph {k}'s last row pointer (its edge count) is {int(nnz[k])}"
        )
    n_ind = int(indices.shape[0])
    if offsets is None:
        # The float sum first, as above: wild edge counts could wrap around to n_ind.
        if float(nnz.sum(dtype=np.float64)) > n_ind or int(nnz.sum()) != n_ind:
            total = sum(int(x) for x in nnz)
            raise DatasetError(
                f"{what} {p}: indices has {n_ind:,} entries; the graphs' row pointers give "
                f"{total:,} edges in all (each graph's last pointer)"
            )
    else:
        bad = np.flatnonzero((ind_off < 0) | (ind_off > n_ind - nnz))
        if bad.size:
            k = int(bad[0])
            raise DatasetError(
                f"{what} {p}: graph {k}'s {int(nnz[k]):,} edges from indices_offsets "
                f"{int(ind_off[k]):,} do not lie inside indices ({n_ind:,} entries)"
            )
    return _Stack(p, name, indptr, indices, shapes, ptr_off, ind_off, nnz, offsets is not None)


def _open_path(path: str | os.PathLike) -> _Stack:
    p = Path(path)
    name = _stem(p)
    if (why := missing_file(p)) is not None:
        raise DatasetError(f"{_what(name)} {str(p)!r} {why}")
    if p.suffix != ".npz":
        raise DatasetError(f"{_what(name)} {p} is not a .npz file")
    return _open(p, name)


def _check_index(seed: Any, name: str) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or int(seed) < 0:
        raise DatasetError(f"{_what(name)} the index (seed) must be an integer >= 0, got {seed!r}")
    return int(seed)


def _graph_nbytes(n_rows: int, n_cols: int, nnz: int) -> int:
    """The bytes of a graph's two CSR directions, as :class:`BipartiteGraph` stores them."""
    item = index_dtype(n_rows, n_cols, nnz).itemsize
    return (n_rows + 1 + n_cols + 1 + 2 * nnz) * item


def _graph(stack: _Stack, index: int) -> BipartiteGraph:
    """Graph ``index`` of the checked file, given its own checks (see the module notes);
    ``params["n_duplicates"]`` counts the repeated edges merged (the caller warns)."""
    p, what = stack.path, _what(stack.name)
    if not 0 <= index < len(stack):
        raise DatasetError(f"{what} index {index} is outside the {len(stack)} graphs of {p}")
    at = f"{what} {p}: graph {index}"
    n_rows, n_cols = (int(x) for x in stack.shapes[index])
    m = int(stack.nnz[index])
    if n_rows == 0 or n_cols == 0 or m == 0:
        raise DatasetError(
            f"{at} is empty ({n_rows} x {n_cols}, {m} edges); an instance needs an edge"
        )
    limits.check_dimensions(n_rows, n_cols, m, p, f"{what} graph {index} of")
    limits.check_allocation(
        _graph_nbytes(n_rows, n_cols, m), p, f"{what} graph {index} of", "its two CSR directions"
    )
    # The checks compare the stored dtype with Python ints (exact in NumPy 2, no int64
    # copy); the pointers lie in [0, m] once they start at 0 and never decrease, as the
    # last one is m (checked with the file).
    p0 = int(stack.ptr_off[index])
    ptr = np.asarray(stack.indptr[p0 : p0 + n_rows + 1])
    if ptr[0] != 0:
        raise DatasetError(f"{at}: its row pointers start at {int(ptr[0])}, not 0")
    down = np.flatnonzero(ptr[1:] < ptr[:-1])
    if down.size:
        i = int(down[0])
        raise DatasetError(
            f"{at}: its row pointers decrease (row pointer {i + 1} is {int(ptr[i + 1])}, "
            f"row pointer {i} is {int(ptr[i])})"
        )
    o = int(stack.ind_off[index])
    cols = np.asarray(stack.indices[o : o + m])
    bad = np.flatnonzero((cols < 0) | (cols >= n_cols))
    if bad.size:
        e = int(bad[0])
        row = int(np.searchsorted(ptr, e, side="right")) - 1
        raise DatasetError(
            f"{at}: row {row} has column index {int(cols[e])}, not in [0, {n_cols}) "
            f"({bad.size} such entries)"
        )
    idx = index_dtype(n_rows, n_cols, m)
    # np.array: a copy off the mapping, a plain ndarray. bool entries: duplicates merge
    # into one True, never into a count that wraps to 0.
    a = sp.csr_matrix(
        (np.ones(m, dtype=bool), np.array(cols, dtype=idx), np.array(ptr, dtype=idx)),
        shape=(n_rows, n_cols),
    )
    params = {"path": str(p), "index": index}
    g = BipartiteGraph.from_scipy(
        a, name=f"{stack.name}_i{index}", family="mcm_stack", params=params
    )
    g.params["n_duplicates"] = m - g.n_edges
    return g


# --------------------------------------------------------------------------- public


def csr_stack(path: str | os.PathLike, seed: int = 0) -> BipartiteGraph:
    """Graph ``seed`` (its index, from 0) of a csr stack file (see the module notes).

    Parameters
    ----------
    path : str or Path
        A ``.npz`` file of the arrays ``indptr``, ``indices``, ``shapes`` (and optionally
        ``indices_offsets``) that :func:`~matchbench.families.mcm.api.solve_batch` takes.
    seed : int
        The index of the graph. A ``many`` set gives instance ``i`` the set's seed ``+ i``:
        ``conf/dataset/mcm_stack.yaml`` (``seed: 0``, ``count: B``) names every graph of
        the file once.

    Returns
    -------
    BipartiteGraph
        Named ``<file stem>_i<index>``, family ``"mcm_stack"``, ``params`` ``path``,
        ``index`` and ``n_duplicates`` (repeated edges merged, with a
        :class:`~matchbench.core.errors.DatasetWarning`).

    Raises
    ------
    DatasetError
        Naming the file and the defect: missing, not ``.npz`` or not a readable one, an
        array missing, unexpected or stored twice, pickled (object) or non-integer
        dtypes, a wrong ndim or shape, a declared size the file does not hold, no graph,
        a negative shape, an ``indptr`` or ``indices`` of the wrong length, a graph's
        pointers not starting at 0 or decreasing, a column index outside
        ``[0, n_cols)``, an empty graph, sizes over the input limits
        (:mod:`matchbench.core.limits`), an index outside the file's graphs.

    Notes
    -----
    Only the graph asked for is read from an uncompressed file (memory-mapped), with the
    ``B`` pointers that say where each graph lies; :func:`csr_stack_bulk` opens the file
    once for many graphs.
    """
    p = Path(path)
    name = _stem(p)
    if (why := missing_file(p)) is not None:
        raise DatasetError(f"{_what(name)} {str(p)!r} {why}")
    index = _check_index(seed, name)
    g = _graph(_open_path(p), index)
    if g.params["n_duplicates"]:
        warnings.warn(
            f"{_what(name)} {p}: graph {index}: {g.params['n_duplicates']} duplicate edges merged",
            DatasetWarning,
            stacklevel=2,
        )
    return g


def csr_stack_bulk(kwargs_list: list[dict[str, Any]]) -> list[BipartiteGraph]:
    """:func:`csr_stack` for each of ``kwargs_list``, each file opened and checked once.

    Each graph equals ``csr_stack(**kwargs)`` (its arrays, dtypes, name, family and
    params) and fails with its error; the file-level checks and the mapping are made
    once per path, each graph is then a slice of the mapping and its own checks.
    Duplicate edges give one :class:`~matchbench.core.errors.DatasetWarning` per file.
    """
    stacks: dict[str, _Stack] = {}
    out: list[BipartiteGraph] = []
    merged: dict[str, list[int]] = {}
    for kw in kwargs_list:
        if "path" not in kw or set(kw) - {"path", "seed"}:
            out.append(csr_stack(**kw))  # its TypeError
            continue
        p = Path(kw["path"])
        name = _stem(p)
        if (why := missing_file(p)) is not None:
            raise DatasetError(f"{_what(name)} {str(p)!r} {why}")
        index = _check_index(kw.get("seed", 0), name)
        if str(p) not in stacks:
            stacks[str(p)] = _open_path(p)
        g = _graph(stacks[str(p)], index)
        if g.params["n_duplicates"]:
            merged.setdefault(str(p), []).append(g.params["n_duplicates"])
        out.append(g)
    for path, counts in merged.items():
        warnings.warn(
            f"{_what(_stem(Path(path)))} {path}: {sum(counts)} duplicate edges merged in "
            f"{len(counts)} of its graphs",
            DatasetWarning,
            stacklevel=2,
        )
    return out


def csr_stack_stack(
    template: dict[str, Any], varying: dict[str, list[Any]], count: int, device: str | None = None
) -> Any:
    """:func:`csr_stack` for a batch's indices (``seed``) of one file, as one
    :class:`~matchbench.core.stack.InstanceStack` of a
    :class:`~matchbench.graphs.stack.GraphStack` (``csr_stack.matchbench_stack``).

    The file is opened and given its file-level checks once; the graphs are copied out of
    it chunk by chunk on host threads, their column CSR made by a counting sort
    (:func:`~matchbench.graphs.stack_numba.csr_chunk`), each graph equal to
    ``csr_stack(path, index)`` array for array. Graphs that the one-by-one read would
    refuse, warn about or store otherwise (an empty graph, sizes over the input limits,
    pointers that do not start at 0 or decrease, a column out of range, a row's columns
    unsorted or repeated, int64 indices) make the hook return None: the batch then runs
    one by one, where each such graph gets its own error row or warning. A file error
    (missing, not a csr stack) raises its :class:`~matchbench.core.errors.DatasetError`,
    with the same effect. ``device="gpu"``: the chunks in pinned host memory.
    """
    from matchbench.core.canonical import to_json_each
    from matchbench.core.params import batch_threads
    from matchbench.core.stack import InstanceStack
    from matchbench.graphs.stack import GraphStack, StackChunk, even_spans, map_chunks
    from matchbench.graphs.stack_numba import csr_chunk, csr_chunk_size

    if set(varying) - {"seed"} or set(template) - {"path", "seed"} or "path" not in template or count < 1:
        return None
    seeds = list(varying.get("seed", [template.get("seed", 0)] * count))
    if len(seeds) != count:
        return None
    p = Path(template["path"])
    name = _stem(p)
    index = np.array([_check_index(s, name) for s in seeds], dtype=np.int64)
    stack = _open_path(p)
    if int(index.max()) >= len(stack):
        return None
    shapes = stack.shapes[index]
    nnz = stack.nnz[index]
    nr, nc = shapes[:, 0], shapes[:, 1]
    if (nr == 0).any() or (nc == 0).any() or (nnz == 0).any():
        return None
    if (np.maximum(np.maximum(nr, nc), nnz) > INT32_MAX).any():
        return None
    if (nr + nc > np.maximum(limits.DIM_FLOOR, limits.DIM_FACTOR * nnz)).any():
        return None
    if int(((nr + 1 + nc + 1 + 2 * nnz) * 4).max()) > limits.max_input_bytes():
        return None
    indptr, indices = np.asarray(stack.indptr), np.asarray(stack.indices)
    if not (indptr.dtype.isnative and indices.dtype.isnative):
        return None
    ptr_off, ind_off = stack.ptr_off[index], stack.ind_off[index]
    alloc = np.empty
    if device == "gpu":
        try:
            import cupyx

            alloc = cupyx.empty_pinned
        except Exception:
            pass
    threads = batch_threads()
    entries = nr + nc + 2 + 2 * nnz
    spans = even_spans(entries, min(2 * threads, count))

    def make(span: tuple[int, int]) -> StackChunk | None:
        lo, hi = span
        buf = alloc(int(csr_chunk_size(shapes[lo:hi], nnz[lo:hi])), dtype=np.int32)
        table = np.empty((hi - lo, 8), dtype=np.int64)
        bad = csr_chunk(indptr, indices, ptr_off[lo:hi], ind_off[lo:hi], shapes[lo:hi], nnz[lo:hi], buf, table)
        return None if bad >= 0 else StackChunk(lo, buf, table)

    chunks = map_chunks(make, spans, threads)
    if any(c is None for c in chunks):
        return None
    names = [f"{stack.name}_i{int(i)}" for i in index]
    path_text = str(p)

    def params(k: int) -> dict[str, Any]:
        return {"path": path_text, "index": int(index[k]), "n_duplicates": 0}

    graphs = GraphStack(chunks, names, ["mcm_stack"] * count, params)
    columns = {
        "instance": names,
        "family": "mcm_stack",
        "n_rows": nr,
        "n_cols": nc,
        "n_edges": nnz,
        "instance_params": to_json_each(params(0), "index", index.tolist()),
        "rcp": False,
        "instance_bytes": graphs.nbytes,
    }
    return InstanceStack("mcm", graphs, count, columns, graphs.graph)


def graph_bytes(path: str | os.PathLike, seed: int = 0, **_: Any) -> int | None:
    """The bytes of graph ``seed``'s :class:`BipartiteGraph` (both CSR directions, before
    duplicates are merged), from the file's shapes and boundary pointers: the size hint of
    the ``csr_stack`` dataset. None for a bad file or index (the load says why)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return None
    per_graph = _sizes_cached(str(p), st.st_mtime_ns, st.st_size)
    if per_graph is None or isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        return None
    return int(per_graph[int(seed)]) if 0 <= int(seed) < per_graph.shape[0] else None


@functools.lru_cache(maxsize=64)
def _sizes_cached(path: str, _mtime_ns: int, _size: int) -> np.ndarray | None:
    p = Path(path)
    if not p.is_file() or p.suffix != ".npz":
        return None
    try:
        stack = _open(p, _stem(p))
    except DatasetError:
        return None
    rows, cols, m = stack.shapes[:, 0], stack.shapes[:, 1], stack.nnz
    # _graph_nbytes for every graph at once (shapes and counts are checked >= 0)
    item = np.where(np.maximum(np.maximum(rows, cols), m) <= INT32_MAX, 4, 8)
    return (rows.astype(object) + cols + 2 + 2 * m) * item


def read_csr_stack(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The arrays of a csr stack file, checked, for the array API: ``solve_batch(**arrays)``.

    Returns
    -------
    dict of str to ndarray
        ``indptr``, ``indices``, ``shapes`` and, where the file has it,
        ``indices_offsets``, as stored (dtype and values), in memory.

    Raises
    ------
    DatasetError
        For what :func:`csr_stack` refuses of a file, and for any graph that
        :func:`~matchbench.families.mcm.batch_gpu.check_packed` (``solve_batch``'s
        ``check_input``) refuses, naming the first graph at fault. Empty graphs are
        accepted, as ``solve_batch`` accepts them.
    """
    stack = _open_path(path)
    p, what = stack.path, _what(stack.name)
    limits.check_allocation(
        stack.indptr.nbytes + stack.indices.nbytes, p, what, "its indptr and indices"
    )
    indptr, indices = np.array(stack.indptr), np.array(stack.indices)
    why = check_packed(
        _int64(indptr, f"{what} {p}: a row pointer"),
        indices,
        stack.shapes,
        stack.ptr_off,
        stack.ind_off,
    )
    if why is not None:
        raise DatasetError(f"{what} {p}: {why}")
    out = {"indptr": indptr, "indices": indices, "shapes": stack.shapes}
    if stack.has_offsets:
        out["indices_offsets"] = stack.ind_off
    return out


def save_csr_stack(
    path: str | os.PathLike,
    graphs: list[BipartiteGraph | sp.spmatrix | sp.sparray],
    *,
    compressed: bool = False,
) -> Path:
    """Write graphs as a csr stack file (see the module notes), read back by :func:`csr_stack`.

    Parameters
    ----------
    path : str or Path
        The file, ending in ``.npz``; written exactly there.
    graphs : list of BipartiteGraph or scipy sparse matrices
        In file order. A graph is written as its row CSR; a sparse matrix as its pattern
        in CSR, its entries as stored (explicit zeros are edges; duplicates, which the
        reader merges, stay).
    compressed : bool
        ``numpy.savez_compressed`` instead of ``numpy.savez``: smaller, but read whole
        rather than memory-mapped.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ValueError
        For a path not ending in ``.npz`` or no graphs.
    TypeError
        For an item that is neither a graph nor a sparse matrix.

    Notes
    -----
    int32 arrays where every count and index fits, else int64; ``shapes`` int64.
    """
    p = Path(path)
    if p.suffix != ".npz":
        raise ValueError(f"save_csr_stack: {p} must end in .npz (csr_stack reads only .npz)")
    if isinstance(graphs, BipartiteGraph) or sp.issparse(graphs):
        raise TypeError("save_csr_stack: graphs must be a list of graphs, not one graph")
    ptrs, inds, shapes = [], [], []
    for k, g in enumerate(graphs):
        if isinstance(g, BipartiteGraph):
            ptr, ind, shape = g.row_ptr, g.row_ind, (g.n_rows, g.n_cols)
        elif sp.issparse(g):
            a = sp.csr_array(g)
            ptr, ind, shape = a.indptr, a.indices[: a.indptr[-1]], a.shape
        else:
            raise TypeError(
                f"save_csr_stack: graph {k} is a {type(g).__name__}, not a BipartiteGraph "
                "or a scipy sparse matrix"
            )
        ptrs.append(np.asarray(ptr))
        inds.append(np.asarray(ind))
        shapes.append(tuple(int(x) for x in shape))
    if not shapes:
        raise ValueError("save_csr_stack: no graphs to write")
    shp = np.array(shapes, dtype=np.int64).reshape(-1, 2)
    edges = max(int(a[-1]) if a.size else 0 for a in ptrs)
    idx = index_dtype(int(shp.max()), edges)
    arrays = {
        "indptr": np.concatenate(ptrs).astype(idx, copy=False),
        "indices": np.concatenate(inds).astype(idx, copy=False),
        "shapes": shp,
    }
    save = np.savez_compressed if compressed else np.savez
    with open(p, "wb") as f:  # a file object: numpy appends no second .npz
        save(f, **arrays)
    return p
