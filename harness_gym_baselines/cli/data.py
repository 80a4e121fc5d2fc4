"""``harness-gym collect``, ``merge-cache`` and ``view``: offline datasets, LLM caches and the episode viewer."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from harness_gym_baselines.cli.env_options import (
    env_kwargs,
)
from harness_gym_baselines.cli.options import (
    Subparsers,
    add_command,
    add_shared,
    load_policy_arg,
    scale_options,
)
from harness_gym_baselines.cli.output import clean_json, json_default
from harness_gym_baselines.common.options import (
    UsageError,
    positive_int,
)
from harness_gym_baselines.policies.registry import make_policy, policy_help


def cmd_collect(args: argparse.Namespace) -> int:
    from harness_gym.datasets import STEP_INFO_KEYS, SettingsMismatch, collect
    from harness_gym_baselines.policies.coverage import CoveragePolicy, record_components

    kwargs = env_kwargs(args)
    refs = (make_policy("random"), make_policy("oracle")) if args.ref_episodes > 0 else None
    policy = load_policy_arg(args.policy)
    try:
        dataset = collect(args.env_id, policy, args.out, episodes=args.episodes, seed=args.seed,
                          split=args.split, env_kwargs=kwargs, ref_policies=refs, ref_episodes=args.ref_episodes,
                          info_keys=None if "all" in args.info_key else (*STEP_INFO_KEYS, *args.info_key),
                          progress=args.progress and not args.json, **scale_options(args))
    except SettingsMismatch as exc:
        raise UsageError(f"--out {args.out}: {exc}") from None
    if isinstance(policy, CoveragePolicy):
        record_components(dataset, policy)
    meta = dataset.storage.metadata
    if args.json:
        print(json.dumps(clean_json({"dataset_id": dataset.id, "episodes": dataset.total_episodes,
                                 "steps": dataset.total_steps, "ref_min_score": meta.get("ref_min_score"),
                                 "ref_max_score": meta.get("ref_max_score"),
                                 "cost_mean": meta.get("harness_gym", {}).get("cost_mean"),
                                 "return_mean": meta.get("harness_gym", {}).get("return_mean"),
                                 "path": str(dataset.storage.data_path)}), default=json_default))
        return 0
    print(f"{dataset.id}: {dataset.total_episodes} episodes, {dataset.total_steps} steps, ref scores "
          f"{meta.get('ref_min_score')} (random) .. {meta.get('ref_max_score')} (oracle), "
          f"cost {meta.get('harness_gym', {}).get('cost_mean')} units/episode, "
          f"return {meta.get('harness_gym', {}).get('return_mean')}, "
          f"stored at {dataset.storage.data_path}")
    return 0


def cmd_merge_cache(args: argparse.Namespace) -> int:
    from harness_gym.workers.llm_cache import merge_caches

    report = merge_caches(args.dest, args.sources)
    if args.json:
        print(json.dumps({"dest": args.dest, **dataclasses.asdict(report)}))
        return 0
    print(f"{args.dest}: {report.added} entries added, {report.kept} already held, {report.replaced} failures "
          f"replaced, {report.conflicts} conflicting keys (the first outcome kept)")
    return 0


def cmd_view(args: argparse.Namespace) -> int:
    from harness_gym_baselines.report.episode_view import episodes_page, load_run

    try:
        episodes = load_run(args.run, limit=args.limit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(episodes_page(episodes, f"harness_gym episodes: {args.run}"))
    print(f"wrote {out} ({len(episodes)} episodes of {args.run})")
    return 0


def add_collect(sub: Subparsers) -> None:
    """The parser of ``harness-gym collect``."""
    p = add_command(sub, "collect", "collect a rollout buffer as a Minari dataset (resumable)", cmd_collect,
                         "print the dataset's summary (id, episodes, steps, reference scores, cost) as JSON",
                         policy={"default": "behaviour", "help": f"the controller that acts; {policy_help()}"})
    p.add_argument("env_id")
    p.add_argument("--episodes", type=positive_int, required=True, help="episodes to collect")
    p.add_argument("--out", required=True, metavar="DATASET_ID", help="Minari id, e.g. harness/code-behaviour-v0")
    p.add_argument("--seed", type=int, default=0, help="episode i resets with seed * 1000003 + i")
    p.add_argument("--split", default="train", choices=("train", "val", "test", "ood"), help="task split")
    p.add_argument("--ref-episodes", type=int, default=100,
                   help="episodes of the random and oracle controllers for ref_min/max_score (0: none)")
    p.add_argument("--info-key", action="append", default=[], metavar="KEY",
                   help="also store this info key at every step (repeatable; 'all': every key). By default only "
                        "action_mask and invalid_action are stored per step, and each episode's outcome "
                        "(quality, success, hms, patterns, ...) once as episode metadata")
    add_shared(p)


def add_merge_cache(sub: Subparsers) -> None:
    """The parser of ``harness-gym merge-cache``."""
    p = add_command(sub, "merge-cache", "merge LLM record/replay caches recorded on several nodes into one file",
                         cmd_merge_cache, "print the counts (added, kept, replaced, conflicts) as JSON")
    p.add_argument("dest", help="the merged cache (created when missing)")
    p.add_argument("sources", nargs="+", help="cache files to merge in, in order (the first outcome of a key wins)")
    add_shared(p)


def add_view(sub: Subparsers) -> None:
    """The parser of ``harness-gym view``."""
    p = add_command(sub, "view", "render the episodes of a dataset or an eval run step by step as HTML", cmd_view)
    p.add_argument("run", help="an episodes file (harness-gym eval --save-episodes) or a Minari dataset id or folder")
    p.add_argument("--out", required=True, help="the HTML file to write")
    p.add_argument("--limit", type=positive_int, default=50, help="at most this many episodes")
    add_shared(p)
