"""The kernel loader shared by every GPU family.

Each problem family's CUDA C lives in ``kernels/<family>/<module>.cu`` (shared helpers in
``kernels/common.cuh``); a kernel module is named by its file stem (``apfb``, ``hungarian``),
unique across families. :func:`get_module` compiles it with ``cupy.RawModule`` on first
use and caches the module per (family, device, options); nothing compiles at import.
:func:`compile_ptx` compiles through NVRTC without any GPU (CI uses it to check that
every kernel builds for the architectures we target).
"""

from __future__ import annotations

import hashlib
import threading
import time
from functools import cache
from pathlib import Path
from typing import Any

from matchbench.core.paths import resource_dir

#: Options every family is compiled with.
BASE_OPTIONS: tuple[str, ...] = ("--std=c++17",)

_lock = threading.Lock()
_modules: dict[tuple[Any, ...], Any] = {}
#: seconds spent compiling, per family, in this process (the ``t_compile_s`` column).
compile_seconds: dict[str, float] = {}


class KernelCompileError(RuntimeError):
    """NVRTC rejected a kernel source; the message carries the file name and the log."""


@cache
def kernel_dir() -> Path:
    """The kernel sources: ``$MATCHBENCH_KERNEL_DIR``, else ``matchbench/kernels/`` of an
    installed wheel, else ``kernels/`` of the checkout (the first holding ``common.cuh``).

    Raises
    ------
    FileNotFoundError
        Naming every folder looked in.
    """
    return resource_dir("kernels", "common.cuh", env="MATCHBENCH_KERNEL_DIR")


def _sources() -> dict[str, Path]:
    """``{module: kernels/<family>/<module>.cu}`` for every kernel module (listed once per
    process: a batch asks per instance; a module not found lists the folder again)."""
    return _listing(kernel_dir())


@cache
def _listing(root: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted(root.glob("*/*.cu"))}


def families() -> list[str]:
    """Every kernel module (the stem of a ``kernels/<family>/<module>.cu`` file)."""
    return sorted(_sources())


def source_path(family: str) -> Path:
    """``kernels/<problem family>/<family>.cu`` of the kernel module ``family``."""
    path = _sources().get(family)
    if path is None:
        _listing.cache_clear()  # a module added in a live session
        path = _sources().get(family)
    if path is None:
        raise FileNotFoundError(
            f"no kernel module {family!r} in {kernel_dir()}/*/ (known: {', '.join(families())})"
        )
    return path


#: family -> (the source file's (mtime_ns, size), its text, the text's sha1)
_texts: dict[str, tuple[tuple[int, int], str, str]] = {}


def _read_source(family: str) -> str:
    return _source_and_hash(family)[0]


def _source_and_hash(family: str) -> tuple[str, str]:
    """A module's source and its sha1, read again only when its file's mtime or size
    changed (one ``stat`` per call, not a read and a hash)."""
    path = source_path(family)
    st = path.stat()
    stamp = (st.st_mtime_ns, st.st_size)
    held = _texts.get(family)
    if held is None or held[0] != stamp:
        src = path.read_text()
        held = _texts[family] = (stamp, src, hashlib.sha1(src.encode()).hexdigest())
    return held[1], held[2]


def _options(options: tuple[str, ...]) -> tuple[str, ...]:
    return BASE_OPTIONS + (f"-I{kernel_dir()}",) + tuple(options)


def compile_ptx(family: str, arch: str = "sm_90", options: tuple[str, ...] = ()) -> str:
    """Compile ``kernels/<family>.cu`` to PTX through NVRTC; no GPU needed.

    Raises
    ------
    KernelCompileError
        With the file name and NVRTC's log.
    """
    from cupy_backends.cuda.libs import nvrtc

    path = source_path(family)
    prog = nvrtc.createProgram(path.read_text(), str(path), (), ())
    try:
        try:
            nvrtc.compileProgram(prog, (f"-arch={arch}",) + _options(options))
        except nvrtc.NVRTCError as exc:
            log = nvrtc.getProgramLog(prog)
            raise KernelCompileError(f"{path} failed to compile for {arch}: {exc}\n{log}") from None
        ptx = nvrtc.getPTX(prog)
        return ptx.decode() if isinstance(ptx, bytes) else ptx
    finally:
        nvrtc.destroyProgram(prog)


def get_module(family: str, options: tuple[str, ...] = ()) -> Any:
    """The compiled ``cupy.RawModule`` of a family on the current device (cached).

    The cache key includes the source's hash, so editing a ``.cu`` file in a live
    session recompiles it; the file is read again only when its mtime or size changed,
    so a call on a compiled module costs a ``stat`` (a batch asks per instance).
    """
    import cupy

    src, digest = _source_and_hash(family)
    dev = cupy.cuda.Device().id
    key = (family, dev, tuple(options), digest)
    mod = _modules.get(key)
    if mod is not None:
        return mod
    with _lock:
        mod = _modules.get(key)
        if mod is None:
            t0 = time.perf_counter()
            mod = cupy.RawModule(code=src, options=_options(options), backend="nvrtc")
            try:
                mod.compile()
            except cupy.cuda.compiler.CompileException as exc:
                raise KernelCompileError(
                    f"{source_path(family)} failed to compile: {exc.get_message()}"
                ) from None
            compile_seconds[family] = compile_seconds.get(family, 0.0) + time.perf_counter() - t0
            _modules[key] = mod
    return mod


def precompile(families_: list[str] | tuple[str, ...]) -> dict[str, float]:
    """Compile the named families on the current device; returns seconds per family."""
    out = {}
    for fam in families_:
        t0 = time.perf_counter()
        get_module(fam)
        out[fam] = time.perf_counter() - t0
    return out
