"""The general part of the data domain's RETRIEVE corpus: short notes on pandas and on data cleaning,
written for this project. The per-dataset data dictionaries are added by the generator.

Each entry is ``(doc_id, title, text)``; :data:`TEMPLATE_DOCS` names the note each question template needs.
"""

from __future__ import annotations

PANDAS_NOTES: tuple[tuple[str, str, str], ...] = (
    ("pd-read-csv", "pandas.read_csv: loading a CSV file",
     "pd.read_csv(path) reads a comma separated file into a DataFrame. Empty fields become NaN, so a numeric "
     "column with blanks is float64. Identifier columns stay strings (object or str dtype). Dates stay strings "
     "until parsed with pd.to_datetime."),
    ("pd-drop-duplicates", "DataFrame.drop_duplicates: removing repeated rows",
     "df.drop_duplicates() keeps the first of every group of rows that are equal in every column. Exports that "
     "retry a batch often write the same record twice; counting or summing before removing the copies inflates "
     "totals, counts and shifts means. subset=[...] compares only some columns; keep='first' is the default."),
    ("pd-missing-values", "Missing values: dropna, fillna and skipna",
     "Aggregations such as mean, sum, median and corr skip NaN by default (skipna=True), so a mean over a "
     "column with blanks averages the recorded values only. df.fillna(0) replaces blanks with zero, which pulls "
     "means towards zero and is only right when a blank really means zero. df.dropna(subset=['col']) removes "
     "rows without a value in col. NumPy functions on .to_numpy() arrays do not skip NaN: np.mean of an array "
     "with NaN is NaN."),
    ("pd-groupby-mean", "GroupBy: mean per group",
     "df.groupby('key')['value'].mean() computes the mean of value for each distinct key; .round(2) rounds and "
     ".to_dict() turns the Series into a dict from group to mean. Grouping by the wrong column gives one entry "
     "per value of that column. Use .median(), .sum(), .count() or .agg([...]) for other statistics per group."),
    ("pd-sum-total", "Totals: the total of a derived amount over all records",
     "The total of a derived amount (revenue as price times quantity, a cost as rate times hours, a total weight "
     "as weight per parcel times parcels) is computed record by record first and then summed: "
     "(df['a'] * df['b']).sum(). Multiplying the total of each column is a different, wrong number, and .mean() "
     "gives the average per record, not the total. Convert numpy scalars with float(...) before json.dumps."),
    ("pd-nunique", "Counting distinct values: how many distinct ids appear (nunique)",
     "df['col'].nunique() counts how many distinct non-null values appear, e.g. how many distinct customers "
     "placed orders. len(df['col'].unique()) also counts NaN as a value, and df['col'].count() counts non-null "
     "rows, not distinct values. Normalise identifiers before counting: ' c0012', 'C0012' and 'c0012' are the "
     "same customer once whitespace is stripped and case is unified."),
    ("pd-str-normalise", "Normalising identifier strings: str.strip, str.upper",
     "df['id'] = df['id'].str.strip().str.upper() removes leading and trailing spaces and unifies case. Missing "
     "values stay NaN. Apply it before grouping, deduplicating by id or counting distinct ids."),
    ("pd-unit-conversion", "Fixing mixed units with a boolean mask and .loc",
     "When some rows record a quantity in another unit (grams instead of kilograms, cents instead of dollars, "
     "watt-hours instead of kilowatt-hours) a unit column usually says which. Select them with a mask and convert "
     "in place: m = df['unit'] == 'g'; df.loc[m, 'weight'] = df.loc[m, 'weight'] / 1000. Check the direction: "
     "a value in grams is 1000 times the same value in kilograms."),
    ("pd-outliers-range", "Outliers and invalid values: filtering with between",
     "Sentinel and data-entry errors (0, -1, 999, 9999) are best removed with the valid range the data "
     "dictionary documents: df = df[df['qty'].between(lo, hi)]. Statistical rules (1.5 IQR fences, 3 standard "
     "deviations) also drop legitimate extreme values and keep errors that fall inside the fences, so prefer the "
     "documented range when there is one."),
    ("pd-datetime-month", "Dates: to_datetime, dt.to_period and the month with the highest total",
     "pd.to_datetime(df['date']) parses ISO dates. df['date'].dt.to_period('M') labels each row with its month "
     "(a Period such as 2023-04); str(period) gives '2023-04'. monthly = df.groupby(df['date'].dt.to_period('M'))"
     "['amount'].sum() gives a total per month; dt.month is only the month number 1-12 and merges years."),
    ("pd-idxmax", "Finding the label of the maximum: idxmax",
     "series.idxmax() returns the index label of the largest value (the first one on ties), e.g. the month with "
     "the highest total. series.max() returns the value itself. A Period or Timestamp label is not JSON "
     "serialisable: convert it with str(...) before json.dumps."),
    ("pd-corr", "Correlation between two columns: Series.corr",
     "df['a'].corr(df['b']) is the Pearson correlation over the rows where both are present. "
     "method='spearman' ranks the values first and gives a different number. np.corrcoef on arrays containing "
     "NaN returns NaN. Outliers and unit errors can dominate a Pearson correlation."),
    ("pd-share-threshold", "Shares and proportions: the mean of a boolean",
     "(df['amount'] > x).mean() is the fraction of rows above x; .sum() would count them instead. Rows whose "
     "amount is NaN compare as False and still count in the denominator, so drop rows with missing inputs first."),
    ("pd-pct-change", "Percent change between two periods",
     "The percent change from a first value a to a last value b is (b - a) / a * 100. Order the periods "
     "chronologically (sort_index on a monthly Series) and take .iloc[0] and .iloc[-1]. Reporting (b - a) / a "
     "without the factor 100 gives a fraction, not a percent."),
    ("pd-weighted-mean", "Weighted means",
     "A mean of x weighted by w is (x * w).sum() / w.sum(), or np.average(x, weights=w) when there are no NaN. "
     "The unweighted x.mean() treats every row alike and differs whenever w varies."),
    ("pd-json-output", "Printing results as JSON",
     "json.dumps turns dicts, lists, str, int and float into JSON. numpy.int64, numpy.float64 values inside "
     "dicts and pandas Period or Timestamp objects raise TypeError: convert with int(), float() or str() first. "
     "print(series) or print(dict) prints Python reprs, not JSON."),
    ("pd-merge", "Combining tables: merge and concat",
     "pd.merge(left, right, on='key', how='left') joins two tables; pd.concat([a, b]) stacks them. Joining on a "
     "key with duplicates multiplies rows. Not needed for single-file analyses."),
    ("pd-pivot", "Reshaping: pivot_table and crosstab",
     "df.pivot_table(index='a', columns='b', values='v', aggfunc='sum') builds a two-way table; pd.crosstab "
     "counts combinations. fill_value=0 fills empty cells."),
    ("pd-plotting", "Plotting with matplotlib",
     "df.plot(x='date', y='amount') draws a line chart with matplotlib; plt.savefig('out.png') writes it to a "
     "file. Charts are not answers: print the number the question asks for."),
    ("pd-dtypes", "Column types: astype and to_numeric",
     "df['x'].astype(float) converts a column; pd.to_numeric(df['x'], errors='coerce') turns unparsable "
     "strings into NaN. df.dtypes and df.info() show each column's type and non-null count."),
)

TEMPLATE_DOCS: dict[str, str] = {
    "group_mean": "pd-groupby-mean",
    "total": "pd-sum-total",
    "distinct_count": "pd-nunique",
    "argmax_month": "pd-datetime-month",
    "corr": "pd-corr",
    "share_above": "pd-share-threshold",
    "pct_change": "pd-pct-change",
    "weighted_mean": "pd-weighted-mean",
}
"""The pandas note a question template's analysis step needs."""
