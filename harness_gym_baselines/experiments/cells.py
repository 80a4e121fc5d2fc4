"""The one schema of a cell file: one (env, settings, controller, seed, split) evaluation and its episodes.

Every pipeline that writes cell files writes them with :func:`write_cell` (offline comparison, learners at cost,
the reproduce stages, the ECPO comparison), so one reader serves them all. A cell record holds:

- ``schema``: :data:`CELL_SCHEMA`;
- ``env_id``, ``controller`` (the name in tables), ``seed`` (the run's seed: reset seeds ``episode_seed(seed, i)``),
  ``split`` and ``episodes``;
- ``settings``: ``cost_weight`` and the env's other constructor keywords (``prices``, ``budget_units``,
  ``data_dir``, ...), as JSON;
- ``summary``: :func:`harness_gym_baselines.evaluate.summarise` of the records (``None`` where the records are not
  :func:`~harness_gym_baselines.evaluate.run_episodes` records, e.g. the ECPO comparison's);
- ``records``: the per-episode records;
- any pipeline-specific keys beside them (``dataset_id``, ``train_seconds``, ...), never replacing one above.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

CELL_SCHEMA = 1
"""the version of the cell layout above"""
CELL_KEYS = ("schema", "env_id", "controller", "seed", "split", "episodes", "settings", "summary", "records")
"""the keys every cell record has"""


def cell_record(*, env_id: str, controller: str, seed: int, split: str, records: list[dict[str, Any]],
                summary: dict[str, Any] | None, cost_weight: float = 0.0, env_kwargs: dict[str, Any] | None = None,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """One cell record (module docstring).

    :param env_id: the env
    :param controller: the controller's name in tables
    :param seed: the run's seed
    :param split: the task split evaluated
    :param records: the per-episode records
    :param summary: their :func:`~harness_gym_baselines.evaluate.summarise` (or ``None``)
    :param cost_weight: the env's cost weight
    :param env_kwargs: the env's other constructor keywords
    :param extra: pipeline-specific keys; one that names a schema key is an error
    """
    clash = sorted(set(extra or {}) & set(CELL_KEYS))
    if clash:
        raise ValueError(f"cell {env_id}/{controller}/seed {seed}: extra keys {clash} would replace schema keys")
    settings = json.loads(json.dumps({"cost_weight": cost_weight, **(env_kwargs or {})}, default=str))
    return {"schema": CELL_SCHEMA, "env_id": env_id, "controller": controller, "seed": seed, "split": split,
            "episodes": len(records), "settings": settings, "summary": summary, "records": records, **(extra or {})}


def write_cell(path: Path, cell: dict[str, Any]) -> dict[str, Any]:
    """Write ``cell`` (a :func:`cell_record`) to ``path`` atomically; returns it.

    :param path: the cell file
    :param cell: the record
    """
    missing = [k for k in CELL_KEYS if k not in cell]
    if missing:
        raise ValueError(f"cell file {path}: record lacks {missing}; build it with cell_record")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cell, default=float))
    os.replace(tmp, path)
    return cell
