"""The multi-tool domain: answer a question with a chain of 1-5 tool calls.

The draft is a tool plan plus its final value, ``{"plan": [{"tool": ..., "args": {...}}, ...], "answer": v}``.
The checker re-executes the plan with the real tools (:func:`~harness_gym.domains.multitool.checker.run_plan`),
validates every step's arguments and units and the final unit, and names the failing step; it counts the steps it
verified and bills the re-executed calls again. The hidden grader compares the answer with the gold value computed
by running the task's reference plan (kept by the domain, never in ``Task.payload``, whose ``answer_unit`` and
``unit_name`` the prompt states anyway).

The task mix (chains of 1 to 5 calls in τ²-bench retail's proportions) is documented in
:mod:`harness_gym.domains.multitool.generate`; the harness signals read the prompt through
:class:`~harness_gym.domains.multitool.requests.RequestParser` (the request type, so the chain length, and the ids,
dates and currencies it names).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_gym.core.domain import Domain
from harness_gym.core.paths import data_path
from harness_gym.core.sandbox import Sandbox
from harness_gym.core.taskfile import TaskFileError, parse_task, read_documents, read_json, read_jsonl, require
from harness_gym.core.types import CheckResult, Context, Draft, Task, ToolCall, ToolResult
from harness_gym.domains.multitool.checker import check_plan, parse_draft, run_plan
from harness_gym.domains.multitool.grader import grade_answer
from harness_gym.domains.multitool.requests import ParsedRequest, RequestParser, read_requests
from harness_gym.domains.multitool.tools import (
    DATE,
    TOOLS,
    UNITS,
    ToolError,
    Value,
    World,
    format_unit,
    parse_unit,
)


class MultiToolDomain(Domain):
    """Tool-chain tasks over a dated rate table, unit conversions, calendar arithmetic and lookup tables.

    :param data_dir: folder holding ``world.json``, ``corpus.jsonl`` and ``tasks.jsonl``
    """

    name = "multitool"
    uses_sandbox = False
    tool_needs_draft = False
    KEY_SLOTS = frozenset({"order", "sku", "contract", "route", "booking", "invoice", "date", "base", "quote",
                           "currency", "target", "value"})
    """The slots of a request's wording whose values a harness looks for in tool calls and results: ids, dates,
    currencies, target units and the quantity to convert (not the spelled-out unit words, the payment terms)."""
    check_false_alarm_rate = 0.015
    """The plan check re-executes every step against the tools, which in deployment are live services (rates,
    lookups): 1.5% of Google's test runs report a flaky result (J. Micco, "Flaky Tests at Google and How We
    Mitigate Them", Google Testing Blog, 2016), the closest published rate of re-executed checks failing
    spuriously (docs/domains.md, "Checker false alarms")."""

    def __init__(self, data_dir: str | Path) -> None:
        super().__init__()
        root = Path(data_dir)
        self.world = self._load_world(root / "world.json")
        self.tools = TOOLS.specs
        self.corpus = read_documents(root / "corpus.jsonl")
        in_dist, out_dist = read_requests()
        self.parser = RequestParser({**in_dist, **out_dist})
        self._parsed: dict[str, ParsedRequest | None] = {}
        self._gold: dict[str, Value] = {}
        path = root / "tasks.jsonl"
        tasks = []
        for line, rec in read_jsonl(path):
            tid = require(rec, "task_id", str, path=path, line=line)
            raw = require(rec, "payload", dict, path=path, line=line, task_id=tid)
            unit = require(raw, "answer_unit", str, path=path, line=line, task_id=tid)
            plan = require(raw, "reference_plan", list, path=path, line=line, task_id=tid)
            run = run_plan(self.world, self.tools, plan)
            if not run.ok:
                raise TaskFileError(path, f"reference plan fails at step {run.failed_step}: {run.error}",
                                    line=line, task_id=tid, field="payload.reference_plan")
            try:
                want = DATE if unit == "date" else parse_unit(unit)
            except ToolError as exc:
                raise TaskFileError(path, str(exc), line=line, task_id=tid, field="payload.answer_unit") from None
            if run.result.unit != want:
                raise TaskFileError(path, f"reference plan returns {format_unit(run.result.unit)}, not {unit}",
                                    line=line, task_id=tid, field="payload.answer_unit")
            task = parse_task(rec, path=path, line=line, payload={"answer_unit": want, "unit_name": unit})
            if self.parser.parse(task.prompt) is None:
                raise TaskFileError(path, "the prompt follows no request type of sources/requests.json", line=line,
                                    task_id=tid, field="prompt")
            self._gold[tid] = run.result
            tasks.append(task)
        self.add_tasks(tasks)

    @staticmethod
    def _load_world(path: Path) -> World:
        raw = read_json(path)
        if not isinstance(raw, dict):
            raise TaskFileError(path, "expected a JSON object")
        rates = require(raw, "rates", dict, path=path)
        tables = require(raw, "tables", dict, path=path)
        require(rates, "start", str, path=path)
        per_usd = require(rates, "per_usd", dict, path=path)
        lengths = {len(v) if isinstance(v, list) else -1 for v in per_usd.values()}
        if len(lengths) != 1 or -1 in lengths:
            raise TaskFileError(path, "every currency needs a list of daily rates of the same length",
                                field="rates.per_usd")
        for name, tab in tables.items():
            for key in ("columns", "rows"):
                if not isinstance(tab, dict) or not isinstance(tab.get(key), dict):
                    raise TaskFileError(path, f"table {name!r} needs an object {key!r}", field=f"tables.{name}.{key}")
        return World(rates, tables)

    def gold(self, task: Task) -> Value:
        """The value the reference plan computes (what the grader compares with)."""
        return self._gold[task.task_id]

    # ----- signals the harness holds --------------------------------------------------------------------
    def request(self, task: Task) -> ParsedRequest | None:
        """The request the task's prompt makes: its type (so the chain length) and its slot values (memoised;
        ``None`` for a prompt of no known type, e.g. a task built in code).

        :param task: the task
        """
        if task.task_id not in self._parsed:
            self._parsed[task.task_id] = self.parser.parse(task.prompt)
        return self._parsed[task.task_id]

    def task_keys(self, task: Task) -> tuple[str, ...]:
        """The ids, dates, currencies, target units and quantities the prompt names (lower-cased, in the wording's
        order)."""
        got = self.request(task)
        if got is None:
            return super().task_keys(task)
        keys = dict.fromkeys(v.lower() for k, v in got.slots.items() if k in self.KEY_SLOTS)
        return tuple(keys)

    def n_visible_checks(self, task: Task) -> int:
        """The checks CHECK runs on a plan of the length the request type chains: one per step and one for the
        final answer."""
        got = self.request(task)
        return 0 if got is None else got.type.steps + 1

    def tool_answers(self, task: Task, call: ToolCall, result: ToolResult) -> bool:
        """A successful call answers when its arguments or its result name one of the prompt's keys (its id, a
        date or currency it names): a lookup of the asked order does, one of the next order does not."""
        if not result.ok:
            return False
        text = (result.output + " " + call.args_json()).lower()
        return any(key in text for key in self.task_keys(task))

    def observe_bill(self, task: Task, index: int) -> Mapping[str, float]:
        """A table's schema is read from the tables service (``api_call:internal``); the answer format and the
        rate table's coverage come with the task (free)."""
        text = task.observations[index] if 0 <= index < len(task.observations) else ""
        return {"api_call:internal": 1} if text.startswith("Table ") else {}

    # ----- TOOL --------------------------------------------------------------------------------------
    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None,
                  *, resource: None = None) -> ToolResult:
        result = TOOLS.call(call.name, self.world, (), {}, **call.args)
        return result if result.ok else dataclasses.replace(result, error=f"{call.name}: {result.error}")

    # ----- CHECK / SUBMIT ----------------------------------------------------------------------------
    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> CheckResult:
        return check_plan(self.world, self.tools, task.payload, draft.content)

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> float:
        return grade_answer(self._gold[task.task_id], draft.content)

    # ----- evidence ----------------------------------------------------------------------------------
    def knowledge_signal(self, task: Task, ctx: Context, call: ToolCall | None = None) -> float:
        """Tool calls: schema validity. Drafts: every step names a known tool, and every table, column, unit
        and currency it mentions exists in the world (+1), or something does not (-1)."""
        if call is not None or ctx.draft is None:
            return super().knowledge_signal(task, ctx, call)
        parsed = parse_draft(ctx.draft.content)
        if isinstance(parsed, str) or not isinstance(parsed[0], list):
            return -1.0
        return 1.0 if all(self._known(s) for s in parsed[0]) else -1.0

    def _known(self, step: Any) -> bool:
        if not isinstance(step, dict) or not _named(step.get("tool"), self.tools) or not isinstance(step.get("args"),
                                                                                                    dict):
            return False
        args = step["args"]
        if step["tool"] == "lookup":
            tab = self.world.tables.get(args["table"]) if _named(args.get("table"), self.world.tables) else None
            return tab is not None and _named(args.get("field"), tab["columns"])
        if step["tool"] == "convert_units":
            return _named(args.get("from_unit"), UNITS) and _named(args.get("to_unit"), UNITS)
        if step["tool"] == "exchange_rate":
            return _named(args.get("base"), self.world.per_usd) and _named(args.get("quote"), self.world.per_usd)
        return True


def _named(value: Any, known: Mapping[str, Any]) -> bool:
    """Whether a draft's ``value`` is a name in ``known`` (a value of any other type, a list included, is not)."""
    return isinstance(value, str) and value in known


@functools.lru_cache(maxsize=8)
def load_multitool_domain(data_dir: str | None = None) -> MultiToolDomain:
    """The domain loaded from ``data_dir`` (default ``envs_data/multitool``), cached per folder."""
    return MultiToolDomain(data_dir if data_dir is not None else data_path("multitool"))
