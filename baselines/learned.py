"""What the offline learners (:mod:`baselines.bc`, :mod:`baselines.awr`) share: the policy network, the
masked log-likelihood, seeding, evaluation logging, and the model file that ``harness-gym eval --policy FILE``
runs through :func:`load_policy`.

A model file is a ``torch.save`` dict: ``algo``, ``env_id``, ``env_kwargs``, ``dataset_id``, ``config`` (the
trainer's dataclass as a dict), ``feature_names`` (checked against the env at every reset), ``hidden_sizes``,
``n_actions`` and ``state_dict`` (of :class:`MLP`). It loads with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.utils.tensorboard import SummaryWriter

from baselines.policies import harness_env
from harness_gym.datasets import Transitions, load_transitions

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


def seed_everything(seed: int, torch_threads: int) -> None:
    """Seed ``random``, ``numpy`` and ``torch`` and fix torch's CPU threads (results depend on them)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(torch_threads)


def as_tensors(data: Transitions) -> dict[str, torch.Tensor]:
    """The transitions as torch tensors (observations, actions, action masks, returns)."""
    return {"obs": torch.as_tensor(data.observations), "actions": torch.as_tensor(data.actions),
            "masks": torch.as_tensor(data.action_masks), "returns": torch.as_tensor(data.returns)}


def minibatches(rng: np.random.Generator, n: int, batch_size: int) -> list[torch.Tensor]:
    """One epoch of shuffled minibatch indices (about ``batch_size`` each)."""
    return [torch.as_tensor(i) for i in np.array_split(rng.permutation(n), max(1, n // batch_size))]


class LearnedPolicy:
    """A trained :class:`MLP` as a controller: masked argmax (or masked sampling) over its logits.

    :param net: the policy network
    :param feature_names: the features the network was trained on, in order
    :param name: the policy name shown in evaluation output
    :param sample: sample from the masked softmax instead of taking the argmax
    """

    def __init__(self, net: MLP, feature_names: Sequence[str], name: str, sample: bool = False) -> None:
        self.net = net.eval()
        self.feature_names = tuple(feature_names)
        self.name = name
        self.sample = sample
        self.rng = np.random.default_rng(0)

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        env_features = tuple(harness_env(env).feature_names)
        if env_features != self.feature_names:
            raise ValueError(f"{self.name}: trained on features {self.feature_names}, env has {env_features}")
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        mask = torch.as_tensor(harness_env(env).action_masks())
        with torch.no_grad():
            logp = masked_log_probs(self.net(torch.as_tensor(obs, dtype=torch.float32)), mask)
        if self.sample:
            p = logp.exp().numpy().astype(float)
            return int(self.rng.choice(len(p), p=p / p.sum()))
        return int(torch.argmax(logp))


def save_model(path: str | Path, *, algo: str, net: MLP, config: Any, data: Transitions,
               hidden_sizes: Sequence[int]) -> Path:
    """Write a model file (see the module docstring) and return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cfg = asdict(config)
    torch.save({"format": MODEL_FORMAT, "algo": algo, "env_id": data.env_id, "env_kwargs": data.env_kwargs,
                "dataset_id": cfg.get("dataset_id"), "config": cfg, "feature_names": list(data.feature_names),
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
    return LearnedPolicy(net, blob["feature_names"], name=f"{blob['algo']}:{Path(path).name}", sample=sample)


def start_run(cfg: Any, algo: str,
              data: Transitions | None) -> tuple[Transitions, SummaryWriter, dict[str, torch.Tensor]]:
    """Seed everything, load ``cfg.dataset_id`` unless ``data`` is given, open the TensorBoard run
    ``{env_id}__{algo}__{seed}__{time}`` under ``cfg.log_dir``; returns the data, the writer and the tensors."""
    seed_everything(cfg.seed, cfg.torch_threads)
    data = data if data is not None else load_transitions(cfg.dataset_id)
    writer = SummaryWriter(f"{cfg.log_dir}/{data.env_id}__{algo}__{cfg.seed}__{int(time.time())}")
    writer.add_text("config", str(cfg))
    return data, writer, as_tensors(data)


def fit_policy(net: MLP, t: dict[str, torch.Tensor], weights: torch.Tensor | None, *, epochs: int,
               batch_size: int, learning_rate: float, seed: int, writer: SummaryWriter) -> int:
    """(Weighted) maximum likelihood of the logged actions: minimise ``-E[w * log pi(a|s)]`` with Adam over
    shuffled minibatches; ``weights=None`` is behaviour cloning (w = 1). Returns the number of steps.

    :param net: the policy network, trained in place
    :param t: the transitions (:func:`as_tensors`)
    :param weights: one weight per transition, or ``None``
    :param epochs: passes over the transitions
    :param batch_size: transitions per step
    :param learning_rate: Adam learning rate
    :param seed: seed of the minibatch order
    :param writer: TensorBoard writer (``losses/policy_loss``, ``charts/epoch``, ``charts/SPS``)
    """
    optimizer = torch.optim.Adam(net.parameters(), lr=learning_rate)
    order_rng = np.random.default_rng(seed)
    step, start = 0, time.time()
    for epoch in range(epochs):
        for idx in minibatches(order_rng, len(t["actions"]), batch_size):
            log_prob = action_log_prob(net(t["obs"][idx]), t["masks"][idx], t["actions"][idx])
            loss = -(log_prob if weights is None else weights[idx] * log_prob).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
        writer.add_scalar("losses/policy_loss", loss.item(), step)
        writer.add_scalar("charts/epoch", epoch, step)
        writer.add_scalar("charts/SPS", int(step * batch_size / (time.time() - start)), step)
    return step


def finish(cfg: Any, algo: str, net: MLP, data: Transitions, writer: SummaryWriter, step: int) -> LearnedPolicy:
    """Save the model file to ``cfg.out``, run the final evaluation (``cfg.eval_episodes`` on
    ``cfg.eval_split``) into ``eval/``, close the writer and return the controller."""
    save_model(cfg.out, algo=algo, net=net, config=cfg, data=data, hidden_sizes=cfg.hidden_sizes)
    policy = LearnedPolicy(net, data.feature_names, name=algo)
    if cfg.eval_episodes > 0:
        evaluate_and_log(writer, policy, data, episodes=cfg.eval_episodes, split=cfg.eval_split, seed=cfg.seed,
                         step=step)
    writer.close()
    return policy


def evaluate_and_log(writer: SummaryWriter, policy: LearnedPolicy, data: Transitions, *, episodes: int,
                     split: str, seed: int, step: int) -> dict[str, Any]:
    """Evaluate ``policy`` on the dataset's env and log quality, success, HMS and patterns under ``eval/``."""
    from baselines.evaluate import evaluate

    result = evaluate(data.env_id, policy, episodes=episodes, split=split, seed=seed, env_kwargs=data.env_kwargs)
    writer.add_scalar("eval/quality", result["quality_mean"], step)
    writer.add_scalar("eval/success_rate", result["success_rate"], step)
    writer.add_scalar("eval/hms", result["hms_mean"], step)
    for name, rate in result["patterns"].items():
        writer.add_scalar(f"eval/{name}", rate, step)
    return result
