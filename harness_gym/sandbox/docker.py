"""DockerSandbox: jobs in a long-lived, locked-down container (docs/harness_mdp.md, "Sandboxes").

The container runs the same job server as :class:`~harness_gym.sandbox.ProcessSandbox` (``server/``, with
the image's ``/usr/bin/python3``) as its PID 1, attached over ``docker start --attach --interactive``; the
server forks one child per job, so a job costs a fork plus two pipe hops through dockerd rather than a
``docker exec``. The container is created lazily on the first job, with:

- no network (``network_mode="none"``: only a loopback of its own), no IPC namespace sharing, no ``/dev/shm``;
- a read-only root file system and a size- and inode-limited tmpfs ``/tmp`` where each job gets a fresh work dir
  (emptied after every job; a job that leaves what cannot be removed ends the container: the next job gets a
  fresh one);
- a non-root uid (one per sandbox, no passwd entry), every capability dropped, ``no-new-privileges``, and
  for every job the server's seccomp filter that refuses new user namespaces and System V and POSIX
  message-queue IPC (the container's IPC namespace is shared by all its jobs; it has no ``/dev/shm``);
- memory (no swap), pids and CPU limits for the whole container, on top of the server's per-job rlimits;
- labels ``harness_gym.sandbox=1`` and ``harness_gym.sandbox.owner=<client pid>`` (see :func:`list_containers`).

Jobs run as the server's uid but cannot signal it (the PID 1 of a namespace receives only signals it
handles, and it handles none), ptrace it or read its ``/proc`` files (it is not dumpable). After a timeout
the server, as PID 1, kills every other process of the container. The container is removed on
:meth:`close`, when the sandbox is garbage collected, at interpreter exit, every ``recycle_after`` jobs and
when the server dies; if the client process itself is killed, the container's stdin closes (it is
attached "stdin once"), the server exits and dockerd removes the container (``auto_remove``).

The image is built locally by ``docker/build_image.sh`` (debootstrap + ``docker import``), tagged with the
hash of that script; ``scripts/start_docker.sh`` starts dockerd and builds it when missing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness_gym.sandbox.cache import ResultCache
from harness_gym.sandbox.client import (
    JOB_ENV,
    SCRATCH_INODES,
    ServerProcess,
    ServerSandbox,
    server_source,
)

LABEL = "harness_gym.sandbox"
OWNER_LABEL = "harness_gym.sandbox.owner"
IMAGE_REPOSITORY = "harness-gym-sandbox"
IMAGE_LABEL = "harness_gym.sandbox.image"
RECIPE = Path(__file__).resolve().parents[2] / "docker" / "build_image.sh"
BUILD_HINT = "build it with `bash docker/build_image.sh` (scripts/start_docker.sh starts dockerd and builds it)"
_PYTHON = "/usr/bin/python3"
_PATH = "/usr/local/bin:/usr/bin:/bin"
_PID_HEADROOM = 8

_client_lock = threading.Lock()
_client_cache: list[tuple[int, Any]] = []


class DockerUnavailableError(RuntimeError):
    """dockerd cannot be reached, the docker SDK or CLI is missing, or the sandbox image is not built."""


def docker_client() -> Any:
    """The process-wide docker SDK client, checked with a ping.

    :raises DockerUnavailableError: without the SDK, the CLI or a reachable dockerd
    """
    with _client_lock:
        if _client_cache and _client_cache[0][0] == os.getpid():
            return _client_cache[0][1]
        _client_cache.clear()  # a forked child must not share its parent's connections
        try:
            import docker
        except ImportError as exc:
            raise DockerUnavailableError(
                f"the docker SDK is not installed ({exc}): pip install 'harness-gym[docker]'"
            ) from exc
        if shutil.which("docker") is None:
            raise DockerUnavailableError("the docker CLI is not installed: apt-get install docker.io")
        try:
            client = docker.from_env(timeout=60)
            client.ping()
        except docker.errors.DockerException as exc:
            raise DockerUnavailableError(
                f"dockerd is not reachable ({exc}); start it with scripts/start_docker.sh"
            ) from exc
        _client_cache.append((os.getpid(), client))
        return client


def default_image() -> str:
    """The sandbox image: ``$HG_SANDBOX_IMAGE``, else the tag ``docker/build_image.sh`` gives (the hash of
    that script), else (an installed package without the script) the newest image it built."""
    if os.environ.get("HG_SANDBOX_IMAGE"):
        return os.environ["HG_SANDBOX_IMAGE"]
    if RECIPE.is_file():
        return f"{IMAGE_REPOSITORY}:{hashlib.sha256(RECIPE.read_bytes()).hexdigest()[:12]}"
    images = docker_client().images.list(filters={"label": f"{IMAGE_LABEL}=1"})
    if not images:
        raise DockerUnavailableError(f"no {IMAGE_REPOSITORY} image found; {BUILD_HINT}")
    newest = max(images, key=lambda img: img.attrs.get("Created", ""))
    return newest.tags[0] if newest.tags else newest.id


def list_containers(owner_pid: int | None = None) -> list[str]:
    """Ids of the sandbox containers (running or not) made by process ``owner_pid`` (None: by anyone)."""
    labels = [f"{LABEL}=1"] + ([f"{OWNER_LABEL}={owner_pid}"] if owner_pid is not None else [])
    found = docker_client().api.containers(all=True, filters={"label": labels})
    return [c["Id"] for c in found]


def _remove_container(container_id: str) -> None:
    """Remove a container, killing it first; one already gone (auto-removed) is fine."""
    import docker

    try:
        docker_client().api.remove_container(container_id, force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if exc.status_code != 409:  # 409: its removal is already in progress
            raise


class DockerSandbox(ServerSandbox):
    """Runs Python jobs in forked children of a job server that is PID 1 of a locked-down container.

    :param image: the image (default: :func:`default_image`); needs ``/usr/bin/python3``
    :param preload: modules the server imports once so that jobs importing them start fast
        (e.g. ``("pandas",)``, which the default image has); a module that fails to import is skipped
    :param max_output_bytes: cap of each of stdout and stderr; a job writing more is killed
        (``reason="output_limit"``) and its output truncated
    :param max_processes: RLIMIT_NPROC of a job (the container's pids limit is a little higher)
    :param cache: reuse results of identical completed jobs: ``True`` or ``"disk"`` for the process-wide
        memory + disk cache, ``"memory"`` for the process-wide memory-only one, a :class:`ResultCache`, or
        ``False`` (see :func:`~harness_gym.sandbox.cache.resolve_cache`)
    :param job_uid: the container's uid and gid (default: one unused uid per sandbox)
    :param recycle_after: replace the container after this many jobs (None: never)
    :param container_memory_mb: memory limit of the whole container (no swap); each job is further
        limited by ``run(memory_mb=...)``
    :param cpus: CPU limit of the whole container
    :param tmp_mb: size of the tmpfs ``/tmp`` that holds the jobs' work dirs
    :param require_isolation: accepted for symmetry with :class:`~harness_gym.sandbox.ProcessSandbox`; a
        container is always fully isolated (no host file system, no network, no ``/dev/shm``)
    :raises DockerUnavailableError: when dockerd cannot be reached or the image is not built
    """

    def __init__(
        self,
        image: str | None = None,
        preload: Sequence[str] = (),
        max_output_bytes: int = 64 * 1024,
        max_processes: int = 64,
        cache: bool | str | ResultCache = False,
        job_uid: int | None = None,
        recycle_after: int | None = 1000,
        container_memory_mb: int = 2048,
        cpus: float = 1.0,
        tmp_mb: int = 256,
        require_isolation: bool | None = None,
    ) -> None:
        import docker

        super().__init__(tuple(preload), max_output_bytes, max_processes, cache, job_uid, recycle_after)
        client = docker_client()
        self.image = image or default_image()
        try:
            client.images.get(self.image)
        except docker.errors.ImageNotFound:
            raise DockerUnavailableError(f"docker image {self.image} is missing; {BUILD_HINT}") from None
        self.container_memory_mb = int(container_memory_mb)
        self.cpus = float(cpus)
        self.tmp_mb = int(tmp_mb)
        self.container_id = ""
        """The id of the running (or last) container, "" before the first job."""
        self.userns_blocked = False
        """Whether the running container's jobs are refused new user namespaces (a seccomp filter)."""
        self.ipc_blocked = False
        """Whether the running container's jobs are refused System V and POSIX message-queue IPC (a seccomp
        filter): the container's IPC namespace is shared by all its jobs."""

    @property
    def isolation_in_force(self) -> str:
        """Always ``"docker"``: a locked-down container."""
        return "docker"

    def isolation_report(self) -> dict[str, Any]:
        """What isolates this sandbox's jobs (starts the container if needed); see
        :meth:`harness_gym.sandbox.ProcessSandbox.isolation_report`."""
        self.start()
        return {"backend": "docker", "requested": "docker", "in_force": "docker", "degraded": False, "reason": "",
                "require_isolation": True, "userns_blocked": self.userns_blocked, "ipc_blocked": self.ipc_blocked,
                "inode_limit": True, "private_tmp": True,
                "hidden": ["the whole host file system (only the image is visible)"], "image": self.image}

    @property
    def cache_salt(self) -> str:
        """What, besides the job, a result depends on (see :func:`harness_gym.sandbox.cache.cache_key`)."""
        return f"DockerSandbox/{self.image}/{self.max_output_bytes}/{self.max_processes}/{self.preload_salt}"

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.update(container_id="", userns_blocked=False, ipc_blocked=False)
        return state

    @property
    def init_pid(self) -> int | None:
        """The host pid of the container's PID 1 (the server), if running."""
        if self.server_pid is None:
            return None
        return int(docker_client().api.inspect_container(self.container_id)["State"]["Pid"]) or None

    def _start_server(self) -> ServerProcess | str:
        """Create a container running the server, attach to it and wait for its first line (not for its preloads:
        the first job waits for those)."""
        import docker

        config = {
            "preload": list(self.preload),
            "max_output": self.max_output_bytes,
            "nproc": self.max_processes + 1,  # the server counts: it runs as the jobs' uid
            "work_root": "/tmp",
            "scrub": ["/tmp"],  # jobs share the server's uid, so they can write /tmp: empty it after each
            "env": JOB_ENV,
        }
        uid = self.job_uid
        try:
            container = docker_client().containers.create(
                self.image,
                command=[_PYTHON, "-I", "-c", server_source(), json.dumps(config)],
                user=f"{uid}:{uid}",
                stdin_open=True,
                network_mode="none",
                ipc_mode="none",
                read_only=True,
                tmpfs={"/tmp": f"rw,nosuid,nodev,size={self.tmp_mb}m,nr_inodes={SCRATCH_INODES},uid={uid},gid={uid},"
                               "mode=0700"},
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                mem_limit=f"{self.container_memory_mb}m",
                memswap_limit=f"{self.container_memory_mb}m",
                pids_limit=self.max_processes + _PID_HEADROOM,
                nano_cpus=int(self.cpus * 1e9),
                hostname="sandbox",
                working_dir="/tmp",
                environment={"PATH": _PATH, **JOB_ENV},
                labels={LABEL: "1", OWNER_LABEL: str(os.getpid())},
                log_config={"type": "none"},
                auto_remove=True,
            )
        except docker.errors.DockerException as exc:
            return f"could not create a container from {self.image}: {exc}"
        cleanup = functools.partial(_remove_container, container.id)
        cli = shutil.which("docker") or "docker"
        server = ServerProcess([cli, "start", "--attach", "--interactive", container.id], None, None, cleanup)
        err = server.handshake()
        if err:
            return f"container {container.short_id} ({self.image}): {err}"
        self.container_id = container.id
        self.userns_blocked = bool(server.info.get("userns_blocked"))
        self.ipc_blocked = bool(server.info.get("ipc_blocked"))
        return server
