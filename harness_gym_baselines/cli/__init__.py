"""The harness-gym command: evaluate, compare, trace, collect, train and reproduce harness controllers.

``list`` the envs, ``eval`` / ``compare`` / ``play`` controllers, ``collect`` offline datasets, ``train``
offline controllers and ``reproduce`` the paper tables.

It lives in ``harness_gym_baselines`` because it uses both layers: the env library (``harness_gym``, which never
imports ``harness_gym_baselines``) and the controllers, trainers and experiments here; it is the package's top
layer. Heavy modules (torch, Minari) are imported by the command that needs them. The policy names come from
:mod:`harness_gym_baselines.policies.registry`, the trainers and their flags from
:mod:`harness_gym_baselines.common.trainer_registry`.

One module per command group, the shared options in one place::

    app.py          build_parser and main (the console script harness-gym; python -m harness_gym_baselines.cli)
    envs.py         list, doctor, play
    evaluation.py   eval, compare, frontier, card, search-script
    data.py         collect, merge-cache, view
    training.py     train NAME
    reproduce.py    reproduce, calibrate
    options.py      the shared option groups (COMMAND_OPTIONS), their flags and types, the one-line-error parser
    env_options.py  the env keywords of a command line (--env-kwarg, --worker, --prices, --recording, ...)
    output.py       tables and JSON
"""

from harness_gym_baselines.cli.app import build_parser, main
from harness_gym_baselines.cli.env_options import parse_env_kwargs, pricing_options
from harness_gym_baselines.cli.evaluation import row_labels
from harness_gym_baselines.cli.options import (
    COMMAND_OPTIONS,
    WORKER_FLAGS,
    DefaultsHelpFormatter,
    labelled_policy,
    policy_name,
)
from harness_gym_baselines.cli.training import train_parser

__all__ = ["COMMAND_OPTIONS", "WORKER_FLAGS", "DefaultsHelpFormatter", "build_parser", "labelled_policy", "main",
           "parse_env_kwargs", "policy_name", "pricing_options", "row_labels", "train_parser"]
