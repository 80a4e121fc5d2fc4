"""harness_gym: Gymnasium environments where an RL controller learns the control flow of an LLM agent.

Importing the package registers every env id (see :data:`ENV_IDS`)::

    import gymnasium as gym
    env = gym.make("harness_gym:HarnessCode-v2")

Each domain has two versions of one code (Gymnasium's rule: a changed MDP is a new version):

- ``-v2`` (:data:`ENV_IDS`, the default to pick): the simulated worker pinned to published measurements of real
  models, ``profile="v2"`` (``envs_data/profiles/v2``; the fidelity cards in ``envs_data/fidelity`` and
  ``benchmarks/fidelity.py``): task-persistent failures, repair that decays by round and cannot supply missing
  evidence, irrelevant context that costs accuracy;
- ``-v1`` (:data:`ENV_IDS_V1`): the earlier worker (``envs_data/profiles/<domain>.json``), kept with its numbers
  (``benchmarks/step_digest.py`` prints the same digests for it).

:data:`TIERED_ENV_IDS` (``Harness<Name>Tiered-v2``, :mod:`harness_gym.tiered`, docs/cascade.md) are ``-v2`` envs of
some domains with a second, frontier-tier worker and its own actions: a different action space, so their own ids,
outside :data:`ENV_IDS`.

The package, from the ground floor up: :mod:`~harness_gym.core` (the MDP's pieces, the Domain contract, prices,
where ``envs_data`` lives), :mod:`~harness_gym.sandbox`, :mod:`~harness_gym.workers`, :mod:`~harness_gym.budget`
(the cost budget of ``budget_units="auto"``), :mod:`~harness_gym.env` (the MDP), :mod:`~harness_gym.domains`
(one package per env), :mod:`~harness_gym.running` (playing episodes: one, many in processes or on Ray, SB3
vector envs) and :mod:`~harness_gym.datasets` (Minari datasets collected with :mod:`~harness_gym.running`).
"""

from __future__ import annotations

import warnings

import gymnasium as gym

from harness_gym.core.actions import Action
from harness_gym.env import MAX_BUDGET, HarnessEnv

__version__ = "0.1.0"

_ENTRY_POINTS: dict[str, str] = {
    "HarnessCode": "harness_gym.domains.code.env:HarnessCodeEnv",
    "HarnessKnowledge": "harness_gym.domains.knowledge.env:HarnessKnowledgeEnv",
    "HarnessResearchQA": "harness_gym.domains.research_qa.env:HarnessResearchQAEnv",
    "HarnessMultiTool": "harness_gym.domains.multitool.env:HarnessMultiToolEnv",
    "HarnessData": "harness_gym.domains.data.env:HarnessDataEnv",
    "HarnessPlan": "harness_gym.domains.plan.env:HarnessPlanEnv",
    "HarnessTauRetail": "harness_gym.domains.tau_retail.env:HarnessTauRetailEnv",
    "HarnessDBBench": "harness_gym.domains.dbbench.env:HarnessDBBenchEnv",
}
VERSION_KWARGS: dict[str, dict[str, str]] = {"v1": {}, "v2": {"profile": "v2"}}
"""What each registered version passes to the env: ``-v2`` ids use the worker profile set ``"v2"``."""

ENV_IDS: tuple[str, ...] = tuple(f"{name}-v2" for name in _ENTRY_POINTS)
"""The current env ids, one per domain (``-v2``)."""
ENV_IDS_V1: tuple[str, ...] = tuple(f"{name}-v1" for name in _ENTRY_POINTS)
"""The ``-v1`` ids: the same envs with the earlier worker, kept with their numbers."""
ALL_ENV_IDS: tuple[str, ...] = ENV_IDS + ENV_IDS_V1
"""Every registered id."""



def register_env(name: str, entry_point: str) -> tuple[str, ...]:
    """Register ``<name>-v1`` and ``<name>-v2`` as every shipped env is registered (:data:`VERSION_KWARGS`: the
    ``-v2`` id passes ``profile="v2"``, read from ``profiles/v2/<domain>.json`` in the domain's assets folder), each
    once, and return the ids. A domain outside the package calls it once (docs/extending.md, "A new domain").

    :param name: the id without its version, e.g. ``"HarnessLetters"``
    :param entry_point: ``"module:EnvClass"``
    """
    ids = tuple(f"{name}-{version}" for version in VERSION_KWARGS)
    for env_id, kwargs in zip(ids, VERSION_KWARGS.values()):
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, max_episode_steps=MAX_BUDGET, kwargs=dict(kwargs))
    return ids


for _name, _entry in _ENTRY_POINTS.items():
    register_env(_name, _entry)

# -v1 is a kept preset with its own published numbers, not a mistake to warn about on every make (the docs and
# ENV_IDS point to -v2): Gymnasium's "is out of date" warning is silenced for these ids only
warnings.filterwarnings("ignore", message=r".*The environment Harness[A-Za-z]+-v1 is out of date",
                        category=DeprecationWarning)

__all__ = ["Action", "HarnessEnv", "ENV_IDS", "ENV_IDS_V1", "ALL_ENV_IDS", "VERSION_KWARGS", "register_env",
           "__version__"]

from harness_gym.tiered import TIERED_ENV_IDS, register_tiered  # noqa: E402 -- needs the base ids registered above

register_tiered(_ENTRY_POINTS)
__all__ += ["TIERED_ENV_IDS"]
