"""The one runner of every experiment: a plan of tasks, resumable, parallel, with progress, one record schema.

An experiment (a spec in :mod:`harness_gym_baselines.experiments.specs`) turns its grid of cells (env, settings
such as prices, budget and cost weight, controller, seed) into a plan of :class:`Task` s: each trains what it
needs and evaluates its cells on the paired test seeds (:func:`harness_gym_baselines.experiments.offline_comparison.run_cell`
writes one cell file each, in the one cell schema of :mod:`harness_gym_baselines.experiments.cells`, and skips a
finished one). :func:`run_tasks` runs the plan:

- **resumable**: a finished task leaves ``<out>/<records_dir>/<name>.json`` and is skipped on a rerun with the
  same ``out`` (its record comes back with ``resumed: True``);
- **parallel**: ready tasks (their ``needs`` finished) run ``num_workers`` at a time in spawned processes, by
  :attr:`Task.priority` then plan order; with one worker they run in this process, in plan order;
- **progress**: :func:`progress_bar` (rich) shows the running tasks and prints one line per finished one;
- **one record schema** per task: ``{"stage": name, "seconds", "command", "result", "finished_at"}`` (the key
  ``stage`` is the task's name, kept from the reproduce manifest that stores these records).

A failed task stops the run: the running tasks finish, none starts, and the error names the task.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORDS_DIR = "stages"
"""the folder under ``out`` of the task records (reproduce's manifest calls its tasks stages)"""


@dataclass(frozen=True)
class Task:
    """One task of a plan: ``fn(**kwargs)`` (a module-level function, so that a worker process can run it; it
    returns something JSON-serialisable), its command line for a manifest, the earlier tasks whose outputs it
    reads, and its start priority among the tasks ready at the same time (higher first)."""

    name: str
    fn: Callable[..., Any]
    kwargs: dict[str, Any]
    command: str
    needs: tuple[str, ...] = ()
    priority: int = 0


class TaskRecords:
    """The per-task record files under ``out/records_dir``: run a task unless its file says it finished.

    :param out: the run folder
    :param records_dir: the folder of the records under ``out``
    """

    def __init__(self, out: Path, records_dir: str = RECORDS_DIR):
        self.dir = out / records_dir
        self.dir.mkdir(parents=True, exist_ok=True)

    def path(self, name: str) -> Path:
        """The record file of task ``name`` (``:`` and ``+`` replaced, so that every name is a file name)."""
        return self.dir / (name.replace(":", "__").replace("+", "_") + ".json")

    def done(self, name: str) -> dict[str, Any] | None:
        """The record of a finished task, or ``None``."""
        path = self.path(name)
        return json.loads(path.read_text()) if path.exists() else None

    def run(self, name: str, fn: Callable[[], Any], command: str) -> dict[str, Any]:
        """Run ``fn`` as task ``name`` unless it finished before; returns its record.

        :param name: the task name
        :param fn: the task; returns something JSON-serialisable
        :param command: the equivalent command line, for the manifest
        """
        record = self.done(name)
        if record is not None:
            record["resumed"] = True
            return record
        start = time.perf_counter()
        result = fn()
        record = {"stage": name, "seconds": time.perf_counter() - start, "command": command, "result": result,
                  "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
        self.path(name).write_text(json.dumps(record, indent=1, default=str))
        return record


def settings_digest(settings: Any) -> str:
    """Ten hex digits that change with ``settings`` (anything JSON can write, other values by ``str``): a task
    named with them is run again, not resumed, when its settings change.

    :param settings: what the task's result depends on
    """
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def _run_task(out: Path, records_dir: str, task: Task) -> dict[str, Any]:
    return TaskRecords(out, records_dir).run(task.name, lambda: task.fn(**task.kwargs), task.command)


def _check_plan(plan: list[Task]) -> list[str]:
    names = [task.name for task in plan]
    for k, task in enumerate(plan):
        unknown = [n for n in task.needs if n not in names[:k]]
        if unknown:
            raise ValueError(f"stage {task.name}: needs {unknown}, which are not earlier stages of the plan")
    return names


def _failed(name: str, exc: Exception, what: str) -> RuntimeError:
    return RuntimeError(f"{what} {name} failed: {type(exc).__name__}: {exc}")


def run_tasks(plan: list[Task], out: Path, num_workers: int, *,
              started: Callable[[list[str]], None] = lambda running: None,
              finished: Callable[[str, dict[str, Any]], None] = lambda name, record: None,
              records_dir: str = RECORDS_DIR, what: str = "reproduce stage") -> dict[str, dict[str, Any]]:
    """Run (or resume, :class:`TaskRecords`) every task of ``plan``, each once the tasks it needs have finished,
    at most ``num_workers`` at a time in spawned processes (one: in this process, in plan order). Ready tasks
    start by :attr:`Task.priority`, highest first, ties in plan order. Returns the records in plan order.

    :param plan: the tasks; a task's ``needs`` name earlier tasks
    :param out: the run folder
    :param num_workers: the most tasks at once
    :param started: called with the running tasks' names whenever one starts
    :param finished: called in the parent with each task's name and record as it finishes
    :param records_dir: the folder of the task records under ``out``
    :param what: how an error names a task (``"reproduce stage"``: "reproduce stage NAME failed: ...")
    """
    names = _check_plan(plan)
    records: dict[str, dict[str, Any]] = {}

    def done(name: str, record: dict[str, Any]) -> None:
        records[name] = record
        finished(name, record)

    if num_workers == 1:
        for task in plan:
            started([task.name])
            try:
                done(task.name, _run_task(out, records_dir, task))
            except Exception as exc:
                raise _failed(task.name, exc, what) from exc
        return {name: records[name] for name in names}
    _run_in_processes(plan, out, num_workers, records_dir, what, started, done, records)
    return {name: records[name] for name in names}


def _run_in_processes(plan: list[Task], out: Path, num_workers: int, records_dir: str, what: str,
                      started: Callable[[list[str]], None], done: Callable[[str, dict[str, Any]], None],
                      records: dict[str, dict[str, Any]]) -> None:
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from multiprocessing import get_context

    files = TaskRecords(out, records_dir)
    waiting = list(plan)
    running: dict[Future[dict[str, Any]], str] = {}
    with ProcessPoolExecutor(max_workers=num_workers, mp_context=get_context("spawn")) as pool:
        while waiting or running:
            ready = [t for t in waiting if all(n in records for n in t.needs)]
            for task in sorted(ready, key=lambda t: -t.priority):  # stable: ties stay in plan order
                record = files.done(task.name)
                if record is not None:  # resumed: no process needed
                    waiting.remove(task)
                    done(task.name, {**record, "resumed": True})
                elif len(running) < num_workers:
                    waiting.remove(task)
                    running[pool.submit(_run_task, out, records_dir, task)] = task.name
                    started(list(running.values()))
            if not running:
                continue  # a resumed task may have readied others
            finished_now, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished_now:
                name = running.pop(future)
                try:
                    record = future.result()
                except Exception as exc:
                    for other in running:
                        other.cancel()
                    raise _failed(name, exc, what) from exc
                done(name, record)


class ProgressBar:
    """What :func:`progress_bar` yields: callbacks for :func:`run_tasks` and a line printer."""

    def __init__(self, progress: Any, task_id: Any, title: str, print_each: bool):
        self.progress, self.task_id, self.title, self.print_each = progress, task_id, title, print_each

    def started(self, running: list[str]) -> None:
        """The bar's description names the running tasks."""
        self.progress.update(self.task_id, description=f"{self.title}: {', '.join(running)}")

    def finished(self, name: str, record: dict[str, Any]) -> None:
        """One line per finished task (with ``print_each``), and the bar advances."""
        if self.print_each:
            state = "resumed from its result file" if record.get("resumed") else "done"
            self.progress.console.print(f"  {name}: {state} ({record['seconds']:.0f} s)")
        self.progress.advance(self.task_id)

    def step(self, description: str) -> None:
        """Name a step that runs outside :func:`run_tasks` (e.g. writing the report)."""
        self.progress.update(self.task_id, description=description)

    def print(self, line: str) -> None:
        self.progress.console.print(line)

    def advance(self) -> None:
        self.progress.advance(self.task_id)


@contextmanager
def progress_bar(title: str, total: int, *, console: Any = None, enabled: bool = True,
                 print_each: bool = True) -> Iterator[ProgressBar]:
    """A rich progress bar over ``total`` tasks (and steps), on ``console`` (default: stderr).

    :param title: the bar's title
    :param total: tasks and steps it counts
    :param console: a ``rich.console.Console``
    :param enabled: ``False``: no bar (the per-task lines are still printed unless the console is quiet)
    :param print_each: print one line per finished task
    """
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = console if console is not None else Console(stderr=True)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=False, disable=not enabled) as progress:
        yield ProgressBar(progress, progress.add_task(title, total=total), title, print_each)
