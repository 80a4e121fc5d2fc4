"""Every size dataclass of the experiments, in one place: how much data, training and evaluation each spec gets.

- :class:`ReferenceSizes`: the best-fixed search and the probe fit (:mod:`..fixed_references`), ``FULL`` and
  ``QUICK``;
- :class:`ReproduceSizes`: ``harness-gym reproduce``'s stages (:data:`REPRODUCE_FULL`, :data:`REPRODUCE_QUICK`;
  ``--size FIELD=VALUE``: :func:`parse_size_overrides`);
- :class:`LearnersAtCostSizes`: learners at a cost (:data:`LEARNERS_FULL`, :data:`LEARNERS_QUICK`;
  ``--size FIELD=VALUE``: :func:`with_sizes`).

The per-search configs :class:`~harness_gym_baselines.experiments.script_search.SearchConfig` and
:class:`~harness_gym_baselines.experiments.headroom.HeadroomConfig` (an env, a seed and their sizes) stay with
their searches; the sizes here default to their fields.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from harness_gym_baselines.experiments.headroom import HeadroomConfig
from harness_gym_baselines.experiments.script_search import SearchConfig


@dataclass(frozen=True)
class ReferenceSizes:
    """How hard the search and the probe fit work (the fields of :class:`SearchConfig` and
    :class:`HeadroomConfig` of the same names)."""

    rounds: tuple[tuple[int, int], ...]
    """successive halving on train: (episodes, how many to keep per weight) per round"""
    val_episodes: int
    """val episodes that pick the winning script among the finalists, and the probe between imitation and CEM"""
    bc_episodes: int
    """train episodes of the script the probe imitates"""
    cem_iterations: int
    cem_population: int
    cem_elite: int
    cem_episodes: int
    """train episodes per CEM candidate per iteration"""

    FULL: ClassVar[ReferenceSizes]
    """the headroom benchmark's defaults"""
    QUICK: ClassVar[ReferenceSizes]
    """a few seconds to a minute per env and three weights on one core (docs/reproduce.md)"""

    def __post_init__(self) -> None:
        for name in ("val_episodes", "bc_episodes", "cem_population", "cem_elite", "cem_episodes"):
            if getattr(self, name) < 1:
                raise ValueError(f"ReferenceSizes.{name} must be >= 1, got {getattr(self, name)}")
        if self.cem_iterations < 0 or not self.rounds or any(n < 1 or k < 1 for n, k in self.rounds):
            raise ValueError(f"ReferenceSizes: cem_iterations >= 0 and rounds of (episodes >= 1, keep >= 1) "
                             f"expected, got {self.cem_iterations} and {self.rounds}")
        if self.cem_elite > self.cem_population:
            raise ValueError(f"ReferenceSizes.cem_elite ({self.cem_elite}) must not exceed cem_population "
                             f"({self.cem_population})")


ReferenceSizes.FULL = ReferenceSizes(
    rounds=SearchConfig.rounds, val_episodes=HeadroomConfig.val_episodes, bc_episodes=HeadroomConfig.bc_episodes,
    cem_iterations=HeadroomConfig.cem_iterations, cem_population=HeadroomConfig.cem_population,
    cem_elite=HeadroomConfig.cem_elite, cem_episodes=HeadroomConfig.cem_episodes)
ReferenceSizes.QUICK = ReferenceSizes(rounds=((2, 16), (8, 6), (24, 3)), val_episodes=60, bc_episodes=40,
                                      cem_iterations=4, cem_population=10, cem_elite=3, cem_episodes=10)


@dataclass(frozen=True)
class ReproduceSizes:
    """How big each stage is (``--size FIELD=VALUE`` sets one field)."""

    seeds: int
    """training seeds of the offline learners (buffer + training)"""
    buffer_episodes: int
    """episodes per behaviour buffer"""
    eval_episodes: int
    """test-split episodes per (env, controller, seed) cell"""
    epochs: int
    """training epochs of BC and AWR"""
    ref_score_episodes: int
    """episodes of random and oracle for a dataset's reference scores"""
    online_seeds: int
    """training seeds of ppo-sparse, ppo-dense and ECPO"""
    online_steps: int
    """environment steps per online training run"""
    ecpo_episodes: int
    """test- and ood-split episodes per cell of the ECPO table"""
    corruption_seeds: int
    corruption_steps: int
    """ECPO steps per arm of the corruption experiment"""
    corrupt_from: int
    """training step at which the knowledge corruption starts"""
    sim_seeds: int
    """simulated-worker seeds per recorded episode (sim-to-real)"""
    examples: int
    """example episodes rendered in the report"""
    ref_val_episodes: int
    """val episodes that choose the best searched script and the probe (:class:`ReferenceSizes`)"""
    ref_cem_iterations: int
    """cross-entropy iterations of the probe fit"""

    def references(self, quick: bool) -> ReferenceSizes:
        """The sizes of the best-fixed search and the probe fit: :attr:`ReferenceSizes.QUICK` or
        :attr:`ReferenceSizes.FULL` with this run's val episodes and CEM iterations."""
        return dataclasses.replace(ReferenceSizes.QUICK if quick else ReferenceSizes.FULL,
                                   val_episodes=self.ref_val_episodes, cem_iterations=self.ref_cem_iterations)


REPRODUCE_FULL = ReproduceSizes(
    seeds=5, buffer_episodes=2000, eval_episodes=200, epochs=30, ref_score_episodes=100, online_seeds=3,
    online_steps=40_000, ecpo_episodes=100, corruption_seeds=3, corruption_steps=30_000, corrupt_from=10_000,
    sim_seeds=20, examples=3, ref_val_episodes=ReferenceSizes.FULL.val_episodes,
    ref_cem_iterations=ReferenceSizes.FULL.cem_iterations)
"""the sizes of ``harness-gym reproduce``'s full run"""
REPRODUCE_QUICK = ReproduceSizes(
    seeds=2, buffer_episodes=300, eval_episodes=50, epochs=30, ref_score_episodes=20, online_seeds=1,
    online_steps=40_000, ecpo_episodes=50, corruption_seeds=1, corruption_steps=20_000, corrupt_from=8_000,
    sim_seeds=5, examples=3, ref_val_episodes=ReferenceSizes.QUICK.val_episodes,
    ref_cem_iterations=ReferenceSizes.QUICK.cem_iterations)
"""the sizes of ``harness-gym reproduce --quick``"""


def parse_size_overrides(base: ReproduceSizes, pairs: list[str]) -> ReproduceSizes:
    """``base`` with ``FIELD=VALUE`` overrides; a clear error naming a bad field or value.

    :param base: the sizes to start from
    :param pairs: ``--size`` values
    """
    fields = {f.name for f in dataclasses.fields(ReproduceSizes)}
    changes: dict[str, int] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name not in fields:
            raise ValueError(f"--size {pair!r}: expected FIELD=VALUE with FIELD one of {', '.join(sorted(fields))}")
        try:
            changes[name] = int(value)
        except ValueError:
            raise ValueError(f"--size {pair!r}: {value!r} is not an integer") from None
        if changes[name] < (0 if name == "examples" else 1):
            raise ValueError(f"--size {pair!r}: must be positive")
    sizes = dataclasses.replace(base, **changes)
    if sizes.corrupt_from >= sizes.corruption_steps:
        raise ValueError(f"--size: corrupt_from ({sizes.corrupt_from}) must be below corruption_steps "
                         f"({sizes.corruption_steps}), or the corruption never starts")
    return sizes


@dataclass(frozen=True)
class LearnersAtCostSizes:
    """How much data, training and evaluation every (env, w) gets; the same for every env. ``None`` leaves a
    trainer's own default. Each field is a ``--size FIELD=VALUE``."""

    buffer_episodes: int = 1000
    """episodes of each behaviour buffer (train split)"""
    offline_seeds: int = 3
    """buffer + training seeds of every offline learner"""
    epochs: int | None = None
    """policy-fit epochs of bc, awr, awr-q and iql (None: BCConfig's)"""
    value_steps: int | None = None
    """value-learning steps of iql and cql (None: their configs')"""
    online_seeds: int = 2
    """training seeds of every online learner"""
    online_steps: int | None = None
    """environment steps of every online learner (None: PPOConfig.steps)"""
    ecpo_preference_episodes: int | None = None
    """behaviour episodes of ecpo's preference model (None: ECPOConfig's)"""
    test_episodes: int = 200
    """test-split episodes of every cell (the same seeded episodes for every controller)"""
    test_seed: int = 0
    """seed of the test episodes"""
    search_rounds: tuple[tuple[int, int], ...] = SearchConfig.rounds
    """successive halving of the script search: (train episodes, kept per weight) per round"""
    search_val_episodes: int = SearchConfig.val_episodes
    """val episodes that pick the best fixed among the finalists, and the probe between imitation and CEM"""
    probe_bc_episodes: int = HeadroomConfig.bc_episodes
    """train episodes of the best fixed the probe is first fitted to"""
    probe_cem_iterations: int = HeadroomConfig.cem_iterations
    probe_cem_population: int = HeadroomConfig.cem_population
    probe_cem_elite: int = HeadroomConfig.cem_elite
    probe_cem_episodes: int = HeadroomConfig.cem_episodes

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, int) and not isinstance(value, bool) and value < (0 if f.name == "test_seed" else 1):
                raise ValueError(f"LearnersAtCostSizes.{f.name} must be >= 1, got {value}")
        if self.probe_cem_elite > self.probe_cem_population:
            raise ValueError(f"Sizes.probe_cem_elite ({self.probe_cem_elite}) must be <= probe_cem_population "
                             f"({self.probe_cem_population})")


LEARNERS_FULL = LearnersAtCostSizes()
"""The sizes of learners_at_cost's reported run."""
LEARNERS_QUICK = LearnersAtCostSizes(
    buffer_episodes=200, offline_seeds=2, online_seeds=1, online_steps=8192, ecpo_preference_episodes=100,
    test_episodes=100, search_rounds=((8, 16), (24, 4)), search_val_episodes=100, probe_bc_episodes=50,
    probe_cem_iterations=4, probe_cem_population=12, probe_cem_elite=4, probe_cem_episodes=12)
"""learners_at_cost's ``--quick``: a smoke run of the whole pipeline in minutes per env (not for conclusions)."""


def with_sizes(base: LearnersAtCostSizes, pairs: Sequence[str]) -> LearnersAtCostSizes:
    """``base`` with ``FIELD=VALUE`` pairs applied (VALUE read as JSON; lists become tuples).

    :param base: the sizes to start from
    :param pairs: ``--size`` arguments
    """
    names = [f.name for f in dataclasses.fields(LearnersAtCostSizes)]
    changes: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep:
            raise ValueError(f"--size {pair!r}: expected FIELD=VALUE")
        if key not in names:
            close = difflib.get_close_matches(key, names, n=3)
            raise ValueError(f"--size {key}: no such size; did you mean {', '.join(close)}?" if close else
                             f"--size {key}: no such size; expected one of {', '.join(names)}")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--size {key}={raw}: VALUE is not JSON ({exc.msg})") from exc
        changes[key] = _tuples(value)
    return dataclasses.replace(base, **changes)


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value
