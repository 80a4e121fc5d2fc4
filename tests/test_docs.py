"""Every registered env documents itself in Gymnasium's sections, and its docstring example runs."""

from __future__ import annotations

import doctest
import importlib

import gymnasium as gym
import pytest

import harness_gym
from harness_gym.core.state import FEATURE_NAMES

SECTIONS = ("## Description", "## Action Space", "## Observation Space", "## Rewards", "## Starting State",
            "## Episode End", "## Info", "## Arguments")


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_env_docstring_has_every_section_and_the_feature_table(env_id):
    cls = gym.spec(env_id).entry_point
    module_name, class_name = cls.split(":")
    doc = getattr(importlib.import_module(module_name), class_name).__doc__
    for section in SECTIONS:
        assert section in doc, f"{env_id}: docstring lacks {section}"
    assert "{observation_table}" not in doc and "{episode_end}" not in doc and "{info}" not in doc
    assert 'info["action_mask"]' in doc or "``action_mask``" in doc
    assert 'get_wrapper_attr("action_masks")' in doc
    for i, name in enumerate(FEATURE_NAMES):
        assert f"| {i} | {name} |" in doc
    assert f'gym.make("{env_id}"' in doc


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_env_docstring_example_runs(env_id):
    module = importlib.import_module(gym.spec(env_id).entry_point.split(":")[0])
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{env_id}: no example in the docstring"
    assert result.failed == 0


def test_the_docs_index_lists_every_doc_and_every_link_resolves():
    import re
    from pathlib import Path

    docs = Path(__file__).resolve().parents[1] / "docs"
    index = (docs / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", index)
    assert links, "docs/README.md links to nothing"
    for link in links:
        assert (docs / link).exists(), f"docs/README.md links to {link}, which does not exist"
    listed = {(docs / link).resolve() for link in links}
    every = {p.resolve() for p in docs.iterdir() if p.name != "README.md" and (p.suffix == ".md" or p.is_dir())}
    assert every <= listed, f"docs/README.md does not list {sorted(p.name for p in every - listed)}"
    rows = [line for line in index.splitlines() if line.startswith("| [")]
    assert len(rows) == len(every) and all(line.count("|") == 3 and len(line.split("|")[2].strip()) > 10
                                           for line in rows), "one row and one line of text per doc"


def test_the_quick_run_time_is_stated_once_by_the_script_block():
    import re
    from pathlib import Path

    from harness_gym_baselines.report.readme import markers

    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs/reproduce.md").read_text()  # scripts/readme_tables.py's default document
    begin, end = markers("quick")
    assert doc.count(begin) == 1 and doc.count(end) == 1
    block = doc.split(begin, 1)[1].split(end, 1)[0]
    assert block.count("From an empty `--out` the quick run took") == 1
    assert "](figures/quick_frontier.png)" in block and (root / "docs/figures/quick_frontier.png").is_file()
    readme = (root / "README.md").read_text()
    if begin in readme:  # the copy the block was moved from, until the README drops it
        readme = readme.split(begin, 1)[0] + readme.split(end, 1)[1]
    for name, text in (("README.md", readme), ("scripts/main.sh", (root / "scripts/main.sh").read_text()),
                       ("docs/reproduce.md", doc.replace(block, ""))):
        assert not re.search(r"quick[^.]*?\b(about|at most) \d+ min", text, re.S | re.I), name
        assert "quick run took" not in text, name
