"""Shared checks of the harness-signal hooks of a domain (``task_keys``, ``n_visible_checks``, ``input_size``,
``observe_bill``, ``tool_answers``): they must read nothing a real harness does not hold."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from harness_gym.core.domain import Domain
from harness_gym.core.types import Context, Task


def scrubbed(task: Task, payload: Any) -> Task:
    """``task`` with every hidden field emptied and ``payload`` in place of its payload, under a new id (so no
    memo kept per task id can answer for it)."""
    return dataclasses.replace(task, task_id=task.task_id + "#scrubbed", candidates=(), relevant_docs=frozenset(),
                               required_observations=frozenset(), tool_calls=(), difficulty=0.0, payload=payload)


def hook_values(domain: Domain, task: Task, probe: Task) -> tuple:
    """Every hook's value on ``probe``; tool answers are judged on the results of ``task``'s evidence calls and
    wrong calls (run on ``task``, which holds what the tools need)."""
    ctx = Context(task=task)
    results = [(call, domain.run_tool(task, call, ctx, None)) for call in task.tool_calls + domain.wrong_tool_calls(task)]
    return (domain.task_keys(probe), domain.n_visible_checks(probe), domain.input_size(probe),
            tuple(dict(domain.observe_bill(probe, i)) for i in range(len(task.observations))),
            tuple(domain.tool_answers(probe, call, res) for call, res in results))


def assert_hooks_read_no_hidden_field(domain: Domain, tasks: Sequence[Task],
                                      scrub_payload: Callable[[Any], Any]) -> None:
    """Each hook gives the same value on every task and on its scrubbed copy (hidden fields emptied, the payload's
    hidden part removed by ``scrub_payload``)."""
    for task in tasks:
        probe = scrubbed(task, scrub_payload(task.payload))
        assert hook_values(domain, task, probe) == hook_values(domain, task, task), task.task_id
