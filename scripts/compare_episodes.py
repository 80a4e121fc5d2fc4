"""Record seeded episodes of the static and forced-check harnesses on every env id, or compare two records.

Used to show that a refactoring leaves behaviour unchanged: run ``record`` on the tree before and after (each
with its own ``PYTHONPATH``) and ``compare`` the two files. A record holds, per env id and policy, every
episode's quality and reward, the sha256 of its observation vectors (float32 bytes, reset and every step) and
of its infos (``exec_cached`` kept apart, see ``docs/harness_mdp.md``). Run it with the project virtualenv's
interpreter (``.venv/bin/python``, made by ``scripts/install.sh``)::

    PYTHONPATH=/path/to/old .venv/bin/python scripts/compare_episodes.py record old.json
    PYTHONPATH=$PWD .venv/bin/python scripts/compare_episodes.py record new.json
    .venv/bin/python scripts/compare_episodes.py compare old.json new.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

import gymnasium as gym
import numpy as np

POLICIES = ("static", "forced-check")


def _policy(name: str) -> Any:
    from harness_gym_baselines.policies.scripted import StaticPolicy

    return StaticPolicy(check=name == "forced-check")


def _info_digest(info: dict[str, Any]) -> str:
    kept = {k: v for k, v in info.items() if k != "exec_cached"}
    return json.dumps(kept, sort_keys=True, default=str)


def record_episodes(env_id: str, policy_name: str, episodes: int) -> dict[str, Any]:
    """Run ``episodes`` seeded episodes (seeds 0..episodes-1) and summarise them.

    :param env_id: a registered env id
    :param policy_name: ``"static"`` or ``"forced-check"``
    :param episodes: how many episodes
    """
    env = gym.make(env_id)
    policy = _policy(policy_name)
    obs_hash, info_hash = hashlib.sha256(), hashlib.sha256()
    qualities: list[float] = []
    rewards: list[float] = []
    cached: list[bool] = []
    for seed in range(episodes):
        obs, info = env.reset(seed=seed)
        policy.reset(env, seed)
        obs_hash.update(np.asarray(obs, dtype=np.float32).tobytes())
        info_hash.update(_info_digest(info).encode())
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, info = env.step(policy.act(obs, env))
            obs_hash.update(np.asarray(obs, dtype=np.float32).tobytes())
            info_hash.update(_info_digest(info).encode())
            cached.append(bool(info["exec_cached"]))
            total += float(reward)
            done = terminated or truncated
        qualities.append(float(info["quality"]))
        rewards.append(total)
    env.close()
    return {"qualities": qualities, "rewards": rewards, "obs_sha256": obs_hash.hexdigest(),
            "info_sha256": info_hash.hexdigest(), "exec_cached": sum(cached)}


def record(path: str, episodes: int) -> None:
    """Record every env id and policy into ``path`` (JSON).

    :param path: where the record is written
    :param episodes: episodes per env id and policy
    """
    import harness_gym

    out: dict[str, Any] = {"harness_gym": harness_gym.__file__}
    for env_id in harness_gym.ENV_IDS:
        for name in POLICIES:
            got = record_episodes(env_id, name, episodes)
            out[f"{env_id}/{name}"] = got
            print(f"{env_id:24s} {name:13s} mean quality {np.mean(got['qualities']):.4f} "
                  f"obs {got['obs_sha256'][:12]} exec_cached {got['exec_cached']}", flush=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)


def compare(old_path: str, new_path: str) -> int:
    """Print the differences between two records; 0 when none.

    :param old_path: the record made before
    :param new_path: the record made after
    """
    with open(old_path, encoding="utf-8") as fh:
        old = json.load(fh)
    with open(new_path, encoding="utf-8") as fh:
        new = json.load(fh)
    keys = sorted(k for k in set(old) | set(new) if k != "harness_gym")
    differ = 0
    for key in keys:
        if key not in old or key not in new:
            print(f"{key}: only in {'new' if key in new else 'old'}")
            differ += 1
            continue
        fields = [f for f in ("qualities", "rewards", "obs_sha256", "info_sha256", "exec_cached")
                  if old[key][f] != new[key][f]]
        print(f"{key:40s} {'identical' if not fields else 'DIFFERS in ' + ', '.join(fields)}"
              f" ({len(new[key]['qualities'])} episodes)")
        differ += bool(fields)
    print(f"{len(keys) - differ} of {len(keys)} env/policy pairs identical")
    return int(differ > 0)


def main(argv: list[str] | None = None) -> int:
    """Command line: ``record PATH [--episodes N]`` or ``compare OLD NEW``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("path")
    rec.add_argument("--episodes", type=int, default=30)
    cmp = sub.add_parser("compare")
    cmp.add_argument("old")
    cmp.add_argument("new")
    args = parser.parse_args(argv)
    if args.command == "record":
        record(args.path, args.episodes)
        return 0
    return compare(args.old, args.new)


if __name__ == "__main__":
    sys.exit(main())
