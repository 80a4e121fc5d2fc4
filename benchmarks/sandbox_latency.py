"""Latency of a ProcessSandbox job against a fresh interpreter, measured in one run.

    python benchmarks/sandbox_latency.py [--jobs 300] [--isolation auto] [--preload numpy]

Times, per job and from the caller's side: ``ProcessSandbox.run`` (uncached: every job is a new fork of
the pre-forked server) and ``subprocess.run([python, "-c", ...])`` (a fresh interpreter, no isolation),
for an empty job and a small realistic one (define a function, run asserts, print). Prints the median and
95th percentile of each and the ratio of the medians. The server's start-up is timed separately.
Target (issue 2): cold sandbox job median at most 10 ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from typing import Callable

from harness_gym.sandbox import ProcessSandbox

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=300, help="timed jobs per measurement")
    parser.add_argument("--isolation", default="auto", help="auto, bwrap, unshare or none")
    parser.add_argument("--preload", nargs="*", default=[], help="modules the server preloads")
    args = parser.parse_args()

    sb = ProcessSandbox(preload=args.preload, isolation=args.isolation)
    start = time.perf_counter()
    sb.start()
    startup = time.perf_counter() - start
    print(f"ProcessSandbox server start-up: {startup * 1000:.1f} ms (isolation={sb.active_isolation})")
    print(f"{'job':<6} {'runner':<26} {'median ms':>10} {'p95 ms':>8}")
    try:
        for name, code in JOBS.items():
            res = sb.run(code)
            assert res.ok, res
            box = timings(lambda: sb.run(code), args.jobs)
            argv = [sys.executable, "-c", code]
            fresh = timings(lambda: subprocess.run(argv, capture_output=True, check=True), args.jobs)
            for label, xs in (("ProcessSandbox.run", box), ("fresh `python -c`", fresh)):
                print(f"{name:<6} {label:<26} {statistics.median(xs) * 1000:>10.2f} {p95(xs) * 1000:>8.2f}")
            ratio = statistics.median(fresh) / statistics.median(box)
            print(f"{name:<6} {'fresh / sandbox (median)':<26} {ratio:>10.1f}x")
    finally:
        sb.close()


if __name__ == "__main__":
    main()
