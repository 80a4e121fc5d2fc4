"""A trained controller and its model file: the policy network, the masked softmax over its logits, and the
file that ``harness-gym eval --policy FILE`` runs through :func:`load_policy`.

A model file is a ``torch.save`` dict: ``algo``, ``env_kwargs``, ``dataset_id``, ``config`` (the trainer's
dataclass as a dict), the record of the env it was trained on (``env_id``, ``feature_names``,
``observation_shape``: :mod:`harness_gym_baselines.policies.trained_on`, checked against the env at every
reset), ``hidden_sizes``, ``n_actions`` and ``state_dict`` (of :class:`MLP`). It loads with
``torch.load(weights_only=True)``. What the
trainers share beyond this (seeding, the likelihood fit, logging) is in :mod:`harness_gym_baselines.algos.offline_common`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from harness_gym.running.rollout import harness_env
from harness_gym_baselines.policies.trained_on import TrainedOn

if TYPE_CHECKING:
    from harness_gym.datasets import Transitions

MODEL_FORMAT = "harness_gym.learned/1"


class MLP(nn.Module):
    """Linear-ReLU blocks and a linear head over the feature vector: the policy's logits over the 7 harness
    actions (``n_out=7``) or a state value (``n_out=1``).

    :param obs_dim: number of features
    :param n_out: number of outputs
    :param hidden_sizes: widths of the hidden layers
    """

    def __init__(self, obs_dim: int, n_out: int, hidden_sizes: Sequence[int]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = obs_dim
        for h in hidden_sizes:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, n_out))
        self.net = nn.Sequential(*layers)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


def masked_log_probs(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Log-probabilities of a softmax restricted to the applicable actions (masked ones get -inf)."""
    return torch.log_softmax(logits.masked_fill(~masks, float("-inf")), dim=-1)


def action_log_prob(logits: torch.Tensor, masks: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """log pi(a|s) under the masked softmax. The taken action always counts as applicable, so a logged
    no-op (an inapplicable action the behaviour took) stays finite."""
    masks = masks | nn.functional.one_hot(actions, logits.shape[-1]).bool()
    return masked_log_probs(logits, masks).gather(-1, actions[:, None]).squeeze(-1)


class LearnedPolicy:
    """A trained :class:`MLP` as a controller: masked argmax (or masked sampling) over its logits.

    :param net: the policy network
    :param feature_names: the features the network was trained on, in order
    :param name: the policy name shown in evaluation output
    :param sample: sample from the masked softmax instead of taking the argmax
    :param trained_on: the env it was trained on (default: only its ``feature_names``)
    """

    def __init__(self, net: MLP, feature_names: Sequence[str], name: str, sample: bool = False,
                 trained_on: TrainedOn | None = None) -> None:
        self.net = net.eval()
        self.feature_names = tuple(feature_names)
        self.trained_on = trained_on if trained_on is not None else TrainedOn(feature_names=self.feature_names)
        self.name = name
        self.sample = sample
        self.rng = np.random.default_rng(0)
        self.report: dict[str, Any] = {}
        """what training reported (:func:`harness_gym_baselines.algos.offline_common.finish`): run folder, final losses, evaluation"""

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Check ``env`` against the env the model was trained on (:meth:`TrainedOn.check`); reseed sampling.

        :param env: the env of the episode
        :param seed: the episode's reset seed
        """
        self.trained_on.check(env, self.name)
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        mask = torch.as_tensor(harness_env(env).action_masks())
        with torch.no_grad():
            logp = masked_log_probs(self.net(torch.as_tensor(obs, dtype=torch.float32)), mask)
        if self.sample:
            p = logp.exp().numpy().astype(float)
            return int(self.rng.choice(len(p), p=p / p.sum()))
        return int(torch.argmax(logp))


def trained_on_data(data: Transitions) -> TrainedOn:
    """The env a dataset's transitions come from: its id, feature names and observation shape.

    :param data: the training transitions
    """
    settings = None
    if data.env_id in gym.registry:
        env = gym.make(data.env_id, **(data.env_kwargs or {}))
        try:
            settings = env.unwrapped.settings
        finally:
            env.close()
    return TrainedOn(env_id=data.env_id, feature_names=tuple(data.feature_names),
                     observation_shape=tuple(int(n) for n in data.observations.shape[1:]), settings=settings)


def save_model(path: str | Path, *, algo: str, net: MLP, config: Any, data: Transitions,
               hidden_sizes: Sequence[int]) -> Path:
    """Write a model file (see the module docstring) and return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cfg = asdict(config)
    torch.save({"format": MODEL_FORMAT, "algo": algo, "env_kwargs": data.env_kwargs,
                "dataset_id": cfg.get("dataset_id"), "config": cfg, **trained_on_data(data).record(),
                "hidden_sizes": list(hidden_sizes), "n_actions": int(data.action_masks.shape[1]),
                "state_dict": net.state_dict()}, path)
    return path


def load_policy(path: str | Path, sample: bool = False) -> LearnedPolicy:
    """The controller stored in a model file written by :func:`save_model`."""
    blob = torch.load(path, weights_only=True)
    if not isinstance(blob, dict) or blob.get("format") != MODEL_FORMAT:
        raise ValueError(f"{path}: not a harness_gym model file (expected format {MODEL_FORMAT!r})")
    net = MLP(len(blob["feature_names"]), blob["n_actions"], blob["hidden_sizes"])
    net.load_state_dict(blob["state_dict"])
    return LearnedPolicy(net, blob["feature_names"], name=f"{blob['algo']}:{Path(path).name}", sample=sample,
                         trained_on=TrainedOn.from_record(blob))
