"""The preference source of ECPO: a Bradley-Terry reward model over the step features of trajectories, fitted on
ranked pairs of an offline buffer's trajectories (:class:`PreferenceModel`), and that buffer
(:func:`preference_buffer`: a Minari dataset, or episodes of the behaviour policy). Its per-step score is the
fifth evidence source of :mod:`harness_gym_baselines.algos.ecpo`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from harness_gym.core.actions import N_ACTIONS
from harness_gym.running.rollout import episode_seed, play_episode
from harness_gym_baselines.algos.online_common import (
    config_env_kwargs,
)
from harness_gym_baselines.policies.behaviour import BehaviourPolicy


def step_features(observations: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Per-step features of the preference model: the observation the action was taken in and the action
    one-hot, ``(T, F + 7)``.

    :param observations: ``(T, F)`` observations before each action
    :param actions: ``(T,)`` action ids
    """
    onehot = np.zeros((len(actions), N_ACTIONS), dtype=np.float32)
    onehot[np.arange(len(actions)), np.asarray(actions, dtype=int)] = 1.0
    return np.concatenate([np.asarray(observations, dtype=np.float32), onehot], axis=1)


class PreferenceModel:
    """A trajectory's score is the sum over its steps of a small MLP's per-step score; P(a better than b) =
    sigmoid(score(a) - score(b)) (Bradley & Terry, 1952). The ``preference`` evidence of a step is its
    per-step score: how much the trajectory's score changes when the step is added.

    :param n_features: width of :func:`step_features`
    :param hidden: hidden width of the per-step MLP
    """

    def __init__(self, n_features: int, hidden: int) -> None:
        self.net = torch.nn.Sequential(torch.nn.Linear(n_features, hidden), torch.nn.ReLU(),
                                       torch.nn.Linear(hidden, 1))
        self.heldout_accuracy = float("nan")
        self._numpy_weights()

    def _numpy_weights(self) -> None:
        lin1, lin2 = self.net[0], self.net[2]
        self._w1, self._b1 = lin1.weight.detach().numpy().T.copy(), lin1.bias.detach().numpy().copy()
        self._w2, self._b2 = lin2.weight.detach().numpy()[0].copy(), float(lin2.bias.detach().numpy()[0])

    def step_scores(self, features: np.ndarray) -> np.ndarray:
        """Per-step scores of ``(N, n_features)`` rows (numpy: no torch call on the env's hot path).

        :param features: rows of :func:`step_features`
        """
        return np.maximum(features @ self._w1 + self._b1, 0.0) @ self._w2 + self._b2

    def fit(self, trajectories: list[np.ndarray], qualities: np.ndarray, *, steps: int, pairs: int,
            seed: int, writer: Any = None) -> PreferenceModel:
        """Fit on random pairs of trajectories with different final quality (80% of them; the held-out 20%
        give :attr:`heldout_accuracy`, the fraction of their pairs ordered correctly).

        :param trajectories: per trajectory, its ``(T, n_features)`` step features
        :param qualities: per trajectory, its final quality (the ranking)
        :param steps: Adam steps
        :param pairs: pairs per step
        :param seed: seed of the split and the pair sampling
        :param writer: an SB3 logger for ``losses/preference_bt_loss`` (optional)
        """
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(trajectories))
        n_train = max(2, int(0.8 * len(order)))
        train_idx, held_idx = order[:n_train], order[n_train:]
        lengths = np.array([len(t) for t in trajectories])
        padded = np.zeros((len(trajectories), lengths.max(), trajectories[0].shape[1]), dtype=np.float32)
        for i, t in enumerate(trajectories):
            padded[i, :len(t)] = t
        x = torch.as_tensor(padded)
        mask = torch.as_tensor(np.arange(lengths.max())[None, :] < lengths[:, None], dtype=torch.float32)
        q = np.asarray(qualities, dtype=float)

        def scores() -> torch.Tensor:
            return (self.net(x).squeeze(-1) * mask).sum(dim=1)

        optimizer = torch.optim.Adam(self.net.parameters(), lr=1e-2)
        for step in range(steps):
            a, b = rng.choice(train_idx, pairs), rng.choice(train_idx, pairs)
            keep = q[a] != q[b]
            if not keep.any():
                raise ValueError("every trajectory of the preference buffer has the same quality: no ranked pairs")
            a, b = a[keep], b[keep]
            s = scores()
            margin = s[torch.as_tensor(a)] - s[torch.as_tensor(b)]
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                margin, torch.as_tensor(q[a] > q[b], dtype=torch.float32))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if writer is not None and (step % 50 == 0 or step == steps - 1):
                writer.record("losses/preference_bt_loss", loss.item())
                writer.dump(step)
        self._numpy_weights()
        with torch.no_grad():
            s = scores().numpy()
        if len(held_idx) >= 2:
            i, j = np.triu_indices(len(held_idx), 1)
            a, b = held_idx[i], held_idx[j]
            ranked = q[a] != q[b]
            if ranked.any():
                self.heldout_accuracy = float(np.mean((s[a] > s[b])[ranked] == (q[a] > q[b])[ranked]))
        return self


def preference_buffer(cfg: Any) -> tuple[list[np.ndarray], np.ndarray]:
    """Step features and final quality of every trajectory of the preference buffer (``cfg.preference_dataset``
    or an in-memory behaviour-policy buffer, :class:`ECPOConfig`).

    :param cfg: the trainer's settings
    """
    feats, quality = [], []
    if cfg.preference_dataset:
        import minari

        from harness_gym.datasets import dataset_settings, episode_outcomes, read_columns  # Minari only if named

        ds = minari.load_dataset(cfg.preference_dataset)
        collected_on = dataset_settings(ds)["settings"]["env_id"]
        if collected_on != cfg.env_id:
            raise ValueError(f"preference_dataset {cfg.preference_dataset} was collected on {collected_on}, "
                             f"not on {cfg.env_id}")
        for ep, outcome in zip(read_columns(ds, ("observations", "actions")), episode_outcomes(ds)):
            feats.append(step_features(ep["observations"][:-1], ep["actions"]))
            quality.append(float(outcome["quality"]))
    else:
        env = gym.make(cfg.env_id, **config_env_kwargs(cfg))
        policy = BehaviourPolicy()
        try:
            for i in range(cfg.preference_episodes):
                ep = play_episode(env, policy, seed=episode_seed(cfg.seed, i), split="train")
                feats.append(step_features(np.array(ep.observations[:-1]), np.array(ep.actions)))
                quality.append(float(ep.final_info["quality"]))
        finally:
            env.close()
    return feats, np.array(quality)
