"""HarnessMultiTool-v2 (and -v1, the earlier worker): the Harness MDP over the multi-tool domain."""

from __future__ import annotations

from typing import Any

from harness_gym.core.env_class import document_env
from harness_gym.domains.multitool.domain import load_multitool_domain
from harness_gym.env import HarnessEnv


@document_env
class HarnessMultiToolEnv(HarnessEnv):
    """
    ## Description

    Multi-tool: each task is a question that needs a chain of 1-5 tool calls, e.g. "what is order O-1042's
    amount in EUR at the rate finance uses?" (look up the amount, look up the order date, fetch that day's
    rate, multiply). The world is a dated currency rate table (six currencies, one rate a day over half a
    year) and six lookup tables (orders, products, contracts, routes, bookings, invoices) whose cells carry
    units. Twelve request types make up train/val/test; six unseen ones (about supplier invoices, unit prices per
    pound) form the ``ood`` split. Every split mixes chains of 1 to 5 calls in the proportions of τ²-bench
    retail's gold action sequences (:mod:`harness_gym.domains.multitool.generate`); the prompt's wording names the
    quantities the answer combines, so the chain length is visible.

    A draft is a tool plan plus its final value: ``{"plan": [{"tool": T, "args": {...}}, ...], "answer": v}``;
    an argument ``"$n"`` stands for the result of step n.

    - **Corpus** (RETRIEVE, BM25 over title and text): tool manuals, table descriptions (which column the
      business rule uses, e.g. the order date, not the delivery date), unit lists and conventions.
    - **Tools** (pure Python, JSON-schema arguments): ``calculate(expression)`` (a whitelisted arithmetic
      evaluator with unit algebra, never ``eval``), ``convert_units(value, from_unit, to_unit)``,
      ``date_add(date, days)``, ``date_diff(start, end)``, ``exchange_rate(base, quote, date)``,
      ``lookup(table, key, field)``. Schema violations and semantic faults (unknown unit, impossible date, no
      rate for that day, converting mass to length) are tool errors. ``exchange_rate`` stands for a paid
      currency-rate API (``api_call:fx_rates``), ``lookup`` for an internal tables service
      (``api_call:internal``); the calculator, unit and date tools run locally (``api_call:free``).
    - **Checker** (CHECK): re-executes the plan with the real tools, checks each step's arguments and the
      units of referenced values (``from_unit`` must be the value's unit, sums need like units, ``date_add``
      needs days), that the last step returns the unit the task asks for and that the answer equals the
      plan's result. Feedback names the failing step; it reports how many of its checks (one per step, one for
      the answer) passed and bills every call it re-sends (an FX lookup again costs an FX request). A plan that runs with consistent units but answers a
      slightly different question (the delivery date's rate, the scheduled instead of the measured time, one
      night too many) passes the checker and fails the grader: the domain's support ceiling.
    - **Grader** (SUBMIT, hidden): 1 when the answer is within 0.1% (dates: equal) of the gold value computed
      by the task's reference plan, else 0.

    ## Action Space

    ``Discrete(7)``:

    | Num | Action   | In this domain |
    |-----|----------|----------------|
    | 0   | OBSERVE  | reveals the main table's columns, then the answer format, then the rate table's coverage |
    | 1   | RETRIEVE | the next-best unseen manual page for the task prompt (BM25) |
    | 2   | TOOL     | the worker calls a tool to gather evidence (a lookup, a rate, a conversion) |
    | 3   | DRAFT    | the worker writes a tool plan and its final value |
    | 4   | CHECK    | re-executes the plan and validates types and units |
    | 5   | REVISE   | the worker repairs the plan using the checker's feedback |
    | 6   | SUBMIT   | grades the final value; the episode ends |

    ## Observation Space

    ``Box(low, high, (F,), float32)``, the harness-state features shared by every domain:

    {observation_table}

    ## Rewards

    0 on every step except the last, where it is the grade of the submitted answer (0 or 1), minus
    ``cost_weight`` times the step's metered cost
    ``info["cost"]["units"]`` on every step (default 0).

    ## Starting State

    A task drawn uniformly from the split (or ``options["task_id"]``), no evidence, no draft, the full budget.

    ## Episode End

    {episode_end}

    ## Info

    {info}

    ## Arguments

    ```python
    import gymnasium as gym
    env = gym.make("HarnessMultiTool-v2", data_dir=None, split="train", budget=30, cost_weight=0.0,
                   worker="simulated", profile="v2", sandbox="process", action_costs=None, render_mode=None,
                   prices="cheap-hosted", budget_units="auto")
    ```

    ``data_dir`` is a folder with ``world.json``, ``corpus.jsonl`` and ``tasks.jsonl`` (default: the shipped
    ``envs_data/multitool``, written by ``python -m harness_gym.domains.multitool.generate``); the other
    keywords are those of :class:`~harness_gym.env.HarnessEnv`. No sandbox is opened: the tools are
    pure Python.

    ## Example

    ```python
    >>> import gymnasium as gym, harness_gym
    >>> env = gym.make("HarnessMultiTool-v2", split="test")
    >>> obs, info = env.reset(seed=0)
    >>> for action in (0, 1, 1, 2, 2, 3, 4, 6):  # columns, two manuals, two tool calls, draft, check, submit
    ...     obs, reward, terminated, truncated, info = env.step(action)
    >>> terminated, info["quality"] in (0.0, 1.0)
    (True, True)

    ```
    """

    def __init__(self, data_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(load_multitool_domain(data_dir), **kwargs)
