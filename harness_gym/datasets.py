"""Offline rollout buffers <-> Minari datasets (the offline data of ``docs/offline_results.md``).

:func:`collect` plays a controller for N episodes and writes a Minari dataset with
``minari.create_dataset_from_buffers`` (Minari's ``DataCollector`` is not used: it needs jax). What is stored:

- ``observations`` (T+1, F) float32, ``actions`` (T,) int64, ``rewards``, ``terminations``, ``truncations``;
- ``infos`` (T+1 entries: the reset, then each step): by default only :data:`STEP_INFO_KEYS`, ``action_mask``
  (the boolean mask of applicable actions for the observation with the same index) and ``invalid_action``.
  ``info_keys=None`` stores every key of the env's ``info`` (``harness-gym collect --info-key all``), a list
  stores those keys (``--info-key evidence --info-key budget_left``); ``action_mask`` is always stored.
  Nested dicts (``patterns``, ``evidence``) become groups; Minari reads strings back as bytes, which
  :func:`episode_infos` and :func:`iterate_episodes` decode to ``str``.
- per episode (:func:`episode_outcomes`): the final step's :data:`OUTCOME_KEYS` (``quality``, ``success``,
  ``hms``, ``patterns``, ``forced_submit``, ``task_id``, ``split``), kept as one list per key in the
  dataset's metadata (``harness_gym.outcomes``); HDF5 attributes would cost about 200 bytes per value.
- metadata: the env spec and an ``eval_env_spec`` on the evaluation split (``eval_split``, default ``test``:
  ``dataset.recover_environment(eval_env=True)`` makes that env), ``algorithm_name`` (the controller's name),
  ``ref_min_score`` / ``ref_max_score`` (mean episode return of the reference controllers, normally
  ``random`` and ``oracle``) and a ``harness_gym`` entry with the collection settings, the feature names, the env's
  ``cost_weight`` and ``prices``, and the collected episodes' ``cost_mean`` (cost units) and ``return_mean``.

Storage: Minari's ``hdf5`` backend (``arrow`` needs pyarrow, and its per-episode files carry a schema each).
Minari writes every array of every episode as a chunked HDF5 dataset, whose chunk index costs about 2 KB
however small the array; harness episodes are short (5 to 30 steps), so that overhead was most of the file
(about 13 KB a step with every info key). :func:`collect` therefore rewrites the finished file with
contiguous arrays, HDF5's newest object headers and no creation-order indices (:func:`repack_hdf5`; the
content is unchanged and Minari reads it as before; reading needs HDF5 1.10 or newer, which every h5py 3
wheel bundles) and stores only the per-step infos above: about 0.7 KB a step on ``HarnessCode-v1``.
``python benchmarks/dataset_size.py`` measures bytes per step of the old and the new settings.

Resuming: while collecting, each finished episode is written atomically to
``<datasets root>/.harness_gym_work/<dataset id>/ep<index>-seed<seed>.npz`` (the root is Minari's:
``$MINARI_DATASETS_PATH`` or ``~/.minari/datasets``; hidden folders are invisible to Minari). A rerun with the
same settings skips the episodes found there, so an interruption loses at most the episode in flight and never
duplicates one. When all episodes exist the Minari dataset is built from them and the work folder removed.

This module is part of the env library and does not import ``harness_gym_baselines``: controllers (any
:class:`harness_gym.running.rollout.Policy`) are passed in. It needs the ``offline`` extra (``pip install
"harness-gym[offline]"``: Minari, h5py).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shutil
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

try:
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer
    from minari.dataset.minari_dataset import parse_dataset_id
    from minari.storage.datasets_root_dir import get_dataset_path
except ImportError as exc:  # the env library installs without the offline stack
    raise ImportError(f"harness_gym.datasets needs Minari ({exc}); install it with "
                      'pip install "harness-gym[offline]"') from exc

from harness_gym.running.parallel import is_concurrent, map_episodes
from harness_gym.running.rollout import Policy, episode_seed, harness_env, play_episode

WORK_DIR = ".harness_gym_work"
MASK_KEY = "action_mask"
STEP_INFO_KEYS: tuple[str, ...] = (MASK_KEY, "invalid_action")
"""the info keys stored at every step by default (``info_keys``): what the offline learners read"""
OUTCOME_KEYS: tuple[str, ...] = ("quality", "success", "hms", "patterns", "forced_submit", "task_id", "split")
"""the final step's info keys stored once per episode (:func:`episode_outcomes`)"""


def work_dir(dataset_id: str) -> Path:
    """Where :func:`collect` keeps the finished episodes of an unfinished dataset."""
    return get_dataset_path() / WORK_DIR / dataset_id


# ----- one episode ----------------------------------------------------------------------------------------
def _columns(steps: Sequence[Mapping[str, Any]], where: str) -> dict[str, Any]:
    """Per-step info dicts to Minari's layout: one stacked column per key (nested dicts stay nested)."""
    keys = steps[0].keys()
    for i, step in enumerate(steps):
        if step.keys() != keys:
            raise ValueError(f"{where}: info keys differ at step {i}: {sorted(step.keys() ^ keys)}; "
                             "Minari needs the same keys at every step")
    out: dict[str, Any] = {}
    for key in keys:
        values = [step[key] for step in steps]
        if isinstance(values[0], Mapping):
            out[key] = _columns(values, f"{where}.{key}")
        elif isinstance(values[0], str):
            out[key] = [str(v) for v in values]
        else:
            out[key] = np.asarray(values)
    return out


def rollout(env: gym.Env, policy: Policy, *, index: int, seed: int, split: str) -> EpisodeBuffer:
    """Play one episode and return it as a Minari ``EpisodeBuffer`` (with the action mask in the infos).

    :param env: a harness env
    :param policy: the controller
    :param index: the episode's index in the dataset
    :param seed: its reset seed
    :param split: the task split
    """
    ep = play_episode(env, policy, seed=seed, split=split, record_masks=True)
    infos = [{**info, MASK_KEY: mask} for info, mask in zip(ep.infos, ep.action_masks)]
    return EpisodeBuffer(
        id=index, seed=seed, options={"split": split},
        observations=np.stack(ep.observations).astype(np.float32), actions=np.asarray(ep.actions, dtype=np.int64),
        rewards=list(np.asarray(ep.rewards, dtype=np.float64) + 0.0),  # + 0.0 turns -0.0 (no step cost) into 0.0
        terminations=list(np.asarray(ep.terminations, bool)),
        truncations=list(np.asarray(ep.truncations, bool)), infos=_columns(infos, f"episode {index}"))


# ----- the per-episode checkpoint -------------------------------------------------------------------------
_EP_FILE = re.compile(r"ep(\d+)-seed(\d+)\.npz")


def _flatten(d: Mapping[str, Any], prefix: str) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for key, value in d.items():
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = np.asarray(value)
    return out


def _save_episode(folder: Path, ep: EpisodeBuffer) -> None:
    arrays = {"observations": ep.observations, "actions": ep.actions, "rewards": np.asarray(ep.rewards),
              "terminations": np.asarray(ep.terminations), "truncations": np.asarray(ep.truncations),
              **_flatten(ep.infos, "infos/")}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    final = folder / f"ep{ep.id:06d}-seed{ep.seed}.npz"
    tmp = final.with_suffix(".tmp")
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, final)  # atomic: an interruption leaves either the whole episode or nothing


def _load_episode(path: Path, index: int, seed: int, split: str) -> EpisodeBuffer:
    infos: dict[str, Any] = {}
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    for key, value in data.items():
        if not key.startswith("infos/"):
            continue
        *parents, leaf = key.split("/")[1:]
        node = infos
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value.tolist() if value.dtype.kind == "U" else value
    return EpisodeBuffer(id=index, seed=seed, options={"split": split}, observations=data["observations"],
                         actions=data["actions"], rewards=list(data["rewards"]),
                         terminations=list(data["terminations"]), truncations=list(data["truncations"]),
                         infos=infos)


def _finished(folder: Path, seed: int) -> dict[int, Path]:
    """Episodes already in the checkpoint folder, by index; a file with an unexpected seed is an error."""
    done: dict[int, Path] = {}
    for path in folder.glob("ep*.npz"):
        m = _EP_FILE.fullmatch(path.name)
        if m is None:
            continue
        index, file_seed = int(m.group(1)), int(m.group(2))
        if file_seed != episode_seed(seed, index):
            raise ValueError(f"{path}: episode {index} was collected with reset seed {file_seed}, expected "
                             f"{episode_seed(seed, index)}; this work folder belongs to another run")
        done[index] = path
    return done


# ----- what is stored -------------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """A stored info value as a plain Python value (numpy scalars unwrapped, bytes decoded)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        value = value.item()
    return value.decode("utf-8") if isinstance(value, bytes) else value


def episode_outcome(infos: Mapping[str, Any]) -> dict[str, Any]:
    """The final step's :data:`OUTCOME_KEYS` from an episode's stacked infos (the ``outcome`` metadata), and
    ``cost``: the episode's total cost units (the sum of ``info["cost"]["units"]`` over its steps).

    :param infos: the episode's infos, one stacked column per key (:func:`rollout`)
    """
    def last(column: Any) -> Any:
        return {k: last(v) for k, v in column.items()} if isinstance(column, Mapping) else _plain(column[-1])

    outcome = {key: last(infos[key]) for key in OUTCOME_KEYS if key in infos}
    if "cost" in infos:
        outcome["cost"] = float(np.sum(infos["cost"]["units"]))
    return outcome


def _outcome_columns(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per-episode outcome dicts as one list per key (nested dicts stay nested): the compact form kept in
    the dataset's metadata (an HDF5 attribute per value and episode would cost about 200 bytes each)."""
    columns: dict[str, Any] = {}
    for key in outcomes[0] if outcomes else ():
        values = [o[key] for o in outcomes]
        columns[key] = _outcome_columns(values) if isinstance(values[0], Mapping) else values
    return columns


def _outcome_rows(columns: Mapping[str, Any], n: int) -> list[dict[str, Any]]:
    """The inverse of :func:`_outcome_columns`."""
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for key, values in columns.items():
        per_row = _outcome_rows(values, n) if isinstance(values, Mapping) else values
        for i in range(n):
            rows[i][key] = per_row[i]
    return rows


def select_infos(infos: Mapping[str, Any], info_keys: Sequence[str] | None) -> dict[str, Any]:
    """The info columns to store: all of them (``info_keys=None``) or the listed keys and ``action_mask``; an
    unknown key is an error naming the keys there are.

    :param infos: the episode's infos, one stacked column per key
    :param info_keys: the keys to keep, or ``None`` for every key
    """
    if info_keys is None:
        return dict(infos)
    unknown = sorted(set(info_keys) - set(infos))
    if unknown:
        raise ValueError(f"info_keys {unknown} are not info keys of this env; it has {sorted(infos)}")
    return {key: infos[key] for key in infos if key in info_keys or key == MASK_KEY}


def repack_hdf5(path: str | Path) -> int:
    """Rewrite an HDF5 file with the same groups, attributes and arrays, each array stored contiguously, in
    HDF5's newest object-header format and without creation-order indices on the groups (Minari writes
    chunked arrays, about 2 KB of index each); returns the new size in bytes. The file is replaced atomically.

    :param path: the file (Minari's ``main_data.hdf5``)
    """
    import h5py

    path = Path(path)
    tmp = path.with_suffix(".repack.tmp")

    def copy(src: h5py.Group, dst: h5py.Group) -> None:
        dst.attrs.update(dict(src.attrs))
        for name, item in src.items():
            if isinstance(item, h5py.Group):
                copy(item, dst.create_group(name, track_order=False))
            else:
                dst.create_dataset(name, data=item[()], dtype=item.dtype)

    with h5py.File(path, "r") as src, h5py.File(tmp, "w", libver="latest", track_order=False) as dst:
        copy(src, dst)
    os.replace(tmp, path)
    return path.stat().st_size


# ----- collection -----------------------------------------------------------------------------------------
def mean_return(env: gym.Env, policy: Policy, *, episodes: int, seed: int, split: str) -> float:
    """Mean undiscounted episode return of ``policy`` over ``episodes`` episodes (reference scores)."""
    total = 0.0
    for i in range(episodes):
        total += float(np.sum(rollout(env, policy, index=i, seed=episode_seed(seed, i), split=split).rewards))
    return total / episodes


def _episode_return(env: gym.Env, policy: Policy, *, index: int, seed: int, split: str) -> float:
    """One term of :func:`mean_return` (the episode function of its concurrent form)."""
    return float(np.sum(rollout(env, policy, index=index, seed=seed, split=split).rewards))


def _ordered_mean(returns: Iterable[tuple[int, float]]) -> float:
    """The mean of ``(index, return)`` pairs summed in index order (so equal, bit for bit, to :func:`mean_return`)."""
    ordered = sorted(returns)
    total = 0.0
    for _, value in ordered:
        total += value
    return total / len(ordered)


class SettingsMismatch(ValueError):
    """A dataset id that exists (or is being collected) with other settings than those requested."""


def settings_differences(saved: Mapping[str, Any] | None, requested: Mapping[str, Any]) -> str:
    """The settings that differ, one ``KEY: SAVED here, REQUESTED requested`` item each (nested keys dotted).

    :param saved: the settings a dataset (or its unfinished collection) was made with
    :param requested: the settings asked for now
    """
    def flat(value: Any, prefix: str = "") -> dict[str, Any]:
        if isinstance(value, Mapping):  # an empty mapping holds nothing to compare
            return {k: v for key, item in value.items() for k, v in flat(item, f"{prefix}{key}.").items()}
        return {prefix.rstrip("."): value}

    old, new = flat(dict(saved or {})), flat(json.loads(json.dumps(dict(requested))))
    return "; ".join(f"{key}: {json.dumps(old.get(key, '(unset)'))} there, {json.dumps(new.get(key, '(unset)'))} "
                     "requested" for key in sorted(old.keys() | new.keys()) if old.get(key) != new.get(key))


def _check_settings(path: Path, settings: dict[str, Any]) -> None:
    if path.exists():
        saved = json.loads(path.read_text())
        if saved != json.loads(json.dumps(settings)):
            raise SettingsMismatch(f"this dataset id is being collected (in {path.parent}) with other settings: "
                             f"{settings_differences(saved, settings)}. Use another dataset id, or delete that "
                             "folder to start over.")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings, indent=1))


def _frontier_prices(henv: Any) -> dict[str, Any]:
    """``{"frontier_prices": table}`` for a tiered env (:mod:`harness_gym.tiered`), else nothing."""
    table = getattr(henv, "frontier_prices", None)
    return {} if table is None else {"frontier_prices": table.as_dict()}


def collect(env_id: str, policy: Policy, dataset_id: str, *, episodes: int, seed: int = 0,
            split: str = "train", env_kwargs: Mapping[str, Any] | None = None,
            ref_policies: tuple[Policy, Policy] | None = None, ref_episodes: int = 100,
            progress: bool = True, info_keys: Sequence[str] | None = STEP_INFO_KEYS,
            eval_split: str = "test", num_envs: int = 1, parallel: str | None = None, backend: str = "local",
            address: str | None = None, envs_per_actor: int = 1) -> minari.MinariDataset:
    """Collect ``episodes`` episodes of ``policy`` on ``env_id`` into the Minari dataset ``dataset_id``.

    Resumable: rerunning after an interruption continues where it stopped. If the dataset already exists with
    the same settings it is returned as it is.

    :param env_id: a registered env id
    :param policy: the controller (any :class:`harness_gym.running.rollout.Policy`)
    :param dataset_id: Minari id, ``namespace/name-vN`` (e.g. ``harness/code-behaviour-v0``)
    :param episodes: number of episodes
    :param seed: episode ``i`` is reset with :func:`harness_gym.running.rollout.episode_seed` ``(seed, i)``, the rule
        evaluation uses
    :param split: the task split episodes are drawn from
    :param env_kwargs: constructor keywords for ``gym.make``
    :param ref_policies: (min, max) reference controllers for ``ref_min_score`` / ``ref_max_score``
    :param ref_episodes: episodes per reference controller
    :param progress: show a tqdm progress bar
    :param info_keys: the info keys stored at every step (default :data:`STEP_INFO_KEYS`; ``None``: all);
        ``action_mask`` is always stored, the final step's :data:`OUTCOME_KEYS` always once per episode
    :param eval_split: the split of the dataset's ``eval_env_spec`` (``recover_environment(eval_env=True)``)
    :param num_envs: episodes played at once (:func:`harness_gym.running.parallel.map_episodes`); the dataset is the
        same for any value (with the simulated worker), and a rerun may resume with another one
    :param parallel: ``"process"`` or ``"thread"`` (default: threads for an LLM worker, else processes)
    :param backend: ``"local"`` or ``"ray"`` (``docs/scale_out.md``)
    :param address: the Ray cluster to join (``backend="ray"``)
    :param envs_per_actor: with Ray, envs per actor
    """
    parse_dataset_id(dataset_id)  # fail early on a malformed id
    env_kwargs = dict(env_kwargs or {})
    settings = {"env_id": env_id, "policy": policy.name, "episodes": episodes, "seed": seed, "split": split,
                "env_kwargs": env_kwargs, "ref_policies": [p.name for p in ref_policies or ()],
                "ref_episodes": ref_episodes if ref_policies else 0,
                "info_keys": None if info_keys is None else sorted({*info_keys, MASK_KEY}),
                "eval_split": eval_split}
    if (get_dataset_path(dataset_id) / "data").exists():
        dataset = minari.load_dataset(dataset_id)
        saved = dataset.storage.metadata.get("harness_gym", {}).get("settings")
        if saved != json.loads(json.dumps(settings)):
            raise SettingsMismatch(f"dataset {dataset_id} exists with other settings: "
                             f"{settings_differences(saved, settings)}. Use another dataset id, or delete "
                             f"{get_dataset_path(dataset_id)} to collect it anew.")
        return dataset

    folder = work_dir(dataset_id)
    _check_settings(folder / "settings.json", settings)
    env = gym.make(env_id, **env_kwargs)
    try:
        done = _finished(folder, seed)
        todo = [i for i in range(episodes) if i not in done]
        concurrent = is_concurrent(num_envs, backend)
        scale = {"split": split, "env_kwargs": env_kwargs, "num_envs": num_envs, "parallel": parallel,
                 "backend": backend, "address": address, "envs_per_actor": envs_per_actor}
        jobs = [(i, episode_seed(seed, i)) for i in todo]
        played = (map_episodes(env_id, policy, jobs, rollout, **scale) if concurrent else
                  ((i, rollout(env, policy, index=i, seed=s, split=split)) for i, s in jobs))
        for _, ep in tqdm(played, disable=not progress, desc=f"collect {dataset_id}", initial=episodes - len(todo),
                          total=episodes):  # concurrent episodes arrive in the order they finish
            _save_episode(folder, ep)

        refs_file = folder / "ref_scores.json"
        if ref_policies and not refs_file.exists():
            ref_jobs = [(i, episode_seed(seed, i)) for i in range(ref_episodes)]
            refs_file.write_text(json.dumps([
                _ordered_mean(map_episodes(env_id, p, ref_jobs, _episode_return, **scale)) if concurrent else
                mean_return(env, p, episodes=ref_episodes, seed=seed, split=split) for p in ref_policies]))
        ref_min, ref_max = json.loads(refs_file.read_text()) if ref_policies else (None, None)

        done = _finished(folder, seed)
        buffers, outcomes = [], []
        for i in range(episodes):
            buffer = _load_episode(done[i], i, episode_seed(seed, i), split)
            outcomes.append(episode_outcome(buffer.infos))
            buffers.append(dataclasses.replace(buffer, infos=select_infos(buffer.infos, info_keys)))
        henv = harness_env(env)
        assert env.spec is not None
        eval_spec = dataclasses.replace(env.spec, kwargs={**env.spec.kwargs, "split": eval_split})
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*(author_email|code_permalink).*", category=UserWarning)
            dataset = minari.create_dataset_from_buffers(
                dataset_id=dataset_id, buffer=buffers, env=env, eval_env=eval_spec,
                algorithm_name=policy.name,
                author="harness_gym", author_email=None, code_permalink=None,
                ref_min_score=ref_min, ref_max_score=ref_max, num_episodes_average_score=ref_episodes,
                description=f"{episodes} episodes of the '{policy.name}' controller on {env_id} "
                            f"({split} split, seed {seed}); infos include the per-step action mask",
                data_format="hdf5", requirements=["harness_gym"])
    finally:
        env.close()
    repack_hdf5(Path(dataset.storage.data_path) / "main_data.hdf5")
    dataset.storage.update_metadata({"dataset_size": dataset.storage.get_size(), "harness_gym": {
        "settings": settings, "feature_names": list(henv.feature_names), "budget": henv.budget,
        "success_threshold": henv.domain.success_threshold, "cost_weight": henv.cost_weight,
        "prices": henv.prices.as_dict(), **_frontier_prices(henv), "cost_mean": float(np.mean([o["cost"] for o in outcomes])),
        "return_mean": float(np.mean([np.sum(b.rewards) for b in buffers])), "outcomes": _outcome_columns(outcomes)}})
    shutil.rmtree(folder)
    return minari.load_dataset(dataset_id)


# ----- reading back ---------------------------------------------------------------------------------------
def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, np.ndarray) and value.dtype == object:
        return [v.decode("utf-8") if isinstance(v, bytes) else v for v in value]
    return value


def episode_infos(infos: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An episode's stacked infos (as Minari returns them) back to one plain dict per step (strings decoded,
    numpy scalars as Python scalars, the action mask as a bool array)."""
    columns = _decode(dict(infos))

    def at(col: Mapping[str, Any], t: int) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for key, value in col.items():
            if isinstance(value, Mapping):
                row[key] = at(value, t)
            elif isinstance(value, np.ndarray) and value.ndim > 1:
                row[key] = value[t]
            else:
                v = value[t]
                row[key] = v.item() if isinstance(v, np.generic) else v
        return row

    n = len(columns[MASK_KEY])
    return [at(columns, t) for t in range(n)]


def episode_outcomes(dataset: str | minari.MinariDataset) -> list[dict[str, Any]]:
    """Per episode, in episode order, the final step's :data:`OUTCOME_KEYS` (``quality``, ``success``, ...;
    strings as ``str``). Datasets written before outcomes were stored per episode give them from the last
    step's infos instead.

    :param dataset: a dataset written by :func:`collect`, or its id
    """
    ds = minari.load_dataset(dataset) if isinstance(dataset, str) else dataset
    columns = ds.storage.metadata.get("harness_gym", {}).get("outcomes")
    if columns is not None:
        rows = _outcome_rows(columns, ds.storage.total_episodes)
        return [rows[int(i)] for i in ds.episode_indices]
    return [episode_outcome(episode["infos"]) for episode in ds.storage.get_episodes(ds.episode_indices)]


def iterate_episodes(dataset: str | minari.MinariDataset) -> Iterator[minari.EpisodeData]:
    """Minari's ``dataset.iterate_episodes()`` with the infos' strings decoded to ``str`` (Minari gives bytes).

    :param dataset: a dataset written by :func:`collect`, or its id
    """
    ds = minari.load_dataset(dataset) if isinstance(dataset, str) else dataset
    for episode in ds.iterate_episodes():
        yield dataclasses.replace(episode, infos=_decode(dict(episode.infos)))


@dataclass
class Transitions:
    """The steps of a dataset, flattened over episodes, with what offline learners need: (s, a), the action
    masks and returns-to-go (BC, AWR) and, from :func:`load_transitions`, the one-step columns (IQL, CQL)."""

    observations: np.ndarray
    """(N, F) float32 observations"""
    actions: np.ndarray
    """(N,) int64 actions"""
    action_masks: np.ndarray
    """(N, A) bool: the actions that were applicable in each state"""
    returns: np.ndarray
    """(N,) float32 Monte-Carlo return-to-go (undiscounted: the reward is the terminal quality)"""
    episode: np.ndarray
    """(N,) int64 index of the episode each step belongs to"""
    env_id: str
    env_kwargs: dict[str, Any]
    feature_names: tuple[str, ...]
    rewards: np.ndarray | None = None
    """(N,) float32 reward of each step (for one-step learners such as IQL; ``None`` where not given)"""
    next_observations: np.ndarray | None = None
    """(N, F) float32 observation after each step"""
    terminals: np.ndarray | None = None
    """(N,) bool: the step terminated the episode (a truncated last step is not terminal: its value bootstraps)"""
    next_action_masks: np.ndarray | None = None
    """(N, A) bool: the actions applicable after each step (for a max over next actions, as in CQL)"""

    def __len__(self) -> int:
        return len(self.actions)

    def subset(self, keep_episodes: Sequence[int]) -> Transitions:
        """The transitions of the listed episodes only."""
        keep = np.isin(self.episode, np.asarray(keep_episodes))

        def kept(column: np.ndarray | None) -> np.ndarray | None:
            return None if column is None else column[keep]

        return Transitions(self.observations[keep], self.actions[keep], self.action_masks[keep],
                           self.returns[keep], self.episode[keep], self.env_id, self.env_kwargs,
                           self.feature_names, kept(self.rewards), kept(self.next_observations),
                           kept(self.terminals), kept(self.next_action_masks))


def dataset_settings(dataset: minari.MinariDataset) -> dict[str, Any]:
    """The ``harness_gym`` metadata :func:`collect` wrote (env id, env kwargs, feature names, ...)."""
    meta = dataset.storage.metadata.get("harness_gym")
    if meta is None:
        raise ValueError(f"dataset {dataset.id} was not written by harness_gym.datasets.collect")
    return meta


def read_columns(dataset: str | minari.MinariDataset, columns: Sequence[str]) -> list[dict[str, np.ndarray]]:
    """Per episode, the listed arrays (``"observations"``, ``"actions"``, ``"rewards"``, ``"infos/success"``, ...)
    read straight from the HDF5 file Minari wrote. Minari's own reader decodes every info key of every
    episode, several times slower than reading the few arrays a learner needs."""
    ds = minari.load_dataset(dataset) if isinstance(dataset, str) else dataset
    if ds.storage.metadata.get("data_format") != "hdf5":
        raise ValueError(f"dataset {ds.id}: expected Minari's hdf5 format, "
                         f"got {ds.storage.metadata.get('data_format')}")
    import h5py

    out = []
    with h5py.File(Path(ds.storage.data_path) / "main_data.hdf5", "r") as f:
        for i in ds.episode_indices:
            group = f[f"episode_{i}"]
            out.append({c: group[c][()] for c in columns})
    return out


def load_transitions(dataset: str | minari.MinariDataset) -> Transitions:
    """Load a dataset written by :func:`collect` as flat :class:`Transitions`."""
    ds = minari.load_dataset(dataset) if isinstance(dataset, str) else dataset
    meta = dataset_settings(ds)
    obs, acts, masks, rets, eps, rews, next_obs, terms, next_masks = [], [], [], [], [], [], [], [], []
    columns = ("observations", "actions", "rewards", "terminations", f"infos/{MASK_KEY}")
    for i, ep in zip(ds.episode_indices, read_columns(ds, columns)):
        obs.append(ep["observations"][:-1])
        next_obs.append(ep["observations"][1:])
        acts.append(ep["actions"])
        masks.append(ep[f"infos/{MASK_KEY}"][:-1])
        next_masks.append(ep[f"infos/{MASK_KEY}"][1:])
        rews.append(ep["rewards"])
        rets.append(np.cumsum(ep["rewards"][::-1])[::-1])
        terms.append(ep["terminations"])
        eps.append(np.full(len(ep["actions"]), i))
    return Transitions(np.concatenate(obs).astype(np.float32), np.concatenate(acts).astype(np.int64),
                       np.concatenate(masks).astype(bool), np.concatenate(rets).astype(np.float32),
                       np.concatenate(eps).astype(np.int64), meta["settings"]["env_id"],
                       meta["settings"]["env_kwargs"], tuple(meta["feature_names"]),
                       rewards=np.concatenate(rews).astype(np.float32),
                       next_observations=np.concatenate(next_obs).astype(np.float32),
                       terminals=np.concatenate(terms).astype(bool),
                       next_action_masks=np.concatenate(next_masks).astype(bool))


def export_npz(dataset: str | minari.MinariDataset, path: str | Path) -> Path:
    """Write the dataset as flat arrays (``observations``, ``actions``, ``rewards``, ``terminals``,
    ``timeouts``, ``action_masks``, ``episode``) for tools that cannot import harness_gym or Minari
    (e.g. d3rlpy in its own venv)."""
    ds = minari.load_dataset(dataset) if isinstance(dataset, str) else dataset
    cols: dict[str, list[np.ndarray]] = {k: [] for k in
                                         ("observations", "actions", "rewards", "terminals", "timeouts",
                                          "action_masks", "episode")}
    names = ("observations", "actions", "rewards", "terminations", "truncations", f"infos/{MASK_KEY}")
    for i, ep in zip(ds.episode_indices, read_columns(ds, names)):
        cols["observations"].append(ep["observations"][:-1])
        cols["actions"].append(ep["actions"])
        cols["rewards"].append(ep["rewards"])
        cols["terminals"].append(ep["terminations"])
        cols["timeouts"].append(ep["truncations"])
        cols["action_masks"].append(ep[f"infos/{MASK_KEY}"][:-1])
        cols["episode"].append(np.full(len(ep["actions"]), i))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **{k: np.concatenate(v) for k, v in cols.items()},
                        feature_names=np.asarray(dataset_settings(ds)["feature_names"]))
    return path
