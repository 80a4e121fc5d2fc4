"""The command line of the LLM worker: its flags and ``harness-gym calibrate`` on the shipped recording."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.workers import WorkerProfile
from harness_gym_baselines.cli import main, parse_env_kwargs
from harness_gym_baselines.common.options import UsageError
from tests.recording import needs_registered_recording


def test_worker_flags_become_env_keywords_only_with_the_openai_worker():
    kwargs = parse_env_kwargs([], "openai", None, {"base_url": "http://127.0.0.1:1/v1", "model": "m"})
    assert kwargs == {"worker": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m"}
    with pytest.raises(UsageError, match="--model.*--worker openai"):
        parse_env_kwargs([], None, None, {"model": "m"})


def test_worker_flag_without_openai_worker_is_one_line_with_exit_2(capsys):
    assert main(["eval", "HarnessCode-v1", "--policy", "static", "--episodes", "1", "--model", "m"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--worker openai" in err[0]


@needs_registered_recording
def test_calibrate_fits_a_loadable_profile_from_the_shipped_recording(tmp_path, capsys):
    """From the env id's own profile (-v2: the v2 set), the fitted parameters move, the ones without events keep the
    default, and the -v2 ones a recording cannot identify keep it and say why, on the terminal and in the file."""
    from harness_gym.workers.calibrate import NOT_IDENTIFIED
    from harness_gym.workers.profile import WorkerProfileV2

    out = tmp_path / "code.json"
    assert main(["calibrate", "HarnessCode-v2", "--out", str(out), "--bootstrap", "20"]) == 0
    printed = capsys.readouterr().out
    assert "held-out log-likelihood" in printed and str(out) in printed
    fitted = WorkerProfile.load(out)
    default = WorkerProfile.for_domain("code", "v2")
    raw = json.loads(out.read_text())
    assert raw["fit"]["events"]["draft"] > 0 and isinstance(fitted, WorkerProfileV2)
    # parameters with events move off the default; the others keep it and say so
    assert fitted.draft_logit_base != default.draft_logit_base
    assert fitted.break_prob == default.break_prob and "not estimated" in raw["rationale"]["break_prob"]
    for name, why in NOT_IDENTIFIED.items():
        assert getattr(fitted, name) == getattr(default, name) and why in raw["rationale"][name]
        assert re.search(rf"{name}\s.*not estimated: {re.escape(why[:30])}", printed), name
    env = gym.make("HarnessCode-v2", profile=str(out))
    env.reset(seed=0)
    env.close()


@needs_registered_recording
def test_calibrate_names_the_envs_a_recording_has(capsys, tmp_path):
    assert main(["calibrate", "HarnessPlan-v2", "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "records no episode of HarnessPlan-v2" in err and "HarnessCode-v2" in err


# ----- the fake server on the command line -------------------------------------------------------------------
@contextlib.contextmanager
def fake_server(*flags: str) -> Iterator[str]:
    """``python -m harness_gym.workers.fake_server`` as a subprocess on 127.0.0.1 (a free port); yields its
    ``/v1`` root, read from the line it prints."""
    proc = subprocess.Popen([sys.executable, "-m", "harness_gym.workers.fake_server", "--port", "0", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/v1", line)
        assert found, (line, proc.stderr.read() if proc.poll() is not None else "")
        yield found.group(0)
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


LLM_EVAL = ["--worker", "openai", "--model", "fake", "--episodes", "3", "--no-progress", "--max-retries", "1",
            "--timeout-s", "5"]


def test_harness_gym_eval_runs_episodes_against_the_fake_server_deterministically(tmp_path):
    with fake_server() as url:
        runs = [subprocess.run([sys.executable, "-m", "harness_gym_baselines.cli", "eval", "HarnessCode-v1",
                                "--policy", "thorough", "--base-url", url, *LLM_EVAL, "--json"],
                               capture_output=True, text=True, timeout=300) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    first, second = (json.loads(r.stdout) for r in runs)
    assert first["llm_calls"] > 3 * 2 and first["llm_errors"] == 0 and not any(first["llm_faults"].values())
    drop = ("seconds",)
    assert {k: v for k, v in first.items() if k not in drop} == {k: v for k, v in second.items() if k not in drop}


def test_a_server_that_stops_answering_fails_the_run_by_default_naming_call_and_cause(capsys):
    dies = ("--answer-first", "4", "--mode", "500")
    with fake_server(*dies) as url:
        status = main(["eval", "HarnessCode-v1", "--policy", "thorough", "--base-url", url, *LLM_EVAL])
    out, err = capsys.readouterr()
    assert status == 1
    line = err.strip().splitlines()[-1]
    assert "error:" in line and "http_status" in line and "tool" in line and "default limit 0.25" in line
    assert "llm failures (call: cause)" in out and "fallback" in out
    with fake_server(*dies) as url:  # the option overrides the default; compare's JSON carries the breakdown
        assert main(["compare", "HarnessCode-v1", "--policy", "static", "--base-url", url, *LLM_EVAL, "--json",
                     "--max-llm-error-rate", "1"]) == 0
    (summary,) = json.loads(capsys.readouterr().out)
    assert summary["llm_faults"]["draft.http_status"] > 0 and summary["llm_faults"]["draft.fallback"] > 0
    assert summary["llm_server_error_rate"] == summary["llm_error_rate"] > 0.25


def test_unparseable_replies_alone_do_not_fail_the_run_but_are_named(capsys):
    with fake_server("--mode", "unparseable", "--answer-first", "1") as url:
        status = main(["compare", "HarnessCode-v1", "--policy", "static", "--base-url", url, *LLM_EVAL,
                       "--width", "200"])
        out, err = capsys.readouterr()
    assert status == 0 and "unparseable" in out and "unparseable" in err  # the table and the warning


def test_play_marks_the_failed_calls_and_their_fallback(capsys):
    with fake_server("--answer-first", "1", "--mode", "503") as url:
        assert main(["play", "HarnessCode-v1", "--policy", "static", "--worker", "openai", "--base-url", url,
                     "--model", "fake", "--max-retries", "1", "--width", "200"]) == 0
    out = capsys.readouterr().out
    marked = [line for line in out.splitlines() if "LLM FAILURE" in line]
    assert marked and "http_status" in marked[0] and "fallback:" in marked[0]
