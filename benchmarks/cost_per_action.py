"""Mean cost units per action type, per env and price profile, and the actions that cost nothing.

    python benchmarks/cost_per_action.py [--episodes 100] [--env ID ...] [--profile NAME ...] [--json OUT.json]

Plays ``--episodes`` episodes per env (train split, reset seeds 0.., no cost budget) with a controller that picks
uniformly among the applicable actions, so that every action type is taken in many states, and records what each
valid step billed (the change of ``env.episode_bill``). Billed quantities do not depend on the prices, only on
the retrieval mode, so the episodes are played once per retrieval mode and every profile prices the steps of
its mode. Prints, per env, a Markdown table of the mean units of a valid step of each action type under each
profile (inapplicable actions are no-ops and bill nothing), the steps it averages over, and the action types
whose mean is 0 at the first profile: besides SUBMIT (the hidden grader is evaluation), an action that costs
nothing is either free in a deployed harness (an OBSERVE that reads text the task came with) or a gap in the
domain's bills, which the reader judges per domain. docs/cost.md holds its output.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import gymnasium as gym
import numpy as np

import harness_gym
from harness_gym.core.actions import Action
from harness_gym.core.prices import price_table

PROFILES = ("cheap-hosted", "frontier-hosted", "self-hosted", "cheap-hosted+web-search")
FREE_BY_DESIGN = {Action.SUBMIT: "the hidden grader is evaluation, never billed"}


def step_bills(env_id: str, prices: str, episodes: int) -> dict[Action, list[dict[str, float]]]:
    """Action -> the bill of every valid step of that action over the episodes (random applicable actions).

    :param env_id: a registered env id
    :param prices: a profile of the retrieval mode to play in
    :param episodes: episodes to play
    """
    env = gym.make(env_id, prices=prices, budget_units=None)
    henv = env.unwrapped
    bills: dict[Action, list[dict[str, float]]] = defaultdict(list)
    for seed in range(episodes):
        env.reset(seed=seed, options={"split": "train"})
        rng = np.random.default_rng(seed)
        done = False
        while not done:
            action = Action(int(rng.choice(np.flatnonzero(henv.action_masks()))))
            before = dict(henv.episode_bill)
            _, _, terminated, truncated, info = env.step(int(action))
            done = terminated or truncated
            if not info["invalid_action"]:
                after = henv.episode_bill
                bills[action].append({k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)})
    env.close()
    return bills


def env_table(env_id: str, profiles: tuple[str, ...], episodes: int) -> dict:
    """Per action: its step count and mean units under each profile, plus the zero-cost actions.

    :param env_id: a registered env id
    :param profiles: price profiles
    :param episodes: episodes per retrieval mode
    """
    tables = {p: price_table(p) for p in profiles}
    by_mode = {}
    for name, table in tables.items():
        if table.retrieval_mode not in by_mode:
            by_mode[table.retrieval_mode] = step_bills(env_id, name, episodes)
    rows = {}
    for action in Action:
        steps = by_mode[tables[profiles[0]].retrieval_mode].get(action, [])
        units = {p: float(np.mean([t.units(b) for b in by_mode[t.retrieval_mode].get(action, [])]))
                 if by_mode[t.retrieval_mode].get(action) else float("nan") for p, t in tables.items()}
        rows[action.name] = {"steps": len(steps), "units": units}
    zero = [a for a, r in rows.items() if r["steps"] and r["units"][profiles[0]] == 0.0]
    return {"rows": rows, "zero_cost": zero}


def markdown(env_id: str, result: dict, profiles: tuple[str, ...]) -> str:
    lines = [f"**{env_id}**", "", "| action | steps | " + " | ".join(profiles) + " |",
             "|---|---|" + "---|" * len(profiles)]
    for action, row in result["rows"].items():
        cells = " | ".join("-" if np.isnan(row["units"][p]) else f"{row['units'][p]:.3f}" for p in profiles)
        lines.append(f"| {action} | {row['steps']} | {cells} |")
    others = [a for a in result["zero_cost"] if Action[a] not in FREE_BY_DESIGN]
    lines += ["", f"zero-cost at {profiles[0]} besides SUBMIT: "
              + (", ".join(f"**{a}**" for a in others) + " (free in reality, or a gap in the domain's bills)"
                 if others else "none")]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--env", action="append", default=[], choices=harness_gym.ENV_IDS)
    parser.add_argument("--profile", action="append", default=[], help=f"price profiles (default {PROFILES})")
    parser.add_argument("--json", default=None, help="also write the numbers to this file")
    args = parser.parse_args()
    profiles = tuple(args.profile) or PROFILES
    results = {}
    for env_id in args.env or harness_gym.ENV_IDS:
        results[env_id] = env_table(env_id, profiles, args.episodes)
        print(markdown(env_id, results[env_id], profiles) + "\n", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
