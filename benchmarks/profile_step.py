"""Where a step's time goes: a cProfile of the random masked policy per env, by category and by function.

    python benchmarks/profile_step.py HarnessCode-v1 [HarnessData-v1 ...] [--steps 1500] [--warm] [--top 10]

Per env, the policy of ``benchmarks/throughput.py`` (uniform over ``info["action_mask"]``, fresh episodes with
reset seeds 0, 1, 2, ...) runs ``--steps`` steps under :mod:`cProfile` (``gym.make`` is not profiled). With
``--warm`` an identical unprofiled run goes first, so the profile shows what is left when the in-memory
execution cache holds every job. Envs run one after another in this process, on an on-disk execution cache
of their own in a temporary folder (``HARNESS_GYM_CACHE_DIR``), empty at the start, so a cold profile is cold.

Categories, by the module path (and, for parsing, the name) of each function in the profile; the first rule
that matches wins:

=====================  ==========================================================================================
sandbox jobs / IPC     ``harness_gym/sandbox/`` (client, server, process; not ``cache.py``),
                       ``harness_gym/core/sandbox.py``, ``harness_gym/domains/*/sandbox_jobs.py``
execution cache        ``harness_gym/sandbox/cache.py``, ``harness_gym/core/lru.py``
parsing                ``harness_gym`` functions whose name contains ``parse``, ``harness_gym/core/intake.py``,
                       ``harness_gym/workers/prompting.py``, stdlib ``ast.py`` and ``tokenize.py``
BM25 / retrieval       ``harness_gym/core/retrieval.py``
SQL                    ``sqlite3``, ``sqlglot``, ``harness_gym/domains/dbbench/engines.py`` and ``statements.py``
feature encoding       ``harness_gym/core/state.py``
cost ledger            ``harness_gym/core/cost.py``, ``prices.py``, ``harness_gym/budget/rule.py``, ``fingerprint.py``,
                       ``__main__.py``
simulated worker       ``harness_gym/workers/``
gymnasium wrappers     ``gymnasium/``
env + domain code      the rest of ``harness_gym/`` (``env.py``, the domains' tools, checkers, graders, ...)
policy loop            this benchmark's own loop (``benchmarks/``)
=====================  ==========================================================================================

Functions outside these (the standard library, numpy, builtins, C calls) have no category of their own.

Two shares are printed per category:

- **self**: each categorised function's own time (tottime), plus the time of the uncategorised functions it
  calls, split over their callers by the caller-callee edges cProfile records (an uncategorised caller hands
  its share on to its own callers in proportion to their cumulative time). These shares add up to 100%: a
  socket ``recv`` waiting on the job server counts to *sandbox jobs / IPC*, a ``re`` match in a checker to
  *env + domain code*. Time no categorised function called stays *other Python*.
- **entry**: the cumulative time of the top-level entry points of the category (calls into the category from
  outside it), so it includes whatever the category calls in turn (the simulated worker's entry time holds
  the parsing it does, the env's holds nearly everything); these overlap and do not add up to 100%. The
  execution cache counts as part of the sandbox here (it wraps the sandbox's layers), and a category that is
  entered again from a category it called (env code called back by the worker) counts that time again, so an
  entry share can pass 100%.

Then the top ``--top`` functions by tottime, and at the end one table of the self shares of every env profiled.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import gymnasium as gym

import harness_gym

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import random_masked_steps  # noqa: E402

OTHER = "other Python"
CATEGORIES = ("sandbox jobs / IPC", "execution cache", "parsing", "BM25 / retrieval", "SQL", "feature encoding",
              "cost ledger", "simulated worker", "gymnasium wrappers", "env + domain code", "policy loop", OTHER)

# (path fragment, category), first match wins; paths are matched with "/" separators
_PATH_RULES: tuple[tuple[str, str], ...] = (
    ("harness_gym/sandbox/cache.py", "execution cache"),
    ("harness_gym/core/lru.py", "execution cache"),
    ("harness_gym/sandbox/", "sandbox jobs / IPC"),
    ("harness_gym/core/sandbox.py", "sandbox jobs / IPC"),
    ("/sandbox_jobs.py", "sandbox jobs / IPC"),
    ("harness_gym/core/intake.py", "parsing"),
    ("harness_gym/workers/prompting.py", "parsing"),
    ("harness_gym/core/retrieval.py", "BM25 / retrieval"),
    ("/sqlite3/", "SQL"),
    ("/sqlglot/", "SQL"),
    ("harness_gym/domains/dbbench/engines.py", "SQL"),
    ("harness_gym/domains/dbbench/statements.py", "SQL"),
    ("harness_gym/core/state.py", "feature encoding"),
    ("harness_gym/core/cost.py", "cost ledger"),
    ("harness_gym/core/prices.py", "cost ledger"),
    ("harness_gym/budget/rule.py", "cost ledger"),
    ("harness_gym/budget/fingerprint.py", "cost ledger"),
    ("harness_gym/budget/__main__.py", "cost ledger"),
    ("harness_gym/workers/", "simulated worker"),
    ("/gymnasium/", "gymnasium wrappers"),
    ("harness_gym/", "env + domain code"),
    ("benchmarks/", "policy loop"),
)
_STDLIB_PARSERS = ("ast.py", "tokenize.py")
# the execution cache sits between the layers of the sandbox (domain job -> cache -> client -> cache -> server):
# for the entry rule the two are one, or each layer would count the jobs again
_ENTRY_GROUP = {"execution cache": "sandbox jobs / IPC"}

Func = tuple[str, int, str]


def category(func: Func) -> str | None:
    """The category of a profiled function ``(filename, line, name)``; ``None`` for one outside them all."""
    filename, _, name = func
    path = filename.replace("\\", "/")
    in_package = "harness_gym/" in path
    if in_package and "parse" in name and "sandbox" not in path:
        return "parsing"
    if "/python3" in path and "site-packages" not in path and path.rsplit("/", 1)[-1] in _STDLIB_PARSERS:
        return "parsing"
    for fragment, cat in _PATH_RULES:
        if fragment in path:
            return cat
    return None


def category_shares(stats: pstats.Stats) -> tuple[dict[str, float], dict[str, float], float]:
    """Seconds per category by the *self* and the *entry* rule of the module docstring, and the total.

    :param stats: a profile's statistics
    :returns: ``(self_seconds, entry_seconds, total_seconds)``
    """
    table: dict[Func, Any] = stats.stats  # type: ignore[attr-defined]
    own = {f: category(f) for f in table}
    handed_on: dict[Func, dict[str, float]] = {}

    def caller_split(func: Func, visiting: frozenset[Func]) -> dict[str, float]:
        """Fractions of an uncategorised function's time owed to each category, via its callers' cumulative time."""
        if func in handed_on:
            return handed_on[func]
        callers = table[func][4]
        weights = {g: edge[3] for g, edge in callers.items() if g in table and g not in visiting}
        total = sum(weights.values())
        split: dict[str, float] = defaultdict(float)
        if total <= 0:
            split[OTHER] = 1.0
        else:
            for g, w in weights.items():
                for cat, frac in _owner(g, visiting | {func}).items():
                    split[cat] += frac * w / total
        # memoised even when a cycle was cut short: a small error in recursive code, not an unbounded walk
        handed_on[func] = dict(split)
        return split

    def _owner(func: Func, visiting: frozenset[Func]) -> dict[str, float]:
        cat = own[func]
        return {cat: 1.0} if cat is not None else caller_split(func, visiting)

    self_s: dict[str, float] = defaultdict(float)
    entry_s: dict[str, float] = defaultdict(float)
    total_s = 0.0
    for func, (_, _, tottime, _, callers) in table.items():
        total_s += tottime
        cat = own[func]
        if cat is not None:
            self_s[cat] += tottime
            # an uncategorised caller (a stdlib wrapper, a lock) belongs to whoever called it
            group = _ENTRY_GROUP.get(cat, cat)
            for g, edge in callers.items():
                if g in table:
                    inside = sum(frac for c, frac in _owner(g, frozenset({func})).items()
                                 if _ENTRY_GROUP.get(c, c) == group)
                    entry_s[group] += edge[3] * (1.0 - inside)
            continue
        edges = {g: edge[2] for g, edge in callers.items() if g in table}
        if not edges:
            self_s[OTHER] += tottime
            continue
        for g, tt in edges.items():
            for c, frac in _owner(g, frozenset({func})).items():
                self_s[c] += tt * frac
        # time not explained by any recorded edge (rounding, recursion) stays with "other Python"
        self_s[OTHER] += max(tottime - sum(edges.values()), 0.0)
    return dict(self_s), dict(entry_s), total_s


def profile_env(env_id: str, steps: int, warm: bool) -> tuple[pstats.Stats, dict[str, Any]]:
    """Profile ``steps`` random masked steps on ``env_id`` (after an identical unprofiled run when ``warm``)."""
    env = gym.make(env_id)
    if warm:
        random_masked_steps(env, steps)
    profiler = cProfile.Profile()
    profiler.enable()
    run = random_masked_steps(env, steps)
    profiler.disable()
    env.close()
    return pstats.Stats(profiler), run


def _short(func: Func) -> str:
    filename, line, name = func
    path = filename.replace("\\", "/")
    for anchor in ("harness_gym/", "gymnasium/", "site-packages/", "benchmarks/"):
        if anchor in path:
            path = anchor + path.split(anchor, 1)[1]
            break
    else:
        path = path.rsplit("/", 1)[-1]
    return f"{path}:{line}({name})" if line else name


def summary_table(rows: dict[str, tuple[float, dict[str, float], float]]) -> str:
    """One markdown row per env: us/step under the profiler and the self share of each category.

    :param rows: env id -> (us per step, self seconds per category, total seconds)
    """
    used = [c for c in CATEGORIES if any(r[1].get(c, 0.0) > 0 for r in rows.values())]
    lines = ["| env | us/step | " + " | ".join(used) + " |", "|---|" + "---:|" * (len(used) + 1)]
    for env_id, (us_per_step, self_s, total) in rows.items():
        shares = " | ".join(f"{100 * self_s.get(c, 0.0) / total:.0f}%" for c in used)
        lines.append(f"| {env_id} | {us_per_step:,.0f} | {shares} |")
    return "\n".join(lines)


def report(env_id: str, stats: pstats.Stats, run: dict[str, Any], steps: int, top: int) -> str:
    """The category table and the top functions by tottime of one env's profile, as markdown."""
    self_s, entry_s, total = category_shares(stats)
    lines = [f"### {env_id}: {steps} steps, {run['episodes']} episodes, {steps / run['seconds']:,.0f} steps/s "
             f"under the profiler, {1e6 * run['seconds'] / steps:,.0f} us/step; {run['exec_cached_steps']} steps "
             f"served from the execution cache", "",
             "| category | self share | self us/step | entry share |", "|---|---:|---:|---:|"]
    for cat in CATEGORIES:
        if self_s.get(cat, 0.0) <= 0 and entry_s.get(cat, 0.0) <= 0:
            continue
        entry = "(in sandbox)" if cat in _ENTRY_GROUP else f"{100 * entry_s.get(cat, 0.0) / total:.1f}%"
        lines.append(f"| {cat} | {100 * self_s.get(cat, 0.0) / total:.1f}% | "
                     f"{1e6 * self_s.get(cat, 0.0) / steps:,.1f} | {entry} |")
    table: dict[Func, Any] = stats.stats  # type: ignore[attr-defined]
    lines += ["", f"top {top} by tottime:", "", "| function | category | calls | tottime s | share |",
              "|---|---|---:|---:|---:|"]
    for func, (_, ncalls, tottime, _, _) in sorted(table.items(), key=lambda kv: -kv[1][2])[:top]:
        cat = category(func) or "(caller's)"
        lines.append(f"| `{_short(func)}` | {cat} | {ncalls:,} | {tottime:.3f} | {100 * tottime / total:.1f}% |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("envs", nargs="+", metavar="ENV", help="env ids to profile")
    ap.add_argument("--steps", type=int, default=1500, help="profiled steps per env (default 1500)")
    ap.add_argument("--warm", action="store_true", help="profile a second identical run (warm execution cache)")
    ap.add_argument("--top", type=int, default=10, help="functions listed by tottime (default 10)")
    args = ap.parse_args(argv)
    unknown = [e for e in args.envs if e not in gym.registry]
    if unknown:
        ap.error(f"unknown env id(s) {unknown}; registered harness envs: {list(harness_gym.ENV_IDS)}")
    if args.steps < 1 or args.top < 0:
        ap.error(f"--steps must be >= 1 and --top >= 0, got {args.steps} and {args.top}")
    rows = {}
    with tempfile.TemporaryDirectory(prefix="hg-profile-cache-") as cache_dir:
        os.environ["HARNESS_GYM_CACHE_DIR"] = cache_dir  # cold means cold: not the user's on-disk cache
        for env_id in args.envs:
            rows[env_id] = _profile_one(env_id, args)
    print(f"### Self share of each category ({'warm' if args.warm else 'cold'}, {args.steps} steps per env)")
    print()
    print(summary_table(rows))


def _profile_one(env_id: str, args: argparse.Namespace) -> tuple[float, dict, float]:
    stats, run = profile_env(env_id, args.steps, args.warm)
    print(report(env_id, stats, run, args.steps, args.top), flush=True)
    print()
    self_s, _, total = category_shares(stats)
    return 1e6 * run["seconds"] / args.steps, self_s, total


if __name__ == "__main__":
    main()
