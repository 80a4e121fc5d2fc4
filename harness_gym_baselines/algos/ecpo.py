"""Evidence-calibrated policy optimisation (ECPO): MaskablePPO on a trust-weighted sum of evidence signals.

The method of the seed blog "evidence-calibrated policy optimisation" (docs/ecpo.md), not arXiv 2606.05885's
method of the same name (a critic-free estimator with action-grouped shrinkage and variance gating). PPO's
GAE is computed from the calibrated signal

    c_t = sum_i w_i * norm_i(e_i,t)

over five evidence sources: the four the env reports in ``info["evidence"]`` (``env``, ``consistency``,
``knowledge``, ``self``; docs/ecpo.md says what each measures per domain) and ``preference``, the per-step
score of a Bradley-Terry reward model trained on ranked pairs of offline-buffer trajectories.

- **The task reward enters through the ``env`` source**, as ``w_env * r_t^env`` does in the seed's formula:
  ``e_env,t`` is the env's reward ``r_t`` (the quality Q on the last step, minus the cost term on every step
  when the env has a ``cost_weight``) plus the execution feedback of non-final steps (+0.05 / -0.1).
- **Normalisation** (the seed's "running mean and std"): each source is standardised with its running mean
  and standard deviation (Welford's algorithm, merged batch by batch) and clipped to +-``norm_clip``.
- **Trust weights**: every ``eval_every`` PPO updates (and before the first), the current policy plays
  ``eval_episodes`` episodes of the validation split; for each source the per-episode sum of its raw signal
  is scored against true success by the ROC AUC, and ``w = floor + (1 - floor) * max(0, 2 sigmoid(k (AUC -
  0.5)) - 1)``: a source no better than chance (AUC <= 0.5) gets the floor, a perfect one about 1.
- **Conflicts**: a step where one source is above +``conflict_z`` standard deviations and another below
  -``conflict_z`` (e.g. a high env signal with a low consistency) is a conflict; counts per pair of sources
  are logged.
- **Potential-based variant** (``shaping="potential"``, the trainer ``ecpo-pb``, :mod:`harness_gym_baselines.algos.ecpo_pb`):
  each source k enters as ``gamma * phi_k(s') - phi_k(s)`` of a potential of the harness state
  (:class:`EvidencePotential`; Ng, Harada and Russell, 1999) instead of its per-step value, and the task reward
  ``r_t`` is added to the ``env`` term as it is; each term is divided by its running std (not centred, not
  clipped, so an episode's sum still telescopes). A step that repeats an earlier one and gets the same verdict
  leaves every potential unchanged and earns nothing; the sum over an episode is ``phi(s_T) - phi(s_0)`` at
  ``gamma = 1``, however many steps were repeated. :func:`farming_share` measures how often a policy repeats
  an action that earned evidence under the blog shaping.
- **Corruption switch** (the seed's robustness experiment): from training step ``corrupt_from`` on, each
  correct ``knowledge`` signal (+1) is flipped to -1 with probability ``corrupt_rate``, in training and in
  the validation episodes alike; with ``freeze_weights_at_corruption`` the weights stay at their value
  before the switch.

TensorBoard: ``charts/weight_*``, ``charts/auc_*``, ``charts/conflict_rate``, ``charts/conflicts_*_vs_*``,
``charts/norm_mean_*``, ``charts/norm_std_*``, ``losses/preference_bt_loss``, ``eval/val_*``.

Run ``harness-gym train ecpo --env ENV --steps N --seed S --out FILE [--preference-dataset ID]`` (``ecpo-pb``
for the potential-based variant).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import VecEnv

from harness_gym.core.actions import N_ACTIONS
from harness_gym.core.evidence import EVIDENCE_SOURCES
from harness_gym.rollout import Episode, episode_seed, play_episode
from harness_gym_baselines.algos.ppo import (
    OnlineConfig,
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
from harness_gym_baselines.algos.training import seed_everything
from harness_gym_baselines.policies.behaviour import BehaviourPolicy
from harness_gym_baselines.policies.sb3_zip import SB3Policy, load_sb3_policy

SOURCES: tuple[str, ...] = (*EVIDENCE_SOURCES, "preference")
"""the evidence sources, in the column order of every evidence array here"""
PAIRS: tuple[tuple[int, int], ...] = tuple(combinations(range(len(SOURCES)), 2))
SHAPINGS: tuple[str, ...] = ("blog", "potential")
"""how the evidence enters the reward (:attr:`ECPOConfig.shaping`)"""
ALGO_OF_SHAPING: dict[str, str] = {"blog": "ecpo", "potential": "ecpo-pb"}
"""the trainer name a model file records, per shaping"""


@dataclass
class ECPOConfig(OnlineConfig):
    """The online settings plus the evidence, calibration and corruption settings."""

    out: str = "models/ecpo.zip"
    """where the model (an SB3 zip) is written"""
    weight_floor: float = 0.1
    """the least trust weight a source can get (an uninformative source)"""
    weight_slope: float = 10.0
    """k of the weight sigmoid: how fast trust grows with the AUC above 0.5"""
    center: bool = True
    """subtract each source's running mean before dividing by its running std (the seed's standardisation)"""
    norm_clip: float = 5.0
    """clip of each normalised signal"""
    conflict_z: float = 1.0
    """a conflict: one source above +conflict_z running stds and another below -conflict_z at the same step"""
    preference_dataset: str = ""
    """Minari dataset (harness-gym collect) whose ranked trajectory pairs train the preference model; empty:
    play preference_episodes behaviour-policy episodes of the train split in memory instead"""
    preference_episodes: int = 500
    """episodes of the in-memory buffer when no preference_dataset is given"""
    preference_hidden: int = 32
    """hidden width of the preference model's per-step scorer"""
    preference_steps: int = 300
    """Adam steps of the Bradley-Terry fit"""
    preference_pairs: int = 512
    """trajectory pairs per Bradley-Terry step"""
    corrupt_from: int = -1
    """training step from which correct knowledge signals are flipped (-1: never)"""
    corrupt_rate: float = 0.3
    """probability that a correct (+1) knowledge signal is flipped to -1 once the corruption is on"""
    freeze_weights_at_corruption: bool = False
    """keep the trust weights at their value before the corruption starts (the frozen arm of the experiment)"""
    shaping: Literal["blog", "potential"] = "blog"
    """how each source enters the reward: "blog", its per-step signal (the seed blog's ECPO); "potential",
    gamma * phi(s') - phi(s) of its potential (the ecpo-pb trainer, docs/ecpo.md)"""


# ----- the evidence of one step --------------------------------------------------------------------------
def task_evidence(info: dict[str, Any], reward: float, done: bool) -> tuple[float, float, float, float]:
    """The four env-reported sources of one step, with the task reward in ``env`` (module docstring).

    :param info: the step's info
    :param reward: the env's reward of the step
    :param done: the step ended the episode (its ``info["evidence"]["env"]`` is Q, already in ``reward``)
    """
    ev = info["evidence"]
    return (reward + (0.0 if done else ev["env"]), ev["consistency"], ev["knowledge"], ev["self"])


class KnowledgeCorruption:
    """Flips correct (+1) ``knowledge`` signals to -1 with probability ``rate`` once switched on.

    :param rate: the flip probability
    :param seed: seed of the flips
    """

    def __init__(self, rate: float, seed: int) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"corrupt_rate must be in [0, 1], got {rate}")
        self.rate = rate
        self.active = False
        self.rng = np.random.default_rng(seed)

    def apply(self, knowledge: np.ndarray) -> np.ndarray:
        """The signals after corruption (a new array; unchanged while the switch is off).

        :param knowledge: raw knowledge signals
        """
        if not self.active:
            return knowledge
        flip = (knowledge > 0) & (self.rng.random(knowledge.shape) < self.rate)
        return np.where(flip, -1.0, knowledge)


# ----- the potential-based variant ----------------------------------------------------------------------
LATEST_PER_ACTION = np.array([k != SOURCES.index("self") for k in range(len(SOURCES))])
"""the sources whose potential is the sum over the seven actions of the signal of the action's latest step"""


class EvidencePotential:
    """The potentials ``phi_k(s)`` of the five sources over one episode in progress, from what the harness holds
    (the evidence of the steps so far), and the shaping terms ``gamma * phi_k(s') - phi_k(s)``.

    - ``env`` (execution feedback only; the task reward is not shaped), ``consistency``, ``knowledge`` and
      ``preference``: ``phi_k(s)`` is the sum over the seven actions of source k's signal at the latest step
      that took the action (0 for an action not taken yet). Re-taking an action with the verdict it got last
      time leaves ``phi_k`` unchanged; a new verdict (a draft that now agrees with the knowledge base, a
      tool call that now fails) moves it by the difference.
    - ``self``: the change in the worker's confidence is already a difference; ``phi_self(s)`` is its sum so
      far, the current draft's confidence.

    Every potential is 0 at the reset and bounded by seven times its source's range (``self``: [0, 1]), so an
    episode's shaping ``sum_t gamma^t (gamma phi(s_t+1) - phi(s_t)) = gamma^T phi(s_T) - phi(s_0)`` is bounded
    whatever the policy repeats. The potential of the last state is kept (not set to 0): an episode ends with
    the bonus of the evidence state it reached.

    :param gamma: the discount of the shaping (PPO's ``gamma``)
    """

    def __init__(self, gamma: float) -> None:
        if not 0.0 < gamma <= 1.0:
            raise ValueError(f"the shaping's gamma must be in (0, 1], got {gamma}")
        self.gamma = gamma
        self.latest = np.zeros((len(SOURCES), N_ACTIONS))
        self.total = np.zeros(len(SOURCES))

    def reset(self) -> None:
        """Back to the potentials of a reset (all 0)."""
        self.latest[:] = 0.0
        self.total[:] = 0.0

    @property
    def phi(self) -> np.ndarray:
        """``(5,)`` potentials of the current state, in :data:`SOURCES` order."""
        return np.where(LATEST_PER_ACTION, self.latest.sum(axis=1), self.total)

    def step(self, action: int, evidence: np.ndarray) -> np.ndarray:
        """Fold in one step and return its ``(5,)`` shaping terms ``gamma * phi(s') - phi(s)``.

        :param action: the action of the step
        :param evidence: its ``(5,)`` raw signals, ``env`` being the execution feedback without the task reward
        """
        before = self.phi
        self.latest[:, int(action)] = evidence
        self.total += evidence
        return self.gamma * self.phi - before


def potential_shaping(actions: Sequence[int], evidence: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """The shaping terms ``(T, 5)`` and the potentials ``(T + 1, 5)`` of one episode (:class:`EvidencePotential`).

    :param actions: the episode's ``T`` actions
    :param evidence: its ``(T, 5)`` raw signals (``env`` without the task reward)
    :param gamma: the discount of the shaping
    """
    potential = EvidencePotential(gamma)
    phis, terms = [potential.phi], []
    for action, row in zip(actions, np.asarray(evidence, dtype=float)):
        terms.append(potential.step(action, row))
        phis.append(potential.phi)
    return np.array(terms).reshape(-1, len(SOURCES)), np.array(phis)


# ----- the farming share ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class BlogEvidenceTerm:
    """The evidence term of the blog ECPO's per-step reward under a fixed calibration: for the four env-reported
    sources, ``b_t = sum_k w_k * clip((e_k,t - m_k) / s_k, +-norm_clip)`` (without centering: ``e / s``), with
    ``e_env,t`` the execution feedback only (the task reward and the final step's Q left out). It is ``c_t``
    of the blog ECPO less the task reward and less ``preference`` (whose model a model file does not keep).

    :param weights: ``(4,)`` trust weights of env, consistency, knowledge, self
    :param mean: their running means
    :param std: their running stds
    :param center: subtract the mean (the blog's default)
    :param norm_clip: clip of the normalised signals
    """

    weights: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    center: bool = True
    norm_clip: float = 5.0

    @classmethod
    def from_model(cls, meta: dict[str, Any]) -> BlogEvidenceTerm:
        """The calibration a blog-ECPO model file ended training with (its ``harness_gym`` attribute).

        :param meta: ``model.harness_gym`` of an ``ecpo`` zip
        """
        if meta.get("algo") != "ecpo" or "weights" not in meta or "normaliser" not in meta:
            raise ValueError(f"the farming share's calibration comes from a blog-ECPO model file (algo 'ecpo', "
                             f"with weights and normaliser), got one of algo {meta.get('algo')!r}")
        names = EVIDENCE_SOURCES
        cfg = meta.get("config", {})
        return cls(weights=np.array([meta["weights"][k] for k in names]),
                   mean=np.array([meta["normaliser"]["mean"][k] for k in names]),
                   std=np.array([meta["normaliser"]["std"][k] for k in names]),
                   center=bool(cfg.get("center", True)), norm_clip=float(cfg.get("norm_clip", 5.0)))

    def of_steps(self, evidence: np.ndarray) -> np.ndarray:
        """``b_t`` of each row of ``(T, 4)`` raw signals (``env`` without the task reward).

        :param evidence: the raw signals of env, consistency, knowledge, self per step
        """
        evidence = np.asarray(evidence, dtype=float).reshape(-1, len(EVIDENCE_SOURCES))
        std = self.std + 1e-8
        norm = (evidence - self.mean) / std if self.center else evidence / std
        return np.clip(norm, -self.norm_clip, self.norm_clip) @ self.weights

    def of_episode(self, episode: Episode) -> np.ndarray:
        """``b_t`` of every step of a played episode.

        :param episode: the episode
        """
        rows = [task_evidence(episode.infos[t + 1], 0.0, episode.terminations[t] or episode.truncations[t])
                for t in range(len(episode.actions))]
        return self.of_steps(np.array(rows))


def farming_steps(actions: Sequence[int], evidence_terms: Sequence[float]) -> np.ndarray:
    """Which steps of one episode farm: step t takes the same action as an earlier step of the episode whose
    blog evidence term was > 0, and its own evidence term is > 0 (it is paid again for repeating).

    :param actions: the episode's actions
    :param evidence_terms: the blog evidence term ``b_t`` of each step (:class:`BlogEvidenceTerm`)
    """
    if len(actions) != len(evidence_terms):
        raise ValueError(f"{len(actions)} actions but {len(evidence_terms)} evidence terms")
    earned: set[int] = set()
    farming = np.zeros(len(actions), dtype=bool)
    for t, (action, term) in enumerate(zip(actions, evidence_terms)):
        if term > 0:
            farming[t] = int(action) in earned
            earned.add(int(action))
    return farming


def farming_share(actions: Sequence[Sequence[int]], evidence_terms: Sequence[Sequence[float]]) -> float:
    """The farming share of a set of episodes: farming steps (:func:`farming_steps`) over all their steps (NaN
    with no step).

    :param actions: per episode, its actions
    :param evidence_terms: per episode, the blog evidence term of each step
    """
    counts = [(int(farming_steps(a, b).sum()), len(a)) for a, b in zip(actions, evidence_terms, strict=True)]
    steps = sum(n for _, n in counts)
    return sum(f for f, _ in counts) / steps if steps else float("nan")


# ----- normalisation ------------------------------------------------------------------------------------
class RunningMeanStd:
    """Per-column running mean and variance (Welford's algorithm, merging a batch at a time as in Chan et al.,
    1979): after any sequence of :meth:`update` calls, ``mean`` and ``var`` equal ``np.mean`` and ``np.var``
    (population variance) of everything seen.

    :param n_columns: number of independent columns (sources)
    """

    def __init__(self, n_columns: int) -> None:
        self.count = 0
        self.mean = np.zeros(n_columns)
        self.m2 = np.zeros(n_columns)

    @property
    def var(self) -> np.ndarray:
        return self.m2 / self.count if self.count else np.ones_like(self.m2)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.var)

    def update(self, batch: np.ndarray) -> None:
        """Fold a ``(n, n_columns)`` batch into the statistics.

        :param batch: the new rows
        """
        batch = np.asarray(batch, dtype=float).reshape(-1, len(self.mean))
        n = len(batch)
        if n == 0:
            return
        b_mean = batch.mean(axis=0)
        b_m2 = ((batch - b_mean) ** 2).sum(axis=0)
        total = self.count + n
        delta = b_mean - self.mean
        self.mean = self.mean + delta * n / total
        self.m2 = self.m2 + b_m2 + delta ** 2 * self.count * n / total
        self.count = total


# ----- the preference source: a Bradley-Terry reward model over trajectory features ------------------------
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


def preference_buffer(cfg: ECPOConfig) -> tuple[list[np.ndarray], np.ndarray]:
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


# ----- the calibrator -----------------------------------------------------------------------------------
def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for the binary ``labels`` (the Mann-Whitney U statistic with
    average ranks for ties); NaN when the labels are all equal.

    :param scores: one score per episode
    :param labels: one 0/1 label per episode
    """
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):  # average ranks over runs of equal scores
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def trust_weight(auc: float, floor: float, slope: float) -> float:
    """``floor + (1 - floor) * max(0, 2 sigmoid(slope (auc - 0.5)) - 1)``: the floor at chance level or below.

    :param auc: the source's validation AUC
    :param floor: the least weight
    :param slope: k of the sigmoid
    """
    rise = 2.0 / (1.0 + np.exp(-slope * (auc - 0.5))) - 1.0
    return float(floor + (1.0 - floor) * max(0.0, rise))


def episode_evidence(episode: Episode, preference: PreferenceModel, corruption: KnowledgeCorruption) -> np.ndarray:
    """The ``(T, 5)`` evidence of a played episode, exactly as the training wrapper computes it.

    :param episode: the episode
    :param preference: the preference model
    :param corruption: the knowledge corruption switch (applied when on)
    """
    n = len(episode.actions)
    rows = np.empty((n, len(SOURCES)))
    for t in range(n):
        done = episode.terminations[t] or episode.truncations[t]
        rows[t, :4] = task_evidence(episode.infos[t + 1], episode.rewards[t], done)
    rows[:, 2] = corruption.apply(rows[:, 2])
    rows[:, 4] = preference.step_scores(step_features(np.array(episode.observations[:-1]), np.array(episode.actions)))
    return rows


class Calibrator:
    """Trust weights of the sources, re-estimated from validation episodes.

    :param floor: the least weight
    :param slope: k of the weight sigmoid
    """

    def __init__(self, floor: float, slope: float) -> None:
        if not 0.0 <= floor <= 1.0:
            raise ValueError(f"weight_floor must be in [0, 1], got {floor}")
        if slope <= 0:
            raise ValueError(f"weight_slope must be positive, got {slope}")
        self.floor, self.slope = floor, slope
        self.weights = np.ones(len(SOURCES))
        self.aucs = np.full(len(SOURCES), np.nan)
        self.frozen = False

    def update(self, episode_sums: np.ndarray, success: np.ndarray) -> bool:
        """Score each source's per-episode summed signal against success; set the weights unless frozen.
        Returns False (weights kept) when the episodes are all successes or all failures.

        :param episode_sums: ``(episodes, 5)`` per-episode sums of each source's raw signal
        :param success: ``(episodes,)`` true task success
        """
        self.aucs = np.array([roc_auc(episode_sums[:, i], success) for i in range(len(SOURCES))])
        if np.isnan(self.aucs).any():
            return False
        if not self.frozen:
            self.weights = np.array([trust_weight(a, self.floor, self.slope) for a in self.aucs])
        return True


# ----- the reward wrapper -------------------------------------------------------------------------------
class EvidenceReward(TransitionRewardWrapper):
    """Replaces the reward by ``c_t = sum_i w_i * norm_i(e_i,t)`` (module docstring); observations, dones and
    infos pass through untouched (the same objects the wrapped env returned).

    With ``shaping="potential"`` the ``e_i,t`` are the shaping terms of :class:`EvidencePotential` (one per
    env, reset with its episode), the task reward added to the ``env`` term, and ``norm_i`` divides by the
    running std only (no centering, no clip), so the shaped return telescopes.

    :param venv: the training env
    :param calibrator: holds the current trust weights
    :param preference: the preference model
    :param corruption: the knowledge corruption switch
    :param center: subtract the running mean before dividing by the running std (blog shaping)
    :param norm_clip: clip of the normalised signals (blog shaping)
    :param conflict_z: the z-score threshold of a conflict
    :param shaping: "blog" (each source's per-step signal) or "potential" (its potential difference)
    :param gamma: the discount of the potential shaping (PPO's)
    """

    def __init__(self, venv: VecEnv, calibrator: Calibrator, preference: PreferenceModel,
                 corruption: KnowledgeCorruption, *, center: bool = True, norm_clip: float = 5.0,
                 conflict_z: float = 1.0, shaping: str = "blog", gamma: float = 0.99) -> None:
        if shaping not in SHAPINGS:
            raise ValueError(f"shaping must be one of {SHAPINGS}, got {shaping!r}")
        super().__init__(venv)
        self.calibrator, self.preference, self.corruption = calibrator, preference, corruption
        self.center, self.norm_clip, self.conflict_z = center, norm_clip, conflict_z
        self.shaping = shaping
        self.potentials = [EvidencePotential(gamma) for _ in range(self.num_envs)]
        self.stats = RunningMeanStd(len(SOURCES))
        self.conflicts = np.zeros(len(PAIRS), dtype=np.int64)
        """conflicts per pair of sources (:data:`PAIRS`) since the last :meth:`pop_conflicts`"""
        self.conflict_steps = 0
        self.steps = 0
        self.total_conflicts = np.zeros(len(PAIRS), dtype=np.int64)
        self.total_conflict_steps = 0

    def transition_rewards(self, prev_obs: np.ndarray, actions: np.ndarray, obs: np.ndarray, rewards: np.ndarray,
                           dones: np.ndarray, infos: list[dict]) -> np.ndarray:
        potential = self.shaping == "potential"
        evidence = np.empty((len(infos), len(SOURCES)))
        for i, info in enumerate(infos):  # the potential shaping leaves the task reward out of phi_env
            evidence[i, :4] = task_evidence(info, 0.0 if potential else float(rewards[i]), bool(dones[i]))
        evidence[:, 2] = self.corruption.apply(evidence[:, 2])
        evidence[:, 4] = self.preference.step_scores(step_features(prev_obs, actions))
        if potential:
            evidence = np.stack([p.step(a, row) for p, a, row in zip(self.potentials, actions, evidence)])
            evidence[:, 0] += rewards
            for p, done in zip(self.potentials, dones):
                if done:
                    p.reset()
        return self.calibrated(evidence)

    def reset(self) -> np.ndarray:
        for p in self.potentials:
            p.reset()
        return super().reset()

    def calibrated(self, evidence: np.ndarray) -> np.ndarray:
        """Fold a ``(n_envs, 5)`` batch of evidence into the running statistics, count its conflicts and
        return ``c_t`` per env.

        :param evidence: raw evidence (blog shaping) or shaping terms (potential shaping), one row per env
        """
        self.stats.update(evidence)
        std = self.stats.std + 1e-8
        z = (evidence - self.stats.mean) / std
        high, low = z > self.conflict_z, z < -self.conflict_z
        pair_hits = np.stack([(high[:, i] & low[:, j]) | (low[:, i] & high[:, j]) for i, j in PAIRS], axis=1)
        self.conflicts += pair_hits.sum(axis=0)
        self.conflict_steps += int(pair_hits.any(axis=1).sum())
        self.steps += len(evidence)
        if self.shaping == "potential":
            return ((evidence / std) @ self.calibrator.weights).astype(np.float32)
        norm = z if self.center else evidence / std
        return (np.clip(norm, -self.norm_clip, self.norm_clip) @ self.calibrator.weights).astype(np.float32)

    def pop_conflicts(self) -> tuple[np.ndarray, int, int]:
        """Conflicts per pair, steps with a conflict and steps, since the last call (then reset to 0)."""
        out = (self.conflicts.copy(), self.conflict_steps, self.steps)
        self.total_conflicts += self.conflicts
        self.total_conflict_steps += self.conflict_steps
        self.conflicts[:] = 0
        self.conflict_steps = self.steps = 0
        return out


# ----- the callback: calibration, corruption switch, logging ----------------------------------------------
class ECPOCallback(ValidationEvalCallback):
    """The validation evaluations of :class:`~harness_gym_baselines.algos.ppo.ValidationEvalCallback`, each also re-estimating
    the trust weights; switches the corruption on at ``corrupt_from`` and logs weights, AUCs, normaliser
    statistics and conflicts at every rollout's end.

    :param wrapper: the reward wrapper of the training env
    :param corrupt_from: training step of the corruption switch (-1: never)
    :param freeze_at_corruption: stop re-estimating the weights when the corruption starts
    :param kwargs: the keyword arguments of :class:`~harness_gym_baselines.algos.ppo.ValidationEvalCallback`
    """

    def __init__(self, wrapper: EvidenceReward, *, corrupt_from: int, freeze_at_corruption: bool,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wrapper = wrapper
        self.corrupt_from, self.freeze_at_corruption = corrupt_from, freeze_at_corruption

    def _on_step(self) -> bool:
        corr = self.wrapper.corruption
        if not corr.active and 0 <= self.corrupt_from <= self.num_timesteps:
            corr.active = True
            self.wrapper.calibrator.frozen = self.freeze_at_corruption
        return True

    def _on_rollout_end(self) -> None:
        super()._on_rollout_end()
        pairs, conflict_steps, steps = self.wrapper.pop_conflicts()
        self.logger.record("charts/conflict_rate", conflict_steps / max(steps, 1))
        for (i, j), count in zip(PAIRS, pairs):
            self.logger.record(f"charts/conflicts_{SOURCES[i]}_vs_{SOURCES[j]}", int(count))
        stats = self.wrapper.stats
        for k, name in enumerate(SOURCES):
            self.logger.record(f"charts/weight_{name}", float(self.wrapper.calibrator.weights[k]))
            self.logger.record(f"charts/norm_mean_{name}", float(stats.mean[k]))
            self.logger.record(f"charts/norm_std_{name}", float(stats.std[k]))
        self.logger.record("charts/knowledge_corrupted", float(self.wrapper.corruption.active))

    def on_evaluation(self, episodes: list[Episode], record: dict[str, float]) -> None:
        """Re-estimate the weights from the validation episodes and log them with the AUCs."""
        w = self.wrapper
        sums = np.array([episode_evidence(e, w.preference, w.corruption).sum(axis=0) for e in episodes])
        success = np.array([e.final_info["success"] for e in episodes])
        updated = w.calibrator.update(sums, success)
        for k, name in enumerate(SOURCES):
            self.logger.record(f"charts/auc_{name}", float(w.calibrator.aucs[k]))
            self.logger.record(f"charts/weight_{name}", float(w.calibrator.weights[k]))
        self.logger.record("charts/calibration_skipped", float(not updated))
        record.update({f"weight_{n}": float(v) for n, v in zip(SOURCES, w.calibrator.weights)})
        record.update({f"auc_{n}": float(v) for n, v in zip(SOURCES, w.calibrator.aucs)})
        record["knowledge_corrupted"] = bool(w.corruption.active)
        record["weights_updated"] = bool(updated and not w.calibrator.frozen)


# ----- training -----------------------------------------------------------------------------------------
def train(cfg: ECPOConfig, data: Any = None) -> SB3Policy:
    """Fit the preference model, then train MaskablePPO on the calibrated evidence (``cfg.shaping``); save the
    zip to ``cfg.out`` and return the controller.

    :param cfg: the configuration
    :param data: must be ``None`` (an online trainer; the preference buffer is ``cfg.preference_dataset``)
    """
    if cfg.shaping not in SHAPINGS:
        raise ValueError(f"ECPOConfig.shaping must be one of {SHAPINGS}, got {cfg.shaping!r}")
    algo = ALGO_OF_SHAPING[cfg.shaping]
    if data is not None:
        raise ValueError(f"{algo} is an online trainer: it takes no dataset (see --preference-dataset)")
    seed_everything(cfg.seed, cfg.torch_threads)
    log_dir = f"{cfg.log_dir}/{run_name(cfg, algo)}"
    logger = configure(log_dir, ["tensorboard"])
    start = time.perf_counter()

    # 1. the preference source: a Bradley-Terry model on ranked pairs of buffer trajectories
    feats, quality = preference_buffer(cfg)
    preference = PreferenceModel(feats[0].shape[1], cfg.preference_hidden).fit(
        feats, quality, steps=cfg.preference_steps, pairs=cfg.preference_pairs, seed=cfg.seed, writer=logger)
    logger.record("charts/preference_heldout_pair_accuracy", preference.heldout_accuracy)
    logger.dump(0)
    preference_seconds = time.perf_counter() - start

    # 2. the training env with the calibrated reward, the learner and the calibrating callback
    calibrator = Calibrator(cfg.weight_floor, cfg.weight_slope)
    corruption = KnowledgeCorruption(cfg.corrupt_rate, seed=cfg.seed + 7919)
    venv = EvidenceReward(make_training_env(cfg), calibrator, preference, corruption, center=cfg.center,
                          norm_clip=cfg.norm_clip, conflict_z=cfg.conflict_z, shaping=cfg.shaping,
                          gamma=cfg.gamma)
    model = make_model(cfg, venv)
    model.set_logger(logger)
    env_kwargs = config_env_kwargs(cfg)
    callback = ECPOCallback(venv, corrupt_from=cfg.corrupt_from, freeze_at_corruption=cfg.freeze_weights_at_corruption,
                            env_id=cfg.env_id, env_kwargs=env_kwargs, eval_every=cfg.eval_every,
                            episodes=cfg.eval_episodes, seed=cfg.seed)

    # 3. PPO on c_t
    model.learn(total_timesteps=cfg.steps, callback=learn_callbacks(cfg, callback))
    venv.pop_conflicts()
    venv.close()
    train_seconds = time.perf_counter() - start
    save_model(model, cfg, algo, eval_history=callback.history, train_seconds=train_seconds,
               preference_seconds=preference_seconds, preference_heldout_accuracy=preference.heldout_accuracy,
               weights=dict(zip(SOURCES, calibrator.weights.tolist())),
               aucs=dict(zip(SOURCES, calibrator.aucs.tolist())),
               conflicts={f"{SOURCES[i]}_vs_{SOURCES[j]}": int(c) for (i, j), c in zip(PAIRS, venv.total_conflicts)},
               conflict_steps=int(venv.total_conflict_steps),
               normaliser={"mean": dict(zip(SOURCES, venv.stats.mean.tolist())),
                           "std": dict(zip(SOURCES, venv.stats.std.tolist()))})
    return final_report(SB3Policy(model, name=algo), cfg, env_kwargs, log_dir)


def load(path: str | Path) -> SB3Policy:
    """The controller in a model zip that :func:`train` wrote (ppo's format, :mod:`harness_gym_baselines.policies.sb3_zip`)."""
    return load_sb3_policy(path)



if __name__ == "__main__":  # the same as harness-gym train ecpo (one way to run a trainer)
    from harness_gym_baselines.common.trainer_registry import run_trainer

    run_trainer("ecpo")
