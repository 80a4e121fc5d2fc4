"""The data-analysis domain: answer a question about a messy CSV export with a pandas program (DESIGN §4).

A draft is a Python program that reads the task's CSV file from its working directory, cleans it (duplicate
rows, hand-typed identifiers, mixed units, sentinel outliers, missing values), analyses it and prints the
answer as JSON on its last line. The checker runs the program in the sandbox and validates the answer's type,
shape and plausibility (:func:`~harness_gym.domains.data.answers.sanity`); the hidden grader runs it and
compares the answer with the reference program's within tolerance
(:func:`~harness_gym.domains.data.answers.score`). The tools compute real statistics in-process on a pandas
copy of the dataset loaded at construction.
"""

from __future__ import annotations

import functools
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness_gym.core.domain import Domain
from harness_gym.core.taskfile import TaskFileError, parse_task, read_documents, read_jsonl, require
from harness_gym.core.tools import ToolSpec, validate_call
from harness_gym.core.types import CheckResult, Context, Draft, ExecResult, Task, ToolCall, ToolResult
from harness_gym.domains.data.answers import ANSWER_KINDS, AnswerSpec, parse_output, sanity, score
from harness_gym.paths import data_path
from harness_gym.sandbox.base import Sandbox

TIMEOUT_S = 10.0
"""Wall-clock limit of one program run (the programs take well under a second)."""
MEMORY_MB = 768

_COLUMN = {"type": "string", "minLength": 1, "description": "a column name of the task's CSV file"}
TOOL_SPECS: dict[str, ToolSpec] = {
    "profile_column": ToolSpec(
        "profile_column",
        "Statistics of one column of the task's dataset: dtype, nulls, distinct values; for numbers the "
        "quartiles, values outside the 1.5 IQR fences and the spread per unit code; for text the most common "
        "values and how many differ only by spaces or case.",
        {"type": "object", "properties": {"column": _COLUMN}, "required": ["column"], "additionalProperties": False}),
    "value_counts": ToolSpec(
        "value_counts", "The most frequent values of a column (missing values included), with their counts.",
        {"type": "object", "properties": {"column": _COLUMN, "top": {"type": "integer", "minimum": 1, "maximum": 50}},
         "required": ["column"], "additionalProperties": False}),
    "count_duplicates": ToolSpec(
        "count_duplicates",
        "How many rows repeat an earlier row, comparing all columns or only the given ones.",
        {"type": "object", "properties": {"columns": {"type": "array", "items": _COLUMN, "minItems": 1}},
         "additionalProperties": False}),
}

_REFERENCED = re.compile(r'(?:\[\s*|groupby\(\s*|subset=\[\s*)"([^"]+)"')
_ASSIGNED = re.compile(r'df\[\s*"([^"]+)"\s*\]\s*=(?!=)')


@dataclass(frozen=True)
class Table:
    """A dataset: its CSV text (written into the sandbox work dir) and a pandas copy for the tools."""

    name: str
    file: str
    csv: str
    frame: pd.DataFrame
    unit_columns: dict[str, str]


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
    return AnswerSpec(kind=kind, what=get("what", str), low=get("low", float), high=get("high", float),
                      decimals=get("decimals", int), keys=tuple(keys), labels=tuple(labels))


class DataDomain(Domain):
    """Questions about messy CSV exports, answered by pandas programs run in the sandbox.

    :param data_dir: folder holding ``datasets.jsonl``, ``datasets/*.csv``, ``corpus.jsonl`` and ``tasks.jsonl``
    """

    name = "data"
    uses_sandbox = True
    tool_needs_draft = False
    sandbox_options = {"preload": ("pandas",)}
    """The sandbox imports pandas once, so a program run costs a fork (~60 ms) instead of ~0.6 s."""

    def __init__(self, data_dir: str | Path) -> None:
        super().__init__()
        root = Path(data_dir)
        self.tables = self._load_tables(root)
        self.corpus = read_documents(root / "corpus.jsonl")
        self.tools = dict(TOOL_SPECS)
        self._tool_results: dict[tuple[str, str], ToolResult] = {}
        self._knowledge: dict[tuple[str, str], float] = {}
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
    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None) -> ToolResult:
        table = self.table(task)
        key = (table.name, call.key())
        result = self._tool_results.get(key)
        if result is None:
            result = self._tool_results[key] = self._run_tool(table, call)
        return result

    def _run_tool(self, table: Table, call: ToolCall) -> ToolResult:
        frame = table.frame
        wanted = list(call.args.get("columns", [])) if call.name == "count_duplicates" else [call.args["column"]]
        unknown = [c for c in wanted if c not in frame.columns]
        if unknown:
            return ToolResult(ok=False, output="", error=f"{table.file} has no column {unknown[0]!r}; columns: "
                                                         f"{', '.join(frame.columns)}")
        if call.name == "profile_column":
            return ToolResult(ok=True, output=profile(frame, call.args["column"], table.unit_columns))
        if call.name == "value_counts":
            counts = frame[call.args["column"]].value_counts(dropna=False).head(int(call.args.get("top", 10)))
            return ToolResult(ok=True, output="; ".join(f"{v!r}: {n}" for v, n in counts.items()))
        cols = call.args.get("columns")
        n = int(frame.duplicated(subset=cols).sum())
        over = f"columns {', '.join(cols)}" if cols else "all columns"
        return ToolResult(ok=True, output=f"{n} of {len(frame)} rows repeat an earlier row ({over})")

    # ----- CHECK / SUBMIT ----------------------------------------------------------------------------
    def execute(self, task: Task, code: str, sandbox: Sandbox | None) -> ExecResult:
        """Run a program in the sandbox with the task's CSV file in its working directory."""
        if sandbox is None:
            raise RuntimeError(f"{self.name}: programs need a sandbox")
        table = self.table(task)
        return sandbox.run(code, files={table.file: table.csv}, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB)

    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None) -> CheckResult:
        result = self.execute(task, draft.content, sandbox)
        if result.timed_out:
            return CheckResult(False, f"the program did not finish within {TIMEOUT_S:g} s", 0.3)
        if result.reason:
            return CheckResult(False, f"the sandbox stopped the program ({result.reason}): {result.stderr[-200:]}", 0.3)
        if result.exit_code != 0:
            return CheckResult(False, f"the program raised {error_summary(result.stderr)}", 0.8)
        value, problem = parse_output(result.stdout)
        if problem:
            return CheckResult(False, problem, 0.6)
        verdict = sanity(task.payload.spec, value)
        return CheckResult(verdict.ok, verdict.feedback, verdict.specificity)

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None) -> float:
        result = self.execute(task, draft.content, sandbox)
        if not result.ok:
            return 0.0
        value, problem = parse_output(result.stdout)
        if problem:
            return 0.0
        return score(task.payload.spec, value, task.payload.expected)

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
            got = self._knowledge[key] = draft_knowledge(ctx.draft.content, set(columns))
        return got


def draft_knowledge(code: str, columns: set[str]) -> float:
    """+1 / -1 / 0: whether every column a program references exists in the data or is created by it."""
    referenced = set(_REFERENCED.findall(code))
    if not referenced:
        return 0.0
    return 1.0 if referenced <= columns | set(_ASSIGNED.findall(code)) else -1.0


def error_summary(stderr: str) -> str:
    """The exception line of a traceback and the line of the program that raised it."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    if not lines:
        return "an error without a message"
    where = [ln.strip() for ln in lines if ln.strip().startswith("File ") and ", line " in ln]
    at = f" ({where[-1].split(', in ')[0].split(', ')[-1]})" if where else ""
    return f"{lines[-1].strip()[:300]}{at}"


def profile(frame: pd.DataFrame, column: str, unit_columns: dict[str, str]) -> str:
    """The ``profile_column`` tool's report."""
    s = frame[column]
    nulls = int(s.isna().sum())
    parts = [f"{column}: dtype {s.dtype}, {len(s)} rows, {nulls} missing ({100 * nulls / len(s):.1f}%), "
             f"{s.nunique()} distinct"]
    if pd.api.types.is_numeric_dtype(s):
        q = s.quantile([0, 0.25, 0.5, 0.75, 1.0]).tolist()
        fence = 1.5 * (q[3] - q[1])
        outside = s[(s < q[1] - fence) | (s > q[3] + fence)]
        parts.append(f"min {q[0]:g}, q1 {q[1]:g}, median {q[2]:g}, q3 {q[3]:g}, max {q[4]:g}")
        parts.append(f"{len(outside)} values outside the 1.5 IQR fences"
                     + (f" (e.g. {', '.join(f'{v:g}' for v in sorted(set(outside))[:6])})" if len(outside) else ""))
        positive = s[s > 0]
        if len(positive) and positive.max() / positive.min() >= 1000:
            parts.append(f"values span {math.log10(positive.max() / positive.min()):.1f} orders of magnitude")
        unit_col = unit_columns.get(column)
        if unit_col is not None:
            by_unit = s.groupby(frame[unit_col]).agg(["count", "median"])
            parts.append(f"by {unit_col}: " + "; ".join(f"{u}: {int(r['count'])} values, median {r['median']:g}"
                                                        for u, r in by_unit.iterrows()))
    else:
        text = s.dropna().astype(str)
        padded = int((text != text.str.strip()).sum())
        lower = int((text != text.str.upper()).sum())
        top = text.value_counts().head(5)
        parts.append("most common: " + ", ".join(f"{v!r} ({n})" for v, n in top.items()))
        if padded or lower:
            parts.append(f"{padded} values with leading/trailing spaces, {lower} not upper-case; "
                         f"{text.str.strip().str.upper().nunique()} distinct after strip + upper")
    return "; ".join(parts)


@functools.lru_cache(maxsize=8)
def load_data_domain(data_dir: str | None = None) -> DataDomain:
    """The data domain from ``data_dir`` (default: the shipped ``envs_data/data``), loaded once per process."""
    return DataDomain(data_dir if data_dir is not None else data_path("data"))
