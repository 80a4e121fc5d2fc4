"""``harness-gym eval``, ``compare``, ``frontier``, ``card`` and ``search-script``: controllers scored on paired
episodes, the quality-cost frontier, the benchmark card and the search for the best open-loop script.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
from rich.console import Console

import harness_gym
from harness_gym.workers.llm_cache import CacheMissError
from harness_gym_baselines.cli.env_options import (
    command_env_kwargs,
    env_kwargs,
    recording_miss,
    recording_pairs,
)
from harness_gym_baselines.cli.options import (
    Subparsers,
    add_command,
    add_shared,
    episode_count,
    load_policy_arg,
    scale_options,
)
from harness_gym_baselines.cli.output import clean_json, json_default, print_table
from harness_gym_baselines.common.options import (
    UsageError,
    positive_int,
)
from harness_gym_baselines.evaluate import (
    LLM_SERVER_ERROR_RATE_LIMIT,
    LLMErrorRateWarning,
    evaluate,
    llm_error_text,
    llm_faults_text,
)
from harness_gym_baselines.policies.trained_on import OtherEnvWarning


def cmd_eval(args: argparse.Namespace) -> int:
    kwargs = env_kwargs(args)
    recorded: list[Any] = []  # the EpisodeRecorder that evaluate() wraps its env in (--save-episodes)
    wrap = None
    if args.save_episodes:
        if args.num_envs != 1 or args.backend != "local":
            raise UsageError("--save-episodes records the episodes one after another: drop --num-envs / --backend")
        from harness_gym_baselines.report.episode_view import EpisodeRecorder

        kwargs = {**kwargs, "render_mode": "ansi"}

        def wrap(env: gym.Env) -> gym.Env:
            recorded.append(EpisodeRecorder(env, policy=args.policy))
            return recorded[-1]

    pairs = recording_pairs(args)
    try:
        result = evaluate_with_one_line_warnings(args, args.env_id, load_policy_arg(args.policy),
                                                 episodes=episode_count(args), split=args.split, seed=args.seed,
                                                 env_kwargs=kwargs, progress=args.progress and not args.json,
                                                 wrap_env=wrap, pairs=pairs, **scale_options(args))
    except CacheMissError as exc:
        if pairs is None:
            raise
        raise recording_miss(args, args.policy, exc) from exc
    result["policy"] = args.policy
    if recorded:
        from harness_gym_baselines.report.episode_view import save_episodes

        save_episodes(args.save_episodes, recorded[0].episodes, env_id=args.env_id, policy=args.policy,
                      split=args.split, seed=args.seed, env_kwargs={k: v for k, v in kwargs.items()
                                                                   if k != "render_mode"})
        if not args.json:
            print(f"wrote {len(recorded[0].episodes)} episodes to {args.save_episodes} "
                  f"(harness-gym view {args.save_episodes} --out FILE.html)")
    if args.json:
        print(json.dumps(clean_json(result), default=json_default))
    else:
        lo, hi = result["quality_ci95"]
        cells = [("quality", f"{result['quality_mean']:.3f} [{lo:.3f}, {hi:.3f}]")]
        for key in ("success_rate", "hms_mean", "mean_steps", "invalid_action_rate", "forced_submit_rate",
                    "unfinished_rate", "seconds"):
            cells.append((key, f"{result[key]:.3f}"))
        clo, chi = result["cost_ci95"]
        cells.append(("cost (units per episode)", f"{result['cost_mean']:.3f} [{clo:.3f}, {chi:.3f}]"))
        cells.append((f"return (cost_weight {result['cost_weight']:g})", f"{result['return_mean']:.3f}"))
        if kwargs.get("worker") == "openai":
            cells += [("llm_calls (requests)", str(result["llm_calls"])),
                      ("llm_errors (failed requests)", str(result["llm_errors"])),
                      ("llm_error_rate", f"{result['llm_error_rate']:.3f}"),
                      ("llm_server_error_rate", f"{result['llm_server_error_rate']:.3f}"),
                      ("llm failures (call: cause)", llm_faults_text(result["llm_faults"]).removeprefix(": ") or "none")]
        for name, rate in result["patterns"].items():
            cells.append((f"pattern {name}", "n/a" if math.isnan(rate) else f"{rate:.3f}"))
        where = (f"{args.split}" if pairs is None else "recorded pairs")
        print_table(f"{args.env_id} / {result['policy']} / {where} ({result['episodes']} episodes)", ("metric", "value"),
                    cells)
    return llm_error_status(args, [result])


ONE_LINE_WARNINGS: tuple[type[Warning], ...] = (LLMErrorRateWarning, OtherEnvWarning)
"""the warnings ``eval`` and ``compare`` print as one line each: too many failed LLM requests, a model run on
another env id than it was trained on"""


def evaluate_with_one_line_warnings(args: argparse.Namespace, *pos: Any, **kwargs: Any) -> dict[str, Any]:
    """:func:`~harness_gym_baselines.evaluate.evaluate`, its warnings that a score is not what it seems
    (:data:`ONE_LINE_WARNINGS`) printed as one line ``harness-gym COMMAND: warning: ...`` each on stderr (other
    warnings are shown as they would be).

    :param args: the parsed command line (``command``)
    :param pos: positional arguments of ``evaluate``
    :param kwargs: keyword arguments of ``evaluate``
    """
    with warnings.catch_warnings(record=True) as caught:
        for category in ONE_LINE_WARNINGS:
            warnings.simplefilter("always", category)
        result = evaluate(*pos, **kwargs)
    for warning in caught:
        if issubclass(warning.category, ONE_LINE_WARNINGS):
            print(f"harness-gym {args.command}: warning: {warning.message}", file=sys.stderr)
        else:
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
    return result


def llm_error_status(args: argparse.Namespace, results: Sequence[dict[str, Any]]) -> int:
    """The exit status of ``eval`` / ``compare`` after the summary: 1, with one line on stderr naming the first
    policy over the limit, when a policy's ``llm_error_rate`` is above ``--max-llm-error-rate``, or, without
    that option, its ``llm_server_error_rate`` above
    :data:`~harness_gym_baselines.evaluate.LLM_SERVER_ERROR_RATE_LIMIT` (a server that stopped answering); else 0.

    :param args: the parsed command line (``max_llm_error_rate``)
    :param results: the printed summaries
    """
    limit = args.max_llm_error_rate
    if limit is not None:
        over = [r for r in results if r["llm_error_rate"] > limit]
        rule = f"above --max-llm-error-rate {limit:g}"
    else:
        over = [r for r in results if r.get("llm_server_error_rate", 0.0) > LLM_SERVER_ERROR_RATE_LIMIT]
        rule = (f"{100 * over[0]['llm_server_error_rate']:.1f}% for a fault of the server, above the default limit "
                f"{LLM_SERVER_ERROR_RATE_LIMIT:g} (--max-llm-error-rate X sets another; 1 accepts any)") if over else ""
    if not over:
        return 0
    print(f"harness-gym {args.command}: error: {llm_error_text(over[0])}; {rule}"
          + (f" ({len(over)} policies over it)" if len(over) > 1 else ""), file=sys.stderr)
    return 1


def row_labels(specs: Sequence[str]) -> list[str]:
    """Short row names that tell the compared policies apart: a registered name as it is, a path by the
    fewest trailing components that no other value shares (``a/models/awr.pt`` and ``b/models/awr.pt`` become
    ``a/models/awr.pt`` and ``b/models/awr.pt``; ``models/awr.pt`` and ``models/bc.pt`` become ``awr.pt`` and
    ``bc.pt``); a value given twice gets ``#2``, ``#3``.

    :param specs: the ``--policy`` values in order
    """
    parts = [Path(s).parts if Path(s).is_file() else (s,) for s in specs]
    labels = []
    for i, mine in enumerate(parts):
        for depth in range(1, len(mine) + 1):
            tail = mine[-depth:]
            if all(other[-depth:] != tail for j, other in enumerate(parts) if j != i and other != mine):
                break
        labels.append(str(Path(*tail)))
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            labels[i] = f"{label} #{seen[label]}"
    return labels


def cmd_compare(args: argparse.Namespace) -> int:
    kwargs = env_kwargs(args)
    policies = [load_policy_arg(p) for p in args.policy]
    pairs = recording_pairs(args)
    results = []
    for spec, policy in zip(args.policy, policies):
        try:
            result = evaluate_with_one_line_warnings(args, args.env_id, policy, episodes=episode_count(args),
                                                     split=args.split, seed=args.seed, env_kwargs=kwargs,
                                                     progress=args.progress and not args.json, pairs=pairs,
                                                     **scale_options(args))
        except CacheMissError as exc:
            if pairs is None:
                raise
            raise recording_miss(args, spec, exc) from exc
        results.append({**result, "policy": spec})
    if args.json:
        print(json.dumps(clean_json(results), default=json_default))
        return llm_error_status(args, results)
    title = (f"{args.env_id}, {args.split} split, {results[0]['episodes']} episodes, seed {args.seed} (same task "
             "sequence for every policy)" if pairs is None else
             f"{args.env_id}, the {len(pairs)} recorded (task, seed) pairs of {args.recording}")
    llm = kwargs.get("worker") == "openai"
    headers = ("#", "policy", "quality [95% CI]", "success", "HMS", "check before submit", "mean steps",
               "forced submit", "invalid actions", "cost", "return", *(("LLM errors",) if llm else ()))
    cells = []
    for i, (label, r) in enumerate(zip(row_labels(args.policy), results), start=1):
        lo, hi = r["quality_ci95"]
        cbs = r["patterns"]["check_before_submit"]
        llm_cell = (f"{r['llm_errors']}/{r['llm_calls']} {100 * r['llm_error_rate']:.0f}%"
                    + llm_faults_text(r["llm_faults"]).replace(": ", " ", 1),) if llm else ()
        cells.append((str(i), label, f"{r['quality_mean']:.3f} [{lo:.3f}, {hi:.3f}]", f"{r['success_rate']:.3f}",
                      f"{r['hms_mean']:.3f}", "n/a" if math.isnan(cbs) else f"{cbs:.3f}", f"{r['mean_steps']:.1f}",
                      f"{100 * r['forced_submit_rate']:.0f}%", f"{100 * r['invalid_action_rate']:.0f}%",
                      f"{r['cost_mean']:.2f}", f"{r['return_mean']:.3f}", *llm_cell))
    print_table(title, headers, cells, width=args.width, right=(0,))
    console = Console(width=args.width)
    for i, spec in enumerate(args.policy, start=1):  # the full values, never cut, whatever the width
        console.print(f"#{i}: {spec}", soft_wrap=True, markup=False, highlight=False)
    return llm_error_status(args, results)


def cmd_frontier(args: argparse.Namespace) -> int:
    from harness_gym_baselines.experiments.frontier import (
        FIXED_POLICIES,
        frontier_rows,
        parse_cost_weights,
        parse_policy_spec,
        write_frontier,
    )

    try:
        weights = parse_cost_weights(args.cost_weights)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    specs = list(FIXED_POLICIES) + list(args.policy)
    for spec in args.policy:
        load_policy_arg(parse_policy_spec(spec)[1])  # a model file that does not load, said before any episode
    rows = frontier_rows(args.env_id, specs, weights, episodes=episode_count(args), split=args.split, seed=args.seed,
                         env_kwargs=env_kwargs(args), progress=args.progress and not args.json)
    paths = write_frontier(Path(args.out), args.env_id, rows, weights)
    if args.json:
        print(json.dumps(clean_json(rows), default=json_default))
    else:
        print(paths["md"].read_text())
        print(f"wrote {paths['png']}, {paths['json']}, {paths['md']}")
    return 0


def cmd_card(args: argparse.Namespace) -> int:
    from harness_gym_baselines.report import card

    env_ids = args.env_ids or list(harness_gym.ENV_IDS)
    unknown = [e for e in env_ids if e not in harness_gym.ENV_IDS]
    if unknown:
        raise UsageError(f"--env {unknown[0]}: not a registered env id ({', '.join(harness_gym.ENV_IDS)})")
    data, markdown, readme, figure = card.default_paths(Path(args.root))
    readme_path = None if args.no_readme else readme
    if args.check:
        if not data.is_file():
            raise UsageError(f"--check: no card at {data}; run harness-gym card first")
        stored = json.loads(data.read_text())
        problems = card.check(stored, env_ids, markdown=markdown, readme=readme_path, learned=args.check_learned,
                              num_workers=args.num_workers, progress=args.progress)
        for line in problems:
            print(line)
        print(f"{data}: {'differs from the run in ' + str(len(problems)) + ' place(s)' if problems else 'matches the run'}"
              f" ({', '.join(env_ids)})")
        return 1 if problems else 0
    cfg = card.CardConfig(episodes=args.episodes, seed=args.seed, learned_seeds=tuple(range(args.learned_seeds)))
    previous = json.loads(data.read_text()) if data.is_file() else None

    def keep(env_id: str, entry: dict[str, Any]) -> None:
        if not args.json:
            print(f"{env_id}: {entry['headroom']}", flush=True)

    fresh = card.measure(env_ids, cfg, learned=bool(cfg.learned_seeds), num_workers=args.num_workers,
                         progress=args.progress, on_env=keep)
    if previous is not None and previous.get("config") == fresh["config"] and set(env_ids) != set(previous["envs"]):
        fresh["envs"] = {e: fresh["envs"].get(e, previous["envs"].get(e)) for e in harness_gym.ENV_IDS
                         if e in fresh["envs"] or e in previous["envs"]}
    written = card.write(fresh, data=data, markdown=markdown, readme=readme_path, figure=figure)
    if args.json:
        print(json.dumps(clean_json(fresh), default=json_default))
    else:
        print(f"wrote {', '.join(map(str, written))}")
    return 0


def cmd_search_script(args: argparse.Namespace) -> int:
    from harness_gym_baselines.experiments.frontier import parse_cost_weights
    from harness_gym_baselines.experiments.script_search import COST_WEIGHTS, SearchConfig, search_to_file

    try:
        weights = tuple(parse_cost_weights(args.cost_weights)) if args.cost_weights else COST_WEIGHTS
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.num_workers < 1:
        raise UsageError(f"--num-workers must be >= 1, got {args.num_workers}")
    try:
        rounds = tuple((int(n), int(k)) for n, k in (part.split(":") for part in args.rounds.split(",")))
    except ValueError:
        raise UsageError(f"--rounds {args.rounds!r}: expected EPISODES:KEEP pairs separated by commas, "
                         "e.g. 16:48,48:12,128:4") from None
    if not rounds or any(n < 1 or k < 1 for n, k in rounds):
        raise UsageError(f"--rounds {args.rounds!r}: every EPISODES and KEEP must be >= 1")
    kwargs = command_env_kwargs(args, args.env_id)
    if "cost_weight" in kwargs:
        raise UsageError("--env-kwarg cost_weight=...: the search scores every weight of --cost-weights itself; "
                         "drop it")
    results = []
    for env_id in args.env_id:
        cfg = SearchConfig(env_id, cost_weights=weights, env_kwargs=kwargs, seed=args.seed, rounds=rounds,
                           val_episodes=args.val_episodes, test_episodes=args.test_episodes)
        results.append(search_to_file(cfg, args.out, num_workers=args.num_workers,
                                      progress=args.progress and not args.json))
    if args.json:
        print(json.dumps(results, default=json_default))
        return 0
    for res in results:
        env_id = res["settings"]["env_id"]
        print(f"{env_id}: {res['candidates']} scripts searched on train/val in {res['seconds']:.0f} s; test split, "
              f"{res['settings']['test_episodes']} episodes")
        for w, won in res["winners"].items():
            test = res["test"][won["script"]]
            ret = test["return"][w]
            vs = test["minus"].get("forced-check", {}).get(w)
            versus = (f"; minus forced-check {vs['mean']:+.3f} [{vs['ci95'][0]:+.3f}, {vs['ci95'][1]:+.3f}]"
                      if vs else "")
            print(f"  w={w}: {won['script']}  return {ret['mean']:.3f} [{ret['ci95'][0]:.3f}, {ret['ci95'][1]:.3f}]"
                  f"  Q {test['quality_mean']:.3f}  cost {test['cost_mean']:.2f}  forced "
                  f"{100 * test['forced_submit_rate']:.0f}%{versus}")
    print(f"wrote {', '.join(str(Path(args.out) / (r['settings']['env_id'] + '.json')) for r in results)}")
    return 0


def add_eval(sub: Subparsers) -> None:
    """The parser of ``harness-gym eval``."""
    p = add_command(sub, "eval", "evaluate a policy and print the summary", cmd_eval,
                    "print the summary as one JSON object")
    p.add_argument("env_id")
    p.add_argument("--save-episodes", default=None, metavar="FILE",
                   help="also write every episode step by step (action, env feedback, draft, cost) to this JSON "
                        "file, for harness-gym view (default: none)")
    add_shared(p)


def add_compare(sub: Subparsers) -> None:
    """The parser of ``harness-gym compare``."""
    p = add_command(sub, "compare", "evaluate several policies on the same episodes and print a table", cmd_compare,
                         "print a JSON list of summaries, one per policy")
    p.add_argument("env_id")
    add_shared(p)


def add_frontier(sub: Subparsers) -> None:
    """The parser of ``harness-gym frontier``."""
    p = add_command(sub, "frontier", "quality against cost of the fixed (and given) controllers over cost weights",
                         cmd_frontier, "print the rows as a JSON list")
    p.add_argument("env_id")
    p.add_argument("--cost-weights", default="0,0.01,0.1", metavar="W,W,...",
                   help="comma-separated cost weights of the returns and iso-return lines")
    p.add_argument("--out", required=True, help="folder for frontier.png, frontier.json and frontier.md")
    add_shared(p)


def add_card(sub: Subparsers) -> None:
    """The parser of ``harness-gym card``."""
    p = add_command(sub, "card", "the benchmark card: random, the named harnesses, the best fixed strategy, the upper "
                                 "reference and a learned controller per env at the defaults (docs/benchmark_card.md)",
                         cmd_card, "print the card's data as JSON")
    p.add_argument("--env", dest="env_ids", action="append", default=[], metavar="ENV_ID",
                   help="measure (or with --check, check) this env (repeatable; default: every registered env)")
    p.add_argument("--episodes", type=positive_int, default=300, help="test episodes per controller")
    p.add_argument("--seed", type=int, default=0, help="seed of the episodes, the search and the bootstrap")
    p.add_argument("--learned-seeds", type=int, default=2, metavar="N",
                   help="training seeds of the learned controller, 0..N-1 (0: no learned row)")
    p.add_argument("--num-workers", type=int, default=1, metavar="N", help="processes of the script search")
    p.add_argument("--root", default=".", help="the checkout whose docs/benchmark_card.{json,md} and README.md "
                                               "are written or checked")
    p.add_argument("--no-readme", action="store_true", help="leave README.md alone")
    p.add_argument("--check", action="store_true",
                   help="play the stored card's references again with its settings and compare every number, "
                        "and compare the README's and the markdown's cards with its rendering (exit 1 on a "
                        "difference)")
    p.add_argument("--check-learned", action="store_true", help="with --check, also train the learned rows again")
    add_shared(p)


def add_search_script(sub: Subparsers) -> None:
    """The parser of ``harness-gym search-script``."""
    p = add_command(sub, "search-script", "the best open-loop script (the strongest fixed baseline) per cost weight: "
                                          "searched on train/val, judged on test", cmd_search_script,
                         "print the results as a JSON list")
    p.add_argument("env_id", nargs="+", help="one or more registered env ids")
    p.add_argument("--cost-weights", default=None, metavar="W,W,...",
                   help="comma-separated weights w of the return Q - w * cost (default: 0,0.001,0.01,0.1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search's and the test's episodes")
    p.add_argument("--rounds", default="16:48,48:12,128:4", metavar="N:K,...",
                   help="successive halving on train: per round, episodes per script and how many to keep per "
                        "cost weight")
    p.add_argument("--val-episodes", type=positive_int, default=300, help="val episodes per finalist")
    p.add_argument("--episodes", "--test-episodes", dest="test_episodes", type=positive_int, default=500,
                   help="test episodes of the winners and the named scripts, the episodes the result is judged on "
                        "(as --episodes of eval and compare)")
    p.add_argument("--num-workers", type=int, default=1, metavar="N", help="processes playing scripts at once")
    p.add_argument("--out", default="results/scripts", help="results folder, one JSON per env")
    add_shared(p)
