"""The report's numbers: pandas only, no plotting, so every table is testable on its own.

Vocabulary
----------
key
    One measurement: :data:`~matchbench.results.schema.KEY_COLUMNS` (problem, algorithm,
    variant, initializer, instance, GPU model; a null GPU model reads "cpu").
solver
    Within one problem, an (algorithm, variant, initializer, GPU model) tuple; its
    ``label`` names the variant, the initializer and the GPU only where the problem has
    several of them.
pair
    A solver on an instance: the key's repetitions reduced to medians.
current view
    For each key, the rows of the newest run that measured it (runs ordered by their
    first timestamp). Every section except History and Failures shows the current view;
    History shows all runs, Failures all rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from matchbench.results import stats
from matchbench.results.schema import KEY_COLUMNS
from matchbench.results.verdicts import CompareConfig, compare_key

#: The time components of the breakdown, in stacking order (solver phases go after).
COMPONENTS = ("t_init_s", "t_transfer_s", "t_prepare_s")


def run_order(df: pd.DataFrame) -> pd.DataFrame:
    """One row per run: run_id, first timestamp, commit, GPU models, rows; oldest first."""
    g = df.groupby("run_id", sort=False)
    runs = pd.DataFrame(
        {
            "timestamp": g["timestamp"].min(),
            "git_commit": g["git_commit"].agg(lambda s: ",".join(sorted(set(s.dropna())))),
            "gpu_models": g["gpu_model"].agg(lambda s: ", ".join(sorted(set(s)))),
            "rows": g.size(),
            "ok_rows": g["status"].agg(lambda s: int((s == "ok").sum())),
        }
    ).reset_index()
    return runs.sort_values(["timestamp", "run_id"], kind="stable").reset_index(drop=True)


def current_view(df: pd.DataFrame) -> pd.DataFrame:
    """For each key, only the rows of the newest run that measured it."""
    if df.empty:
        return df
    order = {r: i for i, r in enumerate(run_order(df)["run_id"])}
    rank = df["run_id"].map(order)
    newest = rank.groupby([df[c] for c in KEY_COLUMNS], dropna=False).transform("max")
    return df[rank == newest].reset_index(drop=True)


def _phases(series: pd.Series) -> dict[str, float]:
    """Median per phase over the repetitions' ``phases_json`` dicts."""
    per: dict[str, list[float]] = {}
    for text in series.dropna():
        try:
            d = json.loads(text)
        except (TypeError, ValueError):
            continue
        for k, v in (d or {}).items():
            if isinstance(v, int | float) and math.isfinite(v):
                per.setdefault(str(k), []).append(float(v))
    return {k: float(np.median(v)) for k, v in per.items()}


def _first(series: pd.Series) -> Any:
    s = series.dropna()
    return s.iloc[0] if len(s) else None


def pairs(df: pd.DataFrame) -> pd.DataFrame:
    """One row per key: medians over ok repetitions and whether the pair counts as solved.

    A pair is *solved* when it has at least one repetition, every repetition has status
    "ok" and was verified, and the median time is positive: one failed or unverified
    repetition makes the pair a failure (time ``inf`` in the profiles), since a solver
    that sometimes fails or returns a wrong answer has not solved the instance.
    """
    out = []
    for key, g in df.groupby(list(KEY_COLUMNS), sort=True, dropna=False):
        ok = g[g["status"] == "ok"]
        verified = ok["verified"].fillna(False).astype(bool)
        t = ok["t_solve_s"].to_numpy(dtype=float)
        t = t[np.isfinite(t) & (t > 0)]
        median = float(np.median(t)) if len(t) else math.nan
        failed = g[g["status"] != "ok"]
        if len(failed):
            reason = ", ".join(
                f"{s} x{n}" for s, n in failed["status"].value_counts().sort_index().items()
            )
        elif len(ok) and not verified.all():
            reason = f"unverified x{int((~verified).sum())}"
        elif not len(t):
            reason = "no time"
        else:
            reason = ""
        obj = ok["objective"].to_numpy(dtype=float)
        obj = obj[np.isfinite(obj)]
        row = dict(zip(KEY_COLUMNS, key, strict=True))
        row.update(
            family=_first(g["family"]) or "",
            device=_first(g["device"]) or "",
            n_rows=_first(g["n_rows"]),
            n_edges=_first(g["n_edges"]),
            run_id=_first(g["run_id"]),
            n_reps=len(g),
            n_ok=len(ok),
            solved=reason == "",
            failure=reason,
            t_solve_s=median,
            time=median if reason == "" else math.inf,
            objective=float(np.median(obj)) if len(obj) else math.nan,
            objective_init=_first(g["objective_init"]),
            reference_objective=_first(g["reference_objective"]),
            bound=_first(g["bound"]),
            verified_reps=int(verified.sum()),
            phases=_phases(ok["phases_json"]),
        )
        for c in COMPONENTS:
            v = ok[c].to_numpy(dtype=float)
            v = v[np.isfinite(v)]
            row[c] = float(np.median(v)) if len(v) else 0.0
        out.append(row)
    p = pd.DataFrame(out)
    if p.empty:
        return p
    for c in ("n_rows", "n_edges", "objective_init", "reference_objective", "bound"):
        p[c] = pd.to_numeric(p[c], errors="coerce")
    return p


def label_solvers(p: pd.DataFrame) -> pd.DataFrame:
    """Add ``label``: algorithm, plus ``[variant]``, ``<init>`` and ``@ GPU`` only where
    needed per problem."""
    p = p.copy()
    if "init" not in p:
        p["init"] = ""
    labels = []
    for _, g in p.groupby("problem", sort=False):
        n_var = g.groupby("algorithm")["variant"].nunique()
        n_init = g.groupby("algorithm")["init"].nunique()
        many_gpus = g["gpu_model"].nunique() > 1
        for idx, r in g.iterrows():
            lab = r["algorithm"]
            if n_var[r["algorithm"]] > 1:
                lab += f"[{r['variant']}]"
            if n_init[r["algorithm"]] > 1:
                lab += f" <{r['init']}>"
            if many_gpus:
                lab += f" @ {r['gpu_model']}"
            labels.append((idx, lab))
    p["label"] = pd.Series(dict(labels))
    return p


def times_matrix(p: pd.DataFrame) -> pd.DataFrame:
    """Instances x solver labels of one problem's pairs; failures and missing pairs are ``inf``."""
    m = p.pivot_table(index="instance", columns="label", values="time", aggfunc="first")
    return m.astype(float).fillna(np.inf).sort_index(axis=0).sort_index(axis=1)


@dataclass(frozen=True)
class Baseline:
    """The speedup profile's reference solver and why it was chosen."""

    label: str | None
    reason: str


def choose_baseline(p: pd.DataFrame, requested: str | None = None) -> Baseline:
    """The speedup baseline of one problem's pairs.

    ``requested`` (``--baseline``) may be a label or an algorithm name (the slowest of its
    variants is taken). Default: the slowest CPU solver by its median time over the
    instances it solved; with no CPU solver, the slowest solver.
    """
    solved = p[p["solved"]]
    med = solved.groupby("label")["t_solve_s"].median()
    if requested is not None:
        if requested in set(p["label"]):
            return Baseline(requested, f"requested baseline {requested}")
        cands = p.loc[p["algorithm"] == requested, "label"].unique()
        if len(cands) == 0:
            return Baseline(None, f"requested baseline {requested!r} not measured for this problem")
        m = med.reindex(cands).dropna()
        lab = m.idxmax() if len(m) else cands[0]
        return Baseline(lab, f"requested baseline {requested} (slowest variant: {lab})")
    cpu = p.loc[p["device"] == "cpu", "label"].unique()
    m = med.reindex(cpu).dropna()
    if len(m):
        return Baseline(m.idxmax(), f"slowest CPU reference by median time: {m.idxmax()}")
    if len(med):
        return Baseline(med.idxmax(), f"no CPU reference; slowest solver: {med.idxmax()}")
    return Baseline(None, "no solver finished any instance")


def final_objective(p: pd.DataFrame, sense: str) -> pd.Series:
    """Per instance: the reference optimum when known, else the best verified objective."""
    out = {}
    for inst, g in p.groupby("instance"):
        ref = g["reference_objective"].dropna()
        if len(ref):
            out[inst] = float(ref.iloc[0])
            continue
        obj = g.loc[g["solved"], "objective"].dropna()
        out[inst] = (obj.max() if sense == "max" else obj.min()) if len(obj) else math.nan
    return pd.Series(out, dtype=float)


def family_geomeans(p: pd.DataFrame, by: str = "label") -> pd.DataFrame:
    """Geometric mean time per family (and "all") per ``by`` column, with counts.

    Returns
    -------
    DataFrame
        Columns ``family``, ``by``, ``geomean_s``, ``n_solved``, ``n_instances``; the
        mean is over the instances the solver solved (see
        :func:`~matchbench.results.stats.geometric_mean`), ``n_solved`` of
        ``n_instances`` shows how many.
    """
    rows = []
    fams = sorted(p["family"].unique())
    for fam in [*fams, "all"]:
        sub = p if fam == "all" else p[p["family"] == fam]
        n_inst = sub["instance"].nunique()
        for lab, g in sub.groupby(by, sort=True):
            gm, k = stats.geometric_mean(g["time"], return_count=True)
            rows.append(
                {"family": fam, by: lab, "geomean_s": gm, "n_solved": k, "n_instances": n_inst}
            )
    return pd.DataFrame(rows)


def breakdown(p: pd.DataFrame) -> tuple[pd.DataFrame, list[str], str]:
    """Seconds per component per solver, summed over a common set of solved instances.

    Returns
    -------
    (DataFrame, components, note)
        Rows per label; columns the components (init, transfer, prepare, the solver's
        phases, then "solve (other)" = solve minus its phases, clipped at 0).
    """
    solved = p[p["solved"]]
    labels = sorted(p["label"].unique())
    per_label = solved.groupby("label")["instance"].agg(set)
    common = set.intersection(*per_label.tolist()) if len(per_label) == len(labels) else set()
    if common:
        use = solved[solved["instance"].isin(common)]
        note = f"summed over the {len(common)} instance(s) every solver solved"
    else:
        use = solved
        note = "no instance solved by every solver: each bar sums the instances that solver solved"
    phase_names = sorted({k for d in use["phases"] for k in d})
    comps = [c.removeprefix("t_").removesuffix("_s") for c in COMPONENTS]
    comps += [f"phase: {k}" for k in phase_names] + ["solve (other)"]
    rows = []
    for lab in labels:
        g = use[use["label"] == lab]
        r = {"label": lab}
        for c in COMPONENTS:
            r[c.removeprefix("t_").removesuffix("_s")] = float(g[c].sum())
        phase_sum = np.zeros(len(g))
        for k in phase_names:
            v = np.array([d.get(k, 0.0) for d in g["phases"]], dtype=float)
            r[f"phase: {k}"] = float(v.sum())
            phase_sum += v
        r["solve (other)"] = float(np.clip(g["t_solve_s"].to_numpy() - phase_sum, 0, None).sum())
        first = g.iloc[0] if len(g) else p[p["label"] == lab].iloc[0]
        r.update(algorithm=first["algorithm"], gpu=first["gpu_model"], n_instances=len(g))
        rows.append(r)
    return pd.DataFrame(rows), comps, note


def quality(p: pd.DataFrame, sense: str) -> pd.DataFrame:
    """Gap of each solved pair's objective to ``reference_objective``, else to the bound."""
    q = p[p["solved"]].copy()
    ref = q["reference_objective"].where(q["reference_objective"].notna(), q["bound"])
    q["against"] = np.where(q["reference_objective"].notna(), "reference", "bound")
    q["gap"] = [
        stats.quality_gap(o, r, sense) if pd.notna(r) else math.nan
        for o, r in zip(q["objective"], ref, strict=True)
    ]
    return q


def history(
    df: pd.DataFrame,
    config: CompareConfig,
    problems: Mapping[str, Mapping[str, Any]],
) -> pd.DataFrame:
    """Per key and run: median time and objective, and the verdict against the key's previous run.

    The verdict is :func:`~matchbench.results.verdicts.compare_key` between consecutive runs
    that measured the key (runs ordered by timestamp), the rule of ``matchbench compare``.
    """
    runs = run_order(df)
    order = {r: i for i, r in enumerate(runs["run_id"])}
    ts = dict(zip(runs["run_id"], runs["timestamp"], strict=True))
    out = []
    for key, g in df.groupby(list(KEY_COLUMNS), sort=True, dropna=False):
        kd = dict(zip(KEY_COLUMNS, key, strict=True))
        info = stats.problem_info(kd["problem"], problems)
        threshold, tolerance = config.settings_for(kd)
        by_run = sorted(g.groupby("run_id"), key=lambda t: order[t[0]])
        prev = None
        first_median = math.nan
        for run_id, rows in by_run:
            ok = rows[rows["status"] == "ok"]
            t = ok["t_solve_s"].to_numpy(dtype=float)
            t = t[np.isfinite(t) & (t > 0)]
            med = float(np.median(t)) if len(t) else math.nan
            if math.isnan(first_median):
                first_median = med
            obj = ok["objective"].dropna()
            r = {
                **kd,
                "family": _first(rows["family"]) or "",
                "run_id": run_id,
                "git_commit": _first(rows["git_commit"]) or "",
                "timestamp": ts[run_id],
                "n_ok": len(t),
                "n_reps": len(rows),
                "median_s": med,
                "relative": med / first_median if first_median > 0 else math.nan,
                "objective": float(obj.median()) if len(obj) else math.nan,
                "ratio": math.nan,
                "p": math.nan,
                "runtime": "",
                "quality": "",
                "verdict": "first" if prev is None else "",
            }
            if prev is not None:
                c = compare_key(prev, rows, config, info, threshold, tolerance, with_ci=False)
                r.update(
                    ratio=c["ratio"],
                    p=min(c["p_slower"], c["p_faster"]),
                    runtime=c["runtime"] or "",
                    quality=c["quality"] or "",
                    verdict=c["verdict"],
                )
            out.append(r)
            prev = rows
    return pd.DataFrame(out)


def failures(df: pd.DataFrame) -> pd.DataFrame:
    """Every row whose status is not "ok" or whose answer was not verified, with the reason."""
    bad = df[(df["status"] != "ok") | ~df["verified"].fillna(False).astype(bool)].copy()
    unverified = bad["status"] == "ok"
    bad["status"] = bad["status"].where(~unverified, "ok (unverified)")
    bad["message"] = bad["error"].where(~unverified, bad["verify_reason"]).fillna("")
    cols = [
        "run_id",
        *KEY_COLUMNS,
        "family",
        "repetition",
        "status",
        "error_type",
        "message",
    ]
    return (
        bad[cols]
        .sort_values(["problem", "algorithm", "instance", "repetition"])
        .reset_index(drop=True)
    )


def data_statement(df: pd.DataFrame) -> str:
    """The data statement (runs, GPU models, repetitions) of the rows behind a figure or table."""
    if df.empty:
        return "Data: none."
    runs = sorted(df["run_id"].dropna().unique())
    gpus = sorted(df["gpu_model"].dropna().unique())
    by = [*KEY_COLUMNS, "run_id"]
    reps = df.groupby(by, dropna=False).size()
    ok = (df["status"] == "ok").groupby([df[c] for c in by], dropna=False).sum()

    def span(s: pd.Series) -> str:
        return f"{s.min()}" if s.min() == s.max() else f"{s.min()}-{s.max()}"

    n_keys = df.groupby(list(KEY_COLUMNS), dropna=False).ngroups
    return (
        f"Data: run(s) {', '.join(runs)}; GPU model(s) {', '.join(gpus)}; "
        f"{n_keys} measurement(s), {span(reps)} repetition(s) per run ({span(ok)} ok); "
        f"times are medians over the ok repetitions."
    )
