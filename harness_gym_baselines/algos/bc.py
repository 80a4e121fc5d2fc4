"""Behaviour cloning of a harness controller from a Minari rollout buffer.

Maximises the masked log-likelihood of the logged actions, ``-E[log pi(a|s)]``: the imitation baseline the
paper compares AWR against. Run ``harness-gym train bc --dataset ID --out FILE`` (``python -m
harness_gym_baselines.algos.bc`` runs the same command). The model file is :mod:`harness_gym_baselines.policies.learned`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harness_gym.datasets import Transitions
from harness_gym_baselines.algos.offline_common import finish, fit_policy, start_run
from harness_gym_baselines.policies.learned import MLP, LearnedPolicy, load_policy


@dataclass
class BCConfig:
    """The settings of behaviour cloning; each field is a flag of ``harness-gym train bc``."""

    dataset_id: str = field(default="harness/code-behaviour-v0", metadata={"flags": ("--dataset",),
                                                                          "required": True})
    """the Minari dataset to learn from"""
    out: str = "models/bc.pt"
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


def train(cfg: BCConfig, data: Transitions | None = None) -> LearnedPolicy:
    """Train a BC controller, save it to ``cfg.out`` and return it.

    :param cfg: the configuration
    :param data: the transitions to learn from (default: all of ``cfg.dataset_id``)
    """
    data, writer, t = start_run(cfg, "bc", data)

    net = MLP(t["obs"].shape[1], t["masks"].shape[1], cfg.hidden_sizes)
    step = fit_policy(net, t, None, epochs=cfg.epochs, batch_size=cfg.batch_size, learning_rate=cfg.learning_rate,
                      seed=cfg.seed, writer=writer, progress=cfg.progress)
    return finish(cfg, "bc", net, data, writer, step)


def load(path: str | Path) -> LearnedPolicy:
    """The controller in a model file that :func:`train` wrote (:mod:`harness_gym_baselines.policies.learned`)."""
    return load_policy(path)


if __name__ == "__main__":  # the same as harness-gym train bc (one way to run a trainer)
    from harness_gym_baselines.common.trainer_registry import run_trainer

    run_trainer("bc")
