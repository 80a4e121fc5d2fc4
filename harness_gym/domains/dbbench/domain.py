"""The DB-Bench domain: AgentBench DB-Bench records as Harness MDP tasks on a real SQL engine.

A task is one record: a question about one table (insert, update or delete rows, or answer a SELECT-like
question). The draft is a MySQL statement, or, for real SELECT-like records whose stored reference SQL does
not reproduce the label, the answer list itself (``"['Vienna']"``).

- OBSERVE: the table's columns, its first rows, then what form the answer takes.
- RETRIEVE: BM25 over short MySQL notes (:mod:`~harness_gym.domains.dbbench.mysql_notes`).
- TOOL ``execute_sql(sql)``: a read-only query (SELECT / SHOW TABLES / DESCRIBE) on the episode's database,
  answered as upstream answers (the Python repr of the rows, cut at 800 characters with ``[TRUNCATED]``).
- CHECK: the draft is dry-run on the episode's database inside a transaction that is rolled back, and
  validated: it parses and runs, is the statement kind the question asks for, touches the task's table,
  changes rows (mutations) or returns a result of the right shape (one number for counting and aggregation,
  at least one row otherwise). An answer-list draft is checked for shape and for its values appearing in
  the table.
- SUBMIT (grader): upstream scoring in Python (:mod:`~harness_gym.domains.dbbench.grader`): the table hash
  after the statement against ``answer_md5``, or the statement's result (or the answer list) against the
  label.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from sqlglot import exp

from harness_gym.core.domain import Domain
from harness_gym.core.paths import data_path
from harness_gym.core.retrieval import BM25Index
from harness_gym.core.sandbox import Sandbox
from harness_gym.core.taskfile import TaskFileError
from harness_gym.core.types import Candidate, CheckResult, Context, Document, Draft, Task, ToolCall, ToolResult
from harness_gym.domains.dbbench.checker import (
    _SINGLE_VALUE_TYPES,
    check_answer,
    check_sql,
    visible_checks,
)
from harness_gym.domains.dbbench.checker import (
    quote_name as _quote,
)
from harness_gym.domains.dbbench.engines import (
    DatabaseSession,
    Engine,
    SQLError,
    SQLiteEngine,
    make_engine,
)
from harness_gym.domains.dbbench.grader import format_result, grade_content
from harness_gym.domains.dbbench.mutations import answer_mutants, sql_mutants
from harness_gym.domains.dbbench.mysql_notes import MYSQL_NOTES, QUOTING_DOC, TYPE_DOCS
from harness_gym.domains.dbbench.statements import analyse_statement, parse_mysql
from harness_gym.domains.dbbench.statements import tables_and_columns as _tables_and_columns
from harness_gym.domains.dbbench.tools import TOOLS
from harness_gym.domains.dbbench.upstream import DBRecord, DBTaskPayload, LeftOutRecord, load_records

MAX_WRONG_CANDIDATES = 7
HEAD_ROWS = 5

KNOWN_MISMATCHES: dict[str, str] = {
    "UPDATE football_stats SET Points = '16' WHERE Player = 'Johnson'":
        "standard.jsonl: the table has one 'Johnson' row; its answer_md5 matches neither the table after this "
        "UPDATE (SQLite and MariaDB agree on that hash) nor any single-row change of Points, so the upstream "
        "record's hash was not made from this statement on this table.",
}
"""Upstream records whose reference statement does not reproduce their ``answer_md5``, keyed by the statement,
with the reason. Such records have no correct draft and are left out of the task set."""


def _where_column(sql: str) -> str | None:
    try:
        tree = parse_mysql(sql)
    except SQLError:
        return None
    where = tree.args.get("where")
    column = where.find(exp.Column) if where is not None else None
    return column.name if column is not None else None


def question_wording(record: DBRecord, mode: str, reference: str) -> str:
    """How the question states what the statement needs (docs/domains.md, "Task mixes"): ``"stated"`` (every
    value the reference uses appears in the question as stored: the statement can be written from the question
    and the headers), ``"lookup"`` (a value is named otherwise than it is stored: its spelling is read from the
    table) or ``"data"`` (the statement compares, orders, computes or aggregates values other than by counting
    rows, or the answer is values read from the table).

    :param record: the task's record
    :param mode: ``"sql"`` or ``"answer"`` (see :class:`~harness_gym.domains.dbbench.upstream.DBTaskPayload`)
    :param reference: the reference draft
    """
    if mode == "answer":
        return "data"
    try:
        tree = parse_mysql(reference)
    except SQLError:
        return "data"
    if tree.find(*_DATA_NODES) is not None or any(not isinstance(a, exp.Count) for a in tree.find_all(exp.AggFunc)):
        return "data"
    missing = _unstated_literal(tree, record.description)
    return "stated" if missing is None else "lookup"


_DATA_NODES = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Order, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Cast, exp.Like)


def _unstated_literal(tree: exp.Expression, question: str) -> exp.Literal | None:
    """The first literal of the statement the question does not write as it is stored."""
    return next((lit for lit in tree.find_all(exp.Literal) if str(lit.this) not in question), None)


def _literal_column(tree: exp.Expression, literal: exp.Literal) -> str | None:
    """The column a literal is compared with, assigned to or inserted into."""
    parent = literal.parent
    if isinstance(parent, exp.Binary):
        column = parent.find(exp.Column)
        return column.name if column is not None else None
    if isinstance(parent, exp.Tuple) and isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Schema):
        names = [i.name for i in tree.this.expressions]
        at = next(i for i, e in enumerate(parent.expressions) if e is literal)
        return names[at] if at < len(names) else None
    return None


_QUOTED = re.compile(r"'([^']{1,60})'|\"([^\"]{1,60})\"")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\w)")
_NAME = re.compile(r"[A-Z][\w'&.-]*(?:\s+[A-Z][\w'&.-]*)*")
_QUESTION_WORDS = frozenset({"what", "which", "how", "who", "when", "where", "add", "delete", "change", "record",
                             "remove", "set", "update", "insert", "into", "the", "a", "an", "in", "of", "for", "to",
                             "from", "please", "count", "is", "are", "does", "do", "find", "list", "give", "show",
                             "return", "values", "value", "table", "select"})


def question_values(question: str, table: str, columns: tuple[str, ...]) -> tuple[str, ...]:
    """The values a DB-Bench question names, lower-cased, in order: quoted strings, numbers, and runs of
    capitalised words that are not the table's or a column's name nor question words.

    :param question: the question text
    :param table: the table's name
    :param columns: the table's column names
    """
    keys: dict[str, None] = {}
    for match in _QUOTED.finditer(question):
        keys.setdefault((match.group(1) or match.group(2)).strip().lower(), None)
    text = _QUOTED.sub(" | ", question)
    for name in sorted((table, *columns), key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", " | ", text, flags=re.IGNORECASE)
    for match in _NAME.finditer(text):
        words = [w for w in match.group(0).split() if w.lower().strip(".") not in _QUESTION_WORDS]
        if words:
            keys.setdefault(" ".join(words).strip(".").lower(), None)
    for match in _NUMBER.finditer(text):
        keys.setdefault(match.group(0), None)
    names = {n.lower() for n in (table, *columns)}
    return tuple(k for k in keys if k and k not in names)


def _lookup_query(tree: exp.Expression, question: str, qtable: str) -> str | None:
    """The query that finds how a value the question names otherwise is stored: the distinct values of its
    column, narrowed to those holding the longest of its words the question shares (a long column's list is
    cut at 800 characters)."""
    literal = _unstated_literal(tree, question)
    column = _literal_column(tree, literal) if literal is not None else None
    if column is None:
        return None
    shared = [w for w in re.findall(r"\w+", str(literal.this).lower()) if w in question.lower()]
    where = f" WHERE {_quote(column)} LIKE '%{max(shared, key=len)}%'" if shared else ""
    return f"SELECT DISTINCT {_quote(column)} FROM {qtable}{where}"


LARGE_TABLE_ROWS = 30
"""Tables with more rows than this (DB-Bench's upper quartile) show little of themselves in the first rows and a
query's output cut at 800 characters: their questions are harder."""


def _difficulty(record: DBRecord, mode: str) -> float:
    large = 0.1 if len(record.table.rows) > LARGE_TABLE_ROWS else 0.0
    if mode == "answer":
        return min(0.95, 0.55 + 0.1 * (len(record.label) - 1) + large)
    sql = record.sql or ""
    try:
        tree = parse_mysql(sql)
    except SQLError:
        return 0.5
    where = tree.args.get("where")
    n_conditions = len(list(where.find_all(exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.In))) if where else 0
    value = 0.15 + 0.1 * n_conditions
    value += 0.15 if tree.find(exp.AggFunc) is not None or tree.args.get("order") is not None else 0.0
    value += 0.1 if not record.table.name.replace("_", "").isalnum() else 0.0
    value += 0.1 if tree.find(exp.Add, exp.Cast) is not None else 0.0
    return float(min(0.95, max(0.05, value + large)))


ANSWER_LIST_FORM = "Answer with the list of answer values"
"""Opens the answer-form text (the task's third observation) of a task whose draft is an answer list."""
_TABLE_LINE = re.compile(r"\nThe name of this table is (.+), and the headers of this table are (.+)\.\s*$")


def prompt_table(prompt: str) -> tuple[str, str, tuple[str, ...]]:
    """The question, the table's name and its headers as a DB-Bench prompt states them (the question and its
    ``add_description``); no name and no headers when the second part is not in the upstream form.

    :param prompt: the task's prompt
    """
    match = _TABLE_LINE.search(prompt)
    if match is None:
        return prompt, "", ()
    return prompt[:match.start()], match.group(1), tuple(match.group(2).split(","))


def _answer_form(record: DBRecord, mode: str) -> str:
    if record.is_mutation:
        return (f"The question asks for one {record.qtype} statement on `{record.table.name}`; it is graded by "
                "the hash of the whole table afterwards, so every value must be written exactly.")
    if mode == "answer":
        return f"{ANSWER_LIST_FORM}, e.g. ['value'] or ['3'] for a number."
    if record.qtype in _SINGLE_VALUE_TYPES:
        return f"The question ({record.qtype}) asks for one value: write one SELECT that returns it."
    return f"The question ({record.qtype}) asks for values from the table: write one SELECT that returns exactly them."


def _build_task(record: DBRecord, session: DatabaseSession) -> Task | str:
    """The task of a record, or why the record has none."""
    table = record.table
    mode = "sql"
    reference = record.sql
    if record.is_mutation:
        if not reference:
            return "no reference statement (neither sql.query nor label[0])"
    elif not reference or grade_content(session, DBTaskPayload(record, "sql"), reference) < 1.0:
        mode, reference = "answer", str(list(record.label))
    payload = DBTaskPayload(record, mode)
    if grade_content(session, payload, reference) < 1.0:
        return KNOWN_MISMATCHES.get(reference, "the reference statement does not reproduce answer_md5")
    mutants = sql_mutants(reference, table) if mode == "sql" else answer_mutants(record.label, table)
    candidates = [Candidate(content=reference, kind="reference", correct=True)]
    n_wrong = 0
    for kind, content in mutants:
        correct = grade_content(session, payload, content) >= 1.0
        if not correct:
            if n_wrong >= MAX_WRONG_CANDIDATES:
                continue
            n_wrong += 1
        candidates.append(Candidate(content=content, kind=kind, correct=correct))

    qtable = _quote(table.name)
    observations = (
        f"Table {qtable} has {len(table.rows)} rows and the columns "
        + ", ".join(_quote(c) for c in table.columns) + " (all TEXT).",
        f"First rows of {qtable}: {format_result(table.rows[:HEAD_ROWS])}",
        _answer_form(record, mode),
    )
    wording = question_wording(record, mode, reference)
    if wording == "stated":
        required, calls, docs = frozenset(), (), set()
    else:
        column = _where_column(reference) if mode == "sql" else None
        evidence_sql = f"SELECT DISTINCT {_quote(column)} FROM {qtable}" if column else f"SELECT * FROM {qtable}"
        if wording == "lookup":
            evidence_sql = _lookup_query(parse_mysql(reference), record.description, qtable) or evidence_sql
        required, calls = frozenset({0, 1}), (ToolCall("execute_sql", {"sql": evidence_sql}),)
        docs = {TYPE_DOCS.get(record.qtype, "mysql-select-where")}
        if not table.name.replace("_", "").isalnum():
            docs.add(QUOTING_DOC)
    return Task(
        task_id=record.record_id,
        split=record.split,
        family=record.qtype,
        difficulty=_difficulty(record, mode),
        prompt=f"{record.description}\n{record.add_description}".strip(),
        candidates=tuple(candidates),
        observations=observations,
        required_observations=required,
        relevant_docs=frozenset(docs),
        tool_calls=calls,
        payload=payload,
    )


@dataclass(frozen=True)
class DBBenchBank:
    """Tasks, corpus and retrieval index built once per data file (shared by every env on that file)."""

    source: str
    tasks: tuple[Task, ...]
    left_out: tuple[LeftOutRecord, ...]
    """Records of the file that yield no task, each with file, line, record id and reason."""
    corpus: tuple[Document, ...]
    index: BM25Index

    @property
    def skipped(self) -> dict[str, str]:
        """Record id -> why it yields no task."""
        return {r.record_id: r.reason for r in self.left_out}


DEFAULT_DATA = ("dbbench", "generated.jsonl")


def load_dbbench_bank(data_file: str | None = None, strict: bool = False) -> DBBenchBank:
    """Read a DB-Bench JSONL file (default: the generated set) and build its tasks.

    Candidates' ``correct`` flags come from grading each candidate on the SQLite engine. A record that yields
    no task (see :mod:`~harness_gym.domains.dbbench.upstream` for what upstream does with each kind) is left
    out; all of them are reported in one :class:`LeftOutRecordsWarning` with their count, and kept in
    :attr:`DBBenchBank.left_out`.

    :param data_file: a DB-Bench JSONL file
    :param strict: raise :class:`TaskFileError` on the first record that yields no task
    :raises TaskFileError: for a malformed file, when no record yields a task, or (``strict``) a bad record
    """
    return _load_bank(str(data_file) if data_file else None, bool(strict))


@lru_cache(maxsize=8)
def _load_bank(data_file: str | None, strict: bool) -> DBBenchBank:
    path = Path(data_file) if data_file else data_path(*DEFAULT_DATA)
    read = load_records(path, strict=strict)
    engine = SQLiteEngine()
    tasks: list[Task] = []
    left_out = list(read.left_out)
    for record in read.records:
        try:
            session = engine.open(record.table)
        except SQLError as exc:
            built: Task | str = f"field 'table': the table cannot be created: {exc}"
        else:
            try:
                built = _build_task(record, session)
            finally:
                session.close()
        if isinstance(built, str):
            if strict:
                raise TaskFileError(path, built, line=record.line, task_id=record.record_id)
            left_out.append(LeftOutRecord(str(path), record.line, record.record_id, built))
        else:
            tasks.append(built)
    left_out.sort(key=lambda r: r.line or 0)
    # parse the evidence queries now, as grading has parsed the candidates (kept while the analysis cache holds
    # them: the statements a worker sends later may push them out)
    for task in tasks:
        for call in task.tool_calls:
            try:
                analyse_statement(call.args["sql"])
            except SQLError:
                pass
    if not tasks:
        raise TaskFileError(path, "no record yields a task: " + "; ".join(map(str, left_out))[:400])
    if left_out:
        warnings.warn(LeftOutRecordsWarning(f"{path}: {len(left_out)} of {len(left_out) + len(tasks)} records left "
                                            "out (strict=True raises instead):\n" + "\n".join(map(str, left_out))),
                      stacklevel=3)
    corpus = tuple(Document(doc_id, title, text) for doc_id, title, text in MYSQL_NOTES)
    return DBBenchBank(str(path), tuple(tasks), tuple(left_out), corpus, BM25Index(corpus))


class LeftOutRecordsWarning(UserWarning):
    """Some records of a DB-Bench file yield no task; the message lists each with file, line, id and reason."""


class DBBenchDomain(Domain):
    """DB-Bench on one engine. The domain holds no database: each episode's database is the episode resource
    (:meth:`begin_episode` opens it, the env passes it to the tool, checker and grader as ``resource=``,
    :meth:`end_episode` drops it), so one domain serves any number of envs. Called without a resource (outside
    an env), the tool, checker and grader open a database for the call and drop it afterwards.

    :param bank: the loaded tasks
    :param engine: the SQL engine drafts and tool queries run on
    """

    name = "dbbench"
    follows_published_limits = True
    uses_sandbox = False
    tool_needs_draft = False
    hidden_payload_keys = frozenset({"label", "answer_md5", "sql"})
    """Fields of the payload's record (:class:`~harness_gym.domains.dbbench.upstream.DBRecord`) the harness must not
    see: the answer values, the hash of the table after the right change and the reference statement. The hooks
    read the prompt (question, table name, headers), the family (the question type) and the answer form."""
    OBSERVATION_BILLS: tuple[Mapping[str, float], ...] = ({"db_query": 1}, {"db_query": 1}, {})
    """Revealing the table's schema and size, then its first rows, is one statement on the live database each;
    the answer form is the task's own text."""

    def __init__(self, bank: DBBenchBank, engine: Engine) -> None:
        super().__init__()
        self.add_tasks(bank.tasks)
        self.corpus = list(bank.corpus)
        self._index = bank.index
        self.tools = TOOLS.specs
        self.bank = bank
        self.load_report: tuple[LeftOutRecord, ...] = bank.left_out
        """The records of the data file left out, each with file, line, record id and reason."""
        self.engine = engine
        self._keys: dict[str, tuple[str, ...]] = {}
        """:meth:`task_keys` by task id, taken at load (each question's names cost a few regular expressions)."""
        for task in bank.tasks:
            self.task_keys(task)

    # ----- the episode's database ----------------------------------------------------------------------
    def begin_episode(self, task: Task) -> DatabaseSession:
        """A fresh database holding the task's table (MySQL: a schema of its own), for one episode.

        :param task: the episode's task
        """
        return self.engine.open(task.payload.record.table)

    def end_episode(self, task: Task, resource: DatabaseSession | None) -> None:
        """Drop the episode's database.

        :param task: the task the episode was on
        :param resource: the session :meth:`begin_episode` opened
        """
        if resource is not None:
            resource.close()

    @contextmanager
    def _session(self, task: Task, resource: DatabaseSession | None) -> Iterator[DatabaseSession]:
        """The episode's database, or one opened for this call only when there is no episode."""
        if resource is not None:
            yield resource
            return
        session = self.begin_episode(task)
        try:
            yield session
        finally:
            session.close()

    # ----- TOOL ------------------------------------------------------------------------------------------
    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None, *,
                  resource: DatabaseSession | None = None) -> ToolResult:
        return TOOLS.call(call.name, lambda: self._session(task, resource), **call.args)

    # ----- CHECK -----------------------------------------------------------------------------------------
    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None, *,
              resource: DatabaseSession | None = None) -> CheckResult:
        payload: DBTaskPayload = task.payload
        if payload.mode == "answer":
            return check_answer(payload.record, draft.content)
        return check_sql(payload.record, draft.content, lambda: self._session(task, resource))

    # ----- SUBMIT ----------------------------------------------------------------------------------------
    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None, *,
              resource: DatabaseSession | None = None) -> float:
        with self._session(task, resource) as session:
            return grade_content(session, task.payload, draft.content)

    # ----- signals the harness holds (the question and the record's visible fields) ------------------------
    def task_keys(self, task: Task) -> tuple[str, ...]:
        """The values the question names, lower-cased: quoted strings, numbers and capitalised names other than
        the table's and its columns' (what a harness looks for in the rows it reads)."""
        keys = self._keys.get(task.task_id)
        if keys is None:
            keys = self._keys[task.task_id] = question_values(*prompt_table(task.prompt))
        return keys

    def n_visible_checks(self, task: Task) -> int:
        """The checks CHECK runs for the question's type (the task's family) and the answer form the task asks
        for (:func:`~.checker.visible_checks`)."""
        answer_list = len(task.observations) > 2 and task.observations[2].startswith(ANSWER_LIST_FORM)
        return visible_checks(task.family, "answer" if answer_list else "sql")

    def tool_answers(self, task: Task, call: ToolCall, result: ToolResult) -> bool:
        """A query answers when it ran and returned rows."""
        return result.ok and result.output.strip() not in ("", "[]")

    def observe_bill(self, task: Task, index: int) -> Mapping[str, float]:
        """The schema and the first rows are read from the live database (a ``db_query`` each); the answer form
        is free."""
        return self.OBSERVATION_BILLS[index] if 0 <= index < len(self.OBSERVATION_BILLS) else {}

    # ----- evidence --------------------------------------------------------------------------------------
    def knowledge_signal(self, task: Task, ctx: Context, call: ToolCall | None = None) -> float:
        """Tool calls: schema validity. SQL drafts: +1 when every table and column they name exists, -1 when
        one does not or the draft does not parse; answer drafts: 0 (nothing to verify)."""
        if call is not None or ctx.draft is None:
            return super().knowledge_signal(task, ctx, call)
        payload: DBTaskPayload = task.payload
        if payload.mode == "answer":
            return 0.0
        table = payload.record.table
        try:
            tables, columns = _tables_and_columns(ctx.draft.content)
        except SQLError:
            return -1.0
        known = {c.lower() for c in table.columns}
        return 1.0 if tables <= {table.name.lower()} and columns <= known else -1.0


@lru_cache(maxsize=8)
def load_dbbench_domain(data_file: str | None = None, engine: str | Engine = "sqlite",
                        dsn: str | None = None, strict: bool = False) -> DBBenchDomain:
    """A DB-Bench domain on ``engine`` over the tasks of ``data_file`` (default: the generated set), cached per
    (file, engine, DSN, strict): envs on the same data share one domain, each episode with a database of its
    own. ``strict``: raise on the first record that yields no task instead of leaving it out."""
    return DBBenchDomain(load_dbbench_bank(data_file, strict), make_engine(engine, dsn))
