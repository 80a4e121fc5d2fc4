"""The fidelity table: per domain, every row of its card (``envs_data/fidelity/<domain>.json``) and of its frontier
tier's card (``envs_data/fidelity/frontier/<domain>.json``), the simulator's value beside the published figure(s) and
the accepted range, measured through the public env API.

    python benchmarks/fidelity.py --out OUT [--episodes 200] [--seeds 8] [--domain code ...] [--v1] [--no-frontier]

Each card names, per row, a measurement (``draft_accuracy:gathered``, ``repair_rate:blind:2``, ``pass_ratio:4``, ...)
whose protocol the card itself states (its ``protocol`` and ``measurements``): this script implements them with
``gym.make(env_id, split="test", budget=60, budget_units=None)`` and the simulated worker, ``reset(seed=s)`` for
``s = 0..episodes-1`` (pass^k: every test task, seeds ``0..seeds-1``), reading only ``info`` and the observation.
The frontier card's rows (behaviours ``frontier_...``) are measured the same way on the domain's tiered id
(``Harness<Name>Tiered-v2``), whose action 7 (DRAFT_FRONTIER) is the frontier tier's draft; ``--no-frontier`` leaves
them out. Writes ``OUT/fidelity.md`` (the table; ``--v1`` adds the ``-v1`` value beside each), ``OUT/fidelity.json`` and
``OUT/fidelity.png`` (pass^k / pass^1 beside tau-bench's published points; repair rate per round beside the decay
literature). A pinned row outside its range is marked ``OUT``; the exit status is 1 when any is.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from harness_gym.core.actions import Action
from harness_gym.core.paths import data_path
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.tiered import DRAFT_FRONTIER, TIERED_DOMAINS, TIERED_ENV_IDS

DOMAIN_ENVS: dict[str, str] = {domain: name for name, domain in TIERED_DOMAINS.items()}
"""Each card's domain and the env name its rows are measured on."""

MEASUREMENT_BUDGET = 60
"""The step budget of every measurement episode (the longest protocol, gather + 8 retrievals + 4 repair rounds,
needs about 40 steps)."""
MAX_OBSERVE, MAX_RETRIEVE, MAX_TOOL = 6, 4, 6
"""GATHER's limits (the cards' ``protocol``)."""
EXTRA_RETRIEVE = 8
"""The further RETRIEVE steps of ``irrelevant_items:8``."""
ROUNDS = 4
"""The CHECK/REVISE rounds the repair measurements follow."""
ROW_FIELDS = ("behaviour", "claim", "measurement", "status", "published")

_LAST_CHECK = FEATURE_NAMES.index("last_check_result")
_CONFIDENCE = FEATURE_NAMES.index("worker_confidence")


class CardError(ValueError):
    """A fidelity card that does not validate (one line naming the file and the row)."""


def card_path(domain: str) -> Path:
    return data_path("fidelity", f"{domain}.json")


def frontier_card_path(domain: str) -> Path:
    """The frontier tier's card of ``domain`` (its rows are measured on the tiered id)."""
    return data_path("fidelity", "frontier", f"{domain}.json")


def tiered_env_id(domain: str) -> str:
    """The tiered id whose frontier tier a domain's frontier card is measured on."""
    return dict(zip(TIERED_DOMAINS.values(), TIERED_ENV_IDS))[domain]


def load_card(domain: str, path: Path | None = None) -> dict[str, Any]:
    """The card of ``domain``, validated: every row has the fields of :data:`ROW_FIELDS`, each published figure a
    source, a pinned row a range ``[lo, hi]`` with ``lo <= hi`` and a published span inside it, a chosen row no
    range, and every measurement id a protocol in the card's ``measurements``.

    :raises CardError: naming the file, the row and what is wrong
    """
    path = path or card_path(domain)
    card = json.loads(Path(path).read_text())
    if not isinstance(card, dict) or not isinstance(card.get("rows"), list) or not card["rows"]:
        raise CardError(f"{path}: a card is an object with a non-empty 'rows' list")
    protocols = card.get("measurements")
    if not isinstance(protocols, dict) or not isinstance(card.get("protocol"), str):
        raise CardError(f"{path}: the card needs 'protocol' (text) and 'measurements' (id -> protocol)")
    seen: set[str] = set()
    for i, row in enumerate(card["rows"]):
        where = f"{path}: rows[{i}]"
        if not isinstance(row, dict):
            raise CardError(f"{where}: a row is an object")
        for name in ROW_FIELDS:
            if name not in row:
                raise CardError(f"{where} ({row.get('behaviour', '?')}): no {name!r}")
        if row["behaviour"] in seen:
            raise CardError(f"{where}: behaviour {row['behaviour']!r} appears twice")
        seen.add(row["behaviour"])
        if row["measurement"] not in protocols:
            raise CardError(f"{where} ({row['behaviour']}): measurement {row['measurement']!r} has no protocol in "
                            f"'measurements'")
        for j, fig in enumerate(row["published"]):
            source = fig.get("source") if isinstance(fig, dict) else None
            if not isinstance(source, dict) or not all(source.get(k) for k in ("title", "year", "checked")):
                raise CardError(f"{where} ({row['behaviour']}): published[{j}] needs a source with title, year and "
                                f"checked")
        if row["status"] == "pinned":
            rng = row.get("range")
            if (not isinstance(rng, list) or len(rng) != 2 or not all(isinstance(v, (int, float)) for v in rng)
                    or rng[0] > rng[1]):
                raise CardError(f"{where} ({row['behaviour']}): a pinned row needs a range [lo, hi] with lo <= hi")
            if not row["published"] or all(fig.get("value") is None for fig in row["published"]):
                raise CardError(f"{where} ({row['behaviour']}): a pinned row needs a published figure with a value")
            span = row.get("published_span")
            if not (isinstance(span, list) and len(span) == 2 and rng[0] <= span[0] <= span[1] <= rng[1]):
                raise CardError(f"{where} ({row['behaviour']}): published_span must lie inside the range")
        elif row["status"] == "chosen":
            if "range" in row or "published_span" in row:
                raise CardError(f"{where} ({row['behaviour']}): a chosen row claims no range")
        else:
            raise CardError(f"{where} ({row['behaviour']}): status must be 'pinned' or 'chosen', got {row['status']!r}")
    return card


# ----- episodes ---------------------------------------------------------------------------------------------------
@dataclass
class Episode:
    """What one measurement episode returned: the grader's verdict and quality, the checks' results in order, and
    the stated confidence after the first draft."""

    success: bool = False
    quality: float = 0.0
    checks: list[bool] = field(default_factory=list)
    confidence: float = float("nan")


def make_env(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make(env_id, ...)`` without Gymnasium's warning that a ``-v1`` id is out of date (measured on purpose)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is out of date.*")
        return gym.make(env_id, **({"split": "test", "budget": MEASUREMENT_BUDGET, "budget_units": None} | kwargs))


def _gather(env: gym.Env, info: dict[str, Any], extra_retrieve: int = 0) -> dict[str, Any]:
    """Run GATHER (and ``extra_retrieve`` further RETRIEVE steps) while the mask allows each action."""
    for action, times in ((Action.OBSERVE, MAX_OBSERVE), (Action.RETRIEVE, MAX_RETRIEVE + extra_retrieve),
                          (Action.TOOL, MAX_TOOL)):
        for _ in range(times):
            if not info["action_mask"][action]:
                break
            _, _, terminated, truncated, info = env.step(int(action))
            if terminated or truncated:
                raise RuntimeError("a measurement episode ended while gathering; raise MEASUREMENT_BUDGET")
    return info


def run_protocol(env: gym.Env, seed: int, *, gather: bool, rounds: int = 0, check: bool = False,
                 extra_retrieve: int = 0, task_id: str | None = None, draft: int = Action.DRAFT) -> Episode:
    """One episode: [GATHER], DRAFT (or ``draft``: DRAFT_FRONTIER on a tiered env), then ``rounds`` times [CHECK; stop
    if it passed; REVISE] (or one CHECK when ``check``), SUBMIT."""
    _, info = env.reset(seed=seed, options={"task_id": task_id} if task_id is not None else None)
    if gather or extra_retrieve:
        info = _gather(env, info, extra_retrieve)
    obs, _, _, _, info = env.step(int(draft))
    ep = Episode(confidence=float(obs[_CONFIDENCE]))
    for _ in range(rounds if rounds else int(check)):
        obs, _, _, _, info = env.step(int(Action.CHECK))
        passed = obs[_LAST_CHECK] > 0
        ep.checks.append(bool(passed))
        if passed or not rounds:
            break
        obs, _, _, _, info = env.step(int(Action.REVISE))
    _, _, terminated, _, info = env.step(int(Action.SUBMIT))
    assert terminated
    ep.success, ep.quality = bool(info["success"]), float(info["quality"])
    return ep


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The area under the ROC curve of ``scores`` for ``labels`` (ties count one half); NaN with one class only."""
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    if not pos or not neg:
        return float("nan")
    neg_sorted = np.sort(np.asarray(neg))
    pos_arr = np.asarray(pos)
    below = np.searchsorted(neg_sorted, pos_arr, side="left")
    tied = np.searchsorted(neg_sorted, pos_arr, side="right") - below
    return float((below + 0.5 * tied).sum() / (len(pos) * len(neg)))


def pass_hat_k(successes: Sequence[int], n: int, k: int) -> float:
    """tau-bench's pass^k: per task with ``c`` successes of ``n`` trials, C(c, k) / C(n, k), averaged over tasks."""
    if not 1 <= k <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n, got k={k}, n={n}")
    return float(np.mean([math.comb(c, k) / math.comb(n, k) for c in successes]))


def safe_div(a: float, b: float) -> float:
    return a / b if b else float("nan")


# ----- measurements -----------------------------------------------------------------------------------------------
class Measurer:
    """Runs (and keeps) the episodes one env's rows need, and reads each measurement id from them."""

    def __init__(self, env_id: str, episodes: int, seeds: int) -> None:
        self.env_id = env_id
        self.episodes = episodes
        self.seeds = seeds
        self.env = make_env(env_id)
        self._memo: dict[Any, Any] = {}

    def close(self) -> None:
        self.env.close()

    def _runs(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def plain(self, gather: bool, *, check: bool = False, extra_retrieve: int = 0,
              draft: int = Action.DRAFT) -> list[Episode]:
        return self._runs(("plain", gather, check, extra_retrieve, draft), lambda: [
            run_protocol(self.env, s, gather=gather, check=check, extra_retrieve=extra_retrieve, draft=draft)
            for s in range(self.episodes)])

    def repair(self, prefix: str) -> list[list[Episode]]:
        """Per seed, the episodes e_0..e_ROUNDS of the repair protocol (one trajectory up to each SUBMIT)."""
        gather = prefix == "gathered"
        return self._runs(("repair", prefix), lambda: [
            [run_protocol(self.env, s, gather=gather, rounds=j) for j in range(ROUNDS + 1)]
            for s in range(self.episodes)])

    def repair_rates(self, prefix: str) -> list[float]:
        """Round k's repair rate, k = 1..ROUNDS (see the cards' ``repair_rate``)."""
        runs = self.repair(prefix)
        rates = []
        for k in range(1, ROUNDS + 1):
            eligible = fixed = 0
            for eps in runs:
                last = eps[ROUNDS]
                # the k-th check failed (every earlier one failed too, or there would be no k-th)
                if len(last.checks) >= k and not last.checks[k - 1] and not eps[k - 1].success:
                    eligible += 1
                    fixed += eps[k].success
            rates.append(safe_div(fixed, eligible))
        return rates

    def pass_counts(self) -> list[int]:
        """Per test task, how many of ``seeds`` forced-check episodes succeeded."""
        from harness_gym_baselines.policies.scripted import StaticPolicy

        def run() -> list[int]:
            env = make_env(self.env_id, budget=30, budget_units="auto")
            try:
                tasks = [t.task_id for t in env.unwrapped.domain.tasks("test")]
                counts = []
                for task_id in tasks:
                    wins = 0
                    for seed in range(self.seeds):
                        policy = StaticPolicy(check=True)
                        obs, info = env.reset(seed=seed, options={"task_id": task_id})
                        policy.reset(env, seed)
                        done = False
                        while not done:
                            obs, _, terminated, truncated, info = env.step(policy.act(obs, env))
                            done = terminated or truncated
                        wins += bool(info["success"])
                    counts.append(wins)
                return counts
            finally:
                env.close()
        return self._runs(("pass",), run)

    def frontier_pass_counts(self) -> list[int]:
        """Per test task, how many of ``seeds`` episodes of DRAFT_FRONTIER, CHECK, SUBMIT succeeded (tiered env)."""
        tasks = [t.task_id for t in self.env.unwrapped.domain.tasks("test")]
        return self._runs(("pass", "frontier"), lambda: [
            sum(run_protocol(self.env, seed, gather=False, check=True, task_id=task_id, draft=DRAFT_FRONTIER).success
                for seed in range(self.seeds)) for task_id in tasks])

    def success(self, draft: int) -> float:
        """The gathered draft's success rate with ``draft`` (DRAFT, or DRAFT_FRONTIER on a tiered env)."""
        return float(np.mean([e.success for e in self.plain(True, draft=draft)]))

    def value(self, measurement: str) -> float:
        name, _, arg = measurement.partition(":")
        # the frontier card's measurements (a tiered env): the frontier tier's over the cheap tier's, or the frontier's
        if measurement == "draft_accuracy_ratio:gathered":
            return safe_div(self.success(DRAFT_FRONTIER), self.success(Action.DRAFT))
        if measurement == "draft_accuracy:gathered:frontier":
            return self.success(DRAFT_FRONTIER)
        if name == "pass_ratio" and arg.endswith(":frontier"):
            counts = self.frontier_pass_counts()
            k = int(arg.removesuffix(":frontier"))
            return safe_div(pass_hat_k(counts, self.seeds, k), pass_hat_k(counts, self.seeds, 1))
        if name == "draft_accuracy":
            return float(np.mean([e.success for e in self.plain(arg == "gathered")]))
        if name in ("check_false_pass", "check_false_reject"):
            eps = self.plain(True, check=True)
            wanted = name == "check_false_reject"  # false rejects are among the grader's passes
            pool = [e for e in eps if e.success == wanted]
            return safe_div(sum(e.checks[0] != wanted for e in pool), len(pool))
        if name == "repair_rate":
            prefix, _, k = arg.partition(":")
            return self.repair_rates(prefix)[int(k) - 1]
        if name == "repair_gain":
            prefix, rounds = ("blind", 3) if arg == "blind3" else (arg, ROUNDS)
            runs = self.repair(prefix)
            return float(np.mean([eps[rounds].success for eps in runs]) - np.mean([eps[0].success for eps in runs]))
        if name == "repair_quality":
            return float(np.mean([eps[3].quality for eps in self.repair("blind")]))
        if name == "repair_decay":
            rates = self.repair_rates(arg)
            return safe_div(rates[2], rates[0])
        if name == "pass_ratio":
            counts = self.pass_counts()
            p1 = pass_hat_k(counts, self.seeds, 1)
            return p1 if arg == "1abs" else safe_div(pass_hat_k(counts, self.seeds, int(arg)), p1)
        if name == "irrelevant_items":
            base = np.mean([e.success for e in self.plain(True)])
            more = np.mean([e.success for e in self.plain(True, extra_retrieve=int(arg))])
            return safe_div(float(more), float(base))
        if name == "confidence_auroc":
            eps = self.plain(True)
            return auroc([e.confidence for e in eps], [e.success for e in eps])
        raise ValueError(f"unknown measurement {measurement!r}")

    def curves(self) -> dict[str, list[float]]:
        """What the figure draws for this env: pass^k / pass^1 for k = 1..seeds and the repair rate per round."""
        out: dict[str, list[float]] = {}
        counts = self._memo.get(("pass",))
        if counts is not None:
            p1 = pass_hat_k(counts, self.seeds, 1)
            out["pass_ratio"] = [safe_div(pass_hat_k(counts, self.seeds, k), p1) for k in range(1, self.seeds + 1)]
        for prefix in ("blind", "gathered"):
            if ("repair", prefix) in self._memo:
                out[f"repair_{prefix}"] = self.repair_rates(prefix)
        return out


@dataclass
class RowResult:
    domain: str
    row: dict[str, Any]
    value: float
    v1_value: float | None = None
    card: str = "cheap"
    """``"cheap"`` (the domain's card, the ``-v2`` id) or ``"frontier"`` (its frontier tier's card, the tiered id)."""

    @property
    def in_range(self) -> bool | None:
        if self.row["status"] != "pinned":
            return None
        lo, hi = self.row["range"]
        return bool(lo <= self.value <= hi)


def measure_domain(domain: str, episodes: int, seeds: int, *, v1: bool = False,
                   rows: Iterable[str] | None = None) -> tuple[list[RowResult], dict[str, dict[str, list[float]]]]:
    """Every row of ``domain``'s card (or those whose behaviour is in ``rows``) on the ``-v2`` id, and with ``v1`` on
    the ``-v1`` id beside it; plus the figure's curves per env id."""
    card = load_card(domain)
    wanted = set(rows) if rows is not None else None
    ids = [f"{DOMAIN_ENVS[domain]}-v2"] + ([f"{DOMAIN_ENVS[domain]}-v1"] if v1 else [])
    measurers = {env_id: Measurer(env_id, episodes, seeds) for env_id in ids}
    try:
        results = []
        for row in card["rows"]:
            if wanted is not None and row["behaviour"] not in wanted:
                continue
            value = measurers[ids[0]].value(row["measurement"])
            old = measurers[ids[1]].value(row["measurement"]) if v1 else None
            results.append(RowResult(domain, row, value, old))
        return results, {env_id: m.curves() for env_id, m in measurers.items()}
    finally:
        for m in measurers.values():
            m.close()


def measure_frontier(domain: str, episodes: int, seeds: int, *,
                     rows: Iterable[str] | None = None) -> list[RowResult]:
    """Every row of ``domain``'s frontier card (or those whose behaviour is in ``rows``) on its tiered id."""
    card = load_card(domain, frontier_card_path(domain))
    wanted = set(rows) if rows is not None else None
    measurer = Measurer(tiered_env_id(domain), episodes, seeds)
    try:
        return [RowResult(domain, row, measurer.value(row["measurement"]), card="frontier") for row in card["rows"]
                if wanted is None or row["behaviour"] in wanted]
    finally:
        measurer.close()


# ----- output -----------------------------------------------------------------------------------------------------
def _fmt(value: float | None) -> str:
    if value is None:
        return ""
    return "n/a" if value != value else f"{value:.3f}"


def _published(row: dict[str, Any]) -> str:
    parts = []
    for fig in row["published"]:
        source = fig["source"]
        who = f"{source['title'].split(':')[0]} ({source['year']})"
        parts.append(f"{fig['value']:g} {who}" if fig.get("value") is not None else who)
    return "; ".join(dict.fromkeys(parts)) or "-"


def markdown(results: Sequence[RowResult], *, v1: bool) -> str:
    head = "| domain | behaviour | status | simulator (-v2) |" + (" -v1 |" if v1 else "") + " range | published |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        rng = "-" if r.row["status"] == "chosen" else "[{:g}, {:g}]".format(*r.row["range"])
        mark = {True: "", False: " **OUT**", None: ""}[r.in_range]
        lines.append(f"| {r.domain} | {r.row['behaviour']} | {r.row['status']} | {_fmt(r.value)}{mark} |"
                     + (f" {_fmt(r.v1_value)} |" if v1 else "") + f" {rng} | {_published(r.row)} |")
    return "\n".join(lines) + "\n"


TAU_PUBLISHED = {"gpt-4o": [1.0, 0.491 / 0.604, 0.430 / 0.604, 0.383 / 0.604],
                 "claude-3.5-sonnet (2024-10-22)": [1.0, 0.576 / 0.692, 0.509 / 0.692, 0.462 / 0.692]}
"""tau-bench retail leaderboard, pass^k / pass^1 for k = 1..4 (README, sierra-research/tau-bench)."""


def figure(curves: dict[str, dict[str, list[float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for env_id, c in curves.items():
        if "pass_ratio" in c:
            ks = range(1, len(c["pass_ratio"]) + 1)
            left.plot(ks, c["pass_ratio"], marker="o", ms=3, lw=1.2 if env_id.endswith("-v2") else 0.8,
                      ls="-" if env_id.endswith("-v2") else ":", label=env_id)
    for model, values in TAU_PUBLISHED.items():
        left.plot(range(1, 5), values, "k*" if "gpt" in model else "kP", ms=9, label=f"tau-bench retail, {model}")
    left.set(xlabel="k", ylabel="pass^k / pass^1", title="Task-persistent failures (forced-check script)", ylim=(0, 1.05))
    left.legend(fontsize=6)
    rounds = np.arange(1, ROUNDS + 1)
    for env_id, c in curves.items():
        for key in ("repair_blind", "repair_gathered"):
            if key in c:
                right.plot(rounds, c[key], marker="o", ms=3, ls="-" if env_id.endswith("-v2") else ":",
                           label=f"{env_id} ({key.split('_')[1]})")
    right.fill_between(rounds, 0.2 ** ((rounds - 1) / 2), 0.4 ** ((rounds - 1) / 2), color="grey", alpha=0.25,
                       label="DDI: 60-80% of round 1's effect lost by round 3 (relative)")
    right.set(xlabel="REVISE round on one draft lineage", ylabel="repair rate (share of wrong drafts fixed)",
              title="Repair per round", ylim=(0, 1.0))
    right.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for fidelity.md, fidelity.json and fidelity.png")
    ap.add_argument("--episodes", type=int, default=200, help="episodes (reset seeds 0..N-1) per protocol (default 200)")
    ap.add_argument("--seeds", type=int, default=8, help="seeds per test task for pass^k (default 8)")
    ap.add_argument("--domain", action="append", choices=sorted(DOMAIN_ENVS), help="domain (repeatable; default all)")
    ap.add_argument("--v1", action="store_true", help="measure the -v1 ids beside the -v2 ones")
    ap.add_argument("--no-frontier", action="store_true",
                    help="leave out the frontier cards' rows (measured on the tiered ids)")
    args = ap.parse_args(argv)
    if args.episodes < 1 or args.seeds < 1:
        ap.error("--episodes and --seeds must be >= 1")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: list[RowResult] = []
    curves: dict[str, dict[str, list[float]]] = {}
    for domain in args.domain or DOMAIN_ENVS:
        got, c = measure_domain(domain, args.episodes, args.seeds, v1=args.v1)
        if not args.no_frontier:
            got += measure_frontier(domain, args.episodes, args.seeds)
        results += got
        curves.update(c)
        for r in got:
            print(f"{domain:12s} {r.row['behaviour']:26s} {r.row['status']:6s} {_fmt(r.value):>7s}"
                  + (f" (v1 {_fmt(r.v1_value)})" if args.v1 else "")
                  + ("" if r.in_range is None else ("  in range" if r.in_range else "  OUT of range"))
                  + (" {}".format(r.row["range"]) if r.row["status"] == "pinned" else ""), flush=True)
    table = markdown(results, v1=args.v1)
    command = "python benchmarks/fidelity.py " + " ".join(sys.argv[1:] if argv is None else argv)
    (out / "fidelity.md").write_text(f"<!-- {command} -->\n{table}")
    (out / "fidelity.json").write_text(json.dumps({
        "command": command, "episodes": args.episodes, "seeds": args.seeds, "curves": curves,
        "rows": [{"domain": r.domain, "card": r.card, "behaviour": r.row["behaviour"], "status": r.row["status"],
                  "measurement": r.row["measurement"], "value": r.value, "v1_value": r.v1_value,
                  "range": r.row.get("range"), "in_range": r.in_range} for r in results]}, indent=1, default=str))
    figure(curves, out / "fidelity.png")
    print(f"wrote {out / 'fidelity.md'}, {out / 'fidelity.json'}, {out / 'fidelity.png'}")
    return 1 if any(r.in_range is False for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
