"""Record real-model episodes into a replay cache, and compare them with the simulated worker.

Runs the static and forced-check controllers on the first tasks of a split of each env, with the live
model behind ``OpenAIWorker`` in ``record`` mode, and writes

- ``OUT/NAME.sqlite``: the replay cache (journal mode DELETE, vacuumed: ready to ship read-only);
- ``OUT/NAME.json``: the manifest: worker settings and, per episode, env id, task id, seed, policy,
  actions, quality and the summed ``info["cost"]``; ``tests/test_llm_integration.py`` replays it;
- a Markdown table on stdout: per env and controller, Q and cost with the real model, and Q with the
  simulated worker (default profile, or ``--profile-dir`` for fitted ones) on the same tasks and seeds.

Example (the shipped recording)::

    scripts/start_llm.sh 8011
    python benchmarks/record_llm.py --base-url http://127.0.0.1:8011/v1 --out envs_data/recordings
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

from harness_gym.workers.profile import WorkerProfile
from harness_gym_baselines.sim_to_real import POLICIES, run_on_task


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
    parser.add_argument("--envs", nargs="+", default=["HarnessCode-v0", "HarnessMultiTool-v0", "HarnessDBBench-v0"])
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    parser.add_argument("--tasks", type=int, default=2, help="tasks per env (the first ones of the split)")
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
    for env_id in args.envs:
        env = gym.make(env_id, split=args.split, worker="openai", base_url=args.base_url, timeout_s=args.timeout_s,
                       cache=cache, cache_mode="record", **worker)
        domain = env.unwrapped.domain.name
        profile = (WorkerProfile.load(args.profile_dir / f"{domain}.json") if args.profile_dir else None)
        sim = gym.make(env_id, split=args.split, profile=profile)
        task_ids = [t.task_id for t in env.unwrapped.domain.tasks(args.split)[: args.tasks]]
        for name in args.policies:
            real_q, sim_q, costs = [], [], []
            for i, task_id in enumerate(task_ids):
                start = time.perf_counter()
                ep = run_on_task(env, POLICIES[name](), task_id, seed=i)
                ep.update(env_id=env_id, policy=name, seconds=round(time.perf_counter() - start, 2))
                episodes.append(ep)
                real_q.append(ep["quality"])
                costs.append(ep["cost"])
                ep["sim_quality"] = run_on_task(sim, POLICIES[name](), task_id, seed=i)["quality"]
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

    manifest = {"cache": cache.name, "worker": worker, "split": args.split, "episodes": episodes,
                "note": f"recorded by benchmarks/record_llm.py from {args.model} served by llama-cpp-python"}
    (args.out / f"{args.name}.json").write_text(json.dumps(manifest, indent=1) + "\n")
    finalise_cache(cache)
    print("\n| env | controller | tasks | Q real | Q sim | LLM calls | LLM errors | tokens | latency s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for env_id, name, n, q_real, q_sim, calls, errs, toks, lat in rows:
        print(f"| {env_id} | {name} | {n} | {q_real:.3f} | {q_sim:.3f} | {calls:.1f} | {errs:.1f} | {toks:.0f} | {lat:.1f} |")
    return manifest


if __name__ == "__main__":
    main()
