"""IQL and discrete CQL (harness_gym_baselines/algos/iql.py, cql.py): the expectile loss and the conservative
penalty, multi-step improvement over the behaviour, determinism, the one-step columns of the Minari buffer, and
``harness-gym train iql|cql`` to ``eval --policy``."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import minari
import numpy as np
import pytest
import torch

from harness_gym import datasets
from harness_gym.core.state import FEATURE_NAMES
from harness_gym.datasets import Transitions
from harness_gym_baselines.algos.awr import AWRConfig
from harness_gym_baselines.algos.awr import train as train_awr
from harness_gym_baselines.algos.cql import CQLConfig, conservative_penalty
from harness_gym_baselines.algos.cql import train as train_cql
from harness_gym_baselines.algos.iql import IQLConfig, expectile_loss
from harness_gym_baselines.algos.iql import train as train_iql
from harness_gym_baselines.cli import main
from harness_gym_baselines.policies.model_files import recorded_trainer

TOY_ID = "HarnessToy-v1"
if TOY_ID not in gym.registry:
    gym.register(id=TOY_ID, entry_point="examples.toy_domain.env:HarnessToyEnv", max_episode_steps=100)

QUICK = {"value_steps": 200, "target_update_rate": 0.05, "epochs": 2, "eval_episodes": 0, "progress": False}
"""a few hundred steps: enough to exercise every part of the loop, not to converge"""


@pytest.fixture(scope="module")
def toy_dataset(tmp_path_factory):
    """A coverage buffer (policies/coverage.py) built the way a user builds one: ``harness-gym collect``."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MINARI_DATASETS_PATH", str(tmp_path_factory.mktemp("minari")))
    assert main(["collect", TOY_ID, "--policy", "coverage", "--episodes", "60", "--seed", "5", "--out",
                 "harness/toy-iql-v0", "--ref-episodes", "0", "--json"]) == 0
    yield minari.load_dataset("harness/toy-iql-v0")
    mp.undo()


def fitted_expectile(targets: torch.Tensor, expectile: float) -> float:
    """The scalar V minimising the expectile loss on fixed targets, by gradient descent."""
    v = torch.zeros((), requires_grad=True)
    opt = torch.optim.Adam([v], lr=0.05)
    for _ in range(1000):
        opt.zero_grad()
        expectile_loss(targets - v, expectile).backward()
        opt.step()
    return float(v.detach())


def test_expectile_regression_fits_the_mean_at_one_half_and_more_above_it():
    targets = torch.tensor([0.0, 0.0, 0.0, 1.0, 0.2, 0.6])
    mean = float(targets.mean())
    assert fitted_expectile(targets, 0.5) == pytest.approx(mean, abs=1e-3)
    upper, higher = fitted_expectile(targets, 0.8), fitted_expectile(targets, 0.95)
    assert mean + 0.1 < upper < higher < float(targets.max())
    # the first-order condition of the 0.8-expectile: 0.8 * sum of the excess above = 0.2 * sum of the shortfall
    excess, shortfall = (targets - upper).clamp(min=0).sum(), (upper - targets).clamp(min=0).sum()
    assert float(0.8 * excess) == pytest.approx(float(0.2 * shortfall), abs=1e-3)
    assert fitted_expectile(targets, 0.2) < mean - 0.1


def two_step_buffer() -> Transitions:
    """Two states told apart by the first feature. In A (0) the behaviour takes action 1 (a sure 0.6, episode
    ends) or action 0 (on to B, no reward) equally often; in B (1) it takes action 0 (quality 1) or action 1
    (quality 0) equally often. The Monte-Carlo return of action 0 in A is 0.5 < 0.6, so learners of the
    behaviour's values keep action 1 there; the best continuation from B is worth 1, so action 0 is better."""
    f = len(FEATURE_NAMES)
    state_a, state_b = np.zeros(f, np.float32), np.zeros(f, np.float32)
    state_b[0] = 1.0
    rows = []  # (obs, action, reward, next_obs, terminal, return, episode)
    episode = 0
    for _ in range(200):
        rows.append((state_a, 1, 0.6, state_a, True, 0.6, episode))
        episode += 1
    for good in (True, False) * 100:
        quality = 1.0 if good else 0.0
        rows.append((state_a, 0, 0.0, state_b, False, quality, episode))
        rows.append((state_b, 0 if good else 1, quality, state_a, True, quality, episode))
        episode += 1
    obs, actions, rewards, next_obs, terminals, returns, episodes = (np.array(c) for c in zip(*rows))
    n = len(actions)
    return Transitions(obs.astype(np.float32), actions.astype(np.int64), np.ones((n, 7), bool),
                       returns.astype(np.float32), episodes.astype(np.int64), TOY_ID, {}, FEATURE_NAMES,
                       rewards=rewards.astype(np.float32), next_observations=next_obs.astype(np.float32),
                       terminals=terminals.astype(bool), next_action_masks=np.ones((n, 7), bool))


def test_iql_chains_the_better_continuation_where_the_behaviour_values_cannot(tmp_path):
    data = two_step_buffer()
    states = torch.zeros(2, len(FEATURE_NAMES))
    states[1, 0] = 1.0  # rows: A, B
    common = {"dataset_id": "synthetic", "seed": 0, "epochs": 100, "eval_episodes": 0, "progress": False,
              "log_dir": str(tmp_path / "runs")}
    values = {"value_steps": 1000, "target_update_rate": 0.05, "value_learning_rate": 1e-3}
    iql = train_iql(IQLConfig(out=str(tmp_path / "iql.pt"), **values, **common), data)
    # expectile 0.5 fits V to the behaviour's mean (SARSA), worth 0.5 in B: action 0 in A is then worth 0.495
    sarsa = train_iql(IQLConfig(out=str(tmp_path / "sarsa.pt"), expectile=0.5, **values, **common), data)
    awr_q = train_awr(AWRConfig(out=str(tmp_path / "awr.pt"), advantage="q", value_epochs=60, **common), data)
    cql = train_cql(CQLConfig(dataset_id="synthetic", out=str(tmp_path / "cql.pt"), seed=0, eval_episodes=0,
                              progress=False, log_dir=str(tmp_path / "runs"), value_steps=1000,
                              target_update_rate=0.05, learning_rate=1e-3), data)
    with torch.no_grad():
        assert iql.net(states).argmax(-1).tolist() == [0, 0]    # A: on to B; B: the good action
        assert sarsa.net(states).argmax(-1).tolist() == [1, 0]
        assert cql.net(states).argmax(-1).tolist() == [0, 0]    # the max backup chains too
        # the penalty holds the actions the buffer never took in A or B below the ones it took
        assert (cql.net(states)[:, 2:].max(-1).values < cql.net(states)[:, :2].min(-1).values).all()
        assert int(awr_q.net(states[:1]).argmax()) == 1         # the behaviour's Q of action 0 in A is 0.5


def test_same_seed_same_weights_other_seed_other_weights(toy_dataset, tmp_path):
    data = datasets.load_transitions(toy_dataset)

    def weights(seed: int, name: str) -> dict[str, torch.Tensor]:
        cfg = IQLConfig(dataset_id=toy_dataset.id, out=str(tmp_path / name), seed=seed,
                        log_dir=str(tmp_path / "runs"), **QUICK)
        return train_iql(cfg, data).net.state_dict()

    first, again, other = weights(3, "a.pt"), weights(3, "b.pt"), weights(4, "c.pt")
    assert first.keys() == again.keys()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)
    saved = torch.load(tmp_path / "b.pt", weights_only=True)
    assert saved["algo"] == "iql" and all(torch.equal(saved["state_dict"][k], first[k]) for k in first)


def test_the_buffer_gives_one_step_transitions(toy_dataset):
    data = datasets.load_transitions(toy_dataset)
    assert data.rewards.shape == data.returns.shape and data.next_observations.shape == data.observations.shape
    for ep in np.unique(data.episode)[:20]:
        rows = np.flatnonzero(data.episode == ep)
        assert data.returns[rows[0]] == pytest.approx(data.rewards[rows].sum())
        assert np.array_equal(data.next_observations[rows[:-1]], data.observations[rows[1:]])
        assert data.terminals[rows[-1]] and not data.terminals[rows[:-1]].any()
    half = data.subset(np.unique(data.episode)[:5])
    assert len(half.rewards) == len(half.next_observations) == len(half.terminals) == len(half)


def test_bad_settings_and_data_without_one_step_columns_are_named(toy_dataset, tmp_path):
    data = datasets.load_transitions(toy_dataset)
    with pytest.raises(ValueError, match=r"IQLConfig.expectile must be in \(0, 1\), got 1.0"):
        train_iql(IQLConfig(dataset_id=toy_dataset.id, expectile=1.0, out=str(tmp_path / "x.pt")), data)
    bare = Transitions(data.observations, data.actions, data.action_masks, data.returns, data.episode,
                       data.env_id, data.env_kwargs, data.feature_names)
    with pytest.raises(ValueError, match="no rewards, next_obs, terminals"):
        train_iql(IQLConfig(dataset_id=toy_dataset.id, out=str(tmp_path / "x.pt"),
                            log_dir=str(tmp_path / "runs"), **QUICK), bare)


def test_train_iql_from_the_buffer_then_eval_the_model_file(toy_dataset, tmp_path, capsys):
    components = toy_dataset.storage.metadata["coverage"]["components"]  # written by harness-gym collect
    assert len(components) == 60 and {"random", "static"} <= set(components)
    model = tmp_path / "iql.pt"
    assert main(["train", "iql", "--dataset", toy_dataset.id, "--out", str(model), "--value-steps", "200",
                 "--epochs", "2", "--eval-episodes", "3", "--log-dir", str(tmp_path / "runs")]) == 0
    trained = capsys.readouterr().out
    assert "q_loss" in trained and list((tmp_path / "runs").glob(f"{TOY_ID}__iql__0__*"))
    assert main(["eval", TOY_ID, "--policy", str(model), "--episodes", "5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert recorded_trainer(model)[0] == "iql" and result["episodes"] == 5
    assert 0.0 <= result["quality_mean"] <= 1.0 and result["invalid_action_rate"] == 0


def test_the_conservative_penalty_is_the_masked_logsumexp_gap():
    q = torch.tensor([[1.0, 0.0, 5.0], [0.0, 0.0, 0.0]])
    masks = torch.tensor([[True, True, False], [False, True, True]])
    actions = torch.tensor([0, 0])  # the second row's logged action is masked: it still counts
    expected = ((torch.logsumexp(torch.tensor([1.0, 0.0]), 0) - 1.0) + (math.log(3.0) - 0.0)) / 2
    assert float(conservative_penalty(q, masks, actions)) == pytest.approx(float(expected))
    assert float(conservative_penalty(torch.tensor([[9.0, -9.0]]), torch.tensor([[True, True]]),
                                      torch.tensor([0]))) == pytest.approx(0.0, abs=1e-6)


def test_train_cql_from_the_buffer_then_eval_the_model_file(toy_dataset, tmp_path, capsys):
    model = tmp_path / "cql.pt"
    args = ["train", "cql", "--dataset", toy_dataset.id, "--out", str(model), "--value-steps", "200",
            "--eval-episodes", "3", "--log-dir", str(tmp_path / "runs")]
    assert main(args) == 0
    first = torch.load(model, weights_only=True)["state_dict"]
    assert "td_loss" in capsys.readouterr().out and recorded_trainer(model)[0] == "cql"
    assert main(args) == 0  # the same seed gives the same weights
    assert all(torch.equal(first[k], v) for k, v in torch.load(model, weights_only=True)["state_dict"].items())
    capsys.readouterr()
    assert main(["eval", TOY_ID, "--policy", str(model), "--episodes", "5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["episodes"] == 5 and 0.0 <= result["quality_mean"] <= 1.0 and result["invalid_action_rate"] == 0
