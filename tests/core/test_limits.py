"""Input limits: declared sizes checked against the file, capped decompression."""

from __future__ import annotations

import doctest
import gzip

import pytest

from matchbench.core import limits
from matchbench.core.errors import DatasetError


def test_doctests():
    assert doctest.testmod(limits).failed == 0


def test_a_gzip_bomb_is_refused_at_the_cap_naming_the_file(tmp_path, monkeypatch):
    p = tmp_path / "bomb.prefs.gz"
    with gzip.open(p, "wb") as f:
        for _ in range(8):
            f.write(b"0 " * (1 << 19))
    assert p.stat().st_size < 64 << 10
    monkeypatch.setenv(limits.MAX_INPUT_BYTES_ENV, "4MiB")
    with pytest.raises(DatasetError, match=r"bomb\.prefs\.gz: expands to more than 4\.0 MiB"):
        limits.read_text_capped(p, "prefs_file")
    monkeypatch.setenv(limits.MAX_INPUT_BYTES_ENV, "16MiB")
    assert len(limits.read_text_capped(p, "prefs_file")) == 8 << 20


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"\x1f\x8b\x08\x00garbage-not-deflate" * 4, "corrupt or truncated gzip"),
        (gzip.compress(b"3 2\n1 0\n" * 1000)[:-20], "corrupt or truncated gzip"),
        (b"\xff\xfe\x00bad", "not UTF-8 text"),
    ],
)
def test_damaged_files_name_the_file_and_the_defect(tmp_path, payload, message):
    p = tmp_path / "x.gz"
    p.write_bytes(payload)
    with pytest.raises(DatasetError, match=message) as info:
        limits.read_text_capped(p, "reader")
    assert str(p) in str(info.value)


def test_a_directory_is_named_as_such(tmp_path):
    with pytest.raises(DatasetError, match="is a directory"):
        limits.read_text_capped(tmp_path, "reader")


def test_entries_against_bytes_and_dimensions_against_entries(tmp_path):
    p = tmp_path / "m.mtx"
    p.write_text("%%MatrixMarket matrix coordinate pattern general\n2 2 3\n1 1\n2 2\n1 2\n")
    limits.check_entries(3, p, "mtx")
    with pytest.raises(DatasetError, match="declares 1,000,000 entries"):
        limits.check_entries(10**6, p, "mtx")
    limits.check_dimensions(2, 2, 3, p, "mtx")
    limits.check_dimensions(limits.DIM_FLOOR // 2, limits.DIM_FLOOR // 2, 3, p, "mtx")
    with pytest.raises(DatasetError, match="2,000,000,000 x 2,000,000,000"):
        limits.check_dimensions(2 * 10**9, 2 * 10**9, 3, p, "mtx")


def test_allocation_cap_is_settable(monkeypatch):
    monkeypatch.setenv(limits.MAX_INPUT_BYTES_ENV, "1GiB")
    limits.check_allocation(1 << 29, "f", "lap", "a dense matrix")
    with pytest.raises(DatasetError, match=r"a dense 20000 x 20000 matrix would take 3\.0 GiB"):
        limits.check_allocation(20000 * 20000 * 8, "f", "lap", "a dense 20000 x 20000 matrix")
    monkeypatch.setenv(limits.MAX_INPUT_BYTES_ENV, "nonsense")
    with pytest.raises(ValueError, match=limits.MAX_INPUT_BYTES_ENV):
        limits.max_input_bytes()


def test_dense_fill_against_entries():
    limits.check_fill(20000 * 20000, 200_000, "f", "lap")  # ten entries a row: fine
    with pytest.raises(DatasetError, match="400,000,000 cells from 2 stored entries"):
        limits.check_fill(20000 * 20000, 2, "f", "lap")
