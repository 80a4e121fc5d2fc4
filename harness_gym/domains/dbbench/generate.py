"""Generate the DB-Bench task set shipped in ``envs_data/dbbench/generated.jsonl`` (seeded, deterministic).

Records are in AgentBench's DB-Bench format (``description``, ``add_description``, ``type``, ``table``,
``label`` or ``answer_md5``, ``sql.query``) with reference SQL for every record. Each record has its own
table from one of six themes; the ``books`` theme is held out as the ``ood`` split (its records carry
``"split": "ood"``), the others are split by content hash like any external file.

Numeric columns are TEXT, as upstream, and their values have different digit counts, so questions about
the highest or lowest value need a numeric cast (``+ 0``) and comparisons such as ``> 4000`` must compare
numbers. Thresholds are taken from values present in the table, so ``>`` and ``>=`` give different answers.
Labels and answer hashes come from running the reference SQL on the SQLite engine; the tests check that
MariaDB gives the same scores. The names and title words rows draw from are in ``sources/vocabulary.json``.

**The task mix** (docs/domains.md, "Task mixes"), measured on AgentBench DB-Bench's ``standard.jsonl`` (300
records: INSERT 100, UPDATE 100; SELECT-like 100: other, counting, comparison and ranking 17 each, SUM, AVG,
MIN and MAX aggregation 8 each; no DELETE):

- *Query kinds* (:data:`TYPE_COUNTS`, 240 records): two thirds change the table and one third reads it, as in
  DB-Bench; INSERT and UPDATE equal (68 each) with 24 DELETE carved from them (DB-Bench has none; kept so
  the third mutation kind of the engine and grader is exercised), the reads 14 each of other, counting,
  comparison and ranking and 6 of each aggregation (DB-Bench's 17 : 8).
- *Table sizes* (:data:`TABLE_ROWS`): DB-Bench's tables hold 7 to 105 rows (median 22; under 10: 3, 10-19:
  101, 20-49: 186, 50 or more: 10 of 300); rows are drawn in those shares, large tables capped at 80 (two
  themes' key columns have 100 distinct values).
- *Wording* (:data:`WORDINGS`, the cue for the evidence a question needs): *stated* questions write every
  value the statement uses as stored (an INSERT's quoted tuple, a key named in full): the statement can be
  written from the question and the headers alone; *lookup* questions name a value otherwise than it is
  stored (a key by its last word, categories in lower case), so the stored spelling must be read from the
  table; *data* questions compare, rank or aggregate TEXT numbers (casts, thresholds). DB-Bench's records,
  classified the same way (:func:`~harness_gym.domains.dbbench.domain.question_wording`, from which the
  domain derives the evidence a task needs): stated 146, lookup 61, data 20 of the 227 with reproducible SQL,
  and 72 SELECTs answerable only from the data (their stored SQL does not reproduce the label), so 49% / 20%
  / 31% of the 299 it loads; here 100 / 52 / 88 of 240 (42% / 22% / 37%).

Run: ``python -m harness_gym.domains.dbbench.generate [--out DIR] [--seed N]`` (writes ``DIR/generated.jsonl``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness_gym.domains.dbbench.domain import DEFAULT_DATA
from harness_gym.domains.dbbench.engines import SQLiteEngine, TableSpec, run_statement
from harness_gym.domains.dbbench.grader import rows_to_answer, table_hash
from harness_gym.domains.generation import deal, generator_main
from harness_gym.domains.source_files import read_vocabulary, source_path

VOCABULARY = read_vocabulary(source_path("dbbench", "vocabulary.json"),
                             ("first_names", "last_names", "title_words", "title_nouns"))
"""The hand-written names and title words the themes' rows draw from (``sources/vocabulary.json``)."""
FIRST, LAST, WORDS, NOUNS = (VOCABULARY[k] for k in ("first_names", "last_names", "title_words", "title_nouns"))


@dataclass(frozen=True)
class Theme:
    """A family of tables: names, columns (the first is the unique key), and how rows are drawn."""

    key: str
    table_names: tuple[str, ...]
    entity: tuple[str, str]
    columns: tuple[str, ...]
    categorical: tuple[str, ...]
    numeric: tuple[str, ...]
    row: Callable[[random.Random], tuple[str, ...]]
    split: str = ""


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _title(rng: random.Random) -> str:
    return f"The {rng.choice(WORDS)} {rng.choice(NOUNS)}"


THEMES: tuple[Theme, ...] = (
    Theme("staff", ("Employee Records", "staff_directory", "Company Staff"), ("employee", "employees"),
          ("Name", "Department", "City", "Salary", "Age", "Hire Year"), ("Department", "City"),
          ("Salary", "Age", "Hire Year"),
          lambda r: (_person(r), r.choice(("Sales", "Finance", "IT", "Legal", "Support")),
                     r.choice(("Lisbon", "Oslo", "Kraków", "Lyon", "Zürich")), str(r.choice((800, 950)) + 50 * r.randint(0, 220)),
                     str(r.randint(21, 64)), str(r.randint(1995, 2023)))),
    Theme("products", ("Product Catalog", "store_inventory", "Shop Products"), ("product", "products"),
          ("Product", "Category", "Brand", "Price", "Stock", "Rating"), ("Category", "Brand"), ("Price", "Stock", "Rating"),
          lambda r: (f"{r.choice(WORDS)} {r.choice(NOUNS)} {r.randint(2, 9)}",
                     r.choice(("Kitchen", "Garden", "Office", "Toys", "Audio")),
                     r.choice(("Acme", "Nordik", "Vela", "Orbis", "Kumo")), f"{r.randint(3, 1500)}.{r.choice(('00', '49', '99'))}",
                     str(r.randint(0, 400)), f"{r.randint(10, 50) / 10:.1f}")),
    Theme("clubs", ("Football Clubs", "league_clubs", "Club Records"), ("club", "clubs"),
          ("Club", "Stadium", "City", "Founded", "Titles", "Capacity"), ("City",), ("Founded", "Titles", "Capacity"),
          lambda r: (f"{r.choice(('FC', 'Athletic', 'Sporting', 'Real', 'United'))} {r.choice(NOUNS)}",
                     f"{r.choice(WORDS)} Park", r.choice(("Porto", "Bergen", "Gdańsk", "Sevilla", "Malmö")),
                     str(r.randint(1880, 1990)), str(r.choice((0, 1, 2, 3, 5, 8, 12, 17, 24, 31))),
                     str(r.randint(4, 90) * 1000 + r.randint(0, 999)))),
    Theme("films", ("Film Archive", "movie_list", "Cinema Releases"), ("film", "films"),
          ("Title", "Director", "Genre", "Year", "Runtime", "Gross"), ("Director", "Genre"), ("Year", "Runtime", "Gross"),
          lambda r: (_title(r), _person(r), r.choice(("Drama", "Comedy", "Thriller", "Documentary", "Animation")),
                     str(r.randint(1960, 2023)), str(r.randint(78, 190)), f"{r.randint(1, 900)}.{r.randint(0, 9)}")),
    Theme("cities", ("World Cities", "city_stats", "Urban Areas"), ("city", "cities"),
          ("City", "Country", "Continent", "Population", "Area (km2)", "Elevation (m)"), ("Country", "Continent"),
          ("Population", "Area (km2)", "Elevation (m)"),
          lambda r: (f"{r.choice(('San', 'Port', 'New', 'Saint', 'Fort'))} {r.choice(NOUNS)}",
                     r.choice(("Brazil", "Canada", "Japan", "Kenya", "Norway")),
                     r.choice(("Americas", "Asia", "Africa", "Europe")), str(r.randint(8, 9000) * 1000 + r.randint(0, 999)),
                     str(r.randint(15, 3000)), str(r.randint(0, 2800)))),
    Theme("books", ("Library Catalogue", "book_list"), ("book", "books"),
          ("Title", "Author", "Genre", "Pages", "Year", "Publisher"), ("Genre", "Publisher"), ("Pages", "Year"),
          lambda r: (_title(r), _person(r), r.choice(("Fantasy", "History", "Poetry", "Science", "Crime")),
                     str(r.randint(60, 1200)), str(r.randint(1900, 2023)),
                     r.choice(("Penguin", "Harbor House", "Lumen", "Atlas Press"))), split="ood"),
)

TYPE_COUNTS: tuple[tuple[str, int], ...] = (
    ("INSERT", 68), ("UPDATE", 68), ("DELETE", 24), ("counting", 14), ("aggregation-SUM", 6),
    ("aggregation-AVG", 6), ("aggregation-MIN", 6), ("aggregation-MAX", 6), ("comparison", 14),
    ("ranking", 14), ("other", 14),
)
"""Records per question type (module doc: DB-Bench's two thirds mutations, one third reads)."""
TABLE_ROWS: tuple[tuple[int, int, int], ...] = ((8, 9, 1), (10, 19, 34), (20, 49, 62), (50, 80, 3))
"""(fewest rows, most rows, percent of tables): DB-Bench's table sizes (module doc)."""
WORDINGS: dict[str, tuple[str, ...]] = {
    "INSERT": ("stated",) * 3 + ("lookup",) * 2,
    "UPDATE": ("stated",) * 5 + ("lookup",) * 2 + ("data",) * 3,
    "DELETE": ("stated",) * 2 + ("lookup",) + ("data",) * 2,
    "other": ("stated",) * 3 + ("lookup",) * 2,
    "counting": ("stated", "data"),
}
"""How each type's questions are worded, in proportion (dealt per type); the other types are all ``data``."""


def q(name: str) -> str:
    """A backtick-quoted MySQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def s(value: str) -> str:
    """A single-quoted MySQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _num(value: str) -> float:
    return float(value)


class _Table:
    """A drawn table and helpers to pick question material from it."""

    def __init__(self, theme: Theme, rng: random.Random) -> None:
        self.theme, self.rng = theme, rng
        self.name = rng.choice(theme.table_names)
        rows: dict[str, tuple[str, ...]] = {}
        low, high, _ = rng.choices(TABLE_ROWS, weights=[w for *_, w in TABLE_ROWS])[0]
        target = rng.randint(low, high)
        while len(rows) < target:
            row = theme.row(rng)
            rows.setdefault(row[0].lower(), row)
        self.rows = list(rows.values())
        self.cols = theme.columns

    def col(self, name: str) -> int:
        return self.cols.index(name)

    def value(self, row: tuple[str, ...], name: str) -> str:
        return row[self.col(name)]

    def spec(self) -> TableSpec:
        return TableSpec(self.name, self.cols, tuple(self.rows))

    def where_category(self) -> tuple[str, str]:
        cat = self.rng.choice(self.theme.categorical)
        return cat, self.value(self.rng.choice(self.rows), cat)

    def partial(self, value: str) -> str | None:
        """``value`` without its first word, when that names exactly one row's key (``None`` otherwise): how a
        question names a row otherwise than it is stored."""
        rest = " ".join(value.split()[1:])
        if not rest:
            return None
        matches = [r for r in self.rows if rest.lower() in r[0].lower()]
        return rest if len(matches) == 1 else None

    def threshold(self, num: str, rows: list[tuple[str, ...]]) -> str:
        """A value of ``num`` present in ``rows`` (neither the smallest nor the largest when possible)."""
        values = sorted({self.value(r, num) for r in rows}, key=_num)
        inner = values[1:-1] or values
        return self.rng.choice(inner)


def _question(t: _Table, qtype: str, wording: str) -> tuple[str, str] | None:
    """(description, reference SQL) of one question of ``qtype`` about table ``t``, worded as ``wording`` says
    (:data:`WORDINGS`), or ``None`` when the table offers no such wording (the caller draws another table)."""
    rng, th = t.rng, t.theme
    one, many = th.entity
    key = th.columns[0]
    T = q(t.name)
    row = rng.choice(t.rows)
    num = rng.choice(th.numeric)
    named = t.value(row, key) if wording != "lookup" else t.partial(t.value(row, key))
    if named is None:
        return None
    if qtype == "INSERT":
        new = th.row(rng)
        while new[0].lower() in {r[0].lower() for r in t.rows}:
            new = th.row(rng)
        sql = f"INSERT INTO {T} ({', '.join(q(c) for c in t.cols)}) VALUES ({', '.join(s(v) for v in new)})"
        if wording == "stated":
            return f"Add ({', '.join(s(v) for v in new)}) to the '{t.name}' table through INSERT INTO command.", sql
        # a category the table already holds, written in lower case: its stored spelling is in the table
        said = [v.lower() if c in th.categorical and v in {t.value(r, c) for r in t.rows} else v
                for c, v in zip(t.cols, new)]
        if said == list(new):
            return None
        return (f"Record a new {one} in the {t.name} table: " + ", ".join(f"{c} {v}" for c, v in zip(t.cols, said))
                + ".", sql)
    if qtype == "UPDATE":
        if wording != "data":
            col = rng.choice([c for c in t.cols[1:]])
            other = rng.choice([r for r in t.rows if t.value(r, col) != t.value(row, col)] or t.rows)
            new_value = t.value(other, col)
            desc = f"Change the {col} of the {one} {named} to {new_value} in the {t.name} table."
            return desc, f"UPDATE {T} SET {q(col)} = {s(new_value)} WHERE {q(key)} = {s(t.value(row, key))}"
        cat, cval = t.where_category()
        in_cat = [r for r in t.rows if t.value(r, cat) == cval]
        thr = t.threshold(num, in_cat)
        col = rng.choice([c for c in th.categorical if c != cat] or [cat])
        new_value = rng.choice(sorted({t.value(r, col) for r in t.rows}))
        desc = (f"Set the {col} to {new_value} for every {one} in the {t.name} table whose {cat} is {cval} and "
                f"whose {num} is at least {thr}.")
        return desc, f"UPDATE {T} SET {q(col)} = {s(new_value)} WHERE {q(cat)} = {s(cval)} AND {q(num)} >= {thr}"
    if qtype == "DELETE":
        if wording == "data":
            cat, cval = t.where_category()
            thr = t.threshold(num, [r for r in t.rows if t.value(r, cat) == cval])
            desc = f"Remove every {one} whose {cat} is {cval} and whose {num} is greater than {thr} from the {t.name} table."
            return desc, f"DELETE FROM {T} WHERE {q(cat)} = {s(cval)} AND {q(num)} > {thr}"
        desc = f"Delete the {one} {named} from the {t.name} table."
        return desc, f"DELETE FROM {T} WHERE {q(key)} = {s(t.value(row, key))}"
    if qtype == "counting":
        cat, cval = t.where_category()
        if wording == "stated":
            return f"How many {many} have {cat} {cval}?", f"SELECT COUNT(*) FROM {T} WHERE {q(cat)} = {s(cval)}"
        thr = t.threshold(num, t.rows)
        return (f"How many {many} with {cat} {cval} have a {num} of at least {thr}?",
                f"SELECT COUNT(*) FROM {T} WHERE {q(cat)} = {s(cval)} AND {q(num)} >= {thr}")
    if qtype.startswith("aggregation-"):
        cat, cval = t.where_category()
        agg = qtype.split("-")[1]
        words = {"SUM": "total", "AVG": "average", "MIN": "lowest", "MAX": "highest"}[agg]
        expr = {"SUM": f"SUM({q(num)})", "AVG": f"ROUND(AVG({q(num)}), 2)",
                "MIN": f"MIN({q(num)} + 0)", "MAX": f"MAX({q(num)} + 0)"}[agg]
        suffix = " (rounded to 2 decimals)" if agg == "AVG" else ""
        return (f"What is the {words} {num} of the {many} with {cat} {cval}{suffix}?",
                f"SELECT {expr} FROM {T} WHERE {q(cat)} = {s(cval)}")
    if qtype == "comparison":
        cat, cval = t.where_category()
        in_cat = [r for r in t.rows if t.value(r, cat) == cval]
        thr = t.threshold(num, in_cat)
        op, words = rng.choice(((">", "more than"), ("<", "less than"), (">=", "at least"), ("<=", "at most")))
        return (f"Which {many} with {cat} {cval} have a {num} of {words} {thr}?",
                f"SELECT {q(key)} FROM {T} WHERE {q(cat)} = {s(cval)} AND {q(num)} {op} {thr}")
    if qtype == "ranking":
        desc_order = rng.random() < 0.5
        word = "highest" if desc_order else "lowest"
        direction = "DESC" if desc_order else "ASC"
        if rng.random() < 0.5:
            cat, cval = t.where_category()
            return (f"Which {one} with {cat} {cval} has the {word} {num}?",
                    f"SELECT {q(key)} FROM {T} WHERE {q(cat)} = {s(cval)} ORDER BY {q(num)} + 0 {direction} LIMIT 1")
        return f"Which {one} has the {word} {num}?", f"SELECT {q(key)} FROM {T} ORDER BY {q(num)} + 0 {direction} LIMIT 1"
    col = rng.choice(t.cols[1:])
    return (f"What is the {col} of the {one} {named}?",
            f"SELECT {q(col)} FROM {T} WHERE {q(key)} = {s(t.value(row, key))}")


def _unique_top(t: _Table, sql: str) -> bool:
    """A ranking question needs a unique top value: ties would make its label depend on row order."""
    session = SQLiteEngine().open(t.spec())
    try:
        top, _ = run_statement(session, sql.replace("LIMIT 1", "LIMIT 2"))
    finally:
        session.close()
    if len(top.rows) < 2:
        return True
    num = sql.split("ORDER BY ")[1].split(" + 0")[0].strip("`")
    by_key = {r[0]: r[t.col(num)] for r in t.rows}
    return _num(by_key[top.rows[0][0]]) != _num(by_key[top.rows[1][0]])


def make_record(theme: Theme, qtype: str, rng: random.Random, wording: str = "stated") -> dict:
    """One record of ``qtype`` worded as ``wording`` says; retried until the question is well-posed (the wording
    applies, rows change, answers exist)."""
    while True:
        t = _Table(theme, rng)
        made = _question(t, qtype, wording)
        if made is None:
            continue
        desc, sql = made
        session = SQLiteEngine().open(t.spec())
        try:
            result, after = run_statement(session, sql)
        finally:
            session.close()
        rec: dict = {
            "description": desc,
            "add_description": f"The name of this table is {t.name}, and the headers of this table are {','.join(t.cols)}.",
            "type": [qtype],
            "table": {"table_name": t.name,
                      "table_info": {"columns": [{"name": c, "type": "TEXT"} for c in t.cols],
                                     "rows": [list(r) for r in t.rows]}},
            "sql": {"query": sql},
            "source": f"harness_gym:{theme.key}",
        }
        if qtype in ("INSERT", "UPDATE", "DELETE"):
            if sorted(after) == sorted(t.rows):
                continue
            rec["label"] = [sql]
            rec["answer_md5"] = str([(table_hash(after),)])
        else:
            answer = rows_to_answer(result.rows)
            if not answer or answer == ["None"] or (qtype == "ranking" and not _unique_top(t, sql)):
                continue
            rec["label"] = answer
        if theme.split:
            rec["split"] = theme.split
        return rec


GENERATED_FILE = DEFAULT_DATA[-1]
"""The file :func:`generate` writes: the DB-Bench env's default data file."""


def build_records(seed: int = 0) -> list[dict]:
    """Every record of the generated set, in a fixed order."""
    rng = random.Random(seed)
    records = []
    for qtype, count in TYPE_COUNTS:
        for wording in deal(count, WORDINGS.get(qtype, ("data",)), rng):
            records.append(make_record(THEMES[len(records) % len(THEMES)], qtype, rng, wording))
    return records


def generate(out: Path, seed: int = 0) -> int:
    """Write the records to ``generated.jsonl`` in the folder ``out``; return how many."""
    records = build_records(seed)
    out.mkdir(parents=True, exist_ok=True)
    with (out / GENERATED_FILE).open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return len(records)


def main(argv: list[str] | None = None) -> None:
    generator_main(__doc__, "dbbench", generate, 0, lambda n, out: f"wrote {n} records to {out / GENERATED_FILE}",
                   argv)


if __name__ == "__main__":
    main()
