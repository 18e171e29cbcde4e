"""The header of a ``.npy`` file, read without its data (never unpickled).

One reader for the places that check an untrusted ``.npy`` before reading it: LAP stacks
(:func:`matchbench.families.lap.datasets.stack`), MCM graph stacks
(:mod:`matchbench.families.mcm.stackfile`) and answers written by outside programs
(:func:`matchbench.core.answers.npy_ints`). Each names its own input in its errors.
"""

from __future__ import annotations

from typing import IO

import numpy as np


def read_header(f: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """``(shape, fortran_order, dtype, data_offset)`` of the ``.npy`` stream ``f``.

    Reads the magic string and the header only (format versions 1 and 2; numpy refuses
    headers over its ``max_header_size``); ``data_offset`` is where the data starts in ``f``.

    Raises
    ------
    ValueError, EOFError, SyntaxError
        For a stream that is not a ``.npy`` file of a version read here, as numpy raises them.

    Examples
    --------
    >>> import io
    >>> buf = io.BytesIO(); np.save(buf, np.zeros((2, 3), dtype=np.int32)); _ = buf.seek(0)
    >>> read_header(buf)
    ((2, 3), False, dtype('int32'), 128)
    """
    from numpy.lib import format as npformat

    major, minor = npformat.read_magic(f)
    if major not in (1, 2):
        raise ValueError(f"unsupported .npy format version {major}.{minor}")
    read = npformat.read_array_header_1_0 if major == 1 else npformat.read_array_header_2_0
    shape, fortran, dtype = read(f)
    return tuple(int(d) for d in shape), bool(fortran), dtype, f.tell()
