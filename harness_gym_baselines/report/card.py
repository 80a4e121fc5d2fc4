"""``harness-gym card``: the benchmark card, what a researcher asks first of each env at its default settings.

    harness-gym card [--env ID ...] [--episodes 300] [--seed 0] [--learned-seeds 2] [--no-learned]
        [--out docs/benchmark_card.md] [--readme README.md]
    harness-gym card --check [--env ID ...]

Per env, on the same seeded episodes of the test split (``harness_gym.running.rollout.episode_seed``), at the env's
default settings (prices ``cheap-hosted``, ``budget_units="auto"``: docs/cost.md) and the card's cost weight
:data:`CARD_COST_WEIGHT`:

- **random** (uniform over the applicable actions) and the **upper reference** (the oracle, which reads the
  hidden task and is never budget-cut): 0 and 100 of the normalised score
  (:func:`harness_gym.budget.references.normalized_score`, on Q);
- the named harnesses **static**, **forced-check** and **thorough** (:mod:`harness_gym.budget.references`);
- the **best fixed** strategy: the best of the named harnesses and the searched open-loop scripts, chosen on
  train and val at the card's cost weight (:func:`harness_gym_baselines.experiments.script_search.choose_winners`,
  the one definition every table uses);
- the **best learned** controller: PPO (``harness-gym train ppo-sparse``, :mod:`harness_gym_baselines.algos.ppo`) trained at the card's cost
  weight, one model per seed, the seeds pooled; with the paired difference of its return to the best fixed
  strategy's on the same episodes (95% bootstrap CI).

Every row has mean Q with its CI, mean cost (units of US$0.0001), the return ``Q - w * cost`` with its CI, the
normalised score and the forced-submit rate. One sentence per env, computed from those numbers, says where the
headroom is. The numbers go to ``docs/benchmark_card.json`` (with the settings that produced them), the
rendered card to ``docs/benchmark_card.md`` and between the card markers of the README.

``--check`` plays the references again with the settings stored in the JSON and compares every number
(the learned rows too with ``--check-learned``, which trains again), and checks that the README's and the
markdown's cards are the rendering of the JSON; it prints each difference and exits 1 when there is one.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from harness_gym.budget.references import NAMED_SCRIPTS, normalized_score
from harness_gym.running.rollout import episode_seed
from harness_gym_baselines.evaluate import bootstrap_ci
from harness_gym_baselines.experiments.script_search import SearchConfig, choose_winners, fixed_policy, play_outcomes
from harness_gym_baselines.policies.registry import make_policy

CARD_COST_WEIGHT = 0.01
"""The cost weight of the card's returns, the best fixed strategy's choice and the learned controller's training
(the weight ``harness-gym reproduce`` trains its controllers at)."""
FORMAT = 1
"""The layout of ``benchmark_card.json``."""
BEGIN, END = "<!-- benchmark card: begin (harness-gym card) -->", "<!-- benchmark card: end -->"
"""The markers of the generated card in the README and the markdown file."""
ROWS: tuple[str, ...] = ("random", *NAMED_SCRIPTS, "best fixed", "upper reference", "best learned")
"""The card's rows, in order."""


@dataclass(frozen=True)
class CardConfig:
    """What the card is measured with; every field is stored in the JSON and reused by ``--check``."""

    episodes: int = 300
    """test episodes per controller (the same seeded episodes for all)"""
    seed: int = 0
    """seed of the test episodes, the search and the bootstrap"""
    cost_weight: float = CARD_COST_WEIGHT
    """the weight of the returns, of the best fixed strategy's choice and of the learned controller's training"""
    search_rounds: tuple[tuple[int, int], ...] = ((16, 48), (48, 12), (128, 4))
    """successive halving of the script search on train (episodes, kept)"""
    search_val_episodes: int = 300
    """val episodes that pick the best fixed strategy among the finalists and the named harnesses"""
    learned_seeds: tuple[int, ...] = (0, 1)
    """training seeds of the learned controller (empty: no learned row)"""
    learned_steps: int = 40_000
    """environment steps of each learned controller's training (the trainer's documented default)"""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """constructor keywords beyond the defaults (none for the card of the README)"""


# ----- measuring --------------------------------------------------------------------------------------------
def _row(name: str, policy_name: str, outcomes: np.ndarray, cfg: CardConfig) -> dict[str, Any]:
    q, cost, forced = outcomes[:, 0], outcomes[:, 1], outcomes[:, 2]
    ret = q - cfg.cost_weight * cost
    return {"row": name, "controller": policy_name, "episodes": int(len(q)),
            "quality": float(q.mean()), "quality_ci95": list(bootstrap_ci(q, seed=cfg.seed)),
            "cost": float(cost.mean()), "return": float(ret.mean()), "return_ci95": list(bootstrap_ci(ret, seed=cfg.seed)),
            "forced_submit_rate": float(forced.mean())}


def best_fixed(env_id: str, cfg: CardConfig, *, num_workers: int = 1, progress: bool = False) -> dict[str, Any]:
    """The best fixed strategy at the card's weight (train and val only) and how it was chosen."""
    search = SearchConfig(env_id, cost_weights=(cfg.cost_weight,), env_kwargs=dict(cfg.env_kwargs), seed=cfg.seed,
                          rounds=cfg.search_rounds, val_episodes=cfg.search_val_episodes)
    chosen = choose_winners(search, num_workers=num_workers, progress=progress)
    won = chosen["winners"][f"{cfg.cost_weight:g}"]
    return {"name": won["script"], "val_return": won["val_return"], "candidates": chosen["candidates"]}


def train_learned(env_id: str, cfg: CardConfig, seed: int, out_dir: Path) -> Any:
    """One learned controller: ppo-sparse at the card's weight, trained on the train split with ``seed``."""
    from harness_gym_baselines.algos.ppo import PPOSparseConfig, train

    if cfg.env_kwargs:
        raise ValueError("the card's learned row trains at the default settings only (env_kwargs must be empty)")
    train_cfg = PPOSparseConfig(env_id=env_id, steps=cfg.learned_steps, seed=seed, cost_weight=cfg.cost_weight,
                                out=str(out_dir / f"{env_id}-ppo-sparse-seed{seed}.zip"), progress=False,
                                final_eval_episodes=0, eval_every=0, log_dir=str(out_dir / "runs"))
    return train(train_cfg)


def measure_env(env_id: str, cfg: CardConfig, *, learned: bool = True, num_workers: int = 1,
                progress: bool = False) -> dict[str, Any]:
    """Every row of one env's card (module docstring) and its headroom sentence."""
    seeds = [episode_seed(cfg.seed, i) for i in range(cfg.episodes)]
    env = gym.make(env_id, **{**cfg.env_kwargs, "cost_weight": cfg.cost_weight})
    try:
        settings = env.unwrapped.settings
        fixed = best_fixed(env_id, cfg, num_workers=num_workers, progress=progress)
        outcomes: dict[str, tuple[str, np.ndarray]] = {}
        for row, name in (("random", "random"), *((n, n) for n in NAMED_SCRIPTS), ("best fixed", fixed["name"]),
                          ("upper reference", "oracle")):
            policy = fixed_policy(name) if row == "best fixed" else make_policy(name)
            outcomes[row] = (name, play_outcomes(env, policy, seeds, "test"))
        if learned and cfg.learned_seeds:
            with tempfile.TemporaryDirectory(prefix="hg-card-") as tmp:
                per_seed = [play_outcomes(env, train_learned(env_id, cfg, s, Path(tmp)), seeds, "test")
                            for s in cfg.learned_seeds]
            outcomes["best learned"] = ("ppo-sparse", np.concatenate(per_seed))
    finally:
        env.close()
    rows = [_row(row, name, out, cfg) for row, (name, out) in outcomes.items()]
    lower = next(r for r in rows if r["row"] == "random")["quality"]
    upper = next(r for r in rows if r["row"] == "upper reference")["quality"]
    for r in rows:
        r["normalized"] = normalized_score(r["quality"], lower, upper)
    if "best learned" in outcomes:
        fixed_out = outcomes["best fixed"][1]
        learned_out = outcomes["best learned"][1]
        tiled = np.concatenate([fixed_out] * len(cfg.learned_seeds))
        diff = (learned_out[:, 0] - cfg.cost_weight * learned_out[:, 1]) - (tiled[:, 0] - cfg.cost_weight * tiled[:, 1])
        learned_row = next(r for r in rows if r["row"] == "best learned")
        learned_row["minus_best_fixed"] = {"mean": float(diff.mean()), "ci95": list(bootstrap_ci(diff, seed=cfg.seed))}
        learned_row["seeds"] = list(cfg.learned_seeds)
    entry = {"env_id": env_id, "settings": settings, "best_fixed": fixed, "rows": rows}
    entry["headroom"] = headroom_sentence(entry)
    return entry


def headroom_sentence(entry: dict[str, Any]) -> str:
    """Where the headroom of one env is, in one sentence computed from its rows."""
    rows = {r["row"]: r for r in entry["rows"]}
    fixed, upper, rand = rows["best fixed"], rows["upper reference"], rows["random"]
    gap = upper["quality"] - fixed["quality"]
    span = upper["quality"] - rand["quality"]
    name = entry["best_fixed"]["name"]
    parts = []
    if not math.isfinite(fixed["normalized"]) or span <= 0.02:
        parts.append(f"random already scores within {span:.3f} of the upper reference: the env leaves little to decide")
    else:
        parts.append(f"the best fixed strategy ({name}) covers {fixed['normalized']:.0f}% of the range from random to "
                     f"the upper reference, {gap:.3f} Q below it")
        if gap <= 0.05:
            parts.append("the upper reference leaves under 0.05 Q above it")
    learned = rows.get("best learned")
    if learned is not None and "minus_best_fixed" in learned:
        d = learned["minus_best_fixed"]
        lo, hi = d["ci95"]
        verdict = ("beats it" if lo > 0 else "loses to it" if hi < 0 else "ties it")
        parts.append(f"the learned controller {verdict} (return {d['mean']:+.3f}, 95% CI [{lo:+.3f}, {hi:+.3f}])")
    else:
        parts.append("no learned controller was run for this card")
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def measure(env_ids: Sequence[str], cfg: CardConfig, *, learned: bool = True, num_workers: int = 1,
            progress: bool = False, on_env: Any = None) -> dict[str, Any]:
    """The card's data (``benchmark_card.json``) for ``env_ids``."""
    envs = {}
    for env_id in env_ids:
        envs[env_id] = measure_env(env_id, cfg, learned=learned, num_workers=num_workers, progress=progress)
        if on_env is not None:
            on_env(env_id, envs[env_id])
    return {"format": FORMAT, "config": json.loads(json.dumps(asdict(cfg))), "learned": learned, "envs": envs}


# ----- rendering --------------------------------------------------------------------------------------------
def _ci(ci: Sequence[float]) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def render_readme_card(card: dict[str, Any]) -> str:
    """The short card of the README: one line per env."""
    cfg = card["config"]
    w = cfg["cost_weight"]
    lines = [BEGIN, "",
             f"Test split, {cfg['episodes']} episodes per controller (seed {cfg['seed']}), default prices and budget; "
             f"Q is the task score in [0, 1]; *norm.* puts Q on 0 = random, 100 = upper reference (the oracle, "
             f"never budget-cut); *best fixed* is the best of the named harnesses and the searched scripts, chosen on "
             f"train and val at w = {w:g}; the learned controller is PPO at w = {w:g}, "
             f"{len(cfg['learned_seeds'])} seeds pooled. Full card: [docs/benchmark_card.md](docs/benchmark_card.md).",
             "",
             "| env | random Q | forced-check Q | best fixed Q (norm.) | upper ref. Q | learned Q (norm.) | "
             f"learned - best fixed, return at w={w:g} |",
             "|---|---|---|---|---|---|---|"]
    for env_id, entry in card["envs"].items():
        rows = {r["row"]: r for r in entry["rows"]}
        fixed, learned = rows["best fixed"], rows.get("best learned")
        if learned is not None and "minus_best_fixed" in learned:
            d = learned["minus_best_fixed"]
            lq = f"{learned['quality']:.3f} ({learned['normalized']:.0f})"
            ld = f"{d['mean']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]"
        else:
            lq = ld = "not run"
        lines.append(f"| {env_id} | {rows['random']['quality']:.3f} | {rows['forced-check']['quality']:.3f} | "
                     f"{fixed['quality']:.3f} ({fixed['normalized']:.0f}) `{entry['best_fixed']['name']}` | "
                     f"{rows['upper reference']['quality']:.3f} | {lq} | {ld} |")
    lines += ["", END]
    return "\n".join(lines)


def render_full_card(card: dict[str, Any]) -> str:
    """``docs/benchmark_card.md``: every row of every env with CIs, cost, return and the headroom sentence."""
    cfg = card["config"]
    w = cfg["cost_weight"]
    out = ["# Benchmark card", "",
           "What each env scores at its default settings: the lower and upper references, the named harnesses, the "
           "best fixed strategy and the learned controller, on the same test episodes. Generated by "
           "`harness-gym card` (never by hand; `harness-gym card --check` tells whether it matches a run). "
           "Definitions: docs/harness_mdp.md (\"References\"), the budget rule: docs/cost.md (\"Budget\").", "",
           f"Settings: test split, {cfg['episodes']} episodes per controller, seed {cfg['seed']}; cost weight "
           f"w = {w:g} for the returns, the best fixed strategy's choice (search rounds "
           f"{', '.join(f'{n}:{k}' for n, k in cfg['search_rounds'])} on train, {cfg['search_val_episodes']} val "
           f"episodes) and the learned controller (ppo-sparse, {cfg['learned_steps']} steps, seeds "
           f"{', '.join(map(str, cfg['learned_seeds'])) or 'none'}). CIs are 95% bootstrap intervals over episodes "
           "(over episodes of all seeds for the learned row). *norm.*: 0 = random, 100 = upper reference, on Q. "
           "*forced*: the share of episodes a budget ended before the controller's SUBMIT.", "",
           render_readme_card(card).replace("(docs/benchmark_card.md)", "(#per-env-detail)"), "",
           "## Per-env detail", ""]
    for env_id, entry in card["envs"].items():
        s = entry["settings"]
        out += [f"### {env_id}", "",
                f"Prices `{s['prices']}`, cost budget {s['budget']}, cost weight {w:g}. {entry['headroom']}", "",
                f"| row | controller | Q [95% CI] | cost | return at w={w:g} [95% CI] | norm. | forced |",
                "|---|---|---|---|---|---|---|"]
        for r in entry["rows"]:
            out.append(f"| {r['row']} | `{r['controller']}` | {r['quality']:.3f} {_ci(r['quality_ci95'])} | "
                       f"{r['cost']:.2f} | {r['return']:.3f} {_ci(r['return_ci95'])} | {r['normalized']:.0f} | "
                       f"{100 * r['forced_submit_rate']:.0f}% |")
        out.append("")
    return "\n".join(out)


def replace_block(text: str, block: str, where: str) -> str:
    """``text`` with the part between the card markers replaced by ``block`` (which has the markers)."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"{where}: no card markers ({BEGIN!r} ... {END!r}); put them where the card goes")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + block + tail


FIGURE_ROWS: tuple[str, ...] = ("forced-check", "best fixed", "best learned")
"""The rows the card's figure draws (the references are its axis: 0 = random, 100 = upper reference)."""


def plot(card: dict[str, Any], path: Path) -> Path:
    """The card's figure: per env, the normalised score of forced-check, the best fixed strategy and the learned
    controller (0 = random, 100 = the upper reference), the legend outside the bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(card["envs"])
    fig, ax = plt.subplots(figsize=(8.0, 0.55 * len(envs) + 1.4), dpi=110)
    height = 0.8 / len(FIGURE_ROWS)
    for k, row in enumerate(FIGURE_ROWS):
        values = []
        for env_id in envs:
            found = [r for r in card["envs"][env_id]["rows"] if r["row"] == row]
            values.append(found[0]["normalized"] if found else float("nan"))
        ax.barh([i + (k - 1) * height for i in range(len(envs))], values, height=height, label=row)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.axvline(100, color="black", linewidth=0.8, linestyle="--")
    ax.set_yticks(range(len(envs)), [e.replace("Harness", "") for e in envs])
    ax.invert_yaxis()
    ax.set_xlabel("normalised score (0 = random, 100 = upper reference)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def write(card: dict[str, Any], *, data: Path, markdown: Path, readme: Path | None,
          figure: Path | None = None) -> list[Path]:
    """Write the JSON, the markdown card, its figure (when given) and the README's card; returns the paths."""
    data.write_text(json.dumps(card, indent=1) + "\n")
    markdown.write_text(render_full_card(card) + "\n")
    written = [data, markdown]
    if figure is not None:
        written.append(plot(card, figure))
    if readme is not None:
        readme.write_text(replace_block(readme.read_text(), render_readme_card(card), str(readme)))
        written.append(readme)
    return written


# ----- checking ---------------------------------------------------------------------------------------------
def differences(stored: Any, fresh: Any, where: str = "", *, rel: float = 1e-9) -> list[str]:
    """Every place two cards' data differ (numbers within ``rel``), as ``path: stored -> fresh``."""
    if isinstance(stored, dict) and isinstance(fresh, dict):
        out = []
        for key in sorted(set(stored) | set(fresh)):
            if key not in fresh or key not in stored:
                out.append(f"{where}/{key}: {'missing in the run' if key not in fresh else 'not in the card'}")
            else:
                out += differences(stored[key], fresh[key], f"{where}/{key}", rel=rel)
        return out
    if isinstance(stored, list) and isinstance(fresh, list) and len(stored) == len(fresh):
        return [d for i, (a, b) in enumerate(zip(stored, fresh)) for d in differences(a, b, f"{where}[{i}]", rel=rel)]
    if isinstance(stored, (int, float)) and isinstance(fresh, (int, float)) and not isinstance(stored, bool):
        if (math.isnan(stored) and math.isnan(fresh)) or math.isclose(stored, fresh, rel_tol=rel, abs_tol=1e-12):
            return []
    elif stored == fresh:
        return []
    return [f"{where}: {stored!r} -> {fresh!r}"]


def check(card: dict[str, Any], env_ids: Iterable[str], *, markdown: Path, readme: Path | None,
          learned: bool = False, num_workers: int = 1, progress: bool = False) -> list[str]:
    """Every difference between the stored card and a run of ``env_ids`` with its stored settings, and between its
    renderings and the markdown and README files."""
    problems = []
    if markdown.is_file() and markdown.read_text() != render_full_card(card) + "\n":
        problems.append(f"{markdown}: not the rendering of the card's data; rerun harness-gym card")
    if readme is not None:
        text = readme.read_text()
        if BEGIN not in text or render_readme_card(card) not in text:
            problems.append(f"{readme}: its card is not the rendering of the card's data; rerun harness-gym card")
    config = dict(card["config"])
    config["search_rounds"] = tuple(tuple(r) for r in config["search_rounds"])
    config["learned_seeds"] = tuple(config["learned_seeds"])
    cfg = CardConfig(**config)
    for env_id in env_ids:
        if env_id not in card["envs"]:
            problems.append(f"{env_id}: not on the card")
            continue
        stored = card["envs"][env_id]
        fresh = measure_env(env_id, cfg, learned=learned and card["learned"], num_workers=num_workers,
                            progress=progress)
        if not learned:  # the learned rows are not retrained: compare the references only
            stored = {**stored, "rows": [r for r in stored["rows"] if r["row"] != "best learned"]}
            stored.pop("headroom", None)
            fresh.pop("headroom", None)
        problems += differences(stored, fresh, env_id)
    return problems


def default_paths(root: Path | None = None) -> tuple[Path, Path, Path, Path]:
    """(the card's JSON, its markdown, the README, the card's figure) of a checkout."""
    root = root or Path(os.getcwd())
    docs = root / "docs"
    return docs / "benchmark_card.json", docs / "benchmark_card.md", root / "README.md", docs / "figures" / "benchmark_card.png"


__all__ = ["BEGIN", "CARD_COST_WEIGHT", "CardConfig", "END", "ROWS", "check", "differences", "headroom_sentence",
           "measure", "measure_env", "render_full_card", "render_readme_card", "replace_block", "write"]
