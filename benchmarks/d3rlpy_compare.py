"""Anchor comparison: d3rlpy's DiscreteBC and DiscreteCQL beside our BC and AWR on one Minari dataset.

d3rlpy pins an older gymnasium (d3rlpy 2.8.1 wants gymnasium==1.0.0), so it lives in its **own venv** and must
never be installed into the main environment::

    python -m venv /tmp/d3rlpy-venv
    /tmp/d3rlpy-venv/bin/pip install -c /work/main/constraints.txt d3rlpy    # constraints: the local torch

The d3rlpy venv never imports harness_gym or Minari. The run has three stages, all driven from the main env
by the default ``all`` command:

1. ``export`` (main env): the dataset as flat arrays (``harness_gym.datasets.export_npz``).
2. ``train-d3rlpy`` (d3rlpy venv, run as a subprocess of ``all``): DiscreteBC and DiscreteCQL on those
   arrays, with our network (MLP 64-64, ReLU), our batch size (256) and our number of gradient steps. Each
   trained network (the BC policy's logits, CQL's Q-values) is written as a ``harness_gym.learned`` model file:
   d3rlpy's encoder + head is the same Linear-ReLU stack as :class:`harness_gym_baselines.policies.learned.MLP`, so the weights
   map one to one and ``harness-gym eval --policy FILE`` runs it (masked argmax; for CQL, over Q-values).
3. ``evaluate`` (main env): our BC and AWR (sample and fitted advantage) are trained on the same dataset; all four are evaluated on the
   test split (same episodes for each) and printed with their training times.

Deviations from d3rlpy's defaults, and why: CQL's learning rate 1e-3 (the default 6.25e-5 is tuned for Atari
runs of millions of steps, ours are ~2k), ``target_update_interval=100`` (the default 8000 exceeds the run),
``gamma=1.0`` (the objective is the undiscounted terminal quality). d3rlpy trains without action masks (it
cannot take them); masks are applied at evaluation, as for ours.

Example::

    python benchmarks/d3rlpy_compare.py all HarnessKnowledge-v1 --dataset harness/knowledge-behaviour-seed0-v0 \\
        --datasets-path /tmp/hg6/offline/minari --out /tmp/hg6/d3rlpy
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np

HIDDEN = (64, 64)
BATCH = 256
MODEL_FORMAT = "harness_gym.learned/1"  # harness_gym_baselines.policies.learned.MODEL_FORMAT (not importable in the d3rlpy venv)


def epochs_to_steps(n_transitions: int, epochs: int) -> int:
    """Gradient steps of our trainers for ``epochs`` passes (harness_gym_baselines.algos.offline_common.minibatches)."""
    return epochs * max(1, n_transitions // BATCH)


def cmd_export(args: argparse.Namespace) -> None:
    from harness_gym.datasets import export_npz

    print(export_npz(args.dataset, Path(args.out) / "dataset.npz"))


def _to_model_file(path: Path, algo: str, encoder, head, feature_names: list[str], args: argparse.Namespace,
                   config: dict) -> None:
    """Write d3rlpy's encoder (Sequential Linear/ReLU) + linear head as a harness_gym.learned model file."""
    import torch

    linears = [m for m in encoder._layers if isinstance(m, torch.nn.Linear)] + [head]
    state = {}
    for i, layer in enumerate(linears):
        state[f"net.{2 * i}.weight"] = layer.weight.detach().cpu().clone()
        state[f"net.{2 * i}.bias"] = layer.bias.detach().cpu().clone()
    torch.save({"format": MODEL_FORMAT, "algo": algo, "env_id": args.env_id, "env_kwargs": {},
                "dataset_id": args.dataset, "config": config, "feature_names": feature_names,
                "hidden_sizes": list(HIDDEN), "n_actions": int(head.out_features), "state_dict": state}, path)


def cmd_train_d3rlpy(args: argparse.Namespace) -> None:
    import d3rlpy
    import torch

    torch.set_num_threads(1)
    z = np.load(Path(args.out) / "dataset.npz")
    feature_names = [str(f) for f in z["feature_names"]]
    dataset = d3rlpy.dataset.MDPDataset(
        observations=z["observations"].astype(np.float32), actions=z["actions"].astype(np.int64),
        rewards=z["rewards"].astype(np.float32), terminals=z["terminals"].astype(np.float32),
        timeouts=z["timeouts"].astype(np.float32), action_space=d3rlpy.ActionSpace.DISCRETE, action_size=7)
    steps = epochs_to_steps(len(z["actions"]), args.epochs)
    encoder = d3rlpy.models.VectorEncoderFactory(hidden_units=list(HIDDEN))
    algos = {
        "d3rlpy-discrete-bc": d3rlpy.algos.DiscreteBCConfig(batch_size=BATCH, encoder_factory=encoder),
        "d3rlpy-discrete-cql": d3rlpy.algos.DiscreteCQLConfig(batch_size=BATCH, encoder_factory=encoder,
                                                              learning_rate=1e-3, target_update_interval=100,
                                                              gamma=1.0),
    }
    times = {}
    for name, config in algos.items():
        d3rlpy.seed(args.seed)
        algo = config.create(device="cpu:0")
        start = time.perf_counter()
        algo.fit(dataset, n_steps=steps, n_steps_per_epoch=steps, show_progress=False, save_interval=10**9,
                 experiment_name=f"{args.env_id}__{name}__{args.seed}",
                 logger_adapter=d3rlpy.logging.NoopAdapterFactory())
        times[name] = time.perf_counter() - start
        modules = algo.impl._modules
        net = modules.imitator if name == "d3rlpy-discrete-bc" else modules.q_funcs[0]
        _to_model_file(Path(args.out) / f"{name}.pt", name, net._encoder, net._fc, feature_names, args,
                       {"d3rlpy": config.serialize(), "n_steps": steps, "seed": args.seed})
    (Path(args.out) / "d3rlpy_times.json").write_text(json.dumps({"steps": steps, "seconds": times}))


def cmd_evaluate(args: argparse.Namespace) -> None:
    from rich.console import Console
    from rich.table import Table

    from harness_gym.datasets import load_transitions
    from harness_gym_baselines.algos.awr import AWRConfig
    from harness_gym_baselines.algos.awr import train as train_awr
    from harness_gym_baselines.algos.bc import BCConfig
    from harness_gym_baselines.algos.bc import train as train_bc
    from harness_gym_baselines.evaluate import evaluate
    from harness_gym_baselines.policies.learned import load_policy

    out = Path(args.out)
    data = load_transitions(args.dataset)
    times = json.loads((out / "d3rlpy_times.json").read_text())["seconds"]
    common = {"dataset_id": args.dataset, "seed": args.seed, "epochs": args.epochs, "eval_episodes": 0,
              "log_dir": str(out / "runs")}
    for name, train, cfg in (("bc", train_bc, BCConfig(out=str(out / "bc.pt"), **common)),
                             ("awr", train_awr, AWRConfig(out=str(out / "awr.pt"), **common)),
                             ("awr-q", train_awr, AWRConfig(out=str(out / "awr-q.pt"), advantage="q", **common))):
        start = time.perf_counter()
        train(cfg, data)
        times[name] = time.perf_counter() - start
    table = Table(title=f"{args.env_id}: test split, {args.episodes} episodes, trained on {args.dataset} "
                        f"({len(data)} transitions, {args.epochs} epochs)")
    for col in ("learner", "quality [95% CI]", "check_before_submit", "train seconds"):
        table.add_column(col)
    rows = []
    for name in ("bc", "awr", "awr-q", "d3rlpy-discrete-bc", "d3rlpy-discrete-cql"):
        policy = load_policy(out / f"{name}.pt")
        policy.name = name
        r = evaluate(args.env_id, policy, episodes=args.episodes, split="test", seed=args.seed)
        rows.append({"learner": name, "quality_mean": r["quality_mean"], "quality_ci95": r["quality_ci95"],
                     "check_before_submit": r["patterns"]["check_before_submit"], "train_seconds": times[name]})
        lo, hi = r["quality_ci95"]
        table.add_row(name, f"{r['quality_mean']:.3f} [{lo:.3f}, {hi:.3f}]",
                      f"{r['patterns']['check_before_submit']:.3f}", f"{times[name]:.1f}")
    (out / "d3rlpy_compare.json").write_text(json.dumps(rows, indent=1))
    Console().print(table)


def cmd_all(args: argparse.Namespace) -> None:
    venv_python = Path(args.venv) / "bin" / "python"
    if not venv_python.exists():
        raise SystemExit(f"{venv_python} not found: create the d3rlpy venv first (see the module docstring)")
    cmd_export(args)
    forwarded = ["train-d3rlpy", args.env_id, "--dataset", args.dataset, "--out", args.out, "--seed",
                 str(args.seed), "--epochs", str(args.epochs)]
    subprocess.run([str(venv_python), __file__, *forwarded], check=True)
    cmd_evaluate(args)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("all", "export", "train-d3rlpy", "evaluate"))
    parser.add_argument("env_id")
    parser.add_argument("--dataset", required=True, help="Minari dataset id written by harness-gym collect")
    parser.add_argument("--out", required=True, help="folder for the exported arrays, models and results")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=30, help="our epochs; d3rlpy gets the same gradient steps")
    parser.add_argument("--episodes", type=int, default=200, help="test-split evaluation episodes")
    parser.add_argument("--venv", default="/tmp/d3rlpy-venv", help="the d3rlpy venv")
    parser.add_argument("--datasets-path", default=None, help="Minari datasets root (sets MINARI_DATASETS_PATH)")
    args = parser.parse_args(argv)
    if args.datasets_path:
        os.environ["MINARI_DATASETS_PATH"] = str(Path(args.datasets_path).resolve())
    Path(args.out).mkdir(parents=True, exist_ok=True)
    {"all": cmd_all, "export": cmd_export, "train-d3rlpy": cmd_train_d3rlpy, "evaluate": cmd_evaluate}[
        args.command](args)


if __name__ == "__main__":
    main()
