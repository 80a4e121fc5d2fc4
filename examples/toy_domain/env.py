"""HarnessToy: the Harness MDP over the toy domain (the example of docs/extending.md)."""

from __future__ import annotations

from typing import Any

from examples.toy_domain.domain import load_toy_domain
from harness_gym.core.env_class import document_env
from harness_gym.env import HarnessEnv


@document_env
class HarnessToyEnv(HarnessEnv):
    """
    ## Description

    Ten tasks "add a and b" (6 train, 1 val, 2 test, 1 ood). Each has three candidate answers: the sum, the
    sum plus one and the sum plus two. The checker verifies the answer's parity only, so the sum plus two
    passes CHECK and fails the grader.

    - **Observations** (OBSERVE): ``a = ...``, then ``b = ...``.
    - **Corpus** (RETRIEVE, BM25): a note on addition (relevant) and one on cats.
    - **Tool** ``add(a, b)``: returns the sum.
    - **Checker** (CHECK): the parity of the answer. **Grader** (SUBMIT, hidden): 1 for the exact sum, else 0.

    ## Action Space

    ``Discrete(7)``: OBSERVE, RETRIEVE, TOOL, DRAFT, CHECK, REVISE, SUBMIT (docs/harness_mdp.md).

    ## Observation Space

    {observation_table}

    ## Rewards

    The grade of the submitted answer (0 or 1) on the last step, 0 before, minus ``cost_weight`` times the step's metered cost units.

    ## Starting State

    A task drawn uniformly from the split (or ``options["task_id"]``), no evidence, no draft, the full budget.

    ## Episode End

    {episode_end}

    ## Arguments

    ```python
    env = gym.make("HarnessToy-v1", split="train", budget=30, cost_weight=0.0, worker="simulated",
                   profile=None, prompts_dir=None, sandbox="process", action_costs=None, render_mode=None,
                   prices="cheap-hosted", budget_units="auto")
    ```

    The worker's profile (``profiles/toy.json``) and prompts (``prompts/toy.json``) are read from the domain's
    assets folder, this folder (:attr:`ToyDomain.assets_dir`); the keywords are those of
    :class:`~harness_gym.env.HarnessEnv`.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(load_toy_domain(), **kwargs)
