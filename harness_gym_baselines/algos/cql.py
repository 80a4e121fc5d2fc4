"""Conservative Q-Learning (offline, discrete actions) of a harness controller from a Minari rollout buffer.

Kumar, Zhou, Tucker and Levine, 2020, https://arxiv.org/abs/2006.04779, the CQL(H) variant on a DQN-style Q
(the shape of its Atari experiments), for the seven harness actions:

- Q(s, .) is fitted to ``r + gamma * (1 - terminal) * max_a' Q'(s', a')``, the max over the actions applicable
  in s' and Q' a Polyak-averaged target;
- plus ``alpha * E[logsumexp_a Q(s, a) - Q(s, a_logged)]``, the logsumexp over the actions applicable in s:
  it pushes down the values of the actions the buffer did not take where it did not take them, so the max of
  the target cannot chase the error of an action never seen (``alpha = 0`` is plain offline DQN).

The controller is the masked argmax of Q (the model file is BC's, the network's outputs read as Q values).

Defaults: alpha 1.0 (d3rlpy's DiscreteCQL default), gamma 0.99, and the value learning settings IQL uses
(:mod:`harness_gym_baselines.algos.iql`: Adam 3e-4, batch 256, Polyak rate 0.005, 5000 steps).

Run ``harness-gym train cql --dataset ID --out FILE [--alpha 1]`` (``python -m harness_gym_baselines.algos.cql``
runs the same command).
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
from harness_gym_baselines.algos.offline_common import (
    check_ranges,
    finish,
    minibatches,
    polyak_update,
    progress_bar,
    require_columns,
    start_run,
    taken,
)
from harness_gym_baselines.policies.learned import MLP, LearnedPolicy, load_policy


@dataclass
class CQLConfig:
    """The settings of discrete CQL; each field is a flag of ``harness-gym train cql``."""

    dataset_id: str = field(default="harness/code-behaviour-v0", metadata={"flags": ("--dataset",),
                                                                          "required": True})
    """the Minari dataset to learn from"""
    out: str = "models/cql.pt"
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
    alpha: float = 1.0
    """weight of the conservative penalty logsumexp Q(s, .) - Q(s, a); 0 is offline DQN"""
    gamma: float = 0.99
    """discount of the target r + gamma * max Q'(s', .)"""
    value_steps: int = 5000
    """gradient steps (one minibatch each)"""
    learning_rate: float = 3e-4
    """Adam learning rate of Q"""
    target_update_rate: float = 0.005
    """Polyak rate of the target Q after each step"""


def check_config(cfg: CQLConfig) -> None:
    """Raise ``ValueError`` naming the first setting of ``cfg`` outside its range."""
    ranges: dict[str, tuple[bool, str]] = {"alpha": (cfg.alpha >= 0.0, ">= 0"), "gamma": (0.0 <= cfg.gamma <= 1.0, "in [0, 1]"),
              "value_steps": (cfg.value_steps >= 0, ">= 0"),
              "target_update_rate": (0.0 < cfg.target_update_rate <= 1.0, "in (0, 1]")}
    check_ranges(cfg, ranges)


def conservative_penalty(q_values: torch.Tensor, masks: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``E[logsumexp_a Q(s, a) - Q(s, a_logged)]`` over the applicable actions (the logged one always counts).

    :param q_values: (N, A) action values
    :param masks: (N, A) applicable actions
    :param actions: (N,) logged actions
    """
    masks = masks | torch.nn.functional.one_hot(actions, q_values.shape[-1]).bool()
    logsumexp = torch.logsumexp(q_values.masked_fill(~masks, float("-inf")), dim=-1)
    return (logsumexp - taken(q_values, actions)).mean()


def train(cfg: CQLConfig, data: Transitions | None = None) -> LearnedPolicy:
    """Fit Q by the masked max backup plus the conservative penalty, save it to ``cfg.out`` and return its
    masked argmax as the controller.

    :param cfg: the configuration
    :param data: the transitions to learn from (default: all of ``cfg.dataset_id``); they need ``rewards``,
        ``next_observations``, ``terminals`` and ``next_action_masks`` (:func:`harness_gym.datasets.load_transitions`)
    """
    check_config(cfg)
    data, writer, t = start_run(cfg, "cql", data)
    require_columns(t, ("rewards", "next_obs", "terminals", "next_masks"), "CQL")
    n, obs_dim, n_actions = len(data), t["obs"].shape[1], t["masks"].shape[1]
    q_net = MLP(obs_dim, n_actions, cfg.hidden_sizes)
    q_target = copy.deepcopy(q_net).requires_grad_(False)
    optimizer = torch.optim.Adam(q_net.parameters(), lr=cfg.learning_rate)

    order_rng = np.random.default_rng(cfg.seed + 1)
    batches_per_epoch = max(1, n // cfg.batch_size)
    step = 0
    for _ in progress_bar(range(math.ceil(cfg.value_steps / batches_per_epoch)), cfg, "q"):
        for idx in minibatches(order_rng, n, cfg.batch_size)[:cfg.value_steps - step]:
            obs, actions = t["obs"][idx], t["actions"][idx]
            with torch.no_grad():
                next_q = q_target(t["next_obs"][idx]).masked_fill(~t["next_masks"][idx], float("-inf"))
                # a terminal step's next state may have no applicable action: its max is never used
                next_value = torch.nan_to_num(next_q.max(-1).values, neginf=0.0)
                td_target = t["rewards"][idx] + cfg.gamma * (1.0 - t["terminals"][idx]) * next_value
            q_values = q_net(obs)
            td_loss = torch.nn.functional.mse_loss(taken(q_values, actions), td_target)
            penalty = conservative_penalty(q_values, t["masks"][idx], actions)
            loss = td_loss + cfg.alpha * penalty
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            polyak_update([q_net], [q_target], cfg.target_update_rate)
            step += 1
        writer.add_scalar("losses/td_loss", td_loss.item(), step)
        writer.add_scalar("losses/conservative_penalty", penalty.item(), step)
    return finish(cfg, "cql", q_net, data, writer, step)


def load(path: str | Path) -> LearnedPolicy:
    """The controller in a model file that :func:`train` wrote (bc's format, :mod:`harness_gym_baselines.policies.learned`)."""
    return load_policy(path)


if __name__ == "__main__":  # the same as harness-gym train cql (one way to run a trainer)
    from harness_gym_baselines.common.trainer_registry import run_trainer

    run_trainer("cql")
