"""HarnessPlan-v2 (and -v1, the earlier worker): the Harness MDP over the planning (scheduling) domain."""

from __future__ import annotations

from typing import Any

from harness_gym.core.env_class import document_env
from harness_gym.domains.plan.domain import load_plan_domain
from harness_gym.env import HarnessEnv


@document_env
class HarnessPlanEnv(HarnessEnv):
    """
    ## Description

    Planning: schedule 4-5 meetings into one-hour slots (two days, six slots a day) and rooms. Hard
    constraints, listed in the prompt as numbered rules: every meeting scheduled once, every attendee free in
    the slot, room capacity, no person or room double-booked, precedence ("M1 before M4"), deadlines ("M3 by
    Tue-11"); the ``ood`` split adds constraint types never seen in train/val/test: equipment requirements, a
    per-person daily meeting limit and room preferences. Soft constraints give a cost to minimise: unmet time
    preferences (morning, afternoon, a day) and idle slots between one person's meetings on a day. Templates: a
    team's week, an interview loop with its debrief, project reviews; ``ood``: a workshop series.

    Tasks differ in ways the prompt shows (the mix: ``harness_gym/domains/plan/generate.py`` and
    docs/domains.md): a third hand over every attendee's free slots, the room directory and the preferences
    (an ``Attached:`` block; no evidence needed), the others name people and rooms only, and need the calendars
    of 1 to 5 distinct attendees; in half of them the booking system's verifier checks only the rules it can
    know, and the prompt marks the business rules (precedence, deadlines, daily limit) ``(not verified)``.

    A draft is JSON: ``{"assignments": {meeting: {"slot": "Mon-09", "room": name}}}``.

    - **Corpus** (RETRIEVE, BM25 over title and text): one policy page per constraint type, the soft costs,
      the tools, the verifier, the plan format and a strategy page.
    - **Tools**: ``availability(person)`` (free slots; a calendar free/busy query, free in reality:
      ``api_call:free``), ``room_info(room)`` (capacity, equipment; the operator's room directory:
      ``api_call:internal``), ``dry_run(assignments)`` (the booking system's verifier, the one CHECK runs:
      ``api_call:internal``). Unknown people or rooms and malformed arguments are tool errors.
    - **Observations**: the room directory and the attendees' preferences come from the scheduling system
      (``api_call:internal`` each) unless the prompt attached them (free); the slot grid is free.
    - **Checker** (CHECK): the booking system's verifier (one ``api_call:internal``): it checks the verified
      rules, reports how many hold (``n_passed`` / ``n_total``, ``n_total`` = the rules the prompt does not mark
      ``(not verified)``) and names each violated rule with the meetings, people or rooms involved. It ignores
      preferences, so a valid but sub-optimal schedule passes the checker and scores below 1, and where
      business rules are not verified a schedule breaking one passes too and scores 0: the domain's support
      ceiling.
    - **Grader** (SUBMIT, hidden): 0 when any hard constraint is violated, else ``(1 + C*) / (1 + C)`` where
      ``C`` is the schedule's soft cost and ``C*`` the optimum found by the project's exact branch-and-bound
      solver. Success is quality >= 0.999 (an optimal schedule).

    ## Action Space

    ``Discrete(7)``:

    | Num | Action   | In this domain |
    |-----|----------|----------------|
    | 0   | OBSERVE  | reveals the room directory, then the soft preferences, then the calendar's slots |
    | 1   | RETRIEVE | the next-best unseen policy page for the task prompt (BM25) |
    | 2   | TOOL     | the worker calls a tool, usually ``availability`` of a tightly booked attendee |
    | 3   | DRAFT    | the worker writes a schedule |
    | 4   | CHECK    | runs the booking system's verifier (the verified hard rules) on the schedule |
    | 5   | REVISE   | the worker repairs the schedule using the named violations |
    | 6   | SUBMIT   | grades the schedule; the episode ends |

    ## Observation Space

    ``Box(low, high, (F,), float32)``, the harness-state features shared by every domain:

    {observation_table}

    ## Rewards

    0 on every step except the last, where it is the grade of the submitted schedule in [0, 1], minus
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
    env = gym.make("HarnessPlan-v2", data_dir=None, split="train", budget=30, cost_weight=0.0,
                   worker="simulated", profile="v2", sandbox="process", action_costs=None, render_mode=None,
                   prices="cheap-hosted", budget_units="auto")
    ```

    ``data_dir`` is a folder with ``corpus.jsonl`` and ``tasks.jsonl`` (default: the shipped
    ``envs_data/plan``, written by ``python -m harness_gym.domains.plan.generate``); the other keywords are
    those of :class:`~harness_gym.env.HarnessEnv`. No sandbox is opened: the tools are pure Python.

    ## Example

    ```python
    >>> import gymnasium as gym, harness_gym
    >>> env = gym.make("HarnessPlan-v2", split="test")
    >>> obs, info = env.reset(seed=0)
    >>> for action in (0, 0, 1, 2, 2, 3, 4, 6):  # rooms, preferences, a page, two calendars, draft, check, submit
    ...     obs, reward, terminated, truncated, info = env.step(action)
    >>> terminated, 0.0 <= info["quality"] <= 1.0
    (True, True)

    ```
    """

    def __init__(self, data_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(load_plan_domain(data_dir), **kwargs)
