"""The sim-to-real comparison on a recording of a real model: the real model (replayed from the record/replay
cache, no server) against the simulated worker on its default and on its fitted profile, for the same
controllers on the same tasks.

For each env of the recording's manifest: fit the domain's profile to the recorded episodes
(:mod:`harness_gym.workers.calibrate`), then report per controller the mean quality Q and LLM calls with the
real model, and Q of the simulated worker with the default and with the fitted profile on the same tasks
(``sim_seeds`` seeds each, since the simulator is cheap). ``benchmarks/sim_to_real.py`` and ``harness-gym
reproduce`` (``table_sim_to_real.md``) both run :func:`sim_to_real`; ``benchmarks/record_llm.py`` records with
:func:`run_on_task`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.paths import data_path
from harness_gym.workers.calibrate import ProfileFit, collect_events, fit_profile
from harness_gym.workers.profile import WorkerProfile
from harness_gym_baselines.policies import StaticPolicy, ThoroughPolicy

COST_KEYS = ("llm_calls", "llm_errors", "prompt_tokens", "completion_tokens", "latency_s")
POLICIES = {"static": lambda: StaticPolicy(check=False), "forced-check": lambda: StaticPolicy(check=True),
            "thorough": ThoroughPolicy}
"""the controllers a recording holds, by the name its manifest uses"""


def run_on_task(env: gym.Env, policy: Any, task_id: str, seed: int) -> dict[str, Any]:
    """One episode of ``policy`` on ``task_id``: its actions, quality and summed cost.

    :param env: the env
    :param policy: a controller with ``reset`` and ``act``
    :param task_id: the task
    :param seed: the reset seed
    """
    from harness_gym.core.actions import Action

    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    policy.reset(env, seed)
    actions: list[int] = []
    cost = dict.fromkeys(COST_KEYS, 0.0)
    term = trunc = False
    while not (term or trunc):
        act = int(policy.act(obs, env))
        actions.append(act)
        obs, reward, term, trunc, info = env.step(act)
        for key in COST_KEYS:
            cost[key] += info["cost"][key]
    return {"task_id": task_id, "seed": seed, "actions": actions, "quality": float(info["quality"]),
            "cost": {k: (round(v, 6) if k == "latency_s" else int(v)) for k, v in cost.items()},
            "drafts": sum(a in (Action.DRAFT, Action.REVISE) for a in actions)}


@dataclass
class SimToRealRow:
    """One controller on one env of the recording."""

    env_id: str
    controller: str
    tasks: int
    q_real: float
    """mean quality with the real model (replayed)"""
    q_sim_default: float
    """mean quality of the simulated worker with the domain's shipped profile"""
    q_sim_fitted: float
    """the same with the profile fitted to the recording"""
    llm_calls_real: float


def default_manifest() -> Path:
    """The shipped SmolLM2 recording's manifest (``envs_data/recordings/smollm2.json``)."""
    return Path(data_path("recordings", "smollm2.json"))


def sim_to_real(manifest_path: Path | None = None, *, sim_seeds: int = 20,
                profiles_out: Path | None = None) -> tuple[list[SimToRealRow], dict[str, ProfileFit], dict[str, Any]]:
    """Replay the recording, fit a profile per env and compare real and simulated quality.

    :param manifest_path: the recording's manifest (default :func:`default_manifest`)
    :param sim_seeds: seeds of the simulated worker per recorded episode
    :param profiles_out: a folder to write the fitted profiles to (``<domain>.json``), or ``None``
    :returns: the rows, the fits per env id, and the manifest
    """
    manifest_path = Path(manifest_path or default_manifest())
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{manifest_path}: no such recording manifest")
    manifest = json.loads(manifest_path.read_text())
    cache = manifest_path.parent / manifest["cache"]
    rows, fits = [], {}
    for env_id in dict.fromkeys(ep["env_id"] for ep in manifest["episodes"]):
        episodes = [ep for ep in manifest["episodes"] if ep["env_id"] == env_id]
        real = gym.make(env_id, worker="openai", cache=cache, cache_mode="replay", **manifest["worker"])
        domain = real.unwrapped.domain.name
        default = WorkerProfile.for_domain(domain)
        try:
            fit = fit_profile(collect_events(real, episodes), default)
        finally:
            real.close()
        if profiles_out is not None:
            profiles_out.mkdir(parents=True, exist_ok=True)
            source = f"{len(episodes)} recorded {manifest['worker']['model']} episodes"
            (profiles_out / f"{domain}.json").write_text(json.dumps(fit.to_json(domain, source), indent=1))
        fits[env_id] = fit
        for policy in dict.fromkeys(ep["policy"] for ep in episodes):
            mine = [ep for ep in episodes if ep["policy"] == policy]
            q = {}
            for label, profile in (("default", default), ("fitted", fit.profile)):
                sim = gym.make(env_id, split=manifest["split"], profile=profile)
                try:
                    q[label] = float(np.mean([run_on_task(sim, POLICIES[policy](), ep["task_id"], seed=s)["quality"]
                                              for ep in mine for s in range(sim_seeds)]))
                finally:
                    sim.close()
            rows.append(SimToRealRow(env_id, policy, len(mine), float(np.mean([ep["quality"] for ep in mine])),
                                     q["default"], q["fitted"],
                                     float(np.mean([ep["cost"]["llm_calls"] for ep in mine]))))
    return rows, fits, manifest


def markdown(rows: list[SimToRealRow], fits: dict[str, ProfileFit]) -> str:
    """The comparison table, then per env the fitted parameters beside the defaults with their 95% intervals.

    :param rows: :func:`sim_to_real` rows
    :param fits: :func:`sim_to_real` fits
    """
    lines = ["| env | controller | tasks | Q real (replayed) | Q sim default | Q sim fitted | LLM calls real |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.env_id} | {r.controller} | {r.tasks} | {r.q_real:.3f} | {r.q_sim_default:.3f} | "
              f"{r.q_sim_fitted:.3f} | {r.llm_calls_real:.1f} |" for r in rows]
    for env_id, fit in fits.items():
        lines += ["", f"{env_id}: events {fit.events}; held-out log-likelihood per event: fitted "
                  f"{fit.heldout_loglik:.3f}, default {fit.heldout_loglik_default:.3f} ({fit.heldout_events} events)",
                  "", "| parameter | default | fitted | 95% CI |", "|---|---|---|---|"]
        fitted = asdict(fit.profile)
        for name, value in asdict(fit.default).items():
            ci = fit.ci95[name]
            lines.append(f"| {name} | {value:.3f} | {fitted[name]:.3f} | "
                         + (f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "not estimated") + " |")
    return "\n".join(lines)
