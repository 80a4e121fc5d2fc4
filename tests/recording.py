"""Whether the shipped SmolLM2 recording (``envs_data/recordings/smollm2.json``) was made on the registered envs.

The recording and its learned controllers (``smollm2-awr-q-*.pt``) were remade on the -v1 MDP after issue 23
(``benchmarks/record_llm.py --tasks 10`` with a local SmolLM2 server). Should its env ids be retired again, the
tests that replay it skip (:data:`needs_v1_recording`) with a reason naming the stale ids, until it is re-recorded
and its controllers are retrained on the new features. An id that is still registered (``-v1`` beside ``-v2``: a
kept preset with its numbers) is not retired: the recording replays there, under the env keywords its manifest
names (the cost budget it was recorded under).
"""

from __future__ import annotations

import json

import pytest

import harness_gym
from harness_gym.core.paths import data_path

MANIFEST = data_path("recordings", "smollm2.json")
RECORDED_ENV_IDS: tuple[str, ...] = tuple(sorted({ep["env_id"] for ep in json.loads(MANIFEST.read_text())["episodes"]}))
"""The env ids the shipped recording's episodes were made on."""
STALE = sorted(set(RECORDED_ENV_IDS) - set(harness_gym.ALL_ENV_IDS))

needs_v1_recording = pytest.mark.skipif(
    bool(STALE), reason=f"the shipped SmolLM2 recording ({MANIFEST.name}) was made on {', '.join(STALE)}, retired "
    "(no longer registered): it needs re-recording on the registered ids (benchmarks/record_llm.py) and its learned "
    "controllers retraining on their features")
"""Skip a test that replays the shipped recording until it is re-recorded on the registered -v1 envs."""
