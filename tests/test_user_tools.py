"""The library with the user's own tools: SB3 vector envs (make_vec_env and the gym.make_vec adapter) with PPO
and MaskablePPO, the user's own agent through ``--policy module:callable`` and ``evaluate()``, one-line CLI
errors, training output, compact datasets, ``play`` and ``compare`` output."""

from __future__ import annotations

import json
import re
import sys
import types

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor

import harness_gym
from harness_gym.env import UnsupportedRenderMode
from harness_gym.running.sb3 import SB3VecEnv, to_sb3_vec_env
from harness_gym_baselines.cli import main, row_labels
from harness_gym_baselines.evaluate import evaluate
from harness_gym_baselines.policies.registry import make_policy

TOY_ID = "HarnessToy-v1"
if TOY_ID not in gym.registry:
    gym.register(id=TOY_ID, entry_point="examples.toy_domain.env:HarnessToyEnv", max_episode_steps=100)

# the adapters need the user's copy of the public data; their generated defaults are what runs here
ENV_IDS = harness_gym.ENV_IDS


# ----- SB3 vector envs ----------------------------------------------------------------------------------------
class CountInvalid(BaseCallback):
    """Counts the steps whose info says the action was inapplicable, and the episodes that ended."""

    def __init__(self) -> None:
        super().__init__()
        self.invalid = self.steps = self.episodes = 0
        self.qualities: list[float] = []

    def _on_step(self) -> bool:
        for info, done in zip(self.locals["infos"], self.locals["dones"]):
            self.steps += 1
            self.invalid += int(info["invalid_action"])
            if done:
                self.episodes += 1
                self.qualities.append(info["quality"])
        return True


def train_and_count(algo: type, venv, steps: int = 256) -> CountInvalid:
    """Train ``algo`` for ``steps`` steps (one rollout of 128 steps on each of 2 envs and its update: the test
    suite runs on 2 shared cores) and count what the episodes did."""
    model = algo("MlpPolicy", venv, n_steps=128, batch_size=128, n_epochs=1, seed=0, device="cpu",
                 policy_kwargs={"net_arch": [32]})
    counter = CountInvalid()
    model.learn(steps, callback=counter)
    assert model.num_timesteps >= steps
    return counter


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_ppo_and_maskable_ppo_train_on_make_vec_env_and_on_adapted_make_vec(env_id):
    """Both vector envs run whole episodes (quality in [0, 1] at each end); with the env's masks MaskablePPO
    never takes an inapplicable action, while PPO without them does."""
    runs = {}
    for kind, venv in (("make_vec_env", make_vec_env(env_id, n_envs=2, seed=0)),
                       ("make_vec", VecMonitor(to_sb3_vec_env(gym.make_vec(env_id, 2, vectorization_mode="async"))))):
        try:
            runs[("ppo", kind)] = train_and_count(PPO, venv)
            runs[("maskable", kind)] = train_and_count(MaskablePPO, venv)
        finally:
            venv.close()
    for key, counter in runs.items():
        assert counter.episodes > 0, key
        assert all(0.0 <= q <= 1.0 for q in counter.qualities), key
        if key[0] == "maskable":
            assert counter.invalid == 0, key
    assert runs[("ppo", "make_vec_env")].invalid + runs[("ppo", "make_vec")].invalid > 0


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_maskable_ppo_on_subproc_and_sync(mode):
    # a fresh SubprocVecEnv process (forkserver) has not imported harness_gym: the "module:" prefix imports it
    venv = (make_vec_env("harness_gym:HarnessPlan-v1", n_envs=2, seed=0, vec_env_cls=SubprocVecEnv) if mode == "async"
            else to_sb3_vec_env(gym.make_vec("HarnessPlan-v1", 2, vectorization_mode="sync")))
    try:
        counter = train_and_count(MaskablePPO, venv, steps=256)
    finally:
        venv.close()
    assert counter.episodes > 0 and counter.invalid == 0


def scripted_rollout(venv, n_steps: int) -> list[tuple]:
    """Steps ``venv`` with the first applicable action of each sub-env; what SB3 sees at every step."""
    venv.seed(5)
    obs = venv.reset()
    out = [("reset", obs.copy())]
    for _ in range(n_steps):
        masks = np.stack(venv.env_method("action_masks"))
        actions = masks.argmax(axis=1)
        obs, rewards, dones, infos = venv.step(actions)
        terminal = [info.get("terminal_observation") for info in infos]
        out.append((obs.copy(), rewards.copy(), dones.copy(), terminal,
                    [info["task_id"] for info in infos], [info.get("TimeLimit.truncated") for info in infos]))
    venv.close()
    return out


@pytest.mark.parametrize("autoreset", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_adapter_sees_what_dummy_vec_env_sees(mode, autoreset):
    """Same seeds and actions: the adapted gym.make_vec env returns exactly what SB3's DummyVecEnv returns
    (observations after autoreset, rewards, dones, terminal observations, per-env infos)."""
    env_id = "HarnessMultiTool-v1"
    want = scripted_rollout(DummyVecEnv([lambda: gym.make(env_id)] * 2), 40)
    got = scripted_rollout(to_sb3_vec_env(gym.make_vec(env_id, 2, vectorization_mode=mode,
                                                       vector_kwargs={"autoreset_mode": autoreset})), 40)
    assert np.array_equal(want[0][1], got[0][1])
    assert any(step[2].any() for step in want[1:]), "no episode ended: the comparison would prove little"
    for t, (w, g) in enumerate(zip(want[1:], got[1:]), start=1):
        assert np.array_equal(w[0], g[0]) and np.array_equal(w[1], g[1]) and np.array_equal(w[2], g[2]), t
        for wt, gt in zip(w[3], g[3]):
            assert (wt is None and gt is None) or np.array_equal(wt, gt), t
        assert w[4] == g[4] and w[5] == g[5], t


def test_adapter_rejects_what_an_async_env_cannot_do():
    venv = to_sb3_vec_env(gym.make_vec("HarnessPlan-v1", 2, vectorization_mode="async"))
    try:
        venv.reset()
        assert venv.has_attr("action_masks") and not venv.has_attr("no_such_attribute")
        assert venv.get_attr("split") == ["train", "train"]
        with pytest.raises(ValueError, match="all its sub-envs at once"):
            venv.env_method("action_masks", indices=[1])
    finally:
        venv.close()
    with pytest.raises(TypeError, match="needs no adapter"):
        SB3VecEnv(make_vec_env("HarnessPlan-v1", n_envs=1))


def test_unsupported_render_mode_is_the_type_error_make_vec_env_retries_on():
    with pytest.raises(UnsupportedRenderMode) as caught:
        gym.make("HarnessPlan-v1", render_mode="rgb_array")
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, ValueError)
    venv = make_vec_env("HarnessPlan-v1", n_envs=2)
    assert venv.render_mode is None and venv.get_attr("render_mode") == [None, None]
    assert gym.make("HarnessPlan-v1", render_mode="ansi").unwrapped.render_mode == "ansi"


def test_action_masks_before_reset_is_an_error():
    env = gym.make("HarnessPlan-v1")
    with pytest.raises(RuntimeError, match="before reset"):
        env.unwrapped.action_masks()
    env.reset(seed=0)
    assert env.unwrapped.action_masks().dtype == bool


# ----- the user's own agent -----------------------------------------------------------------------------------
USER_MODULE = '''
import numpy as np

class FirstApplicable:
    """A user's agent: the lowest-numbered applicable action."""
    name = "first-applicable"
    def reset(self, env, seed=None):
        self.steps = 0
    def act(self, obs, env):
        self.steps += 1
        return int(np.flatnonzero(env.unwrapped.action_masks())[0])

def make_agent():
    return FirstApplicable()

NOT_A_POLICY = 3
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "my_agents.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_agents", None)
    yield "my_agents"
    sys.modules.pop("my_agents", None)


@pytest.mark.parametrize("spec", ["my_agents:make_agent", "my_agents:FirstApplicable"])
def test_module_callable_policy_runs_through_harness_gym_eval(user_module, spec, capsys):
    assert main(["eval", "HarnessPlan-v1", "--policy", spec, "--episodes", "4", "--seed", "2", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    import my_agents

    direct = evaluate("HarnessPlan-v1", my_agents.FirstApplicable(), episodes=4, seed=2)
    assert printed["policy"] == spec and printed["episodes"] == 4
    assert printed["quality_mean"] == pytest.approx(direct["quality_mean"])
    assert printed["mean_steps"] == pytest.approx(direct["mean_steps"]) and printed["invalid_action_rate"] == 0.0
    static = evaluate("HarnessPlan-v1", "static", episodes=4, seed=2)
    assert printed["mean_steps"] != static["mean_steps"]  # it really ran the user's agent


def test_make_policy_loads_module_callable(user_module):
    assert make_policy("my_agents:make_agent").name == "first-applicable"
    with pytest.raises(ValueError, match="neither a policy nor callable"):
        make_policy("my_agents:NOT_A_POLICY")


# ----- one-line CLI errors --------------------------------------------------------------------------------------
MISTAKES = [
    (["eval", "HarnessCod-v1", "--policy", "static"], ["HarnessCod-v1", "did you mean 'HarnessCode-v1'"]),
    (["eval", "HarnessCode-v1", "--policy", "forced_check"], ["forced_check", "did you mean 'forced-check'"]),
    (["eval", "HarnessCode-v1", "--policy", "models/missing.pt"], ["models/missing.pt", "no such model file"]),
    (["eval", "HarnessCode-v1", "--policy", "no_such_module_x:make"], ["no_such_module_x", "cannot import"]),
    (["eval", "HarnessCode-v1", "--policy", "static", "--env-kwarg", "budjet=3"],
     ["budjet", "did you mean 'budget'", "data_dir"]),
    (["eval", "HarnessCode-v1", "--policy", "static", "--env-kwarg", "budget=abc"], ["budget=abc", "expects int"]),
    (["eval", "HarnessCode-v1", "--policy", "static", "--env-kwarg", "budget=500"], ["budget=500", "[1, 100]"]),
    (["eval", "HarnessCode-v1", "--policy", "static", "--env-kwarg", "budget"], ["'budget'", "KEY=VALUE"]),
    (["play", "HarnessCode-v1", "--task-id", "code-strings-is_palindrom"],
     ["code-strings-is_palindrom", "did you mean 'code-strings-is_palindrome'"]),
    (["eval", "HarnessCode-v1", "--policy", "static", "--episodes", "0"], ["--episodes", "got 0"]),
    (["compare", "HarnessCode-v1", "--policy", "static", "--episodes", "-3"], ["--episodes", "got -3"]),
    (["eval", "HarnessCode-v1", "--policy", "static", "--split", "tst"], ["tst", "test"]),
    (["train", "awr", "--dataset", "harness/nowhere-v0"], ["harness/nowhere-v0", "harness-gym collect"]),
    (["train", "awr", "--dataset", "harness/nowhere-v0", "--beta", "hot"], ["--beta", "hot"]),
]


@pytest.mark.parametrize("argv, expected", MISTAKES, ids=[" ".join(a[:2] + a[-2:]) for a, _ in MISTAKES])
def test_each_cli_mistake_is_one_line_with_exit_status_2(argv, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for text in expected:
        assert text in lines[0], (text, lines[0])
    if "minari" not in lines[0].lower():
        assert "download=True" not in lines[0]


def test_debug_shows_the_traceback(capsys):
    with pytest.raises(ValueError, match="unknown env id"):
        main(["--debug", "eval", "HarnessCod-v1", "--policy", "static"])
    with pytest.raises(ValueError, match="unknown env id"):
        main(["eval", "HarnessCod-v1", "--policy", "static", "--debug"])


# ----- train output ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def toy_dataset_id(tmp_path_factory):
    from harness_gym import datasets

    root = tmp_path_factory.mktemp("minari")
    mp = pytest.MonkeyPatch()
    mp.setenv("MINARI_DATASETS_PATH", str(root))
    datasets.collect(TOY_ID, make_policy("behaviour"), "harness/toy-usertools-v0", episodes=40, seed=1,
                     progress=False)
    yield "harness/toy-usertools-v0"
    mp.undo()


def test_train_prints_loss_and_evaluation_and_names_the_variant(toy_dataset_id, tmp_path, capsys, monkeypatch):
    argv = ["train", "awr", "--dataset", toy_dataset_id, "--out", str(tmp_path / "m.pt"), "--epochs", "2",
            "--value-epochs", "2", "--advantage", "q", "--variant", "ablation", "--eval-episodes", "3",
            "--log-dir", str(tmp_path / "runs")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert re.search(r"final loss: value_loss \d+\.\d{4}, policy_loss -?\d+\.\d{4}", out), out
    assert re.search(r"evaluation \(val split, 3 episodes, seed 0\): quality \d\.\d{3} \[", out), out
    runs = [p.name for p in (tmp_path / "runs").iterdir()]
    assert len(runs) == 1 and runs[0].startswith(f"{TOY_ID}__awr-q-ablation__0__"), runs
    assert "policy" in captured.err and "epoch" in captured.err  # the progress bar


def test_wandb_flag_needs_wandb_and_mirrors_the_tensorboard_run(toy_dataset_id, tmp_path, capsys, monkeypatch):
    argv = ["train", "bc", "--dataset", toy_dataset_id, "--out", str(tmp_path / "m.pt"), "--epochs", "1",
            "--eval-episodes", "0", "--log-dir", str(tmp_path / "runs"), "--wandb", "--no-progress"]
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb fails as when it is not installed
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install wandb" in err[0]

    calls = []
    finished = []
    fake = types.ModuleType("wandb")
    fake.init = lambda **kwargs: calls.append(kwargs) or types.SimpleNamespace(finish=lambda: finished.append(1))
    monkeypatch.setitem(sys.modules, "wandb", fake)
    assert main(argv) == 0
    assert len(calls) == 1 and calls[0]["sync_tensorboard"] is True and finished == [1]
    assert calls[0]["name"].startswith(f"{TOY_ID}__bc__0__") and calls[0]["config"]["epochs"] == 1


# ----- datasets -------------------------------------------------------------------------------------------------
def test_datasets_are_small_and_read_back_plainly(tmp_path, monkeypatch):
    from pathlib import Path

    from harness_gym import datasets

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    ds = datasets.collect("HarnessCode-v1", make_policy("behaviour"), "harness/code-small-v0", episodes=40,
                          seed=0, progress=False)
    size = sum(f.stat().st_size for f in Path(ds.storage.data_path).rglob("*") if f.is_file())
    assert size / ds.total_steps <= 1024, size / ds.total_steps
    episodes = list(ds.iterate_episodes())
    assert set(episodes[0].infos) == {"action_mask", "invalid_action"}
    assert not any(np.signbit(ep.rewards).any() for ep in episodes)  # no -0.0
    outcomes = datasets.episode_outcomes(ds)
    assert len(outcomes) == 40 and all(isinstance(o["task_id"], str) for o in outcomes)
    assert [o["quality"] for o in outcomes] == pytest.approx([float(ep.rewards.sum()) for ep in episodes])
    eval_env = ds.recover_environment(eval_env=True)
    assert eval_env.unwrapped.split == "test" and ds.recover_environment().unwrapped.split == "train"
    eval_env.close()

    more = datasets.collect("HarnessCode-v1", make_policy("behaviour"), "harness/code-more-v0", episodes=3, seed=0,
                            progress=False, info_keys=("task_id", "evidence"))
    ep = next(datasets.iterate_episodes(more))
    assert set(ep.infos) == {"action_mask", "task_id", "evidence"}
    assert all(isinstance(t, str) for t in ep.infos["task_id"])
    with pytest.raises(ValueError, match="not info keys"):
        datasets.collect("HarnessCode-v1", make_policy("behaviour"), "harness/code-bad-v0", episodes=1, seed=0,
                         progress=False, info_keys=("qualty",))


# ----- play and compare output ----------------------------------------------------------------------------------
def test_play_shows_the_whole_task_and_each_draft(capsys):
    env = gym.make("HarnessKnowledge-v1")
    env.reset(seed=0, options={"split": "test"})
    task = env.unwrapped.task
    env.close()
    assert main(["play", "HarnessKnowledge-v1", "--task-id", task.task_id, "--width", "80"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines())
    flat = " ".join(out.split())
    assert " ".join(task.prompt.split()) in flat  # nothing cut
    assert "draft v1:" in out


def test_compare_rows_are_unambiguous_at_80_columns(tmp_path, user_module, capsys):
    (tmp_path / "a" / "models").mkdir(parents=True)
    (tmp_path / "b" / "models").mkdir(parents=True)
    paths = [str(tmp_path / "a" / "models" / "awr.pt"), str(tmp_path / "b" / "models" / "awr.pt"),
             str(tmp_path / "a" / "models" / "bc.pt")]
    for p in paths:
        open(p, "w").close()
    assert row_labels([*paths, "static", "static"]) == ["a/models/awr.pt", "b/models/awr.pt", "bc.pt", "static",
                                                      "static #2"]
    spec = "my_agents:make_agent"
    assert main(["compare", "HarnessPlan-v1", "--policy", "static", "--policy", "forced-check", "--policy", spec,
                 "--episodes", "2", "--width", "80"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines())
    for i, name in enumerate(("static", "forced-check", spec), start=1):
        assert f"#{i}: {name}" in out
        assert re.search(rf"│\s+{i} │", out), out


def test_every_path_in_the_help_texts_ships(capsys):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    texts = []
    for command in ("eval", "compare", "play", "collect", "train", "reproduce", "list"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        texts.append(capsys.readouterr().out)
    cited = set(re.findall(r"\b((?:docs|benchmarks|examples|scripts)/[\w./-]+\.\w+)", " ".join(texts)))
    assert cited, "the help texts cite no file (docs/evaluate.md is expected)"
    assert all((root / path).exists() for path in cited), cited


def test_the_evaluate_example_in_the_docs_runs():
    import doctest
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "evaluate.md"
    result = doctest.testfile(str(path), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0
