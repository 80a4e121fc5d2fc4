"""Write the precomputed cost budgets of the shipped price profiles: ``python -m harness_gym.budget``.

For every registered env id (``-v2`` and ``-v1``: their worker profiles differ) and every shipped profile (each base profile with each retrieval overlay), plays the
reference controllers of the budget rule (:mod:`harness_gym.budget.rule`) and writes ``envs_data/budgets.json``:
per env id, its domain, the fingerprint of the configuration the values hold for, whether the domain follows a
published benchmark's step limits (then ``auto`` sets no cost budget and the value only scales ``cost_spent``) and, per
profile, the rule's value in units, the largest and the median reference episode cost and the digest of the
prices. Rerun it whenever a task file, a worker profile, a
prompt, a price file or the billing changes (``--check`` says whether the file is current; exit status 1 when
not). ``--env ID`` (repeatable) recomputes only those envs and keeps the others' entries.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

import harness_gym
from harness_gym.budget import rule as budget_rule
from harness_gym.budget.rule import budgets_file
from harness_gym.core.prices import price_profiles


def env_entry(env_id: str, profiles: Sequence[str]) -> dict[str, Any]:
    """The ``budgets.json`` entry of one env id, computed afresh (the stored file is not read).

    :param env_id: a registered env id
    :param profiles: the price profiles to compute the budget at
    """
    entry: dict[str, Any] = {"env_id": env_id, "profiles": {}}
    for profile in profiles:
        env = gym.make(env_id, prices=profile, budget_units=None)
        try:
            henv = env.unwrapped
            entry["domain"] = henv.domain.name
            entry["fingerprint"] = henv.reference_fingerprint()
            entry["follows_published_limits"] = henv.domain.follows_published_limits
            costs = [henv.prices.units(bill) for bill in henv.reference_bills()]
            entry["profiles"][profile] = {"budget_units": budget_rule.budget_from_costs(costs),
                                          "max_units": max(costs), "median_units": statistics.median(costs),
                                          "prices": henv.prices.digest()}
        finally:
            env.close()
    return entry


def compute(env_ids: Sequence[str], profiles: Sequence[str]) -> dict[str, Any]:
    """The ``envs`` part of ``budgets.json`` for these envs and profiles.

    :param env_ids: registered env ids
    :param profiles: price profile names
    """
    return {env_id: env_entry(env_id, profiles) for env_id in env_ids}


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or with ``--check`` verify) ``envs_data/budgets.json``.

    :param argv: the arguments (default ``sys.argv[1:]``)
    """
    parser = argparse.ArgumentParser(prog="python -m harness_gym.budget", description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", default=[], choices=harness_gym.ALL_ENV_IDS, metavar="ENV_ID",
                        help="recompute only this env (repeatable; default every registered env)")
    parser.add_argument("--out", default=None, help="the file to write (default envs_data/budgets.json)")
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = parser.parse_args(argv)
    path = Path(args.out) if args.out else budgets_file()
    old = json.loads(path.read_text()) if path.is_file() else {"envs": {}}
    old.setdefault("envs", {})
    fresh = compute(args.env or harness_gym.ALL_ENV_IDS, price_profiles())
    if args.check:
        stale = sorted(name for name, entry in fresh.items() if old["envs"].get(name) != entry)
        if stale:
            print(f"{path}: stale for {', '.join(stale)}; rerun python -m harness_gym.budget")
            return 1
        print(f"{path}: current")
        return 0
    envs = {**old["envs"], **fresh} if args.env else fresh
    out = {"rule": budget_rule.RULE, "rule_version": budget_rule.RULE_VERSION, "seed": budget_rule.SEED,
           "factor": budget_rule.FACTOR,
           "envs": {name: envs[name] for name in sorted(envs)}}
    path.write_text(json.dumps(out, indent=1) + "\n")
    for name, entry in sorted(fresh.items()):
        units = ", ".join(f"{p} {v['budget_units']:.2f}" for p, v in entry["profiles"].items())
        if entry["follows_published_limits"]:
            units = f"no cost budget (published step limits); cost_spent scale {units}"
        print(f"{entry['env_id']}: {units}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
