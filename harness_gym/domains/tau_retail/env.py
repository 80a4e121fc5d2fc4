"""HarnessTauRetail-v2 (and -v1, the earlier worker): the Harness MDP over τ-bench retail tickets, faithful to its data, tools and reward."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_gym.core.env_class import document_env
from harness_gym.core.sandbox import Sandbox
from harness_gym.core.types import Draft, Task
from harness_gym.domains.tau_retail.domain import load_tau_retail_domain
from harness_gym.domains.tau_retail.grader import OUTPUT_MATCHES, rewards
from harness_gym.env import PENDING, HarnessEnv


@document_env
class HarnessTauRetailEnv(HarnessEnv):
    """
    ## Description

    An adapter that runs the public τ-bench retail benchmark's own data as a Harness MDP. There is no LLM
    user simulator: the customer's request is the ticket (the prompt), and the worker answers it with a
    **draft = a plan plus a reply**, the JSON text
    ``{"plan": [{"name": TOOL, "arguments": {...}}, ...], "reply": TEXT}``: the ordered write calls the agent
    would make and what it tells the customer.

    - **Data** (``data_dir``): either public layout, as published. τ²-bench: ``db.json``, ``tasks.json``,
      ``split_tasks.json``. τ-bench v1: the ``tau_bench/envs/retail`` folder of a checkout as it is:
      ``data/users.json``, ``data/orders.json``, ``data/products.json`` and whichever of ``tasks_train.py``,
      ``tasks_dev.py``, ``tasks_test.py`` exist, read by parsing their ``Task(...)`` / ``Action(...)``
      literals (never imported or run; anything else is refused naming file, line and field). Without
      ``data_dir``: this project's synthetic store in ``envs_data/tau_retail``, in a JSON format of this
      project's own (``users.json``, ``orders.json``, ``products.json``, ``tasks_{train,dev,test,ood}.json``
      lists of ``{user_id, instruction, actions: [{name, kwargs}], outputs}``; 150 users, 600 orders,
      24 products, 260 tasks; written by ``python -m harness_gym.domains.tau_retail.generate``). Its tickets
      ask for 0 to 4 changes in τ²-bench's proportions, some with a question, half naming their orders by id
      and half describing them (the mix: the generator's docstring and docs/domains.md).
    - **τ² mapping**: ``id`` -> task id; ``user_scenario.instructions`` (reason for call, known and unknown
      info, behaviour notes) -> the ticket; ``evaluation_criteria.actions`` (``name``, ``arguments``) -> gold
      actions; ``communicate_info`` -> required outputs. ``nl_assertions`` need an LLM judge and are not
      graded; ``reward_basis`` is not read (the reward below is the same for every task). Splits:
      ``split_tasks.json``'s ``train`` / ``test`` (and ``val``/``dev``, ``ood`` if present; ``base``, the
      union, is ignored); without a val split one train task in five (by a hash of its id) moves to val.
      v1 task ids are ``<file split>-<index>`` (``train-0``, ``dev-3``: the index upstream's ``--task-ids``
      takes); ``tasks_dev.py`` is the val split.
    - **ood split**: the public data has none, so it is defined from the data: the train and val tasks whose
      gold actions change a pending order's shipping address (``modify_pending_order_address``) form
      ``ood``, so that intent is never seen in train or val; test stays as published. Published v1 train
      and dev: 455 train, 19 val, 46 ood; τ²: 53 train, 8 val, 13 ood, 40 test.
    - **Tools**: the retail tools with the public semantics (``find_user_id_by_email``,
      ``find_user_id_by_name_zip``, ``get_user_details``, ``get_order_details``, ``get_product_details``,
      ``get_item_details``, ``list_all_product_types``, ``calculate``, ``think``; writes:
      ``cancel_pending_order``, ``modify_pending_order_address``, ``modify_pending_order_items``,
      ``modify_pending_order_payment``, ``modify_user_address``, ``return_delivered_order_items``,
      ``exchange_delivered_order_items``; and ``transfer_to_human_agents``). TOOL runs read tools on the
      task's database; a write proposed as a tool call is refused (writes belong in the plan). Arguments are
      validated against JSON schemas; refusals (wrong status, unknown id, ...) are tool errors. On v1 data the
      tools follow v1 where the two versions differ: address and payment changes need status exactly
      ``pending`` (τ²: any status containing ``pending``); an item may be "modified" to itself (τ² refuses);
      user lookups compare lower-cased text (τ² also folds accents); ``get_item_details`` does not exist.
      Every tool call, and every record OBSERVE shows, is a request to the operator's order service
      (``api_call:internal``), except ``calculate`` (local arithmetic: ``api_call:free``) and ``think``
      (nothing); a write refused by TOOL never reaches the service and costs nothing.
    - **Checker** (CHECK): a plan verifier. It dry-runs the plan on a copy-on-write view of the database and
      enforces the policy a careful agent checks: plan steps are write/transfer tools with valid arguments,
      they act on the ticket's customer only, a transfer comes last, no item is exchanged for itself, every
      call succeeds (order status, item in the order, same product, availability, payment method of the
      customer, original method or gift card for refunds, gift-card balance, once per order), and the reply
      confirms every order changed. It never sees the gold actions or the required outputs, so a plan that
      runs cleanly but picks the wrong variant, order or payment method, misses or adds a write, or a reply
      missing the requested information passes it and fails the grader (the support ceiling). It counts
      what it evaluates (``n_passed`` / ``n_total``: one check per plan step, one for a non-empty reply, one
      per order change the reply must confirm; a ticket asking only for a figure has one) and bills each
      step that reaches the dry run as an ``api_call:internal``.
    - **Grader** (SUBMIT): the benchmark's reward, v1's definition (τ² without its LLM-judged parts). 1 if
      the hash of the database after running the plan equals the hash after replaying all gold actions on a
      fresh database (a failing call, gold or not, changes nothing), the reply is at most 1000 characters
      and every required output appears in it; else 0. By default an output must appear as a whole value and
      the reply may state no figure beyond the outputs and the figures of the plan's effect: ids the store
      checked in calls that succeeded and changed the database, and address text still stored at the end,
      never free text such as a transfer's summary (``output_match="strict"``: a reply listing candidate
      figures fails, wherever the plan carries them); ``output_match="substring"`` compares as v1 does (output
      lower-cased, reply lower-cased with commas removed). Both are reported. Both sides
      run the same tool code. (Older v1 commits checked only the outputs when a task had any; the current
      upstream checks both, as here. The published v1 train and dev tasks have no outputs.)
    - **Worker candidates**: the gold plan (gold writes and transfers that succeed) with a reply confirming
      each call and stating the outputs, and wrong plans: ``wrong_variant``, ``wrong_product``,
      ``wrong_item``, ``wrong_payment``, ``wrong_order``, ``wrong_reason``, ``wrong_address``,
      ``missing_write``, ``extra_write``, ``missing_output``.

    ## Action Space

    ``Discrete(7)``:

    | Num | Action   | In this domain |
    |-----|----------|----------------|
    | 0   | OBSERVE  | the customer's profile, then each of their orders, as the support console shows them |
    | 1   | RETRIEVE | the next-best unseen policy section or product catalogue page for the ticket (BM25) |
    | 2   | TOOL     | the worker calls a read tool, usually ``get_order_details`` / ``get_product_details`` |
    | 3   | DRAFT    | the worker writes a plan and a reply |
    | 4   | CHECK    | dry run of the plan plus the policy rules |
    | 5   | REVISE   | the worker fixes the plan using the checker's feedback |
    | 6   | SUBMIT   | executes the plan on the task's database and grades it; the episode ends |

    ## Observation Space

    ``Box(low, high, (F,), float32)``, the harness-state features shared by every domain:

    {observation_table}

    ## Rewards

    0 on every step except the last, where it is the benchmark reward of the submitted draft (0 or 1), minus
    ``cost_weight`` times the step's metered cost
    ``info["cost"]["units"]`` on every step (default 0).

    ## Starting State

    A ticket drawn uniformly from the split (or ``options["task_id"]``, e.g. ``"5"`` for τ² task 5), no
    evidence, no draft, the full budget.

    ## Episode End

    {episode_end}

    ## Info

    {info}

    ## Arguments

    ```python
    import gymnasium as gym
    env = gym.make("HarnessTauRetail-v2", data_dir=None, split="train", budget=30, cost_weight=0.0,
                   worker="simulated", profile="v2", sandbox="process", action_costs=None, render_mode=None,
                   prices="cheap-hosted", budget_units="auto")
    ```

    ``data_dir`` is a folder in either public layout (default: the synthetic store); ``output_match`` is
    ``"strict"`` (default) or ``"substring"`` (the benchmark's own comparison), see
    :mod:`~harness_gym.domains.tau_retail.grader`; the episode's last ``info`` holds both rewards
    (``reward_strict``, ``reward_substring``; -1 before the end, like ``quality``). The other keywords are those of
    :class:`~harness_gym.env.HarnessEnv`. Loading is cached per ``data_dir``.

    ## Example

    ```python
    >>> import gymnasium as gym, harness_gym
    >>> env = gym.make("HarnessTauRetail-v2", split="test")
    >>> obs, info = env.reset(seed=0)
    >>> for action in (0, 2, 1, 3, 4, 6):  # profile, a read tool, a policy page, draft, check, submit
    ...     obs, reward, terminated, truncated, info = env.step(action)
    >>> terminated, info["quality"] in (0.0, 1.0)
    (True, True)

    ```
    """

    def __init__(self, data_dir: str | Path | None = None, output_match: str = "strict", **kwargs: Any) -> None:
        if output_match not in OUTPUT_MATCHES:
            raise ValueError(f"output_match must be one of {OUTPUT_MATCHES}, got {output_match!r}")
        super().__init__(load_tau_retail_domain(None if data_dir is None else str(Path(data_dir).resolve())),
                         **kwargs)
        self.output_match = output_match
        self._final_rewards: dict[str, float] = {}

    def grade_draft(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: Any = None) -> float:
        """The reward under :attr:`output_match`; both matches are kept for the episode's last ``info``."""
        self._final_rewards = rewards(task.payload, draft.content)
        return self._final_rewards[self.output_match]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        self._final_rewards = dict.fromkeys(OUTPUT_MATCHES, 0.0)  # an episode ended without a draft scores 0
        obs, info = super().reset(seed=seed, options=options)
        info.update({f"reward_{match}": PENDING for match in OUTPUT_MATCHES})
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        final = self._final_rewards if terminated else {}
        info.update({f"reward_{match}": final.get(match, PENDING) for match in OUTPUT_MATCHES})
        return obs, reward, terminated, truncated, info
