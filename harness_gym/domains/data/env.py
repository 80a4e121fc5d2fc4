"""HarnessData-v2 (and -v1, the earlier worker): the Harness MDP over the data-analysis domain."""

from __future__ import annotations

from typing import Any

from harness_gym.core.env_class import document_env
from harness_gym.domains.data.domain import load_data_domain
from harness_gym.env import HarnessEnv


@document_env
class HarnessDataEnv(HarnessEnv):
    """
    ## Description

    Data analysis (fetch, clean, analyse, report): each task is a question about a generated CSV export
    (store orders, shipment logs, timesheets; 120-280 rows, stated in the prompt with the columns) that carries
    0 to 3 kinds of realistic faults: rows repeated by the export, hand-typed identifiers with stray spaces and
    lower case, a measure recorded in another unit on some rows (cents instead of USD, grams instead of kg,
    flagged by a unit column), sentinel values (0, -1, 999) in a count column and missing values. A third of
    the exports are clean (the prompt calls them validated extracts; their tasks need no evidence), the others
    raw exports with CleanML's distribution of error kinds; half of the numeric questions state a plausible
    range, which only then the checker validates (the mix and its sources:
    :mod:`harness_gym.domains.data.generate`). Questions: mean per group, total of a derived amount, distinct count,
    month with the highest total, Pearson correlation. The ``ood`` split uses two unseen schemas (utility meter
    readings, a medication dosing log) and three unseen question templates (share of records above a
    threshold, percent change between the first and last month, weighted mean).

    A draft is a pandas program that reads the CSV from its working directory, cleans it, analyses it and
    prints the answer as JSON on its last line.

    - **Corpus** (RETRIEVE, BM25 over title and text): short notes on pandas and cleaning (``drop_duplicates``,
      NaN handling, ``groupby``, ``nunique``, unit conversion with ``.loc``, ``to_period``, ``corr``, ...) and
      one data dictionary per export format (units, valid ranges, cleaning rules); what is specific to one
      file (its period, groups) is in its README, an observation.
    - **Tools** (in-process pandas on a copy loaded at construction, JSON-schema arguments):
      ``profile_column(column)`` (dtype, nulls, quartiles, values outside the IQR fences, orders of
      magnitude, spread per unit code, whitespace/case variants), ``value_counts(column, top)``,
      ``count_duplicates(columns)``. An unknown column is a tool error that lists the columns.
    - **Checker** (CHECK): runs the program in the sandbox and validates its output: it must exit cleanly
      (else the exception and its line are returned), print JSON, have the expected type (number, integer,
      object with exactly the expected groups, or one of the possible month labels), contain no NaN and, where
      the question states one, lie in the plausible range; the result counts the validations passed. Programs that forget a cleaning step or use the wrong
      statistic often print plausible numbers, pass the checker and fail the grader: the domain's support
      ceiling.
    - **Grader** (SUBMIT, hidden): runs the program and compares its answer with the reference program's,
      computed at generation time: numbers within one unit of the requested last decimal or 0.1%, integers
      and labels exactly; for a per-group object the fraction of groups within tolerance.

    ## Action Space

    ``Discrete(7)``:

    | Num | Action   | In this domain |
    |-----|----------|----------------|
    | 0   | OBSERVE  | reveals the data head, then columns with dtypes and non-null counts, then the README |
    | 1   | RETRIEVE | the next-best unseen pandas note or data dictionary for the task prompt (BM25) |
    | 2   | TOOL     | the worker profiles a column or counts duplicate rows |
    | 3   | DRAFT    | the worker writes a pandas program |
    | 4   | CHECK    | runs the program in the sandbox and validates the answer's type, shape, NaN and range |
    | 5   | REVISE   | the worker repairs the program using the checker's feedback |
    | 6   | SUBMIT   | runs the program and grades its answer; the episode ends |

    ## Observation Space

    ``Box(low, high, (F,), float32)``, the harness-state features shared by every domain:

    {observation_table}

    ## Rewards

    0 on every step except the last, where it is the grade of the submitted program's answer (0 or 1; the
    fraction of groups answered right for per-group questions), minus ``cost_weight`` times the step's metered cost
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
    env = gym.make("HarnessData-v2", data_dir=None, split="train", budget=30, cost_weight=0.0,
                   worker="simulated", profile="v2", sandbox="process", action_costs=None, render_mode=None,
                   prices="cheap-hosted", budget_units="auto")
    ```

    ``data_dir`` is a folder with ``datasets.jsonl``, ``datasets/*.csv``, ``corpus.jsonl`` and ``tasks.jsonl``
    (default: the shipped ``envs_data/data``, written by ``python -m harness_gym.domains.data.generate``); the
    other keywords are those of :class:`~harness_gym.env.HarnessEnv`. Programs run in the sandbox; the
    domain asks for ``preload=("pandas",)`` (``DataDomain.sandbox_options``), so that a run costs a fork
    (about 60 ms with the CSV parsing) instead of pandas' import (about 0.6 s).

    ## Example

    ```python
    >>> import gymnasium as gym, harness_gym
    >>> env = gym.make("HarnessData-v2", split="test")
    >>> obs, info = env.reset(seed=0)
    >>> for action in (0, 0, 0, 1, 1, 2, 3, 4, 6):  # head, schema, README, 2 documents, a profile, draft, check, submit
    ...     obs, reward, terminated, truncated, info = env.step(action)
    >>> terminated, 0.0 <= info["quality"] <= 1.0
    (True, True)

    ```
    """

    def __init__(self, data_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(load_data_domain(data_dir), **kwargs)
