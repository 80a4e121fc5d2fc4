"""PPO baselines of a harness controller, online: MaskablePPO on the terminal quality (``ppo-sparse``) or on
hand-shaped step rewards (``ppo-dense``).

Schulman et al., 2017, https://arxiv.org/abs/1707.06347, as sb3-contrib's ``MaskablePPO`` (Huang & Ontañón,
2020, https://arxiv.org/abs/2006.14171) with the env's action masks. These are the first two baselines the
evidence-calibrated method (:mod:`harness_gym_baselines.algos.ecpo`, docs/ecpo.md) is compared with:

- ``reward="sparse"``: the env's own reward, the task quality Q paid on the last step (minus the cost term
  when the env was built with a ``cost_weight``);
- ``reward="dense"``: the same plus the hand-shaped step rewards of the usual kind (the seed blog's
  "small reward for an import that works, a little more for syntactically correct code"), fixed before any
  run and read only from what the controller sees (the observation and ``info["evidence"]``):

  | event | shaped reward |
  |---|---|
  | an OBSERVE / RETRIEVE that revealed something | +0.02 |
  | a TOOL call that returned without an error | +0.05 |
  | a TOOL call that returned an error | -0.1 |
  | a DRAFT / REVISE whose content agrees with the knowledge base (``knowledge`` = +1) | +0.1 |
  | the first CHECK of a draft version, when it passes | +0.1 |
  | an inapplicable action (a no-op) | -0.05 |

The file reads top to bottom: the config (one flat dataclass; ``ppo-sparse`` and ``ppo-dense`` are its two
presets, which fix ``reward``), the dense shaping, ``train``. What the online trainers share (the vector env,
the learner, the periodic evaluation on the validation split, the model file) is
:mod:`harness_gym_baselines.algos.online_common`. The model file is an SB3 zip that ``harness-gym eval ENV
--policy FILE`` runs (:mod:`harness_gym_baselines.policies.sb3_zip`).

Run ``harness-gym train ppo-sparse --env ENV --steps N --seed S --out FILE`` (or ``ppo-dense``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from stable_baselines3.common.logger import configure

from harness_gym.core.actions import Action
from harness_gym.core.prices import DEFAULT_PROFILE
from harness_gym.core.state import FEATURE_NAMES
from harness_gym_baselines.algos.online_common import (
    TransitionRewardWrapper,
    ValidationEvalCallback,
    config_env_kwargs,
    final_report,
    learn_callbacks,
    make_model,
    make_training_env,
    run_name,
    save_model,
)
from harness_gym_baselines.algos.seeding import seed_everything
from harness_gym_baselines.common.dataclass_flags import preset_config
from harness_gym_baselines.common.options import budget_units_value, prices_name
from harness_gym_baselines.policies.sb3_zip import SB3Policy, load_sb3_policy

_F = {name: i for i, name in enumerate(FEATURE_NAMES)}


@dataclass
class PPOConfig:
    """The settings of PPO; each field is a flag of ``harness-gym train ppo-sparse`` / ``ppo-dense`` (the presets
    :data:`PPOSparseConfig` and :data:`PPODenseConfig` fix ``reward``)."""

    env_id: str = field(default="HarnessResearchQA-v1", metadata={"flags": ("--env",), "required": True})
    """the env id to train on (episodes are drawn from its train split)"""
    steps: int = 40_000
    """environment steps of training (summed over the parallel envs); the default was chosen on the val split,
    the same for every env (docs/online_rl.md)"""
    out: str = "models/ppo.zip"
    """where the model (an SB3 zip) is written"""
    seed: int = 0
    """seed of random, numpy, torch, the envs and the evaluation episodes"""
    cost_weight: float = 0.0
    """the env's ``cost_weight`` (the reward then includes the cost term)"""
    prices: str = field(default=DEFAULT_PROFILE, metadata={"type": prices_name, "metavar": "PROFILE"})
    """the env's price profile BASE[+OVERLAY...] (docs/cost.md), which the cost term and the budget are billed at"""
    budget_units: float | str | None = field(default="auto", metadata={"type": budget_units_value,
                                                                       "metavar": "auto|none|UNITS"})
    """the env's cost budget per episode in units of US$0.0001: auto (twice the largest episode cost of the
    reference controllers at the profile's prices; none in the public-benchmark adapters; docs/cost.md), none (the
    step budget alone) or a number"""
    env_kwargs: tuple[str, ...] = field(default=(), metadata={"flags": ("--env-kwarg",), "repeat": True,
                                                                    "metavar": "KEY=VALUE"})
    """more keywords of the training and evaluation envs, KEY=VALUE (VALUE read as JSON when it parses; the flag
    repeated, --env-kwarg budget=40 --env-kwarg data_dir=PATH, as on every command)"""
    n_envs: int = field(default=4, metadata={"flags": ("--num-envs",)})
    """envs stepped together (a rollout step sends one worker call per env)"""
    vec_env: Literal["dummy", "subproc"] = "dummy"
    """"dummy": the envs step one after another in this process (SB3's DummyVecEnv); "subproc": one process
    each (:func:`harness_gym.running.sb3.make_sb3_vec_env`), so a live LLM worker's calls and slow tools
    overlap. Both give the same training for the same seed."""
    n_steps: int = 128
    """steps per env per rollout (a PPO update uses n_envs * n_steps transitions)"""
    batch_size: int = 128
    """transitions per minibatch"""
    n_epochs: int = 10
    """passes over each rollout (chosen on the val split with n_steps and steps, docs/online_rl.md)"""
    learning_rate: float = 3e-4
    """Adam learning rate"""
    gamma: float = 0.99
    """discount factor"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    clip_range: float = 0.2
    """PPO clipping parameter"""
    ent_coef: float = 0.01
    """entropy bonus coefficient"""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """widths of the policy's and the value's hidden layers"""
    eval_every: int = 4
    """run an evaluation on the validation split every this many PPO updates (0: none)"""
    eval_episodes: int = 30
    """episodes of each evaluation during training (the current policy, sampling as in training)"""
    final_eval_episodes: int = 50
    """episodes of the final evaluation of the trained (deterministic) policy on eval_split, which harness-gym
    train prints (0: none)"""
    eval_split: Literal["train", "val", "test", "ood"] = "val"
    """task split of the final evaluation"""
    progress: bool = True
    """show a progress bar over the training steps (on stderr)"""
    log_dir: str = "runs"
    """TensorBoard log folder (run name {env_id}__{algo}__{seed}__{time})"""
    torch_threads: int = 1
    """CPU threads torch may use"""
    reward: Literal["sparse", "dense"] = "sparse"
    """the env's reward (sparse) or that plus the hand-shaped step rewards of the module docstring (dense)"""


PPOSparseConfig = preset_config(
    PPOConfig, "PPOSparseConfig", fixed={"reward": "sparse"}, out="models/ppo-sparse.zip",
    summary="PPO on the task reward only (the terminal quality, minus the cost term where the env has one): the "
            "sparse baseline of docs/ecpo.md. Everything else is :mod:`harness_gym_baselines.algos.ppo`.")
"""``harness-gym train ppo-sparse``: :class:`PPOConfig` with the env's reward"""
PPODenseConfig = preset_config(
    PPOConfig, "PPODenseConfig", fixed={"reward": "dense"}, out="models/ppo-dense.zip",
    summary="PPO on the task reward plus hand-shaped step rewards of the usual kind (the table in "
            ":mod:`harness_gym_baselines.algos.ppo`): the dense baseline of docs/ecpo.md. Everything else is "
            ":mod:`harness_gym_baselines.algos.ppo`.")
"""``harness-gym train ppo-dense``: :class:`PPOConfig` with the env's reward plus the shaped step rewards"""


class DenseShapingReward(TransitionRewardWrapper):
    """Adds the hand-shaped step rewards of the module docstring's table to the env's reward.

    Observations, dones and infos pass through untouched.

    :param venv: the training env
    """

    def transition_rewards(self, prev_obs: np.ndarray, actions: np.ndarray, obs: np.ndarray, rewards: np.ndarray,
                           dones: np.ndarray, infos: list[dict]) -> np.ndarray:
        shaped = np.asarray(rewards, dtype=np.float32).copy()
        for i, info in enumerate(infos):
            shaped[i] += dense_step_reward(int(actions[i]), info, prev_obs[i], obs[i], bool(dones[i]))
        return shaped


def dense_step_reward(action: int, info: dict[str, Any], prev_obs: np.ndarray, obs: np.ndarray,
                      done: bool) -> float:
    """The hand-shaped reward of one step (the module docstring's table).

    :param action: the action taken
    :param info: the step's info
    :param prev_obs: the observation the action was taken in
    :param obs: the observation after the step (the next episode's first one when ``done``)
    :param done: the step ended the episode
    """
    if info["invalid_action"]:
        return -0.05
    act = Action(action)
    if act in (Action.OBSERVE, Action.RETRIEVE):
        return 0.02
    if act == Action.TOOL:
        return 0.05 if info["evidence"]["env"] >= 0 else -0.1
    if act in (Action.DRAFT, Action.REVISE):
        return 0.1 if info["evidence"]["knowledge"] > 0 else 0.0
    if act == Action.CHECK and not done and prev_obs[_F["checked_since_change"]] == 0:
        return 0.1 if obs[_F["last_check_result"]] > 0 else 0.0
    return 0.0


def train(cfg: PPOConfig, data: Any = None) -> SB3Policy:
    """Train MaskablePPO on the sparse or dense reward, save the zip to ``cfg.out`` and return the controller.

    :param cfg: the configuration
    :param data: must be ``None`` (an online trainer learns from the env, not from a dataset)
    """
    if data is not None:
        raise ValueError("ppo is an online trainer: it takes no dataset")
    algo = f"ppo-{cfg.reward}"
    seed_everything(cfg.seed, cfg.torch_threads)
    env_kwargs = config_env_kwargs(cfg)
    venv = make_training_env(cfg)
    if cfg.reward == "dense":
        venv = DenseShapingReward(venv)
    model = make_model(cfg, venv)
    log_dir = f"{cfg.log_dir}/{run_name(cfg, algo)}"
    model.set_logger(configure(log_dir, ["tensorboard"]))
    callback = ValidationEvalCallback(cfg.env_id, env_kwargs, eval_every=cfg.eval_every,
                                      episodes=cfg.eval_episodes, seed=cfg.seed)
    start = time.perf_counter()
    model.learn(total_timesteps=cfg.steps, callback=learn_callbacks(cfg, callback))
    train_seconds = time.perf_counter() - start
    venv.close()
    save_model(model, cfg, algo, eval_history=callback.history, train_seconds=train_seconds)
    return final_report(SB3Policy(model, name=algo), cfg, env_kwargs, log_dir)


def load(path: str | Path) -> SB3Policy:
    """The controller in a model file that :func:`train` wrote (:mod:`harness_gym_baselines.policies.sb3_zip`)."""
    return load_sb3_policy(path)
