"""The references at the defaults: random, the named scripts and the upper reference, per env, with how often the
episode ended in a forced submit and how often the submitted draft had been checked.

    python benchmarks/references.py [ENV ...] [--episodes 300] [--seed 0] [--split test]
        [--budget-units auto|none|UNITS] [--env-kwarg KEY=VALUE ...] [--json OUT.json]

Every controller plays the same seeded episodes (``harness_gym.running.rollout.episode_seed``). Columns: mean Q with a 95%
bootstrap CI, mean episode cost (units of US$0.0001), the share of episodes that ended in a forced submit (the cost or the
step budget ran out before SUBMIT) and the check-before-submit rate (the HMS pattern). The script reads only the
public API that every version of the package has, so the same file measures an older checkout
(``PYTHONPATH=OLD_CHECKOUT python benchmarks/references.py``) for a before/after table.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import gymnasium as gym
import numpy as np

import harness_gym
from harness_gym.running.rollout import episode_seed, play_episode
from harness_gym_baselines.policies.registry import make_policy

CONTROLLERS: tuple[str, ...] = ("random", "static", "forced-check", "thorough", "oracle")


def bootstrap_ci(values: np.ndarray, seed: int = 0, resamples: int = 2000) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean."""
    rng = np.random.default_rng(seed)
    means = rng.choice(values, size=(resamples, len(values)), replace=True).mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def measure(env_id: str, controller: str, *, episodes: int, seed: int, split: str,
            env_kwargs: dict) -> dict:
    """One row: the controller's outcomes on ``episodes`` seeded episodes of ``split``."""
    env = gym.make(env_id, **env_kwargs)
    try:
        quality, cost, forced, checked = [], [], [], []
        for i in range(episodes):
            policy = make_policy(controller)
            ep = play_episode(env, policy, seed=episode_seed(seed, i), split=split)
            info = ep.final_info
            quality.append(float(info["quality"]))
            cost.append(sum(float(step["cost"]["units"]) for step in ep.infos[1:]))
            forced.append(bool(info["forced_submit"]))
            cbs = info["patterns"].get("check_before_submit", float("nan"))
            checked.append(float(cbs))
        q = np.array(quality)
        lo, hi = bootstrap_ci(q, seed)
        cbs = np.array(checked)
        budget = getattr(env.unwrapped, "budget_units", None)
        return {"env_id": env_id, "controller": controller, "episodes": episodes, "seed": seed, "split": split,
                "quality": float(q.mean()), "quality_ci": [lo, hi], "cost": float(np.mean(cost)),
                "forced_submit_rate": float(np.mean(forced)),
                "check_before_submit": float(np.nanmean(cbs)) if np.isfinite(cbs).any() else math.nan,
                "budget_units": budget}
    finally:
        env.close()


def parse_kwarg(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--env-kwarg {text!r}: expected KEY=VALUE")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env_id", nargs="*", help="registered env ids (default: all)")
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split", default="test")
    parser.add_argument("--controllers", default=",".join(CONTROLLERS))
    parser.add_argument("--budget-units", default="auto", help="auto (the default), none or a number of units")
    parser.add_argument("--env-kwarg", action="append", default=[], type=parse_kwarg)
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    env_kwargs = dict(args.env_kwarg)
    if args.budget_units != "auto":
        env_kwargs["budget_units"] = None if args.budget_units == "none" else float(args.budget_units)
    rows = []
    print(f"# {args.split} split, {args.episodes} episodes, seed {args.seed}, budget_units={args.budget_units}, "
          f"env kwargs {env_kwargs or '{}'}")
    print("| env | controller | Q [95% CI] | cost | forced submit % | check before submit | cost budget |")
    print("|---|---|---|---|---|---|---|")
    for env_id in args.env_id or harness_gym.ENV_IDS:
        for controller in args.controllers.split(","):
            row = measure(env_id, controller, episodes=args.episodes, seed=args.seed, split=args.split,
                          env_kwargs=env_kwargs)
            rows.append(row)
            lo, hi = row["quality_ci"]
            budget = "none" if row["budget_units"] is None else f"{row['budget_units']:.2f}"
            print(f"| {env_id} | {controller} | {row['quality']:.3f} [{lo:.3f}, {hi:.3f}] | {row['cost']:.2f} | "
                  f"{100 * row['forced_submit_rate']:.1f} | {row['check_before_submit']:.2f} | {budget} |", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
