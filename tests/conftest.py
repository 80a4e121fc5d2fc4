"""Session-wide checks shared by the test modules."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def no_leaked_sandbox_containers() -> Iterator[None]:
    """After the session, no DockerSandbox container made by this process may remain."""
    yield
    from harness_gym.sandbox import docker as docker_mod

    if not docker_mod._client_cache:  # no docker sandbox was made: nothing to check, no docker needed
        return
    gc.collect()  # sandboxes of envs that were never closed are removed by their finalizers
    leaked = docker_mod.list_containers(os.getpid())
    assert leaked == [], f"DockerSandbox containers leaked by this test session: {leaked}"


_SB3_LOGDIR = pytest.StashKey[str]()
_EXEC_CACHE_DIR = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    # SB3 models trained without a logger write an empty folder /tmp/SB3-<time> each; keep them in one folder
    # that the session removes.
    if "SB3_LOGDIR" not in os.environ:
        os.environ["SB3_LOGDIR"] = tempfile.mkdtemp(prefix="hg-tests-sb3-")
        config.stash[_SB3_LOGDIR] = os.environ["SB3_LOGDIR"]
    # The on-disk execution cache of the session: results never depend on a user's ~/.cache or on an earlier
    # session (a test that needs its own folder sets HARNESS_GYM_CACHE_DIR itself).
    os.environ["HARNESS_GYM_CACHE_DIR"] = config.stash[_EXEC_CACHE_DIR] = tempfile.mkdtemp(prefix="hg-tests-exec-")
    config.addinivalue_line("markers", "llm: needs the local llama.cpp server with SmolLM2 (scripts/install_llm.sh); "
                            "skipped when it is missing unless HG_REQUIRE_LLM=1")


def pytest_unconfigure(config: pytest.Config) -> None:
    for key in (_SB3_LOGDIR, _EXEC_CACHE_DIR):
        folder = config.stash.get(key, None)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
