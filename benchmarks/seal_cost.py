"""What sealing a job costs: cold jobs on this job server against a baseline server, interleaved in one run.

    python benchmarks/seal_cost.py --baseline-server OLD/harness_gym/sandbox/server [--jobs 400] [--no-docker]

Two sandboxes of each backend run side by side, one launched with this checkout's job server (the job seal:
the seccomp filter refusing System V and POSIX message-queue IPC) and one with the baseline's (e.g. a worktree of
the commit before the seal, ``git worktree add /tmp/base <commit>``: its ``server/`` folder, or its ``server.py``
before the server was split in parts); the client code is the same. Jobs alternate between them, so both see
the same load on a shared machine, and none is cached. Prints the median and 95th percentile of each and the
ratio of medians, for an empty job and a small realistic one.
Target: the sealed server within 10% of the baseline's median.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from unittest import mock

from harness_gym.sandbox import DockerSandbox, ProcessSandbox
from harness_gym.sandbox import docker as docker_module
from harness_gym.sandbox import process as process_module
from harness_gym.sandbox.client import ServerSandbox
from harness_gym.sandbox.server import program_source

JOBS = {"pass": "pass", "small": "def add(a, b):\n    return a + b\nprint(sum(add(i, i) for i in range(100)))\n"}


def started(make: type[ServerSandbox], source: str | None) -> ServerSandbox:
    """A started sandbox whose server runs ``source`` (None: this checkout's server program)."""
    sandbox = make()
    if source is None:
        sandbox.run("pass")
        return sandbox
    module = process_module if make is ProcessSandbox else docker_module
    with mock.patch.object(module, "server_source", lambda: source):
        sandbox.run("pass")
    return sandbox


def interleaved(pair: tuple[ServerSandbox, ServerSandbox], code: str, jobs: int) -> tuple[list[float], list[float]]:
    """Seconds per job of each sandbox, the two taking turns (two warm-up jobs each first)."""
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(jobs + 2):
        for which in ((0, 1) if i % 2 else (1, 0)):
            start = time.perf_counter()
            res = pair[which].run(code)
            took = time.perf_counter() - start
            assert res.ok, res
            if i >= 2:
                times[which].append(took)
    return times


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-server", type=Path, required=True,
                        help="the baseline's sandbox/server folder (or server.py)")
    parser.add_argument("--jobs", type=int, default=400, help="timed jobs per sandbox and job kind")
    parser.add_argument("--no-docker", action="store_true", help="measure the process sandbox only")
    args = parser.parse_args()
    path = args.baseline_server
    baseline = program_source(path) if path.is_dir() else path.read_text(encoding="utf-8")
    backends: list[type[ServerSandbox]] = [ProcessSandbox] + ([] if args.no_docker else [DockerSandbox])
    print(f"{'backend':<15} {'job':<6} {'server':<9} {'median ms':>10} {'p95 ms':>8}")
    for make in backends:
        pair = (started(make, baseline), started(make, None))
        try:
            for job, code in JOBS.items():
                base, sealed = interleaved(pair, code, args.jobs)
                for label, xs in (("baseline", base), ("sealed", sealed)):
                    print(f"{make.__name__:<15} {job:<6} {label:<9} {statistics.median(xs) * 1000:>10.2f} "
                          f"{p95(xs) * 1000:>8.2f}")
                ratio = statistics.median(sealed) / statistics.median(base)
                print(f"{make.__name__:<15} {job:<6} sealed / baseline median: {ratio:.3f} (target <= 1.10)")
        finally:
            for sandbox in pair:
                sandbox.close()


if __name__ == "__main__":
    main()
