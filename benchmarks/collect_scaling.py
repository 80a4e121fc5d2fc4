"""Episodes per second with concurrent envs: processes for the simulated worker, threads for a worker that
waits on a (imitated or real) LLM server; the speed-ups printed in one run.

    python benchmarks/collect_scaling.py [--env HarnessCode-v1] [--episodes 200] [--latency-ms 200]
                                         [--llama N] [--skip-processes] [--json]

1. Simulated worker, CPU-bound: the sequential loop (1 worker) against 2 and 4 processes
   (``parallel="process"``). They cannot beat the number of free cores.
2. ``LatencyWorker`` (harness_gym/workers/latency.py): the simulated worker's episodes, every model call
   waiting ``--latency-ms`` first, as a remote LLM does: 1, 4 and 16 threads. Each thread count plays
   ``4 x threads`` episodes (at least 8), so every thread plays several.
3. With ``--llama N`` (needs ``scripts/install_llm.sh``): N single-slot llama.cpp servers with SmolLM2-135M
   (``scripts/start_llm.sh``), one thread against N threads, each thread on its own server. Short replies
   (``max_tokens`` 48) and ``2 x N`` episodes keep it brief; it is CPU-bound on a small machine.

Every count plays the same episode seeds (``episode_seed(0, i)``); for the simulated and latency workers the
records are checked equal to the sequential run's. Columns: ``eps/s`` is episodes over the whole wall time
(process or env start-up included); ``steady eps/s`` counts from the first finished episode
(``(episodes - 1) / (last - first)``); ``speed-up`` is ``eps/s`` over the first row's of its part.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym

import harness_gym
from harness_gym.running.parallel import map_episodes
from harness_gym.running.rollout import episode_seed
from harness_gym.workers.latency import CallMeter, LatencyWorker
from harness_gym_baselines.evaluate import episode_record
from harness_gym_baselines.policies.registry import make_policy

ROOT = Path(__file__).resolve().parent.parent
POLICY = "forced-check"


def _sequential(env_id: str, env_kwargs: dict[str, Any], jobs: list[tuple[int, int]]) -> Iterator[tuple[int, Any]]:
    env = gym.make(env_id, **env_kwargs)
    policy = make_policy(POLICY)
    try:
        for index, seed in jobs:
            yield index, episode_record(env, policy, index=index, seed=seed, split="test")
    finally:
        env.close()


def timed(results: Iterator[tuple[int, Any]], episodes: int) -> dict[str, Any]:
    """Drain ``results`` and time it: whole-run and steady-state episodes per second, records by index."""
    start = time.perf_counter()
    stamps, records = [], {}
    for index, record in results:
        stamps.append(time.perf_counter())
        records[index] = record
    assert len(records) == episodes, f"{len(records)} of {episodes} episodes came back"
    wall = stamps[-1] - start
    steady = (episodes - 1) / (stamps[-1] - stamps[0]) if episodes > 1 and stamps[-1] > stamps[0] else float("nan")
    return {"episodes": episodes, "seconds": wall, "eps_per_s": episodes / wall, "steady_eps_per_s": steady,
            "records": [records[i] for i in range(episodes)]}


def run(env_id: str, env_kwargs: dict[str, Any], episodes: int, workers: int, parallel: str,
        slot_env_kwargs: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    """One measurement: ``workers == 1`` is the plain sequential loop, else :func:`map_episodes`."""
    jobs = [(i, episode_seed(0, i)) for i in range(episodes)]
    if workers == 1 and not slot_env_kwargs:
        return timed(_sequential(env_id, env_kwargs, jobs), episodes)
    return timed(map_episodes(env_id, make_policy(POLICY), jobs, episode_record, split="test",
                              env_kwargs=env_kwargs, num_envs=workers, parallel=parallel,
                              slot_env_kwargs=slot_env_kwargs), episodes)


def simulated_part(env_id: str, episodes: int) -> list[dict[str, Any]]:
    rows = []
    for workers in (1, 2, 4):
        row = run(env_id, {}, episodes, workers, "process")
        row.update(part="simulated worker", mode="sequential" if workers == 1 else "process", workers=workers)
        rows.append(row)
    return rows


def latency_part(env_id: str, latency_s: float) -> list[dict[str, Any]]:
    probe = gym.make(env_id)
    simulated = probe.unwrapped.worker  # the env's own simulated worker, bound to its domain's tools and prompts
    probe.close()
    rows = []
    for threads in (1, 4, 16):
        meter = CallMeter()
        worker = LatencyWorker(simulated, latency_s, meter)
        episodes = max(8, 4 * threads)
        row = run(env_id, {"worker": worker}, episodes, threads, "thread")
        row.update(part=f"{latency_s * 1000:.0f} ms latency worker", mode="sequential" if threads == 1 else "thread",
                   workers=threads, max_calls_in_flight=meter.max_in_flight)
        rows.append(row)
    return rows


def llama_part(env_id: str, servers: int) -> list[dict[str, Any]]:
    port = 8400
    pidfile = Path(tempfile.gettempdir()) / f"collect-scaling-llm-{os.getpid()}.pid"
    env = {**os.environ, "HG_LLM_PIDFILE": str(pidfile), "HG_LLM_THREADS": "1", "HG_LLM_CTX": "4096"}
    started = subprocess.run(["bash", str(ROOT / "scripts/start_llm.sh"), str(port), str(servers)], env=env,
                             capture_output=True, text=True)
    if started.returncode != 0:
        raise SystemExit(f"--llama: scripts/start_llm.sh failed:\n{started.stderr}")
    urls = [line for line in started.stdout.splitlines() if line.startswith("http")]
    try:
        base = {"worker": "openai", "model": "smollm2-135m-instruct", "max_tokens": 48, "timeout_s": 120.0,
                "max_retries": 0}
        rows = []
        for workers in (1, servers):
            per_slot = tuple({"base_url": urls[k]} for k in range(workers))
            row = run(env_id, base, 2 * servers, workers, "thread", slot_env_kwargs=per_slot)
            row.update(part=f"llama.cpp, {servers} single-slot servers",
                       mode="1 thread" if workers == 1 else "thread", workers=workers)
            rows.append(row)
        return rows
    finally:
        subprocess.run(["bash", str(ROOT / "scripts/stop_llm.sh")], env=env, capture_output=True)


def print_table(rows: list[dict[str, Any]]) -> None:
    first: dict[str, float] = {}
    print(f"{'part':<34}{'mode':<12}{'workers':>8}{'episodes':>10}{'seconds':>9}{'eps/s':>9}{'steady':>9}"
          f"{'speed-up':>10}{'in flight':>10}")
    for r in rows:
        base = first.setdefault(r["part"], r["eps_per_s"])
        r["speedup"] = r["eps_per_s"] / base
        print(f"{r['part']:<34}{r['mode']:<12}{r['workers']:>8}{r['episodes']:>10}{r['seconds']:>9.2f}"
              f"{r['eps_per_s']:>9.2f}{r['steady_eps_per_s']:>9.2f}{r['speedup']:>9.2f}x"
              f"{r.get('max_calls_in_flight', ''):>10}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="HarnessCode-v1", choices=harness_gym.ENV_IDS[:6])
    ap.add_argument("--episodes", type=int, default=200, help="episodes per count of the simulated part")
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--llama", type=int, default=0, metavar="N", help="also N local llama.cpp servers (0: skip)")
    ap.add_argument("--skip-processes", action="store_true", help="skip the simulated-worker process part")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = ap.parse_args()

    rows: list[dict[str, Any]] = []
    if not args.skip_processes:
        rows += simulated_part(args.env, args.episodes)
    latency = latency_part(args.env, args.latency_ms / 1000)
    rows += latency
    if args.llama > 0:
        rows += llama_part(args.env, args.llama)

    for part in {r["part"] for r in rows if not r["part"].startswith("llama")}:
        same = [r for r in rows if r["part"] == part]
        for r in same[1:]:  # the same episodes whatever the concurrency (the first n of the longest run)
            n = min(len(r["records"]), len(same[0]["records"]))
            assert json.dumps(r["records"][:n]) == json.dumps(same[0]["records"][:n]), \
                f"{part}: {r['workers']} workers played other episodes"  # (JSON: NaN patterns compare equal)
    print(f"{args.env}, policy {POLICY}, {os.cpu_count()} CPU cores (shared: load average "
          f"{os.getloadavg()[0]:.1f})")
    print_table(rows)
    sixteen = latency[-1]["eps_per_s"] / latency[0]["eps_per_s"]
    print(f"16 threads vs 1 with {args.latency_ms:.0f} ms per call: {sixteen:.1f}x the episodes per second")
    if args.json:
        print(json.dumps([{k: v for k, v in r.items() if k != "records"} for r in rows]))


if __name__ == "__main__":
    sys.exit(main())
