"""Fit a domain's :class:`~harness_gym.workers.profile.WorkerProfile` from recorded real-model episodes.

Two steps:

1. :func:`collect_events` replays recorded episodes (an env whose worker answers from a replay cache) and
   turns every step into the events the simulated worker's parameters describe, grading every draft the
   model wrote with the domain's hidden grader to know whether it was correct: a draft with its evidence
   coverage and the task's difficulty; whether a DRAFT or REVISE reply was usable at all (an empty draft: the
   reply did not parse); a revision of a wrong draft after a failed check with the
   feedback's specificity (a fix attempt) or of a correct one (a possible break); a tool proposal on a task
   that needs tool calls: malformed, well-formed but not one of the task's calls (wrong), or neither, and
   whether it repeats a call that just failed; a stated confidence with the draft's correctness, the
   evidence coverage and the difficulty; a self-check verdict with the draft's correctness, and for a
   self-check of content already judged in the episode whether the verdict is the first one again.
2. :func:`fit_profile` fits each parameter to those events under the simulator's own model (a logistic
   regression for drafts, a clipped linear model for fixes, proportions, a linear model for the confidence
   with its residual standard deviation, and the repeat probability of self-checks by the method of
   moments: a verdict is the first one again with probability ``r + (1 - r) q``, ``q`` the chance a fresh
   draw agrees), gives a 95% bootstrap interval per parameter (resampling episodes; for proportions widened
   to the Wilson interval, for the draft regression to the Laplace interval and for the fix terms up to the
   Wilson bound of the observed fix rate, where the bootstrap collapses), and scores the fit by the held-out log-likelihood
   per event of the fitted profile against the default one (fit on the even-numbered episodes, score on the
   odd ones). A parameter without events keeps its default and is reported as not estimated. The linear
   fits (draft, fix, confidence) are ridge-regularised towards the default profile, so a fit on few events
   stays near it. The confidence fit ignores that the simulator clips confidences to [0, 1]: where a mean
   comes near a bound, the fitted value is biased towards the middle.

A ``-v2`` default (:class:`~harness_gym.workers.profile.WorkerProfileV2`) is fitted under the ``-v2`` worker's own
model and keeps the class. Of its own parameters, a recording fits two:

- ``fix_decay``, from the repairs of later rounds: each ``fix`` event carries its REVISE round on the draft lineage
  (usable revisions since the last DRAFT, as the simulator counts them). The fix terms are fitted to the round-1
  repairs (as below, on the ``-v2`` repair model: ``g * fix + (1 - g) * p_draft`` with the profile's
  ``fix_needs_evidence``), then the decay to the later rounds' repairs against what that model predicts for them
  (``fix_decay ** (round - 1)`` times it; least squares, ridge towards the default, over a grid of [0, 1]). Without a
  repair in round 2 or later, or without any repair that succeeded, it keeps the default;
- ``distractor_weight``, from the drafts: a fourth column of the draft regression, ``-log1p`` of the irrelevant
  items gathered (:meth:`~harness_gym.workers.simulated.SimulatedWorker.irrelevant_items`), kept at the default
  when that count never varies among the recorded drafts.

With ``task_ability_sd > 0`` the draft regression's coefficients are the marginal ones over the tasks' abilities;
the simulator adds each task's ability on top, so they are scaled up by ``sqrt(1 + pi * sd**2 / 8)`` (the logistic-
normal approximation) to give the same marginal rates. The repair terms are fitted as marginal rates with the
ability at its mean (0). Four parameters are not estimated from a recording and keep the default's values (reported
with no interval and the reason, :data:`NOT_IDENTIFIED`): ``task_ability_sd`` needs several independent episodes of
each task (a model sampled at temperature > 0, several seeds per task): a recording at temperature 0 with one seed
per task repeats a reply wherever the context repeats, and its tasks' successes confound difficulty with ability;
``fix_needs_evidence`` trades off against ``fix_evidence`` (both say how repair grows with the evidence held) and
would need many repairs at low coverage; ``closed_book_share`` and ``task_ability_seed`` describe the task set under
the simulator, not the model. ``benchmarks/fidelity.py`` measures what they produce against the published figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import numpy as np

from harness_gym.core.actions import Action
from harness_gym.core.tool_calls import validate_call
from harness_gym.workers.profile import PROFILE_VERSIONS, WorkerProfile, WorkerProfileV2, param_bounds
from harness_gym.workers.simulated import SimulatedWorker

EVENT_KINDS: tuple[str, ...] = ("reply", "draft", "fix", "break", "tool", "repeat", "confidence", "self_check",
                                 "self_check_again")
WIDTH: dict[str, int] = {"reply": 1, "draft": 4, "fix": 6, "break": 1, "tool": 2, "repeat": 1, "confidence": 4,
                         "self_check": 2, "self_check_again": 3}
"""columns of each event kind's rows"""


@dataclass
class Events:
    """Per-kind event rows of one or more episodes; ``episode`` lists say which episode each row came from.

    - ``reply``: (unusable,) for every DRAFT and REVISE reply; unusable: the step left an empty draft
    - ``draft``: (coverage, difficulty, correct, irrelevant items) for a usable DRAFT reply
    - ``fix``: (specificity, coverage, correct after, round, difficulty, irrelevant items) for a wrong draft revised
      after a failed check (usable revisions only, as are breaks); round: the usable REVISE replies since the last
      DRAFT, this one included
    - ``break``: (broken,) for a correct draft that was revised
    - ``tool``: (malformed, wrong) for every proposed tool call, on a task that needs tool calls, that does
      not resend the call that just failed; ``wrong``: well-formed but not one of the task's calls
    - ``repeat``: (repeated,) for a tool proposal right after a failed tool call
    - ``confidence``: (confidence, correct, coverage, difficulty)
    - ``self_check``: (passed, correct) for the first self-check of a content in the episode
    - ``self_check_again``: (same, correct, first passed) for a later self-check of the same content
    """

    rows: dict[str, list[tuple[float, ...]]] = field(default_factory=lambda: {k: [] for k in EVENT_KINDS})
    episode: dict[str, list[int]] = field(default_factory=lambda: {k: [] for k in EVENT_KINDS})

    def add(self, kind: str, episode: int, *row: float) -> None:
        self.rows[kind].append(tuple(float(x) for x in row))
        self.episode[kind].append(episode)

    def subset(self, episodes: Iterable[int]) -> Events:
        """The events of the given episodes (a multiset: an episode listed twice counts twice).

        :param episodes: episode numbers
        """
        out = Events()
        wanted = list(episodes)
        for kind in EVENT_KINDS:
            by_ep: dict[int, list[tuple[float, ...]]] = {}
            for ep, row in zip(self.episode[kind], self.rows[kind]):
                by_ep.setdefault(ep, []).append(row)
            for new_ep, ep in enumerate(wanted):
                for row in by_ep.get(ep, []):
                    out.add(kind, new_ep, *row)
        return out

    def counts(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.rows.items()}


def default_profile(env: Any) -> WorkerProfile:
    """The profile a fit to episodes of ``env`` starts from: the simulated worker's profile of its id and keywords
    (``profile=``: the registered ``"v2"`` of the ``-v2`` ids, the domain's ``-v1`` profile when none, or one given).

    :param env: a harness env made by ``gym.make`` (its ``spec.kwargs`` name the profile)
    """
    spec = env.spec.kwargs.get("profile") if getattr(env, "spec", None) is not None else None
    domain = env.unwrapped.domain
    if isinstance(spec, WorkerProfile):
        return spec
    if spec is None or spec in PROFILE_VERSIONS:
        return WorkerProfile.for_domain(domain.name, spec or "v1", domain.assets_dir)
    return WorkerProfile.load(spec)


def collect_events(env: Any, episodes: Sequence[dict[str, Any]], events: Events | None = None) -> Events:
    """Replay ``episodes`` in ``env`` and collect the calibration events of every step.

    :param env: a harness env (wrapped or not) whose worker reproduces the recorded episodes (a replay cache)
    :param episodes: dicts with ``task_id``, ``seed`` and ``actions`` (a recording manifest's episodes)
    :param events: events to add to (default: a new collection)
    """
    events = events if events is not None else Events()
    base = env.unwrapped
    domain = base.domain
    grades: dict[tuple[str, str], bool] = {}

    def correct(draft: Any) -> bool:
        key = (base.task.task_id, draft.content)
        if key not in grades:
            quality = float(domain.grade(base.task, draft, base.sandbox)) if draft.content else 0.0
            grades[key] = quality >= domain.success_threshold
        return grades[key]

    for n, ep in enumerate(episodes):
        env.reset(seed=int(ep["seed"]), options={"task_id": ep["task_id"]})
        ctx = base.context
        prev_action = -1
        verdicts: dict[str, bool] = {}  # first self-check verdict per content, as the simulator keeps them
        gold = {c.key() for c in base.task.tool_calls}
        lineage_round = 0  # usable REVISE replies since the last DRAFT, as the simulator counts a repair's round
        for act in ep["actions"]:
            act = Action(int(act))
            valid = bool(base.action_masks()[act])
            before = ctx.draft
            coverage = ctx.evidence_coverage()
            irrelevant = SimulatedWorker.irrelevant_items(ctx)
            spec = 0.5
            check_failed = False
            if before is not None and ctx.last_check is not None and ctx.checked_version == before.version:
                spec, check_failed = ctx.last_check.specificity, not ctx.last_check.passed
            elif before is not None and ctx.tool_history and not ctx.tool_history[-1][1].ok:
                check_failed = True  # a revision answering the draft's tool error
            last_tool_failed = bool(ctx.tool_history) and not ctx.tool_history[-1][1].ok
            last_call_key = ctx.tool_history[-1][0].key() if ctx.tool_history else ""
            _, _, term, trunc, _ = env.step(int(act))
            if valid and act == Action.DRAFT and ctx.draft is not None:
                ok, usable = correct(ctx.draft), bool(ctx.draft.content.strip())
                lineage_round = 0
                events.add("reply", n, not usable)
                if usable:
                    events.add("draft", n, coverage, ctx.task.difficulty, ok, irrelevant)
                events.add("confidence", n, base._state.confidence, ok, ctx.evidence_coverage(), ctx.task.difficulty)
            elif valid and act == Action.REVISE and ctx.draft is not None and before is not None:
                was, now, usable = correct(before), correct(ctx.draft), bool(ctx.draft.content.strip())
                events.add("reply", n, not usable)
                lineage_round += usable
                if usable and was:
                    events.add("break", n, not now)
                elif usable and check_failed:
                    events.add("fix", n, spec, coverage, now, lineage_round, ctx.task.difficulty, irrelevant)
                events.add("confidence", n, base._state.confidence, now, ctx.evidence_coverage(), ctx.task.difficulty)
            elif valid and act == Action.TOOL:
                call = ctx.tool_history[-1][0]
                repeated = last_tool_failed and call.key() == last_call_key
                if last_tool_failed and prev_action == Action.TOOL:
                    events.add("repeat", n, repeated)
                # a resent failed call says nothing about how often fresh calls are malformed; on a task
                # without tool calls every call is useless, which the simulator models without these rates
                if not repeated and gold:
                    malformed = bool(validate_call(domain.tools, call))
                    events.add("tool", n, malformed, not malformed and call.key() not in gold)
            elif valid and act == Action.CHECK and ctx.draft is not None and domain.check(ctx.task, ctx.draft, base.sandbox) is None:
                passed, content = bool(ctx.last_check.passed), ctx.draft.content
                if content in verdicts:
                    events.add("self_check_again", n, passed == verdicts[content], correct(ctx.draft), verdicts[content])
                else:
                    verdicts[content] = passed
                    events.add("self_check", n, passed, correct(ctx.draft))
            prev_action = int(act)
            if term or trunc:
                break
    return events


# ----- fitting -------------------------------------------------------------------------------------------
def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _fit_logistic(x: np.ndarray, y: np.ndarray, prior: np.ndarray, l2: float = 0.5,
                  offset: np.ndarray | float = 0.0) -> np.ndarray:
    """MAP logistic regression (Gaussian prior of precision ``l2`` around ``prior``) by Newton's method;
    ``offset`` is added to the linear predictor (the terms held at their defaults)."""
    w = prior.astype(float).copy()
    for _ in range(50):
        p = _sigmoid(x @ w + offset)
        grad = x.T @ (y - p) - l2 * (w - prior)
        hess = -(x.T * (p * (1 - p))) @ x - l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        largest = float(np.max(np.abs(step)))
        if largest > 1.0:  # damped Newton: near-separable data would otherwise overshoot
            step = step / largest
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w


def _identified(x: np.ndarray, levels: Sequence[int]) -> np.ndarray:
    """The columns of a design matrix the data can pin down: a level (intercept or indicator) column with any
    non-zero entry, a slope column that varies. A slope that never varies is confounded with the levels, so
    it stays at its default rather than trading off against them."""
    free = np.ptp(x, axis=0) > 1e-12
    for j in levels:
        free[j] = bool(np.any(x[:, j]))
    return free


def _ridge(x: np.ndarray, y: np.ndarray, prior: np.ndarray, free: np.ndarray, lam: float) -> np.ndarray:
    """Ridge regression towards ``prior`` over the ``free`` columns, the others held at ``prior``."""
    coef = prior.astype(float).copy()
    if free.any():
        xf = x[:, free]
        target = y - x[:, ~free] @ prior[~free]
        coef[free] = np.linalg.solve(xf.T @ xf + lam * np.eye(int(free.sum())), xf.T @ target + lam * prior[free])
    return coef


def _is_v2(profile: WorkerProfile) -> bool:
    """Whether ``profile`` is fitted and scored under the ``-v2`` worker's model (a :class:`WorkerProfileV2`)."""
    return isinstance(profile, WorkerProfileV2)


def _ability_scale(profile: WorkerProfile) -> float:
    """How much larger a logistic model's coefficients are given each task's ability than over the tasks
    (``sqrt(1 + pi * sd**2 / 8)``, the logistic-normal approximation; 1 without a latent ability)."""
    sd = getattr(profile, "task_ability_sd", 0.0)
    return math.sqrt(1.0 + math.pi * sd * sd / 8.0)


def _draft_design(events: Events, default: WorkerProfile) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The draft regression's design (1, coverage, difficulty, and under a ``-v2`` default log1p(irrelevant items)),
    outcomes, prior (the default's coefficients) and identified columns."""
    d = np.asarray(events.rows["draft"], dtype=float).reshape(-1, WIDTH["draft"])
    columns = [np.ones(len(d)), d[:, 0], d[:, 1]]
    prior = [default.draft_logit_base, default.evidence_weight, -default.difficulty_weight]
    if _is_v2(default):
        columns.append(np.log1p(d[:, 3]))
        prior.append(-default.distractor_weight)
    x = np.column_stack(columns)
    return x, d[:, 2], np.array(prior), _identified(x, levels=(0,))


def _fit_draft(events: Events, default: WorkerProfile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The draft regression's coefficients given a task's ability (non-identified ones at the default), its free
    columns and their covariance (the inverse negative Hessian). The regression itself is over the tasks (their
    abilities unseen), so it is fitted on the marginal scale and scaled by :func:`_ability_scale`."""
    x, y, prior, free = _draft_design(events, default)
    scale = _ability_scale(default)
    w = prior / scale
    offset = x[:, ~free] @ w[~free]
    w[free] = _fit_logistic(x[:, free], y, w[free], offset=offset)
    p = _sigmoid(x @ w)
    xf = x[:, free]
    cov = np.linalg.inv((xf.T * (p * (1 - p))) @ xf + 0.5 * np.eye(int(free.sum())))
    return w * scale, free, cov * scale * scale


DRAFT_PARAMS = ("draft_logit_base", "evidence_weight", "difficulty_weight", "distractor_weight")
"""the draft regression's parameters, in its columns' order (``distractor_weight`` under a ``-v2`` default only)"""
DRAFT_SIGNS = (1.0, 1.0, -1.0, -1.0)
"""each parameter's sign in the regression (difficulty and irrelevant items remove log-odds)"""
FIX_PARAMS = ("fix_base", "fix_specificity", "fix_evidence")
CONFIDENCE_PARAMS = ("confidence_correct", "confidence_wrong", "confidence_evidence", "confidence_difficulty")
DECAY_GRID = np.linspace(0.0, 1.0, 201)
"""the values of ``fix_decay`` its least-squares fit chooses from"""


def _draft_logit(profile: WorkerProfile, coverage: np.ndarray, difficulty: np.ndarray,
                 irrelevant: np.ndarray) -> np.ndarray:
    """The log-odds of a correct draft under ``profile`` given a task ability of 0 (its mean); over the tasks, the
    draft succeeds with about ``sigmoid(logit / _ability_scale(profile))``."""
    logit = profile.draft_logit_base + profile.evidence_weight * coverage - profile.difficulty_weight * difficulty
    if _is_v2(profile):
        logit = logit - profile.distractor_weight * np.log1p(irrelevant)
    return logit


def _fix_design(f: np.ndarray, profile: WorkerProfile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For ``fix`` rows: the covariates (1, specificity, coverage) of the fix terms, the weight ``g`` of the feedback
    in each repair and the chance ``p_draft`` of a fresh draft there, so that round 1 succeeds with
    ``g * (x @ fix terms) + (1 - g) * p_draft`` (``-v2``: ``g = 1 - fix_needs_evidence * (1 - coverage)``; ``-v1``:
    ``g = 1``)."""
    x = np.column_stack([np.ones(len(f)), f[:, 0], f[:, 1]])
    if not _is_v2(profile):
        return x, np.ones(len(f)), np.zeros(len(f))
    g = 1.0 - profile.fix_needs_evidence * (1.0 - f[:, 1])
    return x, g, _sigmoid(_draft_logit(profile, f[:, 1], f[:, 4], f[:, 5]) / _ability_scale(profile))


def _fit_fix_terms(x: np.ndarray, design: np.ndarray, target: np.ndarray,
                   default: WorkerProfile) -> tuple[np.ndarray, np.ndarray]:
    """The fix terms by ridge least squares (towards the default) of ``target`` on ``design`` (the covariates ``x``,
    weighted per repair by how far it rests on them), the columns the covariates identify; and which are fitted."""
    prior = np.array([default.fix_base, default.fix_specificity, default.fix_evidence])
    free = _identified(x, levels=(0,))
    coef = _ridge(design, target, prior, free, lam=1.0)
    mean = design.mean(axis=0)
    held = ~free & (mean > 0)
    if coef[0] < 0 and held.any():
        # a slope held at its default (its covariate never varied) claims more of the fix rate than was
        # seen: the base rate cannot go below 0, so the held slopes shrink until the rate at the observed
        # covariates is the fitted one, and count as fitted (jointly with the base rate)
        claimed = float(coef[held] @ mean[held])
        scale = max(0.0, (claimed + coef[0] * mean[0]) / claimed) if claimed > 0 else 0.0
        coef[held] *= scale
        coef[0] = 0.0
        free = free | held
    return coef, free


def _fit_fix(f: np.ndarray, default: WorkerProfile, draft_est: dict[str, float]) -> dict[str, float]:
    """The fix terms (and under a ``-v2`` default ``fix_decay``) from ``fix`` rows.

    ``-v1``: least squares of the success indicator on (1, specificity, coverage), every round pooled (the
    simulator's linear model). ``-v2``: the fix terms from the round-1 repairs under the ``-v2`` repair model (the
    draft terms fitted so far give ``p_draft``), then ``fix_decay`` from the later rounds against that model's
    round-1 prediction for them, by least squares over :data:`DECAY_GRID` with a ridge penalty towards the default.
    """
    est: dict[str, float] = {}
    if not _is_v2(default):
        x = np.column_stack([np.ones(len(f)), f[:, 0], f[:, 1]])
        coef, free = _fit_fix_terms(x, x, f[:, 2], default)
        return {name: float(np.clip(v, 0, 1)) for name, v, ok in zip(FIX_PARAMS, coef, free) if ok}
    current = replace(default, **draft_est)
    x, g, p_draft = _fix_design(f, current)
    first = f[:, 3] <= 1
    coef = np.array([default.fix_base, default.fix_specificity, default.fix_evidence])
    if first.any():
        fitted, free = _fit_fix_terms(x[first], g[first, None] * x[first], f[first, 2] - (1 - g[first]) * p_draft[first],
                                      default)
        coef = np.where(free, np.clip(fitted, 0, 1), coef)
        est.update({name: float(v) for name, v, ok in zip(FIX_PARAMS, coef, free) if ok})
    later = ~first
    if later.any() and f[:, 2].any():  # with no repair that succeeded, nothing says how success changes by round
        round_one = np.clip(g[later] * np.clip(x[later] @ coef, 0, 1) + (1 - g[later]) * p_draft[later], 0, 1)
        if round_one.max() > 1e-9:  # a decay of what is never predicted to succeed says nothing
            predicted = DECAY_GRID[:, None] ** (f[later, 3] - 1)[None, :] * round_one[None, :]
            loss = ((f[later, 2][None, :] - predicted) ** 2).sum(axis=1) + (DECAY_GRID - default.fix_decay) ** 2
            est["fix_decay"] = float(DECAY_GRID[int(np.argmin(loss))])
    return est


def _draft_probs(rows: np.ndarray, profile: WorkerProfile) -> np.ndarray:
    """The chance of each ``draft`` row's success under ``profile``, over the tasks' abilities."""
    logit = _draft_logit(profile, rows[:, 0], rows[:, 1], rows[:, 3])
    return _sigmoid(logit / _ability_scale(profile))


def _fix_probs(rows: np.ndarray, profile: WorkerProfile) -> np.ndarray:
    """The chance of each ``fix`` row's success under ``profile``: the fix terms, clipped to [0, 1]; under ``-v2``
    mixed with a fresh draft's chance as far as the evidence is missing and decayed by the round (the task's ability
    at its mean)."""
    x, g, p_draft = _fix_design(rows, profile)
    terms = np.array([profile.fix_base, profile.fix_specificity, profile.fix_evidence])
    fix = np.clip(x @ terms, 0.0, 1.0)
    if not _is_v2(profile):
        return fix
    return np.clip(g * fix + (1 - g) * p_draft, 0.0, 1.0) * profile.fix_decay ** (rows[:, 3] - 1)


def _estimate(events: Events, default: WorkerProfile) -> dict[str, float]:
    """Point estimates of the parameters that have events (others are left out)."""
    est: dict[str, float] = {}
    rows = {k: np.asarray(v, dtype=float).reshape(len(v), WIDTH[k]) for k, v in events.rows.items()}
    if len(rows["draft"]):
        w, free, _ = _fit_draft(events, default)
        est.update({name: float(sign * v) for name, sign, v, ok in zip(DRAFT_PARAMS, DRAFT_SIGNS, w, free) if ok})
    if len(rows["fix"]):
        est.update(_fit_fix(rows["fix"], default, est))
    for kind, name in (("reply", "unusable_reply_prob"), ("break", "break_prob"), ("tool", "tool_error_prob"),
                       ("repeat", "repeat_after_error_prob")):
        if len(rows[kind]):
            est[name] = float(rows[kind][:, 0].mean())
    if len(rows["tool"]):
        est["tool_wrong_prob"] = float(rows["tool"][:, 1].mean())
    c = rows["confidence"]
    if len(c):
        # mean = correct * confidence_correct + (1 - correct) * confidence_wrong
        #        + confidence_evidence * (coverage - 1) - confidence_difficulty * difficulty
        x = np.column_stack([c[:, 1], 1 - c[:, 1], c[:, 2] - 1, -c[:, 3]])
        prior = np.array([default.confidence_correct, default.confidence_wrong, default.confidence_evidence,
                          default.confidence_difficulty])
        free = _identified(x, levels=(0, 1))
        coef = _ridge(x, c[:, 0], prior, free, lam=0.1)
        est.update({name: float(v) for name, v, ok in zip(CONFIDENCE_PARAMS, coef, free) if ok})
        if len(c) >= 5:
            resid = c[:, 0] - x @ coef
            est["confidence_noise"] = float(max(0.01, min(1.0, resid.std(ddof=int(free.sum())))))
    s = rows["self_check"]
    if len(s):
        good, bad = s[s[:, 1] == 1, 0], s[s[:, 1] == 0, 0]
        if len(good):
            est["selfcheck_tpr"] = float(good.mean())
        if len(bad):
            est["selfcheck_fpr"] = float(bad.mean())
    again = rows["self_check_again"]
    if len(again):
        tpr = est.get("selfcheck_tpr", default.selfcheck_tpr)
        fpr = est.get("selfcheck_fpr", default.selfcheck_fpr)
        rate = np.where(again[:, 1] == 1, tpr, fpr)
        agree = np.where(again[:, 2] == 1, rate, 1 - rate)  # q: a fresh draw gives the first verdict again
        room = float(np.mean(1 - agree))
        if room > 1e-9:
            est["selfcheck_repeat"] = float(np.clip(np.mean(again[:, 0] - agree) / room, 0.0, 1.0))
    return est


def log_likelihood(events: Events, profile: WorkerProfile) -> tuple[float, int]:
    """Total log-likelihood of ``events`` under ``profile``'s model, and the number of events scored.

    Probabilities are clipped to [0.01, 0.99] and confidences scored as a normal density of the profile's
    mean and noise, so one surprising event cannot give minus infinity. Drafts and repairs are scored at their
    chances over the tasks (:func:`_draft_probs`, :func:`_fix_probs`), as the fit reads them.

    :param events: the events
    :param profile: the profile to score
    """
    p = profile
    total, n = 0.0, 0

    def bern(prob: float, outcome: float) -> float:
        prob = min(0.99, max(0.01, prob))
        return math.log(prob if outcome else 1.0 - prob)

    for kind, probs in (("draft", _draft_probs), ("fix", _fix_probs)):
        rows = np.asarray(events.rows[kind], dtype=float).reshape(-1, WIDTH[kind])
        for prob, ok in zip(probs(rows, p), rows[:, 2]):
            total += bern(float(prob), ok)
            n += 1
    for kind, prob in (("reply", p.unusable_reply_prob), ("break", p.break_prob), ("repeat", p.repeat_after_error_prob)):
        for (hit,) in events.rows[kind]:
            total += bern(prob, hit)
            n += 1
    for malformed, wrong in events.rows["tool"]:
        prob = p.tool_error_prob if malformed else p.tool_wrong_prob if wrong else 1 - p.tool_error_prob - p.tool_wrong_prob
        total += math.log(min(0.99, max(0.01, prob)))
        n += 1
    for conf, ok, cov, diff in events.rows["confidence"]:
        mean = ((p.confidence_correct if ok else p.confidence_wrong) + p.confidence_evidence * (cov - 1)
                - p.confidence_difficulty * diff)
        sd = max(p.confidence_noise, 0.01)
        total += -0.5 * ((conf - mean) / sd) ** 2 - math.log(sd * math.sqrt(2 * math.pi))
        n += 1
    for passed, ok in events.rows["self_check"]:
        total += bern(p.selfcheck_tpr if ok else p.selfcheck_fpr, passed)
        n += 1
    for same, ok, first in events.rows["self_check_again"]:
        rate = p.selfcheck_tpr if ok else p.selfcheck_fpr
        agree = rate if first else 1 - rate
        total += bern(p.selfcheck_repeat + (1 - p.selfcheck_repeat) * agree, same)
        n += 1
    return total, n


NOT_IDENTIFIED: dict[str, str] = {
    "task_ability_sd": "a recording cannot identify it: it needs several independent episodes of each task (temperature "
                       "> 0, several seeds per task), and at temperature 0 with one seed per task a task's successes "
                       "confound its difficulty with its ability",
    "task_ability_seed": "a draw of the simulator's task set, not a property of the model",
    "fix_needs_evidence": "a recording cannot identify it apart from fix_evidence (both say how repair grows with the "
                          "evidence held) without many repairs at low evidence coverage",
    "closed_book_share": "which tasks the model knows closed-book is a property of the task set under the simulator "
                         "(fixed by task_ability_seed); the draft terms absorb the recorded closed-book successes",
}
"""The ``-v2`` parameters :func:`fit_profile` never estimates, and why (they keep the default's value)."""
NO_EVENTS: dict[str, str] = {
    "fix_decay": "no repair of a failed draft in round 2 or later of a draft lineage, or no repair that succeeded",
    "distractor_weight": "the irrelevant items gathered never varied among the drafts",
}
"""Why a ``-v2`` parameter that can be fitted was not, where the reason is more than "no events"."""


def not_estimated_reason(name: str) -> str:
    """Why ``fit_profile`` left the parameter ``name`` at the default (for a parameter its fit reports with no
    interval): :data:`NOT_IDENTIFIED`, :data:`NO_EVENTS`, else no event of its kind or a covariate that never
    varied."""
    return NOT_IDENTIFIED.get(name) or NO_EVENTS.get(name) or "no events, or its covariate never varied"


@dataclass(frozen=True)
class ProfileFit:
    """A fitted profile with its uncertainty and quality.

    :param profile: the fitted profile (defaults where a parameter had no events)
    :param default: the profile the fit started from
    :param ci95: per parameter, the 95% bootstrap interval, or ``None`` when it was not estimated
    :param events: events per kind
    :param heldout_loglik: mean held-out log-likelihood per event of the fitted profile
    :param heldout_loglik_default: the same for the default profile
    :param heldout_events: held-out events scored
    """

    profile: WorkerProfile
    default: WorkerProfile
    ci95: dict[str, tuple[float, float] | None]
    events: dict[str, int]
    heldout_loglik: float
    heldout_loglik_default: float
    heldout_events: int

    def to_json(self, domain: str, source: str) -> dict[str, Any]:
        """The profile file (``{"domain", "params", "rationale"}``, loadable by :meth:`WorkerProfile.load`)
        with the fit's intervals and quality under ``"fit"``.

        :param domain: the domain name
        :param source: what the events were recorded from (model, episodes), for the rationale
        """
        params = asdict(self.profile)
        rationale = {}
        for name in params:
            ci = self.ci95[name]
            rationale[name] = (f"fitted to {source}: 95% bootstrap interval [{ci[0]:.3f}, {ci[1]:.3f}]" if ci
                               else f"not estimated from {source} ({not_estimated_reason(name)}); the default "
                               "profile's value")
        return {"domain": domain, "params": params, "rationale": rationale,
                "fit": {"ci95": {k: list(v) if v else None for k, v in self.ci95.items()}, "events": self.events,
                        "heldout_loglik_per_event": self.heldout_loglik,
                        "heldout_loglik_per_event_default": self.heldout_loglik_default,
                        "heldout_events": self.heldout_events}}


def fit_profile(events: Events, default: WorkerProfile, *, n_boot: int = 200, seed: int = 0) -> ProfileFit:
    """Fit a profile to ``events``, with bootstrap intervals and a held-out score.

    :param events: events from :func:`collect_events`
    :param default: the starting profile (its values stay where there are no events; it is also the
        prior of the draft and fix regressions, which keeps a fit on few events near it)
    :param n_boot: bootstrap resamples (of whole episodes)
    :param seed: seed of the resampling
    """
    est = _estimate(events, default)
    profile = _clip(replace(default, **est))
    episodes = sorted({ep for eps in events.episode.values() for ep in eps})
    rng = np.random.default_rng(seed)
    samples: dict[str, list[float]] = {name: [] for name in est}
    for _ in range(n_boot if episodes else 0):
        boot = events.subset(rng.choice(episodes, size=len(episodes), replace=True).tolist())
        for name, value in _estimate(boot, default).items():
            if name in samples:
                samples[name].append(value)
    ci95: dict[str, tuple[float, float] | None] = {}
    for f in fields(default):
        vals = samples.get(f.name, [])
        ci95[f.name] = (float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5))) if vals else None
    for name, (kind, outcome, column, value) in _PROPORTIONS.items():
        rows = [r[outcome] for r in events.rows[kind] if column is None or r[column] == value]
        if rows and ci95[name] is not None:
            # a bootstrap interval collapses when every event agrees (4 failures of 4 give [0, 0]); the
            # Wilson score interval does not, so the wider of the two is reported
            lo, hi = _wilson(sum(rows), len(rows))
            ci95[name] = (min(lo, ci95[name][0]), max(hi, ci95[name][1]))
    fix_rows = np.asarray(events.rows["fix"], dtype=float).reshape(-1, WIDTH["fix"])
    first = fix_rows[:, 3] <= 1 if _is_v2(default) else np.ones(len(fix_rows), dtype=bool)
    if first.any():
        # each fix term alone can reach the rate of fixes seen (round 1's under -v2); the Wilson interval of that
        # rate bounds them where every resample agrees (12 failed fixes of 12 give [0, 0] for all three)
        # (and with no fix seen, each term may be 0: the ridge prior alone keeps the estimate above it)
        lo, hi = _wilson(float(fix_rows[first, 2].sum()), int(first.sum()))
        for name in ("fix_base", "fix_specificity", "fix_evidence"):
            if ci95[name] is not None:
                ci95[name] = (0.0 if lo == 0.0 else ci95[name][0], max(hi, ci95[name][1]))
    if ci95.get("fix_decay") is not None:
        # the decay is the later rounds' repair rate over what round 1's model predicts for them: the Wilson
        # interval of that rate, as a decay at the rounds' mean distance from round 1, bounds it where the
        # resamples agree (every later repair failed: each resample fits the prior-bound decay)
        later = fix_rows[~first]
        predicted = float(_fix_probs(later, replace(profile, fix_decay=1.0)).mean())
        if predicted > 0:
            steps = float((later[:, 3] - 1).mean())
            lo, hi = _wilson(float(later[:, 2].sum()), len(later))
            bound = [min(1.0, (w / predicted) ** (1 / steps)) for w in (lo, hi)]
            ci95["fix_decay"] = (min(bound[0], ci95["fix_decay"][0]), max(bound[1], ci95["fix_decay"][1]))
    for name, (lo, hi) in _laplace_draft(events, default).items():
        # the same for the draft regression: when every draft failed, each resample fits the same prior-bound
        # estimate; the Laplace interval of the MAP fit (its posterior curvature) does not collapse
        if ci95[name] is not None:
            ci95[name] = (min(lo, ci95[name][0]), max(hi, ci95[name][1]))
    for name, ci in ci95.items():  # an interval says where the parameter may lie: within its valid range
        if ci is not None:
            low, high = param_bounds(name)
            ci95[name] = (max(low, ci[0]), min(high, ci[1]))
    train = events.subset([e for e in episodes if e % 2 == 0])
    held = events.subset([e for e in episodes if e % 2 == 1])
    fitted_train = _clip(replace(default, **_estimate(train, default)))
    ll_fit, n_held = log_likelihood(held, fitted_train)
    ll_def, _ = log_likelihood(held, default)
    return ProfileFit(profile=profile, default=default, ci95=ci95, events=events.counts(),
                      heldout_loglik=ll_fit / n_held if n_held else float("nan"),
                      heldout_loglik_default=ll_def / n_held if n_held else float("nan"), heldout_events=n_held)


_PROPORTIONS: dict[str, tuple[str, int, int | None, float]] = {
    "unusable_reply_prob": ("reply", 0, None, 0.0), "break_prob": ("break", 0, None, 0.0),
    "tool_error_prob": ("tool", 0, None, 0.0),
    "tool_wrong_prob": ("tool", 1, None, 0.0), "repeat_after_error_prob": ("repeat", 0, None, 0.0),
    "selfcheck_tpr": ("self_check", 0, 1, 1.0), "selfcheck_fpr": ("self_check", 0, 1, 0.0)}
"""Parameters that are plain proportions: (event kind, column of the outcome, column of the condition or
None, its value)."""


def _laplace_draft(events: Events, default: WorkerProfile, z: float = 1.96) -> dict[str, tuple[float, float]]:
    """95% Laplace intervals of the draft regression's identified parameters: the MAP estimate plus or minus
    ``z`` posterior standard deviations from the inverse of the negative Hessian at the MAP."""
    if not events.rows["draft"]:
        return {}
    w, free, cov = _fit_draft(events, default)
    sd = np.zeros(len(w))
    sd[free] = np.sqrt(np.diag(cov))
    return {name: (float(sign * w[j] - z * sd[j]), float(sign * w[j] + z * sd[j]))
            for j, (name, sign) in enumerate(zip(DRAFT_PARAMS, DRAFT_SIGNS)) if j < len(w) and free[j]}


def _wilson(hits: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``hits / n``."""
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # at 0 or n hits the bound is exactly 0 or 1; the subtraction above can leave a rounding residue there
    low = 0.0 if hits <= 0 else max(0.0, centre - half)
    high = 1.0 if hits >= n else min(1.0, centre + half)
    return low, high


def _clip(profile: WorkerProfile) -> WorkerProfile:
    """Keep probabilities in [0, 1], log-odds within :data:`~harness_gym.workers.profile.MAX_LOG_ODDS` and the
    tool-call outcomes a distribution (the profile's own validity rules): where ``tool_error_prob`` leaves ``tool_wrong_prob`` less room (a default kept beside a fitted
    rate), it shrinks to ``1 - tool_error_prob``."""
    values = asdict(profile)
    for name, value in values.items():
        if name != "task_ability_seed":
            low, high = param_bounds(name)
            values[name] = float(min(high, max(low, value)))
    values["tool_wrong_prob"] = min(values["tool_wrong_prob"], 1.0 - values["tool_error_prob"])
    return type(profile)(**values)
