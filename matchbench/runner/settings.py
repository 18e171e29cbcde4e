"""A sweep's settings, checked before any cluster starts.

A setting that cannot work (``gpu.repetitions=0``, ``run.task_timeout_s=0``, a solver
option of the wrong type, ``dataset=mtx`` without ``dataset.path``, a path that is no
file, a sweep whose every solver x instance pair is left out) would otherwise start a
cluster, write rows that say nothing, and exit 0. :func:`check_plans` lists every such
problem, each naming the setting; the sweep then ends with one line per problem and exit
status 2, before anything runs. What is wrong with an *input* (a malformed file, an
instance a solver cannot take) is not a setting: it stays that instance's row.
"""

from __future__ import annotations

from typing import Any

from matchbench.core.paths import missing_file, resolve_path

#: Error-row stages of :func:`matchbench.runner.plan.build_plan` that are settings.
SETTING_STAGES = ("algorithm config:", "init config:", "dataset config:")
#: A value OmegaConf leaves for a mandatory option nobody set.
MISSING = "???"


def _timing_problems(gpu: dict[str, Any], run: dict[str, Any]) -> list[str]:
    """What is wrong with the timing and task settings (the shared validators' words)."""
    from matchbench.core import params

    checks = [
        (params.positive_int, "gpu.repetitions", gpu.get("repetitions", 3)),
        (params.non_negative_int, "gpu.warmup", gpu.get("warmup", 0)),
        (params.non_negative_int, "gpu.instrumented", gpu.get("instrumented", 0) or 0),
    ]
    if run.get("task_timeout_s") is not None:
        checks.append((params.positive_float, "run.task_timeout_s", run["task_timeout_s"]))
    out = []
    for check, name, value in checks:
        try:
            check(name, value)
        except ValueError as exc:
            out.append(str(exc))
    memory = run.get("task_memory_limit", "auto")
    if memory not in (None, "auto", 0):
        from matchbench.core.limits import parse_bytes

        try:
            parse_bytes(memory, "run.task_memory_limit")
        except ValueError as exc:
            out.append(f"{exc} (or auto, or null for none)")
    return out


def _spec_problems(spec: dict[str, Any], data_dir: Any, check_files: bool) -> list[str]:
    out = []
    if MISSING in spec.values():  # (one C-level scan: a plan holds a million specs)
        for key, value in spec.items():
            if value == MISSING:
                out.append(f"dataset.{key} is mandatory here and was not given (add dataset.{key}=...)")
    path = spec.get("path")
    if check_files and isinstance(path, str) and path and path != MISSING:
        why = missing_file(resolve_path(path, data_dir))
        if why is not None:
            out.append(f"dataset.path={path}: {why}")
    return out


def _shipped_options() -> dict[str, set[str]]:
    """``{_target_: the options its shipped YAML files name}`` over ``conf/algorithm`` and
    ``conf/init`` (several files may share a class)."""
    import yaml

    from matchbench.core.paths import conf_dir

    out: dict[str, set[str]] = {}
    try:
        root = conf_dir()
    except FileNotFoundError:
        return out
    for group in ("algorithm", "init"):
        for f in sorted((root / group).glob("*.yaml")):
            try:
                data = yaml.safe_load(f.read_text()) or {}
            except (OSError, yaml.YAMLError):
                continue
            target = data.get("_target_") if isinstance(data, dict) else None
            if isinstance(target, str):
                out.setdefault(target, set()).update(k for k in data if k != "_target_")
    return out


def _option_problems(section: str, cfg: Any, known: dict[str, set[str]]) -> list[str]:
    """Options of a shipped solver or initializer that its YAML does not name: a
    misspelling added with ``+`` (Hydra's own advice), which the class would ignore."""
    import difflib

    from matchbench.runner.plan import RUN_KEYS

    if not isinstance(cfg, dict) or not isinstance(cfg.get("_target_"), str):
        return []
    options = known.get(cfg["_target_"])
    if options is None:  # a solver of the user's own: its class is the judge
        return []
    out = []
    for key in sorted(set(cfg) - options - set(RUN_KEYS) - {"_target_"}):
        close = difflib.get_close_matches(key, sorted(options), n=1)
        hint = f"; did you mean {section}.{close[0]}?" if close else ""
        out.append(
            f"{section}.{key} is not an option of {cfg['_target_'].rsplit('.', 1)[-1]} "
            f"(its options: {', '.join(sorted(options)) or 'none'}){hint}"
        )
    return out


def _job(plan: Any) -> str:
    overrides = " ".join(plan.overrides)
    return f"job {plan.job_index}" + (f" ({overrides})" if overrides else "")


def check_plans(plans: list[Any]) -> list[str]:
    """Every settings problem of a sweep's plans, one message each (empty: none).

    Files are only checked where this host reads them: not for ``cluster=external`` or
    ``slurm``, whose workers may see another filesystem.
    """
    problems: list[str] = []
    if not plans:
        return problems
    seen: set[str] = set()

    def add(message: str) -> None:
        if message not in seen:
            seen.add(message)
            problems.append(message)

    known = _shipped_options()
    cluster_kind = str((plans[0].cluster or {}).get("kind", ""))
    check_files = cluster_kind not in ("external", "slurm")
    for plan in plans:
        config = plan.config or {}
        for message in _timing_problems(dict(config.get("gpu") or {}), dict(plan.run or {})):
            add(message)
        named = set()  # sections whose unknown options were named: their error row says less
        for section in ("algorithm", "init"):
            for message in _option_problems(section, config.get(section), known):
                named.add(f"{section} config:")
                add(message)
        for row in plan.error_rows:
            error = str(row.get("error") or "")
            if error.startswith(SETTING_STAGES) and not error.startswith(tuple(named)):
                add(f"{_job(plan)}: {' '.join(error.split())}")
        for task in plan.tasks:
            for message in _spec_problems(dict(task.instance_spec), task.data_dir, check_files):
                add(message)
    tasks = sum(len(p.tasks) for p in plans)
    errors = sum(len(p.error_rows) for p in plans)
    pairs = [pair for p in plans for pair in p.skipped_pairs]
    inits = [pair for p in plans for pair in p.skipped_inits]
    if not tasks and not errors and (pairs or inits):
        if pairs:
            kinds = sorted({(a, ap, ip) for a, ap, _, ip in pairs})
            shown = ", ".join(f"algorithm {a} ({ap}) x {ip} instances" for a, ap, ip in kinds[:3])
            add(
                f"nothing to run: every solver x instance pair is of two problems ({shown}); "
                "pick a dataset of the algorithm's problem"
            )
        else:
            shown = ", ".join(f"{a} x init {i}" for a, i in sorted(set(inits))[:3])
            add(f"nothing to run: no solver can start from the initializer ({shown})")
    return problems

