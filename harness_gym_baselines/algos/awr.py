"""Advantage-Weighted Regression (offline) of a harness controller from a Minari rollout buffer.

Peng et al., 2019, https://arxiv.org/abs/1910.00177, in the form the harness paper uses: the reward is the
terminal task quality only, the value baseline V(s) is fitted to the buffer's Monte-Carlo returns, and the
policy minimises ``-E[min(exp(A / beta), weight_max) * log pi(a|s)]``. With ``beta = inf`` every weight is 1
and the loss is behaviour cloning's (:mod:`harness_gym_baselines.algos.bc`).

Two advantage estimators, both fitted to the same Monte-Carlo returns:

- ``advantage="mc"`` (Peng et al.'s): the sample advantage A = G - V(s) of each logged transition;
- ``advantage="q"`` (as in AWAC / CRR): A = Q(s, a) - V(s), with Q(s, a) regressed on G as well. Where the
  outcome after an action is a coin flip (pass/fail quality), exp(A / beta) of a *sample* advantage averages
  to about the ratio of success probabilities of two actions, however small beta is; the fitted Q averages
  the outcome first, so exp((Q(s, a) - V(s)) / beta) grows exponentially in the difference of expected
  qualities.

Run ``harness-gym train awr --dataset ID --out FILE [--beta B]`` (``python -m harness_gym_baselines.algos.awr``
runs the same command).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from harness_gym.datasets import Transitions
from harness_gym_baselines.algos.offline_common import finish, fit_policy, minibatches, progress_bar, start_run, taken
from harness_gym_baselines.policies.learned import MLP, LearnedPolicy, load_policy


@dataclass
class AWRConfig:
    """The settings of AWR; each field is a flag of ``harness-gym train awr`` (BC's fields with BC's defaults, so the
    same network, optimiser and minibatch order, then the advantage weighting)."""

    dataset_id: str = field(default="harness/code-behaviour-v0", metadata={"flags": ("--dataset",),
                                                                          "required": True})
    """the Minari dataset to learn from"""
    out: str = "models/awr.pt"
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
    beta: float = 0.1
    """temperature: weights are exp(A / beta); the return is a quality in [0, 1], so 0.1 is a tenth of its range"""
    weight_max: float = 20.0
    """clip of the weights (Peng et al.'s w_max), so a few lucky episodes cannot dominate"""
    value_epochs: int = 30
    """passes over the dataset when fitting V(s) to the Monte-Carlo returns"""
    value_learning_rate: float = 1e-3
    """Adam learning rate of the value"""
    advantage: Literal["mc", "q"] = "mc"
    """advantage estimator: "mc" (G - V(s)) or "q" (Q(s, a) - V(s), Q fitted to the same returns)"""


def advantage_weights(advantages: torch.Tensor, beta: float, weight_max: float) -> torch.Tensor:
    """``min(exp(A / beta), weight_max)``; ``beta = inf`` gives weight 1 everywhere (behaviour cloning)."""
    return torch.exp(advantages / beta).clamp(max=weight_max)


def train(cfg: AWRConfig, data: Transitions | None = None) -> LearnedPolicy:
    """Fit V(s), weight the logged actions by their clipped exponentiated advantage, save to ``cfg.out``.

    :param cfg: the configuration
    :param data: the transitions to learn from (default: all of ``cfg.dataset_id``)
    """
    if cfg.advantage not in ("mc", "q"):
        raise ValueError(f"advantage must be 'mc' or 'q', got {cfg.advantage!r}")
    data, writer, t = start_run(cfg, "awr" if cfg.advantage == "mc" else "awr-q", data)
    n, obs_dim, n_actions = len(data), t["obs"].shape[1], t["masks"].shape[1]

    # the policy is built first so that its initialisation equals BC's with the same seed
    policy_net = MLP(obs_dim, n_actions, cfg.hidden_sizes)
    value_net = MLP(obs_dim, 1, cfg.hidden_sizes)
    q_net = MLP(obs_dim, n_actions, cfg.hidden_sizes) if cfg.advantage == "q" else None

    # 1. value baseline V(s) (and, for "q", Q(s, a) of the logged action), regressed on the return G
    params = list(value_net.parameters()) + (list(q_net.parameters()) if q_net is not None else [])
    value_opt = torch.optim.Adam(params, lr=cfg.value_learning_rate)
    value_rng = np.random.default_rng(cfg.seed + 1)
    step = 0
    for _ in progress_bar(range(cfg.value_epochs), cfg, "value"):
        for idx in minibatches(value_rng, n, cfg.batch_size):
            obs, ret = t["obs"][idx], t["returns"][idx]
            value_loss = torch.nn.functional.mse_loss(value_net(obs).squeeze(-1), ret)
            if q_net is not None:
                q_taken = taken(q_net(obs), t["actions"][idx])
                value_loss = value_loss + torch.nn.functional.mse_loss(q_taken, ret)
            value_opt.zero_grad()
            value_loss.backward()
            value_opt.step()
            step += 1
        writer.add_scalar("losses/value_loss", value_loss.item(), step)

    # 2. advantages and their clipped exponential weights (fixed from here on)
    with torch.no_grad():
        baseline = value_net(t["obs"]).squeeze(-1)
        if q_net is None:
            advantages = t["returns"] - baseline
        else:
            advantages = taken(q_net(t["obs"]), t["actions"]) - baseline
    weights = advantage_weights(advantages, cfg.beta, cfg.weight_max)
    writer.add_scalar("charts/advantage_std", advantages.std().item(), step)
    writer.add_scalar("charts/weight_mean", weights.mean().item(), step)
    writer.add_scalar("charts/weight_clipped_fraction", (weights >= cfg.weight_max).float().mean().item(), step)

    # 3. advantage-weighted maximum likelihood of the logged actions
    step = fit_policy(policy_net, t, weights, epochs=cfg.epochs, batch_size=cfg.batch_size,
                      learning_rate=cfg.learning_rate, seed=cfg.seed, writer=writer,
                      progress=cfg.progress)
    return finish(cfg, "awr", policy_net, data, writer, step)


def load(path: str | Path) -> LearnedPolicy:
    """The controller in a model file that :func:`train` wrote (bc's format, :mod:`harness_gym_baselines.policies.learned`)."""
    return load_policy(path)


if __name__ == "__main__":  # the same as harness-gym train awr (one way to run a trainer)
    from harness_gym_baselines.common.trainer_registry import run_trainer

    run_trainer("awr")
