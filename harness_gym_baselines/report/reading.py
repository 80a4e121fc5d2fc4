"""The reading of the reproduce report: what the run's numbers say, each sentence computed from them, beside
what the papers report (:mod:`harness_gym_baselines.experiments.paper_claims`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness_gym_baselines.experiments.paper_claims import (
    ECPO_CLAIMS,
    OFFLINE_RL_CLAIMS,
    PAPER_GAIN,
    seed_ordering,
)
from harness_gym_baselines.report.rows import (
    LEARNED,
    env_name,
    short_label,
)


# ----- the reading ----------------------------------------------------------------------------------------
def reading(rows: list[dict[str, Any]], agg: list[dict[str, Any]], ecpo_rows: list[dict[str, Any]],
            corruption: dict[str, Any], sim_rows: list[dict[str, Any]], online_verdict: str, corruption_verdict: str,
            cost_best: dict[str, dict[str, Any]], quick: bool, trained_at: Sequence[float] = ()) -> list[str]:
    """What agrees with the papers and what does not, as sentences whose numbers come from this run; the
    mechanisms are those of docs/offline_results.md, docs/cost_results.md and docs/ecpo.md.

    :param rows: :func:`harness_rows`
    :param agg: :func:`aggregate_rows`
    :param ecpo_rows: the ECPO table's rows (deterministic policies)
    :param corruption: the corruption runs
    :param sim_rows: the sim-to-real rows
    :param online_verdict: the verdict of the online trainers' rows (their training budget)
    :param corruption_verdict: the same for the corruption runs
    :param cost_best: :func:`best_returns`
    :param quick: a quick run
    :param trained_at: the cost weights the learned controllers were trained at (:func:`trained_weights`)
    """
    by = {(r["env_id"], r["policy"]): r for r in rows}
    labels = list(dict.fromkeys(r["env_id"] for r in rows))
    out = []
    if quick:
        out.append("This is a QUICK run: small buffers, few seeds and short online training. Its numbers check the "
                   "pipeline; rows marked 'not meaningful' say why they cannot be read as results.")

    out += _offline_lines(by, labels, agg)
    out += _ecpo_lines(ecpo_rows, corruption, online_verdict, corruption_verdict)
    if sim_rows:
        out.append(_sim_to_real_sentence(sim_rows))
    out += _cost_lines(cost_best, trained_at)
    out.extend(cost_reading(cost_best))
    return out


def _offline_lines(by: dict[tuple[str, str], dict[str, Any]], labels: list[str], agg: list[dict[str, Any]]) -> list[str]:
    """The offline-RL paper's claims against the harness rows: check-before-submit, AWR minus static, AWR
    against BC and forced-check, the probability of improvement."""
    out: list[str] = []

    def cbs(label: str, name: str) -> float:
        r = by.get((label, name))
        return float("nan") if r is None else float(np.nan_to_num(r["patterns"]["check_before_submit"]))

    for name in ("awr", "awr-q"):
        learned = [e for e in labels if (e, name) in by and cbs(e, name) >= cbs(e, "static") + 0.1]
        out.append(f"Check-before-submit emerges with {name} (rate at least 0.1 above static) in {len(learned)} of "
                   f"{len(labels)} envs{': ' + ', '.join(short_label(e) for e in learned) if learned else ''}. The paper "
                   f"reports it {OFFLINE_RL_CLAIMS['check_before_submit_emerges']}. "
                   + ("Mechanism (docs/offline_results.md): with the sample advantage G - V(s) and a mostly pass/fail "
                      "terminal reward, the reweighting multiplies CHECK's behaviour probability by at most the ratio "
                      "of success rates (1.05-1.3), which does not overturn the buffer's 2:1 prior for SUBMIT."
                      if name == "awr" else
                      "The fitted advantage Q(s, a) - V(s) averages the pass/fail outcome first, so its weights grow "
                      "with the difference in expected quality and CHECK wins where it pays."))
    for name_of_env, paper in PAPER_GAIN.items():
        for label in [e for e in labels if env_name(e) == name_of_env]:
            parts = []
            for name in ("awr", "awr-q"):
                r = by.get((label, name))
                if r is None or r["gain_vs_static"] is None:
                    continue
                lo, hi = r["gain_vs_static_ci95"]
                relation = ("includes" if lo <= paper <= hi else "is below" if hi < paper else "is above")
                parts.append(f"{name} {r['gain_vs_static']:+.1f} points [{lo:+.1f}, {hi:+.1f}] ({relation} the "
                             f"paper's {paper:+.1f}; {r['verdict']})")
            if parts:
                out.append(f"AWR minus static on {short_label(label)}: " + "; ".join(parts) + ".")
    pairs = [(by[(e, "awr")], by[(e, "bc")]) for e in labels if (e, "awr") in by and (e, "bc") in by]
    wins = sum(a["quality_ci95"][0] > b["quality_mean"] for a, b in pairs)
    losses = sum(a["quality_ci95"][1] < b["quality_mean"] for a, b in pairs)
    out.append(f"AWR (sample advantage) against BC: above BC's mean by more than its CI in {wins}, below in {losses}, "
               f"within its CI in {len(pairs) - wins - losses} of {len(pairs)} envs. The paper: "
               f"{OFFLINE_RL_CLAIMS['awr_vs_bc']}" + (" (agrees)." if wins > len(pairs) / 2 else "; here mostly ties: BC clones the behaviour's "
                             "static script, and the sample advantage barely reweights it (above)."))
    fc_wins = [e for e in labels if (e, "forced-check") in by and all(
        by[(e, "forced-check")]["quality_mean"] >= by[(e, n)]["quality_mean"] for n in LEARNED if (e, n) in by)]
    out.append(f"Forced-CHECK is at least as good as every learned controller in {len(fc_wins)} of {len(labels)} "
               f"envs (the paper: {OFFLINE_RL_CLAIMS['awr_vs_forced_check']}). The support ceiling (wrong drafts "
               "that pass the checker) caps the fixed scripts and the learners alike (docs/offline_results.md).")
    for r in agg:
        if "p_improvement" in r:
            lo, hi = r["p_improvement_ci95"]
            out.append(f"P({r['controller']} > best fixed script per env) = {r['p_improvement']:.2f} [{lo:.2f}, "
                       f"{hi:.2f}] over {r['envs']} envs; aggregate IQM {r['iqm']:.3f} [{r['iqm_ci95'][0]:.3f}, "
                       f"{r['iqm_ci95'][1]:.3f}].")
    return out


def _ecpo_lines(ecpo_rows: list[dict[str, Any]], corruption: dict[str, Any], online_verdict: str,
                corruption_verdict: str) -> list[str]:
    """The ECPO seed's claims against the ECPO table and the corruption runs."""
    out: list[str] = []
    by_e = {(r["env_id"], r["method"]): r for r in ecpo_rows}
    for env in dict.fromkeys(r["env_id"] for r in ecpo_rows):
        order = sorted((m for m in ("ppo-sparse", "ppo-dense", "bc", "ecpo", "ecpo-pb") if (env, m) in by_e),
                       key=lambda m: by_e[(env, m)]["success"])
        out.append(f"ECPO table, {short_label(env)}: success from lowest to highest: "
                   + ", ".join(f"{m} {100 * by_e[(env, m)]['success']:.0f}%" for m in order)
                   + f". The seed's ordering is {seed_ordering()}. "
                   "Mechanisms where it differs (docs/ecpo.md): harness episodes are short, so the sparse reward is "
                   "not starved; without a binding cost PPO policies spend the whole budget; ECPO's knowledge and "
                   "consistency sources can be raised by repeating a step, which the policy farms."
                   + ("" if online_verdict == "meaningful" else f" In this run the online rows are {online_verdict}."))
    for method in dict.fromkeys(r.get("method", "ecpo") for r in corruption.values()):
        finals = {arm: [r["test_success"] for r in corruption.values()
                        if r.get("method", "ecpo") == method and r["arm"] == arm] for arm in ("adaptive", "frozen")}
        if all(finals.values()):
            out.append(f"Knowledge corruption, {method}: final test success adaptive {np.mean(finals['adaptive']):.2f} "
                       f"vs frozen {np.mean(finals['frozen']):.2f} ({len(finals['adaptive'])} seed(s)). The seed reports that "
                       f"{ECPO_CLAIMS['corruption']}; docs/ecpo.md found the weight moving less than "
                       "its own sampling noise with 30 validation episodes per calibration."
                       + ("" if corruption_verdict == "meaningful" else f" These runs are {corruption_verdict}."))
    return out


def _sim_to_real_sentence(sim_rows: list[dict[str, Any]]) -> str:
    """How far the simulated worker is from the recorded model, and whether it ranks the controllers alike."""
    from harness_gym_baselines.experiments.sim_to_real import LEARNED as SIM_LEARNED
    from harness_gym_baselines.experiments.sim_to_real import SimToRealRow, rank

    gap_d = np.mean([abs(r["q_real"] - r["q_sim_default"]) for r in sim_rows])
    gap_f = np.mean([abs(r["q_real"] - r["q_sim_fitted"]) for r in sim_rows])
    tasks = sorted({r["tasks"] for r in sim_rows})
    text = (f"Sim-to-real on the shipped SmolLM2 recording: mean |Q real - Q sim| is {gap_d:.3f} with the "
            f"default profiles and {gap_f:.3f} with the fitted ones ({len(sim_rows)} env x controller rows, "
            f"{'-'.join(map(str, tasks[:1] + tasks[-1:] if len(tasks) > 1 else tasks))} tasks each, so the "
            "intervals are wide).")
    learned = [r for r in sim_rows if r["controller"] == SIM_LEARNED]
    if learned:
        text += (f" The controller trained on the simulator ({SIM_LEARNED}) scores Q "
                 + ", ".join(f"{r['q_real']:.2f} real vs {r['q_sim_default']:.2f} simulated on "
                             f"{short_label(r['env_id'])}" for r in learned) + ".")
    agree = {"sim default": 0, "sim fitted": 0}
    pairs = 0
    for env_id in dict.fromkeys(r["env_id"] for r in sim_rows):
        ranking = rank([SimToRealRow(**r) for r in sim_rows if r["env_id"] == env_id])
        pairs += ranking.pairs
        for w in agree:
            agree[w] += ranking.agreeing_pairs[w]
    best = max(agree.values()) / pairs if pairs else 0.0
    verdict = ("the simulators largely rank the controllers as the real model does" if best >= 0.75 else
               "the simulators' ranking of the controllers only partly carries over to the real model"
               if best >= 0.5 else "neither simulator predicts how the controllers rank with this model")
    text += (f" Of {pairs} controller pairs the default simulator orders {agree['sim default']} as the real "
             f"model does and the fitted one {agree['sim fitted']}: {verdict}.")
    return text


def _cost_lines(cost_best: dict[str, dict[str, Any]], trained_at: Sequence[float]) -> list[str]:
    """Per cost weight: which fixed script has the best return, and in how many envs a learned controller beats
    every fixed script."""
    out: list[str] = []
    trained = ("trained at w = " + " and ".join(f"{w:g}" for w in trained_at)) if trained_at else "trained"
    for w, best in cost_best.items():
        fixed = ", ".join(f"{name} in {n}" for name, n in best["fixed"].items())
        out.append(f"Cost weight {w}: the best return among the fixed scripts (named and searched) goes to {fixed} env(s); a learned "
                   f"controller ({trained}) has a higher return than every fixed script in "
                   f"{best['learned_wins']} of {best['envs']} envs.")
    return out


def cost_reading(cost_best: dict[str, dict[str, Any]]) -> list[str]:
    """Which fixed script has the best return in the most envs at the lowest and at the highest cost weight,
    set against docs/cost_results.md's expectation (thorough, which gathers everything and then checks, at w = 0;
    cheaper scripts as w grows); nothing without cost weights.

    :param cost_best: :func:`best_returns`
    """
    if not cost_best:
        return []
    weights = sorted(cost_best, key=float)

    def leader(w: str) -> str:
        counts = cost_best[w]["fixed"]
        top = max(counts.values())
        names = sorted(name for name, n in counts.items() if n == top)
        return f"{' and '.join(names)} ({top} of {cost_best[w]['envs']} env(s))"

    low, high = leader(weights[0]), leader(weights[-1])
    thorough_low = "thorough" in low.split(" (")[0].split(" and ")
    thorough_high = "thorough" in high.split(" (")[0].split(" and ")
    agrees = thorough_low and (len(weights) == 1 or not thorough_high)
    return [f"The best fixed script in the most envs is {low} at w = {weights[0]}"
            + (f" and {high} at w = {weights[-1]}" if len(weights) > 1 else "")
            + ". docs/cost_results.md expects thorough (gather everything, then check) at w = 0 and cheaper scripts "
            "as w grows: " + ("this run agrees." if agrees else "this run does not show that.")]


