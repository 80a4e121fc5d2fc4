"""SimulatedWorker: a seeded stochastic model of a frozen LLM that writes real content
(docs/harness_mdp.md, "Workers").

Every draft is one of the task's candidates (the reference or a realistic wrong output). What the worker
writes depends on the evidence the harness has gathered, the task's difficulty and the check feedback, as
set by a :class:`~harness_gym.workers.profile.WorkerProfile`. The content is then checked and graded for
real by the domain: a wrong candidate that passes the checker but fails the grader is a genuine support
ceiling of the data, not a flag.

What its signals depend on (docs/cost.md, "A worker without label leaks"):

- **confidence**: the task's difficulty, the evidence gathered and, weakly, whether the draft is correct
  (the separation of published verbalised-confidence results, see the profiles' rationale);
- **self-check**: the verdict on a draft's content is drawn once per episode and repeated, with probability
  ``selfcheck_repeat``, when the same content is checked again (a model re-judging the same answer mostly
  repeats itself);
- **unusable replies**: with probability ``unusable_reply_prob`` a DRAFT or REVISE reply does not parse into
  the domain's format, and the step yields an empty draft (as the live worker's does), graded for real;
- **tool calls**: the task's evidence calls, malformed ones (``tool_error_prob``) and well-formed wrong ones
  (``tool_wrong_prob``: a wrong id, unit or argument value from the domain's data,
  :meth:`~harness_gym.core.domain.Domain.wrong_tool_calls`) whose results are real but not the needed
  evidence; on a task that needs no tool the worker still proposes a well-formed call, and its result is useless.

The ``-v2`` worker (a :class:`~harness_gym.workers.profile.WorkerProfileV2` with its mechanisms on, pinned to the
fidelity cards in ``envs_data/fidelity/``) adds, each off under a ``-v1`` profile (which then draws exactly as before):

- **a per-task latent ability**: log-odds ``task_ability_sd * z`` with ``z`` standard normal, fixed by the task id and
  the profile's ``task_ability_seed`` (never the episode seed), added to every draft and every repair of the task in
  every episode: failures persist per task, so pass^k falls as published;
- **repair that tires and needs the evidence**: round ``r`` of REVISE since the last DRAFT succeeds with
  ``fix_decay ** (r - 1)`` times round 1's probability, and round 1's is ``g * fix + (1 - g) * p_draft`` with
  ``g = 1 - fix_needs_evidence * (1 - coverage)``: without the evidence in context, a repair is no better than a
  fresh draft from the same context;
- **irrelevant context**: a draft loses ``distractor_weight * log1p(n)`` log-odds for ``n`` irrelevant gathered
  items (retrieved documents that are not the task's, successful tool calls that are not its evidence calls);
- **a closed-book share**: on a ``closed_book_share`` of the tasks (fixed as the ability is) a draft counts as written
  with full evidence coverage.

Usage: every call is metered like a model call (``pop_usage``): the prompt is the domain's prompt template
filled with :func:`~harness_gym.workers.prompting.render_context` of the context at the call (as the live
worker sends it; its length is summed without building the text, :func:`~harness_gym.workers.prompting.context_chars`),
the completion is what the worker writes (the draft, the tool call's JSON, the verdict, the
confidence); both are counted with :func:`~harness_gym.core.cost.estimate_tokens`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from statistics import NormalDist

import numpy as np

from harness_gym.core.cost import CHARS_PER_TOKEN, estimate_tokens
from harness_gym.core.tool_calls import ToolSpec
from harness_gym.core.types import CheckResult, Context, Draft, Task, ToolCall
from harness_gym.workers.base import Usage
from harness_gym.workers.profile import WorkerProfile, WorkerProfileV2
from harness_gym.workers.prompting import ACTIONS, PromptSet, context_chars, render_tools

_REPLY_ENCODER = json.JSONEncoder(default=str)
"""What ``json.dumps(reply, default=str)`` writes for a tool call's reply, without making an encoder per call."""


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _logit(p: float) -> float:
    p = min(1.0 - 1e-9, max(1e-9, p))
    return math.log(p / (1.0 - p))


_STANDARD_NORMAL = NormalDist()


def task_draws(seed: int, task_id: str) -> tuple[float, float]:
    """The two fixed draws of a task under a profile seed: its latent ability ``z`` (standard normal) and a uniform
    ``u`` in (0, 1) that puts it in the closed-book share when ``u < closed_book_share``. They depend on the seed
    and the task id alone (the SHA-256 of both), never on an episode's seed."""
    digest = hashlib.sha256(f"{seed}\x00{task_id}".encode()).digest()
    first = (int.from_bytes(digest[:8], "big") + 0.5) / 2.0**64
    second = (int.from_bytes(digest[8:16], "big") + 0.5) / 2.0**64
    return _STANDARD_NORMAL.inv_cdf(first), second


class SimulatedWorker:
    """The default worker.

    :param profile: the domain's worker profile
    :param domain: the domain name, whose prompt file (``<domain>.json`` in ``envs_data/prompts`` or
        ``prompts_dir``) sizes the metered prompts; a missing file is an error. ``None`` (no domain) meters the
        rendered context alone
    :param tools: the domain's tools (listed in the tool prompt, as a live worker shows them)
    :param wrong_tool_calls: the well-formed wrong calls of a task (the env passes the domain's
        :meth:`~harness_gym.core.domain.Domain.wrong_tool_calls`); ``None``: the worker proposes none
    :param prompts_dir: the folder of prompt files (default ``envs_data/prompts``)
    """

    def __init__(self, profile: WorkerProfile, domain: str | None = None, *,
                 tools: Mapping[str, ToolSpec] | None = None,
                 wrong_tool_calls: Callable[[Task], Sequence[ToolCall]] | None = None,
                 prompts_dir: str | Path | None = None) -> None:
        self.profile = profile
        self.rng = np.random.default_rng(0)
        self._split_cache: dict[str, tuple[list[int], list[int]]] = {}
        self.wrong_tool_calls = wrong_tool_calls
        self._usage = Usage()
        self._verdicts: dict[str, bool] = {}
        self._v2: WorkerProfileV2 | None = (profile if isinstance(profile, WorkerProfileV2) and not profile.is_v1
                                            else None)
        self._task_draws: dict[str, tuple[float, float]] = {}
        self._lineage_revisions = 0
        self._overhead_chars = dict.fromkeys(ACTIONS, 0)
        self._slot_uses = {action: {"context": 1, "draft": 0, "feedback": 0} for action in ACTIONS}
        if domain is not None:
            prompts = PromptSet.for_domain(domain, prompts_dir)
            tool_text = render_tools(tools or {})
            for action in ACTIONS:
                messages = prompts.messages(action, context="", tools=tool_text, draft="", feedback="")
                self._overhead_chars[action] = sum(len(m["content"]) for m in messages)
                template = prompts.templates[action]
                self._slot_uses[action] = {slot: len(re.findall(r"\{\{\s*%s\s*\}\}" % slot, template))
                                           for slot in ("context", "draft", "feedback")}

    def reset(self, rng: np.random.Generator) -> None:
        """Draw all further randomness from ``rng`` (the env's ``np_random``); forget the last episode's
        self-check verdicts."""
        self.rng = rng
        self._verdicts = {}
        self._lineage_revisions = 0

    def pop_usage(self) -> Usage:
        """The model calls this worker would have made since the last pop (one env step)."""
        usage, self._usage = self._usage, Usage()
        return usage

    def _meter(self, action: str, ctx: Context, written: str, *, draft: str = "", feedback: str = "") -> None:
        """Count one call: the prompt of ``action`` (its template filled with the rendered context, ``draft``
        and ``feedback`` where the template uses them) and the reply ``written``."""
        uses = self._slot_uses[action]
        context = uses["context"] * context_chars(ctx) if uses["context"] else 0
        chars = self._overhead_chars[action] + context + uses["draft"] * len(draft) + uses["feedback"] * len(feedback)
        self._usage.llm_calls += 1
        self._usage.prompt_tokens += math.ceil(chars / CHARS_PER_TOKEN)
        self._usage.completion_tokens += estimate_tokens(written)

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

    def _draws(self, task: Task) -> tuple[float, float]:
        """:func:`task_draws` of ``task`` under the ``-v2`` profile's seed, kept per task id."""
        got = self._task_draws.get(task.task_id)
        if got is None:
            assert self._v2 is not None
            got = self._task_draws[task.task_id] = task_draws(int(self._v2.task_ability_seed), task.task_id)
        return got

    def task_ability(self, task: Task) -> float:
        """The task's latent ability in log-odds (``task_ability_sd * z``; 0 under a ``-v1`` profile)."""
        return self._v2.task_ability_sd * self._draws(task)[0] if self._v2 is not None else 0.0

    def _coverage(self, ctx: Context) -> float:
        """The evidence coverage a draft is written at: full for a task in the closed-book share."""
        v2 = self._v2
        if v2 is not None and v2.closed_book_share > 0.0 and self._draws(ctx.task)[1] < v2.closed_book_share:
            return 1.0
        return ctx.evidence_coverage()

    @staticmethod
    def irrelevant_items(ctx: Context) -> int:
        """How many gathered items are not the task's evidence: retrieved documents outside its relevant ones and
        successful tool calls outside its evidence calls."""
        task = ctx.task
        docs = sum(1 for doc_id in ctx.retrieved if doc_id not in task.relevant_docs)
        if not ctx.tool_history:
            return docs
        wanted = {c.key() for c in task.tool_calls}
        return docs + sum(1 for call, res in ctx.tool_history if res.ok and call.key() not in wanted)

    def p_correct_draft(self, ctx: Context) -> float:
        """Probability that a fresh draft is correct given the evidence gathered so far."""
        p = self.profile
        if self._v2 is None:
            logit = p.draft_logit_base + p.evidence_weight * ctx.evidence_coverage() - p.difficulty_weight * ctx.task.difficulty
            return _sigmoid(logit)
        v2 = self._v2
        logit = (v2.draft_logit_base + v2.evidence_weight * self._coverage(ctx) - v2.difficulty_weight * ctx.task.difficulty
                 + self.task_ability(ctx.task))
        if v2.distractor_weight > 0.0:
            logit -= v2.distractor_weight * math.log1p(self.irrelevant_items(ctx))
        return _sigmoid(logit)

    def p_fix(self, ctx: Context, feedback: CheckResult, revision_round: int = 1) -> float:
        """Probability that revising after failed feedback produces a correct draft, in round ``revision_round`` of
        REVISE on the current draft lineage (only a ``-v2`` profile reads the round)."""
        p = self.profile
        value = p.fix_base + p.fix_specificity * feedback.specificity + p.fix_evidence * ctx.evidence_coverage()
        value = min(1.0, max(0.0, value))
        return value if self._v2 is None else self._bounded_fix(ctx, value, revision_round)

    def _bounded_fix(self, ctx: Context, fix: float, revision_round: int) -> float:
        """The ``-v2`` repair probability from the ``-v1`` one ``fix``: moved by the task's ability, mixed with a fresh
        draft's chance as far as the evidence is missing, and decayed by the round."""
        v2 = self._v2
        assert v2 is not None
        ability = self.task_ability(ctx.task)
        if ability != 0.0:
            fix = _sigmoid(_logit(fix) + ability)
        if v2.fix_needs_evidence > 0.0:
            held = 1.0 - v2.fix_needs_evidence * (1.0 - self._coverage(ctx))
            fix = held * fix + (1.0 - held) * self.p_correct_draft(ctx)
        return fix * v2.fix_decay ** (revision_round - 1)

    def _new(self, ctx: Context, idx: int) -> Draft:
        """The next draft version holding candidate ``idx``, or an empty draft for -1 (an unusable reply)."""
        version = ctx.draft.version + 1 if ctx.draft is not None else 1
        return Draft(content=ctx.task.candidates[idx].content if idx >= 0 else "", candidate=idx, version=version)

    def is_correct(self, task: Task, draft: Draft) -> bool:
        return 0 <= draft.candidate < len(task.candidates) and task.candidates[draft.candidate].correct

    def _unusable(self) -> bool:
        """Whether this DRAFT or REVISE reply is unusable (no draw when the profile's rate is 0, so profiles
        without unusable replies keep their random streams)."""
        rate = self.profile.unusable_reply_prob
        return rate > 0.0 and bool(self.rng.random() < rate)

    # ----- Worker protocol ---------------------------------------------------------------------------
    def draft(self, ctx: Context) -> Draft:
        self._lineage_revisions = 0
        if self._unusable():
            new = self._new(ctx, -1)
        else:
            correct = bool(self.rng.random() < self.p_correct_draft(ctx))
            new = self._new(ctx, self._pick(ctx.task, correct))
        self._meter("draft", ctx, self._written(ctx, new))
        return new

    def revise(self, ctx: Context, draft: Draft, feedback: CheckResult) -> Draft:
        new = self._new(ctx, -1) if self._unusable() else self._revised(ctx, draft, feedback)
        self._meter("revise", ctx, self._written(ctx, new), draft=draft.content, feedback=feedback.feedback)
        return new

    @staticmethod
    def _written(ctx: Context, draft: Draft) -> str:
        """What the model wrote for ``draft``: its content, or for an unusable reply (an empty draft) text as
        long as the task's first candidate."""
        return draft.content if draft.candidate >= 0 else ctx.task.candidates[0].content

    def _revised(self, ctx: Context, draft: Draft, feedback: CheckResult) -> Draft:
        task = ctx.task
        self._lineage_revisions += 1
        was_correct = self.is_correct(task, draft)
        if not feedback.passed and not was_correct:
            fixed = bool(self.rng.random() < self.p_fix(ctx, feedback, self._lineage_revisions))
            return self._new(ctx, self._pick(task, fixed, avoid=draft.candidate))
        if was_correct:
            broken = bool(self.rng.random() < self.profile.break_prob)
            return self._new(ctx, self._pick(task, not broken) if broken else draft.candidate)
        # A wrong draft that passed its check: revising without a named fault rarely finds the problem.
        unprompted = self.profile.fix_base / 2
        if self._v2 is not None:
            unprompted = self._bounded_fix(ctx, unprompted, self._lineage_revisions)
        fixed = bool(self.rng.random() < unprompted)
        return self._new(ctx, self._pick(task, fixed, avoid=draft.candidate) if fixed else draft.candidate)

    def propose_tool_call(self, ctx: Context) -> ToolCall:
        call = self._proposed(ctx)
        self._meter("tool", ctx, _REPLY_ENCODER.encode({"name": call.name, "arguments": dict(call.args)}))
        return call

    def _proposed(self, ctx: Context) -> ToolCall:
        task = ctx.task
        p = self.profile
        if ctx.tool_history:
            last_call, last_res = ctx.tool_history[-1]
            if not last_res.ok and self.rng.random() < p.repeat_after_error_prob:
                return last_call
        wrong = list(self.wrong_tool_calls(task)) if self.wrong_tool_calls is not None else []
        if not task.tool_calls:
            # nothing to look up: a model asked for a tool still calls one; its result is useless
            return wrong[int(self.rng.integers(len(wrong)))] if wrong else ToolCall(name="", args={})
        done = {call.key() for call, res in ctx.tool_history if res.ok}
        pending = [c for c in task.tool_calls if c.key() not in done] or list(task.tool_calls)
        call = pending[0]
        u = self.rng.random()
        if u < p.tool_error_prob:
            return self._corrupt(call)
        if u < p.tool_error_prob + p.tool_wrong_prob and wrong:
            return wrong[int(self.rng.integers(len(wrong)))]
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
        """The verdict on ``draft``: drawn from the profile's rates the first time this content is judged in
        the episode; a later check of the same content repeats that verdict with probability
        ``selfcheck_repeat`` and otherwise draws afresh (the first verdict stays the one repeated)."""
        correct = self.is_correct(ctx.task, draft)
        p = self.profile
        first = self._verdicts.get(draft.content)
        if first is not None and self.rng.random() < p.selfcheck_repeat:
            passed = first
        else:
            passed = bool(self.rng.random() < (p.selfcheck_tpr if correct else p.selfcheck_fpr))
            self._verdicts.setdefault(draft.content, passed)
        feedback = "self-check: the answer looks right" if passed else "self-check: the answer may be wrong"
        self._meter("self_check", ctx, ("PASS " if passed else "FAIL ") + feedback, draft=draft.content)
        return CheckResult(passed=passed, feedback=feedback, specificity=0.1)

    def mean_confidence(self, ctx: Context, draft: Draft) -> float:
        """The mean stated confidence in ``draft``: ``confidence_wrong``, plus the correctness gap
        ``confidence_correct - confidence_wrong`` for a correct draft, plus ``confidence_evidence`` times
        (coverage - 1), minus ``confidence_difficulty`` times the task's difficulty."""
        p = self.profile
        mean = p.confidence_correct if self.is_correct(ctx.task, draft) else p.confidence_wrong
        return mean + p.confidence_evidence * (ctx.evidence_coverage() - 1.0) - p.confidence_difficulty * ctx.task.difficulty

    def confidence(self, ctx: Context, draft: Draft) -> float:
        value = float(min(1.0, max(0.0, self.rng.normal(self.mean_confidence(ctx, draft), self.profile.confidence_noise))))
        self._meter("confidence", ctx, f"{value:.2f}", draft=draft.content)
        return value
