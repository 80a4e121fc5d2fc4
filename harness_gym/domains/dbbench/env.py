"""HarnessDBBench-v2 (and -v1, the earlier worker): AgentBench's DB-Bench as a Harness MDP on a real SQL engine."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness_gym.core.env_class import document_env
from harness_gym.domains.dbbench.domain import DBBenchDomain, load_dbbench_domain
from harness_gym.env import HarnessEnv

DSN_ENV_VAR = "HG_MYSQL_DSN"


def _data_file(data_path: str | None, data_dir: str | None) -> str | None:
    if data_path and data_dir:
        raise ValueError("give data_path (a DB-Bench JSONL file) or data_dir (a folder with standard.jsonl), not both")
    if data_dir:
        folder = Path(data_dir)
        for name in ("standard.jsonl", "dev.jsonl"):
            if (folder / name).is_file():
                return str(folder / name)
        raise FileNotFoundError(f"{folder}: no standard.jsonl or dev.jsonl")
    return data_path


@document_env
class HarnessDBBenchEnv(HarnessEnv):
    """
    ## Description

    AgentBench's DB-Bench: each task is one record of a DB-Bench JSONL file (``standard.jsonl`` /
    ``dev.jsonl``, or the shipped generated set): a question about one table that asks to insert, update or
    delete rows, or to answer a counting, aggregation (SUM / AVG / MIN / MAX), comparison, ranking or other
    lookup question. The table is loaded as upstream loads it (every column TEXT, every value ``str(value)``)
    into a fresh database at every ``reset``: in-memory SQLite made MySQL-like (default), or a schema of its
    own on a MySQL / MariaDB server (``engine="mysql"``), dropped when the next episode starts or the env
    closes. Drafts run inside transactions that are rolled back, so the table stays as loaded.

    A draft is one MySQL statement; for real SELECT-like records whose stored SQL does not reproduce the
    label on the table, the draft is the answer list (``"['Vienna']"``).

    Tasks differ in ways the question shows (the mix: ``harness_gym/domains/dbbench/generate.py`` and
    docs/domains.md): DB-Bench's two thirds mutations and one third reads, its table sizes (8 to 80 rows here,
    median 24), and its wording: a question that writes every value as stored needs no evidence; one that
    names a value otherwise needs its stored spelling from the table; one that compares, ranks or aggregates
    TEXT numbers needs the data and the notes. The same rule sets the evidence of every record of an
    external file.

    - **Corpus** (RETRIEVE, BM25): 14 short MySQL notes (INSERT, UPDATE, DELETE, COUNT, aggregates,
      comparisons, ORDER BY / LIMIT, quoting, NULL, ...).
    - **Tool** ``execute_sql(sql)``: one read-only query (SELECT, SHOW TABLES, DESCRIBE) on the episode's
      database, answered as upstream answers: the Python repr of the rows, cut at 800 characters with
      ``[TRUNCATED]``. Writes are refused (they belong in the draft); SQL errors come back as tool errors.
      Each query sent is one statement on the live database (``db_query``); a refused one costs nothing.
    - **Observations**: the table's schema and size, then its first rows, are read from the database
      (``db_query`` each); the answer form is the task's own text (free).
    - **Checker** (CHECK): a dry run of the draft in a rolled-back transaction, validated: it parses and
      runs, is the statement kind the question asks for, touches only the task's table, changes at least
      one row (INSERT / UPDATE / DELETE) or returns a result of the right shape (one value for counting and
      aggregation, a number for counting and SUM, at least one row otherwise). Answer-list drafts are checked
      for shape and for their values appearing in the table or the question. Feedback quotes the engine's
      error or the result. A wrong constant, a dropped condition, the wrong column or aggregate, ``>`` for
      ``>=`` or a mistyped value passes the dry run and fails the grader: the domain's support ceiling. It
      counts its checks (``n_passed`` / ``n_total``: 4 for a mutation or a plain SELECT, 5 for AVG / MIN /
      MAX, 6 for counting and SUM) and bills the statements it sends (``db_query``: the draft, plus the read
      of the table after a mutation; one read of the table for an answer list).
    - **Grader** (SUBMIT, hidden), upstream's scoring computed in Python for every engine: mutations compare
      the table hash (md5 of the sorted, comma-joined first five hex digits of each row's md5 of its
      comma-joined non-NULL values, cut at 1024 bytes) with the record's ``answer_md5``; SELECT-like tasks
      compare the result (or the answer list) with the label (quotes, ``%`` and thousands separators
      stripped, numbers within 0.01, several values as sets). Quality is 0 or 1.

    Splits: generated records are split by content hash, except the ``books`` tables, held out as ``ood``;
    records of an external file by content hash (60% train, 20% val, 20% test), unless a record has a
    ``split`` field; there, ``ood`` holds out schemas: the records whose tables come from WikiTableQuestions
    (``"source": "wikitq"``, every question type) that the hash would put in train or val (on the published
    ``standard.jsonl``: 57 records; see :mod:`~harness_gym.domains.dbbench.upstream`).

    Records that cannot be built are left out and reported together in one ``LeftOutRecordsWarning``
    (file, line, record id and reason of each; also ``env.unwrapped.domain.load_report``); ``strict=True``
    raises on the first instead. Upstream AgentBench cannot run them either: a table with two columns of
    the same name (MySQL refuses its ``CREATE TABLE``) or a row of the wrong length (its ``INSERT`` fails)
    leaves the sample without its table, upstream v0.2 running it anyway and the current release scoring it
    as a task error; a record whose reference statement does not reproduce its ``answer_md5`` has no
    correct draft.

    ## Action Space

    ``Discrete(7)``:

    | Num | Action   | In this domain |
    |-----|----------|----------------|
    | 0   | OBSERVE  | reveals the table's columns, then its first five rows, then what form the answer takes |
    | 1   | RETRIEVE | the next-best unseen MySQL note for the question (BM25) |
    | 2   | TOOL     | the worker runs a read query, usually ``SELECT DISTINCT`` of the filtered column |
    | 3   | DRAFT    | the worker writes a statement (or answer list) from the evidence gathered |
    | 4   | CHECK    | dry run + validation of the draft on the episode's database |
    | 5   | REVISE   | the worker fixes the draft using the checker's feedback |
    | 6   | SUBMIT   | grades the draft as upstream does; the episode ends |

    ## Observation Space

    ``Box(low, high, (F,), float32)``, the harness-state features shared by every domain:

    {observation_table}

    ## Rewards

    0 on every step except the last, where it is the upstream score of the submitted draft (0 or 1), minus
    ``cost_weight`` times the step's metered cost
    ``info["cost"]["units"]`` on every step (default 0).

    ## Starting State

    A task drawn uniformly from the split (or ``options["task_id"]``), a freshly loaded database, no
    evidence, no draft, the full budget.

    ## Episode End

    {episode_end}

    ## Info

    {info}

    ## Arguments

    ```python
    import gymnasium as gym
    env = gym.make("HarnessDBBench-v2", data_path=None, data_dir=None, engine="sqlite", dsn=None,
                   strict=False, split="train", budget=30, cost_weight=0.0, worker="simulated", profile="v2",
                   sandbox="process", action_costs=None, render_mode=None,
                   prices="cheap-hosted", budget_units="auto")
    ```

    ``data_path`` is a DB-Bench JSONL file (default: the shipped ``envs_data/dbbench/generated.jsonl``);
    ``data_dir`` a folder holding ``standard.jsonl`` (or ``dev.jsonl``). ``engine`` is ``"sqlite"`` or
    ``"mysql"``; ``dsn`` (``mysql://user:password@host:port/prefix``, default the ``HG_MYSQL_DSN`` environment
    variable) says where the MySQL engine connects; episode schemas are named ``<prefix>_<hex>``
    (``scripts/start_mariadb.sh`` starts a loopback MariaDB and prints such a DSN). Candidate drafts are
    labelled by grading them on SQLite; both engines give the same scores on the generated set. The other
    keywords are those of :class:`~harness_gym.env.HarnessEnv`.

    ## Example

    ```python
    >>> import gymnasium as gym, harness_gym
    >>> env = gym.make("HarnessDBBench-v2", split="test")
    >>> obs, info = env.reset(seed=0)
    >>> for action in (0, 0, 2, 3, 4, 6):  # columns, rows, a read query, draft, dry run, submit
    ...     obs, reward, terminated, truncated, info = env.step(action)
    >>> terminated, info["quality"] in (0.0, 1.0)
    (True, True)

    ```
    """

    domain: DBBenchDomain

    def __init__(self, data_path: str | None = None, data_dir: str | None = None, engine: str = "sqlite",
                 dsn: str | None = None, strict: bool = False, **kwargs: Any) -> None:
        if engine == "mysql" and dsn is None:
            dsn = os.environ.get(DSN_ENV_VAR)
        super().__init__(load_dbbench_domain(_data_file(data_path, data_dir), engine, dsn, strict), **kwargs)
