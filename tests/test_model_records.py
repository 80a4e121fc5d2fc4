"""Model files record the env they were trained on: another env id warns once (one line naming both ids),
another observation layout is refused, and files written before the record load as they did."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")

from harness_gym.core.state import FEATURE_NAMES  # noqa: E402
from harness_gym.datasets import Transitions  # noqa: E402
from harness_gym_baselines.algos.bc import BCConfig  # noqa: E402
from harness_gym_baselines.cli import main  # noqa: E402
from harness_gym_baselines.evaluate import evaluate  # noqa: E402
from harness_gym_baselines.policies.learned import MLP, save_model  # noqa: E402
from harness_gym_baselines.policies.model_files import load_model_file  # noqa: E402
from harness_gym_baselines.policies.trained_on import ObservationLayoutError, OtherEnvWarning  # noqa: E402

TRAINED_ON, OTHER = "HarnessCode-v2", "HarnessData-v2"


def _torch_model(path, feature_names=FEATURE_NAMES, env_id=TRAINED_ON):
    """A model file written by the trainers' own save, of an untrained network on ``feature_names``."""
    n, f = 4, len(feature_names)
    data = Transitions(np.zeros((n, f), np.float32), np.zeros(n, np.int64), np.ones((n, 7), bool),
                       np.zeros(n, np.float32), np.zeros(n, np.int64), env_id, {}, tuple(feature_names))
    torch.manual_seed(0)
    return save_model(path, algo="bc", net=MLP(f, 7, (8,)), config=BCConfig(dataset_id="x"), data=data,
                      hidden_sizes=(8,))


def _no_other_env_warning(env_id, model):
    with warnings.catch_warnings():
        warnings.simplefilter("error", OtherEnvWarning)
        return evaluate(env_id, load_model_file(model), episodes=2)


def test_a_model_file_records_its_env_id_and_observation_layout(tmp_path):
    blob = torch.load(_torch_model(tmp_path / "bc.pt"), weights_only=True)
    env = gym.make(TRAINED_ON)
    assert blob["env_id"] == TRAINED_ON and blob["feature_names"] == list(env.unwrapped.feature_names)
    assert blob["observation_shape"] == list(env.observation_space.shape)
    env.close()


def test_a_model_run_on_another_env_id_warns_once_naming_both(tmp_path, capsys):
    model = _torch_model(tmp_path / "bc.pt")
    with pytest.warns(OtherEnvWarning) as caught:
        evaluate(OTHER, load_model_file(model), episodes=3)
    assert len(caught) == 1  # once, not at every reset
    message = str(caught[0].message)
    assert "\n" not in message and f"trained on {TRAINED_ON}, run on {OTHER}" in message
    _no_other_env_warning(TRAINED_ON, model)  # its own env: silent

    assert main(["eval", OTHER, "--policy", str(model), "--episodes", "2", "--no-progress", "--json"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"harness-gym eval: warning: {message}"]


@pytest.mark.parametrize("layout", ["reordered", "shorter"])
def test_a_model_of_another_observation_layout_is_refused(tmp_path, layout, capsys):
    names = list(FEATURE_NAMES)
    if layout == "reordered":
        names[2], names[3] = names[3], names[2]
        why = rf"first difference at 2: '{names[2]}' vs '{names[3]}'"
    else:
        names = names[:-1]
        why = rf"shape \({len(names)},\) of {TRAINED_ON}, but {TRAINED_ON} gives shape \({len(FEATURE_NAMES)},\)"
    model = _torch_model(tmp_path / "bc.pt", names)
    with pytest.raises(ObservationLayoutError, match=why):
        evaluate(TRAINED_ON, load_model_file(model), episodes=1)
    assert main(["eval", TRAINED_ON, "--policy", str(model), "--episodes", "1", "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ObservationLayoutError" in err[0] and "retrain it on this env" in err[0]


def test_an_older_model_file_without_the_record_loads_without_a_warning(tmp_path):
    model = _torch_model(tmp_path / "bc.pt")
    blob = torch.load(model, weights_only=True)
    for key in ("observation_shape", "env_id"):  # what files of earlier versions did not record
        del blob[key]
    torch.save(blob, model)
    summary = _no_other_env_warning(OTHER, model)
    assert summary["episodes"] == 2


def test_sb3_zips_record_the_env_and_a_foreign_zip_of_another_shape_is_refused(tmp_path):
    from sb3_contrib import MaskablePPO

    from harness_gym_baselines.algos.online_common import save_model as save_sb3
    from harness_gym_baselines.algos.ppo import PPOSparseConfig

    env = gym.make(TRAINED_ON)
    ours = tmp_path / "ppo.zip"
    save_sb3(MaskablePPO("MlpPolicy", env, n_steps=8, batch_size=8, device="cpu", seed=0),
             PPOSparseConfig(env_id=TRAINED_ON, out=str(ours)), "ppo-sparse")
    env.close()
    policy = load_model_file(ours)
    assert policy.trained_on.env_id == TRAINED_ON
    assert policy.trained_on.observation_shape == (len(FEATURE_NAMES),)
    with pytest.warns(OtherEnvWarning, match=f"trained on {TRAINED_ON}, run on {OTHER}"):
        evaluate(OTHER, policy, episodes=1)
    _no_other_env_warning(TRAINED_ON, ours)

    cartpole = gym.make("CartPole-v1")
    foreign = tmp_path / "foreign.zip"
    MaskablePPO("MlpPolicy", cartpole, n_steps=8, batch_size=8, device="cpu", seed=0).save(foreign)
    cartpole.close()
    with pytest.raises(ObservationLayoutError, match=r"shape \(4,\), but HarnessCode-v2 gives shape"):
        evaluate(TRAINED_ON, load_model_file(foreign), episodes=1)
