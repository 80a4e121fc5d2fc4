"""HarnessCode-v2 (and -v1, the earlier worker): the Harness MDP over Python function tasks with visible and hidden tests."""

from __future__ import annotations

from typing import Any

from harness_gym.core.env_class import document_env
from harness_gym.domains.code.domain import load_code_domain
from harness_gym.env import HarnessEnv


@document_env
class HarnessCodeEnv(HarnessEnv):
    """
    ## Description

    Code generation: the worker writes a Python function (or a small class) from a short spec. There are 153
    tasks in 9 families (strings, lists, dicts, math, parsing, matrices, recursion; dates and classes are held
    out as the ``ood`` split), each with a reference solution, 0 to 4 visible tests and 7-12 hidden tests
    (the visible cases plus edge cases). Tasks differ as real benchmark tasks do (the mix and its sources:
    :mod:`harness_gym.domains.code.generate`): the prompt shows 0 to 4 examples, and those are the visible tests
    CHECK runs (HumanEval's distribution of docstring examples), so a task with few of them has a check that
    covers part of the spec; and about half of the prompts state the spec's edge-case clauses (a task that
    needs no evidence), while the others leave them to OBSERVE. Wrong drafts are AST mutants of the reference (comparison flips, off-by-one, swapped operators and
    arguments, dropped branches, wrong constants and return values, look-alike API calls) kept only when
    running them showed they are wrong; some pass the visible tests and fail hidden ones, the domain's
    support ceiling.

    - **Corpus** (RETRIEVE, BM25 over title and text of the task prompt): 76 short notes on the builtins,
      idioms and algorithms the tasks use, plus unrelated library notes.
    - **Tool** (needs a draft): ``run_example(call)`` runs the draft on one call expression in the sandbox
      and returns the repr of the result or the exception's last line.
    - **Checker** (CHECK): the visible tests, run in the sandbox in one job; feedback names the first
      failing case with the expected and the actual value (or the exception, or the load error), and the
      result counts the visible tests passed. Without visible tests CHECK loads the draft and looks up the
      spec's name.
    - **Grader** (SUBMIT, hidden): the hidden tests in one sandbox job; quality is the fraction passed.
      Success is quality 1.

    Every run is a sandbox job (``sandbox="process"`` by default): the draft is written to ``solution.py``
    and a fixed harness script loads it, evaluates the test expressions with a CPU limit per test and prints
    one marked JSON result line.

    ## Action Space

    ``Discrete(7)``:

    | Num | Action   | In this domain |
    |-----|----------|----------------|
    | 0   | OBSERVE  | reveals the next spec detail: edge-case clauses, input constraints, then a worked example |
    | 1   | RETRIEVE | the next-best unseen note for the task prompt (BM25) |
    | 2   | TOOL     | the worker runs its draft on an example call (``run_example``); needs a draft |
    | 3   | DRAFT    | the worker writes a new solution from the evidence gathered |
    | 4   | CHECK    | runs the visible tests on the current draft |
    | 5   | REVISE   | the worker fixes the draft using the failing case named by the check (or the tool error) |
    | 6   | SUBMIT   | runs the hidden tests; the episode ends |

    ## Observation Space

    ``Box(low, high, (F,), float32)``, the harness-state features shared by every domain:

    {observation_table}

    ## Rewards

    0 on every step except the last, where it is the fraction of hidden tests the submitted draft passes, in
    [0, 1], minus ``cost_weight`` times the step's metered cost ``info["cost"]["units"]`` on every step (default 0).

    ## Starting State

    A task drawn uniformly from the split (or ``options["task_id"]``), no evidence, no draft, the full budget.

    ## Episode End

    {episode_end}

    ## Info

    {info}

    ## Arguments

    ```python
    import gymnasium as gym
    env = gym.make("HarnessCode-v2", data_dir=None, split="train", budget=30, cost_weight=0.0,
                   worker="simulated", profile="v2", sandbox="process", action_costs=None, render_mode=None,
                   prices="cheap-hosted", budget_units="auto")
    ```

    ``data_dir`` is a folder with ``tasks.jsonl`` and ``corpus.jsonl`` (default: the shipped
    ``envs_data/code``, written by ``python -m harness_gym.domains.code.generate``); the other keywords are
    those of :class:`~harness_gym.env.HarnessEnv`.

    ## Example

    ```python
    >>> import gymnasium as gym, harness_gym
    >>> env = gym.make("HarnessCode-v2", split="test")
    >>> obs, info = env.reset(seed=0)
    >>> for action in (0, 0, 1, 3, 4, 6):  # two spec details, a note, draft, check, submit
    ...     obs, reward, terminated, truncated, info = env.step(action)
    >>> terminated, 0.0 <= info["quality"] <= 1.0
    (True, True)

    ```
    """

    def __init__(self, data_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(load_code_domain(data_dir), **kwargs)
