"""SuiteSparse cache and download, against a local HTTP server serving archives made here."""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import tarfile
import threading
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import matchbench.datasets as ds
from matchbench.datasets import DatasetError
from matchbench.graphs import mtx, suitesparse

MATRIX = sp.coo_matrix((np.ones(5), ([0, 1, 2, 3, 3], [1, 0, 2, 0, 3])), shape=(4, 5))


def _mtx_bytes(a: sp.coo_matrix, tmp: Path) -> bytes:
    return mtx.write(tmp / "scratch.mtx", a, field="pattern").read_bytes()


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


class _Truncating(http.server.BaseHTTPRequestHandler):
    """Promises 10000 bytes, sends 100, closes."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "10000")
        self.end_headers()
        self.wfile.write(b"x" * 100)
        self.close_connection = True

    def log_message(self, format, *args):  # noqa: A002
        pass


class _Server:
    def __init__(self, handler):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/MM"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.running = True

    def stop(self):
        if self.running:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join(5)
            self.running = False


@pytest.fixture
def served(tmp_path):
    """A server whose /MM/HB/tiny.tar.gz holds tiny/tiny.mtx (and other files)."""
    root = tmp_path / "www"
    data = _mtx_bytes(MATRIX, tmp_path)
    _tar(
        root / "MM" / "HB" / "tiny.tar.gz",
        {"tiny/tiny_b.mtx": b"not this one", "tiny/tiny.mtx": data, "tiny/README": b"x"},
    )
    server = _Server(functools.partial(_Quiet, directory=str(root)))
    server.data = data
    yield server
    server.stop()


def test_download_extract_progress_and_cache_hit(served, tmp_path, capsys):
    data_dir = tmp_path / "data"
    path = suitesparse.resolve("HB/tiny", data_dir, base_url=served.url, timeout=5)
    assert path == data_dir / "suitesparse" / "HB" / "tiny" / "tiny.mtx"
    assert path.read_bytes() == served.data
    # only the matrix is kept: no archive, no temporary files
    assert sorted(p.name for p in path.parent.iterdir()) == ["tiny.mtx"]
    err = capsys.readouterr().err
    assert "downloading suitesparse HB/tiny (" in err
    assert "(100%)" in err and "/ " in err

    served.stop()  # the second call must not need the network
    again = suitesparse.resolve("HB/tiny", data_dir, base_url=served.url, timeout=5)
    assert again == path and capsys.readouterr().err == ""
    g = suitesparse.load("HB/tiny", data_dir, offline=True)
    assert (g.n_rows, g.n_cols, g.n_edges) == (4, 5, 5)
    assert g.name == "tiny" and g.family == "suitesparse"
    assert g.params["suitesparse"] == "HB/tiny"


def test_environment_variables_choose_server_and_cache(served, tmp_path, monkeypatch):
    monkeypatch.setenv("MATCHBENCH_SUITESPARSE_URL", served.url + "/")
    monkeypatch.setenv("MATCHBENCH_DATA_DIR", str(tmp_path / "env-data"))
    path = suitesparse.resolve("HB/tiny")
    assert path == tmp_path / "env-data" / "suitesparse" / "HB" / "tiny" / "tiny.mtx"
    assert ds.default_data_dir() == tmp_path / "env-data"


def test_load_through_a_dataset_spec_passes_data_dir(served, tmp_path):
    ds.clear_cache()
    spec = {
        "_target_": "matchbench.families.mcm.datasets.suitesparse_matrix",
        "name": "HB/tiny",
        "base_url": served.url,
        "rcp": True,
        "rcp_seed": 1,
    }
    g = ds.load(spec, data_dir=tmp_path / "d")
    assert g.name == "tiny_rcp" and g.n_edges == 5
    assert (tmp_path / "d" / "suitesparse" / "HB" / "tiny" / "tiny.mtx").is_file()
    ds.clear_cache()


def test_offline_and_not_cached_says_what_to_place_where(tmp_path):
    data_dir = tmp_path / "data"
    with pytest.raises(DatasetError) as info:
        suitesparse.resolve("HB/bcsstk01", data_dir, offline=True)
    target = data_dir / "suitesparse" / "HB" / "bcsstk01" / "bcsstk01.mtx"
    assert (
        f"download https://sparse.tamu.edu/MM/HB/bcsstk01.tar.gz and extract bcsstk01.mtx "
        f"to {target}"
    ) in str(info.value)
    assert not (data_dir / "suitesparse").exists()  # offline creates nothing


def test_network_error_says_what_to_place_where(served, tmp_path):
    url = served.url
    served.stop()
    with pytest.raises(DatasetError, match="cannot download") as info:
        suitesparse.resolve("HB/tiny", tmp_path, base_url=url, timeout=5)
    target = tmp_path / "suitesparse" / "HB" / "tiny" / "tiny.mtx"
    assert f"download {url}/HB/tiny.tar.gz and extract tiny.mtx to {target}" in str(info.value)
    assert not list(target.parent.iterdir())  # no partial files left


def test_http_404(served, tmp_path):
    with pytest.raises(DatasetError, match=r"HB/nosuch\.tar\.gz: HTTP 404 .*no such matrix"):
        suitesparse.resolve("HB/nosuch", tmp_path, base_url=served.url, timeout=5)


def test_truncated_download(tmp_path):
    server = _Server(_Truncating)
    try:
        with pytest.raises(DatasetError) as info:
            suitesparse.resolve("HB/tiny", tmp_path, base_url=server.url, timeout=5)
    finally:
        server.stop()
    assert "HB/tiny" in str(info.value)
    folder = tmp_path / "suitesparse" / "HB" / "tiny"
    assert not list(folder.iterdir())


def test_archive_without_the_matrix(tmp_path):
    root = tmp_path / "www"
    _tar(root / "MM" / "G" / "m.tar.gz", {"m/other.mtx": b"x"})
    server = _Server(functools.partial(_Quiet, directory=str(root)))
    try:
        with pytest.raises(DatasetError, match=r"holds no m\.mtx \(first members: m/other\.mtx\)"):
            suitesparse.resolve("G/m", tmp_path / "d", base_url=server.url, timeout=5)
    finally:
        server.stop()


def test_unsafe_archive_member_is_refused(tmp_path):
    # A member escaping the extraction folder: tarfile's data filter refuses it.
    archive = tmp_path / "d" / "suitesparse" / "G" / "m" / "m.tar.gz"
    _tar(
        archive, {"../../m.mtx": b"%%MatrixMarket matrix coordinate pattern general\n1 1 1\n1 1\n"}
    )
    with pytest.raises(DatasetError, match="cannot extract m.mtx"):
        suitesparse.resolve("G/m", tmp_path / "d", offline=True)
    assert not (tmp_path / "d" / "suitesparse" / "m.mtx").exists()


def test_files_placed_by_hand_are_used_offline(tmp_path):
    data_dir = tmp_path / "data"
    # a compressed matrix
    gz = data_dir / "suitesparse" / "A" / "one" / "one.mtx.gz"
    gz.parent.mkdir(parents=True)
    with gzip.open(gz, "wb") as f:
        f.write(_mtx_bytes(MATRIX, tmp_path))
    assert suitesparse.resolve("A/one", data_dir, offline=True) == gz
    assert suitesparse.load("A/one", data_dir, offline=True).n_edges == 5
    # the collection's archive, extracted on first use
    _tar(
        data_dir / "suitesparse" / "A" / "two" / "two.tar.gz",
        {"two/two.mtx": _mtx_bytes(MATRIX, tmp_path)},
    )
    path = suitesparse.resolve("A/two", data_dir, offline=True)
    assert path.name == "two.mtx" and not path.with_name("two.tar.gz").exists()


@pytest.mark.parametrize("name", ["bcsstk01", "HB/", "a/b/c", "HB/../x", "../HB", "HB/x y"])
def test_bad_names(name, tmp_path):
    with pytest.raises(DatasetError, match="Group/Name"):
        suitesparse.resolve(name, tmp_path, offline=True)


def test_progress_redraws_one_line_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    progress = suitesparse._Progress("x", 4 << 20, stream=out)
    progress.update(1 << 20)
    progress.update(3 << 20)
    progress.finish()
    text = out.getvalue()
    assert text.startswith("\rx: 1.0 MB / 4.0 MB (25%)")
    assert text.endswith("\rx: 4.0 MB / 4.0 MB (100%)\n") and text.count("\n") == 1
