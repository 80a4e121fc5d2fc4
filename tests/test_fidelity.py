"""The fidelity cards (envs_data/fidelity/<domain>.json) validate, and every pinned row holds on the -v2 envs; so do
the frontier tier's cards (envs_data/fidelity/frontier/<domain>.json) on the tiered envs.

The measurements are those of benchmarks/fidelity.py (seeded, so the values are deterministic); the episode counts
are the smallest at which each row's sampling error is within the card's stated tolerance.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys

import pytest

from tests.benchmark_scripts import BENCHMARKS

# registered in sys.modules (as load_benchmark does not), which its dataclasses need
_spec = importlib.util.spec_from_file_location("benchmark_fidelity", BENCHMARKS / "fidelity.py")
fidelity = sys.modules.setdefault("benchmark_fidelity", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(fidelity)

DOMAINS = sorted(fidelity.DOMAIN_ENVS)
EPISODES = {"code": 600}
"""Episodes per protocol where 300 leaves a pinned ratio too noisy (Code's repair decay: round 3 has few drafts)."""


@pytest.mark.parametrize("domain", DOMAINS)
def test_card_validates(domain: str) -> None:
    card = fidelity.load_card(domain)
    assert card["env_id"] == f"{fidelity.DOMAIN_ENVS[domain]}-v2"
    pinned = [r for r in card["rows"] if r["status"] == "pinned"]
    assert pinned, f"{domain}: a card pins at least one row (confidence AUROC is pinned everywhere)"
    for row in card["rows"]:
        if row["status"] == "chosen":
            assert "range" not in row
        else:
            lo, hi = row["range"]
            assert lo <= min(f["value"] for f in row["published"] if f["value"] is not None) + row["tolerance"] + 1e-9


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c["rows"][0].pop("measurement"), "no 'measurement'"),
    (lambda c: c["rows"][0].update(status="pinned"), "needs a range"),
    (lambda c: next(r for r in c["rows"] if r["status"] == "pinned").pop("published_span"), "published_span"),
    (lambda c: next(r for r in c["rows"] if r["status"] == "pinned").update(status="chosen"), "claims no range"),
    (lambda c: c["rows"][0].update(measurement="nowhere:1"), "has no protocol"),
    (lambda c: next(r for r in c["rows"] if r["published"])["published"][0]["source"].pop("title"), "needs a source"),
])
def test_bad_card_is_refused(tmp_path, mutate, message: str) -> None:
    card = copy.deepcopy(json.loads(fidelity.card_path("code").read_text()))
    mutate(card)
    path = tmp_path / "code.json"
    path.write_text(json.dumps(card))
    with pytest.raises(fidelity.CardError, match=message) as err:
        fidelity.load_card("code", path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_pass_hat_k_and_auroc() -> None:
    # a task solved 4 of 8 times: pass^1 = 0.5, pass^2 = C(4,2)/C(8,2) = 6/28
    assert fidelity.pass_hat_k([4], 8, 1) == 0.5
    assert fidelity.pass_hat_k([4, 8], 8, 2) == pytest.approx((6 / 28 + 1) / 2)
    assert fidelity.auroc([0.9, 0.8, 0.1], [True, False, False]) == 1.0
    assert fidelity.auroc([0.5, 0.5], [True, False]) == 0.5


@pytest.mark.parametrize("domain", DOMAINS)
def test_pinned_rows_in_range(domain: str) -> None:
    pinned = [r["behaviour"] for r in fidelity.load_card(domain)["rows"] if r["status"] == "pinned"]
    results, _ = fidelity.measure_domain(domain, EPISODES.get(domain, 300), 8, rows=pinned)
    assert [r.row["behaviour"] for r in results] == pinned
    out = [f"{r.row['behaviour']} = {r.value:.3f} outside {r.row['range']}" for r in results if not r.in_range]
    assert not out, f"{domain}: " + "; ".join(out)


FRONTIER_EPISODES = 300
"""Episodes per protocol of the frontier rows: the count their profiles were fitted at (docs/cascade.md)."""
FRONTIER_PINNED = [d for d in DOMAINS if any(r["status"] == "pinned"
                                             for r in fidelity.load_card(d, fidelity.frontier_card_path(d))["rows"])]


@pytest.mark.parametrize("domain", DOMAINS)
def test_frontier_card_validates(domain: str) -> None:
    card = fidelity.load_card(domain, fidelity.frontier_card_path(domain))
    assert card["env_id"] == fidelity.tiered_env_id(domain)
    assert {r["behaviour"] for r in card["rows"]} >= {"frontier_over_cheap_gathered"}
    assert all(r["behaviour"].startswith("frontier_") for r in card["rows"])


def test_every_frontier_card_but_research_qa_pins_a_row() -> None:
    """research_qa's frontier row is chosen (no per-model source read); every other card pins its ratio."""
    assert set(DOMAINS) - set(FRONTIER_PINNED) == {"research_qa"}


@pytest.mark.parametrize("domain", FRONTIER_PINNED)
def test_frontier_pinned_rows_in_range(domain: str) -> None:
    pinned = [r["behaviour"] for r in fidelity.load_card(domain, fidelity.frontier_card_path(domain))["rows"]
              if r["status"] == "pinned"]
    results = fidelity.measure_frontier(domain, FRONTIER_EPISODES, 8, rows=pinned)
    assert [r.row["behaviour"] for r in results] == pinned
    out = [f"{r.row['behaviour']} = {r.value:.3f} outside {r.row['range']}" for r in results if not r.in_range]
    assert not out, f"{domain} (frontier): " + "; ".join(out)


def test_frontier_measurements_read_the_tier_they_name() -> None:
    """The ratio is the frontier tier's success over the cheap tier's on the same seeds: on DB-Bench, where the card
    pins the frontier tier below the cheap one, both sides are measured and the ratio is below 1."""
    m = fidelity.Measurer(fidelity.tiered_env_id("dbbench"), 60, 8)
    try:
        cheap, frontier = m.success(fidelity.Action.DRAFT), m.success(fidelity.DRAFT_FRONTIER)
        assert m.value("draft_accuracy_ratio:gathered") == pytest.approx(frontier / cheap)
        assert m.value("draft_accuracy:gathered:frontier") == frontier < cheap
    finally:
        m.close()


def test_v1_misses_what_v2_pins() -> None:
    """The -v1 worker is the one the cards were written against: its tau-retail pass^4/pass^1 and its Knowledge
    blind-draft repair gain lie far outside the ranges the -v2 worker holds."""
    tau = fidelity.Measurer("HarnessTauRetail-v1", 50, 8)
    knowledge = fidelity.Measurer("HarnessKnowledge-v1", 100, 8)
    try:
        assert tau.value("pass_ratio:4") < 0.3
        assert knowledge.value("repair_gain:blind3") > 0.5
    finally:
        tau.close()
        knowledge.close()


def test_v2_mechanisms_are_fixed_per_task_and_off_by_default() -> None:
    from dataclasses import fields, replace

    from harness_gym.workers.calibrate import Events, fit_profile
    from harness_gym.workers.profile import WorkerProfile, WorkerProfileV2
    from harness_gym.workers.simulated import task_draws

    assert task_draws(0, "t-1") == task_draws(0, "t-1") != task_draws(0, "t-2")
    assert task_draws(1, "t-1") != task_draws(0, "t-1")
    v1 = WorkerProfile.for_domain("code")
    neutral = WorkerProfileV2(**{f.name: getattr(v1, f.name) for f in fields(WorkerProfile)})
    assert neutral.is_v1 and v1.is_v1 and not WorkerProfile.for_domain("code", "v2").is_v1
    # calibrate keeps a -v2 default's class and its own parameters (it cannot fit them from one recording)
    v2 = WorkerProfile.for_domain("tau_retail", "v2")
    fitted = fit_profile(Events(), v2, n_boot=0).profile
    assert type(fitted) is WorkerProfileV2 and fitted == v2
    assert replace(v2, task_ability_sd=0.0, fix_decay=1.0, fix_needs_evidence=0.0, distractor_weight=0.0).is_v1
