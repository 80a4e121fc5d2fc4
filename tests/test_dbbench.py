"""HarnessDBBench-v1: records loader, MySQL-like SQLite engine, MariaDB engine, upstream scoring, checker,
candidates and the registered env, on the generated set and on AgentBench's ``standard.jsonl``.

The real data is read from ``../shared/data/dbbench`` next to the repository (never copied into it); the
MySQL tests need a server: run ``scripts/start_mariadb.sh`` and export the DSN it prints as ``HG_MYSQL_DSN``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections import Counter
from pathlib import Path

import gymnasium as gym
import pytest
from sqlglot import exp

import harness_gym  # noqa: F401  (registers the env ids)
from harness_gym.core.paths import data_path
from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.types import SPLITS, Context, ToolCall
from harness_gym.domains.dbbench.domain import (
    KNOWN_MISMATCHES,
    DBBenchDomain,
    grade_content,
    load_dbbench_bank,
    prompt_table,
    question_wording,
)
from harness_gym.domains.dbbench.engines import (
    Engine,
    SQLError,
    SQLiteEngine,
    TableSpec,
    make_engine,
    run_statement,
)
from harness_gym.domains.dbbench.generate import TYPE_COUNTS, WORDINGS, generate
from harness_gym.domains.dbbench.grader import (
    RESULT_MAX_CHARS,
    TRUNCATED_MARKER,
    answers_match,
    format_result,
    rows_to_answer,
    table_hash,
)
from harness_gym.domains.dbbench.statements import parse_mysql
from harness_gym.domains.dbbench.upstream import MUTATION_TYPES, content_split, load_records
from tests.domain_cases import draft
from tests.hook_cases import assert_hooks_read_no_hidden_field
from tests.shared_data import SHARED_DATA, shared_data_mark

REAL_FILE = SHARED_DATA / "dbbench" / "standard.jsonl"
DSN = os.environ.get("HG_MYSQL_DSN")

needs_real = shared_data_mark("dbbench", "standard.jsonl")
needs_mysql = pytest.mark.skipif(not DSN, reason="HG_MYSQL_DSN is not set: run scripts/start_mariadb.sh and export "
                                                 "HG_MYSQL_DSN=<the DSN it prints> to test the MySQL engine")
ENGINES = ["sqlite", pytest.param("mysql", marks=needs_mysql)]


def engine_named(name: str) -> Engine:
    return make_engine(name, DSN)



@pytest.fixture(scope="module")
def generated() -> DBBenchDomain:
    return DBBenchDomain(load_dbbench_bank(None), SQLiteEngine())


@pytest.fixture(scope="module")
def real() -> DBBenchDomain:
    if not REAL_FILE.is_file():
        pytest.skip(f"AgentBench DB-Bench data not found at {REAL_FILE}")
    return DBBenchDomain(load_dbbench_bank(str(REAL_FILE)), SQLiteEngine())



# ----- loader ------------------------------------------------------------------------------------------------

GOOD = {"description": "How many?", "label": ["1"], "type": ["counting"],
        "table": {"table_name": "t", "table_info": {"columns": [{"name": "a", "type": "TEXT"}], "rows": [["x"]]}},
        "sql": {"query": "SELECT COUNT(*) FROM t"}}


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("mutate, field", [
    (lambda r: r.pop("description"), "description"),
    (lambda r: r.update(type="counting"), "type"),
    (lambda r: r["table"]["table_info"].update(rows=[["x", "y"]]), "table.table_info.rows[0]"),
    (lambda r: r["table"]["table_info"].update(columns=[{"name": "a"}, {"name": "A"}], rows=[]), "table.table_info.columns"),
    (lambda r: r.update(type=["UPDATE"]), "answer_md5"),
    (lambda r: r.update(type=["UPDATE"], answer_md5="[('nothex',)]"), "answer_md5"),
    (lambda r: r.update(label=[]), "label"),
    (lambda r: r.update(split="holdout"), "split"),
])
def test_malformed_records_name_file_line_and_field(tmp_path, mutate, field):
    rec = json.loads(json.dumps(GOOD))
    mutate(rec)
    path = _write(tmp_path, [json.dumps(GOOD), json.dumps(rec)])
    with pytest.raises(TaskFileError) as err:
        list(load_records(path, strict=True).records)
    assert err.value.line == 2 and err.value.field == field
    assert str(path) in str(err.value) and "line 2" in str(err.value)


def test_bad_json_names_the_line(tmp_path):
    path = _write(tmp_path, [json.dumps(GOOD), "{not json"])
    with pytest.raises(TaskFileError, match="line 2.*invalid JSON"):
        list(load_records(path, strict=True).records)


def test_env_rejects_a_missing_file(tmp_path):
    with pytest.raises(TaskFileError, match="file not found"):
        gym.make("HarnessDBBench-v1", data_path=str(tmp_path / "none.jsonl"))


def test_content_split_is_stable_and_explicit_splits_win():
    rec = json.loads(json.dumps(GOOD))
    assert content_split(rec) == content_split(json.loads(json.dumps(rec)))
    splits = {content_split({**rec, "description": f"q{i}"}) for i in range(50)}
    assert splits == {"train", "val", "test"}


# ----- generated set -----------------------------------------------------------------------------------------

def test_generated_set_covers_every_type_with_reference_sql():
    path = data_path("dbbench", "generated.jsonl")
    records = list(load_records(path, strict=True).records)
    assert len(records) >= 200
    types = {r.qtype for r in records}
    assert {"INSERT", "UPDATE", "DELETE", "counting", "comparison", "ranking", "other"} <= types
    assert {t for t in types if t.startswith("aggregation-")} == {f"aggregation-{a}" for a in ("SUM", "AVG", "MIN", "MAX")}
    assert all(r.sql for r in records)
    assert all(r.split == "ood" for r in records if r.table.name in ("Library Catalogue", "book_list"))


def test_generator_reproduces_the_shipped_file(tmp_path):
    shipped = data_path("dbbench", "generated.jsonl").read_bytes()
    assert generate(tmp_path, 0) == len(shipped.splitlines())
    assert (tmp_path / "generated.jsonl").read_bytes() == shipped


def test_generated_splits(generated):
    counts = generated.counts()
    assert all(counts[s] > 0 for s in SPLITS), counts
    assert not generated.bank.skipped


def _candidate_stats(domain: DBBenchDomain) -> dict[str, int]:
    stats = {"wrong_fail_check": 0, "wrong_pass_check": 0}
    for task in domain.all_tasks():
        ref = task.reference
        assert domain.grade(task, draft(ref.content), None) == 1.0, task.task_id
        result = domain.check(task, draft(ref.content), None)
        assert result.passed, (task.task_id, result.feedback)
        for cand in task.candidates:
            quality = domain.grade(task, draft(cand.content), None)
            assert (quality >= domain.success_threshold) == cand.correct, (task.task_id, cand)
            if not cand.correct:
                passed = domain.check(task, draft(cand.content), None).passed
                stats["wrong_pass_check" if passed else "wrong_fail_check"] += 1
    return stats


def test_generated_references_candidates_and_checker(generated):
    stats = _candidate_stats(generated)
    assert stats["wrong_pass_check"] > 0 and stats["wrong_fail_check"] > 0, stats


@needs_mysql
def test_engines_give_the_same_scores_on_the_generated_set(generated):
    """Every candidate of every generated task: the same grade and the same check verdict on both engines."""
    mysql = DBBenchDomain(generated.bank, engine_named("mysql"))
    for task in generated.all_tasks():
        lite, my = generated.begin_episode(task), mysql.begin_episode(task)
        try:
            for cand in task.candidates:
                d = draft(cand.content)
                assert (generated.grade(task, d, None, resource=lite)
                        == mysql.grade(task, d, None, resource=my)), (task.task_id, cand)
                assert (generated.check(task, d, None, resource=lite).passed
                        == mysql.check(task, d, None, resource=my).passed), (task.task_id, cand)
        finally:
            generated.end_episode(task, lite)
            mysql.end_episode(task, my)


@needs_mysql
def test_same_episodes_same_rewards_on_both_engines():
    rewards = {}
    for engine in ("sqlite", "mysql"):
        env = gym.make("HarnessDBBench-v1", split="test", engine=engine, dsn=DSN)
        got = []
        for seed in range(12):
            env.reset(seed=seed)
            for action in (0, 0, 1, 2, 3, 4, 5, 4, 6):
                _, reward, terminated, _, info = env.step(action)
                if terminated:
                    break
            got.append((info["task_id"], reward))
        env.close()
        rewards[engine] = got
    assert rewards["sqlite"] == rewards["mysql"]


# ----- real data (AgentBench standard.jsonl) -------------------------------------------------------------------

@needs_real
@pytest.mark.parametrize("engine", ENGINES)
def test_real_tables_load_and_mutations_reproduce_answer_md5(engine):
    records = list(load_records(REAL_FILE, strict=True).records)
    assert len(records) == 300
    eng = engine_named(engine)
    mutations = [r for r in records if r.qtype in MUTATION_TYPES]
    assert len(mutations) == 200
    reproduced, untouched_matches, mismatches = 0, 0, []
    for rec in records:
        session = eng.open(rec.table)
        try:
            rows = session.table_rows()
            assert len(rows) == len(rec.table.rows)
            if rec.qtype not in MUTATION_TYPES:
                continue
            untouched_matches += table_hash(rows) == rec.answer_md5
            try:
                _, after = run_statement(session, rec.sql)
            except SQLError as exc:
                mismatches.append((rec.sql, str(exc)))
                continue
            if table_hash(after) == rec.answer_md5:
                reproduced += 1
            else:
                mismatches.append((rec.sql, "hash differs"))
        finally:
            session.close()
    assert reproduced >= 195, mismatches
    assert {sql for sql, _ in mismatches} <= set(KNOWN_MISMATCHES), mismatches
    assert untouched_matches == 0


@needs_real
def test_real_select_labels_score_against_themselves_and_not_a_perturbation():
    records = [r for r in load_records(REAL_FILE, strict=True).records if r.qtype not in MUTATION_TYPES]
    assert len(records) == 100
    for rec in records:
        assert answers_match(list(rec.label), list(rec.label)), rec.record_id
        assert answers_match(str(list(rec.label)), list(rec.label)), rec.record_id
        first = rec.label[0]
        try:
            perturbed = str(float(first.replace(",", "").rstrip("%")) + 1)
        except ValueError:
            perturbed = first + " (other)"
        assert not answers_match([perturbed, *rec.label[1:]], list(rec.label)), rec.record_id


@needs_real
def test_real_references_candidates_and_checker(real):
    assert set(real.bank.skipped.values()) <= set(KNOWN_MISMATCHES.values())
    stats = _candidate_stats(real)
    assert stats["wrong_pass_check"] > 0 and stats["wrong_fail_check"] > 0, stats
    modes = {t.payload.mode for t in real.all_tasks()}
    assert modes == {"sql", "answer"}


# ----- the MySQL-like engine --------------------------------------------------------------------------------

STAFF = TableSpec("Staff List", ("Name", "City", "Salary", "No."),
                  (("Zoë Müller", "Zürich", "900", "1"), ("Ana", "Oslo", "12000", "2"),
                   ("Bo", "oslo ", "4500", "3"), ("It's", "Lyon", "abc", "4")))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("sql, expected", [
    ("SELECT `Name` FROM `Staff List` WHERE `City` = 'zurich'", [("Zoë Müller",)]),
    ("SELECT COUNT(*) FROM `Staff List` WHERE `City` = 'OSLO'", [(2,)]),
    ("SELECT `Name` FROM `Staff List` WHERE `Name` LIKE 'zoe%'", [("Zoë Müller",)]),
    ("SELECT `Name` FROM `Staff List` WHERE `Salary` > 1000 ORDER BY `Name`", [("Ana",), ("Bo",)]),
    ("SELECT `Name` FROM `Staff List` WHERE `Salary` > '5' ORDER BY `Name`", [("It's",), ("Zoë Müller",)]),
    ("SELECT `Name` FROM `Staff List` ORDER BY `Salary` + 0 DESC LIMIT 1", [("Ana",)]),
    ("SELECT MAX(`Salary`) FROM `Staff List`", [("abc",)]),
    ("SELECT `City` FROM `Staff List` WHERE `Name` = 'It\\'s'", [("Lyon",)]),
    ("SELECT `City` FROM `Staff List` WHERE `Name` = \"It's\"", [("Lyon",)]),
    ("SELECT `Name` FROM `Staff List` WHERE `No.` IN (1, 2) ORDER BY `Name`", [("Ana",), ("Zoë Müller",)]),
    ("SELECT 7 / 2", [(3.5,)]),
    ("SHOW TABLES", [("Staff List",)]),
])
def test_mysql_semantics(engine, sql, expected):
    session = engine_named(engine).open(STAFF)
    try:
        rows = session.execute(sql).rows
    finally:
        session.close()
    assert answers_match(rows_to_answer(rows), rows_to_answer(expected)), rows


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("sql", [
    'SELECT `Name` FROM "Staff List"',                 # double quotes make a string in MySQL
    "SELECT Name FROM Staff List",                      # unquoted multi-word name
    "SELECT `Name` FROM `Staff List` WHERE release = 1",  # reserved word as a name
    "SELECT `Nme` FROM `Staff List`",
    "DROP TABLE `Staff List`",
    "SELECT 1; SELECT 2",
    "",
])
def test_mysql_errors(engine, sql):
    session = engine_named(engine).open(STAFF)
    try:
        with pytest.raises(SQLError):
            session.execute(sql)
        assert len(session.table_rows()) == len(STAFF.rows)
    finally:
        session.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_describe_and_rollback(engine):
    session = engine_named(engine).open(STAFF)
    try:
        described = session.execute("DESCRIBE `Staff List`").rows
        assert [r[0] for r in described] == list(STAFF.columns)
        with session.scratch():
            session.execute("DELETE FROM `Staff List` WHERE `City` = 'oslo'")
            assert len(session.table_rows()) == 2
        assert len(session.table_rows()) == 4
    finally:
        session.close()


@needs_mysql
def test_mysql_schema_is_dropped_on_close():
    import pymysql

    session = engine_named("mysql").open(STAFF)
    schema = session.schema
    session.close()
    dsn = engine_named("mysql").dsn
    conn = pymysql.connect(host=dsn.host, port=dsn.port, user=dsn.user, password=dsn.password)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW DATABASES LIKE %s", (schema,))
            assert cur.fetchall() == ()
    finally:
        conn.close()


def test_table_hash_matches_mysql_definition():
    # md5(group_concat(substring(md5(concat_ws(',', cols)), 1, 5) ORDER BY ...)); NULLs skipped; empty -> NULL
    assert table_hash([]) is None
    import hashlib

    parts = sorted(hashlib.md5(s.encode()).hexdigest()[:5] for s in ("a,b", "c"))
    assert table_hash([("a", "b"), ("c", None)]) == hashlib.md5(",".join(parts).encode()).hexdigest()
    many = [(str(i),) for i in range(400)]
    joined = ",".join(sorted(hashlib.md5(str(i).encode()).hexdigest()[:5] for i in range(400)))[:1024]
    assert table_hash(many) == hashlib.md5(joined.encode()).hexdigest()


@pytest.mark.parametrize("answer, label, match", [
    ("[('1,234',)]", ["1234"], True),
    (["12.004"], ["12.0"], True),
    (["12.02"], ["12.0"], False),
    (["'Vienna'"], ["Vienna"], True),
    (["45%"], ["45"], True),
    (["b", "a"], ["a", "b"], True),
    (["a"], ["a", "b"], False),
    ([None], ["none"], True),
])
def test_answer_comparison(answer, label, match):
    assert answers_match(answer, label) is match


# ----- tools, checker, env -------------------------------------------------------------------------------------

def test_tool_errors_and_output(generated):
    task = generated.tasks("test")[0]
    ctx = Context(task=task)
    table = f"`{task.payload.record.table.name}`"
    for args in ({}, {"sql": ["SELECT 1"]}, {"sql": ""}, {"sql": "SELECT 1", "extra": 1}):
        result = generated.run_tool(task, ToolCall("execute_sql", args), ctx, None)
        assert not result.ok and result.error
    assert not generated.run_tool(task, ToolCall("execute_sqls", {"sql": "SELECT 1"}), ctx, None).ok
    write = generated.run_tool(task, ToolCall("execute_sql", {"sql": f"DELETE FROM {table}"}), ctx, None)
    assert not write.ok and "read-only" in write.error
    bad = generated.run_tool(task, ToolCall("execute_sql", {"sql": f"SELECT nope FROM {table}"}), ctx, None)
    assert not bad.ok and "nope" in bad.error
    full = generated.run_tool(task, ToolCall("execute_sql", {"sql": f"SELECT * FROM {table} AS a, {table} AS b"}), ctx, None)
    assert full.ok and full.output.endswith(TRUNCATED_MARKER) and len(full.output) == RESULT_MAX_CHARS + len(TRUNCATED_MARKER)
    for call in task.tool_calls:
        assert generated.run_tool(task, call, ctx, None).ok
    assert format_result([("a", 1)]) == "[('a', 1)]"


def test_garbage_drafts_fail_cleanly(generated):
    for task in generated.tasks("val")[:10]:
        for content in ("", "SELEC x", "DROP TABLE t", "UPDATE nowhere SET a = 1", "['x']", "SELECT 1; SELECT 2"):
            assert not generated.check(task, draft(content), None).passed
            assert generated.grade(task, draft(content), None) == 0.0


def test_knowledge_signal(generated):
    task = next(t for t in generated.tasks("train") if t.payload.mode == "sql")
    ctx = Context(task=task, draft=draft(task.reference.content))
    assert generated.knowledge_signal(task, ctx) == 1.0
    ctx.draft = draft(f"SELECT `no such column` FROM `{task.payload.record.table.name}`")
    assert generated.knowledge_signal(task, ctx) == -1.0


def test_episode_resource_is_a_database_of_its_own(generated):
    """The domain keeps no session: each episode's database is the resource begin_episode returns, and a hook
    called without one opens a database for that call."""
    a, b = generated.tasks("train")[:2]
    session = generated.begin_episode(a)
    assert vars(generated).keys() == {"_tasks", "corpus", "tools", "_index", "_by_id", "bank", "load_report", "engine",
                                      "_wrong_calls", "_arg_values", "_keys"}  # memo tables of pure functions of a task
    assert generated.grade(b, draft(b.reference.content), None) == 1.0
    assert generated.grade(a, draft(a.reference.content), None, resource=session) == 1.0
    assert grade_content(session, a.payload, a.reference.content) == 1.0
    generated.end_episode(a, session)
    with pytest.raises(SQLError):
        session.execute("SELECT 1")


class _CountingEngine(SQLiteEngine):
    """SQLite that counts the databases it opens."""

    def __init__(self) -> None:
        self.opened = 0

    def open(self, table: TableSpec):
        self.opened += 1
        return super().open(table)


def _episode_trace(env: gym.Env, task_id: str, actions: tuple[int, ...]) -> list:
    trace = [env.reset(seed=0, options={"task_id": task_id})[0].tolist()]
    for action in actions:
        obs, reward, terminated, _, info = env.step(action)
        trace.append((obs.tolist(), reward, info["evidence"], info["quality"]))
        if terminated:
            break
    return trace


def test_two_envs_share_one_domain_and_interleave_without_interfering():
    """Two envs on the same loaded domain, stepped alternately on tasks of different tables, give exactly the
    episodes each gives alone, and each episode runs on one database of its own, opened once at reset."""
    engine = _CountingEngine()
    first, second = gym.make("HarnessDBBench-v1", engine=engine), gym.make("HarnessDBBench-v1", engine=engine)
    domain = first.unwrapped.domain
    assert second.unwrapped.domain is domain
    tasks = {t.payload.record.table.name: t.task_id for t in domain.tasks("train") if t.payload.mode == "sql"}
    ids = list(tasks.values())[:2]
    actions = (0, 0, 2, 3, 4, 5, 4, 2, 6)
    alone = [_episode_trace(gym.make("HarnessDBBench-v1"), task_id, actions) for task_id in ids]

    traces = [[env.reset(seed=0, options={"task_id": t})[0].tolist()] for env, t in zip((first, second), ids)]
    resources = [first.unwrapped._resource, second.unwrapped._resource]
    running = [True, True]
    for action in actions:
        for i, env in enumerate((first, second)):
            if running[i]:
                obs, reward, terminated, _, info = env.step(action)
                traces[i].append((obs.tolist(), reward, info["evidence"], info["quality"]))
                running[i] = not terminated
                if running[i]:
                    assert env.unwrapped._resource is resources[i]
    assert traces == alone
    assert engine.opened == 2, "each episode opens its database once, whatever the other env does"
    first.close()
    with pytest.raises(SQLError):
        resources[0].execute("SELECT 1")  # closing an env drops its episode's database ...
    second.reset(seed=0, options={"task_id": ids[1]})  # ... and leaves the shared domain usable
    assert engine.opened == 3 and not second.step(2)[4]["invalid_action"]
    second.close()


@needs_real
def test_env_on_real_data():
    env = gym.make("HarnessDBBench-v1", data_path=str(REAL_FILE), split="test")
    env.reset(seed=3)
    for action in (0, 0, 2, 3, 4, 6):
        _, _, terminated, _, info = env.step(action)
    assert terminated and info["quality"] in (0.0, 1.0)
    env.close()


# ----- the task mix and the harness signals (issue 23) -------------------------------------------------------

def _wording(task) -> str:
    return question_wording(task.payload.record, task.payload.mode, task.reference.content)


def test_generated_mix_follows_dbbench_kinds_sizes_and_wording(generated):
    tasks = generated.all_tasks()
    assert Counter(t.family for t in tasks) == dict(TYPE_COUNTS)
    assert sum(t.payload.record.is_mutation for t in tasks) / len(tasks) == pytest.approx(2 / 3)
    rows = [len(t.payload.record.table.rows) for t in tasks]
    assert 0.5 <= sum(20 <= r < 50 for r in rows) / len(rows) <= 0.72 and 0.25 <= sum(10 <= r < 20 for r in rows) / len(rows) <= 0.45
    assert min(rows) >= 8 and max(rows) <= 80 and any(r >= 50 for r in rows)
    shares = Counter(_wording(t) for t in tasks)
    expected = Counter()
    for qtype, count in TYPE_COUNTS:  # dealt per type from WORDINGS
        cycle = WORDINGS.get(qtype, ("data",))
        for wording in set(cycle):
            expected[wording] += count * cycle.count(wording) / len(cycle)
    assert all(abs(shares[w] - expected[w]) <= 2 for w in ("stated", "lookup", "data")), (shares, expected)
    for split in SPLITS:  # the content-hash split keeps every kind in every split
        in_split = Counter(_wording(t) for t in generated.tasks(split))
        assert all(in_split[w] / sum(in_split.values()) >= 0.12 for w in ("stated", "lookup", "data")), (split, in_split)


@needs_real
def test_dbbench_records_classified_as_the_generator_doc_cites(real):
    assert Counter(_wording(t) for t in real.all_tasks()) == {"stated": 146, "lookup": 61, "data": 92}
    assert sum(t.payload.mode == "answer" for t in real.all_tasks()) == 72


def test_the_wording_is_the_cue_for_the_evidence_a_task_needs(generated):
    for task in generated.all_tasks():
        wording = _wording(task)
        record = task.payload.record
        no_evidence = not task.required_observations and not task.tool_calls and not task.relevant_docs
        assert no_evidence == (wording == "stated"), task.task_id
        tree = parse_mysql(task.reference.content)
        literals = [str(lit.this) for lit in tree.find_all(exp.Literal)]
        if wording == "stated":
            # the reference can be written from the prompt: every value, the table and the columns are in it
            assert all(v in task.prompt for v in literals) and record.table.name in task.prompt
            assert all(c.name in task.prompt for c in tree.find_all(exp.Column))
        elif wording == "lookup":
            # a value is not written as stored, and the evidence query returns its stored spelling
            unstated = [v for v in literals if v not in record.description]
            assert unstated and len(task.tool_calls) == 1
            result = generated.run_tool(task, task.tool_calls[0], Context(task=task), None)
            assert result.ok and any(repr(v) in result.output for v in unstated), task.task_id
    stated_difficulty = [t.difficulty for t in generated.all_tasks() if _wording(t) == "stated"]
    data_difficulty = [t.difficulty for t in generated.all_tasks() if _wording(t) == "data"]
    assert sum(data_difficulty) / len(data_difficulty) > sum(stated_difficulty) / len(stated_difficulty)


@pytest.mark.parametrize("which", ["generated", pytest.param("real", marks=needs_real)])
def test_n_visible_checks_is_what_the_checker_counts(which, request):
    domain = request.getfixturevalue(which)
    for task in domain.all_tasks():
        result = domain.check(task, draft(task.reference.content), None)
        n = domain.n_visible_checks(task)
        assert result.passed and result.n_passed == result.n_total == n, task.task_id
        for cand in task.candidates:
            res = domain.check(task, draft(cand.content), None)
            assert res.n_total == n and res.passed == (res.n_passed == n), (task.task_id, cand.kind)
        garbage = domain.check(task, draft("SELEC x"), None)
        assert (garbage.n_passed, garbage.n_total) == (0, n) if task.payload.mode == "sql" else garbage.n_total == n
    assert {domain.n_visible_checks(t) for t in domain.all_tasks()} >= {4, 5, 6}


def test_checker_counts_failing_checks_and_bills_statements(generated):
    counting = next(t for t in generated.all_tasks() if t.family == "counting")
    table = f"`{counting.payload.record.table.name}`"
    two_columns = generated.check(counting, draft(f"SELECT COUNT(*), 1 FROM {table}"), None)
    assert (two_columns.n_passed, two_columns.n_total) == (5, 6) and "one value" in two_columns.feedback
    assert two_columns.billed == {"db_query": 1.0}
    update = next(t for t in generated.all_tasks() if t.family == "UPDATE")
    utable = f"`{update.payload.record.table.name}`"
    column = f"`{update.payload.record.table.columns[1]}`"
    nothing = generated.check(update, draft(f"UPDATE {utable} SET {column} = 'x' WHERE {column} = 'no such value'"), None)
    assert (nothing.n_passed, nothing.n_total) == (3, 4) and "changed no rows" in nothing.feedback
    assert nothing.billed == {"db_query": 2.0}  # the statement and the read of the table afterwards
    select = generated.check(update, draft(f"SELECT * FROM {utable}"), None)
    assert (select.n_passed, select.n_total) == (2, 4) and "asks for UPDATE" in select.feedback
    assert generated.check(update, draft("SELEC x"), None).billed == {}  # never sent
    assert generated.check(update, draft(update.reference.content), None).billed == {"db_query": 2.0}


@needs_real
def test_answer_checks_bill_one_read_of_the_table(real):
    task = next(t for t in real.all_tasks() if t.payload.mode == "answer")
    result = real.check(task, draft(task.reference.content), None)
    assert result.passed and result.billed == {"db_query": 1.0}
    empty = real.check(task, draft("[]"), None)
    assert (empty.n_passed, empty.n_total) == (0, real.n_visible_checks(task)) and empty.billed == {}


def test_tool_and_observations_bill_database_statements(generated):
    assert {n: dict(s.bills) for n, s in generated.tools.items()} == {"execute_sql": {"db_query": 1}}
    task = next(t for t in generated.all_tasks() if t.tool_calls)
    ctx = Context(task=task)
    table = f"`{task.payload.record.table.name}`"
    ran = generated.run_tool(task, task.tool_calls[0], ctx, None)
    assert ran.ok and ran.billed is None and generated.tool_answers(task, task.tool_calls[0], ran)
    empty_call = ToolCall("execute_sql", {"sql": f"SELECT * FROM {table} WHERE 1 = 0"})
    empty = generated.run_tool(task, empty_call, ctx, None)
    assert empty.ok and empty.billed is None and not generated.tool_answers(task, empty_call, empty)
    for sql in (f"DELETE FROM {table}", "SELEC x"):  # refused before the database sees them
        refused = generated.run_tool(task, ToolCall("execute_sql", {"sql": sql}), ctx, None)
        assert not refused.ok and refused.billed == {}
    failed = generated.run_tool(task, ToolCall("execute_sql", {"sql": f"SELECT nope FROM {table}"}), ctx, None)
    assert not failed.ok and failed.billed is None  # sent, and refused by the database
    assert [dict(generated.observe_bill(task, i)) for i in range(3)] == [{"db_query": 1}, {"db_query": 1}, {}]


def test_task_keys_are_the_values_the_question_names(generated):
    for task in generated.all_tasks():
        record = task.payload.record
        keys = generated.task_keys(task)
        assert prompt_table(task.prompt) == (record.description, record.table.name, record.table.columns)
        names = {record.table.name.lower(), *(c.lower() for c in record.table.columns)}
        assert all(k in record.description.lower() for k in keys) and not set(keys) & names, task.task_id
        if _wording(task) == "stated" and record.qtype == "INSERT":
            values = [str(lit.this).lower() for lit in parse_mysql(task.reference.content).find_all(exp.Literal)]
            assert set(values) <= set(keys), task.task_id


@pytest.mark.parametrize("which", ["generated", pytest.param("real", marks=needs_real)])
def test_hooks_read_no_hidden_field(which, request):
    domain = request.getfixturevalue(which)

    def scrub(payload):
        return dataclasses.replace(payload, record=dataclasses.replace(payload.record, label=(), answer_md5=None,
                                                                        sql=None))
    assert_hooks_read_no_hidden_field(domain, domain.all_tasks()[::6], scrub)
    assert_hooks_read_no_hidden_field(domain, domain.all_tasks()[1::6], lambda payload: None)  # nor the visible part


def _like_regex(pattern: str, escape: str) -> re.Pattern[str]:
    """SQL LIKE as a regular expression: ``%`` any run, ``_`` one character, ``escape`` quoting the next one."""
    parts, i = [], 0
    while i < len(pattern):
        if pattern[i] == escape and i + 1 < len(pattern):
            parts.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        parts.append({"%": ".*", "_": "."}.get(pattern[i], re.escape(pattern[i])))
        i += 1
    return re.compile("".join(parts), re.DOTALL)


def test_cached_collation_keys_and_like_tokens_give_the_definitions():
    import random

    from harness_gym.domains.dbbench.collation import fold_text, like_match, mysql_ci

    rng = random.Random(0)
    alphabet = "aAbBéÉ %_\\x1 ç"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 3, 8, 255, 256, 257, 600])))
             for _ in range(1500)]
    texts += ["%", "a%", "%é_", "a\\%b", "x%"]
    matched = 0
    for a, b in zip(texts, reversed(texts)):
        ka, kb = fold_text(a.rstrip(" ")), fold_text(b.rstrip(" "))
        assert mysql_ci(a, b) == (ka > kb) - (ka < kb)
        for escape in ("\\", "x"):
            for pattern in (a[:40], a[:12], a[:2], a.replace("%", "")):
                want = _like_regex(pattern, escape).fullmatch(b) is not None
                assert like_match(pattern, b, escape) == like_match(pattern, b, escape) == want
                matched += want
    assert matched > 20
