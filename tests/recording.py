"""Whether the shipped SmolLM2 recording (``envs_data/recordings/smollm2.json``) was made on registered env ids.

The recording and its learned controllers (``smollm2-awr-q-*.pt``) were remade on the -v2 MDP (issue 40:
``benchmarks/record_llm.py --tasks 10`` with a local SmolLM2 server, the -v2 ids' defaults, so its manifest names no
``env_kwargs``). Should its env ids be retired, the tests that replay it skip (:data:`needs_registered_recording`)
with a reason naming the stale ids, until it is re-recorded and its controllers are retrained on the new features.
An id that is still registered (a kept preset beside a newer version, as ``-v1`` beside ``-v2``) is not retired:
the recording replays there, under the env keywords its manifest names (none for the shipped one).
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

needs_registered_recording = pytest.mark.skipif(
    bool(STALE), reason=f"the shipped SmolLM2 recording ({MANIFEST.name}) was made on {', '.join(STALE)}, retired "
    "(no longer registered): it needs re-recording on the registered ids (benchmarks/record_llm.py) and its learned "
    "controllers retraining on their features")
"""Skip a test that replays the shipped recording while any env id it was made on is no longer registered."""
