"""The example domain of docs/extending.md, registered with its own files and one ``gymnasium.register`` line."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

gym.register(id="HarnessToyExample-v1", entry_point="examples.toy_domain.env:HarnessToyEnv", max_episode_steps=100)


def test_example_passes_gymnasium_and_sb3_env_checks():
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gym.make("HarnessToyExample-v1")
    check_env(env.unwrapped, skip_render_check=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb3_check_env(env, warn=True)
    assert [str(w.message) for w in caught] == []
    env.close()


def test_example_episode_shows_the_support_ceiling():
    """Gather both operands, draft, check, submit: the quality is the grader's verdict on the draft, and a
    draft that passed CHECK can still grade 0 (the checker sees parity only)."""
    env = gym.make("HarnessToyExample-v1", budget=30)
    outcomes = set()
    for seed in range(40):
        env.reset(seed=seed, options={"task_id": "toy-0"})
        for action in (0, 0, 1, 2, 3, 4):
            obs, reward, terminated, truncated, info = env.step(action)
            assert not terminated and not truncated
        draft = env.unwrapped.context.draft
        passed = env.unwrapped.context.last_check.passed
        assert passed == (int(draft.content) % 2 == 0)  # toy-0 is "add 3 and 1"
        obs, reward, terminated, _, info = env.step(6)
        assert terminated and reward == info["quality"] == (1.0 if draft.content == "4" else 0.0)
        outcomes.add((passed, info["quality"]))
        assert obs.shape == env.observation_space.shape and np.all(obs >= env.observation_space.low)
    assert (True, 0.0) in outcomes and (True, 1.0) in outcomes, outcomes
    env.close()


def test_example_rejects_a_malformed_task_file(tmp_path):
    from examples.toy_domain.domain import HERE, ToyDomain
    from harness_gym.core.taskfile import TaskFileError

    (tmp_path / "corpus.jsonl").write_text((HERE / "corpus.jsonl").read_text())
    lines = (HERE / "tasks.jsonl").read_text().splitlines()
    (tmp_path / "tasks.jsonl").write_text("\n".join([lines[0], lines[1].replace('"operands": [4, 3]', '"operands": [4]')]))
    with pytest.raises(TaskFileError, match=r"tasks.jsonl, line 2, task 'toy-1', field 'operands'"):
        ToyDomain(tmp_path)
