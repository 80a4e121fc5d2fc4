"""HarnessResearchQA-v2 (and -v1, the earlier worker): the Harness MDP over the research-QA domain."""

from __future__ import annotations

from typing import Any

from harness_gym.core.env_class import document_env
from harness_gym.domains.research_qa.domain import load_research_qa_domain
from harness_gym.env import HarnessEnv


@document_env
class HarnessResearchQAEnv(HarnessEnv):
    """
    ## Description

    Research QA: reading-comprehension and 1- to 3-hop questions over the encyclopedia of a generated fictional
    world (regions, cities, people, organisations, universities and events, linked by relations such as
    ``founded_by``, ``born_in``, ``works_for``). Every name is invented, so no answer can come from a model's prior
    knowledge: it must be read from the passage the question came with or traced through the articles. Example:
    *"In which city was the person who founded Kikia Labs born?"* needs the article on Kikia Labs (founded by Saiho
    Hiastein) and the one on Saiho Hiastein. The task mix (every split): a quarter of the prompts carry the passage
    that answers a 1-hop question (no evidence needed), a quarter ask a 1-hop question, and half ask 2- or 3-hop
    ones in MuSiQue's proportions (:mod:`harness_gym.domains.research_qa.generate`); whether a passage is given and
    how many relations the question chains are visible in the prompt. The ``ood`` split asks templates whose
    relations (``parent_company``, ``held_in``, ``located_in``, ``population``) occur in no train/val/test
    question.

    - **Corpus** (RETRIEVE, BM25): one article per entity (about 230). Retrieval is multi-hop: after the
      first article, the query is the question's remaining content words plus the bridge names from the
      retrieved articles' best-matching sentences. The relevant documents are the articles on the hop chain.
    - **Tools**: ``lookup_entity(name)`` (the infobox: kind, relations, attributes) and
      ``query_relation(entity, relation)`` (one edge or attribute of the world graph). Unknown names and
      relations are tool errors with suggestions. They stand for a public knowledge-graph API and cost nothing
      (``api_call:free``).
    - **Checker**: none. CHECK is the worker's own self-check, which passes correct answers with probability
      ``selfcheck_tpr`` and wrong ones with ``selfcheck_fpr`` (see ``envs_data/profiles/research_qa.json``)
      and names nothing (specificity 0.1). Revising after a false alarm can break a correct answer, so
      checking helps little here: that follows from the mechanics, not from a rule.
    - **Grader** (SUBMIT, hidden): max(exact match, token F1) of the normalised answer against the gold one.
      Success is an exact match (quality 1). Wrong candidates: an intermediate entity of the chain, the
      answer reached through a confusable relation, a sibling of the answer, a partially right answer.

    ## Action Space

    ``Discrete(7)``:

    | Num | Action   | In this domain |
    |-----|----------|----------------|
    | 0   | OBSERVE  | reveals the answer format, then the graph's relation vocabulary |
    | 1   | RETRIEVE | the next-best unseen article for the (hop-expanded) question (BM25) |
    | 2   | TOOL     | the worker calls a tool, usually ``query_relation`` on the next hop |
    | 3   | DRAFT    | the worker writes an answer from the evidence gathered |
    | 4   | CHECK    | the worker's noisy self-check of its answer |
    | 5   | REVISE   | the worker re-answers after its self-check failed |
    | 6   | SUBMIT   | grades the answer; the episode ends |

    ## Observation Space

    ``Box(low, high, (F,), float32)``, the harness-state features shared by every domain:

    {observation_table}

    ## Rewards

    0 on every step except the last, where it is max(EM, F1) of the submitted answer in [0, 1], minus
    ``cost_weight`` times the step's metered cost
    ``info["cost"]["units"]`` on every step (default 0).

    ## Starting State

    A question drawn uniformly from the split (or ``options["task_id"]``), no evidence, no draft, the full
    budget.

    ## Episode End

    {episode_end}

    ## Info

    {info}

    ## Arguments

    ```python
    import gymnasium as gym
    env = gym.make("HarnessResearchQA-v2", data_dir=None, split="train", budget=30, cost_weight=0.0,
                   worker="simulated", profile="v2", sandbox="process", action_costs=None, render_mode=None,
                   prices="cheap-hosted", budget_units="auto")
    ```

    ``data_dir`` is a folder with ``articles.jsonl`` and ``tasks.jsonl`` (default: the shipped
    ``envs_data/research_qa``); the other keywords are those of :class:`~harness_gym.env.HarnessEnv`.

    ## Example

    ```python
    >>> import gymnasium as gym, harness_gym
    >>> env = gym.make("HarnessResearchQA-v2", split="test")
    >>> obs, info = env.reset(seed=0)
    >>> for action in (0, 1, 1, 2, 2, 3, 6):  # format, two articles, two hops, answer, submit
    ...     obs, reward, terminated, truncated, info = env.step(action)
    >>> terminated, 0.0 <= info["quality"] <= 1.0
    (True, True)

    ```
    """

    def __init__(self, data_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(load_research_qa_domain(data_dir), **kwargs)
