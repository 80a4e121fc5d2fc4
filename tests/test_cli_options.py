"""One way to pass options on every command: the shared option groups of every parser, help texts that show
their defaults, policies, repeated ``--env-kwarg``, ``--no-progress`` and ``--json`` where they belong, every
trainer's closing evaluation, ``view`` and ``collect`` errors, and replaying a recording by its manifest."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from harness_gym.core.paths import data_path
from harness_gym.running.rollout import episode_seed
from harness_gym_baselines.cli import (
    COMMAND_OPTIONS,
    WORKER_FLAGS,
    DefaultsHelpFormatter,
    build_parser,
    labelled_policy,
    main,
    policy_name,
    train_parser,
)
from harness_gym_baselines.common.trainer_registry import TRAINERS, load_trainer

ONLINE = ("ppo-sparse", "ppo-dense", "ecpo", "ecpo-pb")
ENV_FLAGS = {"--env-kwarg", "--worker", "--sandbox", "--prices", "--budget-units", "--recording",
             *(flag for _, flag, _, _ in WORKER_FLAGS)}
# what the issue asks of every command, written out here independently of COMMAND_OPTIONS
MAKES_ENVS = {"eval", "compare", "frontier", "search-script", "play", "collect", *(f"train {t}" for t in ONLINE)}
TAKES_POLICY = {"eval", "compare", "frontier", "play", "collect"}
DRAWS_PROGRESS = {"card", "eval", "compare", "frontier", "search-script", "collect", "reproduce",
                  *(f"train {t}" for t in TRAINERS)}
PRINTS_SUMMARY = {"card", "list", "calibrate", "doctor", "eval", "compare", "frontier", "search-script", "collect",
                  "merge-cache", "reproduce", *(f"train {t}" for t in TRAINERS)}


def all_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser: the subcommands of ``harness-gym`` and ``harness-gym train NAME`` of each trainer."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parsers = dict(sub.choices)
    parsers.update({f"train {name}": train_parser(name) for name in TRAINERS})
    return parsers


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {flag: action for action in parser._actions for flag in action.option_strings}


PARSERS = all_parsers()


def test_every_command_is_in_the_one_table_of_option_groups():
    commands = {name for name in PARSERS if not name.startswith("train ")}
    assert commands == {name for name in COMMAND_OPTIONS if not name.startswith("train (")}


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_each_command_has_the_shared_options_it_needs_and_the_same_everywhere(command):
    flags = options(PARSERS[command])
    reference = options(PARSERS["eval"])
    if command in MAKES_ENVS:
        assert set(flags) >= ENV_FLAGS, ENV_FLAGS - set(flags)
        assert flags["--env-kwarg"].__class__.__name__ == "_AppendAction", "--env-kwarg is repeated, one pair each"
        for flag in ENV_FLAGS - {"--env-kwarg"}:
            ours, theirs = flags[flag], reference[flag]
            if command.startswith("train ") and flag in ("--prices", "--budget-units"):
                # fields of the online trainers' config: the same parser, the config's own default and help
                assert (ours.type, ours.choices, ours.dest) == (theirs.type, theirs.choices, theirs.dest), flag
                continue
            assert (ours.type, ours.choices, ours.default, ours.help) == (theirs.type, theirs.choices,
                                                                          theirs.default, theirs.help), flag
        # the reward's cost weight: one weight where one reward is run, a list where every weight is scored
        assert ("--cost-weight" in flags) != ("--cost-weights" in flags), command
    else:  # calibrate makes its env from a recording: --recording, as everywhere, and no other env flag
        assert not (ENV_FLAGS - ({"--recording"} if command == "calibrate" else set())) & set(flags), command
    if command in TAKES_POLICY:
        assert flags["--policy"].type in (policy_name, labelled_policy)
    assert ("--no-progress" in flags) == (command in DRAWS_PROGRESS), command
    assert ("--json" in flags) == (command in PRINTS_SUMMARY), command


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_every_option_has_help_that_shows_its_default(command):
    parser = PARSERS[command]
    formatter = DefaultsHelpFormatter(parser.prog)
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        text = formatter._get_help_string(action) or ""
        assert text.strip(), f"{command} {action.option_strings[0]}: no help text"
        assert action.required or "default" in text, f"{command} {action.option_strings[0]}: {text!r}"
        if not action.required and "(default:" in text:  # argparse fills %(default)s in: it must render
            assert text % {"default": action.default, "prog": parser.prog}


def test_help_of_every_command_renders_with_the_defaults(capsys):
    for command in ("eval", "frontier", "reproduce", "collect"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        out = capsys.readouterr().out
        assert "(default: 100)" in out or command in ("reproduce", "collect"), command
        assert "--no-progress" in out
    with pytest.raises(SystemExit):
        main(["train", "ecpo", "--help"])
    out = capsys.readouterr().out
    assert "--env-kwarg KEY=VALUE" in out and "--final-eval-episodes" in out and "--recording" in out


# ----- policies ---------------------------------------------------------------------------------------------
USER_MODULE = '''
import numpy as np

class FirstApplicable:
    name = "first-applicable"
    def reset(self, env, seed=None):
        pass
    def act(self, obs, env):
        return int(np.flatnonzero(env.unwrapped.action_masks())[0])
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "cli_agents.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("cli_agents", None)
    yield "cli_agents:FirstApplicable"
    sys.modules.pop("cli_agents", None)


def test_module_callable_policies_run_on_every_command_that_takes_a_policy(user_module, tmp_path, monkeypatch,
                                                                           capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    env = "HarnessPlan-v1"
    assert main(["eval", env, "--policy", user_module, "--episodes", "2", "--json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert main(["frontier", env, "--policy", f"mine={user_module}", "--episodes", "2", "--json",
                 "--out", str(tmp_path / "fr")]) == 0
    rows = {r["policy"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["mine"]["quality_mean"] == pytest.approx(direct["quality_mean"])
    assert rows["mine"]["mean_steps"] == direct["mean_steps"] != rows["static"]["mean_steps"]
    assert main(["frontier", env, "--policy", user_module, "--episodes", "2", "--json",
                 "--out", str(tmp_path / "fr2")]) == 0
    assert user_module in {r["policy"] for r in json.loads(capsys.readouterr().out)}  # not cut at the dot
    assert main(["compare", env, "--policy", "static", "--policy", user_module, "--episodes", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[1]["mean_steps"] == direct["mean_steps"]
    assert main(["play", env, "--policy", user_module]) == 0
    assert "first-applicable" in capsys.readouterr().out
    assert main(["collect", env, "--policy", user_module, "--episodes", "2", "--out", "harness/cli-user-v0",
                 "--ref-episodes", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 2


def test_the_installed_script_finds_a_module_callable_in_the_current_folder(tmp_path):
    script = Path(sys.executable).parent / "harness-gym"
    if not script.is_file():
        pytest.skip(f"no harness-gym script beside {sys.executable}")
    (tmp_path / "my_policy.py").write_text(USER_MODULE + "\n\ndef make():\n    return FirstApplicable()\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}  # this checkout, not the folder
    done = subprocess.run([str(script), "eval", "HarnessPlan-v1", "--policy", "my_policy:make", "--episodes", "2",
                           "--json", "--no-progress"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["policy"] == "my_policy:make"


def test_a_bad_policy_is_the_same_one_line_on_every_command(capsys, tmp_path):
    for argv in (["eval", "HarnessPlan-v1"], ["compare", "HarnessPlan-v1"], ["play", "HarnessPlan-v1"],
                 ["collect", "HarnessPlan-v1", "--episodes", "1", "--out", "harness/x-v0"],
                 ["frontier", "HarnessPlan-v1", "--out", str(tmp_path)]):
        with pytest.raises(SystemExit) as exc:
            main([*argv, "--policy", "forced_check"])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "did you mean 'forced-check'" in err[0], (argv, err)


# ----- env keywords, progress and the closing evaluation of every trainer -------------------------------------
def test_online_trainers_take_env_kwarg_repeated_and_the_worker_flags(tmp_path, capsys):
    out = tmp_path / "m.zip"
    argv = ["train", "ppo-sparse", "--env", "HarnessPlan-v1", "--steps", "128", "--n-steps", "64", "--num-envs", "2",
            "--eval-every", "0", "--final-eval-episodes", "3", "--out", str(out), "--log-dir", str(tmp_path / "r"),
            "--env-kwarg", "budget=5", "--env-kwarg", "split=\"val\"", "--budget-units", "none",
            "--prices", "self-hosted", "--no-progress", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    assert printed["eval"]["episodes"] == 3 and printed["eval"]["mean_steps"] <= 5
    assert captured.err == ""  # --no-progress: no bar
    from harness_gym_baselines.policies.registry import make_policy

    config = make_policy(str(out)).model.harness_gym["config"]
    assert sorted(config["env_kwargs"]) == ['budget=5', 'split="val"']
    assert config["prices"] == "self-hosted" and config["budget_units"] is None
    with pytest.raises(SystemExit) as exc:  # the old space-separated list is one clear line
        main([*argv[:-4], "--env-kwarg", "budget=5", "budget_units=9"])
    assert exc.value.code == 2 and "unrecognized arguments: budget_units=9" in capsys.readouterr().err
    assert main([*argv[:-4], "--env-kwarg", "budjet=5"]) == 2
    assert "budjet" in capsys.readouterr().err


@pytest.mark.parametrize("algo", ONLINE)
def test_online_trainers_build_their_env_at_the_cost_weight_prices_and_budget_asked(algo, tmp_path, monkeypatch,
                                                                                    capsys):
    import harness_gym_baselines.algos.online_common as online_common
    from harness_gym_baselines.policies.registry import make_policy

    built = []

    def recording_vec_env(*args, **kwargs):
        built.append(make_sb3_vec_env(*args, **kwargs))
        return built[-1]

    make_sb3_vec_env = online_common.make_sb3_vec_env
    monkeypatch.setattr(online_common, "make_sb3_vec_env", recording_vec_env)
    out = tmp_path / "m.zip"
    base = ["train", algo, "--env", "HarnessPlan-v1", "--steps", "256", "--n-steps", "64", "--eval-every", "0",
            "--final-eval-episodes", "0", "--out", str(out), "--log-dir", str(tmp_path / "r"), "--no-progress"]
    if algo.startswith("ecpo"):
        base += ["--preference-episodes", "20", "--preference-steps", "5"]
    flags = ["--cost-weight", "0.1", "--prices", "frontier-hosted", "--budget-units", "5", "--num-envs", "2"]
    assert main([*base, *flags]) == 0
    capsys.readouterr()
    assert len(built) == 1 and built[0].num_envs == 2
    for env in built[0].envs:
        henv = env.unwrapped
        assert (henv.cost_weight, henv.prices.name, henv.budget_units) == (0.1, "frontier-hosted", 5.0)
    config = make_policy(str(out)).model.harness_gym["config"]
    assert (config["cost_weight"], config["prices"], config["budget_units"], config["n_envs"]) == (
        0.1, "frontier-hosted", 5.0, 2)
    for key, value, flag in (("prices", '"self-hosted"', "--prices"), ("budget_units", "5", "--budget-units"),
                             ("cost_weight", "0.1", "--cost-weight")):  # each env keyword has its flag
        assert main([*base, "--env-kwarg", f"{key}={value}"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"--env-kwarg {key}=...: the trainers take {flag}" in err[0], err
    for flag, bad, said in (("--prices", "frontier-hostd", "frontier-hosted"), ("--budget-units", "-3", "> 0"),
                            ("--budget-units", "lots", "expected auto, none or a number")):
        with pytest.raises(SystemExit) as exc:
            main([*base, flag, bad])
        err = capsys.readouterr().err.strip().splitlines()
        assert exc.value.code == 2 and len(err) == 1 and flag in err[0] and said in err[0], err


@pytest.mark.parametrize("algo", ONLINE)
def test_every_online_trainer_ends_with_the_quick_evaluation_and_a_progress_bar(algo, tmp_path, capsys):
    extra = ["--preference-episodes", "30", "--preference-steps", "5"] if algo == "ecpo" else []
    assert main(["train", algo, "--env", "HarnessPlan-v1", "--steps", "128", "--n-steps", "64", "--eval-every", "0",
                 "--final-eval-episodes", "4", "--out", str(tmp_path / "m.zip"), "--log-dir", str(tmp_path / "r"),
                 *extra]) == 0
    captured = capsys.readouterr()
    assert re.search(r"^evaluation \(val split, 4 episodes, seed 0\): quality \d\.\d{3} \[", captured.out, re.M), \
        captured.out
    assert f"wrote {tmp_path / 'm.zip'} ({algo}" in captured.out and "training" in captured.err


def test_eval_and_compare_bars_turn_off(capsys):
    assert main(["eval", "HarnessPlan-v1", "--policy", "static", "--episodes", "3"]) == 0
    assert "static" in capsys.readouterr().err  # the tqdm bar
    for argv in (["eval", "--policy", "static"], ["compare", "--policy", "static", "--policy", "thorough"]):
        assert main([argv[0], "HarnessPlan-v1", *argv[1:], "--episodes", "3", "--no-progress"]) == 0
        assert capsys.readouterr().err == ""


# ----- view and collect errors ------------------------------------------------------------------------------
def test_view_of_a_missing_file_is_one_line_without_the_minari_download_hint(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    for run in (str(tmp_path / "episodes.json"), "harness/nowhere-v0"):
        assert main(["view", run, "--out", str(tmp_path / "v.html")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "no such file" in err[0] and run in err[0], err
        assert "download" not in err[0].lower()


def test_recollecting_with_other_settings_names_the_settings_that_differ(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    base = ["collect", "HarnessPlan-v1", "--out", "harness/again-v0", "--ref-episodes", "0", "--no-progress"]
    assert main([*base, "--episodes", "2"]) == 0
    capsys.readouterr()
    assert main([*base, "--episodes", "3", "--seed", "4", "--env-kwarg", "budget=9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "episodes: 2 there, 3 requested" in err[0] and "seed: 0 there, 4 requested" in err[0]
    assert 'env_kwargs.budget: "(unset)" there, 9 requested' in err[0]
    assert "split" not in err[0] and "{" not in err[0]  # only what differs, no dict dump


# ----- replaying a recording ----------------------------------------------------------------------------------
def test_compare_with_the_shipped_recording_replays_exactly_its_pairs_and_names_them_on_a_miss(capsys):
    rec = str(data_path("recordings", "smollm2.json"))
    recorded = [ep for ep in json.loads(Path(rec).read_text())["episodes"]
                if ep["env_id"] == "HarnessCode-v2" and ep["policy"] == "forced-check"]
    assert main(["compare", "HarnessCode-v2", "--recording", rec, "--policy", "forced-check", "--policy", "static",
                 "--json", "--no-progress"]) == 0
    summaries = json.loads(capsys.readouterr().out)
    assert [s["episodes"] for s in summaries] == [len(recorded)] * 2
    assert summaries[0]["quality_mean"] == pytest.approx(np.mean([ep["quality"] for ep in recorded]))
    assert main(["eval", "HarnessCode-v2", "--recording", rec, "--policy", "static", "--episodes", "3", "--json",
                 "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 3
    assert main(["eval", "HarnessCode-v2", "--recording", rec, "--policy", "static", "--episodes", "11"]) == 2
    assert "holds 10 (task, seed) pairs" in capsys.readouterr().err
    # a controller the recording never saw: one line naming the pairs it holds, not a bare CacheMissError
    assert main(["compare", "HarnessCode-v2", "--recording", rec, "--policy", "random", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("harness-gym compare: replaying the 10 recorded (task, seed) pairs")
    assert len(err) == 2 and "(code-strings-longest_word, 0)" in err[1] and "--cache-mode auto" in err[1]


def test_a_recording_replays_with_its_own_settings_and_a_wrong_one_is_named(tmp_path, capsys):
    from harness_gym.workers.fake_server import FakeOpenAIServer
    from tests.test_llm_worker import ReferenceModel

    env, cache = "HarnessCode-v1", tmp_path / "calls.sqlite"
    run = ["eval", env, "--policy", "forced-check", "--episodes", "2", "--json", "--no-progress"]
    with FakeOpenAIServer(ReferenceModel(env)) as srv:
        assert main([*run, "--worker", "openai", "--base-url", srv.base_url, "--model", "fake", "--max-tokens", "256",
                     "--cache", str(cache), "--cache-mode", "record"]) == 0
    recorded = json.loads(capsys.readouterr().out)
    manifest = tmp_path / "rec.json"
    probe = gym.make(env)
    seeds = [episode_seed(0, i) for i in range(2)]
    pairs = [(probe.reset(seed=s, options={"split": "test"})[1]["task_id"], s) for s in seeds]
    probe.close()
    manifest.write_text(json.dumps({"cache": cache.name, "worker": {"model": "fake", "max_tokens": 256,
                                                                    "temperature": 0.0},
                                    "env_kwargs": {env: {"prices": "cheap-hosted"}},  # what it was recorded under
                                    "episodes": [{"env_id": env, "task_id": t, "seed": s, "policy": "forced-check"}
                                                 for t, s in pairs]}))
    assert main([*run, "--recording", str(manifest)]) == 0  # no server: every call from the cache
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["quality_mean"] == recorded["quality_mean"] and replayed["cost_mean"] == recorded["cost_mean"]

    # by hand, without the recording's max_tokens: the miss names the recorded setting and the flag
    assert main([*run, "--worker", "openai", "--model", "fake", "--cache", str(cache), "--cache-mode", "replay"]) == 1
    err = capsys.readouterr().err
    assert "CacheMissError" in err and "max_tokens=256 (asked 512)" in err and "--max-tokens 256" in err
    # a flag that contradicts the recording, and an env it holds no episode of: one line each
    assert main([*run, "--recording", str(manifest), "--max-tokens", "512"]) == 2
    assert "--max-tokens 512: --recording" in capsys.readouterr().err
    assert main([*run, "--recording", str(manifest), "--prices", "frontier-hosted"]) == 2
    assert "recorded with prices=cheap-hosted" in capsys.readouterr().err
    assert main(["eval", "HarnessPlan-v1", "--policy", "static", "--recording", str(manifest)]) == 2
    assert f"records episodes of {env}, not of HarnessPlan-v1" in capsys.readouterr().err


# ----- the edges a newcomer hits first ------------------------------------------------------------------------
def test_piped_compare_prints_plain_columns_that_never_wrap(capsys):
    assert main(["compare", "HarnessPlan-v1", "--policy", "static", "--policy", "forced-check", "--episodes", "2",
                 "--no-progress"]) == 0  # capsys is no terminal, as a pipe is not
    lines = capsys.readouterr().out.splitlines()
    assert not any("│" in line or "┃" in line for line in lines)
    header = next(line for line in lines if line.lstrip().startswith("#"))
    assert "quality [95% CI]" in header and "check before submit" in header and "return" in header
    for i, name in enumerate(("static", "forced-check"), start=1):
        row = next(line for line in lines if re.match(rf"{i}\s+{name}\s", line))
        assert re.search(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", row) and len(row.split()) >= 12


def _placeholder(action: argparse.Action) -> list[str]:
    """A value the action accepts, for parsing a command line up to its unknown flag."""
    if action.dest == "policy":
        return ["static"]
    if action.choices:
        return [next(iter(action.choices))]
    if action.type in (int, float) or getattr(action.type, "__name__", "") == "positive_int":
        return ["1"]
    return ["HarnessPlan-v1" if "env" in action.dest else "x"]


def _minimal_argv(parser: argparse.ArgumentParser) -> list[str]:
    argv: list[str] = []
    for action in parser._actions:
        if not action.option_strings and action.nargs != argparse.REMAINDER:
            argv += _placeholder(action)
        elif action.required:
            argv += [action.option_strings[0], *_placeholder(action)]
    return argv


@pytest.mark.parametrize("command", sorted(c for c in PARSERS if c != "train"))
def test_an_unknown_flag_on_any_command_gets_the_closest_flag(command, capsys):
    parser = PARSERS[command]
    flag = max((f for a in parser._actions for f in a.option_strings if f.startswith("--") and f != "--help"),
               key=len)
    typo = flag[:3] + flag[4] + flag[3] + flag[5:]  # two letters swapped
    argv = [*_minimal_argv(parser), typo, "1"]
    with pytest.raises(SystemExit) as exc:
        if command.startswith("train "):
            train_parser(command.split()[1]).parse_args(argv)
        else:
            build_parser().parse_args([command, *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"unrecognized arguments: {typo}" in err and f"did you mean '{flag}'" in err, err
    assert err.startswith(f"{parser.prog}: error:") and len(err.strip().splitlines()) == 1


def test_a_mistyped_command_gets_the_closest_one(capsys):
    with pytest.raises(SystemExit):
        main(["evl", "HarnessPlan-v1"])
    assert "did you mean 'eval'?" in capsys.readouterr().err


SYNONYMS = {"--manifest": "--recording", "--test-episodes": "--episodes"}
"""a flag some command once spelled its own way -> the name every command uses for the same thing"""
RUNS_EPISODES = {"eval", "compare", "frontier", "search-script", "collect"}
"""the commands that play and report episodes: each takes --episodes and --seed, as the README says"""


def test_options_that_mean_the_same_thing_have_the_same_name_on_every_command():
    for command, parser in PARSERS.items():
        flags = options(parser)
        for alias, name in SYNONYMS.items():
            if alias in flags:
                assert name in flags and flags[name] is flags[alias], f"{command}: {alias} without {name}"
        if command in RUNS_EPISODES:
            assert {"--episodes", "--seed"} <= set(flags), command


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_every_trainer_describes_itself_with_whole_sentences(name, capsys):
    summary = load_trainer(name).summary
    assert summary.endswith(".") and ":mod:" not in summary and "``" not in summary, summary
    with pytest.raises(SystemExit):
        main(["train", name, "--help"])
    def joined(text: str) -> str:  # argparse breaks lines after hyphens
        return re.sub(r"-\s+", "-", " ".join(text.split()))

    assert joined(summary) in joined(capsys.readouterr().out)
