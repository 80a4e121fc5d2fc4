"""What the SQL guards of issue 41 cost per statement, against the same statements unguarded in the same run.

    python benchmarks/sql_guard_latency.py [--tasks 60] [--repeats 5] [--dsn mysql://...]

The statements are the reference SQL of the shipped DB-Bench tasks (reads and writes), each run in a scratch
transaction on its task's table, once per fresh session (so every statement is prepared: the authorizer is
consulted at prepare time).

- SQLite: the engine's session as it is (its :class:`~harness_gym.domains.dbbench.sql_guard.SQLiteAuthorizer`
  installed) against the same session with the authorizer removed (``set_authorizer(None)``).
- MariaDB (``--dsn`` or ``HG_MYSQL_DSN``; skipped without one): the engine's path (``START TRANSACTION``, an
  unbuffered cursor read row by row within the byte, row and time bounds, rollback) against the path it replaced
  on the same session's connection (``BEGIN``, a buffered cursor's ``fetchall``, rollback).

Prints the median and mean per-statement latency of each and their ratio (guarded / unguarded).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from collections.abc import Callable

from harness_gym.domains.dbbench.domain import load_dbbench_domain
from harness_gym.domains.dbbench.engines import (
    DatabaseSession,
    MySQLEngine,
    SQLiteEngine,
    SQLiteSession,
    TableSpec,
    statement_kind,
)


def _time_statements(open_session: Callable[[TableSpec], DatabaseSession], run: Callable[[DatabaseSession, str], None],
                     statements: list[tuple[TableSpec, str]]) -> list[float]:
    """Seconds of ``run`` per statement, each on a fresh session of its table."""
    times = []
    for table, sql in statements:
        session = open_session(table)
        try:
            start = time.perf_counter()
            run(session, sql)
            times.append(time.perf_counter() - start)
        finally:
            session.close()
    return times


def _engine_path(session: DatabaseSession, sql: str) -> None:
    with session.scratch(writable=statement_kind(sql) not in ("select", "show", "describe")):
        session.execute(sql)


def _sqlite_unguarded(table: TableSpec) -> SQLiteSession:
    session = SQLiteSession(table)
    session._conn.set_authorizer(None)
    return session


def _mysql_buffered(session: DatabaseSession, sql: str) -> None:
    """The MariaDB path before the guards: BEGIN, a buffered cursor's fetchall, rollback."""
    conn = session._conn  # type: ignore[attr-defined]
    conn.begin()
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            cur.fetchall()
    finally:
        conn.rollback()


def _report(name: str, guarded: list[float], reference: list[float]) -> None:
    g_med, r_med = statistics.median(guarded), statistics.median(reference)
    g_mean, r_mean = statistics.fmean(guarded), statistics.fmean(reference)
    print(f"{name}: {len(guarded)} statements; guarded median {g_med * 1e6:.0f} us, mean {g_mean * 1e6:.0f} us; "
          f"unguarded median {r_med * 1e6:.0f} us, mean {r_mean * 1e6:.0f} us; "
          f"ratio median {g_med / r_med:.3f}, mean {g_mean / r_mean:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=60, help="reference statements taken from the shipped tasks")
    parser.add_argument("--repeats", type=int, default=5, help="passes over the statements (alternating the two)")
    parser.add_argument("--dsn", default=os.environ.get("HG_MYSQL_DSN", ""), help="MariaDB DSN (else skipped)")
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        domain = load_dbbench_domain()
    tasks = domain.all_tasks()[: args.tasks]
    statements = [(t.payload.record.table, t.reference.content) for t in tasks]

    runs: dict[str, tuple[list[float], list[float]]] = {"sqlite": ([], [])}
    mysql = MySQLEngine(args.dsn) if args.dsn else None
    if mysql is not None:
        runs["mariadb"] = ([], [])
    for _ in range(args.repeats):  # alternate, so that drift of the machine's load touches both alike
        runs["sqlite"][0].extend(_time_statements(SQLiteEngine().open, _engine_path, statements))
        runs["sqlite"][1].extend(_time_statements(_sqlite_unguarded, _engine_path, statements))
        if mysql is not None:
            runs["mariadb"][0].extend(_time_statements(mysql.open, _engine_path, statements))
            runs["mariadb"][1].extend(_time_statements(mysql.open, _mysql_buffered, statements))
    for name, (guarded, reference) in runs.items():
        _report(name, guarded, reference)
    if mysql is None:
        print("mariadb: skipped (no --dsn and no HG_MYSQL_DSN)")


if __name__ == "__main__":
    main()
