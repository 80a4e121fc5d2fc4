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
- **Potential-based variant** (``shaping="potential"``, the trainer ``ecpo-pb``, the preset :data:`ECPOPBConfig`):
  each source k enters as ``gamma * phi_k(s') - phi_k(s)`` of a potential of the harness state
  (:class:`EvidencePotential`; Ng, Harada and Russell, 1999) instead of its per-step value, and the task reward
  ``r_t`` is added to the ``env`` term as it is; each term is divided by its running std (not centred, not
  clipped, so an episode's sum still telescopes). A step that repeats an earlier one and gets the same verdict
  leaves every potential unchanged and earns nothing; the sum over an episode is ``phi(s_T) - phi(s_0)`` at
  ``gamma = 1``, however many steps were repeated. :func:`~harness_gym_baselines.algos.ecpo_analysis.farming_share` measures how often a policy repeats
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
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

import numpy as np
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import VecEnv

from harness_gym.core.actions import N_ACTIONS
from harness_gym.core.evidence import EVIDENCE_SOURCES
from harness_gym.core.prices import DEFAULT_PROFILE
from harness_gym.running.rollout import Episode
from harness_gym_baselines.algos.ecpo_preference import PreferenceModel, preference_buffer, step_features
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

SOURCES: tuple[str, ...] = (*EVIDENCE_SOURCES, "preference")
"""the evidence sources, in the column order of every evidence array here"""
PAIRS: tuple[tuple[int, int], ...] = tuple(combinations(range(len(SOURCES)), 2))
SHAPINGS: tuple[str, ...] = ("blog", "potential")
"""how the evidence enters the reward (:attr:`ECPOConfig.shaping`)"""
ALGO_OF_SHAPING: dict[str, str] = {"blog": "ecpo", "potential": "ecpo-pb"}
"""the trainer name a model file records, per shaping"""


@dataclass
class ECPOConfig:
    """The settings of ECPO; each field is a flag of ``harness-gym train ecpo`` (PPO's fields with PPO's defaults,
    then the evidence calibration; the preset :data:`ECPOPBConfig` fixes ``shaping``)."""

    env_id: str = field(default="HarnessResearchQA-v1", metadata={"flags": ("--env",), "required": True})
    """the env id to train on (episodes are drawn from its train split)"""
    steps: int = 40_000
    """environment steps of training (summed over the parallel envs); the default was chosen on the val split,
    the same for every env (docs/online_rl.md)"""
    out: str = "models/ecpo.zip"
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


ECPOPBConfig = preset_config(
    ECPOConfig, "ECPOPBConfig", fixed={"shaping": "potential"}, out="models/ecpo-pb.zip",
    summary="Potential-based ECPO (``ecpo-pb``): the seed blog's ECPO with each evidence source entering the reward "
            "as a potential difference ``gamma * phi_k(s') - phi_k(s)`` (Ng, Harada and Russell, 1999), so a step "
            "repeated with the verdict it got before earns nothing. Everything else (the sources, the trust weights, "
            "the preference model, the corruption switch, the flags) is :mod:`harness_gym_baselines.algos.ecpo`; "
            "the potentials are its :class:`~harness_gym_baselines.algos.ecpo.EvidencePotential` (docs/ecpo.md, "
            "\"The potential-based variant\").")
"""``harness-gym train ecpo-pb``: :class:`ECPOConfig` with the potential-based shaping"""


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
    """The validation evaluations of :class:`~harness_gym_baselines.algos.online_common.ValidationEvalCallback`, each also re-estimating
    the trust weights; switches the corruption on at ``corrupt_from`` and logs weights, AUCs, normaliser
    statistics and conflicts at every rollout's end.

    :param wrapper: the reward wrapper of the training env
    :param corrupt_from: training step of the corruption switch (-1: never)
    :param freeze_at_corruption: stop re-estimating the weights when the corruption starts
    :param kwargs: the keyword arguments of :class:`~harness_gym_baselines.algos.online_common.ValidationEvalCallback`
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
