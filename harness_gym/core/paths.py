"""Where the project's shipped data (``envs_data/``) lives, in a source checkout and in an installed wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]
_CANDIDATES = (_PACKAGE / "envs_data", _PACKAGE.parent / "envs_data")


def data_root() -> Path:
    """The ``envs_data`` folder: installed as ``harness_gym/envs_data``, or at the top of a checkout."""
    for cand in _CANDIDATES:
        if (cand / "profiles").is_dir():
            return cand
    raise FileNotFoundError(f"envs_data not found; looked in {', '.join(map(str, _CANDIDATES))}")


def data_path(*parts: str) -> Path:
    """A path inside ``envs_data``."""
    return data_root().joinpath(*parts)
