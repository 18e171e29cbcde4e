"""Every kernel family compiles through NVRTC for the architectures we target (no GPU).

Runs in CI: ``compile_ptx`` needs CuPy's NVRTC bindings and the NVRTC library, not a
device. Families are enumerated from ``kernels/*.cu``, so a family added later is covered
without editing this file.
"""

from __future__ import annotations

import pytest

from matchbench.gpu import kernels

ARCHS = ("sm_90", "sm_80")


def _nvrtc_missing() -> str | None:
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as exc:  # no CuPy, or CuPy without a loadable NVRTC
        return f"CuPy's NVRTC is not usable here: {exc!r}"
    return None


pytestmark = pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))


def test_there_are_families():
    assert "apfb" in kernels.families()


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", kernels.families())
def test_family_compiles(family, arch):
    ptx = kernels.compile_ptx(family, arch)
    assert f".target {arch}" in ptx
    entries = [line.split("(")[0].split()[-1] for line in ptx.splitlines() if ".entry" in line]
    assert entries, f"{family}.cu defines no kernel"
    # House style: kernel names carry the family prefix.
    bad = [e for e in entries if not e.startswith(f"{family}_")]
    assert not bad, f"{family}.cu: kernels without the '{family}_' prefix: {bad}"


@pytest.mark.parametrize("arch", ARCHS)
def test_apfb_compiles_with_int64_indices(arch):
    ptx = kernels.compile_ptx("apfb", arch, ("-DMB_INDEX64",))
    assert ".entry apfb_bfs_wr_negrow" in ptx
    assert ".entry apfb_bfs_queue_wr_negrow" in ptx


@pytest.mark.parametrize(
    "family", [f for f in kernels.families() if "mb_index" in kernels.source_path(f).read_text()]
)
def test_index_generic_families_compile_with_int64_indices(family):
    """Every family written over ``mb_index`` also builds for int64 graphs (-DMB_INDEX64)."""
    assert ".entry" in kernels.compile_ptx(family, ARCHS[0], ("-DMB_INDEX64",))


@pytest.mark.parametrize(
    "options", [("-DAPFB_COUNT_EDGES",), ("-DAPFB_COUNT_EDGES", "-DMB_INDEX64")]
)
def test_apfb_instrumented_build_compiles(options):
    """The edge-counting build the benchmark's throughput table uses."""
    ptx = kernels.compile_ptx("apfb", ARCHS[0], options)
    assert ".entry apfb_bfs_queue" in ptx and ".entry apfb_bfs_wr" in ptx


@pytest.fixture
def broken_kernel_dir(tmp_path, monkeypatch):
    """A kernel folder holding common.cuh and one family with a syntax error."""
    (tmp_path / "common.cuh").write_text((kernels.kernel_dir() / "common.cuh").read_text())
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "brokenfam.cu").write_text(
        '#include "common.cuh"\n'
        'extern "C" __global__ void brokenfam_k(mb_index* a) {\n'
        "  a[0] = undeclared_name_xyz;\n"
        "}\n"
    )
    monkeypatch.setenv("MATCHBENCH_KERNEL_DIR", str(tmp_path))
    kernels.kernel_dir.cache_clear()
    yield tmp_path
    monkeypatch.delenv("MATCHBENCH_KERNEL_DIR", raising=False)
    kernels.kernel_dir.cache_clear()


def test_broken_source_raises_with_file_and_log(broken_kernel_dir):
    assert kernels.kernel_dir() == broken_kernel_dir
    assert kernels.families() == ["brokenfam"]
    with pytest.raises(kernels.KernelCompileError) as info:
        kernels.compile_ptx("brokenfam", "sm_90")
    msg = str(info.value)
    assert "brokenfam.cu" in msg
    # NVRTC's log names the offending identifier.
    assert "undeclared_name_xyz" in msg


def test_kernel_dir_is_restored(broken_kernel_dir):
    # The fixture's teardown must leave the loader pointing at the checkout again; check
    # the mechanism it relies on: clearing the cache re-reads the environment.
    import os

    os.environ.pop("MATCHBENCH_KERNEL_DIR")
    kernels.kernel_dir.cache_clear()
    assert (kernels.kernel_dir() / "mcm" / "apfb.cu").is_file()
    os.environ["MATCHBENCH_KERNEL_DIR"] = str(broken_kernel_dir)


def test_sources_are_listed_once_and_read_again_only_when_changed(tmp_path, monkeypatch):
    # A batch asks for its kernels per instance: a call stats the file instead of listing
    # the folder and hashing the source, yet an edit or a new module is still seen.
    import os

    (tmp_path / "common.cuh").write_text("// common\n")
    (tmp_path / "fam").mkdir()
    one = tmp_path / "fam" / "onefam.cu"
    one.write_text("// one\n")
    monkeypatch.setenv("MATCHBENCH_KERNEL_DIR", str(tmp_path))
    kernels.kernel_dir.cache_clear()
    try:
        assert kernels._read_source("onefam") == "// one\n"
        calls = []
        monkeypatch.setattr(type(one), "read_text", lambda self, *a, **k: calls.append(self) or "x")
        assert kernels._read_source("onefam") == "// one\n" and calls == []  # unchanged: not read
        monkeypatch.undo()
        monkeypatch.setenv("MATCHBENCH_KERNEL_DIR", str(tmp_path))
        one.write_text("// one, edited\n")
        st = one.stat()
        os.utime(one, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        assert kernels._read_source("onefam") == "// one, edited\n"
        (tmp_path / "fam" / "twofam.cu").write_text("// two\n")  # added in a live session
        assert kernels.source_path("twofam").name == "twofam.cu"
        with pytest.raises(FileNotFoundError, match="no kernel module 'nofam'"):
            kernels.source_path("nofam")
    finally:
        monkeypatch.delenv("MATCHBENCH_KERNEL_DIR", raising=False)
        kernels.kernel_dir.cache_clear()
        kernels._texts.clear()
