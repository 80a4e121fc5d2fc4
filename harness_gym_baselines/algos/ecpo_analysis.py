"""Reward farming in trained ECPO models: the blog evidence term ``b_t`` a stored ``ecpo`` model was trained on
(:class:`BlogEvidenceTerm`, rebuilt from the record in its zip) and how often a policy repeats an action that
earned evidence under it (:func:`farming_steps`, :func:`farming_share`), which the ECPO comparison
(:mod:`harness_gym_baselines.experiments.ecpo_comparison`) reports beside the potential-based variant's
(docs/ecpo.md). An analysis of trained models, not part of training: :mod:`harness_gym_baselines.algos.ecpo`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness_gym.core.evidence import EVIDENCE_SOURCES
from harness_gym.running.rollout import Episode
from harness_gym_baselines.algos.ecpo import task_evidence


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
