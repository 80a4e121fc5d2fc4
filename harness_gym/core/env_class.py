"""What every Harness env class shares besides the MDP: the keywords its constructors take (for the one-line
error that names a misspelt one) and the sections of its docstring that are the same for every domain
(:func:`document_env` fills them in).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from harness_gym.core.state import features_table

MAKE_KEYWORDS: tuple[str, ...] = ("max_episode_steps", "disable_env_checker", "autoreset")
"""Keywords ``gym.make`` itself takes (suggested for a misspelt keyword that reaches the env)."""


def env_keywords(cls: type, base: type) -> tuple[str, ...]:
    """Every keyword the constructor of an env class takes itself (its own and those of the classes it extends, up
    to ``base``), without the domain and the worker options it passes through.

    :param cls: a subclass of ``base`` (or ``base`` itself)
    :param base: the env class whose subclasses' constructors count (:class:`~harness_gym.env.HarnessEnv`)
    """
    names: dict[str, None] = {}
    for klass in cls.__mro__:
        if not (isinstance(klass, type) and issubclass(klass, base)):
            continue
        for name, param in inspect.signature(klass.__init__).parameters.items():
            if name not in ("self", "domain") and param.kind not in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
                names[name] = None
    return tuple(names)


EPISODE_END = """- Termination: SUBMIT, or the step budget or the cost budget (``budget_units``) runs out: the current
      draft is graded as a forced submit, ``info["forced_submit"]`` is True; without a draft the quality is 0.
    - Truncation: none before the registered limit of 100 steps, which the step budget always reaches first.
      An outer limit (``gym.make(..., max_episode_steps=N)`` or ``gym.wrappers.TimeLimit``) can cut an episode
      short: it ends with ``truncated=True`` and ``info["quality"] == -1.0`` (nothing was graded); evaluation
      summaries count it as unfinished and leave it out of the quality means."""

INFO = """The same keys at reset and at every step (docs/harness_mdp.md, "Info"), among them:

    - ``action_mask``: ``np.int8`` array of the 7 actions, 1 where the action is applicable now (Gymnasium's
      convention, as in Taxi); the values of ``env.unwrapped.action_masks()``, which sb3-contrib's
      ``MaskablePPO`` reads. Through the wrappers ``gym.make`` adds, call
      ``env.get_wrapper_attr("action_masks")()``; on a vector env, ``env_method("action_masks")``.
    - ``quality``, ``success``, ``hms``, ``patterns``: the outcome, ``-1.0`` (``PENDING``) until the episode ends.
    - ``invalid_action``, ``forced_submit``, ``action_name``, ``evidence``, ``cost`` (the step's bill),
      ``budget_left``, ``draft_version``, ``task_id``, ``split``, ``exec_cached``."""


def document_env(cls: type) -> type:
    """Fill the shared parts of an env class docstring: ``{observation_table}`` (from :data:`~harness_gym.core.state.FEATURES`),
    ``{episode_end}`` and ``{info}`` (the same for every Harness MDP)."""
    if cls.__doc__:
        cls.__doc__ = (cls.__doc__.replace("{observation_table}", features_table())
                       .replace("{episode_end}", EPISODE_END).replace("{info}", INFO))
    return cls


def is_int(value: Any) -> bool:
    """Whether ``value`` is an integer (Python or NumPy, a 0-d integer array included), never a bool (the env's
    checks of its integer keywords)."""
    if type(value) is int:
        return True
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
