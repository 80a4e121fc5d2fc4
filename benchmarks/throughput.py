"""Env throughput against CartPole-v1, measured in one run, and the cold latency of a sandbox job.

    python benchmarks/throughput.py [--steps 20000] [--env HarnessCode-v1]

HarnessCode-v1 runs with the simulated worker and a warm execution cache: the timed pass replays the
episode seeds of an identical warm-up pass, so every checker/grader job is served from the cache. Both
envs are built with ``gym.make`` (same wrappers) and driven by the same pre-drawn random actions.
Target: HarnessCode-v1 per-step time at most 10x CartPole-v1's; cold sandbox job median <= 10 ms.
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np

import harness_gym  # noqa: F401
from harness_gym.sandbox import make_sandbox


def steps_per_second(env_id: str, actions: np.ndarray, passes: int) -> float:
    env = gym.make(env_id)
    rate = 0.0
    for _ in range(passes):
        episode = 0
        env.reset(seed=episode)
        start = time.perf_counter()
        for a in actions:
            _, _, term, trunc, _ = env.step(int(a))
            if term or trunc:
                episode += 1
                env.reset(seed=episode)
        rate = len(actions) / (time.perf_counter() - start)
    env.close()
    return rate


def cold_job_latency(jobs: int) -> list[float]:
    sandbox = make_sandbox("process", cache=False)
    sandbox.run("pass")
    out = []
    for i in range(jobs):
        res = sandbox.run(f"x = {i}\nprint(x * 2)")
        out.append(res.duration_s)
    sandbox.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--env", default="HarnessCode-v1")
    ap.add_argument("--jobs", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    harness_actions = rng.integers(0, 7, size=args.steps)
    cart_actions = rng.integers(0, 2, size=args.steps)
    harness = steps_per_second(args.env, harness_actions, passes=2)
    cart = steps_per_second("CartPole-v1", cart_actions, passes=2)
    lat = cold_job_latency(args.jobs)
    lat_sorted = sorted(lat)
    print(f"{args.env}: {harness:,.0f} steps/s ({1e6 / harness:.1f} us/step), warm execution cache")
    print(f"CartPole-v1: {cart:,.0f} steps/s ({1e6 / cart:.1f} us/step)")
    print(f"per-step time ratio {args.env} / CartPole-v1: {cart / harness:.2f}x (target <= 10x)")
    print(f"cold sandbox job ({args.jobs} jobs): median {1e3 * statistics.median(lat):.2f} ms, "
          f"p95 {1e3 * lat_sorted[int(0.95 * len(lat)) - 1]:.2f} ms (target median <= 10 ms)")


if __name__ == "__main__":
    main()
