"""A tiny arithmetic domain used to test the Harness MDP mechanics independently of the real domains."""

from __future__ import annotations

from harness_gym.core.domain import Domain
from harness_gym.core.env import HarnessEnv
from harness_gym.core.tools import ToolSpec
from harness_gym.core.types import Candidate, CheckResult, Context, Document, Draft, Task, ToolCall, ToolResult
from harness_gym.workers.profile import WorkerProfile


class ToyDomain(Domain):
    """Tasks "a + b": the checker verifies the parity of the answer only, the grader the exact value, so the
    candidate ``a + b + 2`` passes the check and fails the grade (a support ceiling)."""

    name = "toy"

    def __init__(self) -> None:
        super().__init__()
        self.tools = {"add": ToolSpec("add", "add two integers", {
            "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"], "additionalProperties": False})}
        self.corpus = [Document("d-add", "Addition", "to add a and b sum the integers"),
                       Document("d-cats", "Cats", "cats sleep a lot")]
        tasks = []
        for i, split in enumerate(["train"] * 6 + ["val", "test", "test", "ood"]):
            a, b = i + 3, 2 * i + 1
            cands = (Candidate(str(a + b), "reference", True), Candidate(str(a + b + 1), "off_by_one", False),
                     Candidate(str(a + b + 2), "parity_preserving", False))
            tasks.append(Task(task_id=f"toy-{i}", split=split, family="add", difficulty=0.3 + 0.05 * i,
                              prompt=f"add {a} and {b}", candidates=cands,
                              observations=(f"a = {a}", f"b = {b}"), required_observations=frozenset({0, 1}),
                              relevant_docs=frozenset({"d-add"}), tool_calls=(ToolCall("add", {"a": a, "b": b}),),
                              payload=(a, b)))
        self.add_tasks(tasks)

    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox) -> ToolResult:
        return ToolResult(ok=True, output=str(call.args["a"] + call.args["b"]))

    def check(self, task: Task, draft: Draft, sandbox) -> CheckResult:
        a, b = task.payload
        ok = int(draft.content) % 2 == (a + b) % 2
        return CheckResult(ok, "parity ok" if ok else f"parity of {draft.content} is wrong", specificity=0.8)

    def grade(self, task: Task, draft: Draft, sandbox) -> float:
        a, b = task.payload
        return 1.0 if int(draft.content) == a + b else 0.0


def make_toy_env(**kwargs) -> HarnessEnv:
    kwargs.setdefault("profile", WorkerProfile())
    return HarnessEnv(ToyDomain(), **kwargs)
