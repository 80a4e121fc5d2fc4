"""MySQL statement texts for DB-Bench: parsing (sqlglot, MySQL dialect), the statement kind, the tables and columns
a statement names, and its translation to SQLite with MySQL's comparison semantics.

:func:`statement_kind`, :func:`mysql_to_sqlite` and :func:`tables_and_columns` read one
:class:`StatementAnalysis` per text (:func:`analyse_statement`): a text is tokenized and parsed once, and what
the three answer (or the error each raises) is kept per text, errors included, in a bounded cache. Every text
is hostile input: it is refused past :data:`MAX_STATEMENT_CHARS` before anything parses it, and the parser's
limits (recursion, bad tokens) come back as :class:`SQLError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.sqlite import SQLite
from sqlglot.errors import ErrorLevel
from sqlglot.tokens import Token, TokenType

from harness_gym.core.lru import ByteLRU

_MYSQL = sqlglot.Dialect.get_or_raise("mysql")
MAX_STATEMENT_CHARS = 4096
"""The longest statement parsed (parsing is not interruptible); the longest reference statement of the shipped
and public records has 320 characters."""
ANALYSIS_CACHE_ENTRIES = 8192
"""How many statement texts :func:`analyse_statement` keeps at most."""
ANALYSIS_CACHE_BYTES = 16 * 1024 * 1024
"""Bound on what the kept analyses hold (:func:`_analysis_bytes`): a statement naming hundreds of distinct
columns holds far more than its text."""
_NAME_OVERHEAD = 64
"""What a name in a kept analysis costs beyond its characters (the str object and its set slot), in bytes."""


class SQLError(Exception):
    """A statement failed; the message is what the agent is shown."""


_EXECUTABLE_COMMENT = re.compile(r"/\*M?!")
_KIND_OF_TREE: tuple[tuple[type[exp.Expression], str], ...] = (
    (exp.Select, "select"), (exp.Union, "select"), (exp.Intersect, "select"), (exp.Except, "select"),
    (exp.Subquery, "select"), (exp.Insert, "insert"), (exp.Update, "update"), (exp.Delete, "delete"),
    (exp.Show, "show"), (exp.Describe, "describe"),
)  # fmt: skip


def _check_length(sql: str) -> None:  # before anything parses it
    if len(sql) > MAX_STATEMENT_CHARS:
        raise SQLError(f"the statement has {len(sql)} characters; at most {MAX_STATEMENT_CHARS} are accepted")


@dataclass(frozen=True)
class StatementAnalysis:
    """What one tokenization and parse of a statement's text says of it: each answer, or the message of the
    :class:`SQLError` asking for it raises ("" when there is none)."""

    kind: str
    """``select``, ``insert``, ``update``, ``delete``, ``show`` or ``describe`` (see :func:`statement_kind`)."""
    kind_error: str
    tables: frozenset[str]
    """The tables the statement names, lower-cased (see :func:`tables_and_columns`)."""
    columns: frozenset[str]
    """The columns the statement names, lower-cased, column aliases left out."""
    names_error: str
    sqlite: str
    """The statement in SQLite (see :func:`mysql_to_sqlite`)."""
    sqlite_error: str


def statement_kind(sql: str) -> str:
    """``select``, ``insert``, ``update``, ``delete``, ``show`` or ``describe``, from sqlglot's parse of the whole
    text the server would execute.

    MariaDB executes the body of ``/*! ... */`` and ``/*M! ... */`` comments, which a parser reads as
    comments; such statements are refused, as is anything that is not one statement of the kinds above
    (DDL, ``SET`` and ``SET STATEMENT ... FOR``, transaction control, ``SELECT ... INTO``, several statements).

    :raises SQLError: for an empty, unparsable, refused or over-long statement
    """
    if not isinstance(sql, str):
        raise SQLError(f"the statement must be text, got {type(sql).__name__}")
    found = analyse_statement(sql)
    if found.kind_error:
        raise SQLError(found.kind_error)
    return found.kind


def mysql_to_sqlite(sql: str) -> str:
    """Translate one MySQL statement to SQLite with MySQL's comparison semantics (see
    :mod:`~harness_gym.domains.dbbench.engines`).

    :raises SQLError: when the statement does not parse as one statement, is over-long, or uses what MySQL
        refuses and SQLite would run (a double-quoted table name, a reserved word as a name)
    """
    found = analyse_statement(sql)
    if found.sqlite_error:
        raise SQLError(found.sqlite_error)
    return found.sqlite


def tables_and_columns(sql: str) -> tuple[set[str], set[str]]:
    """The tables and columns (lower-cased, column aliases left out) ``sql`` names, from its parse.

    :raises SQLError: when ``sql`` does not parse as one statement or is over-long
    """
    found = analyse_statement(sql)
    if found.names_error:
        raise SQLError(found.names_error)
    return set(found.tables), set(found.columns)


def analyse_statement(sql: str) -> StatementAnalysis:
    """Tokenize and parse ``sql`` once and answer :func:`statement_kind`, :func:`tables_and_columns` and
    :func:`mysql_to_sqlite` from that parse (a pure function of the text, kept per text: the last
    :data:`ANALYSIS_CACHE_ENTRIES` texts, within :data:`ANALYSIS_CACHE_BYTES`).

    :raises SQLError: when ``sql`` is longer than :data:`MAX_STATEMENT_CHARS` (nothing parses it)
    """
    _check_length(sql)
    got = _ANALYSES.get(sql)
    if got is None:
        got = _analyse(sql)
        _ANALYSES.put(sql, got)
    return got


def _analysis_bytes(sql: str, analysis: StatementAnalysis) -> int:
    """An estimate of what a kept analysis holds: its texts, and each name with its overhead."""
    names = analysis.tables | analysis.columns
    return (len(sql) + len(analysis.sqlite) + len(analysis.kind_error) + len(analysis.names_error)
            + len(analysis.sqlite_error) + sum(map(len, names)) + _NAME_OVERHEAD * (len(names) + 8))


_ANALYSES: ByteLRU[str, StatementAnalysis] = ByteLRU(ANALYSIS_CACHE_BYTES, _analysis_bytes,
                                                     max_entries=ANALYSIS_CACHE_ENTRIES)
"""The analyses kept, by statement text."""


def _analyse(sql: str) -> StatementAnalysis:
    try:
        tokens = _MYSQL.tokenize(sql)
    except sqlglot.errors.SqlglotError as exc:
        return _unparsed(sql, str(_syntax_error(exc)))
    except (RecursionError, ValueError, KeyError, TypeError) as exc:
        return _unparsed(sql, str(_parser_limit(exc)))
    try:
        tree: exp.Expression | None = parse_mysql(sql, tokens)
        parse_error = ""
    except SQLError as exc:
        tree, parse_error = None, str(exc)
    kind = kind_error = names_error = ""
    tables = columns = frozenset[str]()
    if tree is None:
        kind_error = names_error = parse_error
    else:
        try:
            kind = _kind_of_tree(tree)
        except SQLError as exc:
            kind_error = str(exc)
        tables, columns = _names_of_tree(tree)
    refusal = _refusal(sql)
    if refusal:
        kind, kind_error = "", refusal
    sqlite = sqlite_error = ""
    try:
        _reject_non_mysql(sql, tokens)
    except SQLError as exc:
        sqlite_error = str(exc)
    else:
        if tree is None:
            sqlite_error = parse_error
        else:
            try:
                sqlite = _numeric_comparisons(tree).sql(dialect=_SQLiteBacktick, identify=True, copy=False)
            except (sqlglot.errors.SqlglotError, RecursionError, ValueError, KeyError, TypeError) as exc:
                sqlite_error = f"cannot translate the statement: {type(exc).__name__}: {exc}"
    return StatementAnalysis(kind, kind_error, tables, columns, names_error, sqlite, sqlite_error)


def _unparsed(sql: str, error: str) -> StatementAnalysis:
    return StatementAnalysis("", _refusal(sql) or error, frozenset(), frozenset(), error, "", error)


def _refusal(sql: str) -> str:
    """Why :func:`statement_kind` refuses ``sql`` before parsing it ("" when it does not)."""
    if "\x00" in sql:
        return "the statement contains a NUL character"
    if _EXECUTABLE_COMMENT.search(sql):
        return "executable comments (/*! ... */, /*M! ... */) are not allowed here"
    if not sql.strip():
        return "empty statement"
    return ""


def _kind_of_tree(tree: exp.Expression) -> str:
    if isinstance(tree, exp.Command) and str(tree.this).upper() == "REPLACE":
        return "insert"  # REPLACE INTO, which sqlglot leaves unparsed
    for cls, kind in _KIND_OF_TREE:
        if isinstance(tree, cls):
            if kind == "select" and tree.find(exp.Into) is not None:
                raise SQLError("SELECT ... INTO is not allowed here")
            return kind
    word = str(tree.this).split()[0].upper() if isinstance(tree, exp.Command) and str(tree.this).strip() else \
        tree.key.upper()
    raise SQLError(f"statement {word} is not allowed here; use one SELECT, INSERT, UPDATE, DELETE, SHOW or "
                   "DESCRIBE statement")


def _names_of_tree(tree: exp.Expression) -> tuple[frozenset[str], frozenset[str]]:
    # a table-valued function (``FROM json_each(...)``) is a table without a name whose ``this`` is the call
    tables = {(t.name or str(getattr(t.this, "name", ""))).lower() for t in tree.find_all(exp.Table)}
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias)}
    columns = {c.name.lower() for c in tree.find_all(exp.Column) if c.name} - aliases
    if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Schema):
        columns |= {i.name.lower() for i in tree.this.expressions if isinstance(i, exp.Identifier)}
    return frozenset(tables), frozenset(columns)


def _syntax_error(exc: Exception) -> SQLError:
    errors = getattr(exc, "errors", None) or [{}]
    first = errors[0]
    where = f" near {first.get('highlight')!r}" if first.get("highlight") else ""
    return SQLError(f"You have an error in your SQL syntax{where}: {first.get('description', exc)}")


def _parser_limit(exc: Exception) -> SQLError:
    return SQLError(f"cannot parse the statement: {type(exc).__name__}: {exc}")


def parse_mysql(sql: str, tokens: list[Token] | None = None) -> exp.Expression:
    """Parse one MySQL statement with sqlglot (from ``tokens`` when the caller has tokenized it already); a
    new tree at every call, which the caller may change.

    :raises SQLError: on a syntax error, when ``sql`` holds more than one statement or is over-long
    """
    _check_length(sql)
    try:
        if tokens is None:
            tokens = _MYSQL.tokenize(sql)
        trees = [t for t in _MYSQL.parser(error_level=ErrorLevel.RAISE).parse(tokens, sql) if t is not None]
    except sqlglot.errors.SqlglotError as exc:
        raise _syntax_error(exc) from None
    except (RecursionError, ValueError, KeyError, TypeError) as exc:  # the parser's limits on hostile input
        raise _parser_limit(exc) from None
    if len(trees) != 1:
        raise SQLError(f"expected one statement, got {len(trees)}")
    return trees[0]


# ----- translation to SQLite ------------------------------------------------------------------------------

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ)


def _is_number(node: exp.Expression | None) -> bool:
    if isinstance(node, exp.Neg):
        node = node.this
    if isinstance(node, exp.Paren):
        return _is_number(node.this)
    return isinstance(node, exp.Literal) and not node.is_string


def _as_number(node: exp.Expression) -> None:
    if not _is_number(node) and not isinstance(node, exp.Cast):
        node.replace(exp.cast(node.copy(), "REAL"))


def _numeric_comparisons(tree: exp.Expression) -> exp.Expression:
    """Compare text with numbers as numbers, as MySQL does."""
    for node in list(tree.find_all(*_COMPARISONS)):
        if isinstance(node.parent, exp.Update) and node.arg_key == "expressions":
            continue  # SET col = value is an assignment, not a comparison
        left, right = node.left, node.right
        if _is_number(right):
            _as_number(left)
        elif _is_number(left):
            _as_number(right)
    for node in list(tree.find_all(exp.Between)):
        if _is_number(node.args.get("low")) or _is_number(node.args.get("high")):
            _as_number(node.this)
    for node in list(tree.find_all(exp.In)):
        items = node.expressions
        if items and all(_is_number(i) for i in items):
            _as_number(node.this)
    return tree


_RESERVED = frozenset(_MYSQL.generator_class.RESERVED_KEYWORDS) - {
    # reserved by MySQL 8 but not by MariaDB: both servers must accept what the SQLite engine accepts
    "cume_dist", "dense_rank", "empty", "first_value", "grouping", "groups", "json_table", "lag", "last_value",
    "lateral", "lead", "nth_value", "ntile", "of", "percent_rank", "rank", "row_number", "system", "window",
    "cube", "function", "optimizer_costs", "master_bind", "io_after_gtids", "io_before_gtids", "generated",
    "stored", "virtual", "get", "row", "rows"}
_TABLE_POSITION = frozenset({TokenType.FROM, TokenType.JOIN, TokenType.UPDATE, TokenType.INTO})


def _reject_non_mysql(sql: str, tokens: list[Token]) -> None:
    """Refuse what MySQL refuses but SQLite would run: a double-quoted table name, a reserved word as a name.

    :raises SQLError: in MySQL's words
    """
    for prev, tok, nxt in zip([None, *tokens], tokens, [*tokens[1:], None]):
        bad_table = (tok.token_type == TokenType.STRING and prev is not None and prev.token_type in _TABLE_POSITION)
        bad_name = (tok.token_type == TokenType.VAR and tok.text.lower() in _RESERVED
                    and (nxt is None or nxt.token_type != TokenType.L_PAREN))
        if bad_table or bad_name:
            raise SQLError(f"(1064, \"You have an error in your SQL syntax; check the manual that corresponds to "
                           f"your MySQL server version for the right syntax to use near '{sql[tok.start:tok.start + 40]}'\")")


class _SQLiteBacktick(SQLite):
    """SQLite written with backtick-quoted names: an unknown double-quoted name would silently become a
    string literal in SQLite (its "DQS" misfeature), an unknown backticked one is an error, as in MySQL."""

    class Tokenizer(SQLite.Tokenizer):
        IDENTIFIERS = ["`"]
