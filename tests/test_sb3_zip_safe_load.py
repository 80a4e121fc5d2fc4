"""Loading an SB3 model zip runs nothing from it (issue 41, part B).

SB3's own ``load`` unpickles the cloudpickle blobs of the zip's ``data`` entry, so a tampered zip runs code
as the user before any error. :func:`~harness_gym_baselines.policies.sb3_zip.load_sb3_policy` reads ``data``
as JSON and the weights with ``torch.load(weights_only=True)``: the models this project saves, and plain
MaskablePPO / PPO / A2C / DQN zips, act exactly as SB3's loader makes them act; a zip whose pickle would call
something else is refused with one line naming the entry, and its payload never runs.
"""

from __future__ import annotations

import base64
import json
import pickle
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym_baselines.common.options import UsageError
from harness_gym_baselines.policies.model_files import load_model_file
from harness_gym_baselines.policies.sb3_zip import SB3ZipError, load_sb3_policy

ENV = "HarnessPlan-v1"


def _trained(algo_name: str, path: Path) -> type:
    """Train ``algo_name`` briefly on ENV and save it to ``path`` (this project's save for MaskablePPO)."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import A2C, DQN, PPO

    env = gym.make(ENV)
    algo = {"MaskablePPO": MaskablePPO, "PPO": PPO, "A2C": A2C, "DQN": DQN}[algo_name]
    kwargs = {"DQN": {"learning_starts": 0, "buffer_size": 1000}, "A2C": {"n_steps": 8}}.get(
        algo_name, {"n_steps": 32, "batch_size": 32})
    if algo_name == "A2C":
        kwargs["policy_kwargs"] = {"net_arch": [32, 16]}
    model = algo("MlpPolicy", env, seed=0, device="cpu", **kwargs).learn(64)
    if algo_name == "MaskablePPO":
        from harness_gym_baselines.algos.online_common import save_model
        from harness_gym_baselines.algos.ppo import PPOSparseConfig

        save_model(model, PPOSparseConfig(env_id=ENV, out=str(path)), "ppo-sparse")
    else:
        model.save(path)
    env.close()
    return algo


@pytest.mark.parametrize("algo_name", ["MaskablePPO", "PPO", "A2C", "DQN"])
def test_safe_load_acts_as_sb3_load(tmp_path: Path, algo_name: str) -> None:
    path = tmp_path / f"{algo_name}.zip"
    algo = _trained(algo_name, path)
    reference = algo.load(path, device="cpu")  # our own file: SB3's loader is safe on it
    loaded = load_model_file(path) if algo_name == "MaskablePPO" else load_sb3_policy(path)
    assert loaded.maskable is (algo_name == "MaskablePPO")
    rng = np.random.default_rng(0)
    obs = rng.uniform(0.0, 1.0, size=(256, reference.observation_space.shape[0])).astype(np.float32)
    masks = rng.random((256, 7)) < 0.6
    masks[np.arange(256), rng.integers(0, 7, 256)] = True
    for one, mask in zip(obs, masks):
        if algo_name == "MaskablePPO":
            want, _ = reference.predict(one, deterministic=True, action_masks=mask)
            got, _ = loaded.model.predict(one, deterministic=True, action_masks=mask)
        else:
            want, _ = reference.predict(one, deterministic=True)
            got, _ = loaded.model.predict(one, deterministic=True)
        assert int(got) == int(want)
    theirs = reference.policy.state_dict()
    ours = loaded.model.policy.state_dict()
    assert theirs.keys() == ours.keys() and all((theirs[k] == ours[k]).all() for k in theirs)


def _evil_zip(source: Path, target: Path, entry: str, marker: Path) -> None:
    """``source`` with the cloudpickle blob of ``entry`` replaced by a pickle that creates ``marker``."""

    class Payload:
        def __reduce__(self) -> tuple:
            return (open, (str(marker), "w"))

    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
        for item in zin.infolist():
            blob = zin.read(item)
            if item.filename == "data":
                data = json.loads(blob)
                data[entry][":serialized:"] = base64.b64encode(pickle.dumps(Payload())).decode()
                blob = json.dumps(data).encode()
            zout.writestr(item, blob)


@pytest.mark.parametrize("entry", ["policy_class", "observation_space", "lr_schedule"])
def test_pickle_payload_in_a_zip_never_runs(tmp_path: Path, entry: str) -> None:
    from stable_baselines3.common.save_util import load_from_zip_file

    good = tmp_path / "good.zip"
    _trained("PPO", good)
    evil = tmp_path / "evil.zip"
    marker = tmp_path / "PWNED"
    _evil_zip(good, evil, entry, marker)

    # the payload is real: SB3's own loader runs it
    load_from_zip_file(evil, device="cpu")
    assert marker.exists()
    marker.unlink()

    with pytest.raises(SB3ZipError) as refused:
        load_sb3_policy(evil)
    assert not marker.exists()
    message = str(refused.value)
    assert "\n" not in message and f"entry {entry!r}" in message and "would call io.open" in message, message
    with pytest.raises(UsageError, match=f"entry {entry!r}"):  # the CLI's path: one line, status 2
        load_model_file(evil)
    assert not marker.exists()


def test_zips_that_are_not_plain_data_are_refused_with_the_entry(tmp_path: Path) -> None:
    good = tmp_path / "good.zip"
    _trained("PPO", good)
    cases = {
        "policy_kwargs": ({"activation_fn": "<class 'os.system'>"}, "policy_kwargs.activation_fn"),
        "policy_class": ({"__module__": "evil.policies"}, "evil.policies"),
        "observation_space": ({":type:": "<class 'gymnasium.spaces.box.Box'>", "_shape": [36, 2]}, "one dimension"),
    }
    for key, (value, expected) in cases.items():
        bad = tmp_path / f"bad-{key}.zip"
        with zipfile.ZipFile(good) as zin, zipfile.ZipFile(bad, "w") as zout:
            for item in zin.infolist():
                blob = zin.read(item)
                if item.filename == "data":
                    data = json.loads(blob)
                    data[key] = value
                    blob = json.dumps(data).encode()
                zout.writestr(item, blob)
        with pytest.raises(SB3ZipError, match=expected):
            load_sb3_policy(bad)
