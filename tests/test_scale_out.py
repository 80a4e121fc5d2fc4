"""Concurrent episodes (harness_gym/running/parallel.py) and Ray (harness_gym/running/ray_backend.py): the same episodes as
the sequential loop, nothing lost or duplicated, N threads keeping N model calls in flight.

The Ray tests are skipped when Ray is not installed, unless HG_REQUIRE_RAY=1 (then its absence fails them).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3

import gymnasium as gym
import numpy as np
import pytest

import harness_gym  # noqa: F401
from harness_gym import datasets
from harness_gym.running.parallel import EpisodeError, EpisodeSpec, default_parallel, map_episodes
from harness_gym.workers.fake_server import FakeOpenAIServer
from harness_gym.workers.latency import CallMeter, LatencyWorker
from harness_gym.workers.llm_cache import LLMCache, merge_caches
from harness_gym_baselines.cli import main
from harness_gym_baselines.evaluate import evaluate
from harness_gym_baselines.policies.registry import make_policy

ENV_ID = "HarnessKnowledge-v1"  # no sandbox: cheap episodes, so the tests time the machinery, not the domain


@pytest.fixture
def minari_root(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path / "minari"


def same(a, b) -> bool:
    """Equality where NaN equals NaN and numpy arrays compare elementwise."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and not isinstance(b, np.ndarray):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        floats = a.dtype.kind == "f" and b.dtype.kind == "f"
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=floats))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


def comparable_infos(infos) -> list[dict]:
    """An episode's infos without ``exec_cached``: it reports the process-wide execution cache, which depends
    on what ran before in the same process, not on the episode."""
    return [{k: v for k, v in step.items() if k != "exec_cached"} for step in datasets.episode_infos(infos)]


def assert_same_dataset(a, b) -> None:
    """Two Minari datasets hold the same episodes, value for value, under the same ids."""
    assert a.total_episodes == b.total_episodes and a.total_steps == b.total_steps
    for x, y in zip(a.iterate_episodes(), b.iterate_episodes(), strict=True):
        assert x.id == y.id
        for field in ("observations", "actions", "rewards", "terminations", "truncations"):
            assert np.array_equal(getattr(x, field), getattr(y, field)), (x.id, field)
        assert same(comparable_infos(x.infos), comparable_infos(y.infos)), x.id
    for key in ("ref_min_score", "ref_max_score"):
        assert a.storage.metadata.get(key) == b.storage.metadata.get(key)


def assert_same_buffer(x, y) -> None:
    """Two episode buffers (``datasets.rollout``) are the same episode."""
    assert (x.id, x.seed) == (y.id, y.seed)
    assert np.array_equal(x.observations, y.observations) and np.array_equal(x.actions, y.actions)
    assert x.rewards == y.rewards and x.terminations == y.terminations
    drop = {"exec_cached"}
    assert same({k: v for k, v in x.infos.items() if k not in drop}, {k: v for k, v in y.infos.items() if k not in drop})


# ----- one machine ----------------------------------------------------------------------------------------
def test_collect_with_two_processes_equals_the_sequential_dataset(minari_root):
    kwargs = dict(episodes=10, seed=5, split="train", ref_policies=(make_policy("random"), make_policy("oracle")),
                  ref_episodes=4, progress=False)
    sequential = datasets.collect(ENV_ID, make_policy("behaviour"), "harness/scale-seq-v0", **kwargs)
    parallel = datasets.collect(ENV_ID, make_policy("behaviour"), "harness/scale-par-v0", num_envs=2,
                                parallel="process", **kwargs)
    assert_same_dataset(sequential, parallel)
    assert [ep.id for ep in parallel.iterate_episodes()] == list(range(10))


def test_eval_with_num_envs_2_prints_the_sequential_summary(capsys):
    args = ["eval", ENV_ID, "--policy", "random", "--episodes", "8", "--seed", "3", "--json"]
    assert main(args) == 0
    sequential = json.loads(capsys.readouterr().out)
    assert main([*args, "--num-envs", "2"]) == 0  # processes: the simulated worker's default
    concurrent = json.loads(capsys.readouterr().out)
    sequential.pop("seconds"), concurrent.pop("seconds")
    assert concurrent == sequential


class FailsOnOneSeed:
    """The behaviour policy, raising when it starts the episode with reset seed ``bad_seed``."""

    name = "behaviour"

    def __init__(self, bad_seed: int) -> None:
        self.inner, self.bad_seed = make_policy("behaviour"), bad_seed

    def reset(self, env, seed=None):
        if seed == self.bad_seed:
            raise RuntimeError("controller crashed")
        self.inner.reset(env, seed)

    def act(self, obs, env):
        return self.inner.act(obs, env)


def test_concurrent_collect_checkpoints_and_resumes(minari_root):
    bad = datasets.episode_seed(2, 6)
    with pytest.raises(EpisodeError, match=rf"(?s)episode 6 \(reset seed {bad}\).*controller crashed"):
        datasets.collect(ENV_ID, FailsOnOneSeed(bad), "harness/scale-resume-v0", episodes=12, seed=2,
                         progress=False, num_envs=2, parallel="thread")
    saved = {int(p.name[2:8]) for p in datasets.work_dir("harness/scale-resume-v0").glob("ep*.npz")}
    assert 6 not in saved and saved <= set(range(12))
    resumed = datasets.collect(ENV_ID, make_policy("behaviour"), "harness/scale-resume-v0", episodes=12, seed=2,
                               progress=False, num_envs=2, parallel="thread")
    straight = datasets.collect(ENV_ID, make_policy("behaviour"), "harness/scale-straight-v0", episodes=12, seed=2,
                                progress=False)
    assert_same_dataset(resumed, straight)


def test_threads_keep_n_calls_in_flight_and_play_the_simulated_episodes():
    meter = CallMeter()
    probe = gym.make(ENV_ID)  # wrap the env's own simulated worker (bound to the domain's tools and prompts)
    worker = LatencyWorker(probe.unwrapped.worker, latency_s=0.1, meter=meter)
    probe.close()
    assert default_parallel({"worker": worker}) == "thread" and default_parallel({"worker": "openai"}) == "thread"
    assert default_parallel({}) == "process"
    delayed = evaluate(ENV_ID, "forced-check", episodes=12, seed=4, env_kwargs={"worker": worker}, num_envs=4)
    plain = evaluate(ENV_ID, "forced-check", episodes=12, seed=4)
    assert meter.max_in_flight == 4 and meter.in_flight == 0
    assert meter.calls >= 12  # every episode waited on at least one call
    delayed.pop("seconds"), plain.pop("seconds")
    assert delayed == plain


def test_llm_episodes_recorded_by_threads_replay_one_by_one(tmp_path):
    from tests.test_llm_worker import ReferenceModel

    cache = tmp_path / "calls.sqlite"
    with FakeOpenAIServer(ReferenceModel(ENV_ID)) as srv:
        live = {"worker": "openai", "base_url": srv.base_url, "model": "fake", "cache": str(cache)}
        recorded = evaluate(ENV_ID, "forced-check", episodes=6, seed=1, env_kwargs=live, num_envs=3)
        assert sum(srv.served.values()) > 6
    replay = {"worker": "openai", "model": "fake", "cache": str(cache), "cache_mode": "replay"}
    replayed = evaluate(ENV_ID, "forced-check", episodes=6, seed=1, env_kwargs=replay)
    recorded.pop("seconds"), replayed.pop("seconds")
    assert replayed == recorded and recorded["quality_mean"] > 0


def test_per_slot_llm_caches_merge_into_one_that_replays(tmp_path, capsys):
    from tests.test_llm_worker import ReferenceModel

    with FakeOpenAIServer(ReferenceModel(ENV_ID)) as srv:
        live = {"worker": "openai", "base_url": srv.base_url, "model": "fake",
                "cache": str(tmp_path / "calls-{host}-{slot}.sqlite")}
        recorded = evaluate(ENV_ID, "forced-check", episodes=6, seed=8, env_kwargs=live, num_envs=2)
    parts = sorted(tmp_path.glob("calls-*.sqlite"))
    assert [p.name.rsplit("-", 1)[1] for p in parts] == ["0.sqlite", "1.sqlite"]
    merged = tmp_path / "merged.sqlite"
    assert main(["merge-cache", str(merged), *map(str, parts)]) == 0
    total = sum(len(LLMCache(p, "replay")) for p in parts)
    assert f"{total} entries added, 0 already held" in capsys.readouterr().out
    again = merge_caches(merged, parts)  # merging twice adds nothing
    assert (again.added, again.kept, again.conflicts) == (0, total, 0)
    assert sqlite3.connect(merged).execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    replay = {"worker": "openai", "model": "fake", "cache": str(merged), "cache_mode": "replay"}
    replayed = evaluate(ENV_ID, "forced-check", episodes=6, seed=8, env_kwargs=replay)
    recorded.pop("seconds"), replayed.pop("seconds")
    assert replayed == recorded


def test_bad_settings_are_named():
    spec_args = (ENV_ID, make_policy("static"), [(0, 1)], datasets.rollout)
    with pytest.raises(ValueError, match="num_envs must be >= 1"):
        map_episodes(*spec_args, split="test", num_envs=0)
    with pytest.raises(ValueError, match="backend must be one of"):
        map_episodes(*spec_args, split="test", backend="dask")
    with pytest.raises(ValueError, match="for backend='ray'"):
        map_episodes(*spec_args, split="test", address="auto")
    with pytest.raises(ValueError, match="parallel must be one of"):
        map_episodes(*spec_args, split="test", parallel="fiber")
    with pytest.raises(ValueError, match=r"repeated: \[0\]"):
        map_episodes(ENV_ID, make_policy("static"), [(0, 1), (0, 2)], datasets.rollout, split="test")

def test_bad_scale_flags_are_one_line_usage_errors(capsys):
    assert main(["eval", ENV_ID, "--policy", "static", "--address", "auto"]) == 2
    assert "needs --backend ray" in capsys.readouterr().err
    assert main(["eval", ENV_ID, "--policy", "static", "--num-envs", "0"]) == 2
    assert "--num-envs must be >= 1" in capsys.readouterr().err


@pytest.mark.parametrize("vec_env, cls", [("subproc", "SubprocVecEnv"), ("dummy", "DummyVecEnv")])
def test_sb3_vec_env_seeds_env_i_with_seed_plus_i(vec_env, cls):
    pytest.importorskip("stable_baselines3")
    from harness_gym.running.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env(ENV_ID, 2, seed=11, vec_env=vec_env)
    try:
        assert venv.num_envs == 2 and type(venv).__name__ == cls
        first = venv.reset()
        masks = venv.env_method("action_masks")
    finally:
        venv.close()
    for i in range(2):
        env = gym.make(ENV_ID)
        obs, _ = env.reset(seed=11 + i)
        assert np.array_equal(first[i], obs) and np.array_equal(masks[i], env.unwrapped.action_masks())
        env.close()
    with pytest.raises(ValueError, match="vec_env must be 'dummy' or 'subproc', got 'async'"):
        make_sb3_vec_env(ENV_ID, 2, seed=11, vec_env="async")


# ----- Ray ------------------------------------------------------------------------------------------------
def _ray():
    try:
        import ray
    except ImportError:
        if os.environ.get("HG_REQUIRE_RAY") == "1":
            raise
        pytest.skip("Ray is not installed (pip install 'harness-gym[ray]'); HG_REQUIRE_RAY=1 makes this a failure")
    return ray


@pytest.fixture(scope="module")
def local_ray():
    ray = _ray()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_ray_collect_equals_the_sequential_dataset(local_ray, minari_root):
    kwargs = dict(episodes=8, seed=9, ref_policies=(make_policy("random"), make_policy("oracle")), ref_episodes=3,
                  progress=False)
    sequential = datasets.collect(ENV_ID, make_policy("behaviour"), "harness/scale-ray-seq-v0", **kwargs)
    on_ray = datasets.collect(ENV_ID, make_policy("behaviour"), "harness/scale-ray-v0", backend="ray", num_envs=2,
                              **kwargs)
    assert_same_dataset(sequential, on_ray)
    plain = evaluate(ENV_ID, "forced-check", episodes=6, seed=2)
    ray_eval = evaluate(ENV_ID, "forced-check", episodes=6, seed=2, backend="ray", num_envs=2)
    plain.pop("seconds"), ray_eval.pop("seconds")
    assert ray_eval == plain


def test_a_killed_ray_actor_is_replaced_and_every_episode_comes_back_once(local_ray):
    from harness_gym.running.ray_backend import map_episodes_ray

    jobs = [(i, datasets.episode_seed(4, i)) for i in range(10)]
    spec = EpisodeSpec(ENV_ID, make_policy("behaviour"), datasets.rollout, "train")
    actors: list = []
    got: list = []
    killed = None
    for index, buffer in map_episodes_ray(spec, jobs, num_envs=2, actors_out=actors):
        got.append((index, buffer))
        if killed is None:  # mid-run: one result in, nine to go
            killed = actors[0]
            local_ray.kill(killed)
    assert sorted(i for i, _ in got) == list(range(10))  # every episode, exactly once
    assert actors[0] is not killed  # the dead actor was replaced
    env, policy = gym.make(ENV_ID), make_policy("behaviour")
    for index, buffer in sorted(got, key=lambda pair: pair[0]):
        assert_same_buffer(buffer, datasets.rollout(env, policy, index=index, seed=jobs[index][1], split="train"))
    env.close()
