"""The job server is one program in several files (``harness_gym/sandbox/server/``): the joined source compiles,
imports nothing of ``harness_gym`` (hidden where it runs), is the same byte for byte in every process, and means
what the modules mean (a part uses only names the parts before it define and redefines none); every part stays
under 700 lines; a part that would break the program is refused with its file and line.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness_gym.sandbox import ProcessSandbox
from harness_gym.sandbox.client import server_source
from harness_gym.sandbox.server import FOLDER, PARTS, program_source

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "harness_gym.sandbox.server"


def imported_modules(tree: ast.AST) -> list[str]:
    """Every module an import anywhere in ``tree`` names (``"."`` for a relative one)."""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append("." * node.level + (node.module or ""))
    return out


def defined_names(tree: ast.Module) -> set[str]:
    """The names a module's top-level statements bind, imports left out."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def test_the_program_compiles_and_imports_only_the_standard_library() -> None:
    source = server_source()
    tree = ast.parse(source)
    compile(tree, "<string>", "exec")
    modules = imported_modules(tree)
    assert not [m for m in modules if m.startswith(".") or m.split(".")[0] == "harness_gym"]
    assert {m.split(".")[0] for m in modules} <= set(sys.stdlib_module_names) | {"__future__"}
    assert [i for i, node in enumerate(tree.body) if isinstance(node, ast.ImportFrom)
            and node.module == "__future__"] == [1]  # once, right after the first part's docstring
    assert [line for line in source.splitlines() if line.startswith("# ---- ")] == [f"# ---- {p} ----" for p in PARTS]
    guard = tree.body[-1]
    assert isinstance(guard, ast.If) and ast.unparse(guard.test) == "__name__ == '__main__'"


def test_the_program_is_the_same_bytes_in_every_process() -> None:
    digest = hashlib.sha256(program_source.__wrapped__().encode("utf-8")).hexdigest()
    assert digest == hashlib.sha256(server_source().encode("utf-8")).hexdigest()
    script = ("import hashlib; from harness_gym.sandbox.server import program_source; "
              "print(hashlib.sha256(program_source().encode('utf-8')).hexdigest())")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == digest


def test_each_part_uses_only_names_of_the_parts_before_it_and_redefines_none() -> None:
    defined_by: dict[str, str] = {}
    for index, part in enumerate(PARTS):
        tree = ast.parse((FOLDER / part).read_text(encoding="utf-8"))
        earlier = {f"{PACKAGE}.{p.removesuffix('.py')}" for p in PARTS[:index]}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
                assert node.module in earlier, f"{part} imports {node.module}, which is not an earlier part"
                for alias in node.names:
                    assert alias.asname is None, f"{part} renames {alias.name}: the joined program would not"
                    assert alias.name in defined_by, f"{part} imports {alias.name}, which no earlier part defines"
        for name in defined_names(tree):
            assert name not in defined_by, f"{part} redefines {name} of {defined_by.get(name)}"
            defined_by[name] = part
    assert {"main", "safe_join", "blocked_ancestor", "_JOB_ENV_KEEP", "_Standby"} <= set(defined_by)


def test_every_file_of_the_server_is_under_700_lines() -> None:
    files = sorted(FOLDER.glob("*.py"))
    assert {f.name for f in files} == {*PARTS, "__init__.py"}
    assert {f.name: n for f in files if (n := len(f.read_text(encoding="utf-8").splitlines())) >= 700} == {}


@pytest.mark.parametrize(("part", "line", "expected"), [
    ("jobs.py", "def _helper() -> None:\n    import harness_gym.core\n", "cannot import 'harness_gym.core'"),
    ("kernel.py", "from .config import _Config\n", "cannot import '.config'"),
    ("main.py", "from harness_gym.sandbox.server.jobs import _GO; X = 1\n", "shares its line"),
])
def test_a_part_that_would_break_the_program_is_refused(tmp_path: Path, part: str, line: str, expected: str) -> None:
    for name in PARTS:
        shutil.copy(FOLDER / name, tmp_path / name)
    assert program_source(tmp_path) == program_source()  # a copy joins to the same program
    lines = (tmp_path / part).read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, text in enumerate(lines) if text.startswith(("def ", "class ", "_"))) + 1
    (tmp_path / part).write_text("".join(lines[:at - 1]) + line + "".join(lines[at - 1:]), encoding="utf-8")
    error_line = at + line[:line.index("import")].count("\n")
    with pytest.raises(ValueError, match=rf"{part}:{error_line}: .*{expected}"):
        program_source.__wrapped__(tmp_path)


def test_a_job_finds_nothing_of_harness_gym_loaded_in_its_server() -> None:
    """The server a job is forked from loaded no module of the package (the program is self-contained)."""
    with ProcessSandbox(cache=False) as sandbox:
        res = sandbox.run("import sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'harness_gym'))\n"
                          "import __main__\nprint(hasattr(__main__, '_Standby'), hasattr(__main__, 'program_source'))")
    assert res.ok, res
    assert res.stdout.split() == ["[]", "True", "False"]  # forked from the joined program, not the package
