"""The τ-bench retail domain: a store, its tickets, the retail tools, a plan verifier and the benchmark reward.

Evidence a task needs (the hidden ``required_*`` and ``tool_calls`` the simulated worker reads) follows from what
the ticket states, for the synthetic store and the public data alike: a ticket that states every value its
plan writes (order ids, the cancel reason, the new address) and asks for no information needs none; otherwise
the customer's profile, the record of every order the plan changes that the ticket describes without naming
its id, and the gold read calls (at most :data:`MAX_TOOL_EVIDENCE`).

What the harness holds (the hooks read the ticket only, :mod:`.ticket`): the ids, emails, zip codes and catalogue
products it names are the task's keys; the visible checks are those CHECK runs on a plan making the changes the
ticket asks for; every tool call and every record OBSERVE shows is a request to the operator's order service
(``api_call:internal``), except local arithmetic (``api_call:free``) and ``think`` (nothing).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from functools import lru_cache

from harness_gym.core.domain import Domain
from harness_gym.core.lru import ByteLRU
from harness_gym.core.paths import data_path
from harness_gym.core.sandbox import Sandbox
from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.tool_calls import validate_call
from harness_gym.core.types import Candidate, CheckResult, Context, Document, Draft, Task, ToolCall, ToolResult
from harness_gym.domains.source_files import read_markdown_documents, source_path
from harness_gym.domains.tau_retail.checker import verify
from harness_gym.domains.tau_retail.drafts import (
    DraftFormatError,
    DraftMemo,
    RetailTaskData,
    compose_reply,
    encode_draft,
    parse_draft,
    replay,
)
from harness_gym.domains.tau_retail.grader import MAX_REPLY_CHARS, reward, rewards
from harness_gym.domains.tau_retail.mutations import Perturber
from harness_gym.domains.tau_retail.store import RetailDB, RetailSnapshot
from harness_gym.domains.tau_retail.ticket import ticket_changes, ticket_ids, ticket_products
from harness_gym.domains.tau_retail.tools import EVIDENCE_TOOLS, ORDER_SERVICE, WRITE_TOOLS, call_once, tool_specs
from harness_gym.domains.tau_retail.upstream import RawTask, RetailDataset, load_dataset

POLICY_FILE = source_path("tau_retail", "policy.md")
"""The retail policy as retrieval documents (this project's wording of the benchmark's rules)."""

POLICY_OF_TOOL: dict[str, str] = {
    "cancel_pending_order": "policy-cancel", "modify_pending_order_address": "policy-modify-address",
    "modify_pending_order_payment": "policy-modify-payment", "modify_pending_order_items": "policy-modify-items",
    "modify_user_address": "policy-user-address", "return_delivered_order_items": "policy-return",
    "exchange_delivered_order_items": "policy-exchange", "transfer_to_human_agents": "policy-transfer",
}
FAMILY_OF_TOOL: dict[str, str] = {
    "cancel_pending_order": "cancel", "modify_pending_order_address": "order_address",
    "modify_pending_order_payment": "payment", "modify_pending_order_items": "modify_items",
    "modify_user_address": "user_address", "return_delivered_order_items": "return",
    "exchange_delivered_order_items": "exchange", "transfer_to_human_agents": "transfer",
}
_LOOKUPS = frozenset({"find_user_id_by_email", "find_user_id_by_name_zip", "get_user_details", "think"})
_ANSWER_IS_THE_OUTPUT = frozenset({"find_user_id_by_email", "find_user_id_by_name_zip", "calculate",
                                   "list_all_product_types"})
"""Read tools whose output answers the call without repeating its arguments (an id, a number, the catalogue)."""
MAX_TOOL_EVIDENCE = 4
"""At most this many gold read calls are a task's evidence tool calls (8 budget units)."""
MAX_RELEVANT_DOCS = 2
VERDICT_MEMO_BYTES = 16 * 2**20
"""Bound on the drafts (characters) whose check verdicts and plan signals a domain keeps."""


def _product_doc(pid: str, product: dict) -> Document:
    lines = [f"item {vid}: " + ", ".join(f"{k} {v}" for k, v in var["options"].items())
             + f"; price {var['price']}; {'available' if var['available'] else 'unavailable'}"
             for vid, var in product["variants"].items()]
    return Document(doc_id=f"product-{pid}", title=f"{product['name']} (product {pid})", text="\n".join(lines))


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


class TauRetailDomain(Domain):
    """τ-bench retail tickets over one store (see :class:`~harness_gym.domains.tau_retail.env.HarnessTauRetailEnv`).

    :param dataset: the store and its tasks, from :func:`~harness_gym.domains.tau_retail.upstream.load_dataset`
    """

    name = "tau_retail"
    follows_published_limits = True
    uses_sandbox = False
    tool_needs_draft = False
    hidden_payload_keys = frozenset({"actions", "outputs", "gold_hash"})
    """Fields of the payload (:class:`~harness_gym.domains.tau_retail.drafts.RetailTaskData`) the harness must
    not see: the gold actions, the outputs the reply must state and the gold database hash."""

    def __init__(self, dataset: RetailDataset) -> None:
        super().__init__()
        self.dataset = dataset
        self.snapshot: RetailSnapshot = dataset.snapshot
        self.tools = tool_specs(self.snapshot.semantics)
        self.corpus = read_markdown_documents(POLICY_FILE)
        self.corpus += [_product_doc(pid, p) for pid, p in sorted(self.snapshot.tables["products"].items())]
        self._product_names = sorted(p["name"] for p in self.snapshot.tables["products"].values())
        self._keys: dict[str, tuple[str, ...]] = {}
        self._checks: dict[str, int] = {}
        self._verdicts: DraftMemo[CheckResult] = DraftMemo(VERDICT_MEMO_BYTES)
        self._plans_known: ByteLRU[str, float] = ByteLRU(VERDICT_MEMO_BYTES, lambda content, _: len(content) + 64)
        self.add_tasks([self._task(raw) for raw in dataset.tasks])
        for task in self.all_tasks():  # what the hooks read of each ticket, once at load
            self.task_keys(task)
            self.n_visible_checks(task)

    # ----- task construction -------------------------------------------------------------------------
    def _task(self, raw: RawTask) -> Task:
        snap = self.snapshot
        data = RetailTaskData(snapshot=snap, user_id=raw.user_id, actions=raw.actions, outputs=raw.outputs,
                              gold_hash=replay(snap, raw.actions).state_hash())
        plan = data.gold_plan
        reference = encode_draft(plan, compose_reply(plan, raw.outputs))
        if min(rewards(data, reference).values()) != 1.0:
            raise TaskFileError(raw.source, "the gold plan with a reply stating every output does not earn reward 1 "
                                "under both output matches (an output the benchmark's comparison can never "
                                "find?)", task_id=raw.task_id,
                                field="outputs")
        seed = int(hashlib.sha256(raw.task_id.encode()).hexdigest()[:8], 16)
        wrong = [(kind, encode_draft(p, compose_reply(p, raw.outputs)))
                 for kind, p in Perturber(snap, raw.user_id, plan, seed).all()]
        if raw.outputs:
            wrong.append(("missing_output", encode_draft(plan, compose_reply(plan, ()))))
        candidates = [Candidate(reference, "reference", True)]
        seen = {reference}
        for kind, content in wrong:
            quality = reward(data, content)
            # A perturbation that still reaches the gold state (an address set to the one already stored) is
            # not a wrong plan; it stays out of the bank.
            if content not in seen and quality < 1.0:
                seen.add(content)
                candidates.append(Candidate(content, kind, False))

        observations, order_index = self._observations(raw.user_id)
        writes = [c for c in plan if c.name in WRITE_TOOLS]
        unnamed = list(dict.fromkeys(str(c.args["order_id"]) for c in plan if "order_id" in c.args
                                     and str(c.args["order_id"]) not in raw.prompt))
        if _stated_in(raw.prompt, plan, raw.outputs):
            required, evidence, docs = frozenset(), (), []
        else:
            required = frozenset({0, *(order_index[o] for o in unnamed if o in order_index)}) if observations \
                else frozenset()
            evidence = self._evidence_calls(data)
            docs = list(dict.fromkeys(POLICY_OF_TOOL[c.name] for c in plan))[:MAX_RELEVANT_DOCS] or ["policy-information"]
        family = "+".join(sorted({FAMILY_OF_TOOL[c.name] for c in plan})) or "info"
        difficulty = min(1.0, 0.1 + 0.2 * min(len(writes), 3) + 0.1 * min(len(raw.outputs), 2)
                         + 0.05 * min(len(raw.actions) - len(plan), 4))
        return Task(task_id=raw.task_id, split=raw.split, family=family, difficulty=round(difficulty, 3),
                    prompt=raw.prompt, candidates=tuple(candidates), observations=observations,
                    required_observations=required, relevant_docs=frozenset(docs), tool_calls=evidence,
                    payload=data)

    def _observations(self, user_id: str | None) -> tuple[tuple[str, ...], dict[str, int]]:
        """The customer's profile and each of their orders, as the support console shows them, and the index of
        each order's text."""
        user = self.snapshot.tables["users"].get(user_id or "")
        if user is None:
            return (), {}
        orders = self.snapshot.tables["orders"]
        shown = [oid for oid in user["orders"] if oid in orders]
        texts = [f"Customer profile {user_id}: {_compact(user)}"]
        texts += [f"Order {oid}: {_compact(orders[oid])}" for oid in shown]
        return tuple(texts), {oid: i + 1 for i, oid in enumerate(shown)}

    def _evidence_calls(self, data: RetailTaskData) -> tuple[ToolCall, ...]:
        """The gold read calls that succeed, those about what the plan changes first, at most
        :data:`MAX_TOOL_EVIDENCE`, in gold order."""
        db = RetailDB(self.snapshot)
        unique = {c.key(): c for c in reversed(data.actions)}
        reads = [c for c in data.actions if unique.get(c.key()) is c and c.name in EVIDENCE_TOOLS
                 and c.name not in _LOOKUPS and call_once(db, c)[0]]
        touched = {str(v) for c in data.gold_plan for v in c.args.values() if isinstance(v, str)}
        for c in data.gold_plan:
            for item_id in c.args.get("new_item_ids", []):
                touched.add(self.snapshot.item_product.get(item_id, ""))
        ranked = sorted(range(len(reads)), key=lambda i: (not set(map(str, reads[i].args.values())) & touched, i))
        keep = sorted(ranked[:MAX_TOOL_EVIDENCE])
        return tuple(reads[i] for i in keep)

    # ----- MDP hooks ---------------------------------------------------------------------------------
    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None,
                  *, resource: None = None) -> ToolResult:
        if call.name not in EVIDENCE_TOOLS:
            return ToolResult(ok=False, output="", error=f"{call.name} changes the store; write calls belong in "
                                                          "the draft's plan, TOOL runs read tools only",
                              billed={})  # refused before the order service is called
        ok, out = call_once(RetailDB(self.snapshot), call)
        return ToolResult(ok=True, output=out) if ok else ToolResult(ok=False, output="", error=out)

    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> CheckResult:
        """The checker's verdict (:func:`~.checker.verify`), kept per task and draft (a pure function of both)."""
        found = self._verdicts.get(task.payload, draft.content)
        if found is None:
            found = self._check(task, draft)
            self._verdicts.put(task.payload, draft.content, found)
        return found

    def _check(self, task: Task, draft: Draft) -> CheckResult:
        try:
            reply = parse_draft(draft.content).reply
        except DraftFormatError:
            reply = ""
        if len(reply) > MAX_REPLY_CHARS:
            return CheckResult(False, f"the reply is {len(reply)} characters long; at most {MAX_REPLY_CHARS} are "
                                      "graded", 0.9, n_passed=0, n_total=1, billed={})
        return verify(task.payload, draft.content)

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> float:
        return reward(task.payload, draft.content)

    # ----- signals the harness holds (the ticket only) -------------------------------------------------
    def task_keys(self, task: Task) -> tuple[str, ...]:
        """The ids (orders, items, users, payment methods), emails, zip codes and catalogue products the ticket
        names, lower-cased."""
        keys = self._keys.get(task.task_id)
        if keys is None:
            keys = self._keys[task.task_id] = tuple(ticket_ids(task.prompt)
                                                    + ticket_products(task.prompt, self._product_names))
        return keys

    def n_visible_checks(self, task: Task) -> int:
        """The checks CHECK runs on a plan that makes the changes the ticket asks for (:mod:`.ticket`): one per
        change, one for the reply, one per order change the reply must confirm; 1 for a question alone."""
        n = self._checks.get(task.task_id)
        if n is None:
            n = self._checks[task.task_id] = ticket_changes(task.prompt).checks
        return n

    def tool_answers(self, task: Task, call: ToolCall, result: ToolResult) -> bool:
        """A read answers when it returns something: lookups, arithmetic and the catalogue answer with their
        output; record reads when the record names what was asked or one of the ticket's keys."""
        if not result.ok or not result.output.strip():
            return False
        return call.name in _ANSWER_IS_THE_OUTPUT or super().tool_answers(task, call, result)

    def observe_bill(self, task: Task, index: int) -> Mapping[str, float]:
        """Each observation (the profile, an order) is a record read from the order service."""
        return ORDER_SERVICE

    def knowledge_signal(self, task: Task, ctx: Context, call: ToolCall | None = None) -> float:
        """Tool calls: a read tool with valid arguments (+1), else -1. Drafts: every plan call is a known tool
        with valid arguments whose order, user, item and payment-method ids exist in the store (+1), else -1."""
        if call is not None:
            return super().knowledge_signal(task, ctx, call) if call.name in EVIDENCE_TOOLS else -1.0
        if ctx.draft is None:
            return 0.0
        content = ctx.draft.content
        found = self._plans_known.get(content)
        if found is None:
            found = self._plan_signal(content)
            self._plans_known.put(content, found)
        return found

    def _plan_signal(self, content: str) -> float:
        """+1 when every call of the draft's plan is known with valid arguments and existing ids, else -1."""
        try:
            calls = parse_draft(content).calls
        except DraftFormatError:
            return -1.0
        return 1.0 if all(self._known_ids(c) for c in calls) else -1.0

    def _known_ids(self, call: ToolCall) -> bool:
        if validate_call(self.tools, call):
            return False
        tables = self.snapshot.tables
        args = call.args
        order = tables["orders"].get(args.get("order_id", "")) if "order_id" in args else {}
        if order is None or ("user_id" in args and args["user_id"] not in tables["users"]):
            return False
        items = list(args.get("item_ids", [])) + list(args.get("new_item_ids", []))
        if any(i not in self.snapshot.item_product for i in items):
            return False
        if "payment_method_id" in args and order:
            owner = tables["users"].get(order["user_id"], {})
            return args["payment_method_id"] in owner.get("payment_methods", {})
        return True


def _stated_in(ticket: str, plan: tuple[ToolCall, ...], outputs: tuple[str, ...]) -> bool:
    """Whether the ticket asks for changes, states every string the plan writes and asks for no information: a
    plan a model can write from the ticket alone (an empty plan is not: refusing needs the facts)."""
    if outputs or not plan:
        return False
    values = [v for c in plan for a in c.args.values() for v in (a if isinstance(a, list) else [a])]
    return all(isinstance(v, str) and v in ticket for v in values)


@lru_cache(maxsize=8)
def load_tau_retail_domain(data_dir: str | None = None) -> TauRetailDomain:
    """The retail domain over ``data_dir`` (either public layout), or over this project's synthetic store in
    ``envs_data/tau_retail`` when ``data_dir`` is ``None``. Cached: vector envs share one load."""
    return TauRetailDomain(load_dataset(data_dir if data_dir is not None else data_path("tau_retail")))
