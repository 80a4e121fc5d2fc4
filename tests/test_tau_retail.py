"""HarnessTauRetail-v1: loaders of both public layouts, the retail tools, the plan verifier, the benchmark reward
on the real τ² retail data, the candidate bank and the env."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from pathlib import Path

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.paths import data_path
from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.types import Context, Draft, ToolCall
from harness_gym.domains.tau_retail import generate
from harness_gym.domains.tau_retail.checker import verify
from harness_gym.domains.tau_retail.domain import TauRetailDomain, load_tau_retail_domain
from harness_gym.domains.tau_retail.drafts import compose_reply, encode_draft, replay, replay_effects
from harness_gym.domains.tau_retail.grader import missing_outputs, reward, rewards
from harness_gym.domains.tau_retail.mutations import Perturber
from harness_gym.domains.tau_retail.store import RetailDB
from harness_gym.domains.tau_retail.ticket import ticket_changes
from harness_gym.domains.tau_retail.tools import WRITE_TOOLS, call_once
from harness_gym.domains.tau_retail.upstream import OOD_HELD_OUT_TOOL, TAU2_FAILING_GOLD_WRITES, load_dataset
from harness_gym_baselines.cli import main as cli_main
from tests.hook_cases import assert_hooks_read_no_hidden_field
from tests.shared_data import SHARED_DATA, shared_data_mark

REAL = SHARED_DATA / "tau2-retail"
needs_real = shared_data_mark("tau2-retail", "db.json")



@pytest.fixture(scope="module")
def real() -> TauRetailDomain:
    return load_tau_retail_domain(str(REAL.resolve()))


@pytest.fixture(scope="module")
def synthetic() -> TauRetailDomain:
    return load_tau_retail_domain(None)


# ----- a tiny store in both layouts -----------------------------------------------------------------

USERS = {
    "ana_ito_1111": {"user_id": "ana_ito_1111", "name": {"first_name": "Ana", "last_name": "Ito"},
                     "address": {"address1": "1 Oak Street", "address2": "", "city": "Denver", "country": "USA",
                                 "state": "CO", "zip": "80201"},
                     "email": "ana.ito@example.com", "orders": ["#W1", "#W2"],
                     "payment_methods": {
                         "credit_card_1": {"source": "credit_card", "id": "credit_card_1", "brand": "visa",
                                           "last_four": "1234"},
                         "credit_card_9": {"source": "credit_card", "id": "credit_card_9", "brand": "amex",
                                           "last_four": "9999"},
                         "gift_card_1": {"source": "gift_card", "id": "gift_card_1", "balance": 10.0}}},
    "bo_kim_2222": {"user_id": "bo_kim_2222", "name": {"first_name": "Bo", "last_name": "Kim"},
                    "address": {"address1": "2 Elm Street", "address2": "Suite 5", "city": "Austin", "country": "USA",
                                "state": "TX", "zip": "73301"},
                    "email": "bo.kim@example.com", "orders": ["#W3"],
                    "payment_methods": {"paypal_2": {"source": "paypal", "id": "paypal_2"}}},
}
PRODUCTS = {
    "100": {"name": "Lamp", "product_id": "100", "variants": {
        "1001": {"item_id": "1001", "options": {"color": "white"}, "available": True, "price": 50.0},
        "1002": {"item_id": "1002", "options": {"color": "black"}, "available": True, "price": 55.5},
        "1003": {"item_id": "1003", "options": {"color": "red"}, "available": False, "price": 40.0}}},
    "200": {"name": "Mug", "product_id": "200", "variants": {
        "2001": {"item_id": "2001", "options": {"size": "small"}, "available": True, "price": 10.0},
        "2002": {"item_id": "2002", "options": {"size": "large"}, "available": True, "price": 12.25}}},
}


def _order(oid: str, uid: str, status: str, items: list[str], method: str) -> dict:
    rows = [{"name": PRODUCTS[i[0] + "00"]["name"], "product_id": i[0] + "00", "item_id": i,
             "price": PRODUCTS[i[0] + "00"]["variants"][i]["price"],
             "options": PRODUCTS[i[0] + "00"]["variants"][i]["options"]} for i in items]
    total = round(sum(r["price"] for r in rows), 2)
    return {"order_id": oid, "user_id": uid, "address": USERS[uid]["address"], "items": rows, "status": status,
            "fulfillments": [], "payment_history": [{"transaction_type": "payment", "amount": total,
                                                     "payment_method_id": method}]}


ORDERS = {"#W1": _order("#W1", "ana_ito_1111", "pending", ["1001", "2001"], "credit_card_1"),
          "#W2": _order("#W2", "ana_ito_1111", "delivered", ["1002"], "credit_card_1"),
          "#W3": _order("#W3", "bo_kim_2222", "pending", ["2002"], "paypal_2")}
V1_TASKS = {
    "tasks_train.json": [{"user_id": "ana_ito_1111", "instruction": "Cancel #W1, I ordered it by mistake.",
                          "actions": [{"name": "get_order_details", "kwargs": {"order_id": "#W1"}},
                                      {"name": "cancel_pending_order",
                                       "kwargs": {"order_id": "#W1", "reason": "ordered by mistake"}}],
                          "outputs": []}],
    "tasks_dev.json": [{"user_id": "ana_ito_1111", "instruction": "What did I pay for #W2?",
                        "actions": [{"name": "get_order_details", "kwargs": {"order_id": "#W2"}}],
                        "outputs": ["55.5"]}],
    "tasks_test.json": [{"user_id": "ana_ito_1111", "instruction": "Exchange my black lamp in #W2 for a white one, "
                                                                   "refund to my gift card.",
                         "actions": [{"name": "exchange_delivered_order_items",
                                      "kwargs": {"order_id": "#W2", "item_ids": ["1002"], "new_item_ids": ["1001"],
                                                 "payment_method_id": "gift_card_1"}}],
                         "outputs": []},
                        {"user_id": "bo_kim_2222", "instruction": "Pay nothing, just tell me my mug price.",
                         "actions": [], "outputs": ["12.25"]}],
}


def write_v1(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, value in {"users.json": USERS, "orders.json": ORDERS, "products.json": PRODUCTS, **V1_TASKS}.items():
        (root / name).write_text(json.dumps(value), encoding="utf-8")
    return root


def write_tau2(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    tasks = []
    for i, rec in enumerate(t for name in V1_TASKS for t in V1_TASKS[name]):
        tasks.append({"id": str(i), "user_scenario": {"instructions": {"reason_for_call": rec["instruction"],
                                                                       "known_info": f"You are {rec['user_id']}."}},
                      "initial_state": None,
                      "evaluation_criteria": {"actions": [{"action_id": f"{i}_{j}", "name": a["name"],
                                                           "arguments": a["kwargs"]}
                                                          for j, a in enumerate(rec["actions"])],
                                              "communicate_info": rec["outputs"], "nl_assertions": None}})
    (root / "db.json").write_text(json.dumps({"users": USERS, "orders": ORDERS, "products": PRODUCTS}))
    (root / "tasks.json").write_text(json.dumps(tasks, indent=1))
    (root / "split_tasks.json").write_text(json.dumps({"train": ["0", "1"], "test": ["2", "3"],
                                                      "base": ["0", "1", "2", "3"]}))
    return root


# ----- loaders ----------------------------------------------------------------------------------------

def test_both_layouts_load_the_same_tickets(tmp_path):
    v1 = TauRetailDomain(load_dataset(write_v1(tmp_path / "v1")))
    tau2 = TauRetailDomain(load_dataset(write_tau2(tmp_path / "tau2")))
    assert v1.counts() == {"train": 1, "val": 1, "test": 2, "ood": 0}
    assert v1.task("test-0").family == "exchange" and v1.task("val-0").family == "info"
    assert sum(tau2.counts().values()) == 4 and tau2.counts()["test"] == 2
    for domain in (v1, tau2):
        for task in domain.all_tasks():
            assert domain.grade(task, Draft(task.reference.content, 0, 1), None) == 1.0
            assert verify(task.payload, task.reference.content).passed


@pytest.mark.parametrize("layout", ["v1", "tau2"])
def test_gym_make_with_data_dir(tmp_path, layout):
    root = (write_v1 if layout == "v1" else write_tau2)(tmp_path / layout)
    env = gym.make("HarnessTauRetail-v1", data_dir=str(root), split="test")
    env.reset(seed=0)
    for action in (0, 2, 3, 4, 6):
        *_, terminated, _, info = env.step(action)
    assert terminated and info["quality"] in (0.0, 1.0)
    env.close()


def _tau2_broken(tmp_path: Path, edit) -> Path:
    root = write_tau2(tmp_path / "broken")
    tasks = json.loads((root / "tasks.json").read_text())
    edit(tasks)
    (root / "tasks.json").write_text(json.dumps(tasks, indent=1))
    return root


def test_tau2_malformed_files_name_file_task_and_field(tmp_path):
    root = _tau2_broken(tmp_path, lambda t: t[2]["evaluation_criteria"]["actions"][0].update(name="refund_all"))
    with pytest.raises(TaskFileError, match=r"tasks\.json, task '2', field 'evaluation_criteria\.actions\[0\]\.name'"
                                            r": unknown tool 'refund_all'"):
        load_dataset(root)
    root = _tau2_broken(tmp_path, lambda t: t[1].pop("evaluation_criteria"))
    with pytest.raises(TaskFileError, match=r"tasks\.json, task '1', field 'evaluation_criteria': missing"):
        load_dataset(root)
    root = _tau2_broken(tmp_path, lambda t: t[0]["evaluation_criteria"]["actions"][0].pop("arguments"))
    with pytest.raises(TaskFileError, match=r"task '0', field 'evaluation_criteria\.actions\[0\]\.arguments'"):
        load_dataset(root)
    root = _tau2_broken(tmp_path, lambda t: t[3]["evaluation_criteria"].update(communicate_info="12.25"))
    with pytest.raises(TaskFileError, match=r"task '3', field 'evaluation_criteria\.communicate_info'"):
        load_dataset(root)
    text = (root / "tasks.json").read_text().splitlines()
    text[5] = text[5] + ","
    (root / "tasks.json").write_text("\n".join(text))
    with pytest.raises(TaskFileError, match=r"tasks\.json, line \d+: invalid JSON"):
        load_dataset(root)


def test_v1_malformed_files_name_file_task_and_field(tmp_path):
    root = write_v1(tmp_path / "v1")
    tasks = json.loads((root / "tasks_test.json").read_text())
    tasks[1].pop("instruction")
    (root / "tasks_test.json").write_text(json.dumps(tasks))
    with pytest.raises(TaskFileError, match=r"tasks_test\.json, task 'test-1', field 'instruction': missing"):
        load_dataset(root)
    tasks[1]["instruction"] = "x"
    tasks[0]["actions"][0]["name"] = "exchange_everything"
    (root / "tasks_test.json").write_text(json.dumps(tasks))
    with pytest.raises(TaskFileError, match=r"task 'test-0', field 'actions\[0\]\.name': unknown tool"):
        load_dataset(root)
    orders = dict(ORDERS)
    orders["#W2"] = {k: v for k, v in ORDERS["#W2"].items() if k != "status"}
    (root / "orders.json").write_text(json.dumps(orders))
    with pytest.raises(TaskFileError, match=r"orders\.json, field \"orders\['#W2'\]\.status\": missing"):
        load_dataset(root)
    (root / "orders.json").write_text("{")
    with pytest.raises(TaskFileError, match=r"orders\.json, line 1: invalid JSON"):
        load_dataset(root)
    with pytest.raises(TaskFileError, match="expected db.json"):
        load_dataset(tmp_path / "nothing")


# ----- tools ----------------------------------------------------------------------------------------

@pytest.fixture()
def tiny(tmp_path) -> TauRetailDomain:
    return TauRetailDomain(load_dataset(write_v1(tmp_path / "v1")))


def _run(db: RetailDB, name: str, **args) -> tuple[bool, str]:
    return call_once(db, ToolCall(name, args))


def test_write_tools_follow_the_public_rules(tiny):
    db = RetailDB(tiny.snapshot)
    assert _run(db, "cancel_pending_order", order_id="#W2", reason="no longer needed")[1].startswith("order #W2 is")
    assert "invalid reason" in _run(db, "cancel_pending_order", order_id="#W1", reason="changed my mind")[1]
    assert "not a variant of product" in _run(db, "exchange_delivered_order_items", order_id="#W2", item_ids=["1002"],
                                              new_item_ids=["2001"], payment_method_id="credit_card_1")[1]
    assert "not available" in _run(db, "exchange_delivered_order_items", order_id="#W2", item_ids=["1002"],
                                   new_item_ids=["1003"], payment_method_id="credit_card_1")[1]
    assert "original payment method" in _run(db, "return_delivered_order_items", order_id="#W2", item_ids=["1002"],
                                             payment_method_id="credit_card_9")[1]
    assert "insufficient" in _run(db, "modify_pending_order_payment", order_id="#W1",
                                  payment_method_id="gift_card_1")[1]
    assert db.state_hash() == RetailDB(tiny.snapshot).state_hash()  # refusals change nothing
    ok, out = _run(db, "modify_pending_order_items", order_id="#W1", item_ids=["1001", "2001"],
                   new_item_ids=["1002", "2002"], payment_method_id="gift_card_1")
    assert ok and json.loads(out)["status"] == "pending (item modified)"
    assert db.get("users", "ana_ito_1111")["payment_methods"]["gift_card_1"]["balance"] == 2.25  # 10 - 7.75
    assert "only once" in _run(db, "modify_pending_order_items", order_id="#W1", item_ids=["1002"],
                               new_item_ids=["1001"], payment_method_id="credit_card_1")[1]
    ok, out = _run(db, "cancel_pending_order", order_id="#W3", reason="ordered by mistake")
    assert ok and [p["transaction_type"] for p in json.loads(out)["payment_history"]] == ["payment", "refund"]
    ok, out = _run(db, "return_delivered_order_items", order_id="#W2", item_ids=["1002"],
                   payment_method_id="gift_card_1")
    assert ok and json.loads(out)["return_items"] == ["1002"]
    assert tiny.snapshot.tables["orders"]["#W1"]["status"] == "pending"  # the snapshot is never written
    assert set(db._changed) == {("orders", "#W1"), ("users", "ana_ito_1111"), ("orders", "#W3"), ("orders", "#W2")}


def test_read_tools_and_calculate(tiny):
    db = RetailDB(tiny.snapshot)
    assert _run(db, "find_user_id_by_name_zip", first_name="ANA", last_name="itō", zip="80201") == (True, "ana_ito_1111")
    assert _run(db, "find_user_id_by_email", email="nobody@example.com") == (False, "user not found")
    assert json.loads(_run(db, "list_all_product_types")[1]) == {"Lamp": "100", "Mug": "200"}
    assert json.loads(_run(db, "get_item_details", item_id="2002")[1])["price"] == 12.25
    assert _run(db, "calculate", expression="(55.5 + 12.25) / 3") == (True, "22.58")
    assert _run(db, "calculate", expression="__import__('os')")[0] is False
    assert _run(db, "calculate", expression="1 / 0")[0] is False


def test_tool_action_rejects_bad_arguments_and_writes(tiny):
    task = tiny.task("train-0")
    ctx = Context(task=task)
    assert tiny.run_tool(task, ToolCall("get_order_details", {"order_id": "#W1"}), ctx, None).ok
    for bad in (ToolCall("get_order_details", {}), ToolCall("get_order_details", {"order_id": 7}),
                ToolCall("get_order_details", {"order_id": ["#W1"]}), ToolCall("get_orders", {"order_id": "#W1"})):
        result = tiny.run_tool(task, bad, ctx, None)
        assert not result.ok and result.error
    refused = tiny.run_tool(task, ToolCall("cancel_pending_order", {"order_id": "#W1", "reason": "no longer needed"}),
                            ctx, None)
    assert not refused.ok and "plan" in refused.error


def test_checker_names_the_failing_step_and_policy(tiny):
    data = tiny.task("test-0").payload
    other = encode_draft([ToolCall("cancel_pending_order", {"order_id": "#W3", "reason": "no longer needed"})],
                         "Order #W3 is cancelled.")
    result = verify(data, other)
    assert not result.passed and "belongs to bo_kim_2222" in result.feedback and result.specificity >= 0.8
    wrong_status = encode_draft([ToolCall("cancel_pending_order", {"order_id": "#W2", "reason": "no longer needed"})],
                                "Order #W2 is cancelled.")
    assert "step 1 cancel_pending_order on #W2: order #W2 is 'delivered'" in verify(data, wrong_status).feedback
    unconfirmed = encode_draft([ToolCall("cancel_pending_order", {"order_id": "#W1", "reason": "no longer needed"})],
                               "Done!")
    assert "does not confirm the change to order #W1" in verify(data, unconfirmed).feedback
    assert not verify(data, "not json").passed and reward(data, "not json") == 0.0


# ----- the benchmark reward on the real data ------------------------------------------------------

@needs_real
def test_real_splits(real):
    counts = real.counts()
    assert counts["train"] + counts["val"] + counts["ood"] == 74 and counts["test"] == 40 and counts["val"] > 0
    # ood: the 13 published train tasks that change a pending order's address; none is left in train or val
    assert counts["ood"] == 13
    assert all(any(a.name == OOD_HELD_OUT_TOOL for a in t.payload.actions) for t in real.tasks("ood"))
    assert not any(a.name == OOD_HELD_OUT_TOOL for s in ("train", "val") for t in real.tasks(s) for a in t.payload.actions)


@needs_real
def test_replaying_gold_actions_earns_reward_one_on_every_real_task(real):
    """The gold actions earn 1: under the benchmark's match with a reply confirming every action, under the strict
    match with a reply confirming the actions that took effect; a reply that confirms a write that failed states
    figures of no effect, which the strict match refuses (task 105, whose only write fails)."""
    failing, strict_refused = set(), set()
    for task in real.all_tasks():
        data = task.payload
        every = rewards(data, encode_draft(data.actions, compose_reply(data.actions, data.outputs)))
        assert every["substring"] == 1.0, task.task_id
        strict_refused |= {task.task_id} if every["strict"] == 0.0 else set()
        took_effect = replay_effects(data.snapshot, data.actions)[1]
        assert reward(data, encode_draft(data.actions, compose_reply(took_effect, data.outputs))) == 1.0, task.task_id
        db = RetailDB(data.snapshot)
        if any(not call_once(db, c)[0] and c.name in WRITE_TOOLS for c in data.actions):
            failing.add(task.task_id)
    assert failing == set(TAU2_FAILING_GOLD_WRITES) and strict_refused == {"105"}


@needs_real
def test_empty_plan_earns_reward_one_only_without_write_actions(real):
    earns = {t.task_id for t in real.all_tasks()
             if reward(t.payload, encode_draft([], compose_reply([], t.payload.outputs))) == 1.0}
    without_writes = {t.task_id for t in real.all_tasks() if not any(a.name in WRITE_TOOLS for a in t.payload.actions)}
    assert without_writes and earns == without_writes | {"105"}  # 105: its only write fails (see the known list)


@needs_real
def test_each_perturbation_earns_zero_where_it_changes_the_db(real):
    changed_by_kind: Counter[str] = Counter()
    strict_differs: set[tuple[str, str]] = set()
    for task in real.all_tasks():
        data = task.payload
        for kind, plan in Perturber(data.snapshot, data.user_id, data.gold_plan, seed=1).all():
            changed = replay(data.snapshot, plan).state_hash() != data.gold_hash
            got = rewards(data, encode_draft(plan, compose_reply(plan, data.outputs)))
            assert got["substring"] == float(not changed), kind
            if got["strict"] != float(not changed):
                strict_differs.add((task.task_id, kind))
            changed_by_kind[kind] += changed
        if data.outputs:
            assert reward(data, encode_draft(data.gold_plan, compose_reply(data.gold_plan, ()))) == 0.0
    kinds = ("wrong_variant", "wrong_product", "wrong_item", "wrong_payment", "wrong_order", "wrong_reason",
             "wrong_address", "missing_write", "extra_write")
    assert all(changed_by_kind[k] > 0 for k in kinds), changed_by_kind
    # Task 22 changes the customer's address and then puts it back; a wrong first address leaves the database
    # as the gold one, but the reply confirming it states figures no record holds at the end (strict: 0).
    assert strict_differs == {("22", "wrong_address")}


def test_outputs_are_compared_like_the_benchmark():
    assert missing_outputs("The total is $1,126.04.", ["1126.04"]) == []
    assert missing_outputs("Your Camera costs 481.5", ["camera", "481.50"]) == ["481.50"]


# ----- candidate bank -------------------------------------------------------------------------------

def _bank_stats(domain: TauRetailDomain) -> Counter[str]:
    stats: Counter[str] = Counter()
    for task in domain.all_tasks():
        for cand in task.candidates:
            quality = domain.grade(task, Draft(cand.content, 0, 1), None)
            assert cand.correct == (quality == 1.0), (task.task_id, cand.kind)
            passed = verify(task.payload, cand.content).passed
            if cand.kind == "reference":
                assert passed, task.task_id
            elif not cand.correct:
                stats["wrong_pass" if passed else "wrong_fail"] += 1
    return stats


def test_synthetic_bank_agrees_with_grader_and_checker(synthetic):
    assert sum(synthetic.counts().values()) >= 200 and all(synthetic.counts().values())
    stats = _bank_stats(synthetic)
    assert stats["wrong_pass"] > 0 and stats["wrong_fail"] > 0


@needs_real
def test_real_bank_agrees_with_grader_and_checker(real):
    stats = _bank_stats(real)
    assert stats["wrong_pass"] > 0 and stats["wrong_fail"] > 0


def test_synthetic_store_is_what_the_generator_writes(tmp_path):
    counts = generate.generate(tmp_path, seed=0)
    assert counts == {"train": 140, "val": 40, "test": 50, "ood": 30}
    for name in sorted(p.name for p in data_path("tau_retail").iterdir()):
        assert (tmp_path / name).read_bytes() == data_path("tau_retail", name).read_bytes(), name


def test_knowledge_signal_on_drafts(tiny):
    task = tiny.task("test-0")
    ctx = Context(task=task, draft=Draft(task.reference.content, 0, 1))
    assert tiny.knowledge_signal(task, ctx) == 1.0
    bogus = encode_draft([ToolCall("cancel_pending_order", {"order_id": "#W999", "reason": "no longer needed"})], "x")
    ctx.draft = Draft(bogus, -1, 2)
    assert tiny.knowledge_signal(task, ctx) == -1.0


# ----- env and CLI ----------------------------------------------------------------------------------

def test_env_episodes_on_the_synthetic_store():
    env = gym.make("HarnessTauRetail-v1", split="ood")
    for seed in range(3):
        env.reset(seed=seed)
        for action in (0, 1, 2, 2, 3, 4, 5, 6):
            *_, terminated, truncated, info = env.step(action)
            if terminated:
                break
        assert terminated and not truncated and info["quality"] in (0.0, 1.0)
    env.close()


@pytest.mark.parametrize("with_data_dir", [False, pytest.param(True, marks=needs_real)])
def test_cli_eval(capsys, with_data_dir):
    extra = ["--env-kwarg", f"data_dir={REAL}"] if with_data_dir else []
    quality = {}
    for policy in ("oracle", "static", "forced-check"):
        assert cli_main(["eval", "HarnessTauRetail-v1", "--policy", policy, "--split", "test", "--episodes", "10",
                         "--json", *extra]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["episodes"] == 10 and result["split"] == "test"
        quality[policy] = result["quality_mean"]
    assert quality["oracle"] > quality["static"], quality



# ----- the task mix and the harness signals (issue 23) -------------------------------------------------------

def _writes(task) -> int:
    return sum(a.name in WRITE_TOOLS for a in task.payload.actions)


def _changed_statuses(domain: TauRetailDomain, task) -> set[str]:
    orders = domain.snapshot.tables["orders"]
    return {orders[a.args["order_id"]]["status"] for a in task.payload.actions
            if a.name in WRITE_TOOLS and "order_id" in a.args}


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_synthetic_mix_follows_tau2_write_counts_in_every_split(synthetic, split):
    tasks = synthetic.tasks(split)
    counts = Counter(_writes(t) for t in tasks)
    expected = Counter(generate.WRITES_CYCLE)
    for writes, per_round in expected.items():  # dealt in the round's shares, so every split holds them
        assert abs(counts[writes] - per_round * len(tasks) / len(generate.WRITES_CYCLE)) <= 1, (writes, counts)
    with_question = [t for t in tasks if _writes(t) > 0 and t.payload.outputs]
    assert 0.25 <= len(with_question) / sum(_writes(t) > 0 for t in tasks) <= 0.35
    assert all(t.payload.outputs for t in tasks if _writes(t) == 0)
    about_orders = [t for t in tasks if any("order_id" in a.args for a in t.payload.actions)]
    named = sum("#W" in t.prompt for t in about_orders) / len(about_orders)
    assert 0.45 <= named <= 0.65  # half by id, plus described orders another order of the customer matches
    # in distribution, one ticket never changes both a pending and a delivered order: that is the ood split
    assert all(len(_changed_statuses(synthetic, t) & {"pending", "delivered"}) <= 1 for t in tasks)


def test_synthetic_ood_tickets_change_a_pending_and_a_delivered_order(synthetic):
    for task in synthetic.tasks("ood"):
        assert _writes(task) in (2, 3) and {"pending", "delivered"} <= _changed_statuses(synthetic, task)


def test_the_ticket_is_the_cue_for_the_evidence_a_task_needs(synthetic):
    stated = 0
    for task in synthetic.all_tasks():
        plan = task.payload.gold_plan
        assert ticket_changes(task.prompt).total == len(plan), task.task_id
        values = [v for c in plan for a in c.args.values() for v in (a if isinstance(a, list) else [a])]
        answerable = bool(plan) and not task.payload.outputs and all(v in task.prompt for v in values)
        no_evidence = not task.required_observations and not task.tool_calls and not task.relevant_docs
        assert answerable == no_evidence, task.task_id
        if answerable:
            stated += 1
            # the reference draft is written from the ticket alone: its plan's every value is in the text
            draft_plan = json.loads(task.reference.content)["plan"]
            assert all(str(v) in task.prompt for step in draft_plan for a in step["arguments"].values()
                       for v in (a if isinstance(a, list) else [a]))
        else:
            orders = synthetic.snapshot.tables["users"][task.payload.user_id]["orders"]
            described = {c.args["order_id"] for c in plan if "order_id" in c.args} - {
                o for o in orders if o in task.prompt}
            # an order the ticket describes without its id is needed evidence (its record on the console)
            assert {orders.index(o) + 1 for o in described} <= task.required_observations, task.task_id
    assert stated >= 10
    by_calls = Counter(len(t.tool_calls) for t in synthetic.all_tasks())
    assert set(by_calls) == {0, 1, 2, 3, 4}


def test_n_visible_checks_is_what_the_checker_counts_on_the_reference(synthetic):
    for task in synthetic.all_tasks():
        result = synthetic.check(task, Draft(task.reference.content, 0, 1), None)
        assert result.passed and result.n_passed == result.n_total == synthetic.n_visible_checks(task), task.task_id
    assert {synthetic.n_visible_checks(t) for t in synthetic.all_tasks()} >= {1, 3, 5, 7, 9}


@pytest.mark.parametrize("which,exact_at_least,within_one_at_least", [
    ("tau-v1-retail", 0.9, 0.95), pytest.param("tau2-retail", 0.35, 0.75, marks=needs_real)])
def test_the_change_parser_on_the_public_tickets(which, exact_at_least, within_one_at_least):
    """The public tickets are free text: the estimate of the changes (hence of the checks) is a heuristic there;
    measured: v1 488 of 520 exact, τ² 47 of 114 exact and 92 within one."""
    root = SHARED_DATA / which
    if not root.is_dir():
        pytest.skip(f"{root} is not here")
    domain = load_tau_retail_domain(str(root.resolve()))
    diffs = [ticket_changes(t.prompt).total - len(t.payload.gold_plan) for t in domain.all_tasks()]
    assert sum(d == 0 for d in diffs) / len(diffs) >= exact_at_least
    assert sum(abs(d) <= 1 for d in diffs) / len(diffs) >= within_one_at_least


def test_checker_counts_every_check_and_bills_each_dry_run(tiny):
    data = tiny.task("test-0").payload  # Ana: #W1 pending, #W2 delivered
    exchange = ToolCall("exchange_delivered_order_items", {"order_id": "#W2", "item_ids": ["1002"],
                                                          "new_item_ids": ["1001"], "payment_method_id": "gift_card_1"})
    cancel_w1 = ToolCall("cancel_pending_order", {"order_id": "#W1", "reason": "no longer needed"})
    good = verify(data, encode_draft([exchange, cancel_w1], "Order #W2 exchanged, order #W1 cancelled."))
    assert good.passed and (good.n_passed, good.n_total) == (5, 5) and good.billed == {"api_call:internal": 2.0}
    unconfirmed = verify(data, encode_draft([exchange, cancel_w1], "Order #W2 exchanged."))
    assert not unconfirmed.passed and (unconfirmed.n_passed, unconfirmed.n_total) == (4, 5)
    refused = ToolCall("cancel_pending_order", {"order_id": "#W2", "reason": "no longer needed"})  # delivered
    one_bad = verify(data, encode_draft([refused, cancel_w1], "Orders #W2 and #W1 cancelled."))
    assert (one_bad.n_passed, one_bad.n_total) == (4, 5) and "step 1" in one_bad.feedback
    assert one_bad.billed == {"api_call:internal": 2.0}  # both reached the order service's dry run
    foreign = ToolCall("cancel_pending_order", {"order_id": "#W3", "reason": "no longer needed"})  # Bo's order
    stopped = verify(data, encode_draft([foreign], "Order #W3 cancelled."))
    assert (stopped.n_passed, stopped.n_total) == (2, 3) and stopped.billed == {}  # refused before the service
    garbage = verify(data, "not json")
    assert (garbage.n_passed, garbage.n_total) == (0, 1)


def test_every_tool_declares_its_bill_and_a_real_call_bills_it(tiny):
    bills = {name: dict(spec.bills) for name, spec in tiny.tools.items()}
    assert bills.pop("calculate") == {"api_call:free": 1} and bills.pop("think") == {}
    assert bills and all(b == {"api_call:internal": 1} for b in bills.values()), bills
    task = tiny.task("train-0")
    ctx = Context(task=task)
    for call in (ToolCall("get_order_details", {"order_id": "#W1"}), ToolCall("calculate", {"expression": "1 + 2"}),
                 ToolCall("find_user_id_by_email", {"email": "ana.ito@example.com"}),
                 ToolCall("list_all_product_types", {})):
        result = tiny.run_tool(task, call, ctx, None)
        assert result.ok and result.billed is None and tiny.tool_answers(task, call, result), call
    think = ToolCall("think", {"thought": "the lamp"})
    assert not tiny.tool_answers(task, think, tiny.run_tool(task, think, ctx, None))
    write = ToolCall("cancel_pending_order", {"order_id": "#W1", "reason": "no longer needed"})
    refused = tiny.run_tool(task, write, ctx, None)
    assert not refused.ok and refused.billed == {} and not tiny.tool_answers(task, write, refused)
    assert all(dict(tiny.observe_bill(task, i)) == {"api_call:internal": 1} for i in range(len(task.observations)))


def test_task_keys_are_what_the_ticket_names(synthetic):
    for task in synthetic.all_tasks():
        keys = synthetic.task_keys(task)
        text = task.prompt.lower()
        assert keys and all(k in text for k in keys), task.task_id
        named = {o.lower() for o in re.findall(r"#W\d+", task.prompt)}
        assert named <= set(keys)
        user = synthetic.snapshot.tables["users"][task.payload.user_id]
        assert user["email"] in keys or user["address"]["zip"] in keys
        assert task.payload.user_id not in keys  # the ticket never names the user id: it is looked up


@pytest.mark.parametrize("which", ["synthetic", pytest.param("tau2-retail", marks=needs_real), "tau-v1-retail"])
def test_hooks_read_no_hidden_field(which, synthetic):
    if which == "synthetic":
        domain = synthetic
    else:
        root = SHARED_DATA / which
        if not root.is_dir():
            pytest.skip(f"{root} is not here")
        domain = load_tau_retail_domain(str(root.resolve()))
    scrub = lambda data: dataclasses.replace(data, actions=(), outputs=(), gold_hash="")  # noqa: E731
    assert_hooks_read_no_hidden_field(domain, domain.all_tasks()[::7], scrub)
    assert_hooks_read_no_hidden_field(domain, domain.all_tasks()[3::7], lambda data: None)  # the ticket only


def _uncached_state_hash(db: RetailDB) -> str:
    """:meth:`RetailDB.state_hash` as first defined: every changed record's canonical JSON taken anew."""
    import hashlib

    from harness_gym.domains.tau_retail.store import canonical

    h = hashlib.sha256(db.snapshot.fingerprint.encode())
    for table, key, rec in db.changed_records():
        h.update(f"\n{table}/{key}=".encode())
        h.update(canonical(rec).encode())
    return h.hexdigest()


def test_the_state_hash_and_record_texts_kept_between_edits_are_those_taken_anew(synthetic):
    checked = 0
    for task in synthetic.all_tasks():
        data = task.payload
        plans = [data.gold_plan, *(plan for _, plan in Perturber(data.snapshot, data.user_id, data.gold_plan,
                                                                    seed=1).all())]
        for plan in plans:
            db = RetailDB(data.snapshot)
            assert db.state_hash() == _uncached_state_hash(db)
            for call in [*plan, *plan]:
                call_once(db, call)
                assert db.state_hash() == _uncached_state_hash(db) == db.state_hash()
                checked += 1
            for table in ("users", "orders", "products"):
                for key, rec in db.records(table):
                    assert db.record_json(table, key) == json.dumps(rec) == db.record_json(table, key)
            assert db.record_json("orders", "#nope") is None
    assert checked > 100
