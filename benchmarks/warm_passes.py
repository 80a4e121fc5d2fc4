"""How much of a warm run's step time is first use in a new process, and how much every step costs once
everything is in memory: the random masked policy of ``benchmarks/throughput.py`` played several times over the
same episodes in one process, per env against CartPole-v1.

    python benchmarks/warm_passes.py [--env HarnessCode-v1 ...] [--steps 1500] [--passes 3] [--json OUT]

Per env, in a new ``spawn`` process: ``gym.make``, then ``--passes`` runs of
:func:`throughput.random_masked_steps` (``--steps`` steps, reset seeds 0, 1, 2, ..., the same actions each pass).
A first new process has left the on-disk execution cache warm, so pass 1 is ``throughput.py``'s *warm* run:
every sandbox job is answered from disk, but every in-memory memo (parsed drafts, judged reports, ranked
queries, loaded cache entries) is filled for the first time. From pass 2 on the same episodes find all of them
in memory: what is left is what every step costs. Each pass reports CPU microseconds per step
(``time.process_time``) and its ratio to the same pass of CartPole-v1 (which runs ``--baseline-steps`` steps).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import (  # noqa: E402
    BASELINE,
    RANDOM_WARM_MAX_RATIO,
    chosen_env_ids,
    in_new_process,
    random_masked_steps,
    script_parser,
    write_json,
)


def passes_in_this_process(env_id: str, steps: int, passes: int, cache_dir: str) -> dict[str, Any]:
    """``gym.make(env_id)`` and ``passes`` random masked runs of ``steps`` steps on it, on the execution-cache
    folder ``cache_dir``.

    :returns: ``make_cpu_s`` and ``cpu_us_per_step``, one per pass
    """
    os.environ["HARNESS_GYM_CACHE_DIR"] = cache_dir
    start = time.process_time()
    env = gym.make(env_id)
    made = time.process_time() - start
    per_pass = [1e6 * random_masked_steps(env, steps)["cpu_seconds"] / steps for _ in range(passes)]
    env.close()
    return {"make_cpu_s": made, "cpu_us_per_step": per_pass}


def warm_passes(env_id: str, steps: int, passes: int) -> dict[str, Any]:
    """:func:`passes_in_this_process` in a new process on an execution-cache folder a first new process (one
    untimed pass) has filled."""
    cache_dir = tempfile.mkdtemp(prefix="hg-warm-passes-")
    try:
        in_new_process(passes_in_this_process, env_id, steps, 1, cache_dir)
        return in_new_process(passes_in_this_process, env_id, steps, passes, cache_dir)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def markdown_table(results: dict[str, Any]) -> str:
    """Per env: CPU µs per step of each pass, with its ratio to CartPole-v1's same pass."""
    base = results["envs"][BASELINE]["cpu_us_per_step"]
    passes = len(base)
    head = ["env", "make CPU s"] + [f"pass {i + 1} CPU us/step (ratio)" for i in range(passes)]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for env_id, fig in results["envs"].items():
        cells = [f"{us:.1f} ({us / b:.1f}x)" for us, b in zip(fig["cpu_us_per_step"], base)]
        lines.append("| " + " | ".join([env_id, f"{fig['make_cpu_s']:.2f}", *cells]) + " |")
    lines.append("")
    lines.append(f"Pass 1 is throughput.py's warm run (target <= {RANDOM_WARM_MAX_RATIO:g}x, there in wall time); "
                 "passes 2+ replay the same episodes with every in-memory memo filled.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = script_parser(__doc__, "env to measure")
    ap.add_argument("--steps", type=int, default=1500, help="steps per pass (default 1500, throughput.py's)")
    ap.add_argument("--baseline-steps", type=int, default=50_000, help="CartPole-v1's steps per pass (default 50000)")
    ap.add_argument("--passes", type=int, default=3, help="passes per env (default 3)")
    ap.add_argument("--json", default=None, metavar="OUT", help="write every figure to this JSON file")
    args = ap.parse_args(argv)
    env_ids = chosen_env_ids(ap, args.env)
    if args.steps < 1 or args.baseline_steps < 1 or args.passes < 1:
        ap.error(f"--steps, --baseline-steps and --passes must be >= 1, got {args.steps}, {args.baseline_steps}, "
                 f"{args.passes}")
    results: dict[str, Any] = {"steps": args.steps, "baseline_steps": args.baseline_steps, "passes": args.passes,
                               "envs": {}}
    for env_id in [BASELINE] + [e for e in env_ids if e != BASELINE]:
        print(env_id, file=sys.stderr, flush=True)
        steps = args.baseline_steps if env_id == BASELINE else args.steps
        results["envs"][env_id] = warm_passes(env_id, steps, args.passes)
    print(markdown_table(results))
    write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
