"""Playing many episodes at once: processes for the CPU-bound simulated worker, threads for I/O-bound LLM
workers, or Ray actors across machines (``docs/scale_out.md``).

The unit of work is a whole episode, keyed by its index in the run: a job is ``(index, reset seed)`` and the
result is whatever the episode function returns for it (a Minari episode buffer for
:func:`harness_gym.datasets.collect`, an evaluation record for ``harness_gym_baselines/evaluate.py``). Each of the
``num_envs`` *slots* (a thread, a process or a Ray actor's env) makes its own env with ``gym.make`` and its
own copy of the controller once, then plays the jobs it takes from a shared queue. Because an episode
depends only on its reset seed (the env and the controller are both reset with it), which slot plays which
episode does not matter: with the simulated worker the episodes are the ones the sequential loop plays,
value for value. Results come back as they finish; callers that need the sequential order sort by index.

- ``parallel="process"``: one process per slot (``multiprocessing`` with the ``spawn`` start method, so a
  parent that already runs threads, Ray or a sandbox server is safe to start them from). For the
  simulated worker, whose episodes are CPU-bound.
- ``parallel="thread"``: one thread per slot in this process. For a worker that waits on a server
  (``worker="openai"``): N threads keep N requests in flight, far past the number of cores. Each slot gets
  a deep copy of the env arguments (a worker instance among them) and of the controller, so no two slots
  share per-episode state; an LLM cache file is opened by each slot's worker on its own connection.

:func:`default_parallel` picks one from the worker: threads for ``"openai"`` or a worker instance whose
class sets ``io_bound = True``, processes otherwise. ``backend="ray"`` hands the same jobs to
:mod:`harness_gym.running.ray_backend` (imported only then).
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from harness_gym.running.episode_jobs import EpisodeError, EpisodeFn, EpisodeSpec
from harness_gym.running.rollout import Policy
from harness_gym.workers.openai_worker import LLMUnreachableError

PARALLEL_MODES: tuple[str, ...] = ("process", "thread")
"""how episodes run concurrently on one machine"""
BACKENDS: tuple[str, ...] = ("local", "ray")
"""where they run: this machine, or a Ray cluster"""
IO_BOUND_WORKERS: tuple[str, ...] = ("openai",)
"""worker names whose episodes wait on a server and so run in threads by default"""

_POLL_S = 0.5


def default_parallel(env_kwargs: Mapping[str, Any] | None) -> str:
    """``"thread"`` for an I/O-bound worker (``worker="openai"``, or a worker instance whose class sets
    ``io_bound = True``), else ``"process"``.

    :param env_kwargs: the env's constructor keywords (``worker`` among them, or not)
    """
    worker = (env_kwargs or {}).get("worker", "simulated")
    if isinstance(worker, str):
        return "thread" if worker in IO_BOUND_WORKERS else "process"
    return "thread" if getattr(worker, "io_bound", False) else "process"


def _slot_main(spec: EpisodeSpec, slot: int, jobs: Any, results: Any, stop: Any) -> None:
    """A slot's loop: make the env, then play jobs from ``jobs`` until a ``None`` or ``stop`` is set; every
    outcome goes to ``results`` as ``("done", index, result)``, ``("failed", index, text)`` or, for a worker whose
    server never answered, ``("unreachable", index, LLMUnreachableError)``."""
    try:
        env, policy = spec.build(slot)
    except Exception:
        results.put(("failed", None, f"slot {slot} could not make {spec.env_id}:\n{traceback.format_exc()}"))
        return
    try:
        while not stop.is_set():
            job = jobs.get()
            if job is None:
                break
            index, seed = job
            try:
                result = spec.play(env, policy, index, seed)
            except LLMUnreachableError as exc:  # one line that says it all: raised as it is, not as a traceback
                results.put(("unreachable", index, exc))
                break
            except Exception:
                results.put(("failed", index, f"episode {index} (reset seed {seed}) raised in slot {slot}:\n"
                                              f"{traceback.format_exc()}"))
                break
            results.put(("done", index, result))
    finally:
        env.close()


def _map_local(spec: EpisodeSpec, jobs: Sequence[tuple[int, int]], num_envs: int,
               parallel: str) -> Iterator[tuple[int, Any]]:
    """Threads or processes on this machine (see the module docstring)."""
    n_slots = max(1, min(num_envs, len(jobs)))
    if parallel == "thread":
        job_queue: Any = queue.Queue()
        result_queue: Any = queue.Queue()
        stop: Any = threading.Event()
        slots: list[Any] = [threading.Thread(target=_slot_main, args=(spec, k, job_queue, result_queue, stop),
                                             name=f"harness-gym-slot-{k}", daemon=True) for k in range(n_slots)]
    else:
        ctx = multiprocessing.get_context("spawn")
        job_queue, result_queue, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
        slots = [ctx.Process(target=_slot_main, args=(spec, k, job_queue, result_queue, stop),
                             name=f"harness-gym-slot-{k}", daemon=True) for k in range(n_slots)]
    for job in jobs:
        job_queue.put(tuple(job))
    for _ in slots:
        job_queue.put(None)
    remaining = {int(index) for index, _ in jobs}
    try:
        for slot in slots:
            try:
                slot.start()
            except Exception as exc:  # spawn pickles the spec: a controller that cannot be pickled fails here
                raise EpisodeError(f"could not start an episode process for {spec.env_id} with controller "
                                   f"{spec.policy.name!r} ({type(exc).__name__}: {exc}); the controller and the "
                                   "env arguments must be picklable for parallel='process' (use "
                                   "parallel='thread' or num_envs=1)") from exc
        while remaining:
            try:
                kind, index, payload = result_queue.get(timeout=_POLL_S)
            except queue.Empty:
                dead = [(k, getattr(s, "exitcode", None)) for k, s in enumerate(slots) if not s.is_alive()]
                if len(dead) == len(slots):
                    raise EpisodeError(
                        f"every episode {parallel} ended with {len(remaining)} episode(s) not played (exit codes "
                        f"{[c for _, c in dead]}; their errors are on stderr; a script that starts processes needs "
                        "an `if __name__ == \"__main__\":` guard); rerun to resume") from None
                continue
            if kind == "unreachable":
                raise payload
            if kind == "failed":
                raise EpisodeError(payload)
            remaining.discard(index)
            yield index, payload
    finally:
        stop.set()
        for slot in slots:
            if slot.ident is None:
                continue
            if not remaining:  # done: each slot closes its env (and its sandbox server) and exits
                slot.join(timeout=30)
            elif parallel == "process":  # stopped early; a thread stops after the episode it is in
                slot.terminate()
                slot.join(timeout=30)


def map_episodes(env_id: str, policy: Policy, jobs: Sequence[tuple[int, int]], episode_fn: EpisodeFn, *,
                 split: str, env_kwargs: Mapping[str, Any] | None = None, num_envs: int = 1,
                 parallel: str | None = None, backend: str = "local", address: str | None = None,
                 envs_per_actor: int = 1, slot_env_kwargs: Sequence[Mapping[str, Any]] = ()
                 ) -> Iterator[tuple[int, Any]]:
    """Play every job ``(index, reset seed)`` once with up to ``num_envs`` episodes at a time; yield
    ``(index, result)`` as each episode finishes (in completion order).

    :param env_id: a registered env id
    :param policy: the controller (each slot plays with its own copy)
    :param jobs: ``(index, reset seed)`` pairs, indices distinct
    :param episode_fn: plays one job: ``fn(env, policy, *, index, seed, split)``, a module-level function
    :param split: the task split
    :param env_kwargs: constructor keywords for ``gym.make``
    :param num_envs: episodes in flight at once (the number of slots)
    :param parallel: ``"process"`` or ``"thread"``; default :func:`default_parallel`
    :param backend: ``"local"`` (this machine) or ``"ray"`` (:mod:`harness_gym.running.ray_backend`)
    :param address: the Ray cluster to join (``backend="ray"``; default: a local Ray instance)
    :param envs_per_actor: with Ray, envs per actor (their episodes run in the actor's threads)
    :param slot_env_kwargs: per-slot additions to ``env_kwargs`` (see :class:`EpisodeSpec`)
    """
    if int(num_envs) < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if address is not None and backend != "ray":
        raise ValueError(f"address={address!r} is for backend='ray' (got backend={backend!r})")
    env_kwargs = dict(env_kwargs or {})
    mode = parallel if parallel is not None else default_parallel(env_kwargs)
    if mode not in PARALLEL_MODES:
        raise ValueError(f"parallel must be one of {PARALLEL_MODES}, got {mode!r}")
    indices = [int(index) for index, _ in jobs]
    if len(set(indices)) != len(indices):
        raise ValueError(f"episode indices must be distinct; repeated: "
                         f"{sorted({i for i in indices if indices.count(i) > 1})}")
    if not jobs:
        return iter(())
    spec = EpisodeSpec(env_id, policy, episode_fn, split, env_kwargs, tuple(slot_env_kwargs))
    if backend == "ray":
        from harness_gym.running import ray_backend

        return ray_backend.map_episodes_ray(spec, jobs, num_envs=int(num_envs), address=address,
                                            envs_per_actor=envs_per_actor)
    return _map_local(spec, jobs, int(num_envs), mode)


def is_concurrent(num_envs: int, backend: str) -> bool:
    """Whether :func:`map_episodes` is needed (more than one env, or Ray) rather than the sequential loop.

    :param num_envs: episodes in flight at once
    :param backend: ``"local"`` or ``"ray"``
    """
    return int(num_envs) > 1 or backend != "local"
