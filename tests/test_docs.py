"""Every registered env documents itself in Gymnasium's sections, and its docstring example runs."""

from __future__ import annotations

import doctest
import importlib

import gymnasium as gym
import pytest

import harness_gym
from harness_gym.core.state import FEATURE_NAMES

SECTIONS = ("## Description", "## Action Space", "## Observation Space", "## Rewards", "## Starting State",
            "## Episode End", "## Arguments")


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_env_docstring_has_every_section_and_the_feature_table(env_id):
    cls = gym.spec(env_id).entry_point
    module_name, class_name = cls.split(":")
    doc = getattr(importlib.import_module(module_name), class_name).__doc__
    for section in SECTIONS:
        assert section in doc, f"{env_id}: docstring lacks {section}"
    assert "{observation_table}" not in doc and "{episode_end}" not in doc
    for i, name in enumerate(FEATURE_NAMES):
        assert f"| {i} | {name} |" in doc
    assert f'gym.make("{env_id}"' in doc


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_env_docstring_example_runs(env_id):
    module = importlib.import_module(gym.spec(env_id).entry_point.split(":")[0])
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{env_id}: no example in the docstring"
    assert result.failed == 0
