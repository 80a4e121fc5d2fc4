"""Wrong pandas programs for a data-analysis question: a cleaning step left out or done wrongly, a wrong
statistic, grouping key, output format or column, and NumPy aggregations that do not skip missing values."""

from __future__ import annotations

from typing import Any

from harness_gym.domains.data.programs import ANALYSIS_CODE, CLEANING_STEPS, MONTHLY, program

ANALYSIS_MUTANTS: dict[str, dict[str, str]] = {
    "group_mean": {
        "median_not_mean": 'answer = df.groupby("{g}")["{m}"].median().round(2).to_dict()',
        "sum_not_mean": 'answer = df.groupby("{g}")["{m}"].sum().round(2).to_dict()',
        "wrong_group_key": 'answer = df.groupby("{e}")["{m}"].mean().round(2).to_dict()',
        "print_repr": 'answer = df.groupby("{g}")["{m}"].mean().round(2).to_dict()\nprint(answer)',
    },
    "total": {
        "mean_not_sum": 'answer = round(float((df["{m}"] * df["{c}"]).mean()), 2)',
        "measure_sum_only": 'answer = round(float(df["{m}"].sum()), 2)',
        "product_of_sums": 'answer = round(float(df["{m}"].sum() * df["{c}"].sum()), 2)',
    },
    "distinct_count": {
        "unique_counts_nan": 'answer = len(df["{e}"].unique())',
        "rows_not_distinct": 'answer = int(df["{e}"].count())',
    },
    "argmax_month": {
        "month_number": MONTHLY.replace(".dt.to_period(\"M\")", ".dt.month").replace("{agg}", "sum")
                        + "\nanswer = int(monthly.idxmax())",
        "period_not_serialisable": MONTHLY.replace("{agg}", "sum") + "\nanswer = monthly.idxmax()",
        "most_rows_not_amount": MONTHLY.replace("{agg}", "size") + "\nanswer = str(monthly.idxmax())",
        "mean_not_total": MONTHLY.replace("{agg}", "mean") + "\nanswer = str(monthly.idxmax())",
        "measure_not_amount": MONTHLY.replace('df["{m}"] * df["{c}"]', 'df["{m}"]').replace("{agg}", "sum")
                              + "\nanswer = str(monthly.idxmax())",
    },
    "corr": {
        "spearman_not_pearson": 'answer = round(float(df["{m}"].corr(df["{c}"], method="spearman")), 3)',
        "corr_with_amount": 'answer = round(float((df["{m}"] * df["{c}"]).corr(df["{c}"])), 3)',
    },
    "share_above": {
        "count_not_share": 'amount = df["{m}"] * df["{c}"]\nanswer = int((amount > {x}).sum())',
        "measure_not_amount": 'answer = round(float((df["{m}"] > {x}).mean()), 4)',
        "percent_not_fraction": 'amount = df["{m}"] * df["{c}"]\nanswer = round(float((amount > {x}).mean() * 100), 4)',
    },
    "pct_change": {
        "fraction_not_percent": MONTHLY.replace("{agg}", "sum") + ".sort_index()\n"
                                "answer = round(float((monthly.iloc[-1] - monthly.iloc[0]) / monthly.iloc[0]), 2)",
        "reversed_periods": MONTHLY.replace("{agg}", "sum") + ".sort_index()\n"
                            "answer = round(float((monthly.iloc[0] - monthly.iloc[-1]) / monthly.iloc[-1] * 100), 2)",
        "month_number": MONTHLY.replace(".dt.to_period(\"M\")", ".dt.month").replace("{agg}", "sum")
                        + ".sort_index()\n"
                        "answer = round(float((monthly.iloc[-1] - monthly.iloc[0]) / monthly.iloc[0] * 100), 2)",
    },
    "weighted_mean": {
        "unweighted_mean": 'answer = round(float(df["{m}"].mean()), 3)',
        "weights_swapped": 'answer = round(float((df["{m}"] * df["{c}"]).sum() / df["{m}"].sum()), 3)',
    },
}
"""Realistic analysis mistakes per template (a wrong statistic, key, format or output)."""

NAN_MUTANTS: dict[str, str] = {
    "group_mean": 'answer = df.groupby("{g}")["{m}"].apply(lambda s: float(np.mean(s.to_numpy()))).round(2).to_dict()',
    "total": 'answer = round(float(np.sum(df["{m}"].to_numpy() * df["{c}"].to_numpy())), 2)',
    "corr": 'answer = round(float(np.corrcoef(df["{m}"].to_numpy(), df["{c}"].to_numpy())[0, 1]), 3)',
    "weighted_mean": 'answer = round(float(np.average(df["{m}"], weights=df["{c}"])), 3)',
}
"""NumPy aggregations that do not skip NaN, written without dropping the missing values first."""


def _cleaning_variants() -> dict[str, dict[str, str | None]]:
    """Cleaning mistakes: a step left out or done wrongly (step -> replacement code, ``None`` drops it)."""
    return {
        "no_dedupe": {"dedupe": None},
        "no_id_cleanup": {"ids": None},
        "ids_case_only": {"ids": 'df["{e}"] = df["{e}"].str.upper()'},
        "no_unit_fix": {"units": None},
        "unit_fix_inverted": {"units": 'alt = df["{u}"] == "{alt}"\ndf.loc[alt, "{m}"] = df.loc[alt, "{m}"] {inverse}'},
        "no_outlier_filter": {"outliers": None},
        "iqr_outlier_filter": {"outliers": 'q1, q3 = df["{c}"].quantile([0.25, 0.75])\nfence = 1.5 * (q3 - q1)\n'
                                           'df = df[df["{c}"].between(q1 - fence, q3 + fence)]'},
        "fillna_zero": {"missing": 'df["{m}"] = df["{m}"].fillna(0)'},
        "no_missing_drop": {"missing": None},
        "no_cleaning": dict.fromkeys(CLEANING_STEPS),
    }


CLEANING_OF: dict[str, str] = {
    "no_dedupe": "dedupe", "no_id_cleanup": "ids", "ids_case_only": "ids", "no_unit_fix": "units",
    "unit_fix_inverted": "units", "no_outlier_filter": "outliers", "iqr_outlier_filter": "outliers",
    "fillna_zero": "missing", "no_missing_drop": "missing",
}
"""Which documented cleaning step a cleaning mistake breaks (its effect on the answer sets the difficulty)."""


def mutants(names: dict[str, Any], template: str, alias: str) -> dict[str, str]:
    """Every realistic wrong program for a question, by kind."""
    ref_analysis = ANALYSIS_CODE[template]
    out = {kind: program(names, ref_analysis, cleaning=variant) for kind, variant in _cleaning_variants().items()}
    out.update({kind: program(names, code) for kind, code in ANALYSIS_MUTANTS[template].items()})
    if template in NAN_MUTANTS:
        out["numpy_nan_aggregate"] = program(names, NAN_MUTANTS[template], cleaning={"missing": None}, numpy=True)
    out["hallucinated_column"] = program(names, ref_analysis, column_alias=alias)
    return out
