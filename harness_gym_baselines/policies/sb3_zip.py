"""Stable-Baselines3 model zips as harness controllers: ``harness-gym eval ENV --policy model.zip``.

:func:`load_sb3_policy` reads which algorithm wrote the zip from the policy class stored in it and loads it
with that algorithm: sb3-contrib's ``MaskablePPO`` (also what :mod:`harness_gym_baselines.algos.ecpo` and :mod:`harness_gym_baselines.algos.ppo`
save), SB3's ``PPO``, ``A2C`` (same policy class as PPO; loaded as PPO, which acts identically) and ``DQN``.
A maskable model acts with the env's action mask; the others act on the observation alone, as they were
trained (an inapplicable action is a legal no-op of the Harness MDP).

Models written by this project's trainers carry a ``harness_gym`` attribute (saved inside the zip): the
algorithm name, the record of the env it was trained on (env id, feature names, observation shape:
:mod:`harness_gym_baselines.policies.trained_on`, checked against the env at every reset) and training
diagnostics such as the evidence weights. A zip from elsewhere is checked against the observation shape SB3
stored in it.

**Loading runs nothing from the file.** SB3's own ``load`` unpickles every entry of the zip's ``data`` that it
stored with cloudpickle (the ``":serialized:"`` keys: the policy class, the spaces, the schedules), and a pickle
can run any code. :func:`load_sb3_policy` never unpickles: it reads ``data`` as JSON and uses only its plain
parts (the policy class's module, the observation shape and action count, ``policy_kwargs`` of plain values,
the ``harness_gym`` record), builds the policy network of the algorithm named by that module, and loads its
weights from ``policy.pth`` with ``torch.load(weights_only=True)``, as ``.pt`` files are loaded. Serialized
entries are ignored (what a controller needs is rebuilt), and ones the network would need (``policy_kwargs``
holding classes, such as a custom activation) are refused with one line naming the entry.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from harness_gym.running.rollout import harness_env
from harness_gym_baselines.common.options import UsageError
from harness_gym_baselines.policies.trained_on import TrainedOn


class SB3Policy:
    """A loaded SB3 model as a :class:`harness_gym.running.rollout.Policy`.

    :param model: the SB3 model (``MaskablePPO``, ``PPO``, ``A2C`` or ``DQN``), or an :class:`SB3Network` loaded from
        a zip
    :param name: the policy name shown in evaluation output
    :param deterministic: act with the mode of the policy (``False``: sample, as during training)
    """

    def __init__(self, model: Any, name: str, deterministic: bool = True) -> None:
        self.model = model
        self.name = name
        self.deterministic = deterministic
        self.maskable = _algorithm_name(model) == "MaskablePPO"
        meta = getattr(model, "harness_gym", None) or {}
        self.trained_on = TrainedOn.from_record(meta, getattr(model.observation_space, "shape", None))
        self.feature_names: tuple[str, ...] | None = self.trained_on.feature_names

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Check ``env`` against the env the model was trained on (:meth:`TrainedOn.check`); reseed sampling.

        :param env: the env of the episode
        :param seed: the episode's reset seed (seeds the model's action sampling when not deterministic)
        """
        self.trained_on.check(env, self.name)
        if seed is not None and not self.deterministic:
            self.model.set_random_seed(seed)

    def act(self, obs: np.ndarray, env: gym.Env) -> int:
        """The model's action for ``obs`` (with the env's action mask for a maskable model).

        :param obs: the observation vector
        :param env: the env (its action mask is read)
        """
        if self.maskable:
            action, _ = self.model.predict(obs, deterministic=self.deterministic,
                                           action_masks=harness_env(env).action_masks())
        else:
            action, _ = self.model.predict(obs, deterministic=self.deterministic)
        return int(action)


_ALGORITHMS = {  # the module of the stored policy class -> the algorithm that acts with it
    "sb3_contrib.common.maskable.policies": "MaskablePPO",
    "stable_baselines3.common.policies": "PPO",  # PPO and A2C share it; A2C's net acts as PPO's does
    "stable_baselines3.dqn.policies": "DQN",
}
_ACTIVATIONS = ("Tanh", "ReLU", "ELU", "LeakyReLU", "SiLU", "GELU", "Sigmoid")
"""``activation_fn`` values a zip may name (as the text of the class): torch.nn classes looked up by name."""
_MAX_DATA_BYTES = 16 * 1024 * 1024
_MAX_WEIGHT_BYTES = 1024 * 1024 * 1024


class SB3ZipError(UsageError):
    """An SB3 zip that cannot be loaded without running code from it, or is not an SB3 model zip (a
    :class:`~harness_gym_baselines.common.options.UsageError`: the command line prints its one line)."""


class SB3Network:
    """The acting part of an SB3 model rebuilt from a zip without unpickling (:func:`load_sb3_network`): what
    :class:`SB3Policy` asks of a model (``predict``, ``set_random_seed``, the spaces, ``harness_gym``).

    :param policy: the SB3 policy network, with the zip's weights
    :param algorithm: ``"MaskablePPO"``, ``"PPO"`` or ``"DQN"``
    :param record: the zip's ``harness_gym`` attribute (``{}`` for a zip from elsewhere)
    :param exploration_rate: DQN's epsilon when acting by sampling (``deterministic=False``)
    """

    def __init__(self, policy: Any, algorithm: str, record: dict[str, Any], exploration_rate: float = 0.0) -> None:
        self.policy = policy
        self.algorithm = algorithm
        self.harness_gym = record
        self.exploration_rate = exploration_rate
        self.observation_space = policy.observation_space
        self.action_space = policy.action_space

    def predict(self, obs: np.ndarray, deterministic: bool = True, action_masks: np.ndarray | None = None) -> tuple:
        """The action for ``obs`` as the algorithm's ``predict`` gives it (and ``None`` for the state)."""
        if self.algorithm == "MaskablePPO":
            return self.policy.predict(obs, deterministic=deterministic, action_masks=action_masks)
        if self.algorithm == "DQN" and not deterministic and np.random.rand() < self.exploration_rate:
            return np.array(self.action_space.sample()), None
        return self.policy.predict(obs, deterministic=deterministic)

    def set_random_seed(self, seed: int) -> None:
        """Seed the sampling of actions as the algorithm's ``set_random_seed`` does."""
        from stable_baselines3.common.utils import set_random_seed

        set_random_seed(seed)
        self.action_space.seed(seed)


def _algorithm_name(model: Any) -> str:
    return model.algorithm if isinstance(model, SB3Network) else type(model).__name__


def _zip_data(path: Path, archive: zipfile.ZipFile) -> dict[str, Any]:
    """The zip's ``data`` entry, parsed as JSON (never unpickled)."""
    try:
        info = archive.getinfo("data")
    except KeyError:
        raise SB3ZipError(f"{path}: not a Stable-Baselines3 model zip: no 'data' entry") from None
    if info.file_size > _MAX_DATA_BYTES:
        raise SB3ZipError(f"{path}: the 'data' entry holds {info.file_size} bytes (at most {_MAX_DATA_BYTES})")
    try:
        data = json.loads(archive.read(info))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise SB3ZipError(f"{path}: not a Stable-Baselines3 model zip: its 'data' entry is not JSON "
                          f"({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict):
        raise SB3ZipError(f"{path}: not a Stable-Baselines3 model zip: its 'data' entry is not a JSON object")
    return data


_PICKLE_MODULES = ("gymnasium", "numpy", "stable_baselines3", "sb3_contrib", "torch", "cloudpickle", "copyreg",
                   "collections", "abc", "_codecs", "functools", "typing", "enum", "_abc")
"""Modules whose callables SB3's own pickles of an entry reference (classes, spaces, schedules, numpy arrays)."""
_PICKLE_BUILTINS = frozenset({"getattr", "type", "object", "frozenset", "set", "tuple", "list", "dict", "int",
                              "float", "str", "bool", "bytes", "bytearray", "slice", "range", "property",
                              "staticmethod", "classmethod", "complex"})  # fmt: skip


def _pickle_callables(blob: bytes) -> list[str]:
    """The ``module.name`` of every global a pickle would look up, read from its opcodes (``pickletools``
    parses; nothing is unpickled); ``"?"`` where the name is not a string the pickle spelled out."""
    import pickletools

    found: list[str] = []
    recent: list[Any] = []
    memo: list[Any] = []
    for op, arg, _ in pickletools.genops(blob):
        name = op.name
        if name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8", "SHORT_BINSTRING", "BINSTRING"):
            recent.append(arg)
        elif name == "MEMOIZE":
            memo.append(recent[-1] if recent else None)
        elif name in ("BINGET", "LONG_BINGET", "GET"):
            recent.append(memo[int(arg)] if int(arg) < len(memo) else None)
        elif name == "GLOBAL":
            found.append(str(arg).replace(" ", "."))
        elif name == "STACK_GLOBAL":
            module, attr = (recent[-2], recent[-1]) if len(recent) >= 2 else (None, None)
            found.append(f"{module}.{attr}" if isinstance(module, str) and isinstance(attr, str) else "?")
        elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
            index = int(arg)
            memo.extend([None] * (index + 1 - len(memo)))
            memo[index] = recent[-1] if recent else None
        else:
            recent.append(None)
    return found


def _refuse_foreign_pickles(path: Path, data: dict[str, Any]) -> None:
    """Refuse a zip whose cloudpickle blobs would call anything SB3's own do not (``builtins.open``, ``os.system``,
    ...): one line naming the entry and the callable. Nothing is unpickled either way; this names a tampered
    file instead of quietly ignoring its payload.

    :raises SB3ZipError: for the first such entry
    """
    import base64
    import binascii

    entries = [(key, value) for key, value in data.items() if isinstance(value, dict) and ":serialized:" in value]
    for key, value in entries:
        try:
            blob = base64.b64decode(str(value[":serialized:"]), validate=True)
            callables = _pickle_callables(blob)
        except (binascii.Error, ValueError, IndexError) as exc:
            raise SB3ZipError(f"{path}: entry {key!r} of 'data' is not a readable pickle ({exc}); refused, never "
                              "unpickled") from None
        for called in callables:
            module, _, attr = called.rpartition(".")
            allowed = (module == "builtins" and attr in _PICKLE_BUILTINS) or any(
                module == m or module.startswith(m + ".") for m in _PICKLE_MODULES)
            if not allowed:
                raise SB3ZipError(f"{path}: entry {key!r} of 'data' is a pickle that would call {called[:120]}, "
                                  "which no SB3 model stores: refused (this loader never unpickles)")


def _plain(path: Path, data: dict[str, Any], key: str, default: Any = None) -> Any:
    """``data[key]`` where SB3 stored it as plain JSON; a cloudpickle blob there is refused, never unpickled."""
    value = data.get(key, default)
    if isinstance(value, dict) and ":serialized:" in value:
        raise SB3ZipError(f"{path}: entry {key!r} of 'data' is a cloudpickle blob; loading it would run code "
                          "from the file, so it is refused (save the model with plain values there)")
    return value


def _int_field(path: Path, entry: str, value: Any, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise SB3ZipError(f"{path}: entry {entry!r} of 'data' is {value!r}, not an integer") from None
    if not low <= number <= high:
        raise SB3ZipError(f"{path}: entry {entry!r} of 'data' is {number}, outside [{low}, {high}]")
    return number


def _spaces(path: Path, data: dict[str, Any]) -> tuple[gym.spaces.Box, gym.spaces.Discrete]:
    """The observation space (a float Box of the stored shape, unbounded: an MLP policy never reads the bounds)
    and the action space (Discrete of the stored size), from the plain fields SB3 writes beside the pickles."""
    obs = data.get("observation_space")
    act = data.get("action_space")
    if not isinstance(obs, dict) or not isinstance(act, dict):
        raise SB3ZipError(f"{path}: 'data' records no observation_space or action_space")
    if "Box" not in str(obs.get(":type:", "")) or "Discrete" not in str(act.get(":type:", "")):
        raise SB3ZipError(f"{path}: a harness controller observes a Box and acts in a Discrete space, the zip "
                          f"records {obs.get(':type:')!r} and {act.get(':type:')!r}")
    shape = obs.get("_shape")
    if not isinstance(shape, list) or len(shape) != 1:
        raise SB3ZipError(f"{path}: entry 'observation_space' has shape {shape!r}, not one dimension")
    size = _int_field(path, "observation_space", shape[0], 1, 1 << 16)
    n = _int_field(path, "action_space", act.get("n"), 1, 1 << 16)
    _int_field(path, "action_space.start", act.get("start", 0), 0, 0)  # harness actions count from 0
    return gym.spaces.Box(-np.inf, np.inf, (size,), np.float32), gym.spaces.Discrete(n)


def _policy_kwargs(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """``policy_kwargs`` of plain values (``net_arch`` lists and dicts of ints, ``activation_fn`` named among
    :data:`_ACTIVATIONS`, flags); anything else is refused with the entry's name."""
    import torch.nn as nn

    raw = data.get("policy_kwargs", {}) or {}
    if not isinstance(raw, dict):
        raise SB3ZipError(f"{path}: entry 'policy_kwargs' of 'data' is not an object")
    blob = ":serialized:" in raw
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key.startswith(":"):
            continue
        if key in ("optimizer_class", "optimizer_kwargs"):
            continue  # training only: the controller never steps an optimizer
        if key == "activation_fn" and isinstance(value, str):
            name = value.rsplit(".", 1)[-1].rstrip("'>")
            if not value.startswith("<class 'torch.nn.modules.activation.") or name not in _ACTIVATIONS:
                raise SB3ZipError(f"{path}: entry 'policy_kwargs.activation_fn' names {value!r}, not one of the "
                                  f"torch.nn activations {', '.join(_ACTIVATIONS)}")
            kwargs[key] = getattr(nn, name)
        elif key == "net_arch" and _is_net_arch(value) or key in ("ortho_init", "share_features_extractor", "normalize_images") and isinstance(value, bool):
            kwargs[key] = value
        else:
            where = "a cloudpickle blob" if blob else "'data'"
            raise SB3ZipError(f"{path}: entry 'policy_kwargs.{key}' of {where} is not a plain value this loader "
                              f"rebuilds ({str(value)[:80]!r}); it is never unpickled")
    return kwargs


def _is_net_arch(value: Any) -> bool:
    layers = (lambda v: isinstance(v, list) and len(v) <= 16 and all(type(x) is int and 0 < x <= 1 << 14 for x in v))
    if isinstance(value, dict):
        return set(value) <= {"pi", "vf", "qf"} and all(layers(v) for v in value.values())
    return layers(value)


def _weights(path: Path, archive: zipfile.ZipFile) -> dict[str, Any]:
    """The policy's state dict from ``policy.pth``, loaded with ``torch.load(weights_only=True)``."""
    import torch

    try:
        info = archive.getinfo("policy.pth")
    except KeyError:
        raise SB3ZipError(f"{path}: not a Stable-Baselines3 model zip (no 'policy.pth' entry)") from None
    if info.file_size > _MAX_WEIGHT_BYTES:
        raise SB3ZipError(f"{path}: 'policy.pth' holds {info.file_size} bytes (at most {_MAX_WEIGHT_BYTES})")
    try:
        state = torch.load(io.BytesIO(archive.read(info)), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch's refusal spans many lines: its first names the cause
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SB3ZipError(f"{path}: 'policy.pth' is refused by torch.load(weights_only=True) ({first})") from exc
    if not isinstance(state, dict):
        raise SB3ZipError(f"{path}: 'policy.pth' holds a {type(state).__name__}, not a state dict")
    return state


def sb3_algorithm(path: str | Path) -> str:
    """The name of the SB3 algorithm that acts with the zip at ``path`` (``"MaskablePPO"``, ``"PPO"`` (also A2C's)
    or ``"DQN"``), from the module of the stored policy class, read as JSON.

    :param path: an SB3 model zip
    :raises SB3ZipError: for anything else
    """
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive:
            data = _zip_data(path, archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise SB3ZipError(f"{path}: not a Stable-Baselines3 model zip ({exc})") from None
    return _algorithm_of(path, data)


def _algorithm_of(path: Path, data: dict[str, Any]) -> str:
    policy_class = data.get("policy_class")
    module = policy_class.get("__module__") if isinstance(policy_class, dict) else None
    if not isinstance(module, str):
        raise SB3ZipError(f"{path}: the zip names no policy class module (written by another SB3 version?)")
    if module not in _ALGORITHMS:
        raise SB3ZipError(f"{path}: policy class of module {module[:100]!r} is not one of MaskablePPO, PPO, A2C or "
                          "DQN")
    return _ALGORITHMS[module]


def load_sb3_network(path: str | Path) -> SB3Network:
    """The acting network of an SB3 zip, rebuilt without unpickling anything (module docstring).

    :param path: the zip file
    :raises SB3ZipError: naming the entry that cannot be read as plain data
    """
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive:
            data = _zip_data(path, archive)
            _refuse_foreign_pickles(path, data)
            algorithm = _algorithm_of(path, data)
            observation_space, action_space = _spaces(path, data)
            kwargs = _policy_kwargs(path, data)
            record = _plain(path, data, "harness_gym", {}) or {}
            if not isinstance(record, dict):
                raise SB3ZipError(f"{path}: entry 'harness_gym' of 'data' is not an object")
            state = _weights(path, archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise SB3ZipError(f"{path}: not a Stable-Baselines3 model zip ({exc})") from None
    if algorithm == "MaskablePPO":
        from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy as policy_class
    elif algorithm == "DQN":
        from stable_baselines3.dqn.policies import DQNPolicy as policy_class
    else:
        from stable_baselines3.common.policies import ActorCriticPolicy as policy_class
    try:
        policy = policy_class(observation_space, action_space, lambda _: 0.0, **kwargs)
        policy.load_state_dict(state)
    except (RuntimeError, TypeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SB3ZipError(f"{path}: 'policy.pth' does not fit the {algorithm} network the zip describes ({first})"
                          ) from None
    policy.set_training_mode(False)
    exploration = data.get("exploration_rate", 0.0)
    exploration = float(exploration) if isinstance(exploration, (int, float)) and 0 <= exploration <= 1 else 0.0
    return SB3Network(policy, algorithm, record, exploration)


def load_sb3_policy(path: str | Path, deterministic: bool = True) -> SB3Policy:
    """The controller stored in an SB3 model zip, loaded without running code from it (module docstring).

    :param path: the zip file
    :param deterministic: act with the policy's mode (``False``: sample)
    :raises SB3ZipError: for a zip this cannot load as plain data and weights
    """
    model = load_sb3_network(path)
    label = model.harness_gym.get("algo", model.algorithm)
    return SB3Policy(model, name=f"{label}:{Path(path).name}", deterministic=deterministic)
