"""Input limits: what a file may make a reader allocate before it is refused.

A dataset file states its own sizes (a Matrix Market header says ``rows cols entries``, a
preference file ``n_men n_women``, a gzip stream hides its expanded size). A reader that
believes them allocates before it has read anything: a 90-byte file declaring a 2e9 x 2e9
matrix asks for a 16 GB index array, a 2 MB ``.gz`` expands to gigabytes. Every reader
therefore checks the declared sizes against the file, and what it is about to allocate
against one cap, before allocating:

- **entries against bytes**: a text entry takes at least a few bytes (``"1 2\\n"``), so a
  plain file of ``b`` bytes holds at most ``b / min_bytes`` entries; a gzip stream expands
  at most :data:`GZIP_MAX_RATIO` times (deflate's limit), and its expansion is read through
  :func:`read_text_capped`, which stops at the cap;
- **dimensions against entries**: ``rows + cols`` may exceed the entries' count by the
  factor :data:`DIM_FACTOR`, or be at most :data:`DIM_FLOOR`, whichever is larger (a graph
  with more isolated vertices than that is almost surely a bad header);
- **bytes against the cap**: a dense array (a LAP cost matrix filled from a sparse file)
  or an expanded stream larger than :func:`max_input_bytes` is refused.

The cap is ``$MATCHBENCH_MAX_INPUT_BYTES`` (bytes, or a size such as ``64GiB``) when set,
else an eighth of the host's memory (a parser's peak is a few times its input). Each refusal is a :class:`DatasetError` that names the
file, the declared size and the limit, so that it becomes the instance's ``error`` row.
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

from matchbench.core.errors import DatasetError

#: Environment variable that sets :func:`max_input_bytes`.
MAX_INPUT_BYTES_ENV = "MATCHBENCH_MAX_INPUT_BYTES"
#: deflate expands at most about 1032:1; a stream claiming more is not a gzip file.
GZIP_MAX_RATIO = 1032
#: Dimensions may exceed the number of entries by this factor (isolated vertices) ...
DIM_FACTOR = 16
#: ... or be at most this many, whichever is larger.
DIM_FLOOR = 1 << 24
#: A dense array filled from a sparse file may have this many cells per entry ...
FILL_FACTOR = 4096
#: ... or at most this many cells, whichever is larger.
FILL_FLOOR = 1 << 24

def parse_bytes(text: str | int, what: str = "size") -> int:
    """Bytes from ``123``, ``"64MiB"``, ``"2GB"`` (:func:`dask.utils.parse_bytes`, as
    ``run.batch`` and ``cluster.memory_limit`` read sizes), refused unless positive.

    >>> parse_bytes("64MiB")
    67108864
    >>> parse_bytes(4096)
    4096
    >>> parse_bytes("lots")
    Traceback (most recent call last):
    ...
    ValueError: size must be a number of bytes or a size such as '64MiB', not 'lots'
    """
    from dask.utils import parse_bytes as dask_bytes

    value: float | None = None
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    elif isinstance(text, str):
        try:
            value = dask_bytes(text.strip())
        except (ValueError, TypeError):
            value = None
    if value is None or not value > 0:
        raise ValueError(f"{what} must be a number of bytes or a size such as '64MiB', not {text!r}")
    return int(value)


def human(n: float) -> str:
    """``1.5 GiB``: a byte count for messages.

    >>> human(3 * 2**30)
    '3.0 GiB'
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def max_input_bytes() -> int:
    """The cap on what one input may make a reader allocate (see the module notes)."""
    env = os.environ.get(MAX_INPUT_BYTES_ENV)
    if env:
        return parse_bytes(env, MAX_INPUT_BYTES_ENV)
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not Linux
        total = 16 << 30
    return max(total // 8, 256 << 20)


def _where(what: str, path: str | os.PathLike) -> str:
    return f"{what} {path}" if what else str(path)


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def read_text_capped(path: str | os.PathLike, what: str, cap: int | None = None) -> str:
    """The text of a plain or gzip file, refused past ``cap`` bytes (default
    :func:`max_input_bytes`) without ever holding more than that.

    Raises
    ------
    DatasetError
        ``"<what> <path>: ..."`` for a file that expands past the cap, a corrupt or cut
        gzip stream, or bytes that are not UTF-8 text.
    """
    raw = read_bytes_capped(path, what, cap)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None


def read_bytes_capped(path: str | os.PathLike, what: str, cap: int | None = None) -> bytes:
    """The bytes of a plain or gzip file (expanded), refused past ``cap`` bytes (default
    :func:`max_input_bytes`); see :func:`read_text_capped`."""
    p = Path(path)
    cap = max_input_bytes() if cap is None else cap
    chunks: list[bytes] = []
    total = 0
    try:
        opener = gzip.open if is_gzip(p) else open
        with opener(p, "rb") as f:
            while True:
                block = f.read(1 << 20)
                if not block:
                    break
                total += len(block)
                if total > cap:
                    raise DatasetError(
                        f"{what} {p}: expands to more than {human(cap)} (the input limit, "
                        f"${MAX_INPUT_BYTES_ENV}); refused before reading further"
                    )
                chunks.append(block)
    except (gzip.BadGzipFile, zlib.error, EOFError) as exc:
        raise DatasetError(f"{what} {p}: corrupt or truncated gzip data ({exc})") from None
    except IsADirectoryError:
        raise DatasetError(f"{what} {p}: is a directory, not a file") from None
    except OSError as exc:
        raise DatasetError(f"{what} {p}: cannot read ({exc.strerror or exc})") from None
    return b"".join(chunks)


def check_entries(declared: int, path: str | os.PathLike, what: str, min_bytes: int = 4) -> None:
    """Refuse a file that declares more entries than its bytes can hold.

    ``min_bytes``: the fewest bytes one entry takes in the file's text (``"1 2\\n"``: 4).
    A gzip file may hold :data:`GZIP_MAX_RATIO` times its size.
    """
    p = Path(path)
    size = p.stat().st_size
    room = size * (GZIP_MAX_RATIO if is_gzip(p) else 1) // max(min_bytes, 1)
    if declared > room:
        raise DatasetError(
            f"{_where(what, p)}: the header declares {declared:,} entries, but a file of {size:,} "
            f"bytes holds at most {room:,}: a bad header"
        )


def check_dimensions(
    rows: int, cols: int, entries: int, path: str | os.PathLike, what: str
) -> None:
    """Refuse dimensions out of proportion to the entries (see the module notes)."""
    limit = max(DIM_FLOOR, DIM_FACTOR * max(entries, 0))
    if rows < 0 or cols < 0 or rows + cols > limit:
        raise DatasetError(
            f"{_where(what, path)}: the header declares {rows:,} x {cols:,} for {entries:,} entries; "
            f"at most {limit:,} rows + columns are accepted ({DIM_FACTOR} per entry, or "
            f"{DIM_FLOOR:,}): a bad header"
        )


def check_fill(cells: int, entries: int, path: str | os.PathLike, what: str) -> None:
    """Refuse a dense array of ``cells`` filled from ``entries`` sparse entries out of
    proportion (:data:`FILL_FACTOR` cells per entry, or :data:`FILL_FLOOR` cells)."""
    limit = max(FILL_FLOOR, FILL_FACTOR * max(entries, 0))
    if cells > limit:
        raise DatasetError(
            f"{_where(what, path)}: a dense array of {cells:,} cells from {entries:,} stored entries; "
            f"at most {limit:,} are accepted ({FILL_FACTOR} per entry, or {FILL_FLOOR:,}): "
            "a bad header, or a matrix to store densely (array format, .npy)"
        )


def check_allocation(nbytes: int, path: str | os.PathLike, what: str, detail: str) -> None:
    """Refuse to allocate ``nbytes`` for one input past :func:`max_input_bytes`."""
    cap = max_input_bytes()
    if nbytes > cap:
        raise DatasetError(
            f"{_where(what, path)}: {detail} would take {human(nbytes)}, over the input limit of "
            f"{human(cap)} (${MAX_INPUT_BYTES_ENV})"
        )
