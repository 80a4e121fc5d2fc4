"""HarnessKnowledge-v2 (and -v1, the earlier worker): the Harness MDP over the knowledge-work domain."""

from __future__ import annotations

from typing import Any

from harness_gym.core.env_class import document_env
from harness_gym.domains.knowledge.domain import load_knowledge_domain
from harness_gym.env import HarnessEnv


@document_env
class HarnessKnowledgeEnv(HarnessEnv):
    """
    ## Description

    Knowledge work: the worker compiles a structured, cited record about a fictional entity (a company, a
    person, or, in the ``ood`` split only, a product) from dated source documents. A third of the records (every
    split) have one authoritative source stating every field; two thirds have sources that disagree: older
    authoritative sources hold stale values, newer ones update some fields, forum posts and rumour columns
    contradict them (FreshQA's share of never-changing to changing answers,
    :mod:`harness_gym.domains.knowledge.generate`). The prompt shows which: it lists the 3-4 or 5-6 fields it asks
    for and, for a record whose sources disagree, names the period ("as of 2019"). A confusable sibling entity
    has sources of its own. The rule: for each field, the value of the most recently dated *authoritative*
    source wins.

    A draft is JSON: ``{"entity": E, "values": {field: value}, "citations": {field: doc_id}}``.

    - **Corpus** (RETRIEVE, BM25 over title and text): about 1000 source documents, the task entity's
      sources, its sibling's and every other task's.
    - **Tools**: ``search(query, k)`` (BM25 hits), ``lookup_source(doc_id)`` (full text, date, source kind),
      ``get_field_history(entity, field)`` (every dated statement of a field, with authority). Arguments are
      validated against JSON schemas; unknown entities, fields and doc ids are tool errors. They stand for the
      operator's document store, an internal service (``api_call:internal`` per call).
    - **Checker** (CHECK): one validation of the record's envelope and one per field (present, typed, within
      its enum, cited to a source that exists, is about the entity and states the value): it reports how many
      of these ``1 + fields`` passed and bills one document-store read per cited source. Feedback names the
      offending fields. A stale or rumoured value cited to the source that stated it passes the checker and
      fails the grader: the domain's support ceiling (none on single-source records).
    - **Grader** (SUBMIT, hidden): field-level accuracy; a field counts when its value equals the newest
      authoritative value and it cites an authoritative source about the entity stating that value.
      Success is a fully correct record (quality 1).

    ## Action Space

    ``Discrete(7)``:

    | Num | Action   | In this domain |
    |-----|----------|----------------|
    | 0   | OBSERVE  | reveals the record schema, then the field rules, then a disambiguation note |
    | 1   | RETRIEVE | the next-best unseen source for the task prompt (BM25) |
    | 2   | TOOL     | the worker calls a tool, usually ``get_field_history`` on a conflicting field |
    | 3   | DRAFT    | the worker writes a record from the evidence gathered |
    | 4   | CHECK    | schema + citation checker on the current record |
    | 5   | REVISE   | the worker fixes the record using the checker's feedback |
    | 6   | SUBMIT   | grades the record; the episode ends |

    ## Observation Space

    ``Box(low, high, (F,), float32)``, the harness-state features shared by every domain:

    {observation_table}

    ## Rewards

    0 on every step except the last, where it is the field-level accuracy of the submitted record in [0, 1],
    minus ``cost_weight`` times the step's metered cost ``info["cost"]["units"]`` on every step (default 0).

    ## Starting State

    A task drawn uniformly from the split (or ``options["task_id"]``), no evidence, no draft, the full budget.

    ## Episode End

    {episode_end}

    ## Info

    {info}

    ## Arguments

    ```python
    import gymnasium as gym
    env = gym.make("HarnessKnowledge-v2", data_dir=None, split="train", budget=30, cost_weight=0.0,
                   worker="simulated", profile="v2", sandbox="process", action_costs=None, render_mode=None,
                   prices="cheap-hosted", budget_units="auto")
    ```

    ``data_dir`` is a folder with ``sources.jsonl`` and ``tasks.jsonl`` (default: the shipped
    ``envs_data/knowledge``); the other keywords are those of :class:`~harness_gym.env.HarnessEnv`.

    ## Example

    ```python
    >>> import gymnasium as gym, harness_gym
    >>> env = gym.make("HarnessKnowledge-v2", split="test")
    >>> obs, info = env.reset(seed=0)
    >>> for action in (0, 0, 1, 1, 2, 3, 4, 6):  # schema, rules, two sources, a field history, draft, check, submit
    ...     obs, reward, terminated, truncated, info = env.step(action)
    >>> terminated, 0.0 <= info["quality"] <= 1.0
    (True, True)

    ```
    """

    def __init__(self, data_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(load_knowledge_domain(data_dir), **kwargs)
