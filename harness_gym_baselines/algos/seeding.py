"""Seeding of every trainer, offline and online: ``random``, ``numpy`` and ``torch`` in one place."""

from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int, torch_threads: int) -> None:
    """Seed ``random``, ``numpy`` and ``torch`` and fix torch's CPU threads (results depend on them).

    :param seed: the seed
    :param torch_threads: CPU threads torch may use
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(torch_threads)
