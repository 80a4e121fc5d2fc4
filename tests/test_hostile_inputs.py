"""Hostile files a user is handed (issue 41, part A): price profiles, worker profiles and τ-bench v1 task lists.

Each is refused with one error that names the file (or the ``prices=`` key) and the entry, never accepted into
a NaN reward and never raised as a bare ``MemoryError`` / ``RecursionError`` / ``ValueError`` of the parser:

- prices: finite, >= 0 and at most :data:`~harness_gym.core.prices.MAX_USD_PER_UNIT` per unit; the billing
  parameters within their documented ranges (docs/cost.md); entries that are not objects, and files nested
  past the JSON parser's limits;
- worker profiles: the log-odds parameters finite and within
  :data:`~harness_gym.workers.profile.MAX_LOG_ODDS` (files and instances);
- τ-bench v1 ``tasks_*.py``: deep nesting, long operator chains, bytes that are not UTF-8, a file past the
  reader's size bound.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.paths import data_path
from harness_gym.core.prices import PriceBook, PriceProfileError, price_table
from harness_gym.core.taskfile import TaskFileError
from harness_gym.domains.tau_retail.v1_tasks import read_v1_task_list
from harness_gym.workers.profile import WorkerProfile


# ----- prices ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("prices, named", [
    ({"prompt_token": 1e308}, "prices['prompt_token']"),
    ({"db_query": 1001.0}, "prices['db_query']"),
    ({"sandbox_gb": 1e308}, "prices['sandbox_gb']"),
    ({"sandbox_seconds_per_job": 1e9}, "prices['sandbox_seconds_per_job']"),
])
def test_a_price_past_the_documented_range_is_refused_naming_it(prices: dict, named: str) -> None:
    with pytest.raises(PriceProfileError) as err:
        gym.make("HarnessMultiTool-v1", prices=prices)
    assert named in str(err.value) and "at most" in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


def test_prices_at_the_bounds_are_accepted() -> None:
    table = price_table({"db_query": 1000.0, "prompt_token": 0.0})
    assert table.price("db_query") == 1000.0 and math.isfinite(table.units({"db_query": 1e6}))


def _price_folder(tmp_path: Path, edit_services) -> Path:
    for path in data_path("prices").glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    raw = json.loads((tmp_path / "services.json").read_text())
    edit_services(raw)
    (tmp_path / "services.json").write_text(json.dumps(raw))
    return tmp_path


def _set_usd(raw: dict) -> None:
    raw["items"]["db_query"]["usd"] = 1e308


def _not_an_object(raw: dict) -> None:
    raw["items"]["db_query"] = 5


def _billing(raw: dict) -> None:
    raw["billing"]["sandbox_gb"]["value"] = 1e308


@pytest.mark.parametrize("edit, named", [(_set_usd, "services.json: items.db_query.usd"),
                                         (_not_an_object, "services.json: items.db_query"),
                                         (_billing, "billing.sandbox_gb.value")])
def test_a_hostile_price_file_is_refused_naming_file_and_entry(tmp_path: Path, edit, named: str) -> None:
    folder = _price_folder(tmp_path, edit)
    with pytest.raises(PriceProfileError) as err:
        PriceBook(folder)
    assert named in str(err.value), str(err.value)


def test_a_deeply_nested_price_file_is_refused_naming_it(tmp_path: Path) -> None:
    for path in data_path("prices").glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    (tmp_path / "services.json").write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(PriceProfileError, match="services.json"):
        PriceBook(tmp_path)


# ----- worker profiles ------------------------------------------------------------------------------------
def _profile_file(tmp_path: Path, text_of_value: str, name: str = "evidence_weight") -> Path:
    raw = json.loads(data_path("profiles", "dbbench.json").read_text())
    raw["params"][name] = 12345.0
    text = json.dumps(raw).replace("12345.0", text_of_value)
    path = tmp_path / "profile.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["draft_logit_base", "evidence_weight", "difficulty_weight"])
@pytest.mark.parametrize("value", ["1e308", "-1e308", "NaN", "Infinity", "21.0"])
def test_a_profile_log_odds_past_the_documented_range_is_refused(tmp_path: Path, name: str, value: str) -> None:
    path = _profile_file(tmp_path, value, name)
    with pytest.raises(TaskFileError) as err:
        WorkerProfile.load(path)
    assert (err.value.path, err.value.field) == (str(path), f"params.{name}"), str(err.value)


def test_a_profile_instance_past_the_range_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="evidence_weight"):
        gym.make("HarnessDBBench-v1", profile=WorkerProfile(evidence_weight=math.inf))


def test_a_deeply_nested_profile_file_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    path.write_text('{"params": ' + "[" * 200_000 + "]" * 200_000 + "}")
    with pytest.raises(TaskFileError, match="profile.json"):
        WorkerProfile.load(path)


def test_profiles_at_the_bounds_load(tmp_path: Path) -> None:
    assert WorkerProfile.load(_profile_file(tmp_path, "20.0")).evidence_weight == 20.0
    assert WorkerProfile.load(_profile_file(tmp_path, "-20.0", "draft_logit_base")).draft_logit_base == -20.0


# ----- τ-bench v1 task lists ------------------------------------------------------------------------------
HEADER = "from tau_bench.types import Task, Action\n\n"
TASK = "TASKS = [Task(user_id='u', instruction={}, actions=[])]\n"
HOSTILE_TASK_LISTS = {
    "deep_unary": TASK.format("-" * 200_000 + "1"),
    "deep_not": TASK.format("not " * 100_000 + "1"),
    "long_sum": TASK.format("1+" * 200_000 + "1"),
    "attribute_chain": "TASKS = [" + "a." * 100_000 + "b()]\n",
}


@pytest.mark.parametrize("attack", [*sorted(HOSTILE_TASK_LISTS), "not_utf8", "past_the_size_bound"])
def test_a_hostile_v1_task_list_is_a_task_file_error_naming_it(tmp_path: Path, attack: str) -> None:
    path = tmp_path / "tasks_train.py"
    if attack == "not_utf8":
        path.write_bytes(HEADER.encode() + b"TASKS = [Task(user_id='\xff\xfe', instruction='x', actions=[])]\n")
    elif attack == "past_the_size_bound":
        path.write_text(HEADER + TASK.format("'" + "x" * (64 * 1024 * 1024) + "'"))
    else:
        path.write_text(HEADER + HOSTILE_TASK_LISTS[attack])
    with pytest.raises(TaskFileError) as err:
        read_v1_task_list(path, "train")
    assert err.value.path == str(path) and "\n" not in str(err.value), str(err.value)
    if attack == "not_utf8":
        assert err.value.line == 3, str(err.value)


@pytest.mark.parametrize("source, line", [
    (TASK.format("'" + "x" * 1000 + "'").replace("actions=[]", "actions=[Action(name='think', kwargs={'thought': "
                                                                 + "9" * 5000 + "})]"), 3),
    (TASK.format("'\x00'"), None),
    (TASK.format("[" * 300 + "]" * 300), 3),
])
def test_v1_task_lists_past_the_parsers_own_limits_are_task_file_errors(tmp_path: Path, source: str,
                                                                         line: int | None) -> None:
    """Numbers past Python's digit limit, NUL bytes and nesting past the tokenizer's limit were refused before."""
    path = tmp_path / "tasks_train.py"
    path.write_text(HEADER + source)
    with pytest.raises(TaskFileError) as err:
        read_v1_task_list(path, "train")
    assert err.value.path == str(path) and err.value.line == line, str(err.value)
