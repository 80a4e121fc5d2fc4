"""Seeded generator of the data-analysis task bank (``envs_data/data/``).

Run ``python -m harness_gym.domains.data.generate [--out DIR]``. It writes

- ``datasets/<name>.csv``: messy CSV exports (duplicate rows, messy identifiers, mixed units, sentinel
  outliers, missing values), each with the clean ground truth it was made from kept only in memory;
- ``datasets.jsonl``: one record per dataset (file, schema, split, injected faults, unit column of the measure);
- ``corpus.jsonl``: the RETRIEVE corpus (pandas notes and one data dictionary per export format);
- ``tasks.jsonl``: one record per question, with the reference pandas program
  (:mod:`~harness_gym.domains.data.programs`), realistic wrong programs
  (:mod:`~harness_gym.domains.data.mutations`), the answer specification the checker validates and the
  reference answer the grader compares with.

Every program is executed here (in-process, on the CSV in a temporary directory): the reference answer is
what the reference program prints, and it must equal the same analysis run on the clean ground truth, which
proves the documented cleaning undoes every injected fault. A wrong program whose printed answer the grader
accepts is equivalent on this dataset and is left out. ``tests/test_data_domain.py`` re-runs the programs
through the sandbox and the real checker and grader.

The hand-written inputs are in ``sources/``: the export formats (``schemas.json``), the place names
(``places.json``) and the pandas notes of the corpus (``pandas_notes.jsonl``).

**The task mix.** Two properties vary, each visible in the task itself:

- *How dirty the export is*: 0 to 3 of the five kinds of dirt (duplicate rows, hand-typed identifiers, unit
  mix-ups, sentinel outliers, missing values), :data:`DIRT_KINDS_MIX`. A third of the exports are clean: the
  prompt calls such a file "a validated extract", and no cleaning step changes any answer, so its tasks need
  no evidence (no required observation, document or tool call; the columns and row count are in every
  prompt). The others are "raw exports" to be cleaned as the data dictionary prescribes; their number of
  kinds follows the real datasets of the CleanML benchmark (Li et al., "CleanML: A Study for Evaluating the
  Impact of Data Cleaning on ML Classification Tasks", ICDE 2021; the dataset table of its code,
  ``schema/dataset.py``): of its 13 real datasets with missing values, outliers, duplicates or inconsistencies,
  9 have one of these kinds, 3 two and 1 (Airbnb) three; the kinds are drawn uniformly. The clean third is
  chosen, not measured: cleaning benchmarks hold only dirty tables and analysis benchmarks do not report how
  many of theirs are clean. A raw export's task still needs no evidence when none of its dirt changes that
  question's answer (e.g. padded ids and a mean price).
- *Whether the question states a plausible range* for its numeric answer (``..., between L and H``):
  :data:`RANGE_STATED_MIX`, half of the tasks with a numeric answer, chosen (no benchmark reports how often a
  data question bounds its answer). The checker validates the range only where it is stated, so its
  validations (``n_visible_checks``: ran, JSON, type, shape, finite, range) cover less of the spec in the
  other half, where a unit mix-up or a sentinel outlier left in passes the check and fails the grader.

Both are laid out by quota in every split (:func:`~harness_gym.domains.generation.quota`): the dirt over the
split's datasets, the range over its numeric tasks, each over its own seeded shuffle, fixed before any
headroom run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness_gym.core.taskfile import TaskFileError, read_documents, read_json, require
from harness_gym.domains.data.answers import AnswerSpec, parse_output
from harness_gym.domains.data.checker import sanity
from harness_gym.domains.data.grader import score
from harness_gym.domains.data.mutations import CLEANING_OF, mutants
from harness_gym.domains.data.programs import ANALYSIS_CODE, CLEANING_STEPS, analysis_only, program
from harness_gym.domains.generation import generator_main, quota
from harness_gym.domains.source_files import read_vocabulary, source_path

SEED = 7301
IN_DIST_DATASETS = 12
"""Datasets per in-distribution schema: 7 train, 2 val, 3 test."""
OOD_DATASETS = 6
"""Datasets per out-of-distribution schema."""
DIRT_KINDS_MIX: tuple[tuple[int, float], ...] = ((0, 13 / 2), (1, 9), (2, 3), (3, 1))
"""How many kinds of dirt an export has, with its weight: a clean third (13/2 against the 13 dirty datasets),
then CleanML's 13 real dirty datasets by their number of error kinds (see the module docstring)."""
RANGE_STATED_MIX: tuple[tuple[bool, float], ...] = ((True, 1), (False, 1))
"""Whether a numeric question states its plausible range, with its weight (chosen; see the module docstring)."""


@dataclass(frozen=True)
class Schema:
    """A kind of export: its columns, units, valid ranges and what an amount of a record is.

    ``alt_factor`` converts the canonical unit into the alternative one (a price in cents is 100 times the
    price in USD); ``mean_range`` is where the per-group typical values of the measure are drawn.
    """

    name: str
    title: str
    file_stem: str
    row_id: str
    date: str
    entity: str
    entity_label: str
    group: str
    group_values: tuple[str, ...]
    measure: str
    measure_label: str
    measure_unit: str
    measure_alias: str
    measure_range: tuple[float, float]
    mean_range: tuple[float, float]
    unit_col: str
    canon_code: str
    alt_code: str
    alt_factor: float
    count: str
    count_label: str
    count_range: tuple[int, int]
    count_typical: float
    count_outliers: tuple[int, ...]
    count_slope: float
    amount_label: str
    amount_unit: str
    amount_high: float
    """Plausible upper bound of the mean amount per record (the checker's range for totals)."""
    templates: tuple[str, ...]


IN_TEMPLATES = ("group_mean", "total", "distinct_count", "argmax_month", "corr")
OOD_TEMPLATES = ("share_above", "pct_change", "weighted_mean")
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
"""The pandas note (in :data:`NOTES_FILE`) a question template's analysis step needs."""
NOTES_FILE = source_path("data", "pandas_notes.jsonl")
"""The general part of the RETRIEVE corpus: short notes on pandas and on data cleaning, written for this
project; the generator adds one data dictionary per dataset schema."""

SCHEMAS_FILE = source_path("data", "schemas.json")
"""The export formats, one object per :class:`Schema` with every field by name."""
PLACES_FILE = source_path("data", "places.json")
"""The (invented) place names a dataset is named after."""


def read_schemas(path: Path = SCHEMAS_FILE) -> tuple[Schema, ...]:
    """The export formats of ``sources/schemas.json``.

    :param path: the schemas file
    """
    raw = read_json(path)
    if not isinstance(raw, list):
        raise TaskFileError(path, "expected a list of schema objects")
    fields = dataclasses.fields(Schema)
    schemas = []
    for i, rec in enumerate(raw):
        where = f"[{i}]"
        if not isinstance(rec, dict) or set(rec) != {f.name for f in fields}:
            raise TaskFileError(path, f"expected an object with the fields {[f.name for f in fields]}", task_id=where)
        values = {f.name: require(rec, f.name, {"str": str, "float": float}.get(str(f.type), list), path=path,
                                  task_id=where) for f in fields}
        schemas.append(Schema(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}))
    return tuple(schemas)


SCHEMAS = read_schemas()
OOD_SCHEMAS = frozenset({"meters", "dosing"})

PLACES: tuple[str, ...] = read_vocabulary(PLACES_FILE, ("places",))["places"]


@dataclass
class Dataset:
    """One generated export: the messy CSV text, its clean ground truth and what was injected."""

    name: str
    schema: Schema
    place: str
    split: str
    csv: str
    truth: pd.DataFrame
    months: tuple[str, ...]
    groups: tuple[str, ...]
    faults: frozenset[str]

    @property
    def file(self) -> str:
        return f"{self.name}.csv"


# ----- datasets --------------------------------------------------------------------------------------------
def _months(rng: np.random.Generator) -> list[pd.Period]:
    start = pd.Period(year=int(rng.integers(2021, 2025)), month=int(rng.integers(1, 13)), freq="M")
    return [start + i for i in range(int(rng.integers(6, 13)))]


def make_dataset(schema: Schema, place: str, split: str, rng: np.random.Generator, n_faults: int) -> Dataset:
    """Draw a clean table, then inject ``n_faults`` kinds of the faults the schema's data dictionary documents,
    chosen uniformly."""
    n = int(rng.integers(120, 261))
    months = _months(rng)
    groups = sorted(rng.choice(schema.group_values, size=int(rng.integers(3, 6)), replace=False).tolist())
    lo_m, hi_m = schema.mean_range
    group_mean = {g: float(np.exp(rng.uniform(np.log(lo_m), np.log(hi_m)))) for g in groups}
    weights = rng.dirichlet(np.full(len(groups), 3.0))
    n_entities = int(rng.integers(max(12, n // 8), n // 3))

    g_col = rng.choice(groups, size=n, p=weights)
    typical = np.array([group_mean[g] for g in g_col])
    measure = np.clip(typical * rng.lognormal(0.0, 0.4, size=n), *schema.measure_range).round(2)
    c_lo, c_hi = schema.count_range
    count = schema.count_typical * (measure / typical) ** schema.count_slope * rng.lognormal(0.0, 0.35, size=n)
    count = np.clip(np.rint(count), c_lo, c_hi).astype(int)
    month_idx = rng.integers(0, len(months), size=n)
    dates = [(months[m].start_time + pd.Timedelta(days=int(rng.integers(0, months[m].days_in_month))))
             .strftime("%Y-%m-%d") for m in month_idx]
    entity_num = rng.integers(1, n_entities + 1, size=n)
    prefix = schema.entity[0].upper()
    df = pd.DataFrame({
        schema.date: dates,
        schema.entity: [f"{prefix}{k:04d}" for k in entity_num],
        schema.group: g_col,
        schema.measure: measure,
        schema.unit_col: schema.canon_code,
        schema.count: count,
    }).sort_values(schema.date, kind="stable").reset_index(drop=True)
    df.insert(0, schema.row_id, [f"{schema.row_id[0].upper()}{10000 + i}" for i in range(n)])

    faults = frozenset(CLEANING_STEPS[int(i)] for i in rng.permutation(len(CLEANING_STEPS))[:n_faults])
    if "missing" in faults:
        df[schema.entity] = df[schema.entity].astype(object)
        df.loc[rng.random(n) < 0.02, schema.entity] = np.nan
    messy = df.copy()
    invalid = np.zeros(n, dtype=bool)
    if "missing" in faults:
        gone = rng.random(n) < rng.uniform(0.04, 0.10)
        messy.loc[gone, schema.measure] = np.nan
        invalid |= gone
    if "outliers" in faults:
        bad = rng.random(n) < rng.uniform(0.02, 0.05)
        messy.loc[bad, schema.count] = rng.choice(schema.count_outliers, size=int(bad.sum()))
        invalid |= bad
    if "units" in faults:
        # Mixed units cluster in time, as when one source system reported in another unit for a while.
        month_of_row = np.array([months.index(pd.Period(d, freq="M")) for d in df[schema.date]])
        first = int(rng.integers(0, len(months) - 1))
        in_window = (month_of_row == first) | (month_of_row == first + 1)
        alt = (rng.random(n) < np.where(in_window, 0.6, 0.03)) & messy[schema.measure].notna().to_numpy()
        digits = max(0, 2 - round(math.log10(schema.alt_factor)))
        messy.loc[alt, schema.measure] = (messy.loc[alt, schema.measure] * schema.alt_factor).round(digits)
        messy.loc[alt, schema.unit_col] = schema.alt_code
    if "ids" in faults:
        col = messy.columns.get_loc(schema.entity)
        pick = (rng.random(n) < rng.uniform(0.10, 0.20)) & df[schema.entity].notna().to_numpy()
        styles = rng.integers(0, 3, size=n)
        for i in np.flatnonzero(pick):
            raw = messy.iat[i, col]
            messy.iat[i, col] = (raw.lower(), f" {raw}", f"{raw.lower()} ")[styles[i]]
    if "dedupe" in faults:
        copies = rng.choice(n, size=max(1, int(n * rng.uniform(0.04, 0.10))), replace=False)
        messy = pd.concat([messy, messy.iloc[copies]])
        messy = messy.iloc[rng.permutation(len(messy))].sort_values(schema.date, kind="stable")

    truth = df[~invalid].reset_index(drop=True)
    name = f"{schema.file_stem}_{place.lower()}"
    return Dataset(name=name, schema=schema, place=place, split=split, csv=messy.to_csv(index=False),
                   truth=truth, months=tuple(str(m) for m in months),
                   groups=tuple(groups), faults=faults)


# ----- programs ------------------------------------------------------------------------------------------
def _names(ds: Dataset, threshold: float) -> dict[str, Any]:
    s = ds.schema
    lo, hi = s.count_range
    convert = f"/ {s.alt_factor:g}" if s.alt_factor >= 1 else f"* {1 / s.alt_factor:g}"
    inverse = f"* {s.alt_factor:g}" if s.alt_factor >= 1 else f"/ {1 / s.alt_factor:g}"
    return {"file": ds.file, "m": s.measure, "c": s.count, "g": s.group, "d": s.date, "e": s.entity, "u": s.unit_col,
            "alt": s.alt_code, "lo": lo, "hi": hi, "convert": convert, "inverse": inverse, "x": f"{threshold:g}"}


# ----- execution -----------------------------------------------------------------------------------------
def execute(code: str, workdir: Path) -> tuple[str, str]:
    """Run trusted generated code in-process with ``workdir`` as cwd: ``(stdout, error)``."""
    buf = io.StringIO()
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(buf), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(code, "<candidate>", "exec"), {"__name__": "__main__"})
        return buf.getvalue(), ""
    except Exception as exc:  # the candidate's own failure is data here
        return buf.getvalue(), f"{type(exc).__name__}: {exc}"
    finally:
        os.chdir(cwd)


# ----- questions, observations, corpus -------------------------------------------------------------------
TEMPLATE_BASE_DIFFICULTY: dict[str, float] = {
    "distinct_count": 0.1, "group_mean": 0.15, "total": 0.15, "corr": 0.2, "argmax_month": 0.25,
    "share_above": 0.2, "pct_change": 0.3, "weighted_mean": 0.2,
}


def _nice(x: float) -> float:
    """``x`` rounded to two significant digits."""
    return float(f"{x:.2g}")


def question(ds: Dataset, template: str, n_rows: int,
             range_stated: bool) -> tuple[str, str, str, AnswerSpec, float]:
    """The question, the definition it relies on, the output format, the answer spec and the threshold used.
    Questions name the columns they use, as analysis benchmarks' questions do.

    :param ds: the dataset
    :param template: the question template
    :param n_rows: the rows of the messy export
    :param range_stated: whether the question states a plausible range (and the checker validates it)
    """
    s = ds.schema
    amount = f"The {s.amount_label} of a record is {s.measure} × {s.count}."
    threshold = _nice(float(np.quantile(ds.truth[s.measure] * ds.truth[s.count], 0.7)))
    measure = f"{s.measure_label} ({s.measure_unit}, column {s.measure})"
    lo, hi = s.measure_range
    table: dict[str, tuple[str, str, str, AnswerSpec]] = {
        "group_mean": (f"What is the mean {measure} per {s.group}?", "",
                       f"an object mapping each {s.group} to its mean rounded to 2 decimals",
                       AnswerSpec("mapping", f"a mean {s.measure_label} ({s.measure_unit})", lo, hi, 2,
                                  keys=ds.groups)),
        "total": (f"What is the total {s.amount_label} ({s.amount_unit})?", amount, "a number rounded to 2 decimals",
                  AnswerSpec("number", f"a total {s.amount_label} ({s.amount_unit})", 0.0, n_rows * s.amount_high, 2)),
        "distinct_count": (f"How many distinct {s.entity_label} ({s.entity}) appear in the cleaned data?", "",
                           "an integer",
                           AnswerSpec("integer", f"a number of distinct {s.entity_label}", 1.0, float(n_rows), 0)),
        "argmax_month": (f"In which month of {s.date} was the total {s.amount_label} highest?", amount,
                         'a string "YYYY-MM"', AnswerSpec("label", "a month", 0.0, 0.0, 0, labels=ds.months)),
        "corr": (f"What is the Pearson correlation between {s.measure} and {s.count} across records?", "",
                 "a number rounded to 3 decimals", AnswerSpec("number", "a correlation coefficient", -1.0, 1.0, 3)),
        "share_above": (f"What share of the records has a {s.amount_label} above {threshold:g} {s.amount_unit}?",
                        amount, "a fraction rounded to 4 decimals",
                        AnswerSpec("number", "a share of records", 0.0, 1.0, 4)),
        "pct_change": (f"By how many percent did the monthly total {s.amount_label} change from the first month "
                       f"of {s.date} covered to the last?", amount, "a number rounded to 2 decimals",
                       AnswerSpec("number", "a percent change", -100.0, 1000.0, 2)),
        "weighted_mean": (f"What is the mean {measure} weighted by {s.count_label} ({s.count})?", "",
                          "a number rounded to 3 decimals",
                          AnswerSpec("number", f"a weighted mean {s.measure_label} ({s.measure_unit})", lo, hi, 3)),
    }
    text, definition, fmt, spec = table[template]
    if spec.kind != "label":
        if range_stated:
            each = "each " if spec.kind == "mapping" else ""
            fmt = f"{fmt}, {each}between {spec.low:g} and {spec.high:g}"
        else:
            spec = dataclasses.replace(spec, low=-math.inf, high=math.inf)
    return text, definition, fmt, spec, threshold


def _conversion(s: Schema) -> str:
    return f"1 {s.canon_code} = {s.alt_factor:g} {s.alt_code}"


def observations(ds: Dataset, frame: pd.DataFrame) -> list[str]:
    """What OBSERVE reveals, in order: the data head, the schema, the export README (units, ranges)."""
    s = ds.schema
    lines = ds.csv.splitlines()
    head = f"First rows of {ds.file} ({len(frame)} rows, {frame.shape[1]} columns):\n" + "\n".join(lines[:7])
    cols = ", ".join(f"{c} ({frame[c].dtype}, {int(frame[c].notna().sum())} non-null)" for c in frame.columns)
    schema = f"Columns of {ds.file}: {cols}."
    lo, hi = s.count_range
    readme = (f"README of {ds.file}: {s.measure} is the {s.measure_label} in {s.measure_unit}, except rows whose "
              f"{s.unit_col} is '{s.alt_code}', which were recorded in {s.alt_code} ({_conversion(s)}). "
              f"{s.count}{'' if s.count_label == s.count else f' ({s.count_label})'} is valid from {lo} to {hi}; "
              f"other values are entry errors. "
              f"{s.date} covers {ds.months[0]} to {ds.months[-1]}. {s.group} takes the values "
              f"{', '.join(ds.groups)}.")
    return [head, schema, readme]


def dictionary_doc(s: Schema) -> dict[str, str]:
    """The data dictionary of an export format, with its cleaning rules (a RETRIEVE document shared by every
    branch's export of that format; what is specific to one file is in its README, an observation)."""
    lo, hi = s.count_range
    sentinels = ", ".join(str(v) for v in s.count_outliers)
    text = (
        f"Every branch's {s.title} is a file {s.file_stem}_<branch>.csv. Columns: {s.row_id} (record id), "
        f"{s.date} (ISO date), "
        f"{s.entity} (id of one of the {s.entity_label}), {s.group}, {s.measure} ({s.measure_label}), "
        f"{s.unit_col} (unit of {s.measure}: '{s.canon_code}' or '{s.alt_code}'), {s.count} ({s.count_label}). "
        f"The {s.amount_label} of a record is {s.measure} × {s.count}. "
        f"Cleaning rules, to apply before any analysis: (1) the export retries failed batches, so some records "
        f"are written twice; drop exact duplicate rows. (2) {s.entity} is typed by hand; strip spaces and upper-case "
        f"it. (3) rows whose {s.unit_col} is '{s.alt_code}' hold {s.measure} in {s.alt_code}; convert them to "
        f"{s.canon_code} ({_conversion(s)}). (4) {s.count} outside {lo}..{hi} (sentinels such as {sentinels}) is "
        f"an entry error; exclude those rows. (5) exclude rows without a {s.measure}. Rows without {s.entity} "
        f"stay in; an unknown {s.entity} does not count as one of the {s.entity_label}.")
    return {"doc_id": f"dict-{s.name}", "title": f"Data dictionary: {s.title} ({s.file_stem}_*.csv)", "text": text}


def evidence(ds: Dataset, template: str, broken: set[str]) -> tuple[list[int], list[str], list[dict[str, Any]]]:
    """Required observations, relevant documents and evidence tool calls, from the cleaning steps that change
    the answer (``broken``; none: the task needs no evidence, its prompt names the columns it uses).

    An observation is required when it shows a fault that matters: the first rows show hand-typed ids, the
    column summary the missing values, the README the units and valid ranges. The question template's pandas
    note and the data dictionary are relevant whenever some cleaning matters.
    """
    s = ds.schema
    required = set()
    if "ids" in broken:
        required.add(0)
    if "missing" in broken:
        required.add(1)
    if broken & {"units", "outliers"}:
        required.add(2)
    docs = [TEMPLATE_DOCS[template], f"dict-{s.name}"] if broken else []
    by_step = {"units": ("profile_column", {"column": s.measure}), "outliers": ("profile_column", {"column": s.count}),
               "dedupe": ("count_duplicates", {}), "ids": ("profile_column", {"column": s.entity}),
               "missing": ("profile_column", {"column": s.measure})}
    calls: list[dict[str, Any]] = []
    for step in ("units", "outliers", "dedupe", "ids", "missing"):
        name, args = by_step[step]
        call = {"name": name, "args": args}
        if step in broken and call not in calls:
            calls.append(call)
    return sorted(required), docs, calls[:2]


# ----- tasks ---------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """What running one program gave: the parsed answer, and whether it ran and parsed."""

    value: Any
    error: str


def run_program(code: str, workdir: Path) -> Outcome:
    stdout, error = execute(code, workdir)
    if error:
        return Outcome(None, error)
    value, problem = parse_output(stdout)
    return Outcome(value, problem)


def make_tasks(ds: Dataset, workdir: Path, stats: dict[str, int], range_stated: dict[str, bool]) -> list[dict[str, Any]]:
    """All questions about one dataset, with programs executed and labelled by the grader.

    :param ds: the dataset
    :param workdir: a scratch folder where the programs run
    :param stats: counts to update (tasks, wrong programs by checker outcome)
    :param range_stated: task id -> whether its question states a plausible range (numeric questions)
    """
    s = ds.schema
    (workdir / ds.file).write_text(ds.csv)
    frame = pd.read_csv(io.StringIO(ds.csv))
    truth_dir = workdir / "truth"
    truth_dir.mkdir(exist_ok=True)
    ds.truth.to_csv(truth_dir / ds.file, index=False)
    obs = observations(ds, frame)
    tasks = []
    for template in s.templates:
        task_id = f"data-{ds.name}-{template}"
        text, definition, fmt, spec, threshold = question(ds, template, len(frame), range_stated.get(task_id, False))
        names = _names(ds, threshold)
        reference = program(names, ANALYSIS_CODE[template])
        ref = run_program(reference, workdir)
        if ref.error:
            raise RuntimeError(f"{ds.name}/{template}: reference failed: {ref.error}")
        verdict = sanity(spec, ref.value)
        if not verdict.ok:
            raise RuntimeError(f"{ds.name}/{template}: reference fails the checker: {verdict.feedback}")
        truth = run_program(analysis_only(names, template), truth_dir)
        if score(spec, truth.value, ref.value) < 1.0:
            raise RuntimeError(f"{ds.name}/{template}: cleaning does not recover the truth: "
                               f"{ref.value!r} vs {truth.value!r}")
        candidates = [{"kind": "reference", "content": reference, "correct": True}]
        broken: set[str] = set()
        for kind, code in mutants(names, template, s.measure_alias).items():
            out = run_program(code, workdir)
            quality = 0.0 if out.error else score(spec, out.value, ref.value)
            if quality >= 1.0:
                continue  # equivalent to the reference on this dataset
            if kind in CLEANING_OF and CLEANING_OF[kind] in ds.faults:
                broken.add(CLEANING_OF[kind])  # a fault the export has, whose cleaning changes this answer
            candidates.append({"kind": kind, "content": code, "correct": False})
            passes = not out.error and sanity(spec, out.value).ok
            stats["wrong"] += 1
            stats["wrong_pass_checker" if passes else "wrong_fail_checker"] += 1
        required, docs, calls = evidence(ds, template, broken)
        ood = s.name in OOD_SCHEMAS
        difficulty = min(0.95, TEMPLATE_BASE_DIFFICULTY[template] + 0.1 * len(broken) + (0.1 if ood else 0.0))
        provenance = ("The file is a validated extract that passed every check of its data dictionary."
                      if not ds.faults else "It is a raw export: clean the data as its data dictionary prescribes "
                                            "before answering.")
        prompt = (f"{ds.place} {s.title}, file {ds.file} ({len(frame)} rows; columns {', '.join(frame.columns)}). "
                  f"{text} {definition + ' ' if definition else ''}{provenance} Write a pandas program that reads "
                  f"{ds.file} from the working directory and prints the answer as JSON on its last line: {fmt}.")
        tasks.append({
            "task_id": task_id, "split": ds.split, "family": template, "dataset": ds.name,
            "difficulty": round(difficulty, 3), "prompt": prompt, "question": text, "observations": obs,
            "required_observations": required, "relevant_docs": docs, "tool_calls": calls,
            "answer_spec": spec.to_json(), "expected": ref.value, "candidates": candidates,
            "mix": {"dirt_kinds": len(ds.faults), "range_stated": spec.range_stated, "cleaning_matters": bool(broken)},
        })
        stats["tasks"] += 1
    return tasks


def datasets(seed: int = SEED) -> list[Dataset]:
    """Every dataset of the bank, deterministically from ``seed``; each split's datasets get their number of
    kinds of dirt by quota (:data:`DIRT_KINDS_MIX`) over a seeded shuffle."""
    places = list(np.random.default_rng(seed).permutation(PLACES))
    layout = []
    for si, schema in enumerate(SCHEMAS):
        ood = schema.name in OOD_SCHEMAS
        for k in range(OOD_DATASETS if ood else IN_DIST_DATASETS):
            layout.append((si, k, "ood" if ood else ("train" if k < 7 else "val" if k < 9 else "test")))
    n_faults: dict[tuple[int, int], int] = {}
    for i, split in enumerate(("train", "val", "test", "ood")):
        members = [(si, k) for si, k, sp in layout if sp == split]
        order = np.random.default_rng([seed, 1 + i]).permutation(len(members))
        n_faults.update(zip((members[j] for j in order), quota(len(members), DIRT_KINDS_MIX)))
    out = []
    for si, k, split in layout:
        rng = np.random.default_rng([seed, si, k])
        out.append(make_dataset(SCHEMAS[si], str(places.pop()), split, rng, n_faults[si, k]))
    return out


def range_mix(all_sets: list[Dataset], seed: int) -> dict[str, bool]:
    """Task id -> whether its question states a plausible range: each split's numeric questions by quota
    (:data:`RANGE_STATED_MIX`) over a seeded shuffle.

    :param all_sets: every dataset
    :param seed: the generator's seed
    """
    out: dict[str, bool] = {}
    for i, split in enumerate(("train", "val", "test", "ood")):
        ids = [f"data-{ds.name}-{t}" for ds in all_sets if ds.split == split for t in ds.schema.templates
               if t != "argmax_month"]
        order = np.random.default_rng([seed, 11 + i]).permutation(len(ids))
        out.update(zip((ids[j] for j in order), quota(len(ids), RANGE_STATED_MIX)))
    return out


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")


def generate(out: Path, seed: int = SEED) -> dict[str, Any]:
    """Write the whole bank under ``out``; returns counts of tasks and wrong candidates, and the task mix per
    split (:func:`mix_summary`)."""
    stats: dict[str, Any] = dict.fromkeys(("tasks", "wrong", "wrong_pass_checker", "wrong_fail_checker"), 0)
    all_sets = datasets(seed)
    stated = range_mix(all_sets, seed)
    (out / "datasets").mkdir(parents=True, exist_ok=True)
    tasks: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for ds in all_sets:
            (out / "datasets" / ds.file).write_text(ds.csv, encoding="utf-8")
            tasks.extend(make_tasks(ds, Path(tmp), stats, stated))
    _write_jsonl(out / "datasets.jsonl", [
        {"name": ds.name, "file": f"datasets/{ds.file}", "schema": ds.schema.name, "split": ds.split,
         "place": ds.place, "faults": sorted(ds.faults), "unit_columns": {ds.schema.measure: ds.schema.unit_col}}
        for ds in all_sets])
    notes = [{"doc_id": d.doc_id, "title": d.title, "text": d.text} for d in read_documents(NOTES_FILE)]
    _write_jsonl(out / "corpus.jsonl", notes + [dictionary_doc(s) for s in SCHEMAS])
    _write_jsonl(out / "tasks.jsonl", tasks)
    stats["mix_per_split"] = mix_summary(tasks)
    return stats


def mix_summary(tasks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per split: tasks by kinds of dirt in their export, tasks whose question states a range (of those with a
    numeric answer), tasks where some cleaning changes the answer, and tasks with a wrong program that passes
    the checker.

    :param tasks: the task records
    """
    out: dict[str, dict[str, Any]] = {}
    for split in ("train", "val", "test", "ood"):
        rows = [t for t in tasks if t["split"] == split]
        kinds: dict[str, int] = {}
        for t in rows:
            kinds[str(t["mix"]["dirt_kinds"])] = kinds.get(str(t["mix"]["dirt_kinds"]), 0) + 1
        out[split] = {"tasks": len(rows), "dirt_kinds": dict(sorted(kinds.items())),
                      "numeric": sum(t["answer_spec"]["kind"] != "label" for t in rows),
                      "range_stated": sum(t["mix"]["range_stated"] for t in rows),
                      "cleaning_matters": sum(t["mix"]["cleaning_matters"] for t in rows)}
    return out


def main(argv: list[str] | None = None) -> None:
    generator_main(__doc__, "data", generate, SEED, lambda stats, out: json.dumps(stats), argv)


if __name__ == "__main__":
    main()
