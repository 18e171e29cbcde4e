"""Which result rows a command means, and their normal form.

``matchbench compare`` and ``matchbench report`` name rows the same way: a run id (under
``--root``), a commit (hex prefix of at least 7 characters: every row under the root whose
``git_commit`` starts with it) or a result path (file, run folder or results root).
:func:`select` reads them; :func:`normalize` fills the key columns so that rows of CPU
runs and of solvers without a variant or initializer join.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from matchbench.results.schema import KEY_COLUMNS
from matchbench.results.store import ResultsError, find_run, latest_run, read_results

__all__ = ["CPU_LABEL", "Selection", "normalize", "select", "select_many"]

#: Label of ``gpu_model`` for rows of CPU-only runs (null in the results).
CPU_LABEL = "cpu"

_HEX = re.compile(r"^[0-9a-fA-F]{7,40}$")


@dataclass
class Selection:
    """Result rows chosen by one command-line argument, with where they came from."""

    spec: str
    kind: str  # "path", "run", "commit", "latest" or "all"
    frame: pd.DataFrame

    @property
    def run_ids(self) -> list[str]:
        return sorted(self.frame["run_id"].dropna().unique().tolist())

    @property
    def commits(self) -> list[str]:
        return sorted(self.frame["git_commit"].dropna().unique().tolist())

    @property
    def gpu_models(self) -> list[str]:
        return sorted(self.frame["gpu_model"].fillna(CPU_LABEL).unique().tolist())

    def describe(self) -> dict[str, Any]:
        """JSON-able provenance: what was selected and how."""
        ts = pd.to_datetime(self.frame["timestamp"], utc=True).dropna()
        return {
            "spec": self.spec,
            "kind": self.kind,
            "run_ids": self.run_ids,
            "commits": self.commits,
            "gpu_models": self.gpu_models,
            "rows": len(self.frame),
            "first_timestamp": ts.min().isoformat() if len(ts) else None,
            "last_timestamp": ts.max().isoformat() if len(ts) else None,
        }


def normalize(frame: pd.DataFrame) -> pd.DataFrame:
    """Result rows with key columns filled: null ``gpu_model`` -> "cpu", null ``variant``
    and ``init`` -> "".

    Instrumented repetitions (``instrumented`` true) are left out: their times include
    the instrumentation, so neither the gate nor the report may compare them.
    """
    if "instrumented" in frame:
        frame = frame[frame["instrumented"].fillna(False) != True]  # noqa: E712
    df = frame.copy()
    df["gpu_model"] = df["gpu_model"].fillna(CPU_LABEL).astype(str)
    df["variant"] = df["variant"].fillna("").astype(str)
    df["init"] = df["init"].fillna("").astype(str) if "init" in df else ""
    for col in ("problem", "algorithm", "instance"):
        df[col] = df[col].fillna("").astype(str)
    df["timestamp"] = pd.to_datetime(df["timestamp"], utc=True)
    return _name_unloaded(df)


def _name_unloaded(df: pd.DataFrame) -> pd.DataFrame:
    """Rows written without loading their instance (a GPU task ``skipped`` where no GPU
    worker is, a timeout before the load) carry the spec's label as ``instance`` and no
    ``family``; they take the name and family of a row of the same ``instance_key`` that
    loaded it, so that tables and profiles see one instance, not a phantom second one."""
    if "instance_key" not in df or "family" not in df or df.empty:
        return df
    loaded = df[df["family"].notna() & (df["family"].astype(str) != "") & df["instance_key"].notna()]
    if loaded.empty:
        return df
    first = loaded.drop_duplicates("instance_key").set_index("instance_key")
    unloaded = (df["family"].isna() | (df["family"].astype(str) == "")) & df["instance_key"].isin(first.index)
    if unloaded.any():
        keys = df.loc[unloaded, "instance_key"]
        df.loc[unloaded, "instance"] = keys.map(first["instance"]).to_numpy()
        df.loc[unloaded, "family"] = keys.map(first["family"]).to_numpy()
    return df


def select(spec: str, root: str | Path = "runs") -> Selection:
    """The result rows named by ``spec``: a result path, a run id under ``root``, or a commit.

    Parameters
    ----------
    spec : str
        An existing path (file, run folder or results root) is read as such; otherwise
        a run id is looked up under ``root``; otherwise a hex string of at least 7
        characters selects every row under ``root`` whose ``git_commit`` starts with
        it (one commit only).
    root : path
        The results root.

    Raises
    ------
    ResultsError
        When ``spec`` names nothing, nothing readable, an ambiguous commit prefix, or no rows.
    """
    path = Path(spec)
    if path.exists():
        frame, kind = read_results(path), "path"
    elif (run := find_run(root, spec)) is not None:
        frame, kind = read_results(run), "run"
    elif _HEX.match(spec):
        if not Path(root).exists():
            raise ResultsError(
                f"{spec}: looks like a commit, but results root {root} does not exist"
            )
        everything = read_results(root)
        commits = everything["git_commit"].dropna()
        hit = commits[commits.str.lower().str.startswith(spec.lower())].unique()
        if len(hit) > 1:
            raise ResultsError(
                f"{spec}: ambiguous commit prefix under {root} ({', '.join(sorted(hit))})"
            )
        frame = everything[everything["git_commit"].isin(hit)]
        kind = "commit"
    else:
        raise ResultsError(
            f"{spec}: not a results path, a run id under {root}, or a commit prefix (7+ hex)"
        )
    if frame.empty:
        raise ResultsError(f"{spec}: no result rows")
    return Selection(spec, kind, normalize(frame.reset_index(drop=True)))


def select_many(
    specs: Sequence[str], root: str | Path = "runs", *, all_runs: bool = False
) -> Selection:
    """Rows of several specs together; none means the latest run under ``root`` (or all)."""
    if specs:
        parts = [select(s, root) for s in specs]
        frame = pd.concat([p.frame for p in parts], ignore_index=True)
        frame = frame.drop_duplicates(subset=["run_id", "task_id", "repetition", *KEY_COLUMNS])
        kind = parts[0].kind if len(parts) == 1 else "several"
        return Selection(" ".join(specs), kind, frame.reset_index(drop=True))
    if not Path(root).exists():
        raise ResultsError(f"{root}: no such results root")
    if all_runs:
        frame = read_results(root)
        if frame.empty:
            raise ResultsError(f"{root}: no result rows")
        return Selection(str(root), "all", normalize(frame))
    run = latest_run(root)
    if run is None:
        raise ResultsError(f"{root}: no run with results")
    return Selection(str(run), "latest", normalize(read_results(run)))
