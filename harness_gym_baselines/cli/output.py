"""What the commands print: tables (Rich on a terminal, plain columns in a pipe) and standard JSON."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table


def json_default(value: Any) -> Any:
    raise TypeError(f"not JSON serialisable: {value!r}")


def clean_json(obj: Any) -> Any:
    """NaN becomes null so that the printed JSON is standard."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    return obj


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], *, width: int | None = None,
                right: Sequence[int] = ()) -> None:
    """Print a table: drawn by Rich on a terminal or with ``--width`` (long cells wrap within the width), else
    (output piped or redirected) as plain columns padded with spaces, one line per row and nothing wrapped or
    cut, so that ``grep``, ``column`` and a log keep every value whole.

    :param title: the line above the table
    :param headers: the column names
    :param rows: the cells, one sequence per row
    :param width: ``--width``: the columns of the output (drawn by Rich)
    :param right: indices of the columns aligned right
    """
    if width is None and not sys.stdout.isatty():
        cells = [list(headers), *[list(map(str, row)) for row in rows]]
        sizes = [max(len(row[i]) for row in cells) for i in range(len(headers))]
        print(title)
        for row in cells:
            print("  ".join((c.rjust(n) if i in right else c.ljust(n)) for i, (c, n) in enumerate(zip(row, sizes)))
                  .rstrip())
        return
    table = Table(title=title)
    for i, header in enumerate(headers):
        table.add_column(header, justify="right" if i in right else "left", overflow="fold")
    for row in rows:
        table.add_row(*map(str, row))
    Console(width=width).print(table)


