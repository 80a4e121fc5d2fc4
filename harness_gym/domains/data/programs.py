"""The pandas programs of a data-analysis task: the documented cleaning, the reference analysis of each question
template, and their assembly into a program that loads the CSV, cleans it, analyses it and prints the answer as
JSON. Placeholders (``{m}`` the measure column, ``{c}`` the count column, ...) are filled per dataset."""

from __future__ import annotations

from typing import Any

CLEANING_STEPS: tuple[str, ...] = ("dedupe", "ids", "units", "outliers", "missing")
"""The faults a messy export has and the cleaning steps that undo them, in the order the reference applies them."""

CLEANING_CODE: dict[str, str] = {
    "dedupe": "df = df.drop_duplicates()",
    "ids": 'df["{e}"] = df["{e}"].str.strip().str.upper()',
    "units": 'alt = df["{u}"] == "{alt}"\ndf.loc[alt, "{m}"] = df.loc[alt, "{m}"] {convert}',
    "outliers": 'df = df[df["{c}"].between({lo}, {hi})]',
    "missing": 'df = df.dropna(subset=["{m}"])',
}
"""The documented cleaning, in the order the reference applies it."""

MONTHLY = ('df["{d}"] = pd.to_datetime(df["{d}"])\ndf["amount"] = df["{m}"] * df["{c}"]\n'
           'monthly = df.groupby(df["{d}"].dt.to_period("M"))["amount"].{agg}()')
"""The monthly totals of the amount (a template: ``{agg}`` is the aggregation), shared by the month questions."""

ANALYSIS_CODE: dict[str, str] = {
    "group_mean": 'answer = df.groupby("{g}")["{m}"].mean().round(2).to_dict()',
    "total": 'answer = round(float((df["{m}"] * df["{c}"]).sum()), 2)',
    "distinct_count": 'answer = int(df["{e}"].nunique())',
    "argmax_month": MONTHLY.replace("{agg}", "sum") + "\nanswer = str(monthly.idxmax())",
    "corr": 'answer = round(float(df["{m}"].corr(df["{c}"])), 3)',
    "share_above": 'amount = df["{m}"] * df["{c}"]\nanswer = round(float((amount > {x}).mean()), 4)',
    "pct_change": MONTHLY.replace("{agg}", "sum") + ".sort_index()\n"
                  "answer = round(float((monthly.iloc[-1] - monthly.iloc[0]) / monthly.iloc[0] * 100), 2)",
    "weighted_mean": 'answer = round(float((df["{m}"] * df["{c}"]).sum() / df["{c}"].sum()), 3)',
}

def program(names: dict[str, Any], analysis: str, *, cleaning: dict[str, str | None] | None = None,
            numpy: bool = False, output: bool = True, column_alias: str = "") -> str:
    """Assemble a pandas program: load, clean, analyse, print the answer as JSON."""
    head = "import json\n\n" + ("import numpy as np\n" if numpy else "") + "import pandas as pd\n"
    parts = [head, 'df = pd.read_csv("{file}")']
    overrides = cleaning or {}
    for step in CLEANING_STEPS:
        code = overrides[step] if step in overrides else CLEANING_CODE[step]
        if code is not None:
            parts.append(code)
    parts.append(analysis)
    if output and "print(" not in analysis:
        parts.append("print(json.dumps(answer))")
    text = "\n".join(parts).format(**names) + "\n"
    if column_alias:
        text = text.replace(f'"{names["m"]}"', f'"{column_alias}"')
    return text


def analysis_only(names: dict[str, Any], template: str) -> str:
    """The reference analysis without cleaning (run on the clean ground truth)."""
    return "\n".join(["import json\n\nimport pandas as pd\n", 'df = pd.read_csv("{file}")',
                      ANALYSIS_CODE[template], "print(json.dumps(answer))"]).format(**names) + "\n"
