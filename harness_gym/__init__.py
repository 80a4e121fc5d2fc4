"""harness_gym: Gymnasium environments where an RL controller learns the control flow of an LLM agent.

Importing the package registers every env id (see :data:`ENV_IDS`)::

    import gymnasium as gym
    env = gym.make("harness_gym:HarnessCode-v1")
"""

from __future__ import annotations

import gymnasium as gym

from harness_gym.core.actions import Action
from harness_gym.env import MAX_BUDGET, HarnessEnv

__version__ = "0.1.0"

_ENTRY_POINTS: dict[str, str] = {
    "HarnessCode-v1": "harness_gym.domains.code.env:HarnessCodeEnv",
    "HarnessKnowledge-v1": "harness_gym.domains.knowledge.env:HarnessKnowledgeEnv",
    "HarnessResearchQA-v1": "harness_gym.domains.research_qa.env:HarnessResearchQAEnv",
    "HarnessMultiTool-v1": "harness_gym.domains.multitool.env:HarnessMultiToolEnv",
    "HarnessData-v1": "harness_gym.domains.data.env:HarnessDataEnv",
    "HarnessPlan-v1": "harness_gym.domains.plan.env:HarnessPlanEnv",
    "HarnessTauRetail-v1": "harness_gym.domains.tau_retail.env:HarnessTauRetailEnv",
    "HarnessDBBench-v1": "harness_gym.domains.dbbench.env:HarnessDBBenchEnv",
}
ENV_IDS: tuple[str, ...] = tuple(_ENTRY_POINTS)

for _env_id, _entry in _ENTRY_POINTS.items():
    if _env_id not in gym.registry:
        gym.register(id=_env_id, entry_point=_entry, max_episode_steps=MAX_BUDGET)

__all__ = ["Action", "HarnessEnv", "ENV_IDS", "__version__"]
