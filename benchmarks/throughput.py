"""Training speed of every env against CartPole-v1, measured in one run, and the cold latency of a sandbox job.

    python benchmarks/throughput.py [--env HarnessCode-v1 ...] [--steps 1500] [--baseline-steps 50000]
        [--ppo-steps 8192] [--repeats 3] [--json OUT]

What a user training a controller sees (issue 28), each figure as a ratio to CartPole-v1 in the same run:

- **Random masked policy**: per env, a policy uniform over the applicable actions (``info["action_mask"]``;
  CartPole-v1 has no mask, so all its actions) over fresh episodes (reset seeds 0, 1, 2, ...), ``--steps``
  steps, each run in a new ``spawn`` process. *Cold* is a first process on an empty on-disk execution cache
  (``HARNESS_GYM_CACHE_DIR`` pointed at a fresh temporary folder); *warm* is a second new process on the same
  folder, playing the same seeds and actions, whose sandbox jobs the on-disk cache left by the first answers
  (nothing else of the first process is warm there). The time counts ``reset`` and ``step`` and drawing the
  action, not ``gym.make``. CartPole-v1 runs ``--baseline-steps`` steps (default 50,000, about a second), since
  1,500 of its steps take ~35 ms, in which one scheduler pause moves every ratio by several x. Each run reports
  its wall time and its CPU time (``time.process_time``: the process's own, so other jobs on the machine barely
  move it); the step-time ratios are given for both.
- **SB3 PPO** (``MlpPolicy``, ``n_steps`` 512, batch 64, 4 epochs, one env built by
  :func:`harness_gym.running.sb3.make_sb3_vec_env`, ``torch.set_num_threads(1)``, ``--ppo-steps`` steps): steps/s of
  ``learn``, cold in a new process on an empty cache folder, then warm in a second new process on the same
  folder (same seed, so largely the same episodes, whose jobs the on-disk cache answers). ``--ppo-steps 0``
  skips it.
- **Cold sandbox job**: ``--jobs`` distinct jobs in a ``ProcessSandbox`` without cache in the
  ``--isolation`` mode (bubblewrap by default), median and p95 of the time ``run`` takes as its caller sees it
  (request to decoded result, which a step waits for; the server's own ``ExecResult.duration_s`` leaves out the
  transfer and anything the server did before it read the request).

**Repeats**: every figure above is measured ``--repeats`` times (default 3), each repeat running every env,
CartPole-v1 first, so that a drift of the machine falls on all of them alike; the tables give the median of the
repeats (each field separately) and the ratios of those medians, with the range of the per-repeat ratios (a
repeat's env against the same repeat's CartPole-v1). On a shared VM one new process's 50,000 CartPole steps
took 22.5 us of CPU per step and the next one's 12.5, and the PPO speed of one env read 0.61x in one run and
1.02x in the next: a single run does not decide a target.

Targets (issue 28): SB3 PPO warm at no less than 0.8x CartPole-v1's steps/s; random masked policy cold at no
more than 50x CartPole-v1's step time, warm at no more than 5x; a cold job at most 5 ms median. Each figure
is printed with its target, then a markdown table of all of them; ``--json OUT`` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import gymnasium as gym
import numpy as np

import harness_gym
from harness_gym.sandbox import make_sandbox

BASELINE = "CartPole-v1"
RANDOM_COLD_MAX_RATIO = 50.0
RANDOM_WARM_MAX_RATIO = 5.0
PPO_WARM_MIN_SPEED = 0.8
COLD_JOB_MAX_MEDIAN_MS = 5.0
PPO_SETTINGS = {"n_steps": 512, "batch_size": 64, "n_epochs": 4}


def random_masked_steps(env: gym.Env, steps: int, seed: int = 0) -> dict[str, Any]:
    """Drive ``env`` for ``steps`` steps with a policy uniform over the applicable actions, resetting with seeds
    ``seed``, ``seed + 1``, ... at each episode end. The actions come from ``np.random.default_rng(seed)``, so two
    calls with the same arguments play the same episodes.

    :param env: a made env with a ``Discrete`` action space; ``info["action_mask"]`` is used when present
    :param steps: number of ``step`` calls
    :param seed: first reset seed and seed of the action draws
    :returns: ``seconds`` (reset + step + action draws), ``cpu_seconds`` (this process's CPU time over the
        same span; a sandbox job's child processes are not in it), ``episodes`` ended, ``job_steps`` (steps that billed a
        sandbox job), ``exec_cached_steps`` (steps whose job the execution cache answered) and ``sandbox_jobs``
        (billed jobs)
    """
    n_actions = int(env.action_space.n)
    every_action = np.ones(n_actions, dtype=np.int8)
    draws = np.random.default_rng(seed).random(steps)
    episodes = cached = jobs = job_steps = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    _, info = env.reset(seed=seed)
    for u in draws:
        allowed = np.flatnonzero(info.get("action_mask", every_action))
        _, _, terminated, truncated, info = env.step(int(allowed[int(u * len(allowed))]))
        cached += bool(info.get("exec_cached", False))
        step_jobs = int(info.get("cost", {}).get("sandbox_jobs", 0))
        jobs += step_jobs
        job_steps += step_jobs > 0  # metered jobs only: a SUBMIT's grader job is not billed
        if terminated or truncated:
            episodes += 1
            _, info = env.reset(seed=seed + episodes)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "episodes": episodes, "job_steps": job_steps,
            "exec_cached_steps": cached, "sandbox_jobs": jobs}


def _use_cache_dir(cache_dir: str) -> None:
    """Point this (new) process's on-disk execution cache at ``cache_dir`` before any sandbox is made."""
    os.environ["HARNESS_GYM_CACHE_DIR"] = cache_dir


def _random_in_this_process(env_id: str, steps: int, cache_dir: str) -> dict[str, Any]:
    """Child side of :func:`random_cold_warm`: make the env on the cache folder ``cache_dir``, then one run."""
    _use_cache_dir(cache_dir)
    start = time.perf_counter()
    env = gym.make(env_id)
    make_s = time.perf_counter() - start
    run = random_masked_steps(env, steps)
    env.close()
    run["steps_per_s"] = steps / run["seconds"]
    run["cpu_us_per_step"] = 1e6 * run["cpu_seconds"] / steps
    run["make_s"] = make_s
    return run


def _ppo_in_this_process(env_id: str, steps: int, seed: int, cache_dir: str) -> dict[str, Any]:
    """Child side of :func:`ppo_cold_warm`: one PPO run on a new vector env, on the cache folder ``cache_dir``."""
    _use_cache_dir(cache_dir)
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import Logger

    from harness_gym.running.sb3 import make_sb3_vec_env

    torch.set_num_threads(1)
    venv = make_sb3_vec_env(env_id, n_envs=1, seed=seed)
    model = PPO("MlpPolicy", venv, seed=seed, device="cpu", verbose=0, **PPO_SETTINGS)
    model.set_logger(Logger(folder=None, output_formats=[]))  # SB3's default logger makes a folder in /tmp
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    seconds = time.perf_counter() - start
    venv.close()
    return {"seconds": seconds, "steps": int(model.num_timesteps), "steps_per_s": model.num_timesteps / seconds}


def in_new_process(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a fresh ``spawn`` process (no module, cache or sandbox server of this one is warm there)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def cold_then_warm(fn: Any, *args: Any) -> dict[str, Any]:
    """``fn(*args, cache_dir)`` in a new process on an empty cache folder (cold), then in a second new process
    on the same folder (warm); the folder is removed afterwards."""
    cache_dir = tempfile.mkdtemp(prefix="hg-throughput-cache-")
    try:
        return {"cold": in_new_process(fn, *args, cache_dir), "warm": in_new_process(fn, *args, cache_dir)}
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def random_cold_warm(env_id: str, steps: int) -> dict[str, Any]:
    """Random masked policy on ``env_id``, cold then warm (see the module docstring)."""
    return cold_then_warm(_random_in_this_process, env_id, steps)


def ppo_cold_warm(env_id: str, steps: int, seed: int = 0) -> dict[str, Any]:
    """SB3 PPO on ``env_id``, cold then warm (see the module docstring)."""
    return cold_then_warm(_ppo_in_this_process, env_id, steps, seed)


def cold_job_latency(jobs: int, isolation: str = "bwrap") -> tuple[list[float], str]:
    """Round-trip times (seconds) of ``jobs`` distinct jobs in an uncached ``ProcessSandbox``, after one warm-up
    job: from the call of ``run`` to its decoded result, as a step waits for it.

    :returns: the durations and the isolation in force
    :raises RuntimeError: when a job does not print what it computes (it did not run)
    """
    sandbox = make_sandbox("process", cache=False, isolation=isolation)
    sandbox.run("pass")
    out = []
    for i in range(jobs):
        start = time.perf_counter()
        res = sandbox.run(f"x = {i}\nprint(x * 2)")
        out.append(time.perf_counter() - start)
        if res.exit_code != 0 or res.stdout.strip() != str(2 * i):
            raise RuntimeError(f"cold job {i} did not run: exit {res.exit_code}, stdout {res.stdout[:80]!r}, "
                               f"stderr {res.stderr[:200]!r}")
    in_force = sandbox.isolation_in_force
    sandbox.close()
    return out, in_force


def _hits(run: dict[str, Any]) -> str:
    """Steps with a job the execution cache answered (``info["exec_cached"]``; unmetered grader jobs count too)."""
    return str(run["exec_cached_steps"])


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISS"


def markdown_table(results: dict[str, Any]) -> str:
    """The per-env figures of :func:`main`'s results as a markdown table (ratios to CartPole-v1)."""
    base = results["envs"][BASELINE]
    has_ppo = "ppo" in base
    head = ["env", "random cold steps/s", f"cold step-time ratio (<= {RANDOM_COLD_MAX_RATIO:g}x)",
            "random warm steps/s", f"warm step-time ratio (<= {RANDOM_WARM_MAX_RATIO:g}x)",
            "warm CPU us/step (ratio)", "steps with a cached job, cold / warm"]
    if has_ppo:
        head += ["PPO cold steps/s", "PPO cold speed", "PPO warm steps/s", f"PPO warm speed (>= {PPO_WARM_MIN_SPEED:g}x)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" + "---:|" * (len(head) - 1)]
    for env_id, fig in results["envs"].items():
        rnd = fig["random"]
        row = [env_id, f"{rnd['cold']['steps_per_s']:,.0f}",
               f"{rnd['cold_ratio']:.1f}x{_range(rnd, 'cold_ratio_range', 1)} {_verdict(rnd['cold_ok'])}",
               f"{rnd['warm']['steps_per_s']:,.0f}",
               f"{rnd['warm_ratio']:.1f}x{_range(rnd, 'warm_ratio_range', 1)} {_verdict(rnd['warm_ok'])}",
               f"{rnd['warm']['cpu_us_per_step']:.0f} ({rnd['warm_cpu_ratio']:.1f}x)",
               f"{_hits(rnd['cold'])} / {_hits(rnd['warm'])}"]
        if has_ppo:
            ppo = fig["ppo"]
            row += [f"{ppo['cold']['steps_per_s']:,.0f}", f"{ppo['cold_speed']:.3f}x{_range(ppo, 'cold_speed_range', 2)}",
                    f"{ppo['warm']['steps_per_s']:,.0f}",
                    f"{ppo['warm_speed']:.3f}x{_range(ppo, 'warm_speed_range', 2)} {_verdict(ppo['warm_ok'])}"]
        if env_id == BASELINE:
            row = [c.replace(" ok", "").replace(" MISS", "") for c in row]
        lines.append("| " + " | ".join(row) + " |")
    job = results["cold_job"]
    lines.append("")
    lines.append(f"Medians of {results.get('repeats', 1)} repeat(s); in brackets the range of the per-repeat ratios.")
    spread = job.get("repeats_median_ms") or [job["median_ms"]]
    lines.append(f"Cold sandbox job ({job['jobs']} jobs, isolation {job['isolation']}): median "
                 f"{job['median_ms']:.2f} ms [{min(spread):.2f}-{max(spread):.2f} over the repeats], p95 "
                 f"{job['p95_ms']:.2f} ms (target median <= "
                 f"{COLD_JOB_MAX_MEDIAN_MS:g} ms: {_verdict(job['ok'])})")
    return "\n".join(lines)


MEDIAN_FIELDS = ("seconds", "cpu_seconds", "steps_per_s", "cpu_us_per_step", "make_s")


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The runs of one figure over the repeats as one run: the median of each timing field (``MEDIAN_FIELDS``),
    the counts (steps, episodes, jobs: the same in every repeat, since the seeds are) from the first, and
    ``repeats_steps_per_s``, each repeat's steps/s."""
    out = dict(runs[0])
    for field in MEDIAN_FIELDS:
        if field in out:
            out[field] = statistics.median(r[field] for r in runs)
    out["repeats_steps_per_s"] = [r["steps_per_s"] for r in runs]
    return out


def combine_repeats(per_repeat: list[dict[str, Any]]) -> dict[str, Any]:
    """One env's figures (``{"random": {"cold", "warm"}, "ppo": ...}``) of every repeat as one, by
    :func:`median_run` per run kind and phase."""
    fig: dict[str, Any] = {}
    for kind in per_repeat[0]:
        fig[kind] = {phase: median_run([rep[kind][phase] for rep in per_repeat]) for phase in ("cold", "warm")}
    return fig


def _ratio_range(fig: dict[str, Any], base: dict[str, Any], kind: str, phase: str, env_over_base: bool) -> list[float]:
    """Per-repeat ratios of one figure (the env against the same repeat's CartPole-v1): min and max."""
    env_rates, base_rates = fig[kind][phase]["repeats_steps_per_s"], base[kind][phase]["repeats_steps_per_s"]
    ratios = [(e / b if env_over_base else b / e) for e, b in zip(env_rates, base_rates)]
    return [min(ratios), max(ratios)]


def _range(figure: dict[str, Any], key: str, digits: int) -> str:
    low, high = figure.get(key) or (None, None)
    if low is None or low == high:
        return ""
    return f" [{low:.{digits}f}-{high:.{digits}f}]"


def _add_ratios(fig: dict[str, Any], base: dict[str, Any]) -> None:
    rnd, base_rnd = fig["random"], base["random"]
    # step-time ratio = CartPole's steps/s over the env's
    rnd["cold_ratio"] = base_rnd["cold"]["steps_per_s"] / rnd["cold"]["steps_per_s"]
    rnd["warm_ratio"] = base_rnd["warm"]["steps_per_s"] / rnd["warm"]["steps_per_s"]
    rnd["warm_cpu_ratio"] = rnd["warm"]["cpu_us_per_step"] / base_rnd["warm"]["cpu_us_per_step"]
    rnd["cold_ratio_range"] = _ratio_range(fig, base, "random", "cold", env_over_base=False)
    rnd["warm_ratio_range"] = _ratio_range(fig, base, "random", "warm", env_over_base=False)
    rnd["cold_ok"] = rnd["cold_ratio"] <= RANDOM_COLD_MAX_RATIO
    rnd["warm_ok"] = rnd["warm_ratio"] <= RANDOM_WARM_MAX_RATIO
    if "ppo" in fig:
        ppo, base_ppo = fig["ppo"], base["ppo"]
        ppo["cold_speed"] = ppo["cold"]["steps_per_s"] / base_ppo["cold"]["steps_per_s"]
        ppo["warm_speed"] = ppo["warm"]["steps_per_s"] / base_ppo["warm"]["steps_per_s"]
        ppo["cold_speed_range"] = _ratio_range(fig, base, "ppo", "cold", env_over_base=True)
        ppo["warm_speed_range"] = _ratio_range(fig, base, "ppo", "warm", env_over_base=True)
        ppo["warm_ok"] = ppo["warm_speed"] >= PPO_WARM_MIN_SPEED


def _print_env(env_id: str, fig: dict[str, Any]) -> None:
    rnd = fig["random"]
    line = (f"{env_id}: random masked cold {rnd['cold']['steps_per_s']:,.0f} steps/s, "
            f"warm {rnd['warm']['steps_per_s']:,.0f} steps/s "
            f"(steps with a job answered by the execution cache: cold {_hits(rnd['cold'])}, "
            f"warm {_hits(rnd['warm'])})")
    if env_id != BASELINE:
        line += (f"; step time {rnd['cold_ratio']:.1f}x CartPole-v1's cold (target <= {RANDOM_COLD_MAX_RATIO:g}x: "
                 f"{_verdict(rnd['cold_ok'])}), {rnd['warm_ratio']:.1f}x warm (target <= "
                 f"{RANDOM_WARM_MAX_RATIO:g}x: {_verdict(rnd['warm_ok'])}); warm CPU time per step "
                 f"{rnd['warm']['cpu_us_per_step']:.0f} us, {rnd['warm_cpu_ratio']:.1f}x CartPole-v1's")
    print(line, flush=True)
    if "ppo" in fig:
        ppo = fig["ppo"]
        line = (f"{env_id}: SB3 PPO cold {ppo['cold']['steps_per_s']:,.0f} steps/s, "
                f"warm {ppo['warm']['steps_per_s']:,.0f} steps/s")
        if env_id != BASELINE:
            line += (f"; {ppo['cold_speed']:.3f}x CartPole-v1's steps/s cold, {ppo['warm_speed']:.3f}x warm "
                     f"(target >= {PPO_WARM_MIN_SPEED:g}x warm: {_verdict(ppo['warm_ok'])})")
        print(line, flush=True)


def script_parser(doc: str, env_help: str) -> argparse.ArgumentParser:
    """An argument parser for a benchmark script: its docstring as description and epilog, and ``--env`` (repeated;
    default all registered harness envs)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(doc.splitlines()[1:]))
    ap.add_argument("--env", action="append", default=None, metavar="ENV_ID",
                    help=f"{env_help} (repeat for several; default: all registered harness envs)")
    return ap


def chosen_env_ids(ap: argparse.ArgumentParser, env: list[str] | None) -> list[str]:
    """The env ids of ``--env`` (all registered harness envs when none); an unknown one is a usage error."""
    env_ids = list(env or harness_gym.ENV_IDS)
    unknown = [e for e in env_ids if e not in gym.registry]
    if unknown:
        ap.error(f"--env: unknown env id(s) {unknown}; registered harness envs: {list(harness_gym.ENV_IDS)}")
    return env_ids


def write_json(path: str | None, results: dict[str, Any]) -> None:
    """Write ``results`` to ``path`` (nothing when it is None) and say so on stderr."""
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2)
        print(f"wrote {path}", file=sys.stderr)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = script_parser(__doc__, "env to measure")
    ap.add_argument("--steps", type=int, default=1500, help="steps of each random masked run (default 1500)")
    ap.add_argument("--baseline-steps", type=int, default=50_000,
                    help="steps of CartPole-v1's random runs (default 50000, about a second)")
    ap.add_argument("--ppo-steps", type=int, default=8192, help="PPO steps per run; 0 skips PPO (default 8192)")
    ap.add_argument("--jobs", type=int, default=200, help="cold sandbox jobs timed (default 200)")
    ap.add_argument("--isolation", default="bwrap", help="isolation of the cold-job sandbox (default bwrap)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the PPO runs (default 0)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="times every figure is measured; the tables give medians (default 3; 1 for a quick look)")
    ap.add_argument("--json", default=None, metavar="OUT", help="write every figure to this JSON file")
    args = ap.parse_args(argv)
    env_ids = chosen_env_ids(ap, args.env)
    if args.steps < 1 or args.baseline_steps < 1 or args.ppo_steps < 0 or args.jobs < 1 or args.repeats < 1:
        ap.error(f"--steps, --baseline-steps, --jobs and --repeats must be >= 1 and --ppo-steps >= 0, got "
                 f"{args.steps}, {args.baseline_steps}, {args.jobs}, {args.repeats}, {args.ppo_steps}")
    results: dict[str, Any] = {"steps": args.steps, "baseline_steps": args.baseline_steps, "ppo_steps": args.ppo_steps, "ppo_settings": PPO_SETTINGS,
                               "repeats": args.repeats, "loadavg_before": _loadavg(), "cpus": os.cpu_count(),
                               "envs": {}}
    order = [BASELINE] + [e for e in env_ids if e != BASELINE]
    measured: dict[str, list[dict[str, Any]]] = {env_id: [] for env_id in order}
    for repeat in range(args.repeats):
        for env_id in order:
            print(f"repeat {repeat + 1}/{args.repeats}: {env_id}", file=sys.stderr, flush=True)
            one: dict[str, Any] = {"random": random_cold_warm(env_id, args.baseline_steps if env_id == BASELINE
                                                              else args.steps)}
            if args.ppo_steps:
                one["ppo"] = ppo_cold_warm(env_id, args.ppo_steps, args.seed)
            measured[env_id].append(one)
    for env_id in order:
        fig = combine_repeats(measured[env_id])
        results["envs"][env_id] = fig
        _add_ratios(fig, results["envs"][BASELINE])
        _print_env(env_id, fig)
    medians, p95s = [], []
    for _ in range(args.repeats):
        lat, in_force = cold_job_latency(args.jobs, args.isolation)
        lat_ms = sorted(1e3 * s for s in lat)
        medians.append(statistics.median(lat_ms))
        p95s.append(lat_ms[max(int(0.95 * len(lat_ms)) - 1, 0)])
    median_ms = statistics.median(medians)
    results["cold_job"] = {"jobs": args.jobs, "isolation": in_force, "median_ms": median_ms,
                           "p95_ms": statistics.median(p95s), "repeats_median_ms": medians,
                           "ok": median_ms <= COLD_JOB_MAX_MEDIAN_MS}
    results["loadavg_after"] = _loadavg()
    print(f"cold sandbox job: median {median_ms:.2f} ms (target <= {COLD_JOB_MAX_MEDIAN_MS:g} ms: "
          f"{_verdict(results['cold_job']['ok'])}), p95 {results['cold_job']['p95_ms']:.2f} ms, isolation {in_force}")
    print("cold = a new process on an empty on-disk execution cache; warm = a second new process on the same "
          "cache folder")
    print(f"load average before {results['loadavg_before']}, after {results['loadavg_after']}")
    print()
    print(markdown_table(results))
    write_json(args.json, results)
    return results


def _loadavg() -> str:
    try:
        with open("/proc/loadavg", encoding="utf-8") as fh:
            return " ".join(fh.read().split()[:3])
    except OSError:
        return "n/a"


if __name__ == "__main__":
    main()
