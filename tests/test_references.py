"""References that mean what their names say: the settings every summary records, ``--budget-units none`` on every
command, a model run under other settings than it was trained with, the normalised score, and the benchmark card."""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import harness_gym
from harness_gym.budget.references import normalized_score
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.datasets import Transitions
from harness_gym_baselines.algos.bc import BCConfig
from harness_gym_baselines.cli import build_parser, main, pricing_options
from harness_gym_baselines.evaluate import evaluate
from harness_gym_baselines.policies.learned import MLP, save_model
from harness_gym_baselines.policies.model_files import load_model_file
from harness_gym_baselines.policies.trained_on import OtherSettingsWarning
from harness_gym_baselines.report import card as card_module

ENV = "HarnessPlan-v2"
BUDGET_COMMANDS = {  # every command with the env options, and the arguments it needs besides them
    "eval": ["eval", ENV, "--policy", "static"],
    "compare": ["compare", ENV, "--policy", "static"],
    "play": ["play", ENV, "--policy", "static"],
    "collect": ["collect", ENV, "--policy", "static", "--episodes", "2", "--out", "harness/x-v0"],
    "frontier": ["frontier", ENV, "--out", "x"],
    "search-script": ["search-script", ENV],
}


@pytest.mark.parametrize("command", sorted(BUDGET_COMMANDS))
@pytest.mark.parametrize("value, expected", [("none", None), ("auto", "auto"), ("7.5", 7.5)])
def test_budget_units_is_passed_on_by_every_command(command, value, expected):
    args = build_parser().parse_args([*BUDGET_COMMANDS[command], "--budget-units", value])
    assert pricing_options(args)["budget_units"] == expected


@pytest.mark.parametrize("command", sorted(BUDGET_COMMANDS))
def test_an_absent_budget_units_leaves_the_env_default(command):
    args = build_parser().parse_args(BUDGET_COMMANDS[command])
    assert "budget_units" not in pricing_options(args)


def test_eval_budget_units_none_is_honoured_and_the_summary_says_which_budget(capsys):
    assert main(["eval", ENV, "--policy", "thorough", "--episodes", "4", "--budget-units", "3",
                 "--no-progress", "--json"]) == 0
    tight = json.loads(capsys.readouterr().out)
    assert main(["eval", ENV, "--policy", "thorough", "--episodes", "4", "--budget-units", "none",
                 "--no-progress", "--json"]) == 0
    free = json.loads(capsys.readouterr().out)
    assert tight["forced_submit_rate"] == 1.0 and free["forced_submit_rate"] == 0.0
    assert free["settings"] == {"prices": "cheap-hosted", "budget_spec": "none", "budget": "none",
                                "budget_units": None, "cost_weight": 0.0}
    assert tight["settings"]["budget_units"] == 3.0 and tight["settings"]["budget"] == "3 units"
    default = evaluate(ENV, "static", episodes=1)["settings"]
    assert default["budget_spec"].startswith("auto (rule ") and default["budget_units"] > 0


def _model(path, settings):
    n, f = 4, len(FEATURE_NAMES)
    data = Transitions(np.zeros((n, f), np.float32), np.zeros(n, np.int64), np.ones((n, 7), bool),
                       np.zeros(n, np.float32), np.zeros(n, np.int64), ENV, settings, tuple(FEATURE_NAMES))
    torch.manual_seed(0)
    return save_model(path, algo="bc", net=MLP(f, 7, (8,)), config=BCConfig(dataset_id="x"), data=data,
                      hidden_sizes=(8,))


def test_a_model_trained_without_a_budget_warns_once_when_run_with_one(tmp_path):
    model = _model(tmp_path / "bc.pt", {"budget_units": None})
    with pytest.warns(OtherSettingsWarning) as caught:
        evaluate(ENV, load_model_file(model), episodes=3)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "budget_spec 'none' -> 'auto (rule " in message and "\n" not in message
    with warnings.catch_warnings():  # run under its own settings: silent
        warnings.simplefilter("error", OtherSettingsWarning)
        evaluate(ENV, load_model_file(model), episodes=2, env_kwargs={"budget_units": None})


def test_the_normalised_score_is_zero_at_random_and_a_hundred_at_the_upper_reference():
    assert normalized_score(0.4, 0.4, 0.9) == 0.0 and normalized_score(0.9, 0.4, 0.9) == 100.0
    assert normalized_score(0.65, 0.4, 0.9) == pytest.approx(50.0)
    assert normalized_score(0.3, 0.4, 0.9) < 0 and math.isnan(normalized_score(0.5, 0.5, 0.5))


# ----- the benchmark card ---------------------------------------------------------------------------------
TINY = card_module.CardConfig(episodes=12, search_rounds=((2, 4),), search_val_episodes=6, learned_seeds=())


@pytest.fixture(scope="module")
def tiny_card():
    return card_module.measure(["HarnessDBBench-v2"], TINY, learned=False)


def test_the_card_holds_every_reference_with_the_settings_in_force(tiny_card):
    entry = tiny_card["envs"]["HarnessDBBench-v2"]
    rows = {r["row"]: r for r in entry["rows"]}
    assert list(rows) == ["random", "static", "forced-check", "thorough", "best fixed", "upper reference"]
    assert rows["random"]["normalized"] == 0.0 and rows["upper reference"]["normalized"] == 100.0
    assert rows["upper reference"]["forced_submit_rate"] == 0.0
    fixed_name = entry["best_fixed"]["name"]
    assert rows["best fixed"]["controller"] == fixed_name
    assert entry["settings"]["budget"] == "auto (rule 2): none, the published step limits"
    assert entry["settings"]["cost_weight"] == TINY.cost_weight
    assert "no learned controller was run" in entry["headroom"]


def test_the_headroom_sentence_is_computed_from_the_numbers(tiny_card):
    entry = json.loads(json.dumps(tiny_card["envs"]["HarnessDBBench-v2"]))
    before = card_module.headroom_sentence(entry)
    fixed = next(r for r in entry["rows"] if r["row"] == "best fixed")
    fixed["normalized"], fixed["quality"] = 12.0, 0.111
    after = card_module.headroom_sentence(entry)
    assert after != before and "covers 12% of the range" in after
    entry["rows"].append({"row": "best learned", "minus_best_fixed": {"mean": 0.04, "ci95": [0.01, 0.07]}})
    assert "the learned controller beats it (return +0.040" in card_module.headroom_sentence(entry)
    entry["rows"][-1]["minus_best_fixed"] = {"mean": -0.01, "ci95": [-0.03, 0.02]}
    assert "ties it" in card_module.headroom_sentence(entry)


def test_card_check_passes_on_its_own_run_and_names_every_difference(tmp_path, tiny_card):
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\n{card_module.BEGIN}\nold\n{card_module.END}\n\nrest\n")
    data, markdown = tmp_path / "card.json", tmp_path / "card.md"
    figure = tmp_path / "figures" / "card.png"
    card_module.write(tiny_card, data=data, markdown=markdown, readme=readme, figure=figure)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert readme.read_text().startswith("# title\n\n" + card_module.BEGIN) and "old" not in readme.read_text()
    assert card_module.check(tiny_card, ["HarnessDBBench-v2"], markdown=markdown, readme=readme) == []
    changed = json.loads(data.read_text())
    changed["envs"]["HarnessDBBench-v2"]["rows"][2]["quality"] += 0.01
    problems = card_module.check(changed, ["HarnessDBBench-v2"], markdown=markdown, readme=readme)
    assert any(p.startswith("HarnessDBBench-v2/rows[2]/quality:") for p in problems)
    assert any("README.md: its card is not the rendering" in p for p in problems)
    assert any("card.md: not the rendering" in p for p in problems)


# ----- the shipped card ------------------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_and_docs_cards_are_the_rendering_of_the_shipped_card_data():
    data, markdown, readme, figure = card_module.default_paths(ROOT)
    shipped = json.loads(data.read_text())
    assert card_module.check(shipped, [], markdown=markdown, readme=readme) == []
    assert set(shipped["envs"]) == set(harness_gym.ENV_IDS) and figure.is_file()
    for entry in shipped["envs"].values():
        assert entry["settings"]["budget_spec"].startswith("auto (rule ")
        assert entry["rows"][-1]["row"] == "best learned" and entry["rows"][-1]["seeds"]


def test_the_readme_example_runs():
    import re

    code = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the project's own README
    assert namespace["done"] and namespace["info"]["quality"] >= 0.0


@pytest.mark.skipif(os.environ.get("HARNESS_GYM_SLOW") != "1", reason="replays one env of the card (minutes); "
                    "HARNESS_GYM_SLOW=1 runs it")
def test_card_check_replays_the_shipped_card_of_one_env():
    data, markdown, readme, _ = card_module.default_paths(ROOT)
    shipped = json.loads(data.read_text())
    assert card_module.check(shipped, ["HarnessPlan-v2"], markdown=markdown, readme=readme) == []


@pytest.mark.parametrize("env_kwargs, message", [
    ({"HarnessPlan-v2": {"sandbox": "process", "require_isolation": False}}, "require_isolation, sandbox cannot come"),
    ({"HarnessPlan-v2": {"budget_units": float("inf")}}, "budget_units: a finite number > 0"),
    ({"HarnessPlan-v2": {"prices": "free-lunch"}}, "prices:"),
    ({"HarnessPlan-v2": ["budget_units"]}, "env_kwargs must map env ids to objects"),
])
def test_a_recording_names_only_the_settings_it_was_recorded_under(env_kwargs, message):
    """A recording is a file a user is handed: its env_kwargs may set the cost budget and prices, nothing that
    weakens the sandbox or changes the worker."""
    from harness_gym_baselines.common.options import UsageError, recorded_env_kwargs

    with pytest.raises(UsageError, match=message):
        recorded_env_kwargs({"env_kwargs": env_kwargs}, "HarnessPlan-v2", "evil.json")
    assert recorded_env_kwargs({"env_kwargs": {"HarnessPlan-v2": {"budget_units": 4.5}}}, "HarnessPlan-v2",
                               "ok.json") == {"budget_units": 4.5}
    assert recorded_env_kwargs({}, "HarnessPlan-v2", "old.json") == {}
