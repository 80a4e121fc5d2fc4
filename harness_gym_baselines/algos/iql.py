"""Implicit Q-Learning (offline, discrete actions) of a harness controller from a Minari rollout buffer.

Kostrikov, Nair and Levine, 2021, https://arxiv.org/abs/2110.06169, in CORL's single-file shape
(https://github.com/tinkoff-ai/CORL, ``algorithms/offline/iql.py``) for the seven harness actions. Unlike AWR
(:mod:`harness_gym_baselines.algos.awr`), whose value is the behaviour's Monte-Carlo return, IQL learns a
multi-step improvement from one-step transitions without ever querying an action the buffer did not take:

1. V(s) is fitted by expectile regression on the target twin Q of the logged action,
   ``L_V = E[|tau - 1(u < 0)| * u^2]``, ``u = min(Q1', Q2')(s, a) - V(s)``; with ``tau > 0.5`` V approaches the
   best Q among the actions the buffer holds in s (``tau = 0.5`` is the mean: SARSA's value of the behaviour);
2. Q1, Q2 are fitted to ``r + gamma * (1 - terminal) * V(s')``, their targets follow by Polyak averaging;
3. the policy is extracted by advantage-weighted likelihood of the logged actions, weights
   ``min(exp(beta * (Q(s, a) - V(s))), weight_max)`` with the target twin Q, over the applicable actions.

Steps 1-2 never read the policy, so step 3 runs after them on fixed weights (the paper's note that extraction
can follow value learning) through the likelihood fit BC and AWR share (same network, optimiser and minibatch
order: ``beta = 0`` is behaviour cloning). Acting is the masked argmax of every learned controller.

Defaults: gamma 0.99, Polyak rate 0.005, value learning rate 3e-4, batch 256 and the weight clip 100 are the
paper's and CORL's; expectile 0.9 and beta 10 are the paper's AntMaze setting, whose sparse 0/1 goal reward is
the closest of its benchmarks to a terminal quality in [0, 1] (its locomotion setting, CORL's default, is 0.7
and 3). The policy fit keeps BC's settings (30 epochs, learning rate 1e-3) so that the three learners differ
only in their weights.

Run ``harness-gym train iql --dataset ID --out FILE [--expectile 0.9] [--beta 10]`` (``python -m
harness_gym_baselines.algos.iql`` runs the same command).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from harness_gym.datasets import Transitions
from harness_gym_baselines.algos.awr import advantage_weights
from harness_gym_baselines.algos.offline_common import (
    check_ranges,
    finish,
    fit_policy,
    minibatches,
    polyak_update,
    progress_bar,
    require_columns,
    start_run,
    taken,
)
from harness_gym_baselines.policies.learned import MLP, LearnedPolicy, load_policy


@dataclass
class IQLConfig:
    """The settings of IQL; each field is a flag of ``harness-gym train iql`` (BC's fields with BC's defaults for the
    policy network and its fit, then the value learning and weighting)."""

    dataset_id: str = field(default="harness/code-behaviour-v0", metadata={"flags": ("--dataset",),
                                                                          "required": True})
    """the Minari dataset to learn from"""
    out: str = "models/iql.pt"
    """where the model file is written"""
    seed: int = 0
    """seed of random, numpy and torch (initialisation and minibatch order)"""
    batch_size: int = 256
    """transitions per gradient step"""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """widths of the hidden layers of the MLPs (policy, and value or Q where the trainer has them)"""
    eval_episodes: int = 50
    """episodes of the final evaluation logged under eval/ (0: none)"""
    eval_split: Literal["train", "val", "test", "ood"] = "val"
    """task split of that evaluation"""
    log_dir: str = "runs"
    """TensorBoard log folder; each run is {env_id}__{algo}[-{variant}]__{seed}__{time} in it"""
    variant: str = ""
    """label of the run's variant in its name (e.g. ablation), so that runs of one trainer tell apart"""
    wandb: bool = False
    """also log the run to Weights & Biases (needs the wandb package; TensorBoard stays on)"""
    wandb_project: str = "harness_gym"
    """the W&B project of --wandb runs"""
    progress: bool = True
    """show a progress bar over the training epochs"""
    torch_threads: int = 1
    """CPU threads torch may use"""
    epochs: int = 30
    """passes over the dataset"""
    learning_rate: float = 1e-3
    """Adam learning rate"""
    expectile: float = 0.9
    """expectile tau of V's regression on Q, in (0, 1): 0.5 is the behaviour's mean value, towards 1 its best action"""
    beta: float = 10.0
    """inverse temperature: weights are exp(beta * (Q - V)); 0 is behaviour cloning"""
    weight_max: float = 100.0
    """clip of the weights, so a few large advantages cannot dominate"""
    gamma: float = 0.99
    """discount of the one-step target r + gamma * V(s')"""
    value_steps: int = 5000
    """gradient steps of the Q and V fit (one minibatch each)"""
    value_learning_rate: float = 3e-4
    """Adam learning rate of Q1, Q2 and V"""
    target_update_rate: float = 0.005
    """Polyak rate of the target Q networks after each step"""


def check_config(cfg: IQLConfig) -> None:
    """Raise ``ValueError`` naming the first setting of ``cfg`` outside its range."""
    ranges: dict[str, tuple[bool, str]] = {"expectile": (0.0 < cfg.expectile < 1.0, "in (0, 1)"), "beta": (cfg.beta >= 0.0, ">= 0"),
              "weight_max": (cfg.weight_max > 0.0, "> 0"), "gamma": (0.0 <= cfg.gamma <= 1.0, "in [0, 1]"),
              "value_steps": (cfg.value_steps >= 0, ">= 0"),
              "target_update_rate": (0.0 < cfg.target_update_rate <= 1.0, "in (0, 1]")}
    check_ranges(cfg, ranges)


def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    """``E[|expectile - 1(diff < 0)| * diff^2]`` for ``diff = target - prediction``: the asymmetric squared
    error whose minimiser is the ``expectile``-expectile of the targets (the mean at 0.5).

    :param diff: target minus prediction, any shape
    :param expectile: the expectile in (0, 1)
    """
    weight = torch.where(diff < 0, 1.0 - expectile, expectile)
    return (weight * diff.square()).mean()


def train(cfg: IQLConfig, data: Transitions | None = None) -> LearnedPolicy:
    """Fit twin Q and an expectile V on the one-step transitions, extract the policy by advantage-weighted
    likelihood, save it to ``cfg.out`` and return it.

    :param cfg: the configuration
    :param data: the transitions to learn from (default: all of ``cfg.dataset_id``); they need ``rewards``,
        ``next_observations`` and ``terminals`` (:func:`harness_gym.datasets.load_transitions` gives them)
    """
    check_config(cfg)
    data, writer, t = start_run(cfg, "iql", data)
    require_columns(t, ("rewards", "next_obs", "terminals"), "IQL")
    n, obs_dim, n_actions = len(data), t["obs"].shape[1], t["masks"].shape[1]

    # the policy is built first so that its initialisation equals BC's with the same seed
    policy_net = MLP(obs_dim, n_actions, cfg.hidden_sizes)
    q_nets = [MLP(obs_dim, n_actions, cfg.hidden_sizes) for _ in range(2)]
    q_targets = [copy.deepcopy(q).requires_grad_(False) for q in q_nets]
    value_net = MLP(obs_dim, 1, cfg.hidden_sizes)
    q_opt = torch.optim.Adam([p for q in q_nets for p in q.parameters()], lr=cfg.value_learning_rate)
    value_opt = torch.optim.Adam(value_net.parameters(), lr=cfg.value_learning_rate)

    def target_q(obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return torch.minimum(*(taken(q(obs), actions) for q in q_targets))

    # 1-2. V by expectile regression on the target Q, then Q on r + gamma * V(s'), then the Polyak update
    value_rng = np.random.default_rng(cfg.seed + 1)
    batches_per_epoch = max(1, n // cfg.batch_size)
    step = 0
    for _ in progress_bar(range(math.ceil(cfg.value_steps / batches_per_epoch)), cfg, "q, value"):
        for idx in minibatches(value_rng, n, cfg.batch_size)[:cfg.value_steps - step]:
            obs, actions = t["obs"][idx], t["actions"][idx]
            value_loss = expectile_loss(target_q(obs, actions) - value_net(obs).squeeze(-1), cfg.expectile)
            value_opt.zero_grad()
            value_loss.backward()
            value_opt.step()

            with torch.no_grad():
                next_value = value_net(t["next_obs"][idx]).squeeze(-1)
                q_target = t["rewards"][idx] + cfg.gamma * (1.0 - t["terminals"][idx]) * next_value
            q_loss = sum(torch.nn.functional.mse_loss(taken(q(obs), actions), q_target) for q in q_nets)
            q_opt.zero_grad()
            q_loss.backward()
            q_opt.step()

            polyak_update(q_nets, q_targets, cfg.target_update_rate)
            step += 1
        writer.add_scalar("losses/value_loss", value_loss.item(), step)
        writer.add_scalar("losses/q_loss", q_loss.item(), step)

    # 3. advantage-weighted maximum likelihood of the logged actions (weights fixed from here on)
    with torch.no_grad():
        advantages = target_q(t["obs"], t["actions"]) - value_net(t["obs"]).squeeze(-1)
    weights = advantage_weights(advantages, 1.0 / cfg.beta if cfg.beta > 0 else math.inf, cfg.weight_max)
    writer.add_scalar("charts/advantage_std", advantages.std().item(), step)
    writer.add_scalar("charts/weight_mean", weights.mean().item(), step)
    writer.add_scalar("charts/weight_clipped_fraction", (weights >= cfg.weight_max).float().mean().item(), step)
    step = fit_policy(policy_net, t, weights, epochs=cfg.epochs, batch_size=cfg.batch_size,
                      learning_rate=cfg.learning_rate, seed=cfg.seed, writer=writer, progress=cfg.progress)
    return finish(cfg, "iql", policy_net, data, writer, step)


def load(path: str | Path) -> LearnedPolicy:
    """The controller in a model file that :func:`train` wrote (bc's format, :mod:`harness_gym_baselines.policies.learned`)."""
    return load_policy(path)


if __name__ == "__main__":  # the same as harness-gym train iql (one way to run a trainer)
    from harness_gym_baselines.common.trainer_registry import run_trainer

    run_trainer("iql")
