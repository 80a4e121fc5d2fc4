"""The sim-to-real gap on a recording: the real model (replayed) against the simulator on its default and
on its fitted profile, for the same controllers on the same tasks.

For each env of the manifest: fit the domain's profile to the recorded episodes
(:mod:`harness_gym.workers.calibrate`), write it to ``OUT/<domain>.json``, then report per controller the
mean quality Q and LLM calls with the real model (replayed from the cache), and Q of the simulated worker
with the default and with the fitted profile on the same tasks (``--sim-seeds`` seeds each, since the
simulator is cheap). Also prints the fitted parameters beside the defaults with their 95% intervals.

Example::

    python benchmarks/sim_to_real.py --out /tmp/fitted_profiles
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import harness_gym  # noqa: F401  (registers the env ids)
from benchmarks.record_llm import POLICIES, run
from harness_gym.paths import data_path
from harness_gym.workers.calibrate import collect_events, fit_profile
from harness_gym.workers.profile import WorkerProfile


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", type=Path, default=None, help="default: envs_data/recordings/smollm2.json")
    parser.add_argument("--out", type=Path, required=True, help="folder for the fitted profiles")
    parser.add_argument("--sim-seeds", type=int, default=20)
    args = parser.parse_args(argv)
    manifest_path = args.manifest or data_path("recordings", "smollm2.json")
    manifest = json.loads(Path(manifest_path).read_text())
    cache = Path(manifest_path).parent / manifest["cache"]
    args.out.mkdir(parents=True, exist_ok=True)
    rows, fits = [], {}
    for env_id in dict.fromkeys(ep["env_id"] for ep in manifest["episodes"]):
        episodes = [ep for ep in manifest["episodes"] if ep["env_id"] == env_id]
        real = gym.make(env_id, worker="openai", cache=cache, cache_mode="replay", **manifest["worker"])
        domain = real.unwrapped.domain.name
        default = WorkerProfile.for_domain(domain)
        fit = fit_profile(collect_events(real, episodes), default)
        real.close()
        (args.out / f"{domain}.json").write_text(json.dumps(fit.to_json(domain, f"{len(episodes)} recorded "
                                                                      f"{manifest['worker']['model']} episodes"), indent=1))
        fits[env_id] = fit
        for policy in dict.fromkeys(ep["policy"] for ep in episodes):
            mine = [ep for ep in episodes if ep["policy"] == policy]
            q = {"real": float(np.mean([ep["quality"] for ep in mine]))}
            for label, profile in (("sim default", default), ("sim fitted", fit.profile)):
                sim = gym.make(env_id, split=manifest["split"], profile=profile)
                q[label] = float(np.mean([run(sim, POLICIES[policy](), ep["task_id"], seed=s)["quality"]
                                          for ep in mine for s in range(args.sim_seeds)]))
                sim.close()
            calls = float(np.mean([ep["cost"]["llm_calls"] for ep in mine]))
            rows.append((env_id, policy, len(mine), q["real"], q["sim default"], q["sim fitted"], calls))
    print("| env | controller | tasks | Q real (replayed) | Q sim default | Q sim fitted | LLM calls real |")
    print("|---|---|---|---|---|---|---|")
    for env_id, policy, n, qr, qd, qf, calls in rows:
        print(f"| {env_id} | {policy} | {n} | {qr:.3f} | {qd:.3f} | {qf:.3f} | {calls:.1f} |")
    for env_id, fit in fits.items():
        print(f"\n{env_id}: events {fit.events}; held-out log-likelihood per event: fitted "
              f"{fit.heldout_loglik:.3f}, default {fit.heldout_loglik_default:.3f} ({fit.heldout_events} events)")
        print("| parameter | default | fitted | 95% CI |")
        print("|---|---|---|---|")
        fitted = asdict(fit.profile)
        for name, value in asdict(fit.default).items():
            ci = fit.ci95[name]
            print(f"| {name} | {value:.3f} | {fitted[name]:.3f} | "
                  + (f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "not estimated") + " |")
    return {"rows": rows}


if __name__ == "__main__":
    main()
