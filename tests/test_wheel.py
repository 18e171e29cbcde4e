"""matchbench works from a wheel, not only from an editable checkout.

The slow tests build the wheel from a copy of the checkout (``pip wheel --no-deps
--no-build-isolation``: offline, with this venv's setuptools), install it with ``--no-deps``
into a fresh venv, and give that venv the dependencies of this one through a ``.pth`` line
naming this venv's site-packages. A path added by a ``.pth`` line is not itself scanned for
``.pth`` files, so this venv's editable-install ``.pth`` (which puts the checkout on
``sys.path``) is not processed: the fresh venv sees the checkout only through the wheel,
which :func:`test_the_installed_package_is_the_wheel` checks. Then, from an empty working
directory: the quickstart sweep, its paper tables, a solver in a ``--config-dir`` of one's
own, ``--help``, and every kernel compiled through NVRTC from the installed sources.

The fast tests check the pieces in this process: the resource locator, ``--help``, the
``--config-dir`` flag, ``cluster=auto``'s one line where dask-cuda is broken, the extras.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from matchbench import cli
from matchbench.core import paths
from matchbench.runner import cluster

ROOT = Path(__file__).resolve().parents[1]
#: Seconds any one command of the installed package may take on a 2-core CI machine.
TIMEOUT_S = 300


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def _checkout_files(root: Path) -> list[str]:
    """The files a wheel is built from: git's tracked and unignored files, else the tree
    without the usual build and cache folders."""
    listed = _run(["git", "-C", str(root), "ls-files", "-z", "-co", "--exclude-standard"], cwd=root)
    if listed.returncode == 0 and listed.stdout.strip():
        return [f for f in listed.stdout.split("\0") if f and (root / f).is_file()]
    skip = {".git", ".venv", "build", "dist", "runs", "__pycache__", ".pytest_cache"}
    return [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file()
        and not skip & set(p.relative_to(root).parts)
        and not any(part.endswith(".egg-info") for part in p.parts)
    ]


def _nvrtc_missing() -> str | None:
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as exc:  # no CuPy, or CuPy without a loadable NVRTC
        return f"CuPy's NVRTC is not usable here: {exc!r}"
    return None


# --------------------------------------------------------------------------- the wheel


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A copy of the checkout: the build writes build/ and *.egg-info into its source
    folder, and a stale build/ could carry files that the checkout no longer has."""
    dst = tmp_path_factory.mktemp("src")
    for rel in _checkout_files(ROOT):
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dst / rel)
    return dst


@pytest.fixture(scope="module")
def wheel(source, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    res = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(source),
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(out),
        ],
        cwd=out,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (whl,) = out.glob("matchbench-*.whl")
    return whl


@pytest.mark.slow
def test_the_wheel_holds_configs_kernels_plugins_and_data(wheel, source):
    names = set(zipfile.ZipFile(wheel).namelist())

    def shipped(pattern: str, inside: str = "") -> list[str]:
        return [inside + str(p.relative_to(source)) for p in sorted(source.glob(pattern))]

    expected = {
        "conf/**/*.yaml": shipped("conf/**/*.yaml", "matchbench/"),
        "kernels/**/*.cu": shipped("kernels/**/*.cu", "matchbench/"),
        "kernels/common.cuh": shipped("kernels/common.cuh", "matchbench/"),
        "hydra_plugins": shipped("hydra_plugins/**/*.py"),
        "smoke matrices": shipped("matchbench/families/mcm/smoke/*.mtx"),
        "paper numbers": shipped("matchbench/data/papers/*"),
        # packages are found, not listed: a new module or family folder ships by itself
        "modules": shipped("matchbench/**/*.py"),
    }
    for what, files in expected.items():
        assert files, f"nothing in the checkout for {what}"
        missing = sorted(set(files) - names)
        assert not missing, f"{what}: not in {wheel.name}: {missing}"
    assert "matchbench/conf/config.yaml" in names
    # the checkout's folders stay where they are; no top-level conf/ or kernels/ in site-packages
    assert not any(n.startswith(("conf/", "kernels/")) for n in names)


# --------------------------------------------------------------------------- a fresh venv


def _deps_dirs() -> list[str]:
    """This interpreter's site-packages: the dependencies the fresh venv borrows."""
    cfg = sysconfig.get_paths()
    return list(dict.fromkeys([cfg["purelib"], cfg["platlib"]]))


@pytest.fixture(scope="module")
def fresh(wheel, tmp_path_factory) -> dict[str, Path]:
    """A venv holding the wheel alone, the dependencies borrowed by a ``.pth`` line."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    res = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=venv.parent)
    assert res.returncode == 0, res.stderr[-3000:]
    python = venv / "bin" / "python"
    res = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        cwd=venv.parent,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    site = Path(
        _run(
            [str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=venv.parent,
        ).stdout.strip()
    )
    assert (site / "matchbench" / "conf" / "config.yaml").is_file()
    (site / "zz-matchbench-test-deps.pth").write_text("\n".join(_deps_dirs()) + "\n")
    empty = tmp_path_factory.mktemp("cwd")
    return {"venv": venv, "python": python, "bin": venv / "bin", "site": site, "cwd": empty}


def _env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH, no user site, no kernel override."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "MATCHBENCH_KERNEL_DIR", "VIRTUAL_ENV")
    }
    env.update(PYTHONNOUSERSITE="1", PYTHONSAFEPATH="1", PYTHONUNBUFFERED="1", **extra)
    return env


def _nvrtc_library_path() -> str:
    """NVRTC's library folder from the nvidia-* wheels of the borrowed site-packages.

    CuPy finds the library by searching the site-packages of its own venv, where a real
    install of ``matchbench[cuda12]`` has it; the fresh venv borrows this one's by a
    ``.pth`` line, which that search does not cover, so the loader is told.
    """
    found = {str(p.parent) for d in _deps_dirs() for p in Path(d).glob("nvidia/**/libnvrtc.so*")}
    return os.pathsep.join(sorted(found) + [os.environ.get("LD_LIBRARY_PATH", "")]).strip(
        os.pathsep
    )


@pytest.mark.slow
def test_the_installed_package_is_the_wheel(fresh):
    code = (
        "import json, sys, matchbench, hydra_plugins.matchbench_dask_launcher as plugin\n"
        "from matchbench.core.paths import conf_dir\n"
        "from matchbench.gpu.kernels import kernel_dir\n"
        "print(json.dumps({'matchbench': matchbench.__file__, 'plugin': plugin.__file__,\n"
        "  'conf': str(conf_dir()), 'kernels': str(kernel_dir()), 'path': sys.path}))\n"
    )
    res = _run([str(fresh["python"]), "-I", "-c", code], cwd=fresh["cwd"], env=_env())
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout)
    site = fresh["site"]
    assert Path(got["matchbench"]).is_relative_to(site / "matchbench"), got
    assert Path(got["plugin"]).is_relative_to(site / "hydra_plugins"), got
    assert Path(got["conf"]) == site / "matchbench" / "conf"
    assert Path(got["kernels"]) == site / "matchbench" / "kernels"
    assert str(ROOT) not in got["path"], "the checkout leaked onto the fresh venv's sys.path"


@pytest.mark.slow
def test_help_from_the_wheel_lists_the_subcommands(fresh):
    res = _run([str(fresh["bin"] / "matchbench"), "--help"], cwd=fresh["cwd"], env=_env())
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    for word in ("results", "report", "compare", "--config-dir", "-m", "quickstart"):
        assert word in res.stdout
    assert str(fresh["site"] / "matchbench" / "conf") in res.stdout
    assert "algorithm" in res.stdout and "hk" in res.stdout


@pytest.mark.slow
def test_quickstart_and_its_tables_from_the_wheel(fresh, tmp_path):
    from matchbench.results.store import read_results

    runs = tmp_path / "runs"
    res = _run(
        [
            str(fresh["bin"] / "matchbench"),
            "-m",
            "+experiment=quickstart",
            f"run.results_dir={runs}",
            "cluster=local_cpu",
            "cluster.n_workers=2",
            "cluster.dashboard_address=null",
            "gpu.repetitions=1",
        ],
        cwd=fresh["cwd"],
        env=_env(),
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    assert "Traceback" not in res.stderr, res.stderr[-4000:]
    df = read_results(runs)
    ok = df[df.status == "ok"]
    assert len(ok) and ok.verified.all()
    assert {"mcm", "lap", "wmatch", "smarriage", "mwpm", "community"} <= set(ok.problem)
    # GPU solvers are skipped rows here (no GPU), never errors
    assert set(df.status) <= {"ok", "skipped"}, df[~df.status.isin(["ok", "skipped"])][
        ["algorithm", "error"]
    ]
    assert list(runs.glob("date=*/run=*/_report.html"))
    # the README's snippet reads the folder the main job wrote, report and manifest beside
    import pandas as pd

    assert len(pd.read_parquet(runs)) == len(df)

    res = _run(
        [
            str(fresh["bin"] / "matchbench"),
            "report",
            "--experiment",
            "quickstart",
            "--root",
            str(runs),
        ],
        cwd=fresh["cwd"],
        env=_env(),
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Maximum-cardinality matching" in res.stdout
    # everything went where it was told: nothing in the working directory
    assert not list(fresh["cwd"].iterdir())


@pytest.mark.slow
def test_own_solver_in_own_config_dir_from_the_wheel(fresh, tmp_path):
    """A user's class and YAML, outside the package: ``--config-dir`` and PYTHONPATH."""
    from matchbench.results.store import read_results

    mine = tmp_path / "mine"
    (mine / "conf" / "algorithm").mkdir(parents=True)
    (mine / "my_solvers.py").write_text(
        "from matchbench.families.mcm.ref_scipy import ScipyHopcroftKarp\n\n\n"
        "class MySolver(ScipyHopcroftKarp):\n"
        '    name = "my_solver"\n'
    )
    (mine / "conf" / "algorithm" / "my_solver.yaml").write_text("_target_: my_solvers.MySolver\n")
    runs = tmp_path / "runs"
    res = _run(
        [
            str(fresh["bin"] / "matchbench"),
            "--config-dir",
            str(mine / "conf"),
            "algorithm=my_solver",
            "dataset=smoke",
            f"run.results_dir={runs}",
            "cluster=local_cpu",
            "cluster.n_workers=1",
            "cluster.dashboard_address=null",
            "gpu.repetitions=1",
        ],
        cwd=fresh["cwd"],
        env=_env(PYTHONPATH=str(mine)),
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    df = read_results(runs)
    assert set(df.algorithm) == {"my_solver"}
    assert (df.status == "ok").all() and df.verified.all(), df[["status", "error"]]


@pytest.mark.slow
def test_every_kernel_compiles_from_the_wheel(fresh):
    missing = _nvrtc_missing()
    if missing:
        pytest.skip(missing)
    code = (
        "import json\n"
        "from matchbench.gpu import kernels\n"
        "print(json.dumps({f: [str(kernels.source_path(f)), '.entry' in kernels.compile_ptx(f)]\n"
        "                  for f in kernels.families()}))\n"
    )
    res = _run(
        [str(fresh["python"]), "-I", "-c", code],
        cwd=fresh["cwd"],
        env=_env(LD_LIBRARY_PATH=_nvrtc_library_path()),
    )
    assert res.returncode == 0, res.stderr[-4000:]
    got = json.loads(res.stdout)
    from matchbench.gpu import kernels

    assert sorted(got) == kernels.families()  # the same modules as the checkout's
    installed = fresh["site"] / "matchbench" / "kernels"
    for family, (path, has_entry) in got.items():
        assert Path(path).is_relative_to(installed), (family, path)
        assert has_entry, f"{family}: no kernel in its PTX"


# --------------------------------------------------------------------------- in this process


def test_resource_dir_error_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "PACKAGE_DIR", tmp_path / "site" / "matchbench")
    monkeypatch.setenv("MATCHBENCH_TEST_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError) as info:
        paths.resource_dir("kernels", "common.cuh", env="MATCHBENCH_TEST_DIR")
    msg = str(info.value)
    for place in (
        tmp_path / "nowhere",
        tmp_path / "site" / "matchbench" / "kernels",
        tmp_path / "site" / "kernels",
    ):
        assert str(place) in msg
    assert "MATCHBENCH_TEST_DIR" in msg and "common.cuh" in msg


def test_resource_dir_prefers_the_installed_copy(tmp_path, monkeypatch):
    package = tmp_path / "site" / "matchbench"
    for folder in (package / "conf", tmp_path / "site" / "conf"):
        folder.mkdir(parents=True)
        (folder / "config.yaml").write_text("")
    monkeypatch.setattr(paths, "PACKAGE_DIR", package)
    assert paths.conf_dir() == package / "conf"
    (package / "conf" / "config.yaml").unlink()  # a checkout: conf/ beside the package
    assert paths.conf_dir() == tmp_path / "site" / "conf"


def test_config_dir_constant_is_the_conf_dir():
    from matchbench.core.paths import CONFIG_DIR

    assert CONFIG_DIR == str(paths.conf_dir())
    assert (Path(CONFIG_DIR) / "experiment" / "quickstart.yaml").is_file()


def test_help_lists_subcommands_and_groups(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for word in ("results", "report", "compare", "--config-dir", "+experiment=quickstart"):
        assert word in out
    assert "algorithm" in out and "scipy_hk" in out and "local_cpu" in out


def test_help_and_run_without_configs_say_where_they_looked(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(paths, "PACKAGE_DIR", tmp_path / "site" / "matchbench")
    with pytest.raises(SystemExit) as info:
        cli.main(["-h"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "report" in out and str(tmp_path / "site" / "matchbench" / "conf") in out
    with pytest.raises(SystemExit) as info:
        cli.main(["algorithm=hk"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("matchbench: error: ") and err.count("\n") == 1
    assert str(tmp_path / "site" / "conf") in err


def test_config_dir_adds_own_configs_beside_the_shipped_ones(tmp_path):
    (tmp_path / "conf" / "algorithm").mkdir(parents=True)
    (tmp_path / "conf" / "algorithm" / "my_solver.yaml").write_text(
        "_target_: my_solvers.MySolver\nalpha: 2\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "matchbench",
            "--config-dir",
            str(tmp_path / "conf"),
            "algorithm=my_solver",
            "dataset=lap_smoke",
            "--cfg",
            "job",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "_target_: my_solvers.MySolver" in res.stdout and "alpha: 2" in res.stdout
    assert "matchbench.families.lap.datasets.uniform" in res.stdout  # a shipped group beside it


@pytest.mark.parametrize(
    ("gpus", "dask_cuda", "kind", "said"),
    [
        (0, (True, ""), "local_cpu", False),
        (2, (True, ""), "local_cuda", False),
        (
            2,
            (
                False,
                "dask-cuda not importable (ImportError: cannot import name 'bindings' from 'cuda')",
            ),
            "local_cpu",
            True,
        ),
    ],
)
def test_auto_cluster_never_passes_over_a_gpu_silently(monkeypatch, gpus, dask_cuda, kind, said):
    monkeypatch.setattr(cluster, "gpu_count", lambda: gpus)
    monkeypatch.setattr(cluster, "dask_cuda_available", lambda: dask_cuda)
    stream = io.StringIO()
    assert cluster.auto_kind(stream) == kind
    text = stream.getvalue()
    if not said:
        assert text == ""
        return
    assert text.count("\n") == 1  # one line
    assert "2 GPU(s) visible" in text and "cannot import name 'bindings'" in text
    assert "matchbench[cuda12]" in text and "dask-cuda[cu12]" in text


def test_cuda_extras_bring_dask_cuda_with_its_bindings():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra, tag in (("cuda12", "cu12"), ("cuda13", "cu13")):
        reqs = extras[extra]
        assert any(r.startswith(f"dask-cuda[{tag}]") for r in reqs), reqs
        assert any(r.startswith("cupy-cuda") for r in reqs) and any("nvrtc" in r for r in reqs)
