"""The trainer registry: ``harness-gym train NAME`` for every entry of :data:`TRAINERS`, and the loader of the
model files each trainer writes.

A trainer is one module (CleanRL's shape: config, network, loss, loop, ``__main__``) that defines

- a ``@dataclass`` config of its settings, one documented field per setting (the command line builds the
  flags of ``harness-gym train NAME`` from it, see :mod:`harness_gym_baselines.common.dataclass_flags`),
  including ``out`` and either ``dataset_id`` (an offline trainer) or ``env_id`` (an online one);
- ``train(cfg, data: Transitions | None = None) -> Policy``: learn from ``cfg.dataset_id`` (or from ``data``)
  or from episodes of ``cfg.env_id``, write the model file ``cfg.out`` and return the controller;
- ``load(path) -> Policy``: the controller stored in a model file that ``train`` wrote. The file records the
  trainer's name under the key ``algo`` (:mod:`harness_gym_baselines.policies.model_files` reads it), so
  ``--policy FILE`` on every command is loaded by the trainer that wrote it.

Its ``if __name__ == "__main__":`` block calls :func:`run_trainer`, so that ``python -m MODULE ARGS`` is
``harness-gym train NAME ARGS``. Adding a trainer is that module plus one line in :data:`TRAINERS` (docs/extending.md, "A new trainer").
A preset of a trainer (``ppo-sparse`` and ``ppo-dense`` of ppo, ``ecpo-pb`` of ecpo) is a config made by
:func:`~harness_gym_baselines.common.dataclass_flags.preset_config` in the trainer's module: the same ``train``,
some fields fixed; its ``--help`` description is the preset's own. Entries name the config class by import path (``"module:Class"``, as Gymnasium's entry points do); a module is
imported only when its trainer is used, so ``harness-gym --help`` does not import torch. The table sits in
``common`` although the trainers are in ``algos``: the policy registry (``policies``) loads model files through
it, and it imports no trainer until one is asked for.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, is_dataclass
from typing import Any, NoReturn

from harness_gym_baselines.common.dataclass_flags import PRESET_OF, doc_summary

TRAINERS: dict[str, str] = {
    "bc": "harness_gym_baselines.algos.bc:BCConfig",
    "awr": "harness_gym_baselines.algos.awr:AWRConfig",
    "iql": "harness_gym_baselines.algos.iql:IQLConfig",
    "cql": "harness_gym_baselines.algos.cql:CQLConfig",
    "ppo-sparse": "harness_gym_baselines.algos.ppo:PPOSparseConfig",
    "ppo-dense": "harness_gym_baselines.algos.ppo:PPODenseConfig",
    "ecpo": "harness_gym_baselines.algos.ecpo:ECPOConfig",
    "ecpo-pb": "harness_gym_baselines.algos.ecpo:ECPOPBConfig",
}
"""trainer name -> ``"module:ConfigClass"`` of its module and config dataclass"""

TRAINING_PACKAGES = ("torch", "tensorboard", "minari", "h5py", "stable_baselines3", "sb3_contrib")
"""the optional packages of the ``train`` and ``offline`` extras"""


@dataclass(frozen=True)
class Trainer:
    """A loaded trainer module."""

    name: str
    config: type
    """its config dataclass"""
    train: Callable[..., Any]
    """its ``train(cfg, data=None)``"""
    load: Callable[..., Any]
    """its ``load(path)``"""
    summary: str
    """the first line of the module docstring"""


def load_trainer(name: str) -> Trainer:
    """Import the module registered as ``name`` and check that it has the trainer shape.

    :param name: a key of :data:`TRAINERS`
    """
    if name not in TRAINERS:
        raise ValueError(f"unknown trainer {name!r}: expected one of {tuple(TRAINERS)}")
    module_name, _, config_name = TRAINERS[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] in TRAINING_PACKAGES:
            raise ModuleNotFoundError(f"trainer {name!r} needs {exc.name}: install the training stack with "
                                      'pip install "harness-gym[train,offline]"', name=exc.name) from exc
        raise
    config = getattr(module, config_name, None) if config_name else None
    train, load = getattr(module, "train", None), getattr(module, "load", None)
    if not (isinstance(config, type) and is_dataclass(config)) or not callable(train) or not callable(load):
        raise TypeError(f"trainer {name!r} ({TRAINERS[name]}): a trainer module needs the dataclass its registry "
                        "entry names (module:ConfigClass), a function `train(cfg, data=None)` and a function "
                        "`load(path)`")
    summary = doc_summary(config.__doc__ if hasattr(config, PRESET_OF) else module.__doc__, name)
    return Trainer(name=name, config=config, train=train, load=load, summary=summary)


def run_trainer(name: str) -> NoReturn:
    """``python -m MODULE ARGS`` of a trainer's module: run ``harness-gym train NAME ARGS`` as its own program
    (``python -m harness_gym_baselines.cli``; the command line is the top layer, which no trainer imports) and
    exit with its status.

    :param name: the trainer's name in :data:`TRAINERS`
    """
    sys.exit(subprocess.call([sys.executable, "-m", "harness_gym_baselines.cli", "train", name, *sys.argv[1:]]))
