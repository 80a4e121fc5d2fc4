"""CHECK for retail drafts: a dry run of the plan on a copy of the database plus the policy rules a careful
agent verifies before acting.

Rules, in the order they are checked (the first violation is reported):

1. the draft parses as ``{"plan": [...], "reply": "..."}``;
2. every plan step is a plan tool (a write or ``transfer_to_human_agents``) with schema-valid arguments;
3. every write acts on the ticket's customer: their profile, or an order they own;
4. ``transfer_to_human_agents`` is the last step (the conversation ends with it);
5. no item is exchanged or modified into itself;
6. the dry run of each step succeeds (order status, item in the order, same product, availability, payment
   method of the customer, original method or gift card for refunds, gift-card balance, once per order);
7. the reply is not empty and names every order the plan changes.

Every check is evaluated, also after a failure (a refused step changes nothing, as in the benchmark), and
counted: ``n_total`` is one per plan step (rules 2-6), one for the reply (not empty) and one per plan step on an
order (the reply names it). The feedback names the first problem.

The checker never sees the gold actions or the required outputs: a plan that runs cleanly but does the
wrong thing (wrong variant, wrong order of the same customer, a missing write, missing information)
passes, and only the grader catches it.
"""

from __future__ import annotations

from harness_gym.core.tool_calls import validate_call
from harness_gym.core.types import CheckResult, ToolCall
from harness_gym.domains.tau_retail.drafts import DraftFormatError, RetailTaskData, parse_draft
from harness_gym.domains.tau_retail.store import RetailDB
from harness_gym.domains.tau_retail.tools import PLAN_TOOLS, TOOL_SPECS, WRITE_TOOLS, call_once

SPECIFICITY_FORMAT = 0.9
"""A malformed draft or call: the message names the step and the field."""
SPECIFICITY_DRY_RUN = 0.8
"""A refused call or a policy violation: the message names the step, the object and the rule."""
SPECIFICITY_REPLY = 0.6
"""The reply misses a confirmation: the message names what is missing, not what to write."""


def _owner_problem(data: RetailTaskData, db: RetailDB, name: str, args: dict) -> str:
    if data.user_id is None or name not in WRITE_TOOLS:
        return ""
    if name == "modify_user_address":
        uid = args["user_id"]
        return "" if uid == data.user_id else f"user {uid} is not the customer of this ticket ({data.user_id})"
    order = db.get("orders", args["order_id"])
    if order is not None and order["user_id"] != data.user_id:
        return f"order {args['order_id']} belongs to {order['user_id']}, not to the customer {data.user_id}"
    return ""


def _step_problem(data: RetailTaskData, db: RetailDB, i: int, call: ToolCall, last: bool) -> tuple[str, float, bool]:
    """What is wrong with plan step ``i`` (``""`` when nothing), the feedback's specificity, and whether the step
    reached the dry run (a request to the order service). A refused step changes nothing, as in the benchmark."""
    step = f"step {i + 1} {call.name}"
    if call.name not in PLAN_TOOLS:
        return f"{step}: not a write or transfer tool; plans hold only the changes to make", SPECIFICITY_FORMAT, False
    problem = validate_call(TOOL_SPECS, call)
    if problem:
        return f"{step}: {problem}", SPECIFICITY_FORMAT, False
    args = dict(call.args)
    problem = _owner_problem(data, db, call.name, args)
    if problem:
        return f"{step}: {problem}", SPECIFICITY_DRY_RUN, False
    if call.name == "transfer_to_human_agents" and not last:
        return f"{step}: the transfer must be the last step; nothing runs after it", SPECIFICITY_DRY_RUN, False
    same = [old for old, new in zip(args.get("item_ids", []), args.get("new_item_ids", [])) if old == new]
    if same:
        return f"{step}: item {same[0]} would be exchanged for itself", SPECIFICITY_DRY_RUN, False
    ok, out = call_once(db, call)
    if not ok:
        return f"{step} on {args.get('order_id', args.get('user_id', ''))}: {out}", SPECIFICITY_DRY_RUN, True
    return "", 0.0, True


def verify(data: RetailTaskData, content: str) -> CheckResult:
    """Check a draft's plan and reply; the feedback names the first problem found.

    Every check is evaluated and counted (``n_passed`` / ``n_total``): one per plan step (rules 2-6), one for a
    non-empty reply and one per plan step on an order (the reply names that order). A draft that does not
    parse fails its one format check. What the check runs beyond local rules is the dry run of each step that
    reaches it, a request to the order service: ``billed`` ``api_call:internal`` per such step.
    """
    try:
        draft = parse_draft(content)
    except DraftFormatError as exc:
        return CheckResult(False, str(exc), SPECIFICITY_FORMAT, n_passed=0, n_total=1, billed={})
    db = RetailDB(data.snapshot)
    problems: list[tuple[str, float]] = []
    dry_runs = n_passed = 0
    order_steps: list[str] = []
    for i, call in enumerate(draft.calls):
        problem, specificity, ran = _step_problem(data, db, i, call, i == len(draft.calls) - 1)
        dry_runs += ran
        if problem:
            problems.append((problem, specificity))
        else:
            n_passed += 1
        if isinstance(call.args.get("order_id"), str) and call.name in PLAN_TOOLS:
            order_steps.append(call.args["order_id"])
    if draft.reply.strip():
        n_passed += 1
    else:
        problems.append(("the reply to the customer is empty", SPECIFICITY_REPLY))
    for order_id in order_steps:
        if order_id in draft.reply:
            n_passed += 1
        else:
            problems.append((f"the reply does not confirm the change to order {order_id}", SPECIFICITY_REPLY))
    n_total = len(draft.calls) + 1 + len(order_steps)
    billed = {"api_call:internal": float(dry_runs)} if dry_runs else {}
    if problems:
        message, specificity = problems[0]
        return CheckResult(False, f"{message} ({n_passed} of {n_total} checks pass)", specificity,
                           n_passed=n_passed, n_total=n_total, billed=billed)
    return CheckResult(True, f"dry run: {len(draft.calls)} step(s) succeed and follow the policy; reply confirms "
                             f"{len(set(order_steps))} order(s) ({n_total} of {n_total} checks pass)", 0.0,
                       n_passed=n_passed, n_total=n_total, billed=billed)
