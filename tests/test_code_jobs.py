"""The code domain's job as it is sent (:data:`~harness_gym.domains.code.sandbox_jobs.HARNESS_JOB`: the harness's
code object marshalled on the host, the source as fallback; ``ast`` preloaded in the server) reports what the
harness source itself reports, for every kind of outcome."""

from __future__ import annotations

import importlib.util
import json
import random

import pytest

from harness_gym.domains.code.sandbox_jobs import (
    CALLS_FILE,
    HARNESS_JOB,
    HARNESS_PRELOAD,
    HARNESS_SCRIPT,
    JOB_TIMEOUT_S,
    SOLUTION_FILE,
    decode_literal,
    job_code,
    read_literal,
)
from harness_gym.sandbox import make_sandbox

DRAFTS = [
    ("def f(x):\n    return x * 2\n", ["f(2)", "f('a')", "f(None)", "f([1, (2,)])"]),
    ("def f(x):\n    raise ValueError('no')\n", ["f(1)", "g(1)"]),
    ("import re\ndef f(x):\n    print('hi')\n    return re.sub('a', 'b', x)\n", ["f('aa')", "f(1)"]),
    ("def f(:\n", ["f(1)"]),
    ("def f(x):\n    while x:\n        pass\n    return 0\n", ["f(0)", "f(1)", "f(2)", "f(0)"]),
    ("class A:\n    pass\ndef f():\n    return A()\n", ["f()", "sorted({3, 1})"]),
    ("import os\ndef f():\n    os._exit(3)\n", ["f()", "1 + 1"]),
]


@pytest.fixture(scope="module", params=[(), HARNESS_PRELOAD], ids=["bare", "preloaded"])
def sandbox(request):
    box = make_sandbox("process", preload=request.param, cache=False)
    yield box
    box.close()


def _report(sandbox, code: str, source: str, calls: list[str]) -> str:
    result = sandbox.run(code, files={SOLUTION_FILE: source, CALLS_FILE: json.dumps(calls)}, timeout_s=JOB_TIMEOUT_S)
    assert result.ok and result.stderr == "", result
    return result.stdout


def test_the_sent_job_reports_what_the_harness_source_reports(sandbox) -> None:
    for source, calls in DRAFTS:
        assert _report(sandbox, HARNESS_JOB, source, calls) == _report(sandbox, HARNESS_SCRIPT, source, calls)


def test_a_job_interpreter_of_another_bytecode_compiles_the_source(sandbox, monkeypatch) -> None:
    monkeypatch.setattr(importlib.util, "MAGIC_NUMBER", b"\x00\x00\r\n")
    other = job_code(HARNESS_SCRIPT)
    assert other != HARNESS_JOB
    for source, calls in DRAFTS[:3]:
        assert _report(sandbox, other, source, calls) == _report(sandbox, HARNESS_SCRIPT, source, calls)


def _same_value(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is list:
        return len(a) == len(b) and all(map(_same_value, a, b))
    return repr(a) == repr(b)


def _decoded(fn, text: str):
    try:
        return True, fn(text)
    except ValueError:
        return False, None


@pytest.mark.parametrize("seed", range(4))
def test_values_read_directly_are_what_decode_literal_reads(seed: int) -> None:
    pieces = ["0", "1", "-3", "007", "-0", "12345678901234567890", "123456789012345678", "'a'", "'a b'", "'it''s'",
              '"x"', "'\\\\n'", "'é'", "'\t'", "True", "None", "False", "1.5", "[", "]", ", ", ",", " ", "'", "(", ")",
              "1_0", "{}", "'a, 2'", "--1", "+1", "0x1", "'[1]'", "2.5", "-0.0", "1e-05", "1.5e+300", "012e+5", "1e999", "nan", "1.", ".5", "(", "(1,)", "()"]
    rng = random.Random(seed)
    for _ in range(20_000):
        items = pieces[:17] + pieces[-11:-3]
        if rng.random() < 0.4:
            opening, closing = rng.choice(["[]", "()"])
            text = opening + ", ".join(rng.choice(items) for _ in range(rng.randint(0, 4))) + rng.choice(["", ","]) + closing
        else:
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 5)))
        (ok, got), (want_ok, want) = _decoded(read_literal, text), _decoded(decode_literal, text)
        assert ok == want_ok and _same_value(got, want), text


def test_a_text_over_the_message_bound_is_refused_however_plain_it_looks() -> None:
    from harness_gym.domains.code.sandbox_jobs import MAX_MESSAGE_BYTES

    at_bound = "[" + ", ".join(["1"] * ((MAX_MESSAGE_BYTES - 2) // 3)) + "]"
    assert len(at_bound) <= MAX_MESSAGE_BYTES and read_literal(at_bound) == decode_literal(at_bound)
    for text in ("[" + "1, " * (MAX_MESSAGE_BYTES // 3) + "1]", "'" + "a" * MAX_MESSAGE_BYTES + "'",
                 "1" * (MAX_MESSAGE_BYTES + 1)):
        for fn in (read_literal, decode_literal):
            with pytest.raises(ValueError):
                fn(text)
