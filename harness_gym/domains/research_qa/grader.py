"""The research-QA grader: exact match and token F1 of normalised answers (SQuAD / HotpotQA style)."""

from __future__ import annotations

from collections import Counter

from harness_gym.domains.fictional_world import normalize_answer


def token_f1(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall between the normalised answers."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def answer_quality(prediction: str, gold: str) -> float:
    """max(exact match, token F1) in [0, 1]; 1 only for an answer equal to the gold one after normalisation."""
    if normalize_answer(prediction) == normalize_answer(gold):
        return 1.0
    return min(token_f1(prediction, gold), 1.0 - 1e-6)
