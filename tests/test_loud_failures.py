"""Failures are loud: LLM error counts and rates in eval / compare summaries, their warning and
``--max-llm-error-rate``, forced-submit and invalid-action rates printed, and model files that warn on another
env id and refuse another observation layout."""

from __future__ import annotations

import json
import warnings

import pytest

from harness_gym.workers.fake_server import FakeOpenAIServer
from harness_gym_baselines.cli import main
from harness_gym_baselines.evaluate import LLM_ERROR_RATE_WARNING, LLMErrorRateWarning, evaluate
from tests.test_llm_worker import ReferenceModel

pytest.importorskip("openai")

ENV_ID = "HarnessCode-v2"
FAULTY = ["ok"] + ["500", "ok", "ok"] * 200  # after a first reply, one request in three fails (each retried once)


def _llm_kwargs(srv: FakeOpenAIServer) -> dict:
    return {"worker": "openai", "base_url": srv.base_url, "model": "fake", "max_retries": 1, "backoff_s": 0.0}


def test_the_summary_counts_failed_llm_requests_and_warns_above_the_threshold():
    with FakeOpenAIServer(ReferenceModel(ENV_ID), list(FAULTY)) as srv, \
            pytest.warns(LLMErrorRateWarning) as caught:
        summary = evaluate(ENV_ID, "forced-check", episodes=2, env_kwargs=_llm_kwargs(srv))
    assert summary["llm_calls"] == sum(srv.served.values()) and summary["llm_errors"] == srv.served["500"] > 0
    assert summary["llm_error_rate"] == pytest.approx(srv.served["500"] / sum(srv.served.values()))
    assert summary["llm_error_rate"] > LLM_ERROR_RATE_WARNING and summary["llm_calls_mean"] == summary["llm_calls"] / 2
    message = str(caught[0].message)
    assert len(caught) == 1 and "\n" not in message
    assert f"{ENV_ID} / forced-check" in message and f"({summary['llm_errors']} of {summary['llm_calls']})" in message


def test_a_clean_run_reports_zero_errors_and_does_not_warn():
    with FakeOpenAIServer(ReferenceModel(ENV_ID)) as srv, warnings.catch_warnings():
        warnings.simplefilter("error", LLMErrorRateWarning)
        live = evaluate(ENV_ID, "forced-check", episodes=2, env_kwargs=_llm_kwargs(srv))
    simulated = evaluate(ENV_ID, "forced-check", episodes=2)
    assert live["llm_errors"] == 0 and live["llm_error_rate"] == 0.0 and live["llm_calls"] > 0
    assert simulated["llm_errors"] == 0 and simulated["llm_error_rate"] == 0.0  # it meters calls, none fails


def test_max_llm_error_rate_fails_eval_and_compare_in_one_line(capsys):
    base = ["--episodes", "2", "--worker", "openai", "--model", "fake", "--max-retries", "1", "--no-progress"]
    with FakeOpenAIServer(ReferenceModel(ENV_ID), list(FAULTY)) as srv:
        url = ["--base-url", srv.base_url]
        assert main(["eval", ENV_ID, "--policy", "forced-check", *base, *url, "--max-llm-error-rate", "0.9"]) == 0
        out, err = capsys.readouterr()
        assert "llm_error_rate" in out and "llm_errors (failed requests)" in out
        assert err.count("\n") == 1 and err.startswith("harness-gym eval: warning: ") and "of LLM requests failed" in err

        assert main(["eval", ENV_ID, "--policy", "forced-check", *base, *url, "--max-llm-error-rate", "0.05",
                     "--json"]) == 1
        out, err = capsys.readouterr()
        printed = json.loads(out)  # the summary is printed before the run fails
        assert printed["llm_errors"] > 0 and 0.05 < printed["llm_error_rate"] < 1
        lines = err.strip().splitlines()
        assert len(lines) == 2 and lines[0].startswith("harness-gym eval: warning: ")
        assert lines[1].startswith("harness-gym eval: error: ") and "above --max-llm-error-rate 0.05" in lines[1]

        assert main(["compare", ENV_ID, "--policy", "forced-check", "--policy", "static", *base, *url,
                     "--max-llm-error-rate", "0.05", "--width", "200"]) == 1
        out, err = capsys.readouterr()
        assert "LLM errors" in out and "forced submit" in out and "invalid actions" in out
        error = [line for line in err.splitlines() if ": error: " in line]
        assert len(error) == 1 and "(2 policies over it)" in error[0]
    with pytest.raises(SystemExit) as exited:
        main(["eval", ENV_ID, "--policy", "static", "--max-llm-error-rate", "1.5"])
    assert exited.value.code == 2 and "'1.5': a share is between 0 and 1" in capsys.readouterr().err


def test_eval_and_compare_print_forced_submit_and_invalid_action_rates(capsys):
    run = ["--episodes", "3", "--no-progress", "--env-kwarg", "budget=3"]  # static cannot submit within 3 steps
    assert main(["eval", ENV_ID, "--policy", "static", *run]) == 0
    out = capsys.readouterr().out
    assert "forced_submit_rate" in out and "invalid_action_rate" in out and "1.000" in out
    assert main(["compare", ENV_ID, "--policy", "static", "--policy", "random", *run, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["forced_submit_rate"] == 1.0 and all("invalid_action_rate" in r for r in rows)
    assert all(r["llm_error_rate"] == 0.0 and r["llm_calls"] >= 0 for r in rows)
    assert main(["compare", ENV_ID, "--policy", "static", "--policy", "random", *run, "--width", "200"]) == 0
    out = capsys.readouterr().out
    assert "forced submit" in out and "invalid actions" in out and "LLM errors" not in out  # simulated worker
