"""docs/extending.md, "A new domain", followed literally: the test writes a domain outside ``harness_gym`` with
exactly the files the recipe's table lists (read from the doc, and counted), generates its data with its own
generator into its own assets folder, registers it with one ``register_env`` call and runs Gymnasium's
``check_env`` and episodes on its ``-v1`` and ``-v2`` ids. Nothing inside ``harness_gym`` is edited or injected: the
domain names its assets folder (profiles, prompts, data)."""

from __future__ import annotations

import json
import re
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"
PACKAGE = "letters_domain"
NAME = "letters"
ENV_ID = "HarnessLetters-v1"
ENV_ID_V2 = "HarnessLetters-v2"

FILES: dict[str, str] = {
    "__init__.py": '''"""The letters domain: how many times does a letter occur in a word (the recipe of docs/extending.md)."""
''',
    "sources/inputs.json": json.dumps({
        "words": ["banana", "committee", "balloon", "mississippi", "bookkeeper", "letter", "assessment",
                  "parallel", "coffee", "success", "address", "tomorrow", "occurrence", "referee", "possess",
                  "millennium"],
        "ood_words": ["unreasonableness", "incomprehensibilities", "counterrevolutionaries", "disproportionateness"],
        "notes": [{"doc_id": "counting", "title": "Counting letters",
                   "text": "spell the word letter by letter and count each occurrence of the letter"},
                  {"doc_id": "vowels", "title": "Vowels", "text": "the vowels are a e i o u"}]}, indent=1),
    "generate.py": '''"""Write the letters task bank: ``python -m letters_domain.generate [--out DIR] [--seed N]``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.extend import generator_main, read_json, write_jsonl
from letters_domain.domain import LettersDomain
from letters_domain.grader import grade
from letters_domain.mutations import wrong_counts

INPUTS = Path(__file__).resolve().parent / "sources" / "inputs.json"
SPLITS = ["train"] * 10 + ["val"] * 3 + ["test"] * 3


def task(index: int, word: str, split: str, rng: np.random.Generator) -> dict[str, Any]:
    letter = word[int(rng.integers(len(word)))]
    count = word.count(letter)
    candidates = [{"content": str(count), "kind": "reference"}]
    candidates += [{"content": str(c), "kind": kind} for kind, c in wrong_counts(count)]
    for cand in candidates:
        cand["correct"] = grade(word, letter, cand["content"]) == 1.0
    return {"task_id": f"letters-{index}", "split": split, "family": "count",
            "difficulty": round(min(1.0, len(word) / 25), 3),
            "prompt": f"How many times does the letter {letter!r} occur in the word {word!r}?",
            "candidates": candidates, "observations": [f"The word has {len(word)} letters.",
                                                       "Upper and lower case count as the same letter."],
            "required_observations": [0], "relevant_docs": ["counting"],
            "tool_calls": [{"name": "spell", "args": {"word": word}}], "word": word, "letter": letter}


def generate(out: Path, seed: int = 0) -> int:
    """Write tasks.jsonl and corpus.jsonl to ``out``; return the number of tasks."""
    inputs = read_json(INPUTS)
    rng = np.random.default_rng(seed)
    tasks = [task(i, w, s, rng) for i, (w, s) in enumerate(zip(inputs["words"], SPLITS, strict=True))]
    tasks += [task(len(tasks) + i, w, "ood", rng) for i, w in enumerate(inputs["ood_words"])]
    write_jsonl(out / "corpus.jsonl", inputs["notes"])
    return write_jsonl(out / "tasks.jsonl", tasks)


def main(argv: list[str] | None = None) -> None:
    generator_main(__doc__, "letters", generate, 0, lambda n, out: f"wrote {n} tasks to {out}", argv,
                   assets_dir=LettersDomain.assets_dir)


if __name__ == "__main__":
    main()
''',
    "mutations.py": '''"""Wrong counts: off by one either way (they pass the checker), and none at all (it does not)."""

from __future__ import annotations


def wrong_counts(count: int) -> list[tuple[str, int]]:
    out = [("one_too_many", count + 1), ("none", 0)]
    if count > 1:
        out.append(("one_too_few", count - 1))
    return out
''',
    "tools.py": '''"""The letters tool: spell a word."""

from __future__ import annotations

from harness_gym.extend import ToolError, ToolTable, object_schema

TOOLS = ToolTable()


@TOOLS.tool("Spell a word letter by letter.", object_schema({"word": {"type": "string", "maxLength": 40}}))
def spell(word: str) -> str:
    if not word.isalpha():
        raise ToolError(f"{word!r} is not a word")
    return " ".join(word)
''',
    "checker.py": '''"""CHECK: the answer is a whole number the word could hold (at least 1, at most its length)."""

from __future__ import annotations

from harness_gym.extend import CheckResult


def check(word: str, answer: str) -> CheckResult:
    if not answer.strip().isdigit():
        return CheckResult(False, f"{answer!r} is not a whole number", specificity=0.8)
    ok = 1 <= int(answer) <= len(word)
    return CheckResult(ok, "plausible" if ok else f"{answer} is outside 1..{len(word)}", specificity=0.6)
''',
    "grader.py": '''"""SUBMIT: 1 for the exact count, else 0."""

from __future__ import annotations


def grade(word: str, letter: str, answer: str) -> float:
    return 1.0 if answer.strip() == str(word.lower().count(letter.lower())) else 0.0
''',
    "domain.py": '''"""The letters Domain: reads the generated data and hands TOOL, CHECK and SUBMIT to its modules."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from harness_gym.extend import (
    CheckResult,
    Context,
    Domain,
    Draft,
    Sandbox,
    Task,
    ToolCall,
    ToolResult,
    parse_task,
    read_documents,
    read_jsonl,
    require,
)
from letters_domain import checker, grader
from letters_domain.tools import TOOLS


class LettersDomain(Domain):
    name = "letters"
    assets_dir = Path(__file__).resolve().parent / "assets"

    def __init__(self, data_dir: Path) -> None:
        super().__init__()
        self.tools = TOOLS.specs
        self.corpus = read_documents(data_dir / "corpus.jsonl")
        path = data_dir / "tasks.jsonl"
        tasks = []
        for line, rec in read_jsonl(path):
            where = {"path": path, "line": line, "task_id": rec.get("task_id")}
            payload = (require(rec, "word", str, **where), require(rec, "letter", str, **where))
            tasks.append(parse_task(rec, path=path, line=line, payload=payload))
        self.add_tasks(tasks)

    def call_tool(self, task: Task, call: ToolCall, ctx: Context, sandbox: Sandbox | None, *,
                  resource: None = None) -> ToolResult:
        return TOOLS.call(call.name, **call.args)

    def check(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> CheckResult:
        return checker.check(task.payload[0], draft.content)

    def grade(self, task: Task, draft: Draft, sandbox: Sandbox | None, *, resource: None = None) -> float:
        return grader.grade(*task.payload, draft.content)


@lru_cache(maxsize=8)
def load_letters_domain(data_dir: str | None = None) -> LettersDomain:
    return LettersDomain(Path(data_dir) if data_dir is not None else LettersDomain.assets_dir / "letters")
''',
    "env.py": '''"""HarnessLetters: the Harness MDP over the letters domain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_gym.extend import HarnessEnv, document_env
from letters_domain.domain import load_letters_domain


@document_env
class HarnessLettersEnv(HarnessEnv):
    """
    ## Description

    Count the occurrences of a letter in a word. Tool ``spell(word)``; the checker accepts any count the word
    could hold, the grader only the exact one.

    ## Action Space

    ``Discrete(7)``: OBSERVE, RETRIEVE, TOOL, DRAFT, CHECK, REVISE, SUBMIT.

    ## Observation Space

    {observation_table}

    ## Rewards

    The grade of the submitted count (0 or 1) on the last step, 0 before.

    ## Starting State

    A task drawn uniformly from the split, no evidence, no draft, the full budget.

    ## Episode End

    {episode_end}

    ## Arguments

    ```python
    env = gym.make("HarnessLetters-v1", data_dir=None, split="train", budget=30)
    ```
    """

    def __init__(self, data_dir: str | None = None, **kwargs: Any) -> None:
        super().__init__(load_letters_domain(data_dir), **kwargs)
''',
    "assets/prompts/letters.json": json.dumps({"draft_format": "answer", "templates": {"draft": [
        "{{context}}", "", "Count the letter in the word. Reply with the count only, in digits."]}}, indent=1),
}
"""The hand-written files, by path in the package (the profiles are written by the fixture: the toy example's for
``-v1`` and the shipped Plan domain's ``-v2`` profile, renamed)."""


def recipe_paths() -> tuple[list[str], int]:
    """The paths of the "outside it" column of the recipe's table (``<package>/`` dropped, ``<name>`` filled
    in; a folder ends with ``/``) and the number of files the doc says a domain outside the package has."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## A new domain"):text.index("## A new worker")]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`<package>/" in line]
    paths = [re.findall(r"`<package>/([^`]*)`", row.split("|")[2])[0].replace("<name>", NAME) for row in rows]
    stated = re.search(r"outside the package: (\d+)\s+files", section)
    assert stated is not None, "the recipe no longer states how many files a domain outside the package has"
    return paths, int(stated.group(1))


def test_the_recipe_lists_every_role_of_a_domain():
    paths, _ = recipe_paths()
    assert paths == ["__init__.py", "sources/", "generate.py", "mutations.py", "tools.py", "checker.py",
                     "grader.py", "domain.py", "env.py", f"assets/{NAME}/", f"assets/profiles/{NAME}.json",
                     f"assets/profiles/v2/{NAME}.json", f"assets/prompts/{NAME}.json"]


@pytest.fixture
def letters_package(tmp_path, monkeypatch):
    """The domain written as the recipe says, its data generated by its own generator, and registered."""
    package = tmp_path / PACKAGE
    for rel, text in FILES.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text, encoding="utf-8")
    for shipped, rel in ((ROOT / "examples" / "toy_domain" / "profiles" / "toy.json", f"profiles/{NAME}.json"),
                         (ROOT / "envs_data" / "profiles" / "v2" / "plan.json", f"profiles/v2/{NAME}.json")):
        profile = json.loads(shipped.read_text(encoding="utf-8"))
        (package / "assets" / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / "assets" / rel).write_text(json.dumps({**profile, "domain": NAME}, indent=1), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    from letters_domain import generate  # imported from the folder just written

    from harness_gym.extend import register_env

    generate.main([])  # no --out: the domain's own assets folder, never harness_gym's envs_data
    assert not (ROOT / "envs_data" / NAME).exists()
    assert register_env("HarnessLetters", "letters_domain.env:HarnessLettersEnv") == (ENV_ID, ENV_ID_V2)
    yield package
    for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
        del sys.modules[name]  # the next test imports its own copy from its own folder


def test_a_domain_with_exactly_the_recipes_files_passes_check_env_and_runs(letters_package):
    assert len((letters_package / "assets" / NAME / "tasks.jsonl").read_text(encoding="utf-8").splitlines()) == 20
    written = sorted(str(p.relative_to(letters_package)) for p in letters_package.rglob("*")
                     if p.is_file() and "__pycache__" not in p.parts)
    paths, stated = recipe_paths()
    files = [p for p in paths if not p.endswith("/")]
    folders = [p for p in paths if p.endswith("/")]
    assert {w for w in written if not any(w.startswith(f) for f in folders)} == set(files)
    assert all(any(w.startswith(f) for w in written) for f in folders)
    assert len(written) == stated == 14, written  # all inside the package: nothing in harness_gym is edited

    for env_id in (ENV_ID, ENV_ID_V2):
        made = gym.make(env_id)  # (-v1 is a kept preset: harness_gym silences Gymnasium's "out of date" for it)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(made.unwrapped, skip_render_check=True)
        assert [str(w.message) for w in caught] == []
    env = gym.make(ENV_ID)
    outcomes = set()
    for seed in range(30):
        env.reset(seed=seed, options={"task_id": "letters-0"})  # 'banana'
        for action in (0, 2, 3, 4):  # OBSERVE, TOOL, DRAFT, CHECK
            _, _, terminated, truncated, info = env.step(action)
            assert not terminated and not truncated and not info["invalid_action"]
        draft = env.unwrapped.context.draft.content
        passed = env.unwrapped.context.last_check.passed
        _, reward, terminated, _, info = env.step(6)
        letter = env.unwrapped.task.payload[1]
        assert terminated and reward == info["quality"] == float(draft == str("banana".count(letter)))
        outcomes.add((passed, info["quality"]))
        assert info["cost"]["llm_calls"] == 0 and info["cost"]["units"] == 0.0  # SUBMIT calls no model
    assert (True, 1.0) in outcomes and (True, 0.0) in outcomes, outcomes  # the checker's support ceiling
    env.close()


def test_each_version_reads_its_profile_from_the_domains_assets(letters_package):
    from harness_gym.extend import TaskFileError
    from harness_gym.workers import WorkerProfile

    profiles = letters_package / "assets" / "profiles"
    for env_id, path in ((ENV_ID, profiles / f"{NAME}.json"), (ENV_ID_V2, profiles / "v2" / f"{NAME}.json")):
        assert gym.make(env_id).unwrapped.worker.profile == WorkerProfile.load(path)
    assert WorkerProfile.load(profiles / f"{NAME}.json") != WorkerProfile.load(profiles / "v2" / f"{NAME}.json")
    (profiles / "v2" / f"{NAME}.json").unlink()
    with pytest.raises(TaskFileError, match=r"assets/profiles/v2/letters\.json"):
        gym.make(ENV_ID_V2)


def test_the_recipes_tool_refusal_and_grade_are_checked_by_the_env(letters_package):
    from harness_gym.extend import Context, ToolCall, ToolResult

    env = gym.make(ENV_ID).unwrapped
    task = env.domain.task("letters-0")
    refused = env.domain.run_tool(task, ToolCall("spell", {"word": "b4n"}), Context(task=task), None)
    assert refused == ToolResult(ok=False, output="", error="'b4n' is not a word")
    env.reset(seed=0, options={"task_id": "letters-0"})
    env.step(3)  # DRAFT
    env.grade_draft = lambda *args, **kwargs: 1.5  # an env's own grading still meets the [0, 1] check
    with pytest.raises(RuntimeError, match="grader returned 1.5 for task letters-0"):
        env.step(6)


def test_the_generator_of_an_outside_domain_without_an_assets_folder_needs_out(letters_package, capsys):
    from harness_gym.extend import generator_main

    with pytest.raises(SystemExit):
        generator_main("Write nothing.", NAME, lambda out, seed: 0, argv=[])
    assert "the following arguments are required: --out" in capsys.readouterr().err


def test_the_recipes_domain_without_its_prompt_file_fails_with_either_worker(letters_package):
    from harness_gym.core.taskfile import TaskFileError

    (letters_package / "assets" / "prompts" / f"{NAME}.json").unlink()
    for worker, options in (("simulated", {}), ("openai", {"model": "m", "base_url": "http://127.0.0.1:9/v1"})):
        with pytest.raises(TaskFileError, match=r"letters\.json: no prompt file for domain 'letters'"):
            gym.make(ENV_ID, worker=worker, **options)
