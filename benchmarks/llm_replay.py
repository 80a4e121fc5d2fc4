"""How fast recorded real-model episodes replay, and what OpenAIWorker itself costs per call.

Two measurements on a recording (default: the shipped ``envs_data/recordings/smollm2.json``):

1. **Replay**: every recorded episode replayed from the cache, ``--repeat`` times; reports LLM calls
   served per second counting only the time spent inside the worker's methods, and env steps per second
   end to end (checkers and graders included).
2. **Worker overhead per call, model time excluded**: the same episodes with the cache off and the
   OpenAI client replaced by an in-process stub that returns the recorded reply at once, so what is timed
   is the worker's own work (rendering the context, filling the prompt, hashing the request, the retry
   loop and accounting, parsing the reply) and none of the model's or the network's.

Example::

    python benchmarks/llm_replay.py --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import openai  # noqa: F401  (imported before timing: the worker imports it at its first request, ~1 s)

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.paths import data_path
from harness_gym.workers.llm_cache import LLMCache, request_key
from harness_gym_baselines.common.options import recorded_env_kwargs

WORKER_METHODS = ("draft", "revise", "propose_tool_call", "self_check", "confidence")


class _Timed:
    """Wraps a worker's methods to add the time spent in them to ``seconds``."""

    def __init__(self, worker: Any) -> None:
        self.seconds = 0.0
        for name in WORKER_METHODS:
            method = getattr(worker, name)

            def timed(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return _method(*args, **kwargs)
                finally:
                    self.seconds += time.perf_counter() - start

            setattr(worker, name, timed)


class _StubCompletions:
    """``client.chat.completions`` answering every request with the reply recorded for it."""

    def __init__(self, cache: LLMCache) -> None:
        self.replies = {key: out for key, _, out in cache.entries()}
        self.worker: Any = None
        self.calls = 0

    def create(self, *, model: str, messages: list[dict[str, str]], **params: Any) -> Any:
        self.calls += 1
        # the worker's own request record for this call is the last one it built
        out = self.replies.get(self.worker._last_key)
        text = out.text if out is not None and out.text else "{}"
        usage = SimpleNamespace(prompt_tokens=out.prompt_tokens if out else 0,
                                completion_tokens=out.completion_tokens if out else 0)
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=text, tool_calls=None))],
                               usage=usage)


def replay_episodes(manifest: dict[str, Any], cache: Path, repeat: int, *, stub: bool) -> dict[str, float]:
    """Run the manifest's episodes ``repeat`` times; with ``stub`` from a stub client instead of the cache.

    :param manifest: a recording manifest
    :param cache: its cache file
    :param repeat: how often to run each episode
    :param stub: cache off and a stub client (the overhead measurement) instead of replay
    """
    envs: dict[str, Any] = {}
    timers: dict[str, _Timed] = {}
    steps = 0
    wall = time.perf_counter()
    for _ in range(repeat):
        for ep in manifest["episodes"]:
            env_id = ep["env_id"]
            if env_id not in envs:
                recorded = recorded_env_kwargs(manifest, env_id, "the recording")
                if stub:
                    env = gym.make(env_id, worker="openai", base_url="http://stub.invalid/v1", **manifest["worker"],
                                   **recorded)
                    worker = env.unwrapped.worker
                    completions = _StubCompletions(LLMCache(cache, "replay"))
                    completions.worker = worker
                    worker._client = SimpleNamespace(chat=SimpleNamespace(completions=completions))
                    worker._client_pid = os.getpid()
                    build = worker._request

                    def keyed(action: str, messages: list[dict[str, str]], _build: Any = build, _w: Any = worker) -> Any:
                        request = _build(action, messages)
                        _w._last_key = request_key(request)
                        return request

                    worker._request = keyed
                else:
                    env = gym.make(env_id, worker="openai", cache=cache, cache_mode="replay", **manifest["worker"],
                                   **recorded)
                envs[env_id] = env
                timers[env_id] = _Timed(env.unwrapped.worker)
            env = envs[env_id]
            env.reset(seed=ep["seed"], options={"task_id": ep["task_id"]})
            for act in ep["actions"]:
                env.step(act)
                steps += 1
    wall = time.perf_counter() - wall
    worker_s = sum(t.seconds for t in timers.values())
    logical = 0
    for env in envs.values():
        worker = env.unwrapped.worker
        if stub:
            logical += worker._client.chat.completions.calls
        else:
            logical += worker.cache.hits
        env.close()
    return {"logical_calls": logical, "steps": steps, "worker_seconds": worker_s, "wall_seconds": wall,
            "calls_per_s": logical / worker_s if worker_s else float("nan"),
            "us_per_call": 1e6 * worker_s / logical if logical else float("nan"),
            "steps_per_s": steps / wall if wall else float("nan")}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", type=Path, default=None, help="default: envs_data/recordings/smollm2.json")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    manifest_path = args.manifest or data_path("recordings", "smollm2.json")
    manifest = json.loads(Path(manifest_path).read_text())
    cache = Path(manifest_path).parent / manifest["cache"]
    replay = replay_episodes(manifest, cache, args.repeat, stub=False)
    overhead = replay_episodes(manifest, cache, args.repeat, stub=True)
    result = {"replay": replay, "overhead": overhead, "episodes": len(manifest["episodes"]) * args.repeat}
    print(json.dumps(result, indent=1))
    print(f"replay from the cache: {replay['calls_per_s']:.0f} LLM calls/s inside the worker "
          f"({replay['us_per_call']:.0f} us per call), {replay['steps_per_s']:.1f} env steps/s end to end")
    print(f"worker overhead per call without model time (stub client, cache off): {overhead['us_per_call']:.0f} us")
    return result


if __name__ == "__main__":
    main()
