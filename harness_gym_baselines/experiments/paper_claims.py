"""The papers' reference figures and claims, read from ``paper_claims.json`` beside this module (package data).

The experiment tables and the report print them beside this project's numbers; they are the papers' figures,
never computed or tuned here. Two sources:

- ``offline_rl_paper``: AWR minus static in quality points per env (:data:`PAPER_GAIN`) and the paper's claims
  about check-before-submit, AWR against BC and AWR against forced-CHECK (:data:`OFFLINE_RL_CLAIMS`);
- ``ecpo_seed_blog``: the seed blog's ECPO table (success, quality score, OOD retention per method:
  :data:`SEED_REPORTED`), the order of the methods by success it reports (:data:`SEED_SUCCESS_ORDER`) and
  its claim about the corruption experiment (:data:`ECPO_CLAIMS`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CLAIMS_FILE = Path(__file__).with_name("paper_claims.json")
REQUIRED = (("offline_rl_paper", "awr_minus_static_points", "per_env"),
            *(("offline_rl_paper", "claims", key) for key in ("check_before_submit_emerges", "awr_vs_bc",
                                                               "awr_vs_forced_check")),
            ("ecpo_seed_blog", "table"), ("ecpo_seed_blog", "success_order"), ("ecpo_seed_blog", "claims", "corruption"))
"""the fields the report reads; every method of the ECPO table also needs label, success, score, ood_retention"""


def field(claims: dict[str, Any], *keys: str, source: Path = CLAIMS_FILE) -> Any:
    """``claims[keys[0]][keys[1]]...``, or a ``KeyError`` naming the file and the missing field.

    :param claims: the parsed claims file
    :param keys: the path of the field
    :param source: the file, for the message
    """
    value: Any = claims
    for depth, key in enumerate(keys):
        if not isinstance(value, dict) or key not in value:
            raise KeyError(f"{source}: no field {'.'.join(keys[:depth + 1])}")
        value = value[key]
    return value


def read_claims(path: Path = CLAIMS_FILE) -> dict[str, Any]:
    """The claims file, checked for every field the report reads (:data:`REQUIRED`).

    :param path: a claims file (default: the shipped one)
    """
    claims = json.loads(Path(path).read_text(encoding="utf-8"))
    for keys in REQUIRED:
        field(claims, *keys, source=path)
    for method in field(claims, "ecpo_seed_blog", "success_order", source=path):
        for key in ("label", "success", "score", "ood_retention"):
            field(claims, "ecpo_seed_blog", "table", method, key, source=path)
    return claims


_CLAIMS = read_claims()

PAPER_GAIN: dict[str, float] = {name: float(points) for name, points in
                                _CLAIMS["offline_rl_paper"]["awr_minus_static_points"]["per_env"].items()}
"""AWR minus static in quality points per env name without its version (``HarnessCode``: every version of the env
stands for the same benchmark), as the offline-RL paper reports it (the file's ``note`` says which benchmark each
is); the public-data variants share their env's figure"""
OFFLINE_RL_CLAIMS: dict[str, str] = dict(_CLAIMS["offline_rl_paper"]["claims"])
"""the offline-RL paper's claims, phrased to follow "The paper reports it" / "The paper:" in the report"""

SEED_TABLE: dict[str, dict[str, str]] = dict(_CLAIMS["ecpo_seed_blog"]["table"])
SEED_REPORTED: dict[str, tuple[str, str, str]] = {
    method: (row["success"], row["score"], row["ood_retention"]) for method, row in SEED_TABLE.items()}
"""the seed blog's ECPO table per method: success, quality score, OOD retention (as printed there)"""
SEED_SUCCESS_ORDER: tuple[str, ...] = tuple(_CLAIMS["ecpo_seed_blog"]["success_order"])
"""the methods from the lowest to the highest success the seed blog reports"""
ECPO_CLAIMS: dict[str, str] = dict(_CLAIMS["ecpo_seed_blog"]["claims"])
"""the seed blog's claims, phrased to follow "The seed reports that" in the report"""


def seed_ordering() -> str:
    """The seed blog's success ordering as printed in the report: ``ppo-sparse (~15%) < ... < ECPO (~82%)``."""
    return " < ".join(f"{SEED_TABLE[m]['label']} ({SEED_TABLE[m]['success']})" for m in SEED_SUCCESS_ORDER)
