"""The coverage policy that fills the offline comparison's buffers: the alternatives a learner must compare.

An offline learner can only prefer what its buffer holds. A buffer of one script plus noise
(:class:`~harness_gym_baselines.policies.behaviour.BehaviourPolicy`) holds that script and one-step
deviations from it, so BC clones the script and AWR improves it by one step at best. :class:`CoveragePolicy`
draws, per episode, one component of a fixed mixture (:class:`CoverageMix`, fixed before any result and not
tuned toward one):

- **searched** (0.45): one of the top-K open-loop scripts of ``harness-gym search-script`` for this env
  (:func:`searched_scripts`), uniformly;
- **named** (0.45): static, forced-check or thorough, uniformly;
- **random** (0.10): the uniform random policy for the whole episode;

and in searched and named episodes, at every step with probability 0.1, a uniformly random applicable action
instead of the script's (the script then carries on from the state that action left). Without searched
scripts (``CoveragePolicy()``, the ``coverage`` name of the policy registry) their share goes to the named
scripts. The draw depends on the episode's reset seed only, so a buffer is the same for any number of
collecting processes, and :func:`record_components` can write which component played each episode into the
dataset's metadata (``coverage`` key) after collection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from harness_gym.running.rollout import Policy, episode_seed, harness_env
from harness_gym_baselines.policies.behaviour import check_probabilities
from harness_gym_baselines.policies.open_loop import Script, ScriptPolicy, is_script_name
from harness_gym_baselines.policies.scripted import RandomPolicy, StaticPolicy, ThoroughPolicy

NAMED: tuple[str, ...] = ("static", "forced-check", "thorough")
"""The named scripts of the mixture's ``named`` component."""
TOP_K = 4
"""How many searched scripts the ``searched`` component draws from (:func:`searched_scripts`)."""


@dataclass(frozen=True)
class CoverageMix:
    """The mixture's probabilities (module docstring)."""

    searched: float = 0.45
    """per episode: a searched script plays it"""
    named: float = 0.45
    """per episode: a named script (static, forced-check, thorough) plays it"""
    random: float = 0.10
    """per episode: the uniform random policy plays it"""
    deviate: float = 0.1
    """per step of a searched or named script: a uniformly random applicable action instead"""

    def __post_init__(self) -> None:
        check_probabilities(self)
        if not np.isclose(self.searched + self.named + self.random, 1.0):
            raise ValueError(f"CoverageMix: searched + named + random must be 1, got "
                             f"{self.searched + self.named + self.random}")


def _named_policy(name: str) -> Policy:
    return {"static": StaticPolicy, "forced-check": lambda: StaticPolicy(check=True),
            "thorough": ThoroughPolicy}[name]()


def searched_scripts(result: Mapping[str, Any], k: int = TOP_K) -> list[str]:
    """The top-``k`` open-loop scripts of a script search's result (``harness-gym search-script``'s JSON): the
    winners of its cost weights, then the other finalists, without repeats; a named harness among them (the best
    fixed strategy may be one) is left out, since the mixture's ``named`` share plays those.

    :param result: the search's result object (:func:`harness_gym_baselines.experiments.script_search.search`)
    :param k: the most scripts returned
    """
    names = [w["script"] for w in result.get("winners", {}).values()] + list(result.get("finalists", []))
    return [name for name in dict.fromkeys(names) if is_script_name(name)][:k]


class CoveragePolicy:
    """The seeded mixture of searched scripts, named scripts, random episodes and per-step deviations
    (module docstring).

    :param scripts: the searched scripts (names ``O<a>-R<b>-T<c>-D-T<p>-C<k>`` or :class:`Script`); none moves
        the ``searched`` share to the named scripts
    :param mix: the mixture's probabilities
    """

    def __init__(self, scripts: Iterable[Script | str] = (), mix: CoverageMix | None = None) -> None:
        self.scripts: tuple[Script, ...] = tuple(s if isinstance(s, Script) else Script.parse(s) for s in scripts)
        self.mix = mix or CoverageMix()
        self.name = "coverage" + (f"[{','.join(s.name for s in self.scripts)}]" if self.scripts else "")
        self.rng = np.random.default_rng(0)
        self.component = "random"
        self.inner: Policy = RandomPolicy()

    def draw(self, rng: np.random.Generator) -> str:
        """The component of an episode: ``searched:<script>``, a named script, or ``random``.

        :param rng: the episode's generator, seeded with its reset seed
        """
        searched = self.mix.searched if self.scripts else 0.0
        named = self.mix.named + (self.mix.searched - searched)
        u = rng.random()
        if u < searched:
            return f"searched:{self.scripts[int(rng.integers(len(self.scripts)))].name}"
        if u < searched + named:
            return NAMED[int(rng.integers(len(NAMED)))]
        return "random"

    def component_of(self, seed: int | None) -> str:
        """The component that plays the episode reset with ``seed`` (the draw :meth:`reset` makes)."""
        return self.draw(np.random.default_rng(seed))

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.component = self.draw(self.rng)
        if self.component.startswith("searched:"):
            self.inner = ScriptPolicy(self.component.removeprefix("searched:"))
        elif self.component == "random":
            self.inner = RandomPolicy()
        else:
            self.inner = _named_policy(self.component)
        self.inner.reset(env, seed)

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        if self.component != "random" and self.rng.random() < self.mix.deviate:
            return int(self.rng.choice(np.flatnonzero(harness_env(env).action_masks())))
        return int(self.inner.act(obs, env))


def episode_components(policy: CoveragePolicy, seed: int, episodes: int) -> list[str]:
    """The component of each episode of a collection run with ``seed`` (reset seeds
    :func:`harness_gym.running.rollout.episode_seed`), in episode order.

    :param policy: the coverage policy that collected
    :param seed: the collection's seed
    :param episodes: how many episodes it collected
    """
    return [policy.component_of(episode_seed(seed, i)) for i in range(episodes)]


def record_components(dataset: Any, policy: CoveragePolicy) -> dict[str, Any]:
    """Write the mixture and each episode's component into the metadata of a Minari dataset that
    :func:`harness_gym.datasets.collect` filled with ``policy`` (key ``coverage``); returns what was written.

    :param dataset: the ``minari.MinariDataset``
    :param policy: the coverage policy that collected it
    """
    settings = dataset.storage.metadata["harness_gym"]["settings"]
    record = {"policy": policy.name, "mix": asdict(policy.mix), "scripts": [s.name for s in policy.scripts],
              "components": episode_components(policy, settings["seed"], settings["episodes"])}
    if dataset.storage.metadata.get("coverage") != record:
        dataset.storage.update_metadata({"coverage": record})
    return record


def component_kind(component: str) -> str:
    """``searched``, ``named`` or ``random``: the mixture entry a component belongs to."""
    return "searched" if component.startswith("searched:") else ("random" if component == "random" else "named")


def component_shares(components: Sequence[str]) -> dict[str, float]:
    """The share of episodes of each mixture entry (:func:`component_kind`)."""
    kinds = [component_kind(c) for c in components]
    return {kind: kinds.count(kind) / max(len(kinds), 1) for kind in ("searched", "named", "random")}
