"""The hot path's shortcuts equal the definitions they replace: the context's length summed without rendering
it, a tool call's memoised canonical JSON, the execution cache's key hashed from memoised parts, the retail
store's copy of a record on first edit, ``info["cost"]`` built in one pass, the knowledge index's memoised
``states``."""

from __future__ import annotations

import hashlib
import json

import gymnasium as gym
import numpy as np
import pytest

import harness_gym
from harness_gym.core.types import CheckResult, Context, Document, Draft, Task, ToolCall, ToolResult
from harness_gym.sandbox.cache import FORMAT, cache_key, package_version
from harness_gym.workers.prompting import context_chars, render_context

TEXTS = ("", "  ", "x", " padded \n", "é ü 漢字 🙂", "a" * 1499, "b" * 1500, "c" * 1501, " " + "d" * 1600 + "  ",
         "line one\nline two", "e" * 1495 + "     " + "f" * 10, "g" * 6001)


def _contexts(rng: np.random.Generator, n: int) -> list[Context]:
    contexts = []
    for _ in range(n):
        pick = lambda: TEXTS[int(rng.integers(len(TEXTS)))]  # noqa: E731
        task = Task(task_id="t", split="train", family="f", difficulty=0.5, prompt=pick(), candidates=(),
                    observations=tuple(pick() for _ in range(4)))
        ctx = Context(task=task)
        ctx.observed = [int(i) for i in rng.choice(4, size=int(rng.integers(0, 5)), replace=False)]
        ctx.documents = [Document(doc_id=f"d{i}", title=pick(), text=pick()) for i in range(int(rng.integers(0, 4)))]
        for _ in range(int(rng.integers(0, 4))):
            call = ToolCall(name=pick()[:5], args={"b": pick(), "a": int(rng.integers(100)), "c": [1, "é"]})
            ok = bool(rng.random() < 0.5)
            ctx.tool_history.append((call, ToolResult(ok=ok, output=pick(), error="" if ok else pick())))
        if rng.random() < 0.7:
            ctx.draft = Draft(content=pick(), candidate=0, version=int(rng.integers(1, 12)))
        if rng.random() < 0.6:
            ctx.last_check = CheckResult(passed=bool(rng.random() < 0.5), feedback=pick())
            ctx.checked_version = int(rng.integers(-1, 12))
        contexts.append(ctx)
    return contexts


@pytest.mark.parametrize("max_item_chars", [1500, 10, 1])
def test_context_chars_is_the_rendered_length(max_item_chars: int) -> None:
    for ctx in _contexts(np.random.default_rng(max_item_chars), 400):
        assert context_chars(ctx, max_item_chars=max_item_chars) == len(
            render_context(ctx, max_item_chars=max_item_chars))


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_context_chars_on_played_episodes(env_id: str) -> None:
    env = gym.make(env_id)
    rng = np.random.default_rng(1)
    _, info = env.reset(seed=0)
    for seed in range(1, 80):
        allowed = np.flatnonzero(info["action_mask"])
        _, _, terminated, truncated, info = env.step(int(rng.choice(allowed)))
        ctx = env.unwrapped.context
        assert context_chars(ctx) == len(render_context(ctx))
        if terminated or truncated:
            _, info = env.reset(seed=seed)
    env.close()


def test_args_json_is_the_canonical_json() -> None:
    for args in ({}, {"b": 1, "a": "x"}, {"z": [1, {"y": 2}], "k": object.__name__}, {"v": {1, 2}.__class__}):
        call = ToolCall(name="n", args=args)
        expected = json.dumps(dict(args), sort_keys=True, default=str)
        assert call.args_json() == expected and call.args_json() == expected
        assert call.key() == "n" + expected
        assert call == ToolCall(name="n", args=args) and repr(call) == repr(ToolCall(name="n", args=args))


def _reference_key(code: str, files: dict[str, str] | None, stdin: str, timeout_s: float, memory_mb: int,
                   salt: str) -> str:
    payload = json.dumps([FORMAT, package_version(), salt, code, sorted((files or {}).items()), stdin,
                          float(timeout_s), int(memory_mb)], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def test_cache_key_is_the_sha256_of_the_job_payload() -> None:
    rng = np.random.default_rng(2)
    for _ in range(300):
        pick = lambda: TEXTS[int(rng.integers(len(TEXTS)))]  # noqa: E731
        files = None if rng.random() < 0.2 else {pick()[:4] + str(i): pick() for i in range(int(rng.integers(3)))}
        args = (pick(), files, pick(), float(rng.choice([0.5, 5, 10.25])), int(rng.choice([64, 512])),
                str(rng.choice(["", "bwrap", "salt \"é\""])))
        assert cache_key(*args) == _reference_key(*args)


def test_copy_json_is_deepcopy_on_the_shipped_store() -> None:
    import copy

    from harness_gym.domains.tau_retail.store import copy_json, is_plain_json_tree

    env = gym.make("HarnessTauRetail-v1")
    snapshot = env.unwrapped.domain.snapshot
    for records in snapshot.tables.values():
        for rec in records.values():
            copied = copy_json(rec)
            assert copied == copy.deepcopy(rec) and canonical_json(copied) == canonical_json(rec)
            assert not _shared_containers(copied, rec)
    shared: dict[str, object] = {"a": [1]}
    assert not is_plain_json_tree({"x": shared["a"], "y": shared["a"]})
    assert not is_plain_json_tree({"t": (1, 2)}) and is_plain_json_tree({"a": [1, {"b": None, "c": 1.5}]})
    env.close()


def canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def _shared_containers(a: object, b: object) -> bool:
    """Whether the copy ``a`` holds any dict or list object of the original ``b``."""
    def containers(v: object, out: set[int]) -> set[int]:
        if isinstance(v, (dict, list)):
            out.add(id(v))
            for item in (v.values() if isinstance(v, dict) else v):
                containers(item, out)
        return out
    return bool(containers(a, set()) & containers(b, set()))


def _reference_cost_info(usage: dict, sandbox_jobs: int, prices, bill: dict) -> dict:
    from harness_gym.core.cost import COST_KEYS, COUNTED_ITEMS
    from harness_gym.core.prices import API_PREFIX

    out = {key: usage[key] for key in COST_KEYS[:5]}
    out.update(sandbox_jobs=int(sandbox_jobs), tool_seconds=float(sandbox_jobs * prices.sandbox_seconds_per_job),
               units=float(prices.units(bill)))
    for key, item in COUNTED_ITEMS.items():
        out[key] = float(bill.get(item, 0.0))
    out["api_calls"] = float(sum(q for item, q in bill.items() if item.startswith(API_PREFIX)))
    return {key: out[key] for key in COST_KEYS}


def test_cost_info_is_the_reference_definition() -> None:
    from harness_gym.core.cost import cost_info
    from harness_gym.core.prices import price_table

    rng = np.random.default_rng(3)
    for profile in ("cheap-hosted", "frontier-hosted", "cheap-hosted+web-search"):
        prices = price_table(profile)
        items = sorted(prices.usd)
        for _ in range(300):
            bill = {str(item): float(rng.choice([0.5, 1.0, 3.0, 1e-3])) for item in
                    rng.choice(items, size=int(rng.integers(0, min(6, len(items)))), replace=False)}
            usage = {"llm_calls": int(rng.integers(3)), "llm_errors": 0, "prompt_tokens": int(rng.integers(900)),
                     "completion_tokens": int(rng.integers(90)), "latency_s": 0.0}
            jobs = int(rng.integers(3))
            got, want = cost_info(usage, jobs, prices, bill), _reference_cost_info(usage, jobs, prices, bill)
            assert list(got.items()) == list(want.items()) and repr(got) == repr(want)


def test_knowledge_states_memo_is_the_token_run_test() -> None:
    from harness_gym.domains.fictional_world import normalize_answer

    env = gym.make("HarnessKnowledge-v1")
    index = env.unwrapped.domain.sources
    for doc_id, source in list(index.sources.items())[:60]:
        toks = source.tokens
        for value in (" ".join(toks[2:5]), toks[0] if toks else "", "no such words here", 1999, "", " ".join(toks)):
            want = normalize_answer(str(value)).split()
            n = len(want)
            expected = n > 0 and any(toks[i:i + n] == tuple(want) for i in range(len(toks) - n + 1))
            assert index.states(doc_id, value) == expected and index.states(doc_id, value) == expected
    env.close()
