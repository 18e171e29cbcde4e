"""The runner, the results and the report name no family: they read what families declare.

What a shared layer needs from a family is declared by the family: on the Problem class
(``default_init``, ``rate_columns``) and on its ``@dataset`` tags (``size_hint``). The
typed records at the runner's boundaries (:class:`~matchbench.runner.plan.Task`,
:class:`~matchbench.runner.batch.Batch`, :class:`~matchbench.core.solver.Measurements`)
are plain, picklable data.
"""

from __future__ import annotations

import dataclasses
import importlib
import pickle
import re
from pathlib import Path
from typing import ClassVar

import pytest

from matchbench.core.problem import Problem, get_problem, problem_table
from matchbench.core.solver import BaseSolver, Measurements
from matchbench.datasets import dataset, sizes, spec_size_hint
from matchbench.results.schema import COLUMNS
from matchbench.runner.batch import Batch
from matchbench.runner.execute import instance_size_hint
from matchbench.runner.plan import Task

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "matchbench"
#: The shared layers that must ask the families instead of naming them.
SHARED = ("runner", "results", "report")
FAMILIES = sorted(p.name for p in (PACKAGE / "families").iterdir() if (p / "__init__.py").exists())
#: Family-specific words beside the family names: initializers, counters, generator arguments.
FAMILY_WORDS = ("cheap_cpu", "cheap_gpu", "proposals", "edge_factor", "avg_degree", "n_men", "n_women",
                "kronecker", "teps")  # fmt: skip
#: Words that are family arguments in the runner and results, and the tables' own option
#: in the report (``scale: 1000`` multiplies a table's values).
RUNNER_WORDS = ("scale",)

#: (word, text of the line it may appear in): why that line may name it.
ALLOWED = {
    ("proposals", '("proposals_per_s", pa.float64()),'):
        "the schema keeps the column, so that files of every version read",
    ("proposals", "Problem.rate_columns`): proposals_per_s"):
        "the schema's docstring lists its columns",
    ("cheap_cpu", 'HISTORIC_V2_INIT = "cheap_cpu"'):
        "what rows of version-2 files started from: data about old files, for their upgrade",
    ("proposals", 'HISTORIC_V4_RATE_COLUMNS = {"proposals_per_s": "proposals"}'):
        "the rate column version 4 added: data about old files, for their upgrade",
    ("lap", '"python-igraph", "networkit", "lap",'):
        "provenance: the versions of optional packages recorded with a run (PyPI's lap)",
    ("scale", "cluster.scale(jobs=...)"): "dask-jobqueue's Cluster.scale, not a dataset argument",
    ("mcm", "where: {problem: mcm,"): "an example of a tables config in the report's docstring",
}  # fmt: skip


def _pattern(words) -> re.Pattern[str]:
    # Letters and digits bound a word, underscores do not: "mcm_many" names the family too.
    return re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, words)) + r")(?![A-Za-z0-9])", re.I)


def test_shared_layers_name_no_family():
    everywhere = _pattern([*FAMILIES, *FAMILY_WORDS])
    runner = _pattern(RUNNER_WORDS)
    found = []
    for layer in SHARED:
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                hits = [m.group(1).lower() for m in everywhere.finditer(line)]
                if layer != "report":
                    hits += [m.group(1).lower() for m in runner.finditer(line)]
                for word in hits:
                    if not any(w == word and text in line for w, text in ALLOWED):
                        found.append(f"{path.relative_to(ROOT)}:{n}: {word!r} in {line.strip()!r}")
    assert not found, "shared layers name a family (declare it on the family instead):\n" + "\n".join(found)


# -- what the families declare -----------------------------------------------------------


def test_rate_columns_of_every_family_are_schema_columns():
    for name in problem_table():
        problem = get_problem(name)
        for column, counter in problem.rate_columns.items():
            assert column in COLUMNS, (name, column)
            assert isinstance(counter, str) and counter, (name, column)


def test_default_init_is_an_init_config():
    names = {p.stem for p in (ROOT / "conf" / "init").glob("*.yaml")}
    for name in problem_table():
        default = get_problem(name).default_init
        assert default is None or default in names, (name, default)


def _dataset_functions():
    for family in FAMILIES:
        try:
            module = importlib.import_module(f"matchbench.families.{family}.datasets")
        except ModuleNotFoundError:
            continue
        for attr, fn in sorted(vars(module).items()):
            if callable(fn) and hasattr(fn, "matchbench_problem") and fn.__module__ == module.__name__:
                yield f"{module.__name__}.{attr}", fn


def test_every_disk_cached_generator_declares_its_size():
    functions = dict(_dataset_functions())
    assert functions
    missing = [name for name, fn in functions.items() if fn.matchbench_disk_cache and fn.matchbench_size_hint is None]
    assert not missing, f"disk-cached generators without a size_hint: {missing}"


@dataset("mcm", size_hint=lambda rows, width=4, **_: sizes.lists(rows, width))
def sized(rows: int, width: int = 4, seed: int = 0):
    raise AssertionError("a size hint never makes the instance")


@dataset("mcm")
def unsized(rows: int):
    raise AssertionError("a size hint never makes the instance")


def test_size_hint_is_the_dataset_tags(tmp_path):
    here = f"{__name__}.sized"
    assert instance_size_hint({"_target_": here, "rows": 10}, tmp_path) == 10 * 4 * sizes.BYTES_PER_ENTRY
    assert spec_size_hint({"_target_": here, "rows": 10, "width": 2, "rcp": True, "rcp_seed": 3}) == 160
    assert spec_size_hint({"_target_": here, "rows": "ten"}) is None  # no count: unknown
    assert spec_size_hint({"_target_": here}) is None  # a missing argument: load() says so
    assert spec_size_hint({"_target_": f"{__name__}.unsized", "rows": 10}) is None
    assert instance_size_hint({"_target_": f"{__name__}.unsized", "rows": 10}, tmp_path) == 0


CALLS: list[tuple] = []


@dataset("mcm", size_hint=lambda rows, **_: CALLS.append(("named", rows)) or sizes.lists(rows, 2))
def named_hint(rows: int, seed: int = 0):
    raise AssertionError("a size hint never makes the instance")


@dataset("mcm", size_hint=lambda rows, **rest: CALLS.append(("rest", rows, rest.get("seed"))) or rest["seed"])
def reading_hint(rows: int, seed: int = 0):
    raise AssertionError("a size hint never makes the instance")


def test_a_hint_with_a_catch_all_spelled_underscore_is_asked_once_per_named_arguments():
    CALLS.clear()
    named, reading = f"{__name__}.named_hint", f"{__name__}.reading_hint"
    values = [spec_size_hint({"_target_": named, "rows": 5, "seed": s}) for s in range(100)]
    assert values == [5 * 2 * sizes.BYTES_PER_ENTRY] * 100 and CALLS == [("named", 5)]
    assert spec_size_hint({"_target_": named, "rows": 6, "seed": 1}) == 6 * 2 * sizes.BYTES_PER_ENTRY
    # a value of another type is another key: 1 is a count, True is not
    assert spec_size_hint({"_target_": named, "rows": 1}) == 2 * sizes.BYTES_PER_ENTRY
    assert spec_size_hint({"_target_": named, "rows": True}) is None
    assert spec_size_hint({"_target_": named, "rows": [1]}) is None  # unhashable: asked, refused
    # a catch-all of another name may read anything: asked for every spec
    CALLS.clear()
    assert [spec_size_hint({"_target_": reading, "rows": 5, "seed": s}) for s in (3, 4, 3)] == [3, 4, 3]
    assert CALLS == [("rest", 5, 3), ("rest", 5, 4), ("rest", 5, 3)]


def test_size_hint_must_be_callable():
    with pytest.raises(TypeError, match="size_hint must be callable"):
        dataset("mcm", size_hint=42)


class _Rated(Problem):
    name, objective = "rated", "things"
    rate_columns: ClassVar[dict[str, str]] = {"proposals_per_s": "moves"}


def _ready(problem: Problem, gpu: bool = False):
    from matchbench.runner.task import _Ready

    task = Task(task_id="t", algorithm="a", problem=problem.name, device="gpu" if gpu else "cpu",
                variant="default", algorithm_cfg={"_target_": "a"}, instance_spec={"_target_": "x"})
    return _Ready(task, {}, None, problem, BaseSolver(), None, gpu)


def test_rate_columns_are_the_familys():
    from matchbench.runner.task import _timed_row

    measured = Measurements(solve=2.0, counters={"moves": 10, "proposals": 99})
    row: dict = {}
    _timed_row(row, _ready(_Rated()), measured, (0.1, 5.0, 0.2))
    assert row["proposals_per_s"] == 5.0 and row["t_solve_s"] == 2.0  # the solver's clock
    row = {}
    _timed_row(row, _ready(get_problem("mcm")), measured, (0.1, 5.0, 0.2))
    assert "proposals_per_s" not in row  # a family that declares no rate gets none


def test_measured_phases_fill_their_columns_and_the_rest_is_phases_json():
    from matchbench.runner.task import _timed_row

    measured = Measurements.from_dicts(
        {"solve": 1.0, "upload": 0.5, "init": 0.25, "push": 0.75}, {"init_objective": 7, "kernel_launches": 3}
    )
    row: dict = {}
    _timed_row(row, _ready(get_problem("mcm"), gpu=False), measured, (0.1, 9.0, 0.2))
    assert (row["t_solve_s"], row["t_upload_s"], row["t_init_s"], row["t_e2e_s"]) == (1.0, 0.5, 0.25, 1.25)
    assert row["t_transfer_s"] is None and row["phases_json"] == '{"push": 0.75}'
    assert row["objective_init"] == 7 and row["kernel_launches"] == 3
    row = {}
    _timed_row(row, _ready(get_problem("mcm")), Measurements(), (0.1, 9.0, 0.2))
    assert row["t_solve_s"] == 9.0 and row["phases_json"] is None and row["counters_json"] is None


# -- the records ---------------------------------------------------------------------------


def _task(**kw) -> Task:
    fields = dict(task_id="t1", algorithm="hk", problem="mcm", device="cpu", variant="default",
                  algorithm_cfg={"_target_": "x.Hk"}, instance_spec={"_target_": "y.er", "scale": 3})
    return Task(**(fields | kw))


def test_task_is_plain_picklable_data_and_round_trips_its_dict():
    task = _task(init="cheap", init_cfg={"_target_": "z.Init"}, time_limit_s=2.0)
    assert pickle.loads(pickle.dumps(task)) == task
    assert Task.from_dict(task.to_dict()) == task
    batch = Batch(batch_id="b", tasks=[task, _task(task_id="t2")])
    assert pickle.loads(pickle.dumps(batch)) == batch and batch.joint
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.timeout_s = 1.0  # type: ignore[misc]


def test_dict_tasks_of_earlier_versions_still_read():
    old = {"task_id": "t1", "algorithm_cfg": {"_target_": "x.Hk"}, "instance_spec": {"_target_": "y.er"},
           "algorithm": "hk", "problem": "mcm", "device": "cpu", "variant": "default",
           "repetitions": 5, "a_key_since_removed": 1}  # fmt: skip
    task = Task.from_dict(old)
    assert task.repetitions == 5 and task.init is None and task.isolate and task.timeout_s == 600.0
    assert task.task_id == "t1" and not hasattr(task, "a_key_since_removed")
    with pytest.raises(TypeError, match="algorithm"):
        Task.from_dict({"task_id": "t1"})


class _OwnRecord(BaseSolver):
    def measurements(self) -> Measurements:
        return Measurements(solve=1.5, phases={"a": 1.0})


class _Dicts(BaseSolver):
    def timings(self):
        return {"solve": 2.0, "transfer": 0.5, "stage": 1.0}

    def counters(self):
        return {"iterations": 4}


class _NoBase:
    def timings(self):
        return {"upload": 0.25}

    def counters(self):
        return {"proposals": 8}


def test_measurements_of_a_solver_record_dicts_or_no_base_class():
    assert Measurements.of(_OwnRecord()) == Measurements(solve=1.5, phases={"a": 1.0})
    assert Measurements.of(_Dicts()) == Measurements(solve=2.0, transfer=0.5, phases={"stage": 1.0},
                                                     counters={"iterations": 4})
    assert Measurements.of(_NoBase()) == Measurements(upload=0.25, counters={"proposals": 8})
    assert Measurements.of(BaseSolver()) == Measurements()
