"""What a controller that beats the best fixed strategy does differently, read from the episodes themselves.

    python benchmarks/winning_behaviour.py ENV --controller SPEC --against STRATEGY [--cost-weight W]
        [--episodes 300] [--seed 0] [--trace 1]

``SPEC`` is a model file (``harness-gym train`` writes one), ``probe:HEADROOM_JSON@W`` (the closed-loop linear
probe the headroom benchmark fitted at cost weight ``W``, read from its per-env JSON) or ``ppo:STEPS@SEED`` (train
ppo-sparse at ``--cost-weight`` on the train split here). ``STRATEGY`` is a fixed strategy's name (a script such
as ``O2-R0-T0-D-T0-C6`` or a named harness). Both play the same seeded test episodes. Printed:

- the paired return difference with its 95% bootstrap CI, and both controllers' Q, cost and action counts;
- after each DRAFT, CHECK or REVISE, the controller's next action by the last check's result;
- before its first DRAFT, the features that most separate the steps where it drafts from those where it gathers
  more (mean value at each, ordered by the standardised difference): what its stopping rule reads;
- ``--trace N`` example episodes where the two differ, step by step with the observation values the controller
  reacted to.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import gymnasium as gym
import numpy as np

import harness_gym  # noqa: F401  (registers the ids)
from harness_gym.core.actions import Action
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.running.rollout import episode_seed, play_episode
from harness_gym.tiered import action_name, base_action
from harness_gym_baselines.evaluate import bootstrap_ci
from harness_gym_baselines.experiments.headroom import LinearPolicy
from harness_gym_baselines.experiments.script_search import fixed_policy
from harness_gym_baselines.policies.registry import make_policy

SHOWN = ("draft_version", "n_checks", "last_check_result", "check_pass_share", "worker_confidence", "key_coverage",
         "n_task_keys", "retrieval_top_score", "n_retrieved", "n_observations", "observations_exhausted",
         "n_tool_calls", "last_tool_answers", "budget_left", "cost_spent")
"""The features printed in the traces (those present in FEATURE_NAMES)."""


def load_controller(spec: str, env_id: str, cost_weight: float) -> object:
    if spec.startswith("probe:"):
        path, w = spec[len("probe:"):].rsplit("@", 1)
        record = json.loads(Path(path).read_text())
        row = next(r for r in record["rows"] if abs(float(r["cost_weight"]) - float(w)) < 1e-12)
        return LinearPolicy(np.array(row["probe_weights"], dtype=np.float64), name=f"probe-w{w}")
    if spec.startswith("ppo:"):
        from harness_gym_baselines.algos.ppo import PPOSparseConfig, train

        steps, seed = spec[len("ppo:"):].split("@")
        out = Path(tempfile.mkdtemp(prefix="hg-winning-")) / f"{env_id}-ppo.zip"
        return train(PPOSparseConfig(env_id=env_id, steps=int(steps), seed=int(seed), cost_weight=cost_weight,
                                     out=str(out), progress=False, final_eval_episodes=0, eval_every=0,
                                     log_dir=str(out.parent / "runs")))
    return make_policy(spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env_id")
    parser.add_argument("--controller", required=True)
    parser.add_argument("--against", required=True)
    parser.add_argument("--cost-weight", type=float, default=0.01)
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trace", type=int, default=1)
    args = parser.parse_args(argv)
    env = gym.make(args.env_id, cost_weight=args.cost_weight)
    ours, theirs = load_controller(args.controller, args.env_id, args.cost_weight), fixed_policy(args.against)
    shown = [n for n in SHOWN if n in FEATURE_NAMES]
    index = {n: FEATURE_NAMES.index(n) for n in shown}
    returns, counts = {"ours": [], "theirs": []}, {"ours": Counter(), "theirs": Counter()}
    quality, cost = defaultdict(list), defaultdict(list)
    choices: dict[tuple, Counter] = defaultdict(Counter)
    drafted, gathered = [], []
    differing = []
    for i in range(args.episodes):
        seed = episode_seed(args.seed, i)
        played = {}
        for label, policy in (("ours", ours), ("theirs", theirs)):
            ep = play_episode(env, policy, seed=seed, split="test")
            played[label] = ep
            returns[label].append(sum(ep.rewards))
            quality[label].append(ep.final_info["quality"])
            cost[label].append(sum(info["cost"]["units"] for info in ep.infos[1:]))
            counts[label].update(action_name(a) for a in ep.actions)
        ep = played["ours"]
        first_draft = next((t for t, a in enumerate(ep.actions) if base_action(a) == Action.DRAFT), len(ep.actions))
        for t in range(min(first_draft + 1, len(ep.actions))):
            if t > 0:  # the first step has nothing to react to yet
                (drafted if t == first_draft else gathered).append(ep.observations[t])
        for t, action in enumerate(ep.actions):
            obs = ep.observations[t]
            if t > 0 and base_action(ep.actions[t - 1]) in (Action.DRAFT, Action.CHECK, Action.REVISE):
                key = (action_name(ep.actions[t - 1]), round(float(obs[index["last_check_result"]]), 1)
                       if "last_check_result" in index else 0.0)
                choices[key][action_name(action)] += 1
        if list(ep.actions) != list(played["theirs"].actions):
            differing.append((seed, played))
    diff = np.array(returns["ours"]) - np.array(returns["theirs"])
    lo, hi = bootstrap_ci(diff, seed=args.seed)
    print(f"# {args.env_id}, w = {args.cost_weight:g}, {args.episodes} test episodes (seed {args.seed}): "
          f"{getattr(ours, 'name', args.controller)} vs {args.against}")
    print(f"return difference {diff.mean():+.4f} [95% CI {lo:+.4f}, {hi:+.4f}]; episodes that differ: {len(differing)}")
    for label in ("ours", "theirs"):
        print(f"- {label}: Q {np.mean(quality[label]):.3f}, cost {np.mean(cost[label]):.2f}, actions per episode "
              + ", ".join(f"{k} {v / args.episodes:.2f}" for k, v in sorted(counts[label].items())))
    print("\nAfter a DRAFT / CHECK / REVISE, the controller's next action (by the previous action and "
          "last_check_result: 1 passed, -1 failed, 0 none):")
    for key in sorted(choices):
        total = sum(choices[key].values())
        print(f"- after {key[0]}, last_check_result {key[1]:+.1f} ({total} steps): "
              + ", ".join(f"{a} {n / total:.0%}" for a, n in choices[key].most_common()))
    if drafted and gathered:
        d, g = np.array(drafted), np.array(gathered)
        spread = np.concatenate([d, g]).std(axis=0) + 1e-9
        order = sorted(range(len(FEATURE_NAMES)), key=lambda j: -abs(d[:, j].mean() - g[:, j].mean()) / spread[j])
        print(f"\nBefore its first DRAFT ({len(d)} drafting steps, {len(g)} gathering steps), the features that most "
              "separate drafting from gathering more (mean when drafting / when gathering):")
        for j in order[:6]:
            print(f"- {FEATURE_NAMES[j]}: {d[:, j].mean():.3f} / {g[:, j].mean():.3f}")
        print("\nWhen it drafts, by the evidence gathered (observations, retrievals, tool calls: the features' values "
              "x 10), how often, and what it read there (means):")
        groups: dict[tuple, list] = defaultdict(list)
        for row in d:
            key = tuple(round(10 * float(row[FEATURE_NAMES.index(n)])) for n in
                        ("n_observations", "n_retrieved", "n_tool_calls"))
            groups[key].append(row)
        for key, rows in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            rows_ = np.array(rows)
            read = ", ".join(f"{n} {rows_[:, FEATURE_NAMES.index(n)].mean():.2f}"
                             for n in ("key_coverage", "n_task_keys", "retrieval_top_score", "observations_exhausted"))
            print(f"- O{key[0]} R{key[1]} T{key[2]}: {len(rows)} episodes; {read}")
    for seed, played in differing[:args.trace]:
        print(f"\nExample (reset seed {seed}):")
        for label in ("theirs", "ours"):
            ep = played[label]
            print(f"  {label}: " + " ".join(action_name(a) for a in ep.actions)
                  + f"  -> Q {ep.final_info['quality']:.2f}, return {sum(ep.rewards):+.3f}")
        ep = played["ours"]
        for t, action in enumerate(ep.actions):
            values = ", ".join(f"{n} {float(ep.observations[t][index[n]]):.2f}" for n in shown)
            print(f"    step {t}: {action_name(action):<8} read {values}")
    env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
