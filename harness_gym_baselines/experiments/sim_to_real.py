"""The sim-to-real comparison on a recording of a real model: the real model (replayed from the record/replay
cache, no server) against the simulated worker on its default profile (the env id's own,
:func:`~harness_gym.workers.calibrate.default_profile`: the v2 set for a ``-v2`` id) and on its fitted profile, for
the same controllers on the same tasks.

The controllers are the fixed scripts of :data:`FIXED` and learned ones: a model file trained on the
*simulator* (:func:`train_learned`: AWR with the fitted Q advantage on a behaviour buffer of the env's default
profile), shipped beside the recording and named in its manifest under ``models``. That is the transfer a user
makes: train against the simulator, deploy with the real model.

For each env of the recording's manifest: fit the domain's profile to the recorded episodes
(:mod:`harness_gym.workers.calibrate`), then report per controller the mean quality Q (95% bootstrap CI over
tasks), LLM calls and tokens with the real model, and the same for the simulated worker with the default and
with the fitted profile on the same tasks (``sim_seeds`` seeds each, averaged per task first), and per env
the controllers' ranking under each worker. ``benchmarks/sim_to_real.py`` and ``harness-gym reproduce``
(``table_sim_to_real.md``) both run :func:`sim_to_real`; ``benchmarks/record_llm.py`` records with
:func:`run_on_task`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import harness_gym
from harness_gym.core.paths import data_path
from harness_gym.running.rollout import Policy
from harness_gym.workers.calibrate import ProfileFit, collect_events, default_profile, fit_profile, not_estimated_reason
from harness_gym.workers.profile import WorkerProfile
from harness_gym_baselines.common.options import recorded_env_kwargs
from harness_gym_baselines.experiments.statistics import bootstrap_ci
from harness_gym_baselines.policies.scripted import StaticPolicy, ThoroughPolicy

COST_KEYS = ("llm_calls", "llm_errors", "prompt_tokens", "completion_tokens", "latency_s")
FIXED: dict[str, Callable[[], Policy]] = {"static": lambda: StaticPolicy(check=False),
                                          "forced-check": lambda: StaticPolicy(check=True), "thorough": ThoroughPolicy}
"""the fixed scripts a recording holds, by the name its manifest uses"""
LEARNED = "awr-q"
"""the learned controller :func:`train_learned` trains (its name in the manifest)"""


def train_learned(env_id: str, out: Path, *, episodes: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Train the learned controller of the comparison on the simulator and write its model file to ``out``.

    The recipe of the offline table (:mod:`harness_gym_baselines.experiments.offline_comparison`): a behaviour buffer of
    ``episodes`` episodes on the train split with the env's own profile (``-v2``: the v2 set), then AWR with the fitted Q advantage
    (``advantage="q"``), its default beta and epochs, ``seed``. The buffer goes to a temporary Minari folder.

    :param env_id: the env
    :param out: the model file to write
    :param episodes: behaviour episodes
    :param seed: buffer and training seed
    :returns: the manifest's entry for the model (file name, recipe)
    """
    from harness_gym.datasets import collect, load_transitions
    from harness_gym_baselines.algos.awr import AWRConfig, train
    from harness_gym_baselines.experiments.offline_comparison import dataset_id
    from harness_gym_baselines.policies.behaviour import BehaviourPolicy

    dsid = dataset_id(env_id, seed)
    before = os.environ.get("MINARI_DATASETS_PATH")
    with tempfile.TemporaryDirectory(prefix="harness-gym-sim2real-") as tmp:
        os.environ["MINARI_DATASETS_PATH"] = tmp
        try:
            collect(env_id, BehaviourPolicy(), dsid, episodes=episodes, seed=seed, progress=False, ref_episodes=0)
            cfg = AWRConfig(dataset_id=dsid, out=str(out), seed=seed, advantage="q", eval_episodes=0,
                            log_dir=str(Path(tmp) / "runs"), progress=False)
            train(cfg, load_transitions(dsid))
        finally:
            if before is None:
                os.environ.pop("MINARI_DATASETS_PATH", None)
            else:
                os.environ["MINARI_DATASETS_PATH"] = before
    return {"file": Path(out).name, "algo": LEARNED, "trained_on": f"simulated worker, {env_id}'s profile, {episodes} "
            f"behaviour episodes of the train split, seed {seed}", "beta": cfg.beta, "epochs": cfg.epochs}


def make_controller(name: str, env_id: str, manifest: dict[str, Any], manifest_dir: Path) -> Policy:
    """A fresh controller named ``name`` for ``env_id``: a fixed script, or the manifest's model file for it.

    :param name: a key of :data:`FIXED` or of the manifest's ``models``
    :param env_id: the env (learned controllers have one model file per env)
    :param manifest: the recording's manifest
    :param manifest_dir: the folder model files are relative to
    """
    if name in FIXED:
        return FIXED[name]()
    entry = manifest.get("models", {}).get(name, {}).get(env_id)
    if entry is None:
        raise ValueError(f"recording manifest: controller {name!r} on {env_id} is neither a fixed script "
                         f"({', '.join(FIXED)}) nor listed under models.{name}.{env_id}")
    from harness_gym_baselines.policies.learned import load_policy

    policy = load_policy(manifest_dir / entry["file"])
    policy.name = name
    return policy


def run_on_task(env: gym.Env, policy: Any, task_id: str, seed: int) -> dict[str, Any]:
    """One episode of ``policy`` on ``task_id``: its actions, quality and summed cost.

    :param env: the env
    :param policy: a controller with ``reset`` and ``act``
    :param task_id: the task
    :param seed: the reset seed
    """
    from harness_gym.core.actions import Action

    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    policy.reset(env, seed)
    actions: list[int] = []
    cost = dict.fromkeys(COST_KEYS, 0.0)
    term = trunc = False
    while not (term or trunc):
        act = int(policy.act(obs, env))
        actions.append(act)
        obs, reward, term, trunc, info = env.step(act)
        for key in COST_KEYS:
            cost[key] += info["cost"][key]
    return {"task_id": task_id, "seed": seed, "actions": actions, "quality": float(info["quality"]),
            "cost": {k: (round(v, 6) if k == "latency_s" else int(v)) for k, v in cost.items()},
            "drafts": sum(a in (Action.DRAFT, Action.REVISE) for a in actions)}


@dataclass
class SimToRealRow:
    """One controller on one env of the recording: Q, LLM calls and tokens per episode under each worker."""

    env_id: str
    controller: str
    tasks: int
    q_real: float
    """mean quality with the real model (replayed)"""
    q_sim_default: float
    """mean quality of the simulated worker with the env id's own profile (the fit's starting point)"""
    q_sim_fitted: float
    """the same with the profile fitted to the recording"""
    llm_calls_real: float
    q_real_ci95: tuple[float, float] = (float("nan"), float("nan"))
    """95% bootstrap interval over tasks"""
    q_sim_default_ci95: tuple[float, float] = (float("nan"), float("nan"))
    q_sim_fitted_ci95: tuple[float, float] = (float("nan"), float("nan"))
    llm_calls_sim_default: float = float("nan")
    llm_calls_sim_fitted: float = float("nan")
    tokens_real: float = float("nan")
    """prompt + completion tokens per episode (the server's usage)"""
    tokens_sim_default: float = float("nan")
    """the same, estimated by the simulated worker's ledger"""
    tokens_sim_fitted: float = float("nan")
    sim_seeds: int = 0
    """simulator episodes per task (the real model: one per task, temperature 0)"""


@dataclass
class Ranking:
    """The controllers of one env ordered by mean Q under each worker, and how far the simulators agree."""

    env_id: str
    order: dict[str, list[list[str]]] = field(default_factory=dict)
    """worker ("real", "sim default", "sim fitted") -> groups of controllers, best first; a group ties"""
    agreeing_pairs: dict[str, int] = field(default_factory=dict)
    """simulator -> controller pairs it orders as the real model does (a tie only agrees with a tie)"""
    pairs: int = 0


def rank(rows: list[SimToRealRow], tol: float = 1e-9) -> Ranking:
    """The :class:`Ranking` of one env's rows.

    :param rows: the rows of one env
    :param tol: differences of mean Q up to this count as ties
    """
    columns = {"real": "q_real", "sim default": "q_sim_default", "sim fitted": "q_sim_fitted"}
    result = Ranking(rows[0].env_id, pairs=len(rows) * (len(rows) - 1) // 2)
    for worker, attr in columns.items():
        groups: list[list[str]] = []
        last = None
        for r in sorted(rows, key=lambda r: -getattr(r, attr)):
            if last is not None and last - getattr(r, attr) <= tol:
                groups[-1].append(r.controller)
            else:
                groups.append([r.controller])
            last = getattr(r, attr)
        result.order[worker] = groups

    def sign(r: SimToRealRow, o: SimToRealRow, attr: str) -> int:
        d = getattr(r, attr) - getattr(o, attr)
        return 0 if abs(d) <= tol else (1 if d > 0 else -1)

    for worker in ("sim default", "sim fitted"):
        attr = columns[worker]
        result.agreeing_pairs[worker] = sum(sign(a, b, "q_real") == sign(a, b, attr)
                                            for i, a in enumerate(rows) for b in rows[i + 1:])
    return result


def default_manifest() -> Path:
    """The shipped SmolLM2 recording's manifest (``envs_data/recordings/smollm2.json``)."""
    return Path(data_path("recordings", "smollm2.json"))


def _sim_per_task(env_id: str, split: str, profile: WorkerProfile, controller: Callable[[], Policy],
                  task_ids: list[str], sim_seeds: int, env_kwargs: dict[str, Any] | None = None
                  ) -> tuple[list[float], float, float]:
    """Per task the simulator's mean Q over ``sim_seeds`` seeds; and LLM calls and tokens per episode. The env takes
    ``env_kwargs``, the keywords the recording was made under (its manifest's ``env_kwargs``), so the simulator
    runs the controllers in the same MDP as the model did."""
    sim = gym.make(env_id, split=split, profile=profile, **(env_kwargs or {}))
    try:
        per_task, calls, tokens = [], [], []
        for task_id in task_ids:
            eps = [run_on_task(sim, controller(), task_id, seed=s) for s in range(sim_seeds)]
            per_task.append(float(np.mean([e["quality"] for e in eps])))
            calls += [e["cost"]["llm_calls"] for e in eps]
            tokens += [e["cost"]["prompt_tokens"] + e["cost"]["completion_tokens"] for e in eps]
    finally:
        sim.close()
    return per_task, float(np.mean(calls)), float(np.mean(tokens))


class StaleRecording(ValueError):
    """A recording made on env ids that are no longer registered (a retired version of the MDP): its episodes
    cannot be replayed on the registered envs until the recording is remade on them (benchmarks/record_llm.py)."""


def check_recording(manifest: dict[str, Any], manifest_path: Path) -> None:
    """Raise :class:`StaleRecording` naming the recorded env ids that are not registered.

    :param manifest: the recording's manifest
    :param manifest_path: where it was read from (for the message)
    """
    retired = sorted({ep["env_id"] for ep in manifest["episodes"]} - set(gym.registry))
    if retired:
        raise StaleRecording(f"{manifest_path.name} was recorded on {', '.join(retired)}, which the registered "
                             f"envs ({', '.join(harness_gym.ENV_IDS)}) retired; re-record it on them "
                             "(benchmarks/record_llm.py) and retrain its learned controllers")


def sim_to_real(manifest_path: Path | None = None, *, sim_seeds: int = 20, profiles_out: Path | None = None,
                num_workers: int = 1) -> tuple[list[SimToRealRow], dict[str, ProfileFit], dict[str, Any]]:
    """Replay the recording, fit a profile per env and compare real and simulated quality and cost. Each env is
    one task of :func:`~harness_gym_baselines.experiments.engine.run_tasks` (:func:`env_rows`), ``num_workers``
    at a time; nothing is resumed (the recording may have changed).

    :param manifest_path: the recording's manifest (default :func:`default_manifest`)
    :param sim_seeds: seeds of the simulated worker per recorded episode
    :param profiles_out: a folder to write the fitted profiles to (``<domain>.json``), or ``None``
    :param num_workers: envs at once
    :returns: the rows, the fits per env id, and the manifest
    """
    from harness_gym_baselines.experiments.engine import Task, run_tasks

    manifest_path = Path(manifest_path or default_manifest())
    if not manifest_path.is_file():
        raise FileNotFoundError(f"{manifest_path}: no such recording manifest")
    manifest = json.loads(manifest_path.read_text())
    check_recording(manifest, manifest_path)
    env_ids = list(dict.fromkeys(ep["env_id"] for ep in manifest["episodes"]))
    plan = [Task(f"sim_to_real:{env_id}", env_rows, {"manifest_path": manifest_path, "env_id": env_id,
                                                     "sim_seeds": sim_seeds, "profiles_out": profiles_out},
                 f"python benchmarks/sim_to_real.py {manifest_path} --sim-seeds {sim_seeds}") for env_id in env_ids]
    with tempfile.TemporaryDirectory() as tmp:
        records = run_tasks(plan, Path(tmp), num_workers, records_dir="tasks", what="sim-to-real env")
    rows: list[SimToRealRow] = []
    fits: dict[str, ProfileFit] = {}
    for env_id, task in zip(env_ids, plan):
        env_rows_of, fits[env_id] = records[task.name]["result"]
        rows += env_rows_of
    return rows, fits, manifest


def env_rows(manifest_path: Path, env_id: str, sim_seeds: int,
             profiles_out: Path | None) -> tuple[list[SimToRealRow], ProfileFit]:
    """One env of :func:`sim_to_real`: fit its profile to the recorded episodes, then one row per controller."""
    manifest = json.loads(manifest_path.read_text())
    cache = manifest_path.parent / manifest["cache"]
    episodes = [ep for ep in manifest["episodes"] if ep["env_id"] == env_id]
    recorded = recorded_env_kwargs(manifest, env_id, str(manifest_path))
    real = gym.make(env_id, worker="openai", cache=cache, cache_mode="replay", **manifest["worker"], **recorded)
    domain = real.unwrapped.domain.name
    default = default_profile(real)
    try:
        fit = fit_profile(collect_events(real, episodes), default)
    finally:
        real.close()
    if profiles_out is not None:
        profiles_out.mkdir(parents=True, exist_ok=True)
        source = f"{len(episodes)} recorded {manifest['worker']['model']} episodes"
        (profiles_out / f"{domain}.json").write_text(json.dumps(fit.to_json(domain, source), indent=1))
    rows = []
    for policy in dict.fromkeys(ep["policy"] for ep in episodes):
        mine = [ep for ep in episodes if ep["policy"] == policy]
        task_ids = [ep["task_id"] for ep in mine]
        if policy in FIXED:
            controller = FIXED[policy]
        else:  # one load of the model file per row; a LearnedPolicy's reset clears its per-episode state
            learned = make_controller(policy, env_id, manifest, manifest_path.parent)

            def controller(learned: Policy = learned) -> Policy:
                return learned
        q_real = [float(ep["quality"]) for ep in mine]
        sim = {label: _sim_per_task(env_id, manifest["split"], profile, controller, task_ids, sim_seeds,
                                    recorded)
               for label, profile in (("default", default), ("fitted", fit.profile))}
        rows.append(SimToRealRow(
            env_id, policy, len(mine), float(np.mean(q_real)), float(np.mean(sim["default"][0])),
            float(np.mean(sim["fitted"][0])), float(np.mean([ep["cost"]["llm_calls"] for ep in mine])),
            q_real_ci95=bootstrap_ci(q_real), q_sim_default_ci95=bootstrap_ci(sim["default"][0]),
            q_sim_fitted_ci95=bootstrap_ci(sim["fitted"][0]), llm_calls_sim_default=sim["default"][1],
            llm_calls_sim_fitted=sim["fitted"][1],
            tokens_real=float(np.mean([ep["cost"]["prompt_tokens"] + ep["cost"]["completion_tokens"] for ep in mine])),
            tokens_sim_default=sim["default"][2], tokens_sim_fitted=sim["fitted"][2], sim_seeds=sim_seeds))
    return rows, fit


def markdown(rows: list[SimToRealRow], fits: dict[str, ProfileFit]) -> str:
    """The comparison table, the controllers' ranking per env under each worker, then per env the fitted
    parameters beside the defaults with their 95% intervals.

    :param rows: :func:`sim_to_real` rows
    :param fits: :func:`sim_to_real` fits
    """
    def q(mean: float, ci: tuple[float, float]) -> str:
        return f"{mean:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"

    seeds = sorted({r.sim_seeds for r in rows})
    lines = [f"Q: mean over tasks [95% bootstrap CI over tasks]; the real model plays each task once (temperature 0), "
             f"the simulator {'/'.join(map(str, seeds))} seed(s) per task, averaged per task first. LLM calls and "
             "tokens per episode.", "",
             "| env | controller | tasks | Q real (replayed) | Q sim default | Q sim fitted | LLM calls real / "
             "default / fitted | tokens real / default / fitted |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r.env_id} | {r.controller} | {r.tasks} | {q(r.q_real, r.q_real_ci95)} | "
              f"{q(r.q_sim_default, r.q_sim_default_ci95)} | {q(r.q_sim_fitted, r.q_sim_fitted_ci95)} | "
              f"{r.llm_calls_real:.1f} / {r.llm_calls_sim_default:.1f} / {r.llm_calls_sim_fitted:.1f} | "
              f"{r.tokens_real:.0f} / {r.tokens_sim_default:.0f} / {r.tokens_sim_fitted:.0f} |" for r in rows]
    lines += ["", "Ranking by mean Q (best first, `=` ties; agreement: controller pairs ordered as with the real "
              "model):", "", "| env | real | sim default | sim fitted | agreement default | agreement fitted |",
              "|---|---|---|---|---|---|"]
    for env_id in dict.fromkeys(r.env_id for r in rows):
        ranking = rank([r for r in rows if r.env_id == env_id])
        order = {w: " > ".join(" = ".join(g) for g in groups) for w, groups in ranking.order.items()}
        lines.append(f"| {env_id} | {order['real']} | {order['sim default']} | {order['sim fitted']} | "
                     f"{ranking.agreeing_pairs['sim default']}/{ranking.pairs} | "
                     f"{ranking.agreeing_pairs['sim fitted']}/{ranking.pairs} |")
    for env_id, fit in fits.items():
        lines += ["", f"{env_id}: events {fit.events}; held-out log-likelihood per event: fitted "
                  f"{fit.heldout_loglik:.3f}, default {fit.heldout_loglik_default:.3f} ({fit.heldout_events} events)",
                  "", "| parameter | default | fitted | 95% CI |", "|---|---|---|---|"]
        fitted = asdict(fit.profile)
        for name, value in asdict(fit.default).items():
            ci = fit.ci95[name]
            lines.append(f"| {name} | {value:.3f} | {fitted[name]:.3f} | "
                         + (f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"not estimated: {not_estimated_reason(name)}")
                         + " |")
    return "\n".join(lines)
