"""The encoder's one-pass computation equals each feature's value function (the FEATURES table), on the states
of seeded random masked episodes in every env."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import harness_gym
from harness_gym.core import state as state_module
from harness_gym.core.state import FEATURE_NAMES, FEATURES


def table_values(st) -> np.ndarray:
    return np.array([f.value(st) for f in FEATURES], dtype=np.float32)


def test_the_inline_encoder_covers_the_table():
    assert state_module._ENCODE_INLINE
    assert state_module._INLINE_NAMES == FEATURE_NAMES


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_encode_equals_the_feature_value_functions(env_id):
    env = gym.make(env_id)
    henv = env.unwrapped
    rng = np.random.default_rng(7)
    seen_actions = set()
    for episode in range(6):
        obs, info = env.reset(seed=episode)
        assert np.array_equal(obs, table_values(henv._state))
        done = False
        while not done:
            allowed = np.flatnonzero(info["action_mask"])
            action = int(allowed[int(rng.random() * len(allowed))]) if rng.random() < 0.9 else int(rng.integers(7))
            obs, _, terminated, truncated, info = env.step(action)
            seen_actions.add(action)
            expected = table_values(henv._state)
            assert obs.dtype == np.float32 and np.array_equal(obs, expected), \
                [(n, a, b) for n, a, b in zip(FEATURE_NAMES, obs, expected) if a != b]
            done = terminated or truncated
    assert len(seen_actions) >= 4
    env.close()


def test_last_action_one_hot_for_every_value():
    env = gym.make("HarnessPlan-v1")
    env.reset(seed=0)
    st = env.unwrapped._state
    for last in (-3, -1, 0, 3, 6, 7, 9):
        st.last_action = last
        assert np.array_equal(st.encode(), table_values(st)), last
    env.close()


def test_mentions_equals_its_regex_on_generated_texts():
    import random
    import re

    from harness_gym.core.state import mentions

    rng = random.Random(0)
    alphabet = ["a", "b", "1", "5", "_", " ", ".", "-", "é", "ß", "٣", "²", "中", "\n", "/", ":", "ab", "a1", "15"]
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        key = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3)))
        expected = re.search(r"(?<!\w)" + re.escape(key) + r"(?!\w)", text) is not None
        assert mentions(text, key) == expected, (text, key)


def test_encode_of_two_envs_stepped_in_turn_reads_each_ones_signals():
    """The encoder keeps the last task signals it read: states of different tasks, encoded in turn, each get
    their own values (and tool histories of every error run length)."""
    envs = [gym.make("HarnessMultiTool-v1"), gym.make("HarnessKnowledge-v1"), gym.make("HarnessKnowledge-v1")]
    infos = [env.reset(seed=10 + i)[1] for i, env in enumerate(envs)]
    rng = np.random.default_rng(3)
    for _ in range(300):
        for i, env in enumerate(envs):
            allowed = np.flatnonzero(infos[i]["action_mask"])
            obs, _, terminated, truncated, infos[i] = env.step(int(allowed[int(rng.random() * len(allowed))]))
            assert np.array_equal(obs, table_values(env.unwrapped._state))
            if terminated or truncated:
                infos[i] = env.reset(seed=int(rng.integers(1000)))[1]
    for env in envs:
        env.close()
