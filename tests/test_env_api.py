"""One keyword contract and the libraries around Gymnasium (issue 26): unknown ``gym.make`` keywords are a
one-line ``TypeError`` naming the closest accepted ones; ``info["action_mask"]`` on every reset and step;
``action_masks()`` through ``gym.make``'s wrappers and SB3's vector envs; an episode an outer time limit cuts
is unfinished in the evaluation summary, never a score of -1; Gymnasium's wrappers, SB3 and TorchRL on every
id (SB3's ``check_env`` on every id is in tests/test_envs.py)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import harness_gym
from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.workers import SimulatedWorker, WorkerProfile, make_worker

ENV_IDS = list(harness_gym.ENV_IDS)
GATHER_THEN_SUBMIT = (Action.OBSERVE, Action.RETRIEVE, Action.DRAFT, Action.CHECK, Action.SUBMIT)


def make_error(env_id: str, **kwargs) -> str:
    with pytest.raises(TypeError) as caught:
        gym.make(env_id, **kwargs)
    message = str(caught.value)
    assert "\n" not in message, message
    return message


# ----- 1. keywords --------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_misspelt_keyword_is_a_type_error_naming_the_closest(env_id):
    message = make_error(env_id, budgett=40)
    assert "unexpected keyword argument 'budgett'; did you mean 'budget'" in message
    assert "did you mean 'max_episode_steps'" in make_error(env_id, max_episode_step=3)
    assert "unexpected keyword argument 'zzzz'" in (nothing := make_error(env_id, zzzz=1))
    assert "did you mean" not in nothing


def test_a_domain_keyword_and_an_openai_option_are_suggested():
    assert "did you mean 'data_dir'" in make_error("HarnessCode-v1", dat_dir="x")
    assert "did you mean 'engine'" in make_error("HarnessDBBench-v1", enginee="mysql")
    assert "did you mean 'model'" in make_error("HarnessCode-v1", worker="openai", modle="m",
                                                base_url="http://127.0.0.1:9/v1")


def test_an_option_of_another_worker_names_the_worker_that_takes_it():
    message = make_error("HarnessCode-v1", model="x")
    assert "'model', an option of worker='openai'; worker='simulated' does not take it" in message
    domain = gym.make("HarnessCode-v1").unwrapped.domain
    instance = SimulatedWorker(WorkerProfile.for_domain(domain.name), domain.name)
    message = make_error("HarnessCode-v1", worker=instance, cache="x.sqlite")
    assert "worker='openai'; a Worker instance does not take it (set it on the instance)" in message
    with pytest.raises(TypeError, match="unexpected keyword argument 'prompt_dir'; did you mean 'prompts_dir'"):
        make_worker("simulated", "code", options={"prompt_dir": "x"})


def test_an_unknown_worker_name_stays_a_value_error():
    with pytest.raises(ValueError, match="unknown worker 'simulatd'"):
        gym.make("HarnessCode-v1", worker="simulatd")


# ----- 2, 3. the action mask ----------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_action_mask_is_in_every_info_and_reachable_through_the_wrappers(env_id):
    env = gym.make(env_id)
    get_masks = env.get_wrapper_attr("action_masks")
    obs, info = env.reset(seed=1)
    infos = [info]
    masks = [get_masks()]
    for action in GATHER_THEN_SUBMIT:
        *_, terminated, truncated, info = env.step(int(action))
        infos.append(info)
        masks.append(get_masks())
        if terminated or truncated:
            break
    assert terminated
    for info, mask in zip(infos, masks):
        assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (N_ACTIONS,)
        assert np.array_equal(info["action_mask"], mask.astype(np.int8))
    assert np.array_equal(masks[-1], env.unwrapped.action_masks())
    assert not infos[0]["action_mask"][Action.SUBMIT] and infos[-2]["action_mask"][Action.SUBMIT]  # no draft, draft
    env.close()


def test_sb3_dummy_vec_env_env_method_gives_the_masks_of_the_infos():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: gym.make("HarnessPlan-v1")] * 2)
    venv.seed(5)
    venv.reset()
    assert np.array_equal(np.stack(venv.env_method("action_masks")),
                          np.stack([i["action_mask"] for i in venv.reset_infos]).astype(bool))
    _, _, _, infos = venv.step(np.array([int(Action.DRAFT), int(Action.OBSERVE)]))
    masks = np.stack(venv.env_method("action_masks"))
    assert np.array_equal(masks, np.stack([i["action_mask"] for i in infos]).astype(bool))
    assert masks[0, Action.SUBMIT] and not masks[1, Action.SUBMIT]
    venv.close()


# ----- 4. an episode an outer time limit cuts -----------------------------------------------------------
def test_an_episode_cut_by_an_outer_time_limit_is_unfinished_never_a_score():
    from harness_gym_baselines.evaluate import evaluate, run_episodes, summarise
    from harness_gym_baselines.policies.registry import make_policy

    env_id, episodes = "HarnessPlan-v1", 8
    env = gym.make(env_id)
    full = run_episodes(env, make_policy("thorough"), episodes, split="test", seed=3)
    steps = sorted(r["steps"] for r in full)
    limit = steps[len(steps) // 2] - 1
    assert steps[0] <= limit < steps[-1]  # some episodes end within the limit, some do not
    cut = run_episodes(gym.wrappers.TimeLimit(env, max_episode_steps=limit), make_policy("thorough"), episodes,
                       split="test", seed=3)
    env.close()
    for whole, part in zip(full, cut):
        assert part["finished"] == (whole["steps"] <= limit)
        if part["finished"]:
            assert part["quality"] == whole["quality"]
        else:
            assert math.isnan(part["quality"]) and math.isnan(part["hms"]) and part["steps"] == limit
    summary = summarise(cut, env_id=env_id, policy="thorough", split="test", seconds=0.0)
    graded = [w["quality"] for w in full if w["steps"] <= limit]
    assert summary["n_unfinished"] == episodes - len(graded)
    assert summary["unfinished_rate"] == (episodes - len(graded)) / episodes
    assert summary["quality_mean"] == pytest.approx(np.mean(graded))
    assert summary["quality_ci95"][0] >= 0.0 and summary["return_mean"] >= 0.0

    never = evaluate(env_id, "thorough", episodes=3, seed=3, env_kwargs={"max_episode_steps": 1})
    assert never["n_unfinished"] == 3 and never["unfinished_rate"] == 1.0
    assert math.isnan(never["quality_mean"]) and math.isnan(never["success_rate"])


def test_the_episode_recorder_keeps_no_score_for_a_cut_episode():
    from harness_gym_baselines.report.episode_view import EpisodeRecorder, episode_html

    env = EpisodeRecorder(gym.wrappers.TimeLimit(gym.make("HarnessPlan-v1"), max_episode_steps=2))
    for actions in ((Action.OBSERVE, Action.OBSERVE), (Action.DRAFT, Action.SUBMIT)):
        env.reset(seed=0)
        for action in actions:
            env.step(int(action))
    cut, graded = env.episodes
    assert cut["quality"] is None and cut["hms"] is None and not cut["success"]
    assert "quality n/a" in episode_html(cut)
    assert 0.0 <= graded["quality"] <= 1.0
    env.close()


# ----- 5. Gymnasium's wrappers, TorchRL -----------------------------------------------------------------
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_wrappers_and_a_sync_vector_env_run_on_every_id(env_id):
    from gymnasium.wrappers import RecordEpisodeStatistics, TimeLimit

    env = RecordEpisodeStatistics(TimeLimit(gym.make(env_id), max_episode_steps=3))
    env.reset(seed=0)
    for _ in range(3):
        *_, terminated, truncated, info = env.step(int(Action.OBSERVE))
    assert truncated and not terminated and info["episode"]["l"] == 3 and info["quality"] == -1.0
    assert np.array_equal(info["action_mask"], env.get_wrapper_attr("action_masks")().astype(np.int8))
    env.close()

    def make():
        return RecordEpisodeStatistics(gym.make(env_id))

    vec = gym.vector.SyncVectorEnv([make, make])
    _, infos = vec.reset(seed=[0, 1])
    assert infos["action_mask"].shape == (2, N_ACTIONS) and infos["action_mask"].dtype == np.int8
    _, rewards, terminated, _, infos = vec.step(np.array([int(Action.DRAFT), int(Action.SUBMIT)]))
    assert not terminated[0] and infos["action_mask"][0, Action.SUBMIT] == 1
    assert np.array_equal(vec.call("action_masks")[0], infos["action_mask"][0].astype(bool))
    vec.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_torchrl_gym_env_makes_and_steps_every_id(env_id):
    pytest.importorskip("torchrl")
    from torchrl.envs import GymEnv

    env = GymEnv(env_id, frame_skip=1)  # probes gym.make(frameskip=1) and retries without it on the TypeError
    env.set_seed(0)
    td = env.reset()
    assert tuple(td["observation"].shape) == (len(harness_gym.core.state.FEATURE_NAMES),)
    rollout = env.rollout(3, break_when_any_done=True)
    assert 1 <= rollout.batch_size[0] <= 3
    assert rollout["next", "observation"].shape[1:] == td["observation"].shape
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_torchrl_recipe_runs_a_masked_policy_that_respects_the_mask(env_id):
    """The TorchRL block of docs/harness_mdp.md, run as written on each id: the mask reaches the policy."""
    pytest.importorskip("torchrl")
    import re
    from pathlib import Path

    import torch

    doc = (Path(__file__).resolve().parents[1] / "docs" / "harness_mdp.md").read_text()
    section = doc.split("## TorchRL", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    assert 'ENV_ID = "HarnessCode-v1"' in block
    scope: dict = {}
    exec(compile(block.replace('ENV_ID = "HarnessCode-v1"', f"ENV_ID = {env_id!r}"), "harness_mdp.md", "exec"), scope)
    rollout, env = scope["rollout"], scope["env"]
    masks, actions = rollout["action_mask"], rollout["action"]
    assert masks.dtype == torch.bool and masks.shape == (len(actions), len(harness_gym.Action))
    assert not masks.all(), "a mask that allows everything would not show that it is respected"
    assert bool(masks.gather(-1, actions.unsqueeze(-1)).all()) and bool(rollout["next", "done"][-1])
    random = env.rollout(200, break_when_any_done=True)  # the masked action spec: random play stays applicable
    assert bool(random["action_mask"].gather(-1, random["action"].unsqueeze(-1)).all())
    env.close()


def _same_structure(a: object, b: object) -> bool:
    """Equal values, types and (for arrays) dtype, shape and bytes, container by container."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray) and a.dtype == object:
        return a.shape == b.shape and _same_structure(a.tolist(), b.tolist())
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same_structure(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_structure(x, y) for x, y in zip(a, b))
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("env_id", ["HarnessResearchQA-v1", "HarnessPlan-v1"])
def test_an_info_deep_copies_as_copy_deepcopy_copies_a_plain_dict(env_id):
    import copy

    from harness_gym.core.info import StepInfo

    env = gym.make(env_id)
    rng = np.random.default_rng(0)
    infos = []
    for seed in range(5):
        _, info = env.reset(seed=seed)
        infos.append(info)
        done = False
        while not done:
            allowed = np.flatnonzero(info["action_mask"])
            _, _, terminated, truncated, info = env.step(int(allowed[int(rng.random() * len(allowed))]))
            infos.append(info)
            done = terminated or truncated
    env.close()
    shared = {"a": 1}
    extra = StepInfo(nested={"deep": [1, {"x": 2.0}]}, shared=shared, again=shared, mixed={"k": np.float64(1.5)},
                     view=np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1], obj=np.array([{"o": 1}], dtype=object))
    for info in [*infos, extra]:
        assert type(info) is StepInfo
        batch = [info, info]
        copied = copy.deepcopy(batch)
        reference = copy.deepcopy([dict(info), dict(info)])
        assert copied[0] is copied[1] and type(copied[0]) is StepInfo
        assert _same_structure(dict(copied[0]), reference[0])
        for key, value in info.items():
            if not isinstance(value, (int, float, bool, str, type(None))):
                assert copied[0][key] is not value
    copied = copy.deepcopy(extra)
    assert copied["shared"] is copied["again"] and copied["obj"][0] is not extra["obj"][0]
    assert copied["view"].flags.c_contiguous == copy.deepcopy(extra["view"]).flags.c_contiguous
