"""Any program as a solver: :class:`ExternalSolver`, configured by one YAML file.

An outside program is described, not wrapped: ``conf/algorithm/<name>.yaml`` (or one in a
user's ``--config-dir``) names the command, the format the program reads, how its answer
comes back and where its time comes from::

    _target_: matchbench.external.ExternalSolver
    name: my_mcm                 # the algorithm column
    problem: mcm                 # the family: its writers, readers and verifier
    device: cpu                  # or gpu: the Dask resource the task asks for
    command: "{bin} {input} {output}"
    bin: null                    # a path, or null to read it from bin_env
    bin_env: MY_MCM_BIN          # the environment variable naming the program
    input_format: mtx            # a writer of the family (matchbench.external.formats)
    answer: file                 # file ({output}), stdout, or none (objective only)
    answer_format: row_mates     # a reader of the family
    time_pattern: 'solve time: ([0-9.eE+-]+)'   # optional: the program's own time
    time_unit: s
    timeout_s: 600

The command is split like a shell line (:func:`shlex.split`) and each word filled in;
no shell runs it, so file names with spaces or quotes are safe. Placeholders:
``{bin}`` (the program), ``{input}`` (the instance file), ``{output}`` (where the
program writes its answer), ``{workdir}`` (a fresh directory for this run), ``{python}``
(this Python, for programs written as scripts), ``{n}`` (the instance's vertex or
row count) and ``{batch}`` (how many instances the input holds: 1 unless batched); a word that is exactly ``{args}`` becomes the words of the ``args`` setting,
the one parameter of the variant. ``env`` adds environment variables, filled in alike.

What the row records: the verifier's verdict on the answer (``wrong`` with the
certificate's reason when it fails), ``t_solve_s`` (the program's own time where
``time_pattern`` finds one, else the process's wall clock) and always ``t_process_s``,
the wall clock of the process from start to exit. The instance file is written before,
untimed, once per machine (:mod:`matchbench.external.instances`). A program that exits
with a failure status is an ``error`` row with the status and the tail of its standard
error; one past ``timeout_s`` is killed with its whole process group (a ``timeout`` row);
an answer that cannot be read is an ``error`` row naming the line; with ``answer: none``
the row holds the objective ``objective_pattern`` finds, marked "objective only, not
certified", never as verified.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from matchbench.core.errors import AnswerError, ExternalProgramError, ExternalTimeout
from matchbench.core.problem import ReportedObjective
from matchbench.core.solver import BaseSolver, Measurements
from matchbench.external.formats import family_formats
from matchbench.external.instances import instance_file

#: Placeholders a command word or an ``env`` value may use.
PLACEHOLDERS = ("bin", "input", "output", "workdir", "python", "n", "batch", "args")
#: Where the answer comes from.
ANSWER_SOURCES = ("file", "stdout", "none")
#: Units of a time the program reports, in seconds.
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
#: Bytes of standard error a failure row quotes.
STDERR_TAIL = 2000
#: Output a program may write (stdout, stderr, the answer file) before it is killed.
MAX_OUTPUT_BYTES = 1 << 30
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
#: Terminal control sequences (ECMA-48 CSI, e.g. colours): programs with coloured logs put
#: them at the start of the line after a log line (HyLAC's logger resets its colour there).
_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]")


def _placeholders(template: str) -> set[str]:
    import string

    names = set()
    for _, field, _, _ in string.Formatter().parse(template):
        if field is not None:
            names.add(field)
    return names


def _check_template(template: str, setting: str) -> None:
    try:
        names = _placeholders(template)
    except ValueError as exc:
        raise ValueError(f"{setting}={template!r} is not a template: {exc}") from None
    unknown = sorted(n for n in names if n not in PLACEHOLDERS)
    if unknown:
        raise ValueError(
            f"{setting}={template!r} uses unknown placeholder(s) {unknown}; "
            f"known: {', '.join(PLACEHOLDERS)}"
        )


def _pattern(value: str | None, setting: str) -> re.Pattern[str] | None:
    if value is None:
        return None
    try:
        rx = re.compile(value, re.MULTILINE)
    except re.error as exc:
        raise ValueError(f"{setting}={value!r} is not a regular expression: {exc}") from None
    if rx.groups != 1:
        raise ValueError(
            f"{setting}={value!r} must have exactly one group (the number); it has {rx.groups}"
        )
    return rx


def _signal_name(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _tail(path: Path, limit: int = STDERR_TAIL) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            text = f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return ("..." if size > limit else "") + text


class ExternalSolver(BaseSolver):
    """An outside program as a solver of one family (the module docstring shows its YAML).

    Parameters
    ----------
    name : str
        The ``algorithm`` column (the YAML file's name).
    problem : str
        The family: its formats (:mod:`matchbench.external.formats`) and its verifier.
    command : str
        The command line template (module docstring for the placeholders).
    input_format : str
        A writer of the family.
    answer : {"file", "stdout", "none"}
        Where the answer is: the file ``{output}``, the standard output (after the line
        ``answer_after`` when given), or nowhere (``objective_pattern`` then gives the
        objective, recorded as not certified).
    answer_format : str, optional
        A reader of the family (required unless ``answer="none"``).
    device : {"cpu", "gpu"}
        The Dask resource the task asks for (a GPU program runs on its worker's GPU: the
        worker's ``CUDA_VISIBLE_DEVICES`` is inherited).
    bin, bin_env : str, optional
        The program: a path (or a name on ``PATH``), else the value of the environment
        variable ``bin_env`` where the task runs.
    args : str
        Extra words for ``{args}``; the variant (``variant`` column) of the solver.
    env : dict, optional
        Environment variables added for the program (values are templates).
    answer_after : str, optional
        With ``answer="stdout"``: the answer is the lines after the first line equal to
        this (stripped); without it, the whole standard output.
    time_pattern : str, optional
        A regular expression with one group, the program's own solve time, searched in its
        standard output then its standard error; its last match counts. Not found: the
        repetition is an ``error`` (the program's output is not what the config says).
    time_unit : {"s", "ms", "us", "ns"}
    objective_pattern : str, optional
        A regular expression with one group: the objective the program reports (counter
        ``reported_objective``; the row's objective with ``answer="none"``).
    timeout_s : float
        Seconds the program may run; then it is killed with its process group.
    batch_input_format, batch_answer_format : str, optional
        Formats for many instances in one file (``run.batch``): with both set the program
        solves a batch in one run and each instance gets ``1/batch_size`` of its times.
    max_output_bytes : int
        What the program may write (standard output and error, the answer file) before
        it is killed: a runaway program must not fill the disk.
    """

    problem: ClassVar[str]

    def __init__(
        self,
        *,
        name: str,
        problem: str,
        command: str,
        input_format: str,
        answer: str = "file",
        answer_format: str | None = None,
        device: str = "cpu",
        bin: str | None = None,
        bin_env: str | None = None,
        args: str = "",
        env: dict[str, str] | None = None,
        answer_after: str | None = None,
        time_pattern: str | None = None,
        time_unit: str = "s",
        objective_pattern: str | None = None,
        timeout_s: float = 600.0,
        batch_input_format: str | None = None,
        batch_answer_format: str | None = None,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
    ) -> None:
        from matchbench.core.params import choice, positive_float, positive_int

        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(
                f"external solver name={name!r}: a name of letters, digits, '_', '.', '-'"
            )
        self.name = name
        self.problem = str(problem)
        formats = family_formats(self.problem)  # KeyError naming the families
        self.device = choice(f"{name}: device", device, ("cpu", "gpu"))
        if not isinstance(command, str) or not command.strip():
            raise ValueError(
                f"{name}: command must be a non-empty template, e.g. '{{bin}} {{input}}'"
            )
        try:
            words = shlex.split(command)
        except ValueError as exc:
            raise ValueError(
                f"{name}: command={command!r} cannot be split into words: {exc}"
            ) from None
        _check_template(command, f"{name}: command")
        if "input" not in _placeholders(command) and not any(
            "input" in _placeholders(str(v)) for v in (env or {}).values()
        ):
            raise ValueError(f"{name}: command={command!r} never names the instance file {{input}}")
        self._words = words
        self._writer = formats.get("writer", input_format, f"{name}: input_format")
        self.input_format = input_format
        self.answer = choice(f"{name}: answer", answer, ANSWER_SOURCES)
        if answer == "none":
            if objective_pattern is None:
                raise ValueError(
                    f"{name}: answer='none' needs objective_pattern (the objective the program prints)"
                )
            self._reader = None
        else:
            if answer_format is None:
                raise ValueError(
                    f"{name}: answer={answer!r} needs answer_format (a reader of {self.problem})"
                )
            self._reader = formats.get("reader", answer_format, f"{name}: answer_format")
        if (
            answer == "file"
            and "output" not in _placeholders(command)
            and not any("output" in _placeholders(str(v)) for v in (env or {}).values())
        ):
            raise ValueError(f"{name}: answer='file' but neither command nor env names {{output}}")
        self.answer_format = answer_format
        self.answer_after = answer_after
        self.bin, self.bin_env = bin, bin_env
        if bin is None and not bin_env:
            raise ValueError(
                f"{name}: set bin (the program's path) or bin_env (a variable naming it)"
            )
        if not isinstance(args, str):
            raise ValueError(f"{name}: args={args!r} must be a string of extra words")
        try:
            self._args = shlex.split(args)
        except ValueError as exc:
            raise ValueError(f"{name}: args={args!r} cannot be split into words: {exc}") from None
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        for k, v in self.env.items():
            _check_template(v, f"{name}: env.{k}")
        self._time_rx = _pattern(time_pattern, f"{name}: time_pattern")
        self.time_unit = choice(f"{name}: time_unit", time_unit, tuple(TIME_UNITS))
        self._objective_rx = _pattern(objective_pattern, f"{name}: objective_pattern")
        self.timeout_s = positive_float(f"{name}: timeout_s", timeout_s)
        self.max_output_bytes = positive_int(f"{name}: max_output_bytes", max_output_bytes)
        self._batch_writer = self._batch_reader = None
        if (batch_input_format is None) != (batch_answer_format is None):
            raise ValueError(
                f"{name}: set both batch_input_format and batch_answer_format, or neither"
            )
        if batch_input_format is not None:
            self._batch_writer = formats.get(
                "batch_writer", batch_input_format, f"{name}: batch_input_format"
            )
            self._batch_reader = formats.get(
                "batch_reader", batch_answer_format, f"{name}: batch_answer_format"
            )
        self.batchable = self._batch_writer is not None
        super().__init__(**({"args": args} if args else {}))
        self._instances: list[Any] | None = None
        self._input: Path | None = None
        self._workdir: Path | None = None
        self._answers: list[Any] | None = None
        self._measured = Measurements()
        self._program: str | None = None

    # ------------------------------------------------------------------ the program

    def program(self) -> str:
        """The program's path, from ``bin`` or ``$bin_env``.

        Raises
        ------
        ExternalProgramError
            Saying which setting to make, when it is unset or names no executable file.
        """
        value, where = self.bin, "algorithm.bin"
        if value is None:
            value, where = os.environ.get(str(self.bin_env)), f"${self.bin_env}"
            if not value:
                raise ExternalProgramError(
                    f"{self.name}: no program: set algorithm.bin=PATH or the environment variable "
                    f"{self.bin_env} to the built program (its YAML's comments say how to build it)"
                )
        path = os.path.expanduser(str(value))
        # A program run by an interpreter ("{python} {bin} ...") need not be executable itself.
        executed = self._words[0] == "{bin}"
        if os.sep not in path and executed:
            found = shutil.which(path)
        else:
            found = (
                path
                if os.path.isfile(path) and (os.access(path, os.X_OK) or not executed)
                else None
            )
        if found is None or not os.path.isfile(found):
            what = "an executable file" if executed else "a file"
            raise ExternalProgramError(f"{self.name}: {where}={value!r} is not {what}")
        return os.path.abspath(found)

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        """Skipped while no program is set (a peer not built here: the main job and the
        presets run everywhere); an error row when a set one is not there."""
        if self.bin is None and not os.environ.get(str(self.bin_env)):
            return True, (
                f"{self.name}: no program: set algorithm.bin=PATH or the environment variable "
                f"{self.bin_env} to the built program (its YAML's comments say how to build it)"
            )
        self._program = self.program()  # an error row naming the setting, before any work
        return False, None

    # ------------------------------------------------------------------ life cycle

    def prepare(self, instance: Any, init: Any | None = None) -> None:
        self._start([instance], batch=False)

    def prepare_batch(self, instances: list, inits: list | None = None) -> None:
        self._start(list(instances), batch=True)

    def _start(self, instances: list[Any], batch: bool) -> None:
        self._cleanup()
        if self._program is None:
            self._program = self.program()
        fmt = "batch-" + str(self.input_format) if batch else str(self.input_format)
        writer = self._batch_writer if batch else (lambda objs, path: self._writer(objs, path))
        if batch:
            self._input, _ = instance_file(instances, fmt, "", writer)
        else:
            self._input, _ = instance_file(instances[0], fmt, "", writer)
        self._instances = instances
        self._batch = batch
        self._workdir = Path(tempfile.mkdtemp(prefix=f"matchbench-{self.name}-"))
        self._answers = None

    def _values(self) -> dict[str, str]:
        assert self._workdir is not None and self._instances is not None
        first = self._instances[0]
        n = getattr(first, "n", None)
        if n is None:
            n = getattr(first, "n_rows", None)
        if n is None and hasattr(first, "costs"):
            n = first.costs.shape[0]
        return {
            "bin": str(self._program),
            "input": str(self._input),
            "output": str(self._workdir / "answer"),
            "workdir": str(self._workdir),
            "python": sys.executable,
            "n": "" if n is None else str(int(n)),
            "batch": str(len(self._instances)),
            "args": " ".join(shlex.quote(a) for a in self._args),
        }

    def command_line(self) -> list[str]:
        """The words the program is started with (after :meth:`prepare`)."""
        values = self._values()
        out: list[str] = []
        for word in self._words:
            if word == "{args}":
                out.extend(self._args)
            else:
                out.append(word.format_map(values))
        return out

    def run(self) -> None:
        if self._workdir is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        argv = self.command_line()
        values = self._values()
        env = dict(os.environ)
        env.update({k: v.format_map(values) for k, v in self.env.items()})
        out_path, err_path = self._workdir / "stdout", self._workdir / "stderr"
        answer_path = Path(values["output"])
        killed: dict[str, Any] = {}
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            t0 = time.perf_counter()
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    env=env,
                    cwd=self._workdir,
                    start_new_session=True,
                )
            except OSError as exc:
                raise ExternalProgramError(
                    f"{self.name}: cannot start {argv[0]!r}: {exc}"
                ) from None
            done = threading.Event()
            watch = threading.Thread(
                target=self._watch,
                args=(proc, t0, done, killed, (out_path, err_path, answer_path)),
                daemon=True,
            )
            watch.start()
            try:
                code = proc.wait()
            except BaseException:
                self._kill(proc)
                raise
            finally:
                wall = time.perf_counter() - t0
                done.set()
                watch.join()
        if killed.get("why") == "timeout":
            raise ExternalTimeout(
                f"{self.name} ran past timeout_s={self.timeout_s:g} s and was killed; "
                f"stderr tail: {_tail(err_path) or '(empty)'}",
                self.timeout_s,
            )
        if killed.get("why") == "output":
            raise ExternalProgramError(
                f"{self.name} wrote more than max_output_bytes={self.max_output_bytes} bytes and was killed"
            )
        if code != 0:
            raise ExternalProgramError(
                f"{self.name} failed ({_signal_name(code)}); stderr tail: {_tail(err_path) or '(empty)'}"
            )
        stdout = out_path.read_bytes()
        stderr = err_path.read_bytes()
        text = stdout.decode("utf-8", "replace") + "\n" + stderr.decode("utf-8", "replace")
        counters: dict[str, Any] = {"exit_status": 0}
        reported = None
        if self._objective_rx is not None:
            found = self._objective_rx.findall(text)
            if found:
                try:
                    reported = float(found[-1])
                except ValueError:
                    reported = None
            if reported is not None:
                counters["reported_objective"] = reported
        # the answer first: a missing or unreadable one says more than a missing time line
        answers = self._read(stdout, answer_path, reported)
        solve = wall
        if self._time_rx is not None:
            found = self._time_rx.findall(text)
            if not found:
                raise ExternalProgramError(
                    f"{self.name}: time_pattern {self._time_rx.pattern!r} found nothing in the "
                    f"program's output (stdout tail: {stdout[-300:].decode('utf-8', 'replace')!r})"
                )
            try:
                solve = float(found[-1]) * TIME_UNITS[self.time_unit]
            except ValueError:
                raise ExternalProgramError(
                    f"{self.name}: time_pattern matched {found[-1]!r}, not a number"
                ) from None
            counters["time_source"] = "reported"
        else:
            counters["time_source"] = "process"
        if self._batch:
            counters["batch_size"] = len(self._instances or [])
        self._measured = Measurements(solve=solve, process=wall, counters=counters)
        self._answers = answers

    def _watch(
        self,
        proc: subprocess.Popen,
        t0: float,
        done: threading.Event,
        killed: dict[str, Any],
        paths: tuple[Path, ...],
    ) -> None:
        """Kill ``proc``'s process group past ``timeout_s`` or ``max_output_bytes``."""
        deadline = t0 + self.timeout_s
        while not done.wait(min(0.05, max(0.0, deadline - time.perf_counter()))):
            if time.perf_counter() >= deadline:
                killed["why"] = "timeout"
            else:
                size = 0
                for p in paths:
                    try:
                        size += p.stat().st_size
                    except OSError:
                        pass
                if size > self.max_output_bytes:
                    killed["why"] = "output"
            if "why" in killed:
                self._kill(proc)
                return

    @staticmethod
    def _kill(proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()

    def _read(self, stdout: bytes, answer_path: Path, reported: float | None) -> list[Any]:
        instances = self._instances or []
        if self.answer == "none":
            if reported is None:
                raise AnswerError(
                    f"{self.name}: objective_pattern {self._objective_rx.pattern!r} found no "
                    "number in the program's output"  # type: ignore[union-attr]
                )
            return [ReportedObjective(reported, f"{self.name}'s output")] * len(instances)
        if self.answer == "file":
            if not answer_path.is_file():
                raise AnswerError(
                    f"{self.name} exited 0 but wrote no answer file ({{output}} = {answer_path})"
                )
            data, source = answer_path.read_bytes(), f"{self.name}'s answer file"
        else:
            data, source = _ANSI.sub(b"", stdout), f"{self.name}'s standard output"
            if self.answer_after is not None:
                marker = self.answer_after.strip()
                lines = data.split(b"\n")
                at = next(
                    (
                        i
                        for i, ln in enumerate(lines)
                        if ln.decode("utf-8", "replace").strip() == marker
                    ),
                    None,
                )
                if at is None:
                    raise AnswerError(
                        f"{source} has no line {marker!r} (answer_after) before the answer"
                    )
                data = b"\n".join(lines[at + 1 :])
                source += f" after {marker!r}"
        if self._batch:
            answers = list(self._batch_reader(instances, data, source))  # type: ignore[misc]
            if len(answers) != len(instances):
                raise AnswerError(
                    f"{source}: {len(answers)} answers for {len(instances)} instances"
                )
            return answers
        return [self._reader(instances[0], data, source)]  # type: ignore[misc]

    def result(self) -> Any:
        if self._answers is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        answer = self._answers[0]
        self._cleanup()
        return answer

    def result_batch(self) -> list:
        if self._answers is None:
            raise RuntimeError(f"{self.name}: result_batch() before run()")
        answers = self._answers
        self._cleanup()
        return answers

    def _cleanup(self) -> None:
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def __del__(self) -> None:
        try:
            self._cleanup()
        except Exception:
            pass

    def measurements(self) -> Measurements:
        return self._measured

    def variant(self) -> str:
        return f"args={self.params['args']}" if self.params.get("args") else "default"
