"""One SHA-256 per registered env over seeded random masked episodes: what a speed change must leave unchanged.

    python benchmarks/step_digest.py [--episodes 20] [--env HarnessCode-v1 ...]

Per env, ``--episodes`` episodes with reset seeds 0, 1, ..., actions drawn as
:func:`throughput.random_masked_steps` draws them (uniform over ``info["action_mask"]``, from
``np.random.default_rng(0)``). The digest covers every reset's observation and info and every step's action,
observation, reward, ``terminated``, ``truncated`` and info: observations and numpy arrays as their dtype,
shape and bytes, everything else by ``repr`` with dict keys in their order. Each env runs on an empty on-disk
execution cache of its own (``HARNESS_GYM_CACHE_DIR`` in a temporary folder), so ``info["exec_cached"]`` is
the same in every run. Two checkouts give equal digests when their episodes are bit-identical.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
from typing import Any

import gymnasium as gym
import numpy as np

import harness_gym


def canonical(value: Any) -> bytes:
    """Bytes that identify ``value`` exactly: arrays by dtype, shape and data, containers element by element."""
    if isinstance(value, np.ndarray):
        return f"array({value.dtype.str},{value.shape})".encode() + value.tobytes()
    if isinstance(value, dict):
        return b"{" + b",".join(canonical(k) + b":" + canonical(v) for k, v in value.items()) + b"}"
    if isinstance(value, (list, tuple)):
        return b"[" + b",".join(canonical(v) for v in value) + b"]"
    return f"{type(value).__name__}:{value!r}".encode()


def env_digest(env_id: str, episodes: int) -> str:
    """The SHA-256 of ``episodes`` seeded random masked episodes of ``env_id``."""
    env = gym.make(env_id)
    n_actions = int(env.action_space.n)
    every_action = np.ones(n_actions, dtype=np.int8)
    rng = np.random.default_rng(0)
    digest = hashlib.sha256()
    try:
        for seed in range(episodes):
            obs, info = env.reset(seed=seed)
            digest.update(canonical(obs) + canonical(info))
            done = False
            while not done:
                allowed = np.flatnonzero(info.get("action_mask", every_action))
                action = int(allowed[int(rng.random() * len(allowed))])
                obs, reward, terminated, truncated, info = env.step(action)
                digest.update(canonical((action, obs, reward, terminated, truncated, info)))
                done = terminated or truncated
    finally:
        env.close()
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=20, help="episodes per env (default 20)")
    ap.add_argument("--env", action="append", help="env id (repeatable; default every registered one)")
    args = ap.parse_args(argv)
    for env_id in args.env or harness_gym.ENV_IDS:
        with tempfile.TemporaryDirectory(prefix="hg-digest-cache-") as cache_dir:
            os.environ["HARNESS_GYM_CACHE_DIR"] = cache_dir
            print(f"{env_id} {env_digest(env_id, args.episodes)}", flush=True)


if __name__ == "__main__":
    main()
