"""``harness-gym train NAME``: a trainer of :data:`~harness_gym_baselines.common.trainer_registry.TRAINERS`, its flags
from its config dataclass and the shared option groups.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from harness_gym_baselines.cli.env_options import (
    parse_env_kwargs,
    worker_options,
)
from harness_gym_baselines.cli.options import (
    COMMAND_OPTIONS,
    OneLineErrorParser,
    Subparsers,
    add_command,
    add_shared,
    add_shared_options,
)
from harness_gym_baselines.cli.output import clean_json, json_default
from harness_gym_baselines.common.dataclass_flags import add_dataclass_arguments, config_from_args
from harness_gym_baselines.common.options import (
    ONLINE_CONFIG_KEYWORDS,
    UsageError,
    check_dataset,
    check_env_kwargs,
    make_env,
    refuse_config_keywords,
)
from harness_gym_baselines.common.trainer_registry import TRAINERS, load_trainer


def train_parser(trainer_name: str) -> argparse.ArgumentParser:
    """The parser of ``harness-gym train NAME``: one flag per field of the trainer's config dataclass, then
    the shared option groups of :data:`COMMAND_OPTIONS` (an online trainer's are its env's).

    :param trainer_name: a key of :data:`harness_gym_baselines.common.trainer_registry.TRAINERS`
    """
    trainer = load_trainer(trainer_name)
    parser = OneLineErrorParser(prog=f"harness-gym train {trainer_name}", description=trainer.summary)
    add_dataclass_arguments(parser, trainer.config)
    fields = {f.name for f in dataclasses.fields(trainer.config)}
    groups = COMMAND_OPTIONS["train (online trainer)" if "env_id" in fields else "train (offline trainer)"]
    add_shared_options(parser, [g for g in groups if g != "cost-weight"], given=fields,
                       json_help="print the trained model's summary (file, run folder, losses, evaluation) as JSON")
    return parser


def _online_env_kwargs(ns: argparse.Namespace, cfg: Any) -> tuple[str, ...]:
    """An online trainer's ``env_kwargs`` with the ``env`` option group folded in (as ``KEY=JSON`` pairs),
    checked by making the env once with the config's ``cost_weight``, ``prices`` and ``budget_units``."""
    worker = ns.worker if ns.worker is not None or ns.recording is None else "openai"
    kwargs = parse_env_kwargs(cfg.env_kwargs, worker, ns.sandbox, worker_options(ns, [cfg.env_id]))
    refuse_config_keywords(kwargs)
    fixed = {key: getattr(cfg, key) for key in ONLINE_CONFIG_KEYWORDS}
    make_env(cfg.env_id, {**check_env_kwargs(cfg.env_id, kwargs), **fixed}).close()
    return tuple(f"{key}={json.dumps(value)}" for key, value in kwargs.items())


def cmd_train(args: argparse.Namespace) -> int:
    trainer = load_trainer(args.algo)
    ns = train_parser(args.algo).parse_args(args.options)
    cfg = config_from_args(trainer.config, ns)
    dataset_id = getattr(cfg, "dataset_id", None)  # offline trainers learn from a dataset, online ones from an env
    if dataset_id is not None:
        check_dataset(dataset_id)
    else:
        cfg = dataclasses.replace(cfg, env_kwargs=_online_env_kwargs(ns, cfg))
    try:
        policy = trainer.train(cfg)
    except ModuleNotFoundError as exc:
        if exc.name != "wandb":
            raise
        raise UsageError(str(exc)) from exc
    source = dataset_id or getattr(cfg, "env_id", None)
    report = getattr(policy, "report", None) or {}
    result = report.get("eval")
    if ns.json:
        print(json.dumps(clean_json({"out": cfg.out, "policy": policy.name, "trained_on": source, "seed": cfg.seed,
                                 "run_dir": report.get("run_dir"), "losses": report.get("losses") or {},
                                 "eval": result}), default=json_default))
        return 0
    print(f"wrote {cfg.out} ({policy.name}, trained on {source}, seed {cfg.seed})")
    if report.get("run_dir"):
        print(f"run: {report['run_dir']}")
    if report.get("losses"):
        print("final loss: " + ", ".join(f"{name} {value:.4f}" for name, value in report["losses"].items()))
    if result:
        lo, hi = result["quality_ci95"]
        print(f"evaluation ({result['split']} split, {result['episodes']} episodes, seed {cfg.seed}): quality "
              f"{result['quality_mean']:.3f} [{lo:.3f}, {hi:.3f}], success {result['success_rate']:.3f}, "
              f"HMS {result['hms_mean']:.3f}")
    return 0


def add_train(sub: Subparsers) -> None:
    """The parser of ``harness-gym train``."""
    p = add_command(sub, "train", f"train a controller ({' | '.join(TRAINERS)}): offline on a Minari dataset or "
                                  "online on an env", cmd_train,
                         description="harness-gym train NAME --help lists the flags of trainer NAME")
    p.add_argument("algo", choices=tuple(TRAINERS), metavar="NAME", help=f"the trainer: {', '.join(TRAINERS)}")
    p.add_argument("options", nargs=argparse.REMAINDER, help="the trainer's flags (from its config dataclass)")
    add_shared(p)
