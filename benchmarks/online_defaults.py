"""The online trainers' default settings, chosen once on the validation split, the same for every env.

    nice python benchmarks/online_defaults.py [--envs HarnessCode-v1 HarnessResearchQA-v1 HarnessTauRetail-v1]
        [--n-steps 128 512] [--n-epochs 4 10] [--budgets 10000 20000 40000] [--seeds 0] [--cost-weight 0.01]
        [--episodes 50] [--json OUT.json]

For every env, seed and (n_steps, n_epochs) cell, one ppo-sparse run trains up to the largest budget; at each
budget on the way the greedy (deterministic) policy plays ``--episodes`` validation episodes (the training
continues from there, so the 20k-step figure is the 40k run after 20k steps). The table holds the mean val
return per env and its mean across envs.

The rule, written down before the first run and not changed after it: the (n_steps, n_epochs) cell with the
best mean val return across envs at the largest budget; then the smallest budget whose mean val return in that
cell is within 0.01 of that cell's best. Those become :class:`~harness_gym_baselines.algos.ppo.PPOConfig`'s
defaults (docs/online_rl.md holds the table).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from stable_baselines3.common.logger import configure

from harness_gym_baselines.algos.offline_common import seed_everything
from harness_gym_baselines.algos.online_common import env_constructor_kwargs, make_model, make_training_env
from harness_gym_baselines.algos.ppo import PPOConfig
from harness_gym_baselines.evaluate import evaluate
from harness_gym_baselines.policies.sb3_zip import SB3Policy

TOLERANCE = 0.01
"""a budget is as good as the best one when its mean val return is within this much of it"""


def sweep_cell(env_id: str, n_steps: int, n_epochs: int, seed: int, budgets: list[int], cost_weight: float,
               episodes: int) -> dict[int, float]:
    """Mean greedy val return at each budget of one ppo-sparse run (``budgets`` ascending)."""
    cfg = PPOConfig(env_id=env_id, steps=budgets[-1], seed=seed, cost_weight=cost_weight, n_steps=n_steps,
                    n_epochs=n_epochs, progress=False, eval_every=0, final_eval_episodes=0)
    seed_everything(cfg.seed, cfg.torch_threads)
    env_kwargs = env_constructor_kwargs(env_id, cost_weight, ())
    venv = make_training_env(cfg)
    model = make_model(cfg, venv)
    model.set_logger(configure(None, []))
    returns, done = {}, 0
    for budget in budgets:
        model.learn(total_timesteps=budget - done, reset_num_timesteps=done == 0)
        done = budget
        result = evaluate(env_id, SB3Policy(model, name="ppo-sparse", deterministic=True), episodes=episodes,
                          split="val", seed=seed, env_kwargs=env_kwargs)
        returns[budget] = result["return_mean"]
    venv.close()
    return returns


def choose(table: dict[tuple[int, int], dict[int, float]]) -> tuple[int, int, int]:
    """The rule of the module docstring: (n_steps, n_epochs, budget) from the mean val returns per cell."""
    largest = max(next(iter(table.values())))
    cell = max(table, key=lambda c: table[c][largest])
    best = max(table[cell].values())
    budget = min(b for b, r in table[cell].items() if r >= best - TOLERANCE)
    return (*cell, budget)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+",
                        default=["HarnessCode-v1", "HarnessResearchQA-v1", "HarnessTauRetail-v1"])
    parser.add_argument("--n-steps", nargs="+", type=int, default=[128, 512])
    parser.add_argument("--n-epochs", nargs="+", type=int, default=[4, 10])
    parser.add_argument("--budgets", nargs="+", type=int, default=[10_000, 20_000, 40_000])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--cost-weight", type=float, default=0.01)
    parser.add_argument("--episodes", type=int, default=50, help="val episodes per evaluation")
    parser.add_argument("--json", default=None, help="also write the per-run returns here")
    args = parser.parse_args(argv)
    budgets = sorted(args.budgets)
    runs = []
    for n_steps in args.n_steps:
        for n_epochs in args.n_epochs:
            for env_id in args.envs:
                for seed in args.seeds:
                    start = time.perf_counter()
                    returns = sweep_cell(env_id, n_steps, n_epochs, seed, budgets, args.cost_weight,
                                         args.episodes)
                    runs.append({"env_id": env_id, "n_steps": n_steps, "n_epochs": n_epochs, "seed": seed,
                                 "returns": returns, "seconds": time.perf_counter() - start})
                    print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    table = {}
    for n_steps in args.n_steps:
        for n_epochs in args.n_epochs:
            table[(n_steps, n_epochs)] = {
                b: float(np.mean([r["returns"][b] for r in runs
                                  if (r["n_steps"], r["n_epochs"]) == (n_steps, n_epochs)])) for b in budgets}
    short = [e.removeprefix("Harness").removesuffix("-v1") for e in args.envs]
    print(f"| n_steps | n_epochs | steps | {' | '.join(short)} | mean |")
    print("|---|---|---|" + "---|" * (len(short) + 1))
    for (n_steps, n_epochs), by_budget in table.items():
        for b in budgets:
            per_env = [np.mean([r["returns"][b] for r in runs if r["env_id"] == e
                                and (r["n_steps"], r["n_epochs"]) == (n_steps, n_epochs)]) for e in args.envs]
            cells = " | ".join(f"{v:.3f}" for v in per_env)
            print(f"| {n_steps} | {n_epochs} | {b} | {cells} | {by_budget[b]:.3f} |")
    n_steps, n_epochs, budget = choose(table)
    seconds = sum(r["seconds"] for r in runs)
    print(f"\nchosen by the rule: n_steps={n_steps}, n_epochs={n_epochs}, steps={budget} "
          f"({len(runs)} runs, {seconds:.0f} s of training and evaluation)")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
