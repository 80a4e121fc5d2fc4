"""Episodes on a Ray cluster: the ``backend="ray"`` of :func:`harness_gym.running.parallel.map_episodes`
(``docs/scale_out.md``).

The driver (the process that calls ``collect`` or ``evaluate``) keeps the queue of jobs ``(index, reset
seed)`` and every result; the actors only play. Each :class:`EpisodeActor` holds ``envs_per_actor`` envs
(with one, it is one env per actor, for the CPU-bound simulated worker; with more, the actor plays that many
episodes at once in its own threads, for an I/O-bound LLM worker) and is sent at most one job per env.

Faults: when an actor dies (its process or node is lost, or it is killed), every job it had in flight is put
back at the head of the queue and a fresh actor takes its place, so each episode is played to the end exactly
once from its own seed and nothing is lost or duplicated. An error raised by the episode itself (a bug, bad
input) or by an actor's constructor is not retried: it stops the run with the actor's traceback. After
``max_restarts`` replacements the run stops too (a cluster that keeps losing actors needs a look).

``ray.init`` is called when Ray is not initialised yet: ``ray.init()`` starts a local instance,
``ray.init(address=ADDR)`` joins a cluster (``"auto"``: the one this node belongs to; ``"ray://HOST:10001"``:
a remote one through Ray Client). A Ray instance this module started is shut down at the end. This module
is imported only for ``backend="ray"``; Ray is the ``[ray]`` extra.
"""

from __future__ import annotations

import os
import queue
import socket
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

try:
    import ray
    from ray.exceptions import RayActorError, RayTaskError
except ImportError as exc:  # the env library installs without Ray
    raise ImportError(f"backend='ray' needs Ray ({exc}); install it with pip install \"harness-gym[ray]\"") from exc

from harness_gym.running.episode_jobs import EpisodeError, EpisodeSpec


class EpisodeActor:
    """A Ray actor that plays jobs on its own envs (``ray.remote`` is applied in :func:`map_episodes_ray`).

    :param spec: what to make and play
    :param first_slot: the slot number of its first env (slot ``first_slot + k`` for env ``k``)
    :param n_envs: how many envs it holds, one job in flight on each
    """

    def __init__(self, spec: EpisodeSpec, first_slot: int, n_envs: int) -> None:
        self.spec = spec
        self.free: queue.Queue[tuple[Any, Any]] = queue.Queue()
        for k in range(n_envs):
            self.free.put(spec.build(first_slot + k))

    def play(self, index: int, seed: int) -> tuple[int, Any]:
        """Play job ``(index, seed)`` on a free env and return ``(index, result)``.

        :param index: the episode's index in the run
        :param seed: its reset seed
        """
        env, policy = self.free.get()
        try:
            return index, self.spec.play(env, policy, index, seed)
        finally:
            self.free.put((env, policy))

    def where(self) -> dict[str, Any]:
        """The host and process id this actor runs in."""
        return {"host": socket.gethostname(), "pid": os.getpid()}


def map_episodes_ray(spec: EpisodeSpec, jobs: Sequence[tuple[int, int]], *, num_envs: int,
                     address: str | None = None, envs_per_actor: int = 1, max_restarts: int | None = None,
                     actor_options: dict[str, Any] | None = None,
                     actors_out: list[Any] | None = None) -> Iterator[tuple[int, Any]]:
    """Play every job on Ray actors; yield ``(index, result)`` as episodes finish.

    :param spec: the env, controller and episode function
    :param jobs: ``(index, reset seed)`` pairs, indices distinct
    :param num_envs: envs in all (so episodes in flight at once)
    :param address: the cluster for ``ray.init`` when Ray is not initialised yet (``None``: start one locally)
    :param envs_per_actor: envs per actor; the actors number ``ceil(num_envs / envs_per_actor)``
    :param max_restarts: how many dead actors may be replaced before the run stops (default: 2 per actor + 2)
    :param actor_options: ``.options(...)`` of every actor (default ``{"num_cpus": 1}``), e.g. resources
    :param actors_out: when given, the live actor handles are kept in it (tests use it to kill one)
    """
    if int(envs_per_actor) < 1:
        raise ValueError(f"envs_per_actor must be >= 1, got {envs_per_actor}")
    n_envs = max(1, min(int(num_envs), len(jobs)))
    sizes = [min(envs_per_actor, n_envs - start) for start in range(0, n_envs, envs_per_actor)]
    budget = 2 * len(sizes) + 2 if max_restarts is None else int(max_restarts)
    started_ray = False
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False)
        started_ray = True
    options = {"num_cpus": 1, **(actor_options or {})}
    remote_cls = ray.remote(EpisodeActor)
    firsts = [sum(sizes[:k]) for k in range(len(sizes))]

    def new_actor(k: int) -> Any:
        return remote_cls.options(max_concurrency=sizes[k], **options).remote(spec, firsts[k], sizes[k])

    actors = [new_actor(k) for k in range(len(sizes))]
    generation = [0] * len(actors)
    busy = [0] * len(actors)
    pending: deque[tuple[int, int]] = deque((int(i), int(s)) for i, s in jobs)
    inflight: dict[Any, tuple[int, int, tuple[int, int]]] = {}
    restarts = 0

    def sync_out() -> None:
        if actors_out is not None:
            actors_out[:] = actors

    def fill(k: int) -> None:
        while busy[k] < sizes[k] and pending:
            job = pending.popleft()
            inflight[actors[k].play.remote(*job)] = (k, generation[k], job)
            busy[k] += 1

    sync_out()
    try:
        for k in range(len(actors)):
            fill(k)
        while inflight:
            ready, _ = ray.wait(list(inflight), num_returns=1)
            ref = ready[0]
            k, gen, job = inflight.pop(ref)
            try:
                index, result = ray.get(ref)
            except RayActorError as exc:
                if getattr(exc, "actor_init_failed", False):
                    raise EpisodeError(f"a Ray actor could not make {spec.env_id}: {exc}") from exc
                pending.appendleft(job)  # re-run from its seed on the replacement
                if gen == generation[k]:
                    busy[k] = 0  # its other in-flight jobs fail too and are requeued as they come back
                    restarts += 1
                    if restarts > budget:
                        raise EpisodeError(f"{restarts} Ray actors died during the run (at most {budget} are "
                                           f"replaced); last: {exc}") from exc
                    generation[k] += 1
                    ray.kill(actors[k])  # an actor that is only unreachable would otherwise keep its CPU
                    actors[k] = new_actor(k)
                    sync_out()
                for j in range(len(actors)):
                    fill(j)
                continue
            except RayTaskError as exc:
                raise EpisodeError(f"episode {job[0]} (reset seed {job[1]}) raised on Ray: {exc}") from exc
            if gen == generation[k]:
                busy[k] -= 1
            yield index, result
            fill(k)
    finally:
        for ref in inflight:
            try:
                ray.cancel(ref, force=False)
            except Exception:  # noqa: BLE001 (the actor may be gone already; it is killed next anyway)
                pass
        for actor in actors:
            ray.kill(actor)
        if started_ray:
            ray.shutdown()
