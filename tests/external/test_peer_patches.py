"""The documented patches of the public peers (docs/peers/patch.py): each anchor replaced
exactly once, a missing or repeated anchor refused, and, where the peers' checkouts are at
hand (``$MATCHBENCH_PEERS``), every patch applies to the commit its YAML names."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def _patch_module():
    spec = importlib.util.spec_from_file_location(
        "peer_patch", ROOT / "docs" / "peers" / "patch.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


patch = _patch_module()


def _fake_checkout(tmp_path: Path, peer: str) -> Path:
    """A checkout holding just the anchors of ``peer``'s patch, each once."""
    root = tmp_path / peer
    texts: dict[Path, str] = {}
    for rel, anchor, _ in patch.PATCHES[peer]:
        texts[root / rel] = texts.get(root / rel, "// their code\n") + anchor + "// more of it\n"
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize("peer", sorted(patch.PATCHES))
def test_each_anchor_is_replaced_once_and_a_second_run_is_refused(tmp_path, peer):
    root = _fake_checkout(tmp_path, peer)
    changed = patch.apply(peer, root)
    assert changed
    for rel, _, replacement in patch.PATCHES[peer]:
        text = (root / rel).read_text()
        assert text.count(replacement) == 1
    # patched already (the anchors that are gone) or moved on: refused, naming the file
    if any(anchor not in repl for _, anchor, repl in patch.PATCHES[peer]):
        with pytest.raises(SystemExit, match="occurs 0 times, not once"):
            patch.apply(peer, root)


def test_a_file_left_unpatched_when_any_anchor_is_missing(tmp_path):
    root = _fake_checkout(tmp_path, "hylac")
    rel, anchor, _ = patch.PATCHES["hylac"][-1]
    (root / rel).write_text("// a newer version\n")
    before = {p: p.read_text() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(SystemExit, match=f"hylac: {rel}"):
        patch.apply("hylac", root)
    assert before == {p: p.read_text() for p in root.rglob("*") if p.is_file()}


@pytest.mark.skipif(
    not os.environ.get("MATCHBENCH_PEERS"),
    reason="the peers' checkouts ($MATCHBENCH_PEERS) are not here",
)
@pytest.mark.parametrize(
    ("peer", "folder"),
    [
        ("ecl-mm", "ECL-MM"),
        ("hylac", "HyLAC"),
        ("hylac-block", "HyLAC-Block-LAP"),
        ("louvain", "louvain-communities-cuda"),
        ("leiden", "leiden-communities-openmp"),
    ],
)
def test_the_patches_apply_to_the_named_commits(tmp_path, peer, folder):
    src = Path(os.environ["MATCHBENCH_PEERS"]) / folder
    shutil.copytree(src, tmp_path / folder)
    assert patch.apply(peer, tmp_path / folder)
