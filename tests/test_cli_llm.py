"""The command line of the LLM worker: its flags and ``harness-gym calibrate`` on the shipped recording."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.workers import WorkerProfile
from harness_gym_baselines.cli import main, parse_env_kwargs
from harness_gym_baselines.common.options import UsageError
from tests.recording import needs_v1_recording


def test_worker_flags_become_env_keywords_only_with_the_openai_worker():
    kwargs = parse_env_kwargs([], "openai", None, {"base_url": "http://127.0.0.1:1/v1", "model": "m"})
    assert kwargs == {"worker": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m"}
    with pytest.raises(UsageError, match="--model.*--worker openai"):
        parse_env_kwargs([], None, None, {"model": "m"})


def test_worker_flag_without_openai_worker_is_one_line_with_exit_2(capsys):
    assert main(["eval", "HarnessCode-v1", "--policy", "static", "--episodes", "1", "--model", "m"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--worker openai" in err[0]


@needs_v1_recording
def test_calibrate_fits_a_loadable_profile_from_the_shipped_recording(tmp_path, capsys):
    out = tmp_path / "code.json"
    assert main(["calibrate", "HarnessCode-v1", "--out", str(out), "--bootstrap", "20"]) == 0
    printed = capsys.readouterr().out
    assert "held-out log-likelihood" in printed and str(out) in printed
    fitted = WorkerProfile.load(out)
    default = WorkerProfile.for_domain("code")
    raw = json.loads(out.read_text())
    assert raw["fit"]["events"]["draft"] > 0
    # parameters with events move off the default; the others keep it and say so
    assert fitted.draft_logit_base != default.draft_logit_base
    assert fitted.break_prob == default.break_prob and "not estimated" in raw["rationale"]["break_prob"]
    env = gym.make("HarnessCode-v1", profile=str(out))
    env.reset(seed=0)
    env.close()


@needs_v1_recording
def test_calibrate_names_the_envs_a_recording_has(capsys, tmp_path):
    assert main(["calibrate", "HarnessPlan-v1", "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "records no episode of HarnessPlan-v1" in err and "HarnessCode-v1" in err
