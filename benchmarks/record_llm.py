"""Record real-model episodes into a replay cache, and compare them with the simulated worker.

Runs the fixed scripts (static, forced-check, thorough) and a learned controller on the first tasks of a split
of each env, with the live model behind ``OpenAIWorker``, and writes

- ``OUT/NAME-awr-q-ENV.pt``: the learned controller per env, trained on the simulator first
  (:func:`harness_gym_baselines.experiments.sim_to_real.train_learned`; ``--learned-episodes`` behaviour episodes);
- ``OUT/NAME.sqlite``: the replay cache (journal mode DELETE, vacuumed: ready to ship read-only). It is opened
  in ``auto`` mode, so rerunning the same command after an interruption replays what was recorded and records
  the rest;
- ``OUT/NAME.json``: the manifest: worker settings, the settings each env was recorded under (``env_settings``:
  prices, cost budget in words and units, cost weight; for the reader, a replay makes the same env with its
  defaults) and, per episode, env id, task id, seed, policy, actions, quality and the summed ``info["cost"]``;
  ``tests/test_llm_integration.py`` replays it;
- a Markdown table on stdout: per env and controller, Q and cost with the real model, and Q with the
  simulated worker (the env's own profile, ``v2`` on the default ``-v2`` ids, or ``--profile-dir`` for fitted
  ones) on the same tasks and seeds.

The default envs are the ``-v2`` ids (:data:`harness_gym.ENV_IDS`) of Code, MultiTool and DBBench, made with their
defaults (cost budget ``"auto"``: rule 2), so a replay of the recording needs no ``env_kwargs`` in its manifest.

Example (the shipped recording)::

    scripts/start_llm.sh 8011
    python benchmarks/record_llm.py --base-url http://127.0.0.1:8011/v1 --tasks 10 --out envs_data/recordings
    scripts/stop_llm.sh
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import harness_gym
from harness_gym.workers.profile import WorkerProfile
from harness_gym_baselines.experiments.sim_to_real import FIXED, LEARNED, make_controller, run_on_task, train_learned

DEFAULT_ENVS: list[str] = [env_id for env_id in harness_gym.ENV_IDS
                            if env_id.split("-")[0] in ("HarnessCode", "HarnessMultiTool", "HarnessDBBench")]
"""the envs of the shipped recording: the current (``-v2``) ids of Code, MultiTool and DBBench"""


def finalise_cache(cache: Path) -> None:
    """Fold the WAL into the file and switch it to a rollback journal, so it opens read-only anywhere.

    :param cache: the cache file
    """
    conn = sqlite3.connect(cache)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("VACUUM")
    conn.close()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--envs", nargs="+", default=DEFAULT_ENVS)
    parser.add_argument("--policies", nargs="+", default=[*FIXED, LEARNED], choices=[*FIXED, LEARNED])
    parser.add_argument("--learned-episodes", type=int, default=2000,
                        help="behaviour episodes of the simulator the learned controller is trained on")
    parser.add_argument("--tasks", type=int, default=5, help="tasks per env (the first ones of the split)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--timeout-s", type=float, default=300.0)
    parser.add_argument("--out", type=Path, default=Path("envs_data/recordings"))
    parser.add_argument("--name", default="smollm2")
    parser.add_argument("--profile-dir", type=Path, default=None, help="fitted profiles <domain>.json for the sim column")
    args = parser.parse_args(argv)

    args.out.mkdir(parents=True, exist_ok=True)
    cache = args.out / f"{args.name}.sqlite"
    worker = {"model": args.model, "max_tokens": args.max_tokens, "temperature": args.temperature}
    episodes: list[dict[str, Any]] = []
    rows = []
    models: dict[str, dict[str, Any]] = {}
    if LEARNED in args.policies:
        for env_id in args.envs:
            model = args.out / f"{args.name}-{LEARNED}-{env_id}.pt"
            start = time.perf_counter()
            models[env_id] = train_learned(env_id, model, episodes=args.learned_episodes, seed=0)
            print(f"trained {model} in {time.perf_counter() - start:.0f} s", flush=True)
    manifest: dict[str, Any] = {"cache": cache.name, "worker": worker, "split": args.split, "env_settings": {},
                                "models": {LEARNED: models} if models else {}}
    for env_id in args.envs:
        env = gym.make(env_id, split=args.split, worker="openai", base_url=args.base_url, timeout_s=args.timeout_s,
                       cache=cache, cache_mode="auto", **worker)
        manifest["env_settings"][env_id] = env.unwrapped.settings
        domain = env.unwrapped.domain.name
        # the env's own profile (``-v2``: the v2 set) unless fitted ones are given: profile=None would replace it
        fitted = {"profile": WorkerProfile.load(args.profile_dir / f"{domain}.json")} if args.profile_dir else {}
        sim = gym.make(env_id, split=args.split, **fitted)
        task_ids = [t.task_id for t in env.unwrapped.domain.tasks(args.split)[: args.tasks]]
        for name in args.policies:
            real_q, sim_q, costs = [], [], []
            for i, task_id in enumerate(task_ids):
                start = time.perf_counter()
                ep = run_on_task(env, make_controller(name, env_id, manifest, args.out), task_id, seed=i)
                ep.update(env_id=env_id, policy=name, seconds=round(time.perf_counter() - start, 2))
                episodes.append(ep)
                real_q.append(ep["quality"])
                costs.append(ep["cost"])
                ep["sim_quality"] = run_on_task(sim, make_controller(name, env_id, manifest, args.out), task_id,
                                                seed=i)["quality"]
                sim_q.append(ep["sim_quality"])
                print(json.dumps(ep), flush=True)
            rows.append((env_id, name, len(task_ids), float(np.mean(real_q)), float(np.mean(sim_q)),
                         float(np.mean([c["llm_calls"] for c in costs])),
                         float(np.mean([c["llm_errors"] for c in costs])),
                         float(np.mean([c["prompt_tokens"] + c["completion_tokens"] for c in costs])),
                         float(np.mean([c["latency_s"] for c in costs]))))
        env.unwrapped.worker.cache.close()
        env.close()
        sim.close()

    manifest.update(episodes=episodes,
                    note=f"recorded by benchmarks/record_llm.py from {args.model} served by llama-cpp-python")
    (args.out / f"{args.name}.json").write_text(json.dumps(manifest, indent=1) + "\n")
    finalise_cache(cache)
    print("\n| env | controller | tasks | Q real | Q sim | LLM calls | LLM errors | tokens | latency s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for env_id, name, n, q_real, q_sim, calls, errs, toks, lat in rows:
        print(f"| {env_id} | {name} | {n} | {q_real:.3f} | {q_sim:.3f} | {calls:.1f} | {errs:.1f} | {toks:.0f} | {lat:.1f} |")
    return manifest


if __name__ == "__main__":
    main()
