"""What one concurrent episode job is: the episode function, the :class:`EpisodeSpec` every env slot builds its
env and controller from, and the error a failed job raises. Shared by :mod:`harness_gym.running.parallel` (threads
and processes) and :mod:`harness_gym.running.ray_backend` (Ray actors).
"""

from __future__ import annotations

import copy
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec

from harness_gym.running.rollout import Policy

EpisodeFn = Callable[..., Any]
"""``fn(env, policy, *, index, seed, split) -> result``: plays one episode (a module-level function, so that
processes and Ray actors can import it)"""

@dataclass
class EpisodeSpec:
    """Everything a slot needs to make its env and controller and to play a job.

    :param env_id: a registered env id
    :param policy: the controller; every slot plays with its own copy
    :param episode_fn: what plays one job (see :data:`EpisodeFn`)
    :param split: the task split
    :param env_kwargs: constructor keywords for ``gym.make``
    :param slot_env_kwargs: per-slot overrides: slot ``k`` adds ``slot_env_kwargs[k % len]`` to
        ``env_kwargs`` (e.g. one ``base_url`` per single-slot LLM server)

    An LLM cache path (``env_kwargs["cache"]``) may contain ``{slot}`` and ``{host}``: each slot then opens
    the file named with its slot number and host name (one file per actor or per node, to merge afterwards
    with :func:`harness_gym.workers.llm_cache.merge_caches`).
    """

    env_id: str
    policy: Policy
    episode_fn: EpisodeFn
    split: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    slot_env_kwargs: Sequence[Mapping[str, Any]] = ()
    env_spec: EnvSpec | None = field(default=None, repr=False)
    """the registration, taken here so that an id registered at run time is known in a fresh process too"""

    def __post_init__(self) -> None:
        if self.env_spec is None:
            self.env_spec = gym.spec(self.env_id)

    def build(self, slot: int) -> tuple[gym.Env, Policy]:
        """The env and controller copy of slot ``slot``.

        :param slot: the slot's number, from 0
        """
        kwargs = dict(self.env_kwargs)
        if self.slot_env_kwargs:
            kwargs.update(self.slot_env_kwargs[slot % len(self.slot_env_kwargs)])
        if isinstance(kwargs.get("cache"), str):  # one LLM cache file per slot or per host, where asked
            kwargs["cache"] = kwargs["cache"].replace("{slot}", str(slot)).replace("{host}", socket.gethostname())
        return gym.make(self.env_spec, **copy.deepcopy(kwargs)), copy.deepcopy(self.policy)

    def play(self, env: gym.Env, policy: Policy, index: int, seed: int) -> Any:
        """Play job ``(index, seed)`` on a slot's env.

        :param env: the slot's env
        :param policy: the slot's controller
        :param index: the episode's index in the run
        :param seed: its reset seed
        """
        return self.episode_fn(env, policy, index=index, seed=seed, split=self.split)


class EpisodeError(RuntimeError):
    """An episode (or a slot's env) raised; the message names the episode and carries the traceback."""
