"""Sandboxes: where tool, checker and grader code runs (a new backend: docs/extending.md).

``make_sandbox("process")`` gives the embedded :class:`ProcessSandbox`, ``make_sandbox("docker")`` the
:class:`DockerSandbox` (needs dockerd and the image: ``scripts/start_docker.sh``). Both run the same job
server (``server/``) through the same client (``client.py``), so their results mean the same.
"""

from __future__ import annotations

from typing import Any

from harness_gym.core.sandbox import ExecResult, Sandbox
from harness_gym.sandbox.cache import (
    CACHE_MODES,
    CachedSandbox,
    ExecRecorder,
    ResultCache,
    default_cache,
    disk_cache,
    memory_cache,
    resolve_cache,
)
from harness_gym.sandbox.disk_cache import DiskStore, cache_dir
from harness_gym.sandbox.docker import DockerSandbox, DockerUnavailableError
from harness_gym.sandbox.process import ISOLATIONS, IsolationError, ProcessSandbox

__all__ = [
    "CACHE_MODES",
    "ISOLATIONS",
    "SANDBOX_NAMES",
    "CachedSandbox",
    "DiskStore",
    "DockerSandbox",
    "DockerUnavailableError",
    "ExecRecorder",
    "ExecResult",
    "IsolationError",
    "ProcessSandbox",
    "ResultCache",
    "Sandbox",
    "cache_dir",
    "default_cache",
    "disk_cache",
    "make_sandbox",
    "memory_cache",
    "resolve_cache",
]

SANDBOX_NAMES: tuple[str, ...] = ("process", "docker")


def make_sandbox(name: str | Sandbox = "process", **kwargs: Any) -> Sandbox:
    """Build a sandbox by name, or pass an existing one through.

    :param name: ``"process"`` (default) or ``"docker"``, or a ready :class:`Sandbox`
    :param kwargs: constructor arguments of the sandbox (e.g. ``preload=("pandas",)``, ``cache=True``)
    :raises DockerUnavailableError: for ``"docker"`` when dockerd cannot be reached or the image is not built
    """
    if not isinstance(name, str):
        if kwargs:
            raise TypeError("keyword arguments cannot be applied to an existing sandbox")
        if not isinstance(name, Sandbox):
            raise TypeError(f"{name!r} is not a Sandbox (needs run() and close())")
        return name
    if name == "process":
        return ProcessSandbox(**kwargs)
    if name == "docker":
        return DockerSandbox(**kwargs)
    raise ValueError(f"unknown sandbox {name!r}; choose one of {SANDBOX_NAMES}")
