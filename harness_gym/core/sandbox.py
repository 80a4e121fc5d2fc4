"""The Sandbox protocol and its result type: what a domain's tools, checker and grader run code in.

The protocol lives in ``core`` because the :class:`~harness_gym.core.domain.Domain` hooks take a sandbox; the
backends that implement it (process, docker) live above core in :mod:`harness_gym.sandbox` (a new backend:
docs/extending.md, "A new sandbox backend").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class ExecResult:
    """Outcome of one sandboxed job.

    ``reason`` is empty for a job that ran to completion (whatever its exit code) and otherwise names
    why it was stopped: ``"timeout"``, ``"memory"``, ``"output_limit"``, ``"killed"``, ``"sandbox_error"``.
    ``cached`` is True when the result was served from a :class:`~harness_gym.sandbox.cache.ResultCache`
    instead of being run; the env reports it per step as ``info["exec_cached"]``.
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    duration_s: float
    reason: str = ""
    cached: bool = False

    @property
    def ok(self) -> bool:
        """True for a job that ran to completion with exit code 0."""
        return self.exit_code == 0 and not self.timed_out and not self.reason


@runtime_checkable
class Sandbox(Protocol):
    """Runs untrusted Python source with limits; never raises for anything the code does."""

    def run(
        self,
        code: str,
        *,
        files: dict[str, str] | None = None,
        stdin: str = "",
        timeout_s: float = 5.0,
        memory_mb: int = 512,
    ) -> ExecResult:
        """Run ``code`` as ``__main__`` in a fresh private work dir holding ``files``."""
        ...

    def close(self) -> None:
        """Release processes and containers. Idempotent."""
        ...
