"""Job latency of both sandboxes against a fresh interpreter and a plain ``docker exec``, measured in one run.

    python benchmarks/sandbox_latency.py [--jobs 300] [--exec-jobs 50] [--isolation auto] [--preload pandas]
                                         [--no-docker]

Times, per job and from the caller's side:

- ``ProcessSandbox.run`` and ``DockerSandbox.run`` (uncached: every job is a new fork of the warm server);
- ``subprocess.run([python, "-c", ...])``: a fresh interpreter on the host, no isolation;
- ``docker exec <container> true`` and ``docker exec <container> python3 -c ...``: the plain docker way of
  running one command in an already running container of the sandbox image;

for an empty job and a small realistic one (define a function, run asserts, print). Prints the median and
95th percentile of each and ratios of medians. Server and container start-up are timed separately.
Targets: process sandbox job median at most 10 ms; docker sandbox within 5x of ``docker exec``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from harness_gym.sandbox import DockerSandbox, ProcessSandbox
from harness_gym.sandbox.client import ServerSandbox

JOBS = {
    "pass": "pass",
    "small": (
        "def add(a, b):\n    return a + b\n"
        "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n"
        "print(sum(add(i, i) for i in range(100)))\n"
    ),
}


def timings(fn: Callable[[], object], n: int) -> list[float]:
    """Seconds taken by each of ``n`` calls of ``fn`` (after two warm-up calls)."""
    for _ in range(2):
        fn()
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1]


def row(job: str, label: str, xs: list[float]) -> None:
    print(f"{job:<6} {label:<34} {statistics.median(xs) * 1000:>10.2f} {p95(xs) * 1000:>8.2f}")


def ratio(job: str, label: str, num: list[float], den: list[float]) -> None:
    print(f"{job:<6} {label:<34} {statistics.median(num) / statistics.median(den):>10.2f}x")


def started(sb: ServerSandbox, name: str) -> ServerSandbox:
    start = time.perf_counter()
    sb.start()
    print(f"{name} start-up: {(time.perf_counter() - start) * 1000:.1f} ms")
    return sb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=300, help="timed jobs per sandbox and fresh-interpreter row")
    parser.add_argument("--exec-jobs", type=int, default=50, help="timed jobs per `docker exec` row")
    parser.add_argument("--isolation", default="auto", help="ProcessSandbox isolation: auto, bwrap, unshare, none")
    parser.add_argument("--preload", nargs="*", default=[], help="modules the servers preload")
    parser.add_argument("--no-docker", action="store_true", help="measure the process sandbox only")
    args = parser.parse_args()

    boxes: dict[str, ServerSandbox] = {}
    plain_container = None
    try:
        boxes["ProcessSandbox.run"] = started(ProcessSandbox(preload=args.preload, isolation=args.isolation),
                                              "ProcessSandbox")  # fmt: skip
        print(f"ProcessSandbox isolation: {boxes['ProcessSandbox.run'].active_isolation}")
        if not args.no_docker:
            docker_box = DockerSandbox(preload=args.preload, recycle_after=None)
            boxes["DockerSandbox.run"] = started(docker_box, f"DockerSandbox ({docker_box.image})")
            from harness_gym.sandbox.docker import LABEL, docker_client

            plain_container = docker_client().containers.run(
                docker_box.image, ["sleep", "infinity"], detach=True, network_mode="none",
                labels={LABEL: "1"}, auto_remove=True,
            )  # fmt: skip
        print(f"{'job':<6} {'runner':<34} {'median ms':>10} {'p95 ms':>8}")
        for name, code in JOBS.items():
            measured: dict[str, list[float]] = {}
            for label, sb in boxes.items():
                res = sb.run(code)
                assert res.ok, res
                measured[label] = timings(lambda sb=sb, code=code: sb.run(code), args.jobs)
            argv = [sys.executable, "-c", code]
            measured["fresh `python -c`"] = timings(lambda argv=argv: subprocess.run(argv, capture_output=True, check=True),
                                                   args.jobs)  # fmt: skip
            if plain_container is not None:
                for label, cmd in (("`docker exec <c> true`", ["true"]),
                                   ("`docker exec <c> python3 -c`", ["python3", "-c", code])):  # fmt: skip
                    full = ["docker", "exec", plain_container.id] + cmd
                    measured[label] = timings(lambda full=full: subprocess.run(full, capture_output=True, check=True),
                                              args.exec_jobs)  # fmt: skip
            for label, xs in measured.items():
                row(name, label, xs)
            ratio(name, "fresh python / ProcessSandbox", measured["fresh `python -c`"], measured["ProcessSandbox.run"])
            if plain_container is not None:
                docker_run = measured["DockerSandbox.run"]
                ratio(name, "DockerSandbox / ProcessSandbox", docker_run, measured["ProcessSandbox.run"])
                ratio(name, "DockerSandbox / docker exec true", docker_run, measured["`docker exec <c> true`"])
                ratio(name, "DockerSandbox / docker exec python", docker_run,
                      measured["`docker exec <c> python3 -c`"])  # fmt: skip
    finally:
        for sb in boxes.values():
            sb.close()
        if plain_container is not None:
            plain_container.remove(force=True)


if __name__ == "__main__":
    main()
