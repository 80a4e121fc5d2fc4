"""docs/extending.md, "A new trainer", followed literally: its code blocks become the trainer's module and its
registry line, its commands run through the ``harness-gym`` entry point, and what they print and write is
checked; a model file no registered trainer wrote is refused in one line."""

from __future__ import annotations

import importlib
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness_gym.datasets import load_transitions
from harness_gym_baselines.cli import main
from harness_gym_baselines.common import trainer_registry
from harness_gym_baselines.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "extending.md"


def trainer_recipe() -> dict:
    """The "A new trainer" section of docs/extending.md: its Python blocks (the module, the registry line), its
    shell commands, where it says to save the module and how many files it says the recipe touches."""
    text = DOC.read_text()
    section = text[text.index("## A new trainer"):].split("\n## ", 1)[0]
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.S)
    python = [body for lang, body in blocks if lang == "python"]
    assert len(python) == 2, "the section has two Python blocks: the trainer module and its registry line"
    entry = re.fullmatch(r'\s*"([\w-]+)": "([\w.]+):(\w+)",\s*', python[1])
    assert entry, f"the second Python block is one TRAINERS line, got {python[1]!r}"
    return {"module_source": python[0], "name": entry[1], "module": entry[2], "config": entry[3],
            "module_path": re.search(r"Save it as `([\w/]+\.py)`", section)[1],
            "commands": [line for body in (b for lang, b in blocks if lang == "sh") for line in body.splitlines()
                         if line.strip()],
            "files_touched": int(re.search(r"\*\*Files touched: (\d+)\*\*", section)[1])}


def run(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    """``harness-gym ARGV`` in this process: (exit status, stdout, stderr)."""
    try:
        status = main(argv)
    except SystemExit as exc:  # --help and argparse errors
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """An empty working folder with its own Minari datasets root."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path


def test_the_doc_recipe_adds_a_trainer_that_trains_and_evaluates_through_the_command(workdir, monkeypatch, capsys):
    recipe = trainer_recipe()
    # file 1: the module, saved where the doc says, importable from the folder on the path
    module_file = workdir / "src" / recipe["module_path"]
    module_file.parent.mkdir(parents=True)
    module_file.write_text(recipe["module_source"])
    monkeypatch.syspath_prepend(str(workdir / "src"))
    assert recipe["module"] == recipe["module_path"].removesuffix(".py").replace("/", ".")
    # file 2: the one registry line (applied to the registry in memory, not to the checkout)
    monkeypatch.setitem(trainer_registry.TRAINERS, recipe["name"], f"{recipe['module']}:{recipe['config']}")
    assert recipe["files_touched"] == len({module_file, Path(trainer_registry.__file__)}) == 2

    commands = [shlex.split(line) for line in recipe["commands"]]
    assert all(argv[0] == "harness-gym" for argv in commands)
    ran = [(argv, *run(argv[1:], capsys)) for argv in commands]
    assert [status for _, status, _, _ in ran] == [0] * len(ran), [err for _, _, _, err in ran]
    outputs = {("help" if "--help" in argv else argv[1]): (argv, out) for argv, _, out, _ in ran}

    def flag(command: str, name: str) -> str:
        argv = outputs[command][0]
        return argv[argv.index(name) + 1]

    help_text = outputs["help"][1]
    assert "--skip-first SKIP_FIRST" in help_text and "ignore this many transitions" in help_text
    assert "(default: 0)" in help_text

    dataset_id, out_file = flag("collect", "--out"), flag("train", "--out")
    assert f"wrote {out_file} ({recipe['name']}, trained on {dataset_id}, seed 0)" in outputs["train"][1]
    data = load_transitions(dataset_id)
    first = {int(e): int(np.flatnonzero(data.episode == e)[0]) for e in np.unique(data.episode)}
    skip = int(flag("train", "--skip-first"))
    kept = [a for i, (a, e) in enumerate(zip(data.actions, data.episode)) if i - first[int(e)] >= skip]
    written = json.loads((workdir / out_file).read_text())
    assert written["algo"] == recipe["name"] and written["counts"] == np.bincount(kept, minlength=7).tolist()

    # eval --policy FILE ran the trainer's own policy: the same episodes as that policy evaluated directly
    result = json.loads(outputs["eval"][1])
    module = importlib.import_module(recipe["module"])
    direct = evaluate(outputs["eval"][0][2], module.MajorityPolicy(np.array(written["counts"])),
                      episodes=int(flag("eval", "--episodes")), split="test", seed=0)
    for key in ("quality_mean", "mean_steps", "success_rate", "cost_mean", "invalid_action_rate"):
        assert result[key] == direct[key], key
    assert result["policy"] == out_file and result["episodes"] == direct["episodes"] == 20


def test_the_model_file_of_an_unregistered_trainer_is_one_line(workdir, capsys):
    (workdir / "majority.json").write_text(json.dumps({"algo": "majority", "counts": [0, 0, 0, 5, 0, 0, 1]}))
    status, _, err = run(["eval", "HarnessPlan-v1", "--policy", "majority.json", "--episodes", "2"], capsys)
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "majority.json: written by trainer 'majority', which is not registered" in err


def _torch_pickle_of_an_object(path: Path) -> None:
    torch = pytest.importorskip("torch")
    torch.save({"algo": "bc", "model": Path("x")}, path)  # a class torch.load(weights_only=True) refuses


@pytest.mark.parametrize("name, write, message", [
    ("notes.json", lambda p: p.write_text('{"hello": 1}'), "a JSON file that records no trainer (no 'algo' key)"),
    ("weights.pt", lambda p: p.write_bytes(b"\x80\x04not a pickle at all"), "not a model file; expected a JSON object"),
    ("model.pt", _torch_pickle_of_an_object, "a torch archive that torch.load(weights_only=True) refuses"),
    ("archive.zip", lambda p: __import__("zipfile").ZipFile(p, "w").close(), "a zip archive that is neither"),
])
def test_a_file_no_trainer_wrote_is_refused_in_one_line(workdir, capsys, name, write, message):
    write(workdir / name)
    status, out, err = run(["eval", "HarnessPlan-v1", "--policy", name, "--episodes", "2"], capsys)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"harness-gym eval: error: --policy {name}: {message}"), err


def test_python_dash_m_of_a_trainer_is_harness_gym_train():
    proc = subprocess.run([sys.executable, "-m", "harness_gym_baselines.algos.awr", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: harness-gym train awr") and "--beta BETA" in proc.stdout
