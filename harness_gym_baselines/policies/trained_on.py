"""What a model file records about the env it was trained on, and the check its controller makes at every reset.

Every trainer's save writes :meth:`TrainedOn.record` into the model file (the keys of a torch archive, the
``harness_gym`` attribute of an SB3 zip): ``env_id``, ``feature_names`` and ``observation_shape``. The
controller loaded from the file checks the env of each episode against it (:meth:`TrainedOn.check`):

- another observation layout (other feature names, or another shape) is refused with
  :class:`ObservationLayoutError`: the network would read its inputs in the wrong places;
- another env id warns once per env id (:class:`OtherEnvWarning`, one line naming both ids): the layout is
  shared by every harness env, so the model runs, but on tasks it was not trained for;
- other settings (``settings``: the price profile, the cost budget in force and the cost weight,
  :attr:`harness_gym.HarnessEnv.settings`) warn once per difference (:class:`OtherSettingsWarning`, one line
  naming each setting as trained and as run): a controller trained without a budget, or at another cost weight,
  is being judged under rules it did not learn.

Files written before ``observation_shape`` was recorded have ``env_id`` and ``feature_names`` only; an SB3 zip
trained elsewhere has none of them (its stored observation space gives the shape). What a file does not record
is not checked, and says nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from harness_gym.running.rollout import harness_env


class ObservationLayoutError(ValueError):
    """The env's observations are not laid out as the model's training env's were (features or shape)."""


class OtherEnvWarning(UserWarning):
    """A model runs on an env id other than the one it was trained on."""


class OtherSettingsWarning(UserWarning):
    """A model runs under other prices, another cost budget or another cost weight than it was trained with."""


COMPARED_SETTINGS: tuple[str, ...] = ("prices", "budget_spec", "cost_weight")
"""The keys of :attr:`harness_gym.HarnessEnv.settings` a model's record is checked against (the budget as asked:
its value in units differs from env to env under the same rule)."""


@dataclass
class TrainedOn:
    """The env a model was trained on, as far as its file records it.

    :param env_id: the training env's id (``None``: not recorded)
    :param feature_names: the observation's feature names, in order (``None``: not recorded)
    :param observation_shape: the observation's shape (``None``: not recorded)
    :param settings: the training env's :attr:`~harness_gym.HarnessEnv.settings` (``None``: not recorded)
    """

    env_id: str | None = None
    feature_names: tuple[str, ...] | None = None
    observation_shape: tuple[int, ...] | None = None
    settings: dict[str, Any] | None = None
    _warned: set[str] = field(default_factory=set, init=False, repr=False, compare=False)

    @classmethod
    def from_record(cls, record: Mapping[str, Any] | None,
                    observation_shape: Sequence[int] | None = None) -> TrainedOn:
        """What a model file's record holds (the keys :meth:`record` writes; missing ones are not recorded).

        :param record: the file's dict (a torch archive) or ``harness_gym`` attribute (an SB3 zip), or ``None``
        :param observation_shape: the shape to use when the record has none (an SB3 zip's observation space)
        """
        record = record or {}
        names, shape = record.get("feature_names"), record.get("observation_shape", observation_shape)
        settings = record.get("settings")
        return cls(env_id=record.get("env_id"), feature_names=tuple(names) if names is not None else None,
                   observation_shape=tuple(int(n) for n in shape) if shape else None,
                   settings=dict(settings) if isinstance(settings, Mapping) else None)

    def record(self) -> dict[str, Any]:
        """The keys a trainer's save writes into the model file (plain lists: ``torch.load(weights_only=True)``
        and SB3's JSON both read them back)."""
        return {"env_id": self.env_id,
                "feature_names": list(self.feature_names) if self.feature_names is not None else None,
                "observation_shape": list(self.observation_shape) if self.observation_shape is not None else None,
                "settings": dict(self.settings) if self.settings is not None else None}

    def check(self, env: gym.Env, policy: str) -> None:
        """Refuse an env whose observation layout differs from the recorded one; warn (once per env id) when its
        id differs (module docstring).

        :param env: the env of the episode (wrapped or not)
        :param policy: the controller's name, for the messages
        :raises ObservationLayoutError: for other feature names or another observation shape
        :warns OtherEnvWarning: for another env id
        """
        henv = harness_env(env)
        env_id = henv.spec.id if henv.spec is not None else None
        where = env_id or type(henv).__name__
        shape = tuple(henv.observation_space.shape or ())
        if self.observation_shape is not None and shape != self.observation_shape:
            raise ObservationLayoutError(f"{policy}: trained on observations of shape {self.observation_shape}"
                                         f"{self._on()}, but {where} gives shape {shape}; retrain it on this env")
        names = tuple(getattr(henv, "feature_names", ()))
        if self.feature_names is not None and names != self.feature_names:
            raise ObservationLayoutError(f"{policy}: trained on other features{self._on()} than {where} has "
                                         f"({_first_difference(self.feature_names, names)}); retrain it on this env")
        if self.env_id is not None and env_id is not None and env_id != self.env_id and env_id not in self._warned:
            self._warned.add(env_id)
            warnings.warn(f"{policy}: trained on {self.env_id}, run on {env_id} (same observation layout; its "
                          "scores here are outside what it was trained for)", OtherEnvWarning, stacklevel=3)
        if self.settings is not None:
            running = henv.settings
            differ = [key for key in COMPARED_SETTINGS
                      if key in self.settings and self.settings[key] != running[key]]
            said = ", ".join(f"{key} {self.settings[key]!r} -> {running[key]!r}" for key in differ)
            if differ and said not in self._warned:
                self._warned.add(said)
                warnings.warn(f"{policy}: trained with other settings than {where} runs with ({said}); its scores "
                              "here are under rules it did not learn", OtherSettingsWarning, stacklevel=3)

    def _on(self) -> str:
        return f" of {self.env_id}" if self.env_id else ""


def _first_difference(trained: Sequence[str], env: Sequence[str]) -> str:
    """Where two feature lists part, e.g. ``24 features against 25, the first difference at 3: 'a' vs 'b'``."""
    for i, (ours, theirs) in enumerate(zip(trained, env)):
        if ours != theirs:
            return f"{len(trained)} features against {len(env)}, the first difference at {i}: {ours!r} vs {theirs!r}"
    return f"{len(trained)} features against {len(env)}, the same up to {min(len(trained), len(env))}"
