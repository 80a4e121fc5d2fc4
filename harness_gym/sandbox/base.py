"""The Sandbox protocol (DESIGN §6): where tool, checker and grader code runs."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from harness_gym.core.types import ExecResult


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
