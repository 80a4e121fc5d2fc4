"""Sandbox job latency before and after the clean-slate guards (issue 41), measured in one run.

    python benchmarks/sandbox_clean_slate.py [--base COMMIT] [--jobs 300] [--rounds 3] [--no-docker]

Extracts ``COMMIT`` (default: the parent of the first commit that added this script's guards, ``2a17a2d``)
with ``git archive`` into a temporary folder and times, from the caller's side, uncached jobs of the same
sandboxes built from that code and from this checkout: each in its own interpreter (``PYTHONPATH`` names the
code), the two alternating for ``--rounds`` rounds so that the machine's load falls on both alike. Per backend
(the process sandbox under bubblewrap; the docker sandbox unless ``--no-docker``) and job (an empty one, and
one that writes and reads a few files in its work dir and ``/dev/shm``): the median per job of each, and the
ratio after / before.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = "2a17a2d"

TIMER = r"""
import json, sys, time, warnings
from harness_gym.sandbox import make_sandbox
backend, jobs = sys.argv[1], int(sys.argv[2])
codes = {
    "empty": "pass",
    "files": ("import os\n"
              "for top in ('.', '/dev/shm'):\n"
              "    if os.access(top, os.W_OK):\n"
              "        os.makedirs(top + '/d/e', exist_ok=True)\n"
              "        for i in range(5):\n"
              "            open(f'{top}/d/e/{i}.txt', 'w').write('x' * 1000)\n"
              "print(sum(len(open(n).read()) for n in os.listdir('.') if n.endswith('.py')))"),
}
files = {f"m{i}.py": "x = 1\n" * 50 for i in range(3)}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    kwargs = {"isolation": "bwrap"} if backend == "process" else {}
    sb = make_sandbox(backend, cache=False, **kwargs)
    out = {}
    for name, code in codes.items():
        for _ in range(10):
            assert sb.run(code, files=files).exit_code == 0
        times = []
        for _ in range(jobs):
            start = time.perf_counter()
            res = sb.run(code, files=files)
            times.append(time.perf_counter() - start)
            assert res.exit_code == 0 and not res.reason, res
        out[name] = times
    sb.close()
print(json.dumps(out))
"""


def extract(commit: str, folder: str) -> str:
    """``git archive`` of ``commit`` unpacked into ``folder``; returns it."""
    tar_path = os.path.join(folder, "base.tar")
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", tar_path, commit], check=True)
    with tarfile.open(tar_path) as tar:
        tar.extractall(folder, filter="data")
    return folder


def time_jobs(code_root: str, backend: str, jobs: int) -> dict[str, list[float]]:
    """Per-job seconds of each job kind, from a fresh interpreter importing the package from ``code_root``."""
    env = {**os.environ, "PYTHONPATH": code_root}
    out = subprocess.run([sys.executable, "-c", TIMER, backend, str(jobs)], env=env, cwd=code_root,
                         capture_output=True, text=True, check=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=BASE, help="the commit before the guards")
    parser.add_argument("--jobs", type=int, default=300, help="timed jobs per kind, round and code")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of before and after")
    parser.add_argument("--no-docker", action="store_true", help="time the process sandbox only")
    args = parser.parse_args()
    backends = ["process"] + ([] if args.no_docker else ["docker"])
    with tempfile.TemporaryDirectory(prefix="hg-base-") as folder:
        base_root = extract(args.base, folder)
        print(f"before: {args.base} (git archive in {base_root}); after: {ROOT} ({sys.executable})")
        for backend in backends:
            times: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
            for _ in range(args.rounds):
                for label, root in (("before", base_root), ("after", str(ROOT))):
                    for kind, seconds in time_jobs(root, backend, args.jobs).items():
                        times[label].setdefault(kind, []).extend(seconds)
            for kind in times["after"]:
                before = statistics.median(times["before"][kind]) * 1e3
                after = statistics.median(times["after"][kind]) * 1e3
                print(f"{backend:8s} {kind:6s} jobs={len(times['after'][kind]):5d}  median before {before:7.3f} ms  "
                      f"after {after:7.3f} ms  ratio after/before {after / before:5.3f}")


if __name__ == "__main__":
    main()
