"""Workers: the frozen LLM behind the harness."""

from __future__ import annotations

from harness_gym.workers.base import Worker
from harness_gym.workers.profile import WorkerProfile
from harness_gym.workers.simulated import SimulatedWorker

WORKER_NAMES: tuple[str, ...] = ("simulated",)


def make_worker(spec: str | Worker, domain: str, profile: WorkerProfile | str | None = None) -> Worker:
    """Build a worker from a name (``"simulated"``) or pass an instance through.

    :param spec: a worker name or a ready :class:`Worker`
    :param domain: the domain name, used to find the default profile
    :param profile: a profile, a path to a profile JSON file, or ``None`` for the domain's shipped profile
    """
    if not isinstance(spec, str):
        return spec
    if spec == "simulated":
        if profile is None:
            prof = WorkerProfile.for_domain(domain)
        elif isinstance(profile, WorkerProfile):
            prof = profile
        else:
            prof = WorkerProfile.load(profile)
        return SimulatedWorker(prof)
    raise ValueError(f"unknown worker {spec!r}; expected one of {WORKER_NAMES} or a Worker instance")


__all__ = ["Worker", "WorkerProfile", "SimulatedWorker", "make_worker", "WORKER_NAMES"]
