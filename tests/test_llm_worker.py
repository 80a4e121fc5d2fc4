"""OpenAIWorker without a real model: reply parsing, prompts, faults from a scripted local server, the cache."""

from __future__ import annotations

import json
import multiprocessing
import re
import socket
import sqlite3

import gymnasium as gym
import numpy as np
import pytest

import harness_gym
from harness_gym.core.cost import COST_KEYS as LEDGER_KEYS
from harness_gym.core.cost import LLM_FAULT_KEYS
from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.types import CheckResult, Context, Document, Draft, Task, ToolCall, ToolResult
from harness_gym.workers import LLMUnreachableError, OpenAIWorker, make_worker
from harness_gym.workers.fake_server import FakeOpenAIServer
from harness_gym.workers.llm_cache import CacheMissError, CallOutcome, LLMCache, request_key
from harness_gym.workers.prompting import (
    DRAFT_FORMATS,
    PromptSet,
    parse_answer,
    parse_confidence,
    parse_draft,
    parse_json_object,
    parse_python,
    parse_sql_or_list,
    parse_tool_call,
    parse_verdict,
    render_context,
)
from tests.test_envs import same

pytest.importorskip("openai")

COST_KEYS = set(LEDGER_KEYS)


# ----- parsing ---------------------------------------------------------------------------------------------
def test_parse_python_takes_the_fenced_block_and_drops_prose():
    reply = "Sure! Here it is:\n```python\ndef f(x):\n    return x + 1\n```\nThis adds one."
    assert parse_python(reply) == "def f(x):\n    return x + 1\n"
    bare = "The answer:\ndef f(x):\n    return x * 2\nThat doubles x, as asked."
    assert parse_python(bare) == "def f(x):\n    return x * 2\n"
    unclosed = "```py\nimport math\ndef g():\n    return math.pi\n"
    assert parse_python(unclosed).startswith("import math\ndef g()")
    assert parse_python("I cannot help with that.") is None


def test_parse_json_tolerates_prose_newlines_trailing_commas_and_python_literals():
    reply = 'Here is the record:\n{"entity": "Acme", "values": {"ceo": "Ann\nLee", "public": True,},}\nHope it helps'
    obj = parse_json_object(reply)
    assert obj == {"entity": "Acme", "values": {"ceo": "Ann\nLee", "public": True}}
    fenced = "```json\n{\"plan\": [], \"answer\": 3}\n```"
    assert json.loads(parse_draft(fenced, "json")) == {"plan": [], "answer": 3}
    assert parse_json_object('{"a": [1, 2') == {"a": [1, 2]}
    assert parse_draft("no json here", "json") is None


def test_parse_sql_finds_the_statement_or_an_answer_list():
    assert parse_sql_or_list("```sql\nSELECT `a` FROM `t` WHERE `b` = 'x;y';\n```") == "SELECT `a` FROM `t` WHERE `b` = 'x;y'"
    prose = "To answer, run: SELECT COUNT(*) FROM `t` WHERE `x` > 3; this counts rows."
    assert parse_sql_or_list(prose) == "SELECT COUNT(*) FROM `t` WHERE `x` > 3"
    assert parse_sql_or_list("UPDATE `t` SET `a` = '1'\nWHERE `b` = '2'\n\nThat updates it.") == \
        "UPDATE `t` SET `a` = '1' WHERE `b` = '2'"
    assert parse_sql_or_list("The answer is ['Vienna', 'Graz'].") == "['Vienna', 'Graz']"
    assert parse_sql_or_list("I do not know.") is None


def test_parse_answer_tool_call_confidence_and_verdict():
    assert parse_answer("\n**Answer: Thibaetind.**\nBecause ...") == "Thibaetind"
    assert parse_answer("   \n") is None
    assert parse_tool_call('I will call {"name": "lookup", "arguments": {"table": "t", "key": "k"}} now') == \
        ToolCall("lookup", {"table": "t", "key": "k"})
    assert parse_tool_call('{"tool": "search", "args": {"query": "x"}}') == ToolCall("search", {"query": "x"})
    assert parse_tool_call('{"function": {"name": "f", "arguments": "{\\"a\\": 1}"}}') == ToolCall("f", {"a": 1})
    from harness_gym.core.tool_calls import ToolSpec

    assert parse_tool_call('{"run_example": {"call": "f(1)"}}', {"run_example": ToolSpec("run_example", "")}) == \
        ToolCall("run_example", {"call": "f(1)"})
    assert parse_tool_call("call the lookup tool") is None
    assert parse_confidence("Confidence: 0.85") == pytest.approx(0.85)
    assert parse_confidence("about 70%") == pytest.approx(0.7)
    assert parse_confidence("I'd say 85") == pytest.approx(0.85)
    assert parse_confidence("very sure") is None
    assert parse_verdict("PASS\nThe function handles the empty case.")[0] is True
    assert parse_verdict("The answer is wrong: FAIL")[0] is False
    assert parse_verdict("Looks fine to me") is None


# ----- context and prompts -----------------------------------------------------------------------------------
def _toy_context() -> Context:
    task = Task(task_id="t1", split="train", family="f", difficulty=0.5, prompt="Compute the thing.",
                candidates=(), observations=("first fact", "second fact", "third fact"))
    ctx = Context(task=task, observed=[2, 0])
    ctx.retrieved.append("d7")
    ctx.documents.append(Document("d7", "A note", "Useful text " * 300))
    ctx.tool_history.append((ToolCall("lookup", {"k": 1}), ToolResult(ok=False, output="", error="no such key")))
    ctx.draft = Draft(content="print(1)", candidate=-1, version=2)
    ctx.last_check = CheckResult(passed=False, feedback="expected 2, got 1")
    ctx.checked_version = 2
    return ctx


def test_render_context_shows_everything_gathered_in_order_and_cuts_long_items():
    text = render_context(_toy_context())
    heads = re.findall(r"^## (.*)$", text, re.M)
    assert heads == ["Task", "Observations", "Retrieved documents", "Tool calls", "Current draft (version 2)",
                     "Last check on version 2: failed"]
    assert text.index("third fact") < text.index("first fact") and "second fact" not in text
    assert "lookup {\"k\": 1} -> ERROR: no such key" in text
    assert "[...]" in text and len(text) < 2500
    assert render_context(Context(task=_toy_context().task)) == "## Task\nCompute the thing."


@pytest.mark.parametrize("domain", ["code", "knowledge", "research_qa", "multitool", "data", "plan", "tau_retail",
                                    "dbbench"])
def test_every_domain_has_prompts_that_fill(domain):
    prompts = PromptSet.for_domain(domain)
    assert prompts.draft_format in DRAFT_FORMATS
    for action in ("draft", "revise", "tool", "self_check", "confidence"):
        msgs = prompts.messages(action, context="CTX", tools="TOOLS", draft="DRAFT", feedback="FEEDBACK")
        assert msgs[0]["role"] == "system" and "CTX" in msgs[-1]["content"] and "{{" not in msgs[-1]["content"]


def test_prompt_file_errors_name_the_file_and_field(tmp_path):
    (tmp_path / "defaults.json").write_text(json.dumps({"templates": {"draft": "{{context}} {{nope}}"}}))
    (tmp_path / "x.json").write_text(json.dumps({"draft_format": "python"}))
    with pytest.raises(TaskFileError, match=r"defaults.json.*templates.draft.*nope"):
        PromptSet.for_domain("x", tmp_path)
    (tmp_path / "defaults.json").write_text(json.dumps({"templates": {"drafting": "x"}}))
    with pytest.raises(TaskFileError, match="templates.drafting"):
        PromptSet.for_domain("x", tmp_path)


def test_make_worker_rejects_options_it_cannot_use():
    with pytest.raises(TypeError, match="unexpected keyword argument 'modle'; did you mean 'model'"):
        make_worker("openai", "code", options={"modle": "x", "base_url": "http://127.0.0.1:9/v1"})
    with pytest.raises(TypeError, match="'model', an option of worker='openai'; worker='simulated' does not take"):
        gym.make("HarnessCode-v1", model="x")
    with pytest.raises(ValueError, match="needs model"):
        make_worker("openai", "code", options={"base_url": "http://127.0.0.1:9/v1"})


# ----- a scripted "model" ----------------------------------------------------------------------------------
class ReferenceModel:
    """Answers like a model that knows each task's reference: drafts it, calls a task tool, rates 0.9."""

    def __init__(self, env_id: str) -> None:
        env = gym.make(env_id).unwrapped
        self.tasks = {t.prompt.strip(): t for t in env.domain.all_tasks()}
        env.close()

    def __call__(self, messages: list[dict[str, str]]) -> str:
        user = messages[-1]["content"]
        if "one number between 0 and 1" in user:
            return "0.9"
        if "PASS or FAIL" in user:
            return "FAIL\nunsure" if "version 1" in user else "PASS"
        task_text = user.split("## Task\n", 1)[1]
        found = [prompt for prompt in self.tasks if task_text.startswith(prompt)]
        if not found:
            return "?"
        task = self.tasks[max(found, key=len)]
        if 'Reply with only a JSON object: {"name"' in user:  # a tool proposal
            call = task.tool_calls[0] if task.tool_calls else ToolCall("nope", {})
            return "I will call " + json.dumps({"name": call.name, "arguments": dict(call.args)})
        ref = task.reference.content
        return f"Here you go:\n```\n{ref}\n```\n" if "```" in user else f"{ref}\n"


def run_episode(env, actions, seed=0):
    obs, info = env.reset(seed=seed)
    steps = [(obs, 0.0, False, info)]
    for act in actions:
        obs, reward, term, trunc, info = env.step(act)
        steps.append((obs, reward, term, info))
        if term or trunc:
            break
    return steps


def _total(steps, key):
    return sum(s[3]["cost"][key] for s in steps)


def test_faults_are_retried_counted_and_the_episode_ends_normally():
    faults = ["timeout", "429", "500", "malformed", "nochoices", "drop", "503"]
    with FakeOpenAIServer(ReferenceModel("HarnessCode-v1"), faults, slow_s=0.6) as srv:
        env = gym.make("HarnessCode-v1", worker="openai", base_url=srv.base_url, model="fake", timeout_s=0.3,
                       max_retries=8, backoff_s=0.01)
        steps = run_episode(env, [0, 0, 3, 2, 4, 6])
        env.close()
    final = steps[-1][3]
    assert steps[-1][2] is True and final["quality"] == 1.0  # the model's content was graded for real
    assert all(set(s[3]["cost"]) == COST_KEYS for s in steps)
    assert _total(steps, "llm_errors") == len(faults)
    assert _total(steps, "llm_calls") == sum(srv.served.values())
    assert _total(steps, "prompt_tokens") > 0 and _total(steps, "completion_tokens") > 0
    draft_step = steps[3][3]
    assert draft_step["action_name"] == "DRAFT" and draft_step["cost"]["llm_errors"] == len(faults)
    assert draft_step["cost"]["latency_s"] >= 0.3  # the timed-out request is part of the step's latency


def test_a_call_that_keeps_failing_after_a_reply_is_a_failed_step_not_an_exception():
    with FakeOpenAIServer(ReferenceModel("HarnessCode-v1"), ["ok"] + ["500"] * 100) as srv:
        env = gym.make("HarnessCode-v1", worker="openai", base_url=srv.base_url, model="fake", max_retries=2,
                       backoff_s=0.0)
        steps = run_episode(env, [3, 2, 5, 6])
        env.close()
    draft_info, tool_info, revise_info = steps[1][3], steps[2][3], steps[3][3]
    ctx = env.unwrapped.context
    assert draft_info["cost"]["llm_calls"] == 1 + 3 and draft_info["cost"]["llm_errors"] == 3  # its confidence's 3
    assert ctx.tool_history[0][0] == ToolCall("", {}) and not ctx.tool_history[0][1].ok
    assert "unknown tool" in ctx.tool_history[0][1].error
    assert tool_info["evidence"]["env"] == -0.1
    assert revise_info["cost"]["llm_errors"] == 3 + 3 and ctx.draft.content == ""  # the revision's and confidence's
    assert steps[-1][2] and steps[-1][3]["quality"] == 0.0  # an empty draft is graded, and fails
    assert env.unwrapped._state.confidence == 0.5


def _dead_url() -> str:
    """The ``/v1`` root of a local port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _first_draft(worker: OpenAIWorker) -> Draft:
    env = gym.make("HarnessCode-v1").unwrapped
    env.reset(seed=0)
    worker.reset(np.random.default_rng(0))
    try:
        return worker.draft(env.context)
    finally:
        env.close()


@pytest.mark.parametrize("where", ["refused", "unknown host"])
def test_an_unreachable_server_fails_the_first_call_naming_url_and_error(where):
    url, why = (_dead_url(), "[Cc]onnection refused") if where == "refused" else ("http://no-such-host.invalid/v1", "")
    env = gym.make("HarnessCode-v1", worker="openai", base_url=url, model="fake", max_retries=1, backoff_s=0.0,
                   timeout_s=5.0)
    env.reset(seed=0)
    with pytest.raises(LLMUnreachableError, match=re.escape(url) + r".*first call \(2 requests.*connection error: .*"
                       + why):
        env.step(int(harness_gym.Action.DRAFT))
    env.close()
    assert issubclass(LLMUnreachableError, RuntimeError)


@pytest.mark.parametrize(("faults", "requests", "error"), [
    (["500"] * 9, 3, "http 500"),
    (["malformed"] * 9, 3, "malformed body"),
    (["nochoices", "drop", "503"] * 3, 3, "http 503"),
    (["401"], 1, "http 401"),  # a refusal is not retried, and says so at once
])
def test_a_server_that_never_answers_fails_the_first_call_after_its_retries(faults, requests, error):
    with FakeOpenAIServer(ReferenceModel("HarnessCode-v1"), faults) as srv:
        worker = OpenAIWorker("code", base_url=srv.base_url, model="fake", max_retries=2, backoff_s=0.0)
        with pytest.raises(LLMUnreachableError, match=re.escape(srv.base_url) + f".*{requests} request.*{error}"):
            _first_draft(worker)
    assert sum(srv.served.values()) == requests


def test_a_wrong_base_url_fails_the_first_call_with_the_404():
    with FakeOpenAIServer(ReferenceModel("HarnessCode-v1")) as srv:
        wrong = srv.base_url.removesuffix("/v1")  # the server's root, without its /v1
        worker = OpenAIWorker("code", base_url=wrong, model="fake", backoff_s=0.0)
        with pytest.raises(LLMUnreachableError, match=re.escape(wrong) + r".*1 request,.*http 404"):
            _first_draft(worker)
        assert srv.served["404"] == 1
        assert _first_draft(OpenAIWorker("code", base_url=srv.base_url, model="fake")).content  # the right one


def test_a_first_reply_that_does_not_parse_is_an_answer_not_an_unreachable_server():
    with FakeOpenAIServer(ReferenceModel("HarnessCode-v1"), ["unparseable", "500", "500"]) as srv:
        worker = OpenAIWorker("code", base_url=srv.base_url, model="fake", max_retries=0, backoff_s=0.0)
        assert _first_draft(worker).content == ""  # the model answered; its reply holds no code
        assert _first_draft(worker).content == ""  # then a 500: counted, not raised
    assert worker.pop_usage().llm_errors == 2


@pytest.mark.parametrize("num_envs", ["1", "2"])  # one after another, or in threads
def test_the_command_line_reports_an_unreachable_server_in_one_line(capsys, num_envs):
    from harness_gym_baselines.cli import main

    url = _dead_url()
    status = main(["eval", "HarnessCode-v1", "--policy", "forced-check", "--episodes", "2", "--worker", "openai",
                   "--base-url", url, "--model", "fake", "--max-retries", "0", "--no-progress", "--num-envs", num_envs])
    err = capsys.readouterr().err.strip()
    assert status == 1 and len(err.splitlines()) == 1
    assert "LLMUnreachableError" in err and url in err and "onnection refused" in err


def test_retry_after_is_honoured():
    with FakeOpenAIServer(ReferenceModel("HarnessCode-v1"), ["429"], retry_after="1") as srv:
        worker = OpenAIWorker("code", base_url=srv.base_url, model="fake", backoff_s=0.0)
        worker.reset(np.random.default_rng(0))
        env = gym.make("HarnessCode-v1").unwrapped
        env.reset(seed=0)
        worker.draft(env.context)
        env.close()
    assert srv.served["429"] == 1 and srv.request_times[1] - srv.request_times[0] >= 1.0
    assert worker.pop_usage().llm_errors == 1


def test_unparseable_replies_are_retried_only_when_sampling():
    env = gym.make("HarnessKnowledge-v1").unwrapped
    env.reset(seed=0)
    for temperature, expect_requests in ((0.0, 1), (0.7, 3)):
        with FakeOpenAIServer(ReferenceModel("HarnessKnowledge-v1"), ["unparseable"] * 2) as srv:
            worker = OpenAIWorker("knowledge", base_url=srv.base_url, model="fake", temperature=temperature,
                                  backoff_s=0.0)
            worker.reset(np.random.default_rng(0))
            draft = worker.draft(env.context)
        usage = worker.pop_usage()
        assert usage.llm_calls == expect_requests and sum(srv.served.values()) == expect_requests
        if temperature == 0:
            assert draft.content == "" and usage.llm_errors == 1
        else:
            assert json.loads(draft.content)["entity"] and usage.llm_errors == 2
    env.close()


def test_a_refused_request_is_not_retried():
    with FakeOpenAIServer(ReferenceModel("HarnessCode-v1")) as srv:
        srv.faults = ["ok", "400"]
        worker = OpenAIWorker("code", base_url=srv.base_url, model="fake", backoff_s=0.0)
        worker.reset(np.random.default_rng(0))
        env = gym.make("HarnessCode-v1").unwrapped
        env.reset(seed=0)
        worker.draft(env.context)
        call = worker.propose_tool_call(env.context)
        env.close()
    assert call == ToolCall("", {}) and sum(srv.served.values()) == 2


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_every_env_runs_to_the_end_with_a_faulty_live_worker(env_id):
    """Random actions, faults every few requests: episodes end, graders grade whatever the model wrote."""
    faults = ["500", "ok", "unparseable", "429", "ok", "ok", "malformed", "ok"] * 6
    with FakeOpenAIServer(ReferenceModel(env_id), faults) as srv:
        env = gym.make(env_id, worker="openai", base_url=srv.base_url, model="fake", max_retries=1, backoff_s=0.0,
                       temperature=0.5, budget=20)
        rng = np.random.default_rng(1)
        for seed in range(2):
            steps = run_episode(env, rng.integers(0, 7, size=40).tolist(), seed=seed)
            assert steps[-1][2] and 0.0 <= steps[-1][3]["quality"] <= 1.0
            assert all(set(s[3]["cost"]) == COST_KEYS for s in steps)
        env.close()
    assert sum(srv.served.values()) > 0


# ----- cache -----------------------------------------------------------------------------------------------
def test_record_then_replay_without_server_is_identical(tmp_path):
    cache = tmp_path / "calls.sqlite"
    actions = [0, 1, 2, 3, 4, 5, 4, 6]
    with FakeOpenAIServer(ReferenceModel("HarnessMultiTool-v1"), ["500", "ok", "unparseable", "ok", "429"]) as srv:
        env = gym.make("HarnessMultiTool-v1", worker="openai", base_url=srv.base_url, model="fake", temperature=0.8,
                       backoff_s=0.0, cache=cache, cache_mode="record")
        recorded = [run_episode(env, actions, seed=s) for s in (3, 4)]
        env.close()
    replay = gym.make("HarnessMultiTool-v1", worker="openai", model="fake", temperature=0.8, cache=cache,
                      cache_mode="replay")
    replayed = [run_episode(replay, actions, seed=s) for s in (3, 4)]
    assert same(recorded, replayed)
    assert sum(s[3]["cost"]["llm_errors"] for ep in replayed for s in ep) >= 3
    with pytest.raises(CacheMissError, match=r"no entry for key [0-9a-f]{64}.*prompt starting [\"'][^#]"):
        run_episode(replay, actions, seed=5)  # another seed: other samples, never recorded
    replay.close()


def test_sample_index_keeps_identical_prompts_distinct(tmp_path):
    with FakeOpenAIServer(ReferenceModel("HarnessCode-v1")) as srv:
        worker = OpenAIWorker("code", base_url=srv.base_url, model="fake", temperature=0.7,
                              cache=tmp_path / "c.sqlite", cache_mode="auto")
        env = gym.make("HarnessCode-v1").unwrapped
        env.reset(seed=0)
        worker.reset(np.random.default_rng(0))
        worker.draft(env.context)
        worker.draft(env.context)
        assert sum(srv.served.values()) == 2  # the second identical prompt is a new sample
        worker.reset(np.random.default_rng(0))
        worker.draft(env.context)
        worker.draft(env.context)
        assert sum(srv.served.values()) == 2  # the same episode seed replays both from the cache
        env.close()
    keys = [k for k, req, _ in worker.cache.entries()]
    samples = sorted(req["sample"] for _, req, _ in worker.cache.entries())
    assert len(set(keys)) == 2 and samples == [0, 1]


def test_request_key_is_canonical():
    a = {"model": "m", "messages": [{"role": "user", "content": "x"}], "params": {"temperature": 0, "max_tokens": 9},
         "sample": 0}
    b = {"sample": 0, "params": {"max_tokens": 9, "temperature": 0}, "messages": [{"content": "x", "role": "user"}],
         "model": "m"}
    assert request_key(a) == request_key(b) != request_key({**a, "sample": 1})


def _record_many(path: str, writer: int, n: int) -> None:
    cache = LLMCache(path, "record")
    for i in range(n):
        request = {"model": "m", "messages": [{"role": "user", "content": f"w{writer} #{i}"}], "params": {},
                   "sample": 0}
        cache.put(request_key(request), request, CallOutcome(text=f"reply {writer}-{i}", ok=True), replace=True)


def test_two_processes_recording_into_one_file_lose_no_entry(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    LLMCache(path, "record")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_record_many, args=(path, w, 300)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    cache = LLMCache(path, "replay")
    assert len(cache) == 600
    texts = {out.text for _, _, out in cache.entries()}
    assert texts == {f"reply {w}-{i}" for w in range(2) for i in range(300)}
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_auto_mode_keeps_the_first_writer_and_retries_stored_failures(tmp_path):
    cache = LLMCache(tmp_path / "a.sqlite", "auto")
    request = {"model": "m", "messages": [], "params": {}, "sample": 0}
    key = request_key(request)
    failed = CallOutcome(text="", ok=False, error="http 500", errors=4, requests=4)
    cache.put(key, request, failed, replace=False)
    assert cache.lookup(request) == (key, None)  # a stored failure is retried in auto mode
    first = CallOutcome(text="one", ok=True)
    assert cache.put(key, request, first, replace=True) == first
    assert cache.put(key, request, CallOutcome(text="two", ok=True), replace=False) == first
    assert cache.lookup(request) == (key, first)


def test_replay_needs_an_existing_cache(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        OpenAIWorker("code", model="m", cache=tmp_path / "none.sqlite", cache_mode="replay")
    with pytest.raises(ValueError, match="needs cache=PATH"):
        OpenAIWorker("code", model="m", cache_mode="replay")
    with pytest.raises(ValueError, match="needs base_url"):
        OpenAIWorker("code", model="m")


def test_simulated_worker_meters_its_calls_with_constant_keys():
    env = gym.make("HarnessCode-v1")
    steps = run_episode(env, [0, 3, 4, 6])
    env.close()
    assert all(set(s[3]["cost"]) == COST_KEYS for s in steps)
    observe, draft, check, submit = (s[3]["cost"] for s in steps[-4:])
    # Code's OBSERVE fetches a spec detail from the ticket service (one internal API call, no model call)
    assert observe["llm_calls"] == 0 and observe["api_calls"] == 1 and 0 < observe["units"] < 0.1
    assert submit["units"] == 0.0 and check["llm_calls"] == 0
    assert draft["llm_calls"] == 2 and draft["prompt_tokens"] > 0 and draft["latency_s"] == 0.0


def test_record_mode_sends_each_key_once_per_run_so_every_episode_replays(tmp_path):
    cache = tmp_path / "rec.sqlite"
    actions = [0, 3, 2, 4, 6]
    with FakeOpenAIServer(ReferenceModel("HarnessCode-v1"), ["500"]) as srv:
        env = gym.make("HarnessCode-v1", worker="openai", base_url=srv.base_url, model="fake", backoff_s=0.05,
                       cache=cache, cache_mode="record")
        recorded = [run_episode(env, actions, seed=0) for _ in range(2)]
        env.close()
    first_calls = _total(recorded[0], "llm_calls")
    assert sum(srv.served.values()) == first_calls  # the second, identical episode was served from the run
    assert _total(recorded[1], "llm_errors") == 1  # ... with what the first recorded, fault included
    replay = gym.make("HarnessCode-v1", worker="openai", model="fake", cache=cache, cache_mode="replay")
    replayed = [run_episode(replay, actions, seed=0) for _ in range(2)]
    replay.close()
    strip = [[(o, r, t, {k: v for k, v in i.items() if k != "exec_cached"}) for o, r, t, i in ep] for ep in recorded]
    strip_re = [[(o, r, t, {k: v for k, v in i.items() if k != "exec_cached"}) for o, r, t, i in ep] for ep in replayed]
    assert same(strip, strip_re)


# ----- why calls failed ------------------------------------------------------------------------------------
def _faults(steps) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in steps:
        for key, count in s[3]["llm_faults"].items():
            if count:
                out[key] = out.get(key, 0) + count
    return out


def test_failures_say_their_call_type_and_cause_with_the_same_keys_at_every_step():
    # DRAFT: timeout, 429, malformed body, dropped connection, then a reply; its confidence: 500 on all 5 requests
    faults = ["timeout", "429", "malformed", "drop", "ok"] + ["500"] * 5
    with FakeOpenAIServer(ReferenceModel("HarnessCode-v1"), faults, slow_s=0.6) as srv:
        env = gym.make("HarnessCode-v1", worker="openai", base_url=srv.base_url, model="fake", timeout_s=0.3,
                       max_retries=4, backoff_s=0.0)
        steps = run_episode(env, [3, 4, 6])
        env.close()
    assert all(tuple(s[3]["llm_faults"]) == LLM_FAULT_KEYS for s in steps)  # reset's included
    assert not any(steps[0][3]["llm_faults"].values())
    assert _faults(steps[1:2]) == {"draft.timeout": 1, "draft.http_status": 1, "draft.malformed_body": 1,
                                   "draft.connection": 1, "confidence.http_status": 5, "confidence.fallback": 1}
    assert steps[1][3]["cost"]["llm_errors"] == 9  # the breakdown sums to the count
    assert env.unwrapped._state.confidence == 0.5 and steps[-1][3]["quality"] == 1.0


def test_an_unparseable_reply_is_the_model_s_fault_and_its_fallback_is_counted():
    with FakeOpenAIServer(ReferenceModel("HarnessCode-v1"), ["ok", "unparseable"]) as srv:
        worker = OpenAIWorker("code", base_url=srv.base_url, model="fake", backoff_s=0.0)
        env = gym.make("HarnessCode-v1").unwrapped
        env.reset(seed=0)
        worker.reset(np.random.default_rng(0))
        worker.draft(env.context)
        assert worker.confidence(env.context, env.context.draft if env.context.draft else Draft("x", -1, 1)) == 0.5
        env.close()
    assert worker.pop_usage().faults == {"confidence.unparseable": 1, "confidence.fallback": 1}


def test_a_replayed_call_reports_the_recorded_causes_and_old_entries_their_last_fault(tmp_path):
    cache = tmp_path / "c.sqlite"
    with FakeOpenAIServer(ReferenceModel("HarnessCode-v1"), ["500", "timeout"], slow_s=0.6) as srv:
        env = gym.make("HarnessCode-v1", worker="openai", base_url=srv.base_url, model="fake", timeout_s=0.3,
                       backoff_s=0.0, cache=cache, cache_mode="record")
        recorded = run_episode(env, [3, 6])
        env.close()
    replay = gym.make("HarnessCode-v1", worker="openai", model="fake", cache=cache, cache_mode="replay")
    replayed = run_episode(replay, [3, 6])
    replay.close()
    assert _faults(replayed) == _faults(recorded) == {"draft.http_status": 1, "draft.timeout": 1}
    # an entry stored before causes were: its errors under the cause of its last fault
    legacy = CallOutcome.from_json(json.dumps({"text": "", "ok": False, "error": "connection error: refused",
                                               "requests": 4, "errors": 4, "prompt_tokens": 0,
                                               "completion_tokens": 0, "latency_s": 1.5}))
    assert legacy.error_causes() == {"connection": 4}
    assert CallOutcome(text="x", ok=True, error="unparseable reply", errors=1).error_causes() == {"unparseable": 1}


def test_the_simulated_worker_reports_no_llm_fault_with_the_same_keys():
    env = gym.make("HarnessCode-v1")
    steps = run_episode(env, [0, 3, 4, 6])
    env.close()
    assert all(tuple(s[3]["llm_faults"]) == LLM_FAULT_KEYS and not any(s[3]["llm_faults"].values()) for s in steps)
