"""The two references every results table reports beside the learned rows, at each cost weight ``w``.

- **best fixed strategy** (``best-fixed-w<w>``): the winner at ``w`` of the script search
  (:func:`harness_gym_baselines.experiments.script_search.choose_winners`: successive halving of the open-loop
  scripts on train, the finalists and the named harnesses compared on val), the best *fixed* harness there is
  (at least every named harness on val);
- **closed-loop probe** (``probe-w<w>``): the linear controller over the observation of the headroom benchmark
  (:func:`harness_gym_baselines.experiments.headroom.fit_probe`: imitation of that script on train, refined by
  the cross-entropy method, the better of the two on val), what reading the observation yields without learning
  in the sense of the tables' learners.

Neither sees the test split: the tables evaluate them on the same seeded test episodes as every other row
(:func:`harness_gym_baselines.experiments.offline_comparison.run_cell`). The search scores every weight in one
pass (a script's Q and cost on an episode do not depend on ``w``), so one env is searched once and the probe is
fitted per weight.

Cache: ``CACHE/<env>[_<variant>]-w<w>-seed<seed>.json`` per (env, data variant, weight, seed) holds the script's
name, the probe's weights and the record of how both were found (finalists' val returns, the probe's val returns,
seconds); it is reused when its settings (:class:`ReferenceSizes`, env keywords, seed) match, so a resumed
reproduce and the other tables get the same policies without searching again. Sizes: :attr:`ReferenceSizes.FULL`
(the headroom benchmark's defaults) and :attr:`ReferenceSizes.QUICK`.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.running.rollout import Policy
from harness_gym_baselines.experiments.headroom import HeadroomConfig, LinearPolicy, fit_probe
from harness_gym_baselines.experiments.script_search import SearchConfig, choose_winners, fixed_policy
from harness_gym_baselines.experiments.specs.sizes import ReferenceSizes

FORMAT = 2
"""The layout of a cache file; a file of another layout is recomputed."""
KINDS = ("best-fixed", "probe")
"""The two references, in table order."""
_NAME = re.compile(r"^(?P<kind>best-fixed|probe)-w(?P<w>[0-9.eE+-]+)$")


@dataclass
class FixedReferences:
    """The references of one env, weight and seed, ready for :func:`harness_gym.running.rollout.play_episode`."""

    cost_weight: float
    script: Policy
    """the best fixed strategy (a searched script or a named harness), named ``best-fixed-w<w>``"""
    probe: LinearPolicy
    """the closed-loop probe, named ``probe-w<w>``"""
    record: dict[str, Any]
    """the cache file's content: settings, script, probe weights, val returns, seconds"""

    def policies(self) -> dict[str, Any]:
        """``{table name: policy}`` of both references."""
        return {self.script.name: self.script, self.probe.name: self.probe}


def reference_name(kind: str, w: float) -> str:
    """The table and file name of a reference: ``best-fixed-w0.01``, ``probe-w0``.

    :param kind: one of :data:`KINDS`
    :param w: the cost weight it was chosen at
    """
    if kind not in KINDS:
        raise ValueError(f"reference kind {kind!r}: expected one of {', '.join(KINDS)}")
    return f"{kind}-w{w:g}"


def parse_reference_name(name: str) -> tuple[str, float] | None:
    """``(kind, w)`` of a :func:`reference_name`, ``None`` for any other controller name.

    :param name: a controller name
    """
    match = _NAME.match(name)
    return None if match is None else (match["kind"], float(match["w"]))


def reference_names(names: Sequence[str]) -> list[str]:
    """The reference names among ``names``, by weight, the best fixed before the probe at each weight.

    :param names: controller names
    """
    parsed = {name: parse_reference_name(name) for name in names}
    return sorted((n for n, p in parsed.items() if p is not None),
                  key=lambda n: (parsed[n][1], KINDS.index(parsed[n][0])))


def cache_path(cache_dir: str | os.PathLike, env_id: str, w: float, seed: int, variant: str = "") -> Path:
    """Where the references of (env, variant, w, seed) are cached.

    :param cache_dir: the cache folder
    :param env_id: the env id
    :param w: the cost weight
    :param seed: the seed
    :param variant: the public-data variant (``""``: the env's own data)
    """
    label = env_id + (f"_{variant}" if variant else "")
    return Path(cache_dir) / f"{label}-w{w:g}-seed{seed}.json"


def _settings(env_id: str, env_kwargs: dict[str, Any], w: float, seed: int, variant: str,
              sizes: ReferenceSizes) -> dict[str, Any]:
    return json.loads(json.dumps({"format": FORMAT, "env_id": env_id, "variant": variant, "env_kwargs": env_kwargs,
                                  "cost_weight": w, "seed": seed, "sizes": asdict(sizes)}, default=str))


def _policies(record: dict[str, Any]) -> FixedReferences:
    w = float(record["settings"]["cost_weight"])
    script = fixed_policy(record["script"])
    script.name = reference_name("best-fixed", w)
    probe = LinearPolicy(np.array(record["probe_weights"], dtype=np.float64), name=reference_name("probe", w))
    return FixedReferences(w, script, probe, record)


def fixed_references(env_id: str, cost_weights: Sequence[float], *, cache_dir: str | os.PathLike,
                     env_kwargs: dict[str, Any] | None = None, variant: str = "", seed: int = 0,
                     sizes: ReferenceSizes = ReferenceSizes.FULL,
                     progress: bool = False) -> dict[float, FixedReferences]:
    """The best searched script and the closed-loop probe of ``env_id`` at every weight of ``cost_weights``
    (module docstring), read from the cache where it holds them with the same settings, else found (one search
    for the weights missing, then one probe per weight) and cached.

    :param env_id: a registered env id
    :param cost_weights: the weights w of the return ``Q - w * cost``
    :param cache_dir: the cache folder
    :param env_kwargs: constructor keywords of the env (prices, budget_units, a public-data path; not cost_weight)
    :param variant: the name of a public-data variant, for the cache file's name
    :param seed: seed of the train and val episodes and of the CEM
    :param sizes: :attr:`ReferenceSizes.FULL`, :attr:`ReferenceSizes.QUICK` or your own
    :param progress: show progress bars
    :raises ValueError: a weight that is negative or not finite, or ``cost_weight`` among ``env_kwargs``
    """
    env_kwargs = dict(env_kwargs or {})
    if "cost_weight" in env_kwargs:
        raise ValueError("fixed_references: env_kwargs must not hold cost_weight; give the weights as cost_weights")
    weights = list(dict.fromkeys(float(w) for w in cost_weights))
    bad = [w for w in weights if not math.isfinite(w) or w < 0]
    if bad or not weights:
        raise ValueError(f"fixed_references: cost weights must be finite and >= 0, got {list(cost_weights)}")
    out: dict[float, FixedReferences] = {}
    for w in weights:
        path = cache_path(cache_dir, env_id, w, seed, variant)
        if path.is_file():
            record = json.loads(path.read_text())
            if record.get("settings") == _settings(env_id, env_kwargs, w, seed, variant, sizes):
                out[w] = _policies(record)
    missing = [w for w in weights if w not in out]
    if not missing:
        return out
    start = time.perf_counter()
    search_cfg = SearchConfig(env_id, cost_weights=tuple(missing), env_kwargs=env_kwargs, seed=seed,
                              rounds=sizes.rounds, val_episodes=sizes.val_episodes)
    chosen = choose_winners(search_cfg, progress=progress)
    search_seconds = time.perf_counter() - start
    probe_cfg = HeadroomConfig(env_id, cost_weights=tuple(missing), env_kwargs=env_kwargs, seed=seed,
                               bc_episodes=sizes.bc_episodes, cem_iterations=sizes.cem_iterations,
                               cem_population=sizes.cem_population, cem_elite=sizes.cem_elite,
                               cem_episodes=sizes.cem_episodes, val_episodes=sizes.val_episodes)
    for w in missing:
        winner = chosen["winners"][f"{w:g}"]
        start = time.perf_counter()
        probe, fitted = fit_probe(probe_cfg, winner["script"], w, progress=progress)
        record = {"settings": _settings(env_id, env_kwargs, w, seed, variant, sizes), "script": winner["script"],
                  "script_val_return": winner["val_return"], "candidates": chosen["candidates"],
                  "finalist_val_returns": {name: by_w[f"{w:g}"] for name, by_w in chosen["finalist_val_returns"].items()},
                  "searched_with_weights": missing, "search_seconds": search_seconds,
                  "probe_val_return": fitted["val_return"], "probe_chosen": fitted["chosen"],
                  "probe_cem": fitted["cem"], "probe_weights": probe.weights.tolist(),
                  "probe_seconds": time.perf_counter() - start}
        path = cache_path(cache_dir, env_id, w, seed, variant)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        tmp.replace(path)
        out[w] = _policies(record)
    return {w: out[w] for w in weights}
