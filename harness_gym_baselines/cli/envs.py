"""``harness-gym list``, ``doctor`` and ``play``: the envs, the sandbox isolation in force, one episode step by step."""

from __future__ import annotations

import argparse
import difflib
import json
import math
import warnings
from typing import Any

import gymnasium as gym
from rich.console import Console

import harness_gym
from harness_gym_baselines.cli.env_options import (
    env_kwargs,
)
from harness_gym_baselines.cli.options import (
    Subparsers,
    add_command,
    add_shared,
    load_policy_arg,
)
from harness_gym_baselines.cli.output import print_table
from harness_gym_baselines.common.options import (
    check_task_id,
    make_env,
)
from harness_gym_baselines.evaluate import (
    llm_faults_text,
)
from harness_gym_baselines.policies.registry import policy_help


def cmd_list(args: argparse.Namespace) -> int:
    rows, cells = [], []
    for env_id in harness_gym.ENV_IDS:
        try:
            env = gym.make(env_id)
        except Exception as exc:  # an adapter may need data the user has not given
            rows.append({"env_id": env_id, "error": f"{type(exc).__name__}: {exc}"})
            cells.append((env_id, f"{type(exc).__name__}: {exc}", "", "", "", "", ""))
            continue
        domain = env.unwrapped.domain
        counts = domain.counts()
        env.close()
        left_out = [str(record) for record in getattr(domain, "load_report", ())]
        rows.append({"env_id": env_id, "domain": domain.name, **counts, "total": sum(counts.values()),
                     "left_out": left_out})
        cells.append((env_id, domain.name, *(str(counts[s]) for s in ("train", "val", "test", "ood")),
                      str(sum(counts.values()))))
    if args.json:
        print(json.dumps(rows))
    else:
        print_table("harness_gym environments", ("env id", "domain", "train", "val", "test", "ood", "total"), cells,
                    right=(2, 3, 4, 5, 6))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Print the isolation in force for each sandbox backend; 1 when it is weaker than required."""
    from harness_gym.sandbox import DockerUnavailableError, IsolationError, make_sandbox

    reports, status = [], 0
    for backend in ("process", "docker") if args.docker else ("process",):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", RuntimeWarning)
                box = make_sandbox(backend, require_isolation=args.require or None)
                report = box.isolation_report()
                box.close()
            report["warnings"] = [str(w.message) for w in caught]
        except (IsolationError, DockerUnavailableError, RuntimeError) as exc:
            report = {"backend": backend, "error": f"{type(exc).__name__}: {exc}"}
            status = 1
        reports.append(report)
    if args.json:
        print(json.dumps(reports))
        return status
    for report in reports:
        if "error" in report:
            print(f"{report['backend']}: ERROR {report['error']}")
            continue
        print(f"{report['backend']}: isolation in force: {report['in_force']}"
              + (f" (DEGRADED: {report['reason']})" if report["degraded"] else "")
              + f"; user namespaces refused: {report['userns_blocked']}; required: {report['require_isolation']}")
        for text in report["warnings"]:
            print(f"  warning: {text}")
    return status


def _draft_text(previous: str | None, content: str, *, version: int, mode: str) -> str:
    """What ``play`` prints after a DRAFT or REVISE: the whole draft, or a unified diff against the previous
    one (the first draft is always shown whole)."""
    if mode == "full" or previous is None:
        return f"draft v{version}:\n{content}"
    diff = list(difflib.unified_diff(previous.splitlines(), content.splitlines(), f"v{version - 1}", f"v{version}",
                                     lineterm="", n=1))
    return "\n".join(diff) if diff else f"draft v{version}: unchanged"


FALLBACKS: dict[str, str] = {"draft": "an empty draft", "revise": "an empty draft",
                             "tool": "a malformed tool call", "self_check": "a failed self-check",
                             "confidence": "the neutral confidence 0.5"}
"""what the LLM worker puts in place of a call that got no usable reply (docs/llm_worker.md)"""


def _fallback_note(faults: dict[str, int]) -> str:
    """`` -> fallback: ...`` naming what replaced each call of the step that got no usable reply, else ``""``."""
    used = [f"{FALLBACKS[call]} ({call})" for call in FALLBACKS if faults.get(f"{call}.fallback")]
    return f" -> fallback: {', '.join(used)}" if used else ""


def cmd_play(args: argparse.Namespace) -> int:
    console = Console(width=args.width)
    env = make_env(args.env_id, env_kwargs(args), render_mode="ansi")
    policy = load_policy_arg(args.policy)
    options: dict[str, Any] = {"split": args.split}
    if args.task_id:
        options["task_id"] = check_task_id(env, args.task_id)
    obs, info = env.reset(seed=args.seed, options=options)
    policy.reset(env, seed=args.seed)
    henv = env.unwrapped
    console.print(f"[bold]{args.env_id}[/bold] task [cyan]{info['task_id']}[/cyan] ({info['split']}), "
                  f"policy [green]{policy.name}[/green], seed {args.seed}")
    console.print(henv.task.prompt, markup=False, highlight=False)
    step, previous = 0, None
    while True:
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, env))
        step += 1
        ev = info["evidence"]
        name = info["action_name"] + (" (no-op)" if info["invalid_action"] else "")
        console.print(f"[bold]{step:>3}[/bold] {name:<16} budget {info['budget_left']:>3}  evidence env "
                      f"{ev['env']:+.2f} cons {ev['consistency']:.2f} know {ev['knowledge']:+.0f} self "
                      f"{ev['self']:+.2f}", highlight=False)
        console.print(f"     {env.render() or ''}", markup=False, highlight=False)
        if info["cost"]["llm_errors"] or any(info["llm_faults"].values()):
            console.print(f"     LLM FAILURE: {info['cost']['llm_errors']} of {info['cost']['llm_calls']} requests "
                          f"failed{llm_faults_text(info['llm_faults'])}" + _fallback_note(info["llm_faults"]),
                          markup=False, highlight=False)
        draft = henv.context.draft
        if (info["action_name"] in ("DRAFT", "REVISE") and not info["invalid_action"] and draft is not None
                and args.drafts != "none"):
            console.print(_draft_text(previous, draft.content, version=draft.version, mode=args.drafts),
                          markup=False, highlight=False)
            previous = draft.content
        if terminated or truncated:
            break
    pats = ", ".join(f"{k}={'n/a' if math.isnan(v) else int(v)}" for k, v in info["patterns"].items())
    console.print(f"quality [bold]{info['quality']:.3f}[/bold]  success {info['success']}  "
                  f"HMS {info['hms']:.3f}  forced_submit {info['forced_submit']}\npatterns: {pats}")
    env.close()
    return 0


def add_list(sub: Subparsers) -> None:
    """The parser of ``harness-gym list``."""
    p = add_command(sub, "list", "every env id with its domain and task counts per split", cmd_list,
                         "print a JSON list, one object per env id")
    add_shared(p)


def add_doctor(sub: Subparsers) -> None:
    """The parser of ``harness-gym doctor``."""
    p = add_command(sub, "doctor", "the sandbox isolation in force (bubblewrap, unshare, none; docker)", cmd_doctor,
                         "print a JSON list, one report per backend")
    p.add_argument("--docker", action="store_true", help="also start the docker backend")
    p.add_argument("--require", action="store_true",
                   help="fail unless full isolation starts (as HG_REQUIRE_ISOLATION=1 does)")
    add_shared(p)


def add_play(sub: Subparsers) -> None:
    """The parser of ``harness-gym play``."""
    p = add_command(sub, "play", "print a step-by-step trace of one episode", cmd_play,
                         policy={"default": "forced-check", "help": policy_help()})
    p.add_argument("env_id")
    p.add_argument("--seed", type=int, default=0, help="reset seed (and the task drawn, unless --task-id)")
    p.add_argument("--split", default="test", choices=("train", "val", "test", "ood"), help="task split")
    p.add_argument("--task-id", default=None, help="play this task (default: one drawn from --split by --seed)")
    p.add_argument("--drafts", default="diff", choices=("diff", "full", "none"),
                   help="after each DRAFT / REVISE show the draft: the first in full, later ones as a diff "
                        "against the previous draft (diff), each in full, or not at all")
    add_shared(p)
