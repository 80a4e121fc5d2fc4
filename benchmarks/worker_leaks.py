"""How much of the hidden label the simulated worker's signals leak to a controller: three measurements.

    python benchmarks/worker_leaks.py [--episodes 200] [--checks 7] [--json OUT.json]

Runs on any checkout of harness_gym (it uses only ``gym.make``, the env's context, ``action_masks`` and the
feature names), so the same script measures an older commit too::

    git worktree add /tmp/orig d2c38e2 && (cd /tmp/orig && PYTHONPATH=$PWD python /path/to/benchmarks/worker_leaks.py)

1. **Confidence AUROC** per env: ``worker_confidence`` after each DRAFT against whether the draft is a correct
   candidate, over episodes that gather a random amount of evidence (0-4 evidence actions drawn uniformly
   from the applicable OBSERVE / RETRIEVE / TOOL) before the DRAFT. 0.5 is no information; published
   verbalised-confidence AUROCs are about 0.55-0.65 (docs/cost.md).
2. **Repeated self-checks** (ResearchQA, the domain whose CHECK is the worker's self-check): a DRAFT, then
   ``--checks`` CHECKs of the unchanged draft; the share of repeated verdicts equal to the first, and P(correct)
   given that all checks passed against P(correct) given at most half passed (a gap is what a controller with
   memory can read).
3. **The TOOL mask**: for every task of every env, whether TOOL is applicable (after a DRAFT where TOOL runs
   the draft) against whether the task has evidence tool calls; the mutual information in bits and the
   accuracy of predicting "the task needs tools" from the mask, beside the majority-class accuracy.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
from pathlib import Path

import gymnasium as gym
import numpy as np

import harness_gym

OBSERVE, RETRIEVE, TOOL, DRAFT, CHECK = 0, 1, 2, 3, 4


def auroc(scores: list[float], labels: list[bool]) -> float:
    """Area under the ROC curve (Mann-Whitney, ties counted half); NaN with one class only."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    pos, neg = s[y], s[~y]
    if len(pos) == 0 or len(neg) == 0:
        return math.nan
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(pos) * len(neg)))


def draft_is_correct(env: gym.Env) -> bool:
    ctx = env.unwrapped.context
    task, draft = ctx.task, ctx.draft
    return 0 <= draft.candidate < len(task.candidates) and task.candidates[draft.candidate].correct


def confidence_auroc(env_id: str, episodes: int) -> dict[str, float]:
    env = gym.make(env_id)
    conf_feature = env.unwrapped.feature_names.index("worker_confidence")
    rng = np.random.default_rng(0)
    scores, labels = [], []
    for i in range(episodes):
        env.reset(seed=i, options={"split": "test"})
        for _ in range(int(rng.integers(0, 5))):
            mask = env.unwrapped.action_masks()
            gather = [a for a in (OBSERVE, RETRIEVE, TOOL) if mask[a]]
            if not gather:
                break
            env.step(int(rng.choice(gather)))
        obs = env.step(DRAFT)[0]
        scores.append(float(obs[conf_feature]))
        labels.append(draft_is_correct(env))
    env.close()
    return {"auroc": auroc(scores, labels), "drafts": len(labels), "correct_rate": float(np.mean(labels))}


def self_check_agreement(episodes: int, checks: int) -> dict[str, float]:
    env = gym.make("HarnessResearchQA-v1")
    check_feature = env.unwrapped.feature_names.index("last_check_result")
    same, all_pass, half_or_less = [], [], []
    for i in range(episodes):
        env.reset(seed=i, options={"split": "test"})
        env.step(OBSERVE)
        env.step(RETRIEVE)
        env.step(DRAFT)
        correct = draft_is_correct(env)
        verdicts = [env.step(CHECK)[0][check_feature] > 0 for _ in range(checks)]
        same += [v == verdicts[0] for v in verdicts[1:]]
        passes = sum(verdicts)
        if passes == checks:
            all_pass.append(correct)
        elif passes <= checks // 2:
            half_or_less.append(correct)
    env.close()
    return {"agreement": float(np.mean(same)), "p_correct_all_pass": float(np.mean(all_pass)) if all_pass else math.nan,
            "n_all_pass": len(all_pass),
            "p_correct_half_or_less": float(np.mean(half_or_less)) if half_or_less else math.nan,
            "n_half_or_less": len(half_or_less)}


def mutual_information(x: np.ndarray, y: np.ndarray) -> float:
    """I(X; Y) in bits of two boolean arrays."""
    mi = 0.0
    for a in (False, True):
        for b in (False, True):
            pxy = np.mean((x == a) & (y == b))
            px, py = np.mean(x == a), np.mean(y == b)
            if pxy > 0:
                mi += pxy * math.log2(pxy / (px * py))
    return mi


def tool_mask_leak() -> dict[str, float]:
    masks, needs = [], []
    for env_id in harness_gym.ENV_IDS:
        env = gym.make(env_id)
        domain = env.unwrapped.domain
        for task in domain.all_tasks():
            env.reset(seed=0, options={"task_id": task.task_id})
            if domain.tool_needs_draft:
                env.step(DRAFT)
            masks.append(bool(env.unwrapped.action_masks()[TOOL]))
            needs.append(bool(task.tool_calls))
        env.close()
    m, n = np.asarray(masks), np.asarray(needs)
    return {"tasks": len(n), "needs_tools_rate": float(n.mean()), "mutual_information_bits": mutual_information(m, n),
            "entropy_needs_tools_bits": mutual_information(n, n),
            "accuracy_from_mask": float(max(np.mean(m == n), np.mean(m != n))),
            "majority_accuracy": float(max(n.mean(), 1 - n.mean()))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--checks", type=int, default=7)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(harness_gym.__file__).parent, check=False).stdout.strip()
    except OSError:
        commit = "?"
    print(f"harness_gym from {Path(harness_gym.__file__).parent} (commit {commit or '?'})")
    result: dict = {"commit": commit, "confidence": {}}
    for env_id in harness_gym.ENV_IDS:
        result["confidence"][env_id] = got = confidence_auroc(env_id, args.episodes)
        print(f"confidence AUROC {env_id:24s} {got['auroc']:.3f}  ({got['drafts']} drafts, "
              f"{got['correct_rate']:.2f} correct)")
    result["self_check"] = sc = self_check_agreement(args.episodes, args.checks)
    print(f"ResearchQA repeated self-checks ({args.checks} of one draft): agreement with the first {sc['agreement']:.3f}; "
          f"P(correct | all passed) {sc['p_correct_all_pass']:.3f} (n={sc['n_all_pass']}), "
          f"P(correct | <= {args.checks // 2} passed) {sc['p_correct_half_or_less']:.3f} (n={sc['n_half_or_less']})")
    result["tool_mask"] = tm = tool_mask_leak()
    print(f"TOOL mask vs 'task needs tools' over {tm['tasks']} tasks: I = {tm['mutual_information_bits']:.4f} bits "
          f"of H = {tm['entropy_needs_tools_bits']:.4f}; accuracy from the mask {tm['accuracy_from_mask']:.3f} "
          f"(majority {tm['majority_accuracy']:.3f})")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
