"""Where a step of SB3 PPO goes, per env against CartPole-v1: what Stable-Baselines3 itself spends, what the env
adds, and how much slower the env's own step runs inside PPO than the same steps in a bare loop.

    python benchmarks/profile_ppo.py [--env HarnessCode-v1 ...] [--ppo-steps 8192] [--repeats 3] [--json OUT]

Issue 28 asks for SB3 PPO at no less than 0.8x CartPole-v1's steps/s in every env, and where that is missed, for
the profile that says what is left. ``benchmarks/throughput.py`` gives the ratio; this script splits it.

**PPO breakdown.** The PPO run of ``throughput.py`` (``MlpPolicy``, its ``PPO_SETTINGS``, one env through
:func:`harness_gym.running.sb3.make_sb3_vec_env`, one torch thread, ``--ppo-steps`` steps), warm: a new ``spawn``
process on the execution-cache folder a first (untimed) run left. Timers wrap, on the made objects only,
``PPO.train``, ``DummyVecEnv.step_wait``, the ``Monitor``'s ``step``/``reset`` and the unwrapped env's
``step``/``reset``; ``gc.callbacks`` time the garbage collector. Per step (all in microseconds, wall):

=====================  ====================================================================================
total                  ``learn``'s wall time over its steps (1e6 / steps/s)
train                  ``PPO.train``: the gradient epochs over each rollout
policy + buffer        the rest of ``collect_rollouts``: the policy's forward pass, sampling, the rollout
                       buffer, the callbacks (total - train - step_wait)
vec env copies         ``DummyVecEnv.step_wait`` beyond the ``Monitor`` calls: SB3's deep copies of the
                       observation and the infos, its buffers, the terminal observation
wrappers               ``Monitor`` + gymnasium's ``TimeLimit``/``OrderEnforcing``/``PassiveEnvChecker``
                       around the env (the Monitor calls less the unwrapped env's)
env step + reset       the unwrapped env's own ``step`` and ``reset``
gc                     garbage collections during the run (they fall inside the other items too)
=====================  ====================================================================================

A row ``NullHarness`` is an env with the harness envs' spaces and a harness info (one captured from
``HarnessPlan-v1`` and returned at every step) whose ``step`` does nothing else: what SB3 costs for the
harness envs' interface alone, with no env work.

**Bare replay.** The run's own actions are played again in a third new process on the same cache folder: a new
env reset with the run's seed, then without one at each episode end, as SB3 resets it (the episodes are the run's:
the rewards must add up to the run's to the last bit, else the script fails), with nothing between the steps.
*env bare replay* is its unwrapped ``step`` + ``reset`` time per step; *slow-down under PPO* is *env step +
reset* over it: how much slower the same Python code runs when the policy's forward pass, the rollout buffer and
the gradient epochs have run in between (the CPU's caches then hold their code and data, not the env's).

``--repeats`` runs each figure that many times (CartPole-v1 first in each repeat) and reports the medians.
"""

from __future__ import annotations

import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import BASELINE, PPO_SETTINGS, chosen_env_ids, in_new_process, script_parser, write_json  # noqa: E402

NULL_ENV = "NullHarness"
PARTS = ("total", "train", "policy_buffer", "vec_copies", "wrappers", "env", "gc")
PART_TITLES = {"total": "total", "train": "train", "policy_buffer": "policy + buffer", "vec_copies": "vec env copies",
               "wrappers": "wrappers", "env": "env step + reset", "gc": "gc"}


class NullHarnessEnv(gym.Env[np.ndarray, np.int64]):
    """The harness envs' observation and action spaces and one of their infos, with nothing done per step:
    an episode ends every ``episode_steps`` steps.

    :param info: the info every reset and step returns (SB3 deep-copies it at every step, as it does a harness
        env's)
    :param episode_steps: steps per episode
    """

    def __init__(self, info: dict[str, Any], episode_steps: int = 8) -> None:
        template = gym.make("HarnessPlan-v1")
        self.observation_space = template.observation_space
        self.action_space = template.action_space
        template.close()
        self._obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        self._info = info
        self._episode_steps = episode_steps
        self._steps = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._steps = 0
        return self._obs.copy(), self._info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._steps += 1
        return self._obs.copy(), 0.0, self._steps >= self._episode_steps, False, self._info


def harness_info() -> dict[str, Any]:
    """The info of one step of ``HarnessPlan-v1`` (a DRAFT after a reset with seed 0)."""
    env = gym.make("HarnessPlan-v1")
    env.reset(seed=0)
    info = env.step(3)[-1]
    env.close()
    return info


def _timed(owner: Any, name: str, totals: dict[str, float], key: str) -> None:
    """Replace ``owner.name`` (on this object only) by a wrapper adding its wall time to ``totals[key]``."""
    inner: Callable[..., Any] = getattr(owner, name)
    clock = time.perf_counter

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return inner(*args, **kwargs)
        finally:
            totals[key] += clock() - start

    setattr(owner, name, timed)


def _make_vec_env(env_id: str, seed: int) -> Any:
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv

    from harness_gym.running.sb3 import make_sb3_vec_env

    if env_id == NULL_ENV:
        info = harness_info()
        return make_vec_env(lambda: NullHarnessEnv(info), n_envs=1, seed=seed, vec_env_cls=DummyVecEnv)
    return make_sb3_vec_env(env_id, n_envs=1, seed=seed)


def ppo_breakdown(env_id: str, steps: int, seed: int, cache_dir: str) -> dict[str, Any]:
    """One PPO run of ``env_id`` in this process with the timers of the module docstring: µs per step of each
    of :data:`PARTS`, and ``steps_per_s``."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import Logger

    os.environ["HARNESS_GYM_CACHE_DIR"] = cache_dir
    torch.set_num_threads(1)
    venv = _make_vec_env(env_id, seed)
    model = PPO("MlpPolicy", venv, seed=seed, device="cpu", verbose=0, **PPO_SETTINGS)
    model.set_logger(Logger(folder=None, output_formats=[]))
    totals = dict.fromkeys(("train", "step_wait", "monitor", "env"), 0.0)
    _timed(model, "train", totals, "train")
    _timed(venv, "step_wait", totals, "step_wait")
    monitor = venv.envs[0]
    for name in ("step", "reset"):
        _timed(monitor, name, totals, "monitor")
        _timed(monitor.unwrapped, name, totals, "env")
    actions: list[int] = []
    rewards = [0.0]
    timed_step = monitor.unwrapped.step

    def recorded_step(action: Any) -> Any:
        actions.append(int(action))
        out = timed_step(action)
        rewards[0] += float(out[1])
        return out

    monitor.unwrapped.step = recorded_step
    collecting: list[float] = []
    gc_seconds = [0.0]

    def on_gc(phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            collecting.append(time.perf_counter())
        elif collecting:
            gc_seconds[0] += time.perf_counter() - collecting.pop()

    gc.callbacks.append(on_gc)
    start = time.perf_counter()
    try:
        model.learn(total_timesteps=steps)
    finally:
        seconds = time.perf_counter() - start
        gc.callbacks.remove(on_gc)
        venv.close()
    n = model.num_timesteps
    per_step = {
        "total": seconds,
        "train": totals["train"],
        "policy_buffer": seconds - totals["train"] - totals["step_wait"],
        "vec_copies": totals["step_wait"] - totals["monitor"],
        "wrappers": totals["monitor"] - totals["env"],
        "env": totals["env"],
        "gc": gc_seconds[0],
    }
    return {"steps": n, "steps_per_s": n / seconds, **{k: 1e6 * v / n for k, v in per_step.items()},
            "actions": actions, "rewards_sum": rewards[0]}


def replay_bare(env_id: str, seed: int, actions: list[int], rewards_sum: float, cache_dir: str) -> dict[str, Any]:
    """The PPO run's own steps again in a new process, in a bare loop: a new env reset with ``seed`` (as SB3
    seeds env 0), then without one at each episode end, stepped with the run's ``actions``, on the run's
    execution-cache folder; its unwrapped ``step`` + ``reset`` timed as :func:`ppo_breakdown` times them.

    :returns: ``env_bare`` (µs per step) and ``same_episodes`` (whether the rewards add up to the run's to the
        last bit: the worker is simulated and the seeds are the run's, so the episodes are)
    """
    os.environ["HARNESS_GYM_CACHE_DIR"] = cache_dir
    env = gym.make(env_id)
    inner = env.unwrapped
    clock = time.perf_counter
    start = clock()
    inner.reset(seed=seed)
    spent = clock() - start
    total = 0.0
    for action in actions:
        start = clock()
        _, reward, terminated, truncated, _ = inner.step(action)
        if terminated or truncated:
            inner.reset()
        spent += clock() - start
        total += float(reward)
    env.close()
    return {"env_bare": 1e6 * spent / len(actions), "same_episodes": total == rewards_sum}


def warm_ppo_breakdown(env_id: str, steps: int, seed: int) -> dict[str, Any]:
    """:func:`ppo_breakdown` in a new process on the cache folder a first PPO run (another new process) left,
    then (but for the null env) :func:`replay_bare` of its steps in a third; the step slow-down is the env's
    time under PPO over its bare time."""
    cache_dir = tempfile.mkdtemp(prefix="hg-profile-ppo-")
    try:
        in_new_process(ppo_breakdown, env_id, steps, seed, cache_dir)
        run = in_new_process(ppo_breakdown, env_id, steps, seed, cache_dir)
        actions, rewards_sum = run.pop("actions"), run.pop("rewards_sum")
        if env_id != NULL_ENV:
            replay = in_new_process(replay_bare, env_id, seed, actions, rewards_sum, cache_dir)
            if not replay["same_episodes"]:
                raise RuntimeError(f"{env_id}: the bare replay of the PPO run's actions did not give its rewards")
            run["env_bare"] = replay["env_bare"]
            run["slowdown"] = run["env"] / replay["env_bare"]
        return run
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def median_fields(runs: list[dict[str, float]]) -> dict[str, Any]:
    """The median of each numeric field over ``runs``, with ``repeats_steps_per_s`` where the runs have it."""
    out: dict[str, Any] = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    if "steps_per_s" in runs[0]:
        out["repeats_steps_per_s"] = [r["steps_per_s"] for r in runs]
    return out


def markdown_table(results: dict[str, Any]) -> str:
    """The figures of :func:`main` as one markdown table: per env, PPO steps/s, its speed against CartPole-v1,
    the µs per step of each part (in brackets: more than CartPole-v1's), and the step slow-down."""
    base = results["envs"][BASELINE]["ppo"]
    head = ["env", "PPO steps/s", "speed vs CartPole-v1"] + [f"{PART_TITLES[p]} us" for p in PARTS]
    head += ["env bare replay us", "slow-down under PPO"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for env_id, fig in results["envs"].items():
        ppo = fig["ppo"]
        row = [env_id, f"{ppo['steps_per_s']:,.0f}", f"{ppo['steps_per_s'] / base['steps_per_s']:.3f}x"]
        for part in PARTS:
            extra = ppo[part] - base[part]
            row.append(f"{ppo[part]:.0f}" + ("" if env_id == BASELINE else f" ({extra:+.0f})"))
        row += [f"{ppo['env_bare']:.0f}", f"{ppo['slowdown']:.2f}x"] if "env_bare" in ppo else ["", ""]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append(f"Medians of {results['repeats']} repeat(s); us = microseconds of wall time per PPO step; in "
                 "brackets the difference to CartPole-v1's.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = script_parser(__doc__, "env to profile")
    ap.add_argument("--ppo-steps", type=int, default=8192, help="PPO steps per run (default 8192)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the runs (default 0)")
    ap.add_argument("--no-null-env", action="store_true", help=f"leave out the {NULL_ENV} row")
    ap.add_argument("--repeats", type=int, default=1, help="times each figure is measured (default 1)")
    ap.add_argument("--json", default=None, metavar="OUT", help="write every figure to this JSON file")
    args = ap.parse_args(argv)
    env_ids = chosen_env_ids(ap, args.env)
    if args.ppo_steps < 1 or args.repeats < 1:
        ap.error(f"--ppo-steps and --repeats must be >= 1, got {args.ppo_steps} and {args.repeats}")
    order = [BASELINE] + ([] if args.no_null_env else [NULL_ENV]) + [e for e in env_ids if e != BASELINE]
    ppo_runs: dict[str, list[dict[str, float]]] = {e: [] for e in order}
    for repeat in range(args.repeats):
        for env_id in order:
            print(f"repeat {repeat + 1}/{args.repeats}: {env_id}", file=sys.stderr, flush=True)
            ppo_runs[env_id].append(warm_ppo_breakdown(env_id, args.ppo_steps, args.seed))
    results: dict[str, Any] = {"ppo_steps": args.ppo_steps, "repeats": args.repeats,
                               "ppo_settings": PPO_SETTINGS, "envs": {}}
    for env_id in order:
        results["envs"][env_id] = {"ppo": median_fields(ppo_runs[env_id])}
    print(markdown_table(results))
    write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
