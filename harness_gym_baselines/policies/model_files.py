"""Model files as controllers: which trainer wrote a file (the ``algo`` it records) and loading it with that
trainer's ``load``.

Every model file a trainer writes names its trainer (a key of
:data:`~harness_gym_baselines.common.trainer_registry.TRAINERS`) under ``algo``, read without loading the model:

- a JSON object (e.g. a count table): its ``algo`` key;
- a Stable-Baselines3 zip (``ppo-sparse``, ``ppo-dense``, ``ecpo``, ``ecpo-pb``): ``algo`` of the ``harness_gym`` attribute,
  which SB3 stores as JSON in the zip's ``data`` entry;
- a torch archive (``bc``, ``awr``: ``torch.save`` of a dict): its ``algo`` key, read with
  ``torch.load(weights_only=True)``, which runs no code from the file.

Any other SB3 zip (MaskablePPO, PPO, A2C or DQN trained elsewhere) is loaded by
:func:`~harness_gym_baselines.policies.sb3_zip.load_sb3_policy`. Anything else is a
:class:`~harness_gym_baselines.common.options.UsageError` of one line naming the file and what it holds.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from harness_gym.running.rollout import Policy
from harness_gym_baselines.common.options import UsageError
from harness_gym_baselines.common.trainer_registry import TRAINERS, load_trainer

FORMATS = "a JSON object, a torch archive or a Stable-Baselines3 zip that names its trainer under 'algo'"


def _sb3_algo(archive: zipfile.ZipFile) -> str | None:
    """``algo`` of the ``harness_gym`` attribute in an SB3 zip's ``data`` entry, or ``None``."""
    try:
        data = json.loads(archive.read("data"))
    except (ValueError, UnicodeDecodeError):
        return None  # the SB3 loader says what is wrong with the zip
    meta = data.get("harness_gym") if isinstance(data, dict) else None
    algo = meta.get("algo") if isinstance(meta, dict) else None
    return algo if isinstance(algo, str) else None


def _torch_header(path: Path) -> Any:
    """The object ``torch.save`` stored in ``path``, loaded without running code from the file."""
    try:
        import torch
    except ModuleNotFoundError as exc:
        raise UsageError(f"{path}: a torch model file; loading it needs torch (pip install "
                         '"harness-gym[train]")') from exc
    try:
        return torch.load(path, weights_only=True)
    except Exception as exc:  # torch's refusal spans many lines: its first names the cause
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"{path}: a torch archive that torch.load(weights_only=True) refuses ({first}); "
                         f"expected {FORMATS}") from exc


def recorded_trainer(path: str | Path) -> tuple[str | None, str]:
    """The trainer name a model file records (``None`` for an SB3 zip that names none) and the file's format
    (``"json"``, ``"sb3-zip"`` or ``"torch"``).

    :param path: a model file
    """
    path = Path(path)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if "data" in names:
                return _sb3_algo(archive), "sb3-zip"
        if any(name.endswith("/data.pkl") for name in names):
            header = _torch_header(path)
            algo = header.get("algo") if isinstance(header, dict) else None
            if not isinstance(algo, str):
                raise UsageError(f"{path}: a torch file that records no trainer (no 'algo' entry); expected {FORMATS}")
            return algo, "torch"
        raise UsageError(f"{path}: a zip archive that is neither an SB3 model nor a torch file; expected {FORMATS}")
    try:
        blob = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError):
        raise UsageError(f"{path}: not a model file; expected {FORMATS}") from None
    algo = blob.get("algo") if isinstance(blob, dict) else None
    if not isinstance(algo, str):
        raise UsageError(f"{path}: a JSON file that records no trainer (no 'algo' key); expected {FORMATS}")
    return algo, "json"


def load_model_file(path: str | Path) -> Policy:
    """The controller stored in a model file, loaded by the trainer that wrote it (module docstring).

    :param path: the model file
    """
    algo, kind = recorded_trainer(path)
    if kind == "sb3-zip" and algo not in TRAINERS:
        from harness_gym_baselines.policies.sb3_zip import load_sb3_policy

        return load_sb3_policy(path)
    if algo not in TRAINERS:
        raise UsageError(f"{path}: written by trainer {algo!r}, which is not registered (trainers: "
                         f"{', '.join(TRAINERS)}; docs/extending.md says how to add one)")
    return load_trainer(algo).load(path)
