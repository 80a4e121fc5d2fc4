"""τ-retail's kept results against the definitions they replace: rewards, check verdicts and plan signals kept per
(task data, draft) equal to those computed anew, on every candidate of every task, and never answering for
another task's data; the ticket's products found with patterns compiled once equal to a pattern per search; the
keys and check counts taken at load equal to those taken anew."""

from __future__ import annotations

import dataclasses
import re

import pytest

from harness_gym.core.types import Context, Draft, ToolCall
from harness_gym.domains.tau_retail import grader
from harness_gym.domains.tau_retail.checker import verify
from harness_gym.domains.tau_retail.domain import TauRetailDomain, load_tau_retail_domain
from harness_gym.domains.tau_retail.drafts import DraftFormatError, DraftMemo, encode_draft, parse_draft
from harness_gym.domains.tau_retail.grader import MAX_REPLY_CHARS, OUTPUT_MATCHES, rewards
from harness_gym.domains.tau_retail.ticket import ticket_changes, ticket_ids, ticket_products


@pytest.fixture(scope="module")
def synthetic() -> TauRetailDomain:
    return load_tau_retail_domain(None)


def _drafts(task) -> list[str]:
    plan = task.payload.gold_plan
    return [c.content for c in task.candidates] + [
        "not json", encode_draft(plan, "x" * (MAX_REPLY_CHARS + 1)), encode_draft([], ""),
        encode_draft([ToolCall("cancel_pending_order", {"order_id": "#W0", "reason": "no longer needed"})], "ok")]


def _plan_signal_by_definition(domain: TauRetailDomain, content: str) -> float:
    try:
        calls = parse_draft(content).calls
    except DraftFormatError:
        return -1.0
    return 1.0 if all(domain._known_ids(c) for c in calls) else -1.0


def _reply(content: str) -> str:
    try:
        return parse_draft(content).reply
    except DraftFormatError:
        return ""


def test_kept_rewards_verdicts_and_signals_equal_those_computed_anew(synthetic):
    for task in synthetic.all_tasks():
        data = task.payload
        for content in _drafts(task):
            draft = Draft(content, 0, 1)
            for _ in range(2):  # computed (or found from the load), then kept
                assert rewards(data, content) == grader._rewards(data, content, MAX_REPLY_CHARS), task.task_id
                got = synthetic.check(task, draft, None)
                assert got == synthetic._check(task, draft), task.task_id
                if len(_reply(content)) <= MAX_REPLY_CHARS:
                    assert got == verify(data, content)
                ctx = Context(task=task, draft=draft)
                assert synthetic.knowledge_signal(task, ctx) == _plan_signal_by_definition(synthetic, content)


def test_a_kept_reward_is_a_copy_and_answers_for_its_own_task_data_only(synthetic):
    task = synthetic.all_tasks()[0]
    reference = task.reference.content
    first = rewards(task.payload, reference)
    assert set(first) == set(OUTPUT_MATCHES) and min(first.values()) == 1.0
    first["strict"] = -1.0  # a caller's change does not reach the kept result
    assert rewards(task.payload, reference)["strict"] == 1.0
    other = dataclasses.replace(task.payload, gold_hash="0" * 64)  # equal text, other data: never the kept answer
    assert rewards(other, reference) == dict.fromkeys(OUTPUT_MATCHES, 0.0)
    memo: DraftMemo[int] = DraftMemo(1024)
    memo.put(task.payload, "x", 1)
    assert memo.get(task.payload, "x") == 1 and memo.get(other, "x") is None and memo.get(task.payload, "y") is None


def _products_by_definition(ticket: str, product_names: list[str]) -> list[str]:
    text = ticket.lower()
    return [n for n in dict.fromkeys(p.lower() for p in product_names) if re.search(rf"\b{re.escape(n)}\b", text)]


def test_ticket_products_equal_a_pattern_per_search(synthetic):
    names = [*synthetic._product_names, "T-Shirt", "Shirt", "A+B (XL)", "shirt", "Mug.", "e"]
    tickets = [t.prompt for t in synthetic.all_tasks()] + [
        "I want a t-shirt and a SHIRT, an a+b (xl) and a mug. E", "tshirt shirts", "", "a+b (xl)x"]
    for ticket in tickets:
        assert ticket_products(ticket, names) == _products_by_definition(ticket, names), ticket


def test_keys_and_check_counts_taken_at_load_equal_those_taken_anew(synthetic):
    for task in synthetic.all_tasks():
        assert synthetic.task_keys(task) == tuple(ticket_ids(task.prompt)
                                                  + ticket_products(task.prompt, synthetic._product_names))
        assert synthetic.n_visible_checks(task) == ticket_changes(task.prompt).checks
