"""DB-Bench files as upstream publishes them: every kind of record that cannot be built is left out and
reported (file, line, record id, reason) in one warning, ``strict=True`` raises on the first, and the ood
split holds out the WikiTableQuestions tables."""

from __future__ import annotations

import copy
import json
import re
import warnings
from collections import Counter
from pathlib import Path

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the envs)
from harness_gym.core.taskfile import TaskFileError
from harness_gym.domains.dbbench.domain import LeftOutRecordsWarning, load_dbbench_bank
from harness_gym.domains.dbbench.grader import table_hash
from harness_gym.domains.dbbench.upstream import OOD_SOURCE, content_split, load_records
from tests.shared_data import SHARED_DATA, shared_data_mark

REAL_FILE = SHARED_DATA / "dbbench" / "standard.jsonl"
needs_real = shared_data_mark("dbbench", "standard.jsonl")

ROWS = [["Ana", "12"], ["Bo", "7"], ["Cy", "9"]]


def _table(columns: list[str], rows: list[list[str]]) -> dict:
    return {"table_name": "scores", "table_info": {"columns": [{"name": c, "type": "TEXT"} for c in columns],
                                                   "rows": rows}}


def _insert(description: str = "Add Di with score 5.") -> dict:
    md5 = table_hash([tuple(r) for r in ROWS] + [("Di", "5")])
    return {"description": description, "add_description": "The table is scores.", "type": ["INSERT"],
            "table": _table(["Name", "Score"], ROWS), "answer_md5": repr([(md5,)]),
            "sql": {"query": "INSERT INTO scores (Name, Score) VALUES ('Di', '5')"}, "label": []}


def _counting() -> dict:
    return {"description": "How many players scored more than 8?", "add_description": "", "type": ["counting"],
            "table": _table(["Name", "Score"], ROWS), "label": ["2"],
            "sql": {"query": "SELECT COUNT(*) FROM scores WHERE CAST(Score AS DECIMAL) > 8"}}


def _with(record: dict, edit) -> dict:
    record = copy.deepcopy(record)
    edit(record)
    return record


BAD_RECORDS: dict[str, tuple[dict, str]] = {
    # as in a published release: a table with two columns named 'Score'
    "duplicate_columns": (_with(_counting(), lambda r: r.update(table=_table(["Name", "Score", "Score"],
                                                                             [x + ["0"] for x in ROWS]))),
                          "duplicate column name 'Score'.*error 1060"),
    "duplicate_columns_case": (_with(_insert(), lambda r: r["table"]["table_info"]["columns"][1].update(name="name")),
                               "duplicate column name 'Name'"),
    "short_row": (_with(_counting(), lambda r: r["table"]["table_info"]["rows"][1].pop()),
                  r"rows\[1\].*row has 1 values for 2 columns.*error 1136"),
    "hash_not_reproduced": (_with(_insert(), lambda r: r.update(answer_md5=repr([("0" * 32,)]))),
                            "does not reproduce answer_md5"),
    "bad_md5_form": (_with(_insert(), lambda r: r.update(answer_md5="[1, 2]")), "answer_md5.*not an md5 result"),
    "no_description": (_with(_counting(), lambda r: r.pop("description")), "description.*missing required field"),
    "no_label": (_with(_counting(), lambda r: r.update(label=[])), "label.*needs a non-empty label"),
    "unknown_split": (_with(_counting(), lambda r: r.update(split="holdout")), "split.*unknown split 'holdout'"),
    "no_reference": (_with(_insert(), lambda r: (r.pop("sql"), r.update(label=[]))), "no reference statement"),
}


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _load(path: Path, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bank = load_dbbench_bank(str(path), **kwargs)
    return bank, [w for w in caught if issubclass(w.category, LeftOutRecordsWarning)]


@pytest.mark.parametrize("kind", sorted(BAD_RECORDS))
def test_each_kind_of_bad_record_is_left_out_and_reported(tmp_path, kind):
    bad, reason = BAD_RECORDS[kind]
    path = _write(tmp_path / f"{kind}.jsonl", [_insert(), bad, _counting()])
    bank, caught = _load(path)
    assert len(bank.tasks) == 2 and [t.family for t in bank.tasks] == ["INSERT", "counting"]
    assert [(r.path, r.line, r.record_id) for r in bank.left_out] == [(str(path), 2, f"{kind}-2")]
    assert re.search(reason, bank.left_out[0].reason), bank.left_out[0]
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"{path}: 1 of 3 records left out" in message and f"{path}, line 2, record '{kind}-2'" in message
    with pytest.raises(TaskFileError) as err:
        load_dbbench_bank(str(path), strict=True)
    assert (err.value.path, err.value.line, err.value.task_id) == (str(path), 2, f"{kind}-2"), str(err.value)


def test_one_warning_counts_every_left_out_record_and_the_domain_reports_them(tmp_path):
    records = [_insert()] + [bad for bad, _ in BAD_RECORDS.values()] + [_with(_counting(), lambda r: r.update(id="x")),
                                                                       _with(_counting(), lambda r: r.update(id="x"))]
    path = _write(tmp_path / "release.jsonl", records)
    bank, caught = _load(path)
    n_bad = len(BAD_RECORDS) + 1  # and the second record with id "x"
    assert len(caught) == 1 and f"{n_bad} of {len(records)} records left out" in str(caught[0].message)
    assert [r.line for r in bank.left_out] == list(range(2, 2 + len(BAD_RECORDS))) + [len(records)]
    assert "duplicate record id (also on line" in bank.left_out[-1].reason
    env = gym.make("HarnessDBBench-v1", data_path=str(path))
    assert env.unwrapped.domain.load_report == bank.left_out
    env.close()
    with pytest.raises(TaskFileError, match=r"release.jsonl, line 2, task 'release-2'"):
        gym.make("HarnessDBBench-v1", data_path=str(path), strict=True)


def test_a_file_of_only_bad_records_is_an_error_naming_them(tmp_path):
    path = _write(tmp_path / "bad.jsonl", [BAD_RECORDS["short_row"][0], BAD_RECORDS["no_label"][0]])
    with pytest.raises(TaskFileError, match=r"no record yields a task: .*bad.jsonl, line 1, record 'bad-1'"):
        load_dbbench_bank(str(path))


def test_ood_holds_out_wikitq_tables_from_train_and_val_only(tmp_path):
    records = [_with(_counting(), lambda r, i=i, src=src: r.update(description=f"Question {i}?", source=src))
               for i in range(60) for src in ("wikisql", OOD_SOURCE)]
    records.append(_with(_counting(), lambda r: r.update(source=OOD_SOURCE, split="train")))
    read = load_records(_write(tmp_path / "src.jsonl", records))
    for raw, rec in zip(records, read.records):
        hashed = content_split(raw)
        if "split" in raw:
            assert rec.split == "train"
        elif raw["source"] == OOD_SOURCE and hashed in ("train", "val"):
            assert rec.split == "ood"
        else:
            assert rec.split == hashed
    splits = Counter(r.split for r in read.records)
    assert splits["ood"] > 0 and splits["test"] > 0


@needs_real
def test_the_published_standard_file_loads_with_its_one_unreproducible_hash_reported():
    bank, caught = _load(REAL_FILE)
    assert [(r.line, r.record_id) for r in bank.left_out] == [(226, "standard-226")]
    assert "answer_md5 matches neither" in bank.left_out[0].reason
    assert len(bank.tasks) == 299 and len(caught) <= 1  # the bank is cached: warned once per process
    raw = [json.loads(line) for line in REAL_FILE.read_text(encoding="utf-8").splitlines()]
    ood = {t.task_id for t in bank.tasks if t.split == "ood"}
    expected = {f"standard-{i + 1}" for i, r in enumerate(raw)
                if r.get("source") == OOD_SOURCE and content_split(r) in ("train", "val")}
    assert ood == expected - {"standard-226"} and len(ood) == 57
    assert Counter(t.family for t in bank.tasks if t.split == "ood").keys() >= {"INSERT", "UPDATE", "counting",
                                                                                 "ranking", "other"}
    assert not any(raw[int(t.task_id.split("-")[1]) - 1].get("source") == OOD_SOURCE
                   for t in bank.tasks if t.split in ("train", "val"))
