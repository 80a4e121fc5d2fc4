"""The trainer registry: ``harness-gym train NAME`` for every entry of :data:`TRAINERS`.

A trainer is one module that defines

- ``Config``: a dataclass of its settings, one documented field per setting (the command line builds the
  flags of ``harness-gym train NAME`` from it, see :mod:`harness_gym_baselines.dataclass_args`), including ``out`` and
  either ``dataset_id`` (an offline trainer) or ``env_id`` (an online one: :mod:`harness_gym_baselines.ppo`, :mod:`harness_gym_baselines.ecpo`);
- ``train(cfg: Config, data: Transitions | None = None) -> Policy``: learn from ``cfg.dataset_id`` (or from
  ``data``) or from episodes of ``cfg.env_id``, write the model file ``cfg.out`` and return the controller.

Adding a trainer is that module plus one line in :data:`TRAINERS`. Modules are named by import path and
imported only when their trainer is used, so ``harness-gym --help`` does not import torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, is_dataclass
from typing import Any

TRAINERS: dict[str, str] = {
    "bc": "harness_gym_baselines.bc",
    "awr": "harness_gym_baselines.awr",
    "ppo-sparse": "harness_gym_baselines.ppo_sparse",
    "ppo-dense": "harness_gym_baselines.ppo_dense",
    "ecpo": "harness_gym_baselines.ecpo",
}
"""trainer name -> import path of its module"""


@dataclass(frozen=True)
class Trainer:
    """A loaded trainer module."""

    name: str
    config: type
    """its ``Config`` dataclass"""
    train: Callable[..., Any]
    """its ``train(cfg, data=None)``"""
    summary: str
    """the first line of the module docstring"""


def load_trainer(name: str) -> Trainer:
    """Import the module registered as ``name`` and check that it has the trainer shape.

    :param name: a key of :data:`TRAINERS`
    """
    if name not in TRAINERS:
        raise ValueError(f"unknown trainer {name!r}: expected one of {tuple(TRAINERS)}")
    try:
        module = importlib.import_module(TRAINERS[name])
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] in ("torch", "tensorboard", "minari", "h5py",
                                                                   "stable_baselines3", "sb3_contrib"):
            raise ModuleNotFoundError(f"trainer {name!r} needs {exc.name}: install the training stack with "
                                      'pip install "harness-gym[train,offline]"', name=exc.name) from exc
        raise
    config, train = getattr(module, "Config", None), getattr(module, "train", None)
    if not (isinstance(config, type) and is_dataclass(config)) or not callable(train):
        raise TypeError(f"trainer {name!r} ({module.__name__}): a trainer module needs a dataclass `Config` and "
                        "a function `train(cfg, data=None)`")
    summary = (module.__doc__ or name).strip().splitlines()[0]
    return Trainer(name=name, config=config, train=train, summary=summary)
