"""The data domain's tools: real statistics of the task's dataset, computed in-process on a pandas copy.

Each stands for the harness's own profiling of the CSV file the task hands over, run on the harness host with
pandas: a local computation with no service behind it, so every call bills one ``api_call:free`` (priced 0;
counted, so that the ledger shows the calls)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from harness_gym.core.types import ToolCall, ToolResult
from harness_gym.domains.tool_table import ToolTable

TOOLS = ToolTable()
"""The data tools; each takes the task's :class:`Table` before its call arguments and returns the report."""

FREE_LOCAL_CALL = {"api_call:free": 1}
"""What one tool call costs: a local pandas computation on the harness host (see the module docstring)."""
_COLUMN = {"type": "string", "minLength": 1, "description": "a column name of the task's CSV file"}


@dataclass(frozen=True)
class Table:
    """A dataset: its CSV text (written into the sandbox work dir) and a pandas copy for the tools."""

    name: str
    file: str
    csv: str
    frame: pd.DataFrame
    unit_columns: dict[str, str]


@TOOLS.tool(
    "Statistics of one column of the task's dataset: dtype, nulls, distinct values; for numbers the "
    "quartiles, values outside the 1.5 IQR fences and the spread per unit code; for text the most common "
    "values and how many differ only by spaces or case.",
    {"type": "object", "properties": {"column": _COLUMN}, "required": ["column"], "additionalProperties": False},
    bills=FREE_LOCAL_CALL)
def profile_column(table: Table, column: str) -> str:
    """The ``profile_column`` report of ``column``.

    :param table: the task's dataset
    :param column: an existing column
    """
    return profile(table.frame, column, table.unit_columns)


@TOOLS.tool(
    "The most frequent values of a column (missing values included), with their counts.",
    {"type": "object", "properties": {"column": _COLUMN, "top": {"type": "integer", "minimum": 1, "maximum": 50}},
     "required": ["column"], "additionalProperties": False},
    bills=FREE_LOCAL_CALL)
def value_counts(table: Table, column: str, top: int = 10) -> str:
    """The ``top`` most frequent values of ``column`` with their counts.

    :param table: the task's dataset
    :param column: an existing column
    :param top: how many values to list
    """
    counts = table.frame[column].value_counts(dropna=False).head(int(top))
    return "; ".join(f"{v!r}: {n}" for v, n in counts.items())


@TOOLS.tool(
    "How many rows repeat an earlier row, comparing all columns or only the given ones.",
    {"type": "object", "properties": {"columns": {"type": "array", "items": _COLUMN, "minItems": 1}},
     "additionalProperties": False},
    bills=FREE_LOCAL_CALL)
def count_duplicates(table: Table, columns: list[str] | None = None) -> str:
    """How many rows repeat an earlier row over ``columns`` (all columns when not given).

    :param table: the task's dataset
    :param columns: existing columns to compare
    """
    frame = table.frame
    n = int(frame.duplicated(subset=columns).sum())
    over = f"columns {', '.join(columns)}" if columns else "all columns"
    return f"{n} of {len(frame)} rows repeat an earlier row ({over})"


def run_tool(table: Table, call: ToolCall) -> ToolResult:
    """Run a schema-valid call on ``table``; a column the dataset lacks is an error naming the columns.

    :param table: the task's dataset
    :param call: the call
    """
    frame = table.frame
    wanted = list(call.args.get("columns", [])) if call.name == "count_duplicates" else [call.args["column"]]
    unknown = [c for c in wanted if c not in frame.columns]
    if unknown:
        return ToolResult(ok=False, output="", error=f"{table.file} has no column {unknown[0]!r}; columns: "
                                                     f"{', '.join(frame.columns)}")
    return TOOLS.call(call.name, table, **call.args)


def profile(frame: pd.DataFrame, column: str, unit_columns: dict[str, str]) -> str:
    """The ``profile_column`` tool's report."""
    s = frame[column]
    nulls = int(s.isna().sum())
    parts = [f"{column}: dtype {s.dtype}, {len(s)} rows, {nulls} missing ({100 * nulls / len(s):.1f}%), "
             f"{s.nunique()} distinct"]
    if pd.api.types.is_numeric_dtype(s):
        q = s.quantile([0, 0.25, 0.5, 0.75, 1.0]).tolist()
        fence = 1.5 * (q[3] - q[1])
        outside = s[(s < q[1] - fence) | (s > q[3] + fence)]
        parts.append(f"min {q[0]:g}, q1 {q[1]:g}, median {q[2]:g}, q3 {q[3]:g}, max {q[4]:g}")
        parts.append(f"{len(outside)} values outside the 1.5 IQR fences"
                     + (f" (e.g. {', '.join(f'{v:g}' for v in sorted(set(outside))[:6])})" if len(outside) else ""))
        positive = s[s > 0]
        if len(positive) and positive.max() / positive.min() >= 1000:
            parts.append(f"values span {math.log10(positive.max() / positive.min()):.1f} orders of magnitude")
        unit_col = unit_columns.get(column)
        if unit_col is not None:
            by_unit = s.groupby(frame[unit_col]).agg(["count", "median"])
            parts.append(f"by {unit_col}: " + "; ".join(f"{u}: {int(r['count'])} values, median {r['median']:g}"
                                                        for u, r in by_unit.iterrows()))
    else:
        text = s.dropna().astype(str)
        padded = int((text != text.str.strip()).sum())
        lower = int((text != text.str.upper()).sum())
        top = text.value_counts().head(5)
        parts.append("most common: " + ", ".join(f"{v!r} ({n})" for v, n in top.items()))
        if padded or lower:
            parts.append(f"{padded} values with leading/trailing spaces, {lower} not upper-case; "
                         f"{text.str.strip().str.upper().nunique()} distinct after strip + upper")
    return "; ".join(parts)
