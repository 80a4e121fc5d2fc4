"""The shell scripts: every one runs on the project virtualenv's interpreter (scripts/env.sh), none needs a
``python`` command or an activated environment, and install.sh says what to install when python3 cannot make
a virtualenv.

What needs minutes and the network (a fresh virtualenv, the llama.cpp build, the full runs of main.sh and
test.sh) is shown by ``scripts/prove_fresh_machine.sh`` on a clean Debian root file system instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHELL_SCRIPTS = sorted([*ROOT.joinpath("scripts").glob("*.sh"), ROOT / ".ci" / "run", *ROOT.joinpath("docker").glob("*.sh")])


def _env_sh(env: dict[str, str]) -> tuple[str, str]:
    """HG_VENV and HG_PY as scripts/env.sh sets them under ``env``."""
    out = subprocess.run(["bash", "-c", 'source scripts/env.sh && echo "$HG_VENV" && echo "$HG_PY"'], cwd=ROOT,
                         env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    return out[0], out[1]


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "HG_VENV", "HG_PY")}
    env.update(extra)
    return env


def test_env_sh_picks_the_active_virtualenv_else_the_checkouts_own():
    assert _env_sh(_clean_env()) == (str(ROOT / ".venv"), str(ROOT / ".venv" / "bin" / "python"))
    assert _env_sh(_clean_env(VIRTUAL_ENV="/opt/active")) == ("/opt/active", "/opt/active/bin/python")
    assert _env_sh(_clean_env(VIRTUAL_ENV="/opt/active", HG_VENV="/srv/venv")) == ("/srv/venv", "/srv/venv/bin/python")
    assert _env_sh(_clean_env(HG_PY="/usr/bin/python3.11"))[1] == "/usr/bin/python3.11"


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_script_calls_a_bare_python_or_the_console_script(script):
    for number, line in enumerate(script.read_text().splitlines(), 1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith("#!") else ""
        # `python`, `pip` or `harness-gym` as the command of a pipeline (after VAR=value, nohup, exec, env...);
        # "$HG_PY" and python3 (which makes the virtualenv) are what scripts call
        for word in ("python", "pip", "harness-gym"):
            assert not re.search(rf"(^|[;|&(]|\$\()\s*((\w+=\S*|nohup|exec|env|time|setsid)\s+)*{re.escape(word)}(\s|$)",
                                 code), \
                f"{script.relative_to(ROOT)}:{number} calls `{word}`: {line.strip()}"


def test_scripts_that_run_python_source_env_sh():
    for script in SHELL_SCRIPTS:
        text = script.read_text()
        if "$HG_PY" in text and script.name != "env.sh":
            assert re.search(r"^\s*source .*env\.sh", text, re.M), f"{script.relative_to(ROOT)} uses $HG_PY without env.sh"


def test_start_llm_without_a_virtualenv_names_the_install_command(tmp_path):
    env = _clean_env(HG_VENV=str(tmp_path / "missing"), HG_LLM_PIDFILE=str(tmp_path / "pid"))
    run = subprocess.run(["bash", "scripts/start_llm.sh", "1"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 1
    assert f"no Python environment at {tmp_path}/missing/bin/python: run bash scripts/install.sh" in run.stderr
    assert not (tmp_path / "pid").exists()


def _shim_dir(tmp_path: Path, python3_body: str) -> str:
    """A PATH holding a `python3` shim (and the real tools, none of them python) for install.sh."""
    shims = tmp_path / "bin"
    shims.mkdir()
    python3 = shims / "python3"
    python3.write_text("#!/bin/sh\n" + python3_body)
    python3.chmod(0o755)
    for tool in ("bash", "sh", "id", "cat", "dirname", "basename", "env", "sha256sum", "cut", "apt-get"):
        found = shutil.which(tool)
        if found:
            (shims / tool).symlink_to(found)
    return str(shims)


def test_install_without_ensurepip_says_what_to_install_and_makes_nothing(tmp_path):
    real = sys.executable
    # python3 as Debian ships it without python3-venv: the venv module is there, ensurepip is not
    path = _shim_dir(tmp_path, f'[ "$1 $2" = "-c import ensurepip" ] && exit 1\nexec "{real}" "$@"\n')
    venv = tmp_path / "venv"
    run = subprocess.run(["bash", "scripts/install.sh"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env=_clean_env(PATH=path, HG_VENV=str(venv), HG_NO_APT="1"))
    assert run.returncode == 1, run.stdout + run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert last == ("install.sh: python3 cannot make a virtualenv (no ensurepip): as root run apt-get install "
                    "python3-venv, or activate a virtualenv and rerun")
    assert not venv.exists()


def test_install_refuses_an_old_python3(tmp_path):
    path = _shim_dir(tmp_path, '[ "$1" = -c ] && case "$2" in *version_info*) exit 1 ;; *platform*) echo 3.9.2; exit 0 ;; esac\n'
                     'exit 3\n')
    run = subprocess.run(["bash", "scripts/install.sh"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env=_clean_env(PATH=path, HG_VENV=str(tmp_path / "venv"), HG_NO_APT="1"))
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == f"install.sh: {path}/python3 is Python 3.9.2; harness_gym needs >= 3.10"
