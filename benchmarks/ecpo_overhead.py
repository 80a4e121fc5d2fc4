"""ECPO's wall time over plain sb3-contrib MaskablePPO for the same steps, env and settings, in one run.

    python benchmarks/ecpo_overhead.py [--env HarnessResearchQA-v1] [--steps 20000] [--repeats 1]

Plain: ``MaskablePPO.learn`` on the same vector env (:func:`harness_gym_baselines.algos.online_common.make_training_env`) with the same
hyperparameters (:func:`harness_gym_baselines.algos.online_common.make_model`), no wrapper, no callback, no TensorBoard. ECPO:
:func:`harness_gym_baselines.algos.ecpo.train` end to end: the in-memory behaviour buffer and the Bradley-Terry fit (one-off),
the evidence wrapper on every step, the calibration episodes on the validation split, logging and the save.
Runs alternate (plain, ECPO, plain, ...); the medians are reported. Target: ECPO at most 1.15x plain.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from harness_gym_baselines.algos.ecpo import ECPOConfig, train
from harness_gym_baselines.algos.offline_common import seed_everything
from harness_gym_baselines.algos.online_common import make_model, make_training_env
from harness_gym_baselines.policies.sb3_zip import SB3Policy


def plain_seconds(cfg: ECPOConfig) -> float:
    """Wall time of plain MaskablePPO for ``cfg.steps`` steps (env construction included, as in ECPO's)."""
    start = time.perf_counter()
    seed_everything(cfg.seed, cfg.torch_threads)
    venv = make_training_env(cfg)
    model = make_model(cfg, venv)
    model.learn(total_timesteps=cfg.steps)
    venv.close()
    return time.perf_counter() - start


def ecpo_seconds(cfg: ECPOConfig) -> tuple[float, float, float]:
    """Wall time of ECPO's train() for ``cfg.steps`` steps, and the parts spent on the preference model
    (buffer + fit) and on the calibration episodes."""
    start = time.perf_counter()
    policy: SB3Policy = train(cfg)
    total = time.perf_counter() - start
    meta = policy.model.harness_gym
    return total, meta["preference_seconds"], meta["eval_history"][-1]["eval_seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="HarnessResearchQA-v1")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = ECPOConfig(env_id=args.env, steps=args.steps, seed=args.seed, out=str(Path(tmp) / "ecpo.zip"),
                         log_dir=str(Path(tmp) / "runs"), final_eval_episodes=0, progress=False)
        plain, ecpo, pref, calib = [], [], [], []
        for _ in range(args.repeats):
            plain.append(plain_seconds(cfg))
            total, pref_s, calib_s = ecpo_seconds(cfg)
            ecpo.append(total)
            pref.append(pref_s)
            calib.append(calib_s)
    p, e = statistics.median(plain), statistics.median(ecpo)
    pr, ca = statistics.median(pref), statistics.median(calib)
    print(f"{args.env}, {args.steps} steps, {cfg.n_envs} envs, seed {args.seed}, {args.repeats} repeat(s)")
    print(f"plain MaskablePPO: {p:.1f} s   ECPO: {e:.1f} s   ratio {e / p:.3f}x (target <= 1.15x)")
    print(f"  of ECPO: preference buffer + Bradley-Terry fit {pr:.1f} s, calibration episodes {ca:.1f} s, "
          f"PPO with the evidence wrapper {e - pr - ca:.1f} s (plain: {p:.1f} s; the machine's load shows here)")
    print(f"ratio without the one-off preference fit: {(e - pr) / p:.3f}x")


if __name__ == "__main__":
    main()
