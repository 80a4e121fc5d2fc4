"""fit_profile recovers the parameters of a simulated worker from its own episodes."""

from __future__ import annotations

from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest

from harness_gym.core.actions import Action
from harness_gym.workers import WorkerProfile
from harness_gym.workers.calibrate import Events, collect_events, fit_profile, log_likelihood

TRUE = replace(WorkerProfile.for_domain("research_qa"), draft_logit_base=1.5, tool_error_prob=0.3, tool_wrong_prob=0.25,
               repeat_after_error_prob=0.6, break_prob=0.3, confidence_correct=0.85, confidence_wrong=0.45,
               # means stay inside (0, 1): the linear fit does not model the simulator's clipping of confidences
               confidence_evidence=0.2, confidence_difficulty=0.1, confidence_noise=0.05,
               selfcheck_tpr=0.9, selfcheck_fpr=0.2, selfcheck_repeat=0.5, unusable_reply_prob=0.25)


def masked_random_episodes(env, n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    episodes = []
    tasks = env.unwrapped.domain.tasks("train")
    for i in range(n):
        task_id = tasks[i % len(tasks)].task_id
        env.reset(seed=i, options={"task_id": task_id})
        actions, done = [], False
        while not done:
            mask = env.unwrapped.action_masks()
            act = int(rng.choice(np.flatnonzero(mask)))
            actions.append(act)
            _, _, term, trunc, _ = env.step(act)
            done = term or trunc
        episodes.append({"task_id": task_id, "seed": i, "actions": actions})
    return episodes


@pytest.fixture(scope="module")
def fitted():
    env = gym.make("HarnessResearchQA-v1", profile=TRUE)
    episodes = masked_random_episodes(env, 300)
    events = collect_events(env, episodes)
    env.close()
    default = WorkerProfile.for_domain("research_qa")
    return events, fit_profile(events, default, n_boot=100)


def test_every_event_kind_is_collected(fitted):
    events, fit = fitted
    counts = events.counts()
    assert all(counts[k] > 20 for k in ("reply", "draft", "tool", "confidence", "self_check")), counts
    assert counts["repeat"] > 10 and counts["break"] > 5 and counts["fix"] > 0, counts
    assert counts["self_check_again"] > 10, counts
    assert fit.events == counts


FITTED = ["tool_error_prob", "tool_wrong_prob", "repeat_after_error_prob", "confidence_correct", "confidence_wrong",
          "confidence_evidence", "confidence_difficulty", "confidence_noise", "selfcheck_tpr", "selfcheck_fpr",
          "selfcheck_repeat", "break_prob", "unusable_reply_prob"]


@pytest.mark.parametrize("name", FITTED)
def test_the_estimate_is_within_its_sampling_error_of_the_true_value(fitted, name):
    """Within 3.5 standard errors (the 95% interval's half-width / 1.96): a biased estimator fails this on
    300 episodes, an unlucky draw of a sound one almost never (p < 0.001 per parameter)."""
    _, fit = fitted
    lo, hi = fit.ci95[name]
    se = max((hi - lo) / (2 * 1.96), 1e-3)
    estimate, true = getattr(fit.profile, name), getattr(TRUE, name)
    assert abs(estimate - true) < 3.5 * se, (name, estimate, true, (lo, hi))


def test_most_intervals_cover_the_true_value(fitted):
    """95% intervals: about 12 of 13 should cover. If each missed with probability 0.05, four or more misses
    would happen with probability 0.005, so fewer than 10 covered means the intervals are too narrow."""
    _, fit = fitted
    covered = [n for n in FITTED if fit.ci95[n][0] <= getattr(TRUE, n) <= fit.ci95[n][1]]
    assert len(covered) >= 10, sorted(set(FITTED) - set(covered))


def test_the_fit_beats_the_default_profile_on_held_out_episodes(fitted):
    _, fit = fitted
    assert fit.heldout_events > 50
    assert fit.heldout_loglik > fit.heldout_loglik_default + 0.05


def test_profile_json_loads_back(fitted, tmp_path):
    import json

    _, fit = fitted
    path = tmp_path / "research_qa.json"
    path.write_text(json.dumps(fit.to_json("research_qa", "a simulated worker")))
    assert WorkerProfile.load(path) == fit.profile


def test_no_events_keeps_the_default():
    default = WorkerProfile()
    fit = fit_profile(Events(), default, n_boot=10)
    assert fit.profile == default and all(ci is None for ci in fit.ci95.values())
    assert log_likelihood(Events(), default) == (0.0, 0)


@pytest.mark.parametrize("n", [10, 11])
def test_intervals_do_not_collapse_when_every_draft_and_fix_failed(n):
    """Ten (eleven) failed drafts and fixes: every bootstrap resample is the same data, but the intervals
    must still say how little so few events pin down, and a rate with no success seen may be 0."""
    events = Events()
    for ep in range(n):
        events.add("draft", ep, ep / n, 0.2 + ep / (2 * n), False, 0)
        events.add("fix", ep, ep % 2, ep / n, False, 1, 0.5, 0)
    default = WorkerProfile()
    fit = fit_profile(events, default, n_boot=50)
    lo, hi = fit.ci95["draft_logit_base"]
    assert hi - lo > 1.0 and lo < fit.profile.draft_logit_base < hi
    for name in ("fix_base", "fix_specificity", "fix_evidence"):
        lo, hi = fit.ci95[name]
        assert lo == 0.0 and hi >= 0.2, (name, lo, hi)


def test_a_wilson_interval_reaches_0_and_1_exactly_at_the_extremes():
    """The fix terms' lower bound is 0 where no fix was seen only if the Wilson bound is exactly 0 there."""
    from harness_gym.workers.calibrate import _wilson

    for n in range(1, 200):
        assert _wilson(0, n)[0] == 0.0 and _wilson(n, n)[1] == 1.0, n
        low, high = _wilson(n // 2, n)
        assert 0.0 < low < high < 1.0 or n == 1, n


def test_a_slope_the_data_cannot_separate_from_the_level_is_not_estimated():
    """Every fix came after feedback of the same specificity: the specificity slope is confounded with the
    base rate, so it keeps its default and only the base rate is fitted."""
    events = Events()
    for ep in range(40):
        events.add("fix", ep, 0.5, ep / 40, ep % 4 == 0, 1, 0.5, 0)
    default = WorkerProfile()
    fit = fit_profile(events, default, n_boot=50)
    assert fit.ci95["fix_specificity"] is None and fit.profile.fix_specificity == default.fix_specificity
    assert fit.ci95["fix_base"] is not None and fit.ci95["fix_evidence"] is not None


def test_a_held_slope_cannot_claim_more_fixes_than_were_seen():
    """Forty failed fixes, all after feedback of specificity 1: holding the specificity slope at its default
    (0.45) would make the fitted simulator fix 45% of drafts; it shrinks so that the fitted rate is ~0."""
    events = Events()
    for ep in range(40):
        events.add("fix", ep, 1.0, ep / 40, False, 1, 0.5, 0)
    fit = fit_profile(events, WorkerProfile(), n_boot=20)
    p = fit.profile
    assert p.fix_base + p.fix_specificity * 1.0 + p.fix_evidence * 0.5 < 0.05, p


# ----- the -v2 worker's parameters -------------------------------------------------------------------------
V2_DEFAULT = replace(WorkerProfile.for_domain("plan", "v2"), task_ability_sd=0.0)
"""Plan's -v2 profile without task-persistent failures: later repair rounds are then not selected for harder tasks,
so the decay read from them is the worker's own (with an ability spread it reads low, as the module says)."""
V2_TRUE = replace(V2_DEFAULT, fix_decay=0.4, fix_base=0.5, distractor_weight=0.8)


def gather_then_repair_episodes(env, n: int, revisions: int, seed: int = 0) -> list[dict]:
    """Episodes that gather a random number of items (so the irrelevant ones vary), draft, then check and revise
    ``revisions`` times before a last check and SUBMIT."""
    rng = np.random.default_rng(seed)
    tasks = env.unwrapped.domain.tasks("train")
    episodes = []
    for i in range(n):
        task_id = tasks[i % len(tasks)].task_id
        actions = ([Action.OBSERVE] + [Action.RETRIEVE] * int(rng.integers(0, 5)) + [Action.TOOL] * int(rng.integers(0, 3))
                   + [Action.DRAFT] + [Action.CHECK, Action.REVISE] * revisions + [Action.CHECK, Action.SUBMIT])
        env.reset(seed=i, options={"task_id": task_id})
        played = []
        for act in actions:
            played.append(int(act))
            _, _, term, trunc, _ = env.step(int(act))
            if term or trunc:
                break
        episodes.append({"task_id": task_id, "seed": i, "actions": played})
    return episodes


@pytest.fixture(scope="module")
def fitted_v2():
    env = gym.make("HarnessPlan-v2", profile=V2_TRUE)
    events = collect_events(env, gather_then_repair_episodes(env, 300, revisions=3))
    env.close()
    return events, fit_profile(events, V2_DEFAULT, n_boot=100)


def test_repairs_carry_their_round_on_the_draft_lineage(fitted_v2):
    """Three CHECK -> REVISE rounds after each DRAFT: fix events of rounds 1 to 3, succeeding less in later rounds
    (the true decay is 0.4)."""
    events, _ = fitted_v2
    fixes = np.asarray(events.rows["fix"])
    by_round = {r: fixes[fixes[:, 3] == r, 2] for r in (1, 2, 3)}
    assert set(np.unique(fixes[:, 3])) == {1.0, 2.0, 3.0}
    assert all(len(v) > 15 for v in by_round.values()), {r: len(v) for r, v in by_round.items()}
    assert by_round[1].mean() > by_round[2].mean() > by_round[3].mean()


@pytest.mark.parametrize("name", ["fix_decay", "distractor_weight"])
def test_the_v2_parameters_a_recording_identifies_are_recovered(fitted_v2, name):
    """Within 3.5 standard errors of the truth, and inside their 95% interval (the repairs per round and the drafts
    at varying counts of irrelevant items pin them down)."""
    _, fit = fitted_v2
    lo, hi = fit.ci95[name]
    estimate, true = getattr(fit.profile, name), getattr(V2_TRUE, name)
    se = max((hi - lo) / (2 * 1.96), 1e-3)
    assert abs(estimate - true) < 3.5 * se and lo <= true <= hi, (name, estimate, true, (lo, hi))
    assert not lo <= getattr(V2_DEFAULT, name) <= hi  # the interval tells the default apart from the truth


def test_the_v2_parameters_a_recording_cannot_identify_keep_the_default_and_say_why(fitted_v2):
    from harness_gym.workers.calibrate import NOT_IDENTIFIED
    from harness_gym.workers.profile import WorkerProfileV2

    _, fit = fitted_v2
    assert isinstance(fit.profile, WorkerProfileV2)
    written = fit.to_json("plan", "simulated episodes")
    assert set(NOT_IDENTIFIED) == {"task_ability_sd", "task_ability_seed", "fix_needs_evidence", "closed_book_share"}
    for name, why in NOT_IDENTIFIED.items():
        assert getattr(fit.profile, name) == getattr(V2_DEFAULT, name) and fit.ci95[name] is None
        assert why in written["rationale"][name]


def test_one_repair_per_draft_leaves_the_decay_at_the_default():
    env = gym.make("HarnessPlan-v2", profile=V2_TRUE)
    events = collect_events(env, gather_then_repair_episodes(env, 60, revisions=1))
    env.close()
    assert set(np.unique(np.asarray(events.rows["fix"])[:, 3])) == {1.0}
    fit = fit_profile(events, V2_DEFAULT, n_boot=20)
    assert fit.profile.fix_decay == V2_DEFAULT.fix_decay and fit.ci95["fix_decay"] is None
    assert "round 2 or later" in fit.to_json("plan", "x")["rationale"]["fix_decay"]
    assert fit.ci95["fix_base"] is not None


def test_a_latent_ability_scales_the_draft_terms_to_the_tasks_own():
    """Drafts of 600 tasks whose abilities spread with sd 1.5: the regression over the tasks sees coefficients
    shrunk by about sqrt(1 + pi 1.5^2 / 8) = 1.37; a default with that spread scales them back to the per-task
    ones, a default without it keeps them shrunk."""
    rng = np.random.default_rng(5)
    base, evidence, difficulty = -1.0, 2.5, 1.5
    events = Events()
    for task in range(600):
        ability, diff = 1.5 * rng.standard_normal(), rng.random()
        for _ in range(4):
            coverage = rng.random()
            p = 1 / (1 + np.exp(-(base + evidence * coverage - difficulty * diff + ability)))
            events.add("draft", task, coverage, diff, rng.random() < p, 0)
    spread = fit_profile(events, replace(V2_DEFAULT, task_ability_sd=1.5), n_boot=5).profile
    flat = fit_profile(events, V2_DEFAULT, n_boot=5).profile
    for name, true in (("draft_logit_base", base), ("evidence_weight", evidence), ("difficulty_weight", difficulty)):
        assert abs(getattr(spread, name) - true) < 0.25 * abs(true), (name, getattr(spread, name), true)
        assert abs(getattr(flat, name)) < abs(getattr(spread, name)) / 1.25, (name, getattr(flat, name))


def test_every_interval_lies_within_its_parameters_range():
    """Irrelevant items that make no difference: the distractor weight's Laplace interval around an estimate near 0
    reaches below 0, where no weight lies; it is cut at the bound, as the fitted value is."""
    from harness_gym.workers.profile import param_bounds

    events = Events()
    for ep in range(60):
        events.add("draft", ep, (ep % 5) / 4, 0.5, ep % 3 == 0, ep % 4)
    fit = fit_profile(events, V2_DEFAULT, n_boot=30)
    assert fit.ci95["distractor_weight"][0] == 0.0 < fit.ci95["distractor_weight"][1]
    for name, ci in fit.ci95.items():
        if ci is not None:
            low, high = param_bounds(name)
            assert low <= ci[0] <= getattr(fit.profile, name) <= ci[1] <= high, (name, ci)


def test_repairs_that_all_failed_leave_the_decay_at_the_default():
    """Forty repairs over rounds 1 to 4, none succeeding (as SmolLM2's in the shipped recording): the fix terms go
    to ~0, and how success falls by round is not in the data."""
    events = Events()
    for ep in range(40):
        events.add("fix", ep, (ep % 3) / 2, (ep % 5) / 4, False, 1 + ep % 4, 0.5, 0)
    fit = fit_profile(events, V2_DEFAULT, n_boot=20)
    assert fit.profile.fix_decay == V2_DEFAULT.fix_decay and fit.ci95["fix_decay"] is None
    assert "no repair that succeeded" in fit.to_json("plan", "x")["rationale"]["fix_decay"]
    assert fit.profile.fix_base < 0.05 and fit.ci95["fix_base"] is not None
    events.add("fix", 40, 1.0, 1.0, True, 1, 0.5, 0)  # one success in round 1: later failures now say something
    assert fit_profile(events, V2_DEFAULT, n_boot=20).ci95["fix_decay"] is not None
