"""HarnessTauRetail-v1 on the published τ-bench v1 retail folder: the literal-only task-list reader, the v1
tool semantics, the v1 reward, and gold replays and perturbations on every published train and dev task."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the envs)
from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.types import ToolCall
from harness_gym.domains.tau_retail.domain import TauRetailDomain, load_tau_retail_domain
from harness_gym.domains.tau_retail.drafts import compose_reply, encode_draft, replay, replay_effects
from harness_gym.domains.tau_retail.grader import reward, rewards
from harness_gym.domains.tau_retail.mutations import Perturber
from harness_gym.domains.tau_retail.store import TABLES, RetailDB, RetailSnapshot
from harness_gym.domains.tau_retail.tools import PLAN_TOOLS, WRITE_TOOLS, call_once
from harness_gym.domains.tau_retail.upstream import OOD_HELD_OUT_TOOL, load_dataset
from harness_gym.domains.tau_retail.v1_tasks import read_v1_task_list
from tests.shared_data import SHARED_DATA, shared_data_mark
from tests.test_tau_retail import ORDERS, PRODUCTS, USERS

V1 = SHARED_DATA / "tau-v1-retail"
needs_v1 = shared_data_mark("tau-v1-retail", "tasks_train.py")


@pytest.fixture(scope="module")
def v1() -> TauRetailDomain:
    return load_tau_retail_domain(str(V1.resolve()))


# ----- a tiny folder in the published v1 layout --------------------------------------------------------

HEADER = "from tau_bench.types import Task, Action\n\n"


def _task_py(tasks: list[dict], var: str = "TASKS_TRAIN") -> str:
    """A task-list module as upstream writes them (``repr`` gives Python literals)."""
    body = []
    for t in tasks:
        actions = ", ".join(f"Action(name={a['name']!r}, kwargs={a['kwargs']!r})" for a in t["actions"])
        body.append(f"    Task(\n        annotator=\"\",\n        user_id={t['user_id']!r},\n"
                    f"        instruction={t['instruction']!r},\n        actions=[{actions}],\n"
                    f"        outputs={t.get('outputs', [])!r},\n    ),")
    return HEADER + f"{var} = [\n" + "\n".join(body) + "\n]\n"


TRAIN = [{"user_id": "ana_ito_1111", "instruction": "Cancel #W1, I ordered it by mistake.",
          "actions": [{"name": "cancel_pending_order", "kwargs": {"order_id": "#W1", "reason": "ordered by mistake"}}]},
         {"user_id": "bo_kim_2222", "instruction": "Ship #W3 to 9 Pine Road, Austin.",
          "actions": [{"name": "modify_pending_order_address",
                       "kwargs": {"order_id": "#W3", "address1": "9 Pine Road", "address2": "", "city": "Austin",
                                  "state": "TX", "country": "USA", "zip": "73301"}}]}]
DEV = [{"user_id": "ana_ito_1111", "instruction": "What did I pay for #W2, and what does a large mug cost?",
        "actions": [{"name": "get_order_details", "kwargs": {"order_id": "#W2"}}],
        "outputs": ["55.5", "Large"]}]


def write_v1_folder(root: Path, train: list[dict] | None = TRAIN, dev: list[dict] | None = DEV) -> Path:
    """The published layout: ``data/`` with user records keyed by id and no ``user_id`` field."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    users = {uid: {k: v for k, v in rec.items() if k != "user_id"} for uid, rec in USERS.items()}
    for name, value in {"users": users, "orders": ORDERS, "products": PRODUCTS}.items():
        (root / "data" / f"{name}.json").write_text(json.dumps(value), encoding="utf-8")
    if train is not None:
        (root / "tasks_train.py").write_text(_task_py(train), encoding="utf-8")
    if dev is not None:
        (root / "tasks_dev.py").write_text(_task_py(dev, "TASKS_DEV"), encoding="utf-8")
    return root


def test_published_layout_loads_with_ids_splits_and_derived_ood(tmp_path):
    dataset = load_dataset(write_v1_folder(tmp_path / "v1"))
    assert dataset.layout == "v1" and dataset.snapshot.semantics == "v1"
    assert {t.task_id: t.split for t in dataset.tasks} == {"train-0": "train", "train-1": "ood", "dev-0": "val"}
    assert dataset.tasks[2].outputs == ("55.5", "Large")
    assert "user_id" not in dataset.snapshot.tables["users"]["ana_ito_1111"]
    domain = TauRetailDomain(dataset)
    assert "get_item_details" not in domain.tools and "think" in domain.tools
    assert domain.counts() == {"train": 1, "val": 1, "test": 0, "ood": 1}


def test_any_subset_of_split_files_loads(tmp_path):
    only_dev = load_dataset(write_v1_folder(tmp_path / "dev", train=None))
    assert [t.task_id for t in only_dev.tasks] == ["dev-0"]
    with pytest.raises(TaskFileError, match="no task list; expected one of tasks_train.py, tasks_dev.py"):
        load_dataset(write_v1_folder(tmp_path / "none", train=None, dev=None))


def test_the_v1_reward_needs_the_database_and_every_output(tmp_path):
    """v1: reward 1 iff the DB hash equals the gold replay's and every output, lower-cased, is in a reply
    lower-cased with its commas removed (so an output holding a comma can never be found)."""
    domain = TauRetailDomain(load_dataset(write_v1_folder(tmp_path / "v1")))
    data = domain.task("dev-0").payload
    assert reward(data, encode_draft([], "Your lamp cost 55.5; the LARGE mug is 12.25."), "substring") == 1.0
    assert reward(data, encode_draft([], "Your lamp cost 55.5; the LARGE mug is 12.25.")) == 0.0  # strict: 12.25
    assert reward(data, encode_draft([], "Your lamp cost 55.5; the mug is LARGE.")) == 1.0
    assert reward(data, encode_draft([], "Your lamp cost 55.5."), "substring") == 0.0
    cancel = ToolCall("cancel_pending_order", {"order_id": "#W1", "reason": "no longer needed"})
    assert reward(data, encode_draft([cancel], "55.5, large")) == 0.0  # outputs found, database changed
    with pytest.raises(TaskFileError, match=r"tasks_dev.py.*task 'dev-0'.*field 'outputs'"):
        TauRetailDomain(load_dataset(write_v1_folder(tmp_path / "comma", dev=[{**DEV[0], "outputs": ["1,001"]}])))


# ----- the task-list reader refuses anything but literals -----------------------------------------------

@pytest.mark.parametrize("source, line, field, message", [
    ("TASKS = [Task(user_id=USER, instruction='x', actions=[])]", 3, "user_id", "not a literal value"),
    ("TASKS = [Task(user_id='u', instruction='x', actions=[Action(name='think', kwargs=dict(thought='t'))])]",
     3, "actions[0].kwargs", "not a literal value"),
    ("TASKS = [Task('u', instruction='x', actions=[])]", 3, "Task", "keyword arguments only"),
    ("TASKS = [Task(user_id='u', instruction='x', actions=[], reward=1)]", 3, "Task.reward", "unknown Task field"),
    ("TASKS = [Task(user_id='u', actions=[])]", 3, "instruction", "missing required field"),
    ("TASKS = [\n    dict(user_id='u')\n]", 4, "Task", "expected a Task(...) call, got dict(...)"),
    ("TASKS = [Task(user_id='u', instruction='x', actions=[Action(name='think')])]", 3, "actions[0].kwargs",
     "missing required field"),
    ("TASKS = [Task(user_id='u', instruction='x', actions=[Action(name='think', kwargs={1: 2})])]", 3,
     "actions[0].kwargs", "string keys"),
    ("TASKS = [Task(user_id='u', instruction='x', actions=ACTIONS)]", 3, "actions", "expected a list of Action"),
    ("TASKS = [Task(user_id='u', instruction=f'{1}', actions=[])]", 3, "instruction", "not a literal value"),
])
def test_non_literal_task_lists_are_refused_naming_file_line_and_field(tmp_path, source, line, field, message):
    path = tmp_path / "tasks_train.py"
    path.write_text(HEADER + source + "\n", encoding="utf-8")
    with pytest.raises(TaskFileError) as err:
        read_v1_task_list(path, "train")
    assert (err.value.path, err.value.line, err.value.field) == (str(path), line, field), str(err.value)
    assert message in str(err.value) and "task 'train-0'" in str(err.value)


def test_the_reader_never_runs_the_module(tmp_path):
    marker = tmp_path / "ran"
    for source in (f"open({str(marker)!r}, 'w')\nTASKS = []",
                   f"TASKS = [Task(user_id=open({str(marker)!r}, 'w').name, instruction='x', actions=[])]",
                   "def f():\n    pass\nTASKS = []",
                   "TASKS = []\nMORE = []",
                   "TASKS = [Task(user_id='u', instruction='x', actions=[]]"):
        path = tmp_path / "tasks_train.py"
        path.write_text(HEADER + source + "\n", encoding="utf-8")
        with pytest.raises(TaskFileError, match=re.escape(str(path))):
            read_v1_task_list(path, "train")
    assert not marker.exists()


def test_unknown_tools_users_and_bad_arguments_name_the_line(tmp_path):
    bad_tool = [{**TRAIN[0], "actions": [{"name": "get_item_details", "kwargs": {"item_id": "1001"}}]}]
    with pytest.raises(TaskFileError, match=r"tasks_train.py, line 8, task 'train-0', field 'actions\[0\].name'.*"
                                            "unknown tool 'get_item_details'"):
        load_dataset(write_v1_folder(tmp_path / "tool", train=bad_tool))
    bad_args = [{**TRAIN[0], "actions": [{"name": "cancel_pending_order", "kwargs": {"order_id": "#W1"}}]}]
    with pytest.raises(TaskFileError, match=r"field 'actions\[0\].kwargs'.*reason"):
        load_dataset(write_v1_folder(tmp_path / "args", train=bad_args))
    with pytest.raises(TaskFileError, match=r"line 4, task 'train-0', field 'user_id'.*no user 'zed_0'"):
        load_dataset(write_v1_folder(tmp_path / "user", train=[{**TRAIN[0], "user_id": "zed_0"}]))


# ----- the v1 tool semantics ----------------------------------------------------------------------------

def _stores() -> dict[str, RetailSnapshot]:
    orders = dict(ORDERS)
    orders["#W1"] = {**ORDERS["#W1"], "status": "pending (item modified)"}
    users = {uid: dict(u) for uid, u in USERS.items()}
    users["ana_ito_1111"]["name"] = {"first_name": "Ána", "last_name": "Ito"}
    return {s: RetailSnapshot(users, orders, PRODUCTS, semantics=s) for s in ("v1", "tau2")}


@pytest.mark.parametrize("call, v1_ok, tau2_ok", [
    (ToolCall("modify_pending_order_payment", {"order_id": "#W1", "payment_method_id": "credit_card_9"}), False, True),
    (ToolCall("modify_pending_order_address", {"order_id": "#W1", "address1": "x", "address2": "", "city": "c",
                                               "state": "s", "country": "USA", "zip": "1"}), False, True),
    (ToolCall("modify_pending_order_items", {"order_id": "#W3", "item_ids": ["2002"], "new_item_ids": ["2002"],
                                             "payment_method_id": "paypal_2"}), True, False),
    (ToolCall("find_user_id_by_name_zip", {"first_name": "ana", "last_name": "ITO", "zip": "80201"}), False, True),
    (ToolCall("find_user_id_by_name_zip", {"first_name": "ÁNA", "last_name": "ito", "zip": "80201"}), True, True),
    (ToolCall("get_item_details", {"item_id": "1001"}), False, True),
])
def test_tools_follow_v1_where_the_versions_differ(call, v1_ok, tau2_ok):
    """On an order whose status is ``pending (item modified)`` v1 refuses address and payment changes (τ²
    accepts them); v1 lets an item be 'changed' to itself; v1 lower-cases names without folding accents;
    v1 has no ``get_item_details``."""
    stores = _stores()
    assert call_once(RetailDB(stores["v1"]), call)[0] is v1_ok
    assert call_once(RetailDB(stores["tau2"]), call)[0] is tau2_ok


# ----- the published data -------------------------------------------------------------------------------

@needs_v1
def test_every_published_train_and_dev_task_loads(v1):
    counts = v1.counts()
    assert counts == {"train": 455, "val": 19, "test": 0, "ood": 46}, counts
    ids = {t.task_id for t in v1.all_tasks()}
    assert ids == {f"train-{i}" for i in range(500)} | {f"dev-{i}" for i in range(20)}
    ood = v1.tasks("ood")
    assert all(any(a.name == OOD_HELD_OUT_TOOL for a in t.payload.actions) for t in ood)
    assert not any(a.name == OOD_HELD_OUT_TOOL for s in ("train", "val") for t in v1.tasks(s)
                   for a in t.payload.actions)
    assert all(t.payload.user_id in v1.snapshot.tables["users"] for t in v1.all_tasks())


def _upstream_hash(db: RetailDB) -> str:
    """τ-bench v1's ``consistent_hash(to_hashable(data))`` over the whole database, computed independently
    of :meth:`RetailDB.state_hash`: sorted key/value tuples, ``str`` of the nested tuples, SHA-256."""
    def hashable(value):
        if isinstance(value, dict):
            return tuple((k, hashable(v)) for k, v in sorted(value.items()))
        if isinstance(value, list):
            return tuple(hashable(v) for v in value)
        return value
    data = {table: dict(db.records(table)) for table in TABLES}
    return hashlib.sha256(str(hashable(data)).encode("utf-8")).hexdigest()


GIFT_CARD_SHORT = "is insufficient for"


@needs_v1
def test_replaying_the_gold_actions_earns_reward_one_on_every_task(v1):
    """Every gold trajectory (reads and writes, as published) earns 1. 19 train tasks hold a gold write that
    fails on the fresh database because a gift card's balance is below the amount; upstream's tool refuses it
    too, so it changes nothing on the gold side either and the replay still earns 1: under the benchmark's match
    with a reply confirming every plan call, under the strict match with a reply confirming the calls that took
    effect (a reply confirming the failed write states figures of no effect, which the strict match refuses)."""
    failing: dict[str, list[str]] = {}
    strict_refused = set()
    for task in v1.all_tasks():
        data = task.payload
        plan = [a for a in data.actions if a.name in PLAN_TOOLS]
        every = rewards(data, encode_draft(plan, compose_reply(plan, data.outputs)))
        assert every["substring"] == 1.0, task.task_id
        strict_refused |= {task.task_id} if every["strict"] == 0.0 else set()
        took_effect = replay_effects(data.snapshot, plan)[1]
        assert reward(data, encode_draft(plan, compose_reply(took_effect, data.outputs))) == 1.0, task.task_id
        db = RetailDB(data.snapshot)
        for call in data.actions:
            ok, out = call_once(db, call)
            if not ok:
                failing.setdefault(task.task_id, []).append(out)
    assert len(failing) == 19 and all(t.startswith("train-") for t in failing), sorted(failing)
    assert strict_refused and strict_refused <= set(failing), sorted(strict_refused - set(failing))
    assert all(GIFT_CARD_SHORT in msg for msgs in failing.values() for msg in msgs)


@needs_v1
def test_perturbations_earn_zero_exactly_when_they_change_the_database(v1):
    """For every task, every perturbation of the gold plan that leaves the database different from the gold
    replay earns 0 (and one that ends in the same database earns 1); on a sample the comparison is made with
    an independent whole-database hash computed as v1 computes it."""
    changed_any = 0
    for n, task in enumerate(sorted(v1.all_tasks(), key=lambda t: t.task_id)):
        data = task.payload
        gold_db = replay(data.snapshot, data.actions)
        gold_upstream = _upstream_hash(gold_db) if n % 100 == 0 else ""
        seed = int(hashlib.sha256(task.task_id.encode()).hexdigest()[:8], 16)
        perturbed = Perturber(data.snapshot, data.user_id, data.gold_plan, seed).all()
        assert perturbed or not [c for c in data.gold_plan if c.name in WRITE_TOOLS], task.task_id
        for kind, plan in perturbed:
            db = replay(data.snapshot, plan)
            same = db.state_hash() == gold_db.state_hash()
            if gold_upstream:
                assert same == (_upstream_hash(db) == gold_upstream), (task.task_id, kind)
            assert reward(data, encode_draft(plan, compose_reply(plan, data.outputs))) == (1.0 if same else 0.0), \
                (task.task_id, kind)
            changed_any += not same
        assert any(not c.correct for c in task.candidates), task.task_id
    assert changed_any > 3 * len(v1.all_tasks())


@needs_v1
def test_gym_make_on_the_published_folder_and_a_copy_of_one_split(tmp_path):
    env = gym.make("HarnessTauRetail-v1", data_dir=str(V1), split="val")
    env.reset(seed=0)
    for action in (0, 3, 4, 6):
        *_, terminated, _, info = env.step(action)
    assert terminated and info["quality"] in (0.0, 1.0)
    env.close()
    shutil.copytree(V1 / "data", tmp_path / "data")
    shutil.copy(V1 / "tasks_dev.py", tmp_path / "tasks_dev.py")
    assert [t.split for t in load_dataset(tmp_path).tasks].count("val") == 19
