"""The data-analysis domain: answer a question about a messy CSV export with a pandas program.

A draft is a Python program that reads the task's CSV file from its working directory, cleans it (duplicate
rows, hand-typed identifiers, mixed units, sentinel outliers, missing values), analyses it and prints the
answer as JSON on its last line. The checker runs the program in the sandbox and validates the answer's type,
shape and plausibility (:func:`~harness_gym.domains.data.checker.sanity`); the hidden grader runs it and
compares the answer with the reference program's within tolerance
(:func:`~harness_gym.domains.data.grader.score`). The tools compute real statistics in-process on a pandas
copy of the dataset loaded at construction.

What the actions cost in a deployed harness (docs/cost.md): the CSV is the task's attachment, handed over with
the prompt (it is written into every sandbox job, and ``input_size`` counts it), so OBSERVE's first rows,
column summary and export README are read from what the harness already holds: free, beyond the tokens they
add to later prompts (metered by the worker). The tools are the harness's own pandas profiling of that file
on its host: ``api_call:free`` (a local computation, no service behind it). CHECK runs the program in one
sandbox job and bills nothing else; SUBMIT is evaluation and free.
"""

from __future__ import annotations

import functools
import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness_gym.core.domain import Domain
from harness_gym.core.lru import ByteLRU
from harness_gym.core.paths import data_path
from harness_gym.core.sandbox import ExecResult, Sandbox
from harness_gym.core.taskfile import TaskFileError, parse_task, read_documents, read_jsonl, require
from harness_gym.core.tool_calls import validate_call
from harness_gym.core.types import CheckResult, Context, Draft, Task, ToolCall, ToolResult
from harness_gym.domains.data.answers import ANSWER_KINDS, AnswerSpec
from harness_gym.domains.data.checker import TIMEOUT_S, check_run, sanity, validations
from harness_gym.domains.data.grader import grade_run
from harness_gym.domains.data.tools import TOOLS, Table, run_tool

MEMORY_MB = 768
CACHE_MAX_BYTES = 8 * 1024 * 1024
"""Bound on each of the domain's caches (tool reports by call, knowledge signals by draft text): least
recently used entries go first once their keys and values hold more bytes than this."""

_REFERENCED = re.compile(r'(?:\[\s*|groupby\(\s*|subset=\[\s*)"([^"]+)"')
_ASSIGNED = re.compile(r'df\[\s*"([^"]+)"\s*\]\s*=(?!=)')


@dataclass(frozen=True)
class Question:
    """A task's payload: which dataset, the answer spec the checker validates and the reference answer."""

    dataset: str
    question: str
    spec: AnswerSpec
    expected: Any


def _spec(raw: Any, where: dict[str, Any]) -> AnswerSpec:
    if not isinstance(raw, dict):
        raise TaskFileError(message=f"expected an object, got {type(raw).__name__}", field="answer_spec", **where)
    get = functools.partial(require, raw, **where)
    kind = get("kind", str)
    if kind not in ANSWER_KINDS:
        raise TaskFileError(message=f"unknown answer kind {kind!r}; expected one of {ANSWER_KINDS}",
                            field="answer_spec.kind", **where)
    keys, labels = get("keys", list), get("labels", list)
    if not all(isinstance(k, str) for k in keys + labels):
        raise TaskFileError(message="keys and labels must be strings", field="answer_spec", **where)
    low, high = get("low", (float, type(None))), get("high", (float, type(None)))
    return AnswerSpec(kind=kind, what=get("what", str), low=-math.inf if low is None else low,
                      high=math.inf if high is None else high, decimals=get("decimals", int), keys=tuple(keys),
                      labels=tuple(labels))


_PROMPT = re.compile(r"file (?P<file>\S+\.csv) \((?P<rows>\d+) rows; columns (?P<columns>[^)]*)\)\. (?P<question>.*?)"
                     r"(?= The file is a validated extract| It is a raw export| Write a pandas program)", re.S)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")


def prompt_keys(prompt: str) -> tuple[str, ...]:
    """The keys a data prompt names, lower-cased in order: its file, the columns its question uses (named as
    they are, or with spaces for underscores) and the numbers in the question (a threshold). A prompt in
    another format gives the default keys of :class:`~harness_gym.core.domain.Domain`.

    :param prompt: the task's prompt
    """
    match = _PROMPT.search(prompt)
    if match is None:
        return ()
    question = match["question"]
    plain = question.lower()
    keys: dict[str, None] = {match["file"].lower(): None}
    for column in (c.strip() for c in match["columns"].split(",")):
        if column and (column.lower() in plain or column.lower().replace("_", " ") in plain):
            keys.setdefault(column.lower(), None)
    for number in _NUMBER.findall(question):
        keys.setdefault(number, None)
    return tuple(keys)


class DataDomain(Domain):
    """Questions about messy CSV exports, answered by pandas programs run in the sandbox.

    :param data_dir: folder holding ``datasets.jsonl``, ``datasets/*.csv``, ``corpus.jsonl`` and ``tasks.jsonl``
    """

    name = "data"
    uses_sandbox = True
    tool_needs_draft = False
    hidden_payload_keys = frozenset({"expected"})
    """``Question.expected``: the reference answer the grader compares with."""
    sandbox_options = {"preload": ("pandas",)}
    """The sandbox imports pandas once, so a program run costs a fork (~60 ms) instead of ~0.6 s."""

    def __init__(self, data_dir: str | Path) -> None:
        super().__init__()
        root = Path(data_dir)
        self.tables = self._load_tables(root)
        self.corpus = read_documents(root / "corpus.jsonl")
        self.tools = TOOLS.specs
        self._tool_results: ByteLRU[tuple[str, str], ToolResult] = ByteLRU(
            CACHE_MAX_BYTES, lambda key, res: len(key[1]) + len(res.output) + len(res.error) + 100)
        self._knowledge: ByteLRU[tuple[str, str], float] = ByteLRU(
            CACHE_MAX_BYTES, lambda key, _: len(key[0]) + len(key[1]) + 100)
        self._keys: dict[str, tuple[str, ...]] = {}
        path = root / "tasks.jsonl"
        tasks = []
        for line, rec in read_jsonl(path):
            where = {"path": path, "line": line, "task_id": require(rec, "task_id", str, path=path, line=line)}
            dataset = require(rec, "dataset", str, **where)
            if dataset not in self.tables:
                raise TaskFileError(message=f"unknown dataset {dataset!r}", field="dataset", **where)
            spec = _spec(require(rec, "answer_spec", dict, **where), where)
            expected = require(rec, "expected", (dict, str, int, float), **where)
            verdict = sanity(spec, expected)
            if not verdict.ok:
                raise TaskFileError(message=f"the reference answer fails its own spec: {verdict.feedback}",
                                    field="expected", **where)
            question = require(rec, "question", str, **where)
            tasks.append(parse_task(rec, path=path, line=line, payload=Question(dataset, question, spec, expected)))
        self.add_tasks(tasks)

    # ----- loading -----------------------------------------------------------------------------------
    @staticmethod
    def _load_tables(root: Path) -> dict[str, Table]:
        path = root / "datasets.jsonl"
        tables: dict[str, Table] = {}
        for line, rec in read_jsonl(path):
            name = require(rec, "name", str, path=path, line=line)
            rel = require(rec, "file", str, path=path, line=line)
            units = require(rec, "unit_columns", dict, path=path, line=line)
            csv_path = root / rel
            if not csv_path.is_file():
                raise TaskFileError(path, f"dataset file {csv_path} not found", line=line, field="file")
            text = csv_path.read_text(encoding="utf-8")
            try:
                frame = pd.read_csv(io.StringIO(text))
            except (ValueError, pd.errors.ParserError) as exc:
                raise TaskFileError(csv_path, f"unreadable CSV: {exc}") from None
            tables[name] = Table(name, Path(rel).name, text, frame, {str(k): str(v) for k, v in units.items()})
        return tables

    def query(self, task: Task) -> str:
        """The question and the file name; the prompt's instructions are the same in every task."""
        return f"{self.table(task).file} {task.payload.question}"

    def table(self, task: Task) -> Table:
        return self.tables[task.payload.dataset]

    # ----- TOOL --------------------------------------------------------------------------------------
    def argument_values(self, task: Task, tool: str, arg: str) -> list[Any]:
        """Wrong-call values: the other columns of the task's own table (a column of another table would
        be an error, not wrong evidence); other arguments as in :class:`Domain`."""
        columns = [str(c) for c in self.table(task).frame.columns]
        if arg == "column":
            return columns
        if arg == "columns":
            return [[c] for c in columns]
        return super().argument_values(task, tool, arg)

    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None,
                  *, resource: None = None) -> ToolResult:
        table = self.table(task)
        key = (table.name, call.key())
        result = self._tool_results.get(key)
        if result is None:
            result = run_tool(table, call)
            self._tool_results.put(key, result)
        return result

    # ----- signals the harness holds ----------------------------------------------------------------
    def task_keys(self, task: Task) -> tuple[str, ...]:
        """The file, the columns the question uses and its numbers (:func:`prompt_keys`; memoised per task)."""
        got = self._keys.get(task.task_id)
        if got is None:
            got = self._keys[task.task_id] = prompt_keys(task.prompt) or super().task_keys(task)
        return got

    def n_visible_checks(self, task: Task) -> int:
        """The validations CHECK runs on the answer (:func:`~harness_gym.domains.data.checker.validations`):
        4 to 6, one more where the question states a plausible range."""
        return len(validations(task.payload.spec))

    def input_size(self, task: Task) -> int:
        """The prompt and the CSV file handed over with it."""
        return len(task.prompt) + len(self.table(task).csv)

    def tool_answers(self, task: Task, call: ToolCall, result: ToolResult) -> bool:
        """Whether a tool answered about what the question uses: a duplicate count (about the whole file), or
        a profile or value count of a column the question names (:meth:`task_keys`)."""
        if not result.ok:
            return False
        if call.name == "count_duplicates":
            return True
        column = call.args.get("column")
        return isinstance(column, str) and column.lower() in self.task_keys(task)

    def observe_bill(self, task: Task, index: int) -> Mapping[str, float]:
        """Nothing: every observation is read from the CSV file and README handed over with the task."""
        return {}

    # ----- CHECK / SUBMIT ----------------------------------------------------------------------------
    def execute(self, task: Task, code: str, sandbox: Sandbox | None) -> ExecResult:
        """Run a program in the sandbox with the task's CSV file in its working directory."""
        if sandbox is None:
            raise RuntimeError(f"{self.name}: programs need a sandbox")
        table = self.table(task)
        return sandbox.run(code, files={table.file: table.csv}, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB)

    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> CheckResult:
        return check_run(task.payload.spec, self.execute(task, draft.content, sandbox))

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> float:
        return grade_run(task.payload.spec, task.payload.expected, self.execute(task, draft.content, sandbox))

    # ----- evidence ----------------------------------------------------------------------------------
    def knowledge_signal(self, task: Task, ctx: Context, call: ToolCall | None = None) -> float:
        """Tool calls: +1 for a valid call on existing columns, -1 otherwise. Drafts: -1 when the program
        reads a column the dataset does not have (and does not create), +1 when every column it names exists."""
        columns = self.table(task).frame.columns
        if call is not None:
            if validate_call(self.tools, call):
                return -1.0
            named = list(call.args.get("columns", [])) + ([call.args["column"]] if "column" in call.args else [])
            return 1.0 if all(c in columns for c in named) else -1.0
        if ctx.draft is None:
            return 0.0
        key = (task.task_id, ctx.draft.content)
        got = self._knowledge.get(key)
        if got is None:
            got = draft_knowledge(ctx.draft.content, set(columns))
            self._knowledge.put(key, got)
        return got


def draft_knowledge(code: str, columns: set[str]) -> float:
    """+1 / -1 / 0: whether every column a program references exists in the data or is created by it."""
    referenced = set(_REFERENCED.findall(code))
    if not referenced:
        return 0.0
    return 1.0 if referenced <= columns | set(_ASSIGNED.findall(code)) else -1.0


@functools.lru_cache(maxsize=8)
def load_data_domain(data_dir: str | None = None) -> DataDomain:
    """The data domain from ``data_dir`` (default: the shipped ``envs_data/data``), loaded once per process."""
    return DataDomain(data_dir if data_dir is not None else data_path("data"))
