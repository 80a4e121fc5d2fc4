"""Advantage-Weighted Regression (offline) of a harness controller from a Minari rollout buffer.

Peng et al., 2019, https://arxiv.org/abs/1910.00177, in the form the harness paper uses: the reward is the
terminal task quality only, the value baseline V(s) is fitted to the buffer's Monte-Carlo returns, the
advantage is A = G - V(s), and the policy minimises ``-E[min(exp(A / beta), weight_max) * log pi(a|s)]``.
With ``beta = inf`` every weight is 1 and the loss is behaviour cloning's (:mod:`baselines.bc`).

Run ``harness-gym train awr --dataset ID --out FILE [--beta B]`` or ``python -m baselines.awr ...``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from baselines.bc import BCConfig
from baselines.learned import MLP, LearnedPolicy, finish, fit_policy, minibatches, start_run
from harness_gym.datasets import Transitions


@dataclass
class AWRConfig(BCConfig):
    """BC's settings (same network, optimiser and minibatch order) plus the advantage weighting."""

    out: str = "models/awr.pt"
    """where the model file is written"""
    beta: float = 0.1
    """temperature: weights are exp(A / beta); the return is a quality in [0, 1], so 0.1 is a tenth of its range"""
    weight_max: float = 20.0
    """clip of the weights (Peng et al.'s w_max), so a few lucky episodes cannot dominate"""
    value_epochs: int = 30
    """passes over the dataset when fitting V(s) to the Monte-Carlo returns"""
    value_learning_rate: float = 1e-3
    """Adam learning rate of the value"""


def advantage_weights(advantages: torch.Tensor, beta: float, weight_max: float) -> torch.Tensor:
    """``min(exp(A / beta), weight_max)``; ``beta = inf`` gives weight 1 everywhere (behaviour cloning)."""
    return torch.exp(advantages / beta).clamp(max=weight_max)


def train(cfg: AWRConfig, data: Transitions | None = None) -> LearnedPolicy:
    """Fit V(s), weight the logged actions by their clipped exponentiated advantage, save to ``cfg.out``.

    :param cfg: the configuration
    :param data: the transitions to learn from (default: all of ``cfg.dataset_id``)
    """
    data, writer, t = start_run(cfg, "awr", data)
    n, obs_dim, n_actions = len(data), t["obs"].shape[1], t["masks"].shape[1]

    # the policy is built first so that its initialisation equals BC's with the same seed
    policy_net = MLP(obs_dim, n_actions, cfg.hidden_sizes)
    value_net = MLP(obs_dim, 1, cfg.hidden_sizes)

    # 1. value baseline: regress V(s) on the Monte-Carlo return G
    value_opt = torch.optim.Adam(value_net.parameters(), lr=cfg.value_learning_rate)
    value_rng = np.random.default_rng(cfg.seed + 1)
    step = 0
    for epoch in range(cfg.value_epochs):
        for idx in minibatches(value_rng, n, cfg.batch_size):
            value_loss = torch.nn.functional.mse_loss(value_net(t["obs"][idx]).squeeze(-1), t["returns"][idx])
            value_opt.zero_grad()
            value_loss.backward()
            value_opt.step()
            step += 1
        writer.add_scalar("losses/value_loss", value_loss.item(), step)

    # 2. advantages and their clipped exponential weights (fixed from here on)
    with torch.no_grad():
        advantages = t["returns"] - value_net(t["obs"]).squeeze(-1)
    weights = advantage_weights(advantages, cfg.beta, cfg.weight_max)
    writer.add_scalar("charts/advantage_std", advantages.std().item(), step)
    writer.add_scalar("charts/weight_mean", weights.mean().item(), step)
    writer.add_scalar("charts/weight_clipped_fraction", (weights >= cfg.weight_max).float().mean().item(), step)

    # 3. advantage-weighted maximum likelihood of the logged actions
    step = fit_policy(policy_net, t, weights, epochs=cfg.epochs, batch_size=cfg.batch_size,
                      learning_rate=cfg.learning_rate, seed=cfg.seed, writer=writer)
    return finish(cfg, "awr", policy_net, data, writer, step)


if __name__ == "__main__":
    import sys

    from harness_gym.cli import main

    sys.exit(main(["train", "awr", *sys.argv[1:]]))
