"""Provenance records the commit of the code that runs, or None: never another repository's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from matchbench.runner import provenance

PACKAGE = Path(provenance.__file__).resolve().parents[1]
GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git not installed")


def git(root: Path, *args: str) -> str:
    out = subprocess.run(
        [GIT, "-C", str(root), "-c", "user.email=a@b", "-c", "user.name=t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def new_repo(root: Path) -> str:
    """``git init`` ``root`` with one commit; its HEAD."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    (root / "README").write_text("outer\n")
    git(root, "add", "README")
    git(root, "commit", "-q", "-m", "init")
    return git(root, "rev-parse", "HEAD")


def copy_package(root: Path) -> None:
    """The ``matchbench/`` package directory under ``root``, without its ``.git``."""
    shutil.copytree(PACKAGE, root / "matchbench", ignore=shutil.ignore_patterns("__pycache__"))


@pytest.fixture
def no_cache(monkeypatch):
    """A fresh ``git_state`` with no commit stamp and no installed commit unless a test sets one."""
    monkeypatch.delenv(provenance.COMMIT_ENV, raising=False)
    provenance.git_state.cache_clear()
    yield
    provenance.git_state.cache_clear()


def test_copy_inside_another_repo_gives_none(tmp_path):
    outer = tmp_path / "outer"
    outer_head = new_repo(outer)
    copy = outer / "deploy" / "matchbench-copy"
    copy_package(copy)
    assert git(copy, "rev-parse", "HEAD") == outer_head  # the trap the helper avoids
    assert provenance._git_commit_of(copy) == (None, None)


def test_copy_inside_another_repo_end_to_end(tmp_path):
    """The copy imported first on ``sys.path`` records no commit, not the outer repo's."""
    outer = tmp_path / "outer"
    new_repo(outer)
    copy = outer / "matchbench-copy"
    copy_package(copy)
    env = {k: v for k, v in os.environ.items() if k != provenance.COMMIT_ENV}
    env["PYTHONPATH"] = str(copy)
    code = (
        "import json, matchbench\n"
        "from matchbench.runner.provenance import git_state\n"
        "print(json.dumps([matchbench.__file__, git_state()]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=outer,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    where, state = json.loads(out.stdout)
    assert Path(where).resolve().is_relative_to(copy.resolve())
    assert state == [None, None]


def test_repo_top_gives_its_head_and_dirtiness(tmp_path):
    root = tmp_path / "checkout"
    head = new_repo(root)
    assert provenance._git_commit_of(root) == (head, False)
    (root / "README").write_text("changed\n")
    assert provenance._git_commit_of(root) == (head, True)


def test_not_a_repo_gives_none(tmp_path):
    assert provenance._git_commit_of(tmp_path) == (None, None)


def test_git_state_uses_the_checkout_root(monkeypatch, no_cache, tmp_path):
    root = tmp_path / "checkout"
    head = new_repo(root)
    monkeypatch.setattr(provenance, "_ROOT", root)
    monkeypatch.delenv(provenance.COMMIT_ENV, raising=False)
    assert provenance.git_state() == (head, False)


def test_explicit_stamp_wins_over_a_stale_checkout(monkeypatch, no_cache, tmp_path):
    root = tmp_path / "checkout"
    new_repo(root)
    monkeypatch.setattr(provenance, "_ROOT", root)
    monkeypatch.setenv(provenance.COMMIT_ENV, "f" * 40)
    assert provenance.git_state() == ("f" * 40, None)


def test_commit_stamp_when_git_gives_nothing(monkeypatch, no_cache, tmp_path):
    monkeypatch.setattr(provenance, "_ROOT", tmp_path)
    monkeypatch.setattr(provenance, "_installed_commit", lambda: "0" * 40)
    monkeypatch.setenv(provenance.COMMIT_ENV, " abc123 \n")
    assert provenance.git_state() == ("abc123", None)
    assert provenance.client_provenance()["git_commit"] == "abc123"
    assert provenance.client_provenance()["git_dirty"] is None


class FakeDistribution:
    """A distribution whose files are the running matchbench, with a given direct_url.json."""

    def __init__(self, direct_url: str | None, location: Path = PACKAGE.parent):
        self.direct_url = direct_url
        self.location = location

    def read_text(self, name: str) -> str | None:
        return self.direct_url if name == "direct_url.json" else None

    def locate_file(self, path: str) -> Path:
        return self.location / path


VCS_URL = json.dumps(
    {
        "url": "https://example.org/matchbench.git",
        "vcs_info": {"vcs": "git", "commit_id": "1234abcd" * 5, "requested_revision": "main"},
    }
)


def fake_distribution(monkeypatch, dist: FakeDistribution) -> None:
    def distribution(name: str) -> FakeDistribution:
        assert name == "matchbench"
        return dist

    monkeypatch.setattr(provenance.importlib.metadata, "distribution", distribution)


def test_installed_vcs_commit(monkeypatch, no_cache, tmp_path):
    monkeypatch.setattr(provenance, "_ROOT", tmp_path)
    fake_distribution(monkeypatch, FakeDistribution(VCS_URL))
    assert provenance.git_state() == ("1234abcd" * 5, None)


@pytest.mark.parametrize(
    "dist",
    [
        FakeDistribution(None),
        FakeDistribution(json.dumps({"url": "file:///src", "dir_info": {"editable": True}})),
        FakeDistribution("not json"),
        FakeDistribution(json.dumps({"vcs_info": {"vcs": "git"}})),
        # An installed matchbench elsewhere, shadowed by the running tree.
        FakeDistribution(VCS_URL, location=Path("/nonexistent/site-packages")),
    ],
    ids=["no-direct-url", "editable-dir", "malformed", "no-commit-id", "other-files"],
)
def test_no_installed_commit(monkeypatch, no_cache, tmp_path, dist):
    monkeypatch.setattr(provenance, "_ROOT", tmp_path)
    fake_distribution(monkeypatch, dist)
    assert provenance.git_state() == (None, None)
