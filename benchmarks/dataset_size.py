"""Bytes per step of a Minari dataset written by ``harness_gym.datasets.collect``, old storage against new.

Collects the same episodes (the ``behaviour`` controller, simulated worker, fixed seed) twice into a temporary
Minari root and prints the size of each dataset's files divided by its number of steps:

- ``before``: every info key at every step, the file as Minari writes it (chunked arrays); the storage of
  earlier releases;
- ``after``: the defaults of :func:`harness_gym.datasets.collect` (``action_mask`` and ``invalid_action`` per
  step, the outcome once per episode, the file repacked with contiguous arrays).

Run ``python benchmarks/dataset_size.py [--env HarnessCode-v1] [--episodes 100]``; it takes a few seconds.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from unittest import mock


def folder_bytes(path: Path) -> int:
    """Total size of the files under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def measure(env_id: str, episodes: int, seed: int) -> dict[str, dict[str, float]]:
    """Collect ``episodes`` episodes with the old and the new storage settings; bytes per step of each.

    :param env_id: a registered env id
    :param episodes: episodes per dataset
    :param seed: the collection seed
    """
    from harness_gym import datasets
    from harness_gym_baselines.policies.registry import make_policy

    results = {}
    for label, info_keys, repack in (("before", None, False), ("after", datasets.STEP_INFO_KEYS, True)):
        dataset_id = f"bench/size-{label}-v0"
        if repack:
            ds = datasets.collect(env_id, make_policy("behaviour"), dataset_id, episodes=episodes, seed=seed,
                                  progress=False, info_keys=info_keys)
        else:
            with mock.patch.object(datasets, "repack_hdf5"):
                ds = datasets.collect(env_id, make_policy("behaviour"), dataset_id, episodes=episodes, seed=seed,
                                      progress=False, info_keys=info_keys)
        size = folder_bytes(Path(ds.storage.data_path))
        results[label] = {"bytes": size, "steps": ds.total_steps, "bytes_per_step": size / ds.total_steps}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="HarnessCode-v1")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        os.environ["MINARI_DATASETS_PATH"] = root
        results = measure(args.env, args.episodes, args.seed)
    for label, r in results.items():
        print(f"{label:>6}: {r['bytes_per_step']:8.0f} bytes/step  ({r['bytes']} bytes, {r['steps']} steps, "
              f"{args.episodes} episodes of {args.env})")
    print(f"ratio: {results['before']['bytes_per_step'] / results['after']['bytes_per_step']:.1f}x smaller")


if __name__ == "__main__":
    main()
