"""SimulatedWorker: a seeded stochastic model of a frozen LLM that writes real content
(docs/harness_mdp.md, "Workers").

Every draft is one of the task's candidates (the reference or a realistic wrong output). What the worker
writes depends on the evidence the harness has gathered, the task's difficulty and the check feedback, as
set by a :class:`~harness_gym.workers.profile.WorkerProfile`. The content is then checked and graded for
real by the domain: a wrong candidate that passes the checker but fails the grader is a genuine support
ceiling of the data, not a flag.
"""

from __future__ import annotations

import math

import numpy as np

from harness_gym.core.types import CheckResult, Context, Draft, Task, ToolCall
from harness_gym.workers.profile import WorkerProfile


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class SimulatedWorker:
    """The default worker.

    :param profile: the domain's worker profile
    """

    def __init__(self, profile: WorkerProfile) -> None:
        self.profile = profile
        self.rng = np.random.default_rng(0)
        self._split_cache: dict[str, tuple[list[int], list[int]]] = {}

    def reset(self, rng: np.random.Generator) -> None:
        """Draw all further randomness from ``rng`` (the env's ``np_random``)."""
        self.rng = rng

    # ----- helpers -----------------------------------------------------------------------------------
    def _split(self, task: Task) -> tuple[list[int], list[int]]:
        got = self._split_cache.get(task.task_id)
        if got is None:
            good = [i for i, c in enumerate(task.candidates) if c.correct]
            bad = [i for i, c in enumerate(task.candidates) if not c.correct]
            got = self._split_cache[task.task_id] = (good, bad)
        return got

    def _pick(self, task: Task, correct: bool, avoid: int = -1) -> int:
        good, bad = self._split(task)
        pool = good if (correct or not bad) else bad
        if len(pool) > 1 and avoid in pool:
            pool = [i for i in pool if i != avoid]
        return pool[int(self.rng.integers(len(pool)))]

    def p_correct_draft(self, ctx: Context) -> float:
        """Probability that a fresh draft is correct given the evidence gathered so far."""
        p = self.profile
        logit = p.draft_logit_base + p.evidence_weight * ctx.evidence_coverage() - p.difficulty_weight * ctx.task.difficulty
        return _sigmoid(logit)

    def p_fix(self, ctx: Context, feedback: CheckResult) -> float:
        """Probability that revising after failed feedback produces a correct draft."""
        p = self.profile
        value = p.fix_base + p.fix_specificity * feedback.specificity + p.fix_evidence * ctx.evidence_coverage()
        return min(1.0, max(0.0, value))

    def _new(self, ctx: Context, idx: int) -> Draft:
        version = ctx.draft.version + 1 if ctx.draft is not None else 1
        return Draft(content=ctx.task.candidates[idx].content, candidate=idx, version=version)

    def is_correct(self, task: Task, draft: Draft) -> bool:
        return 0 <= draft.candidate < len(task.candidates) and task.candidates[draft.candidate].correct

    # ----- Worker protocol ---------------------------------------------------------------------------
    def draft(self, ctx: Context) -> Draft:
        correct = bool(self.rng.random() < self.p_correct_draft(ctx))
        return self._new(ctx, self._pick(ctx.task, correct))

    def revise(self, ctx: Context, draft: Draft, feedback: CheckResult) -> Draft:
        task = ctx.task
        was_correct = self.is_correct(task, draft)
        if not feedback.passed and not was_correct:
            fixed = bool(self.rng.random() < self.p_fix(ctx, feedback))
            return self._new(ctx, self._pick(task, fixed, avoid=draft.candidate))
        if was_correct:
            broken = bool(self.rng.random() < self.profile.break_prob)
            return self._new(ctx, self._pick(task, not broken) if broken else draft.candidate)
        # A wrong draft that passed its check: revising without a named fault rarely finds the problem.
        fixed = bool(self.rng.random() < self.profile.fix_base / 2)
        return self._new(ctx, self._pick(task, fixed, avoid=draft.candidate) if fixed else draft.candidate)

    def propose_tool_call(self, ctx: Context) -> ToolCall:
        task = ctx.task
        p = self.profile
        if ctx.tool_history:
            last_call, last_res = ctx.tool_history[-1]
            if not last_res.ok and self.rng.random() < p.repeat_after_error_prob:
                return last_call
        if not task.tool_calls:
            return ToolCall(name="", args={})
        done = {call.key() for call, res in ctx.tool_history if res.ok}
        pending = [c for c in task.tool_calls if c.key() not in done] or list(task.tool_calls)
        call = pending[0]
        if self.rng.random() < p.tool_error_prob:
            return self._corrupt(call)
        return call

    def _corrupt(self, call: ToolCall) -> ToolCall:
        """A realistic malformed call: a dropped argument, a mistyped argument, or a misspelt tool name."""
        args = dict(call.args)
        if args:
            key = sorted(args)[int(self.rng.integers(len(args)))]
            if self.rng.random() < 0.5:
                del args[key]
            else:
                value = args[key]
                args[key] = str(value) + "?" if not isinstance(value, str) else [value]
            return ToolCall(name=call.name, args=args)
        return ToolCall(name=call.name + "s", args=args)

    def self_check(self, ctx: Context, draft: Draft) -> CheckResult:
        correct = self.is_correct(ctx.task, draft)
        p_pass = self.profile.selfcheck_tpr if correct else self.profile.selfcheck_fpr
        passed = bool(self.rng.random() < p_pass)
        feedback = "self-check: the answer looks right" if passed else "self-check: the answer may be wrong"
        return CheckResult(passed=passed, feedback=feedback, specificity=0.1)

    def confidence(self, ctx: Context, draft: Draft) -> float:
        p = self.profile
        mean = p.confidence_correct if self.is_correct(ctx.task, draft) else p.confidence_wrong
        return float(min(1.0, max(0.0, self.rng.normal(mean, p.confidence_noise))))
