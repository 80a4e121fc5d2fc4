"""Pieces shared by the task-bank generators: a uniform pick, values dealt in fixed proportions (a task mix), the
split of each template family's tasks, and the command line (``python -m harness_gym.domains.<name>.generate
[--out DIR] [--seed N]``)."""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from harness_gym.paths import data_path

F = TypeVar("F")
T = TypeVar("T")


def pick(rng: np.random.Generator, items: Sequence[T]) -> T:
    """One item of ``items``, uniformly, with exactly one integer draw from ``rng`` (``rng.choice`` would draw
    differently and convert the items to an array).

    :param rng: the generator's random source
    :param items: what to pick from (not empty)
    """
    return items[int(rng.integers(len(items)))]


def deal(n: int, cycle: Sequence[T], rng: random.Random | np.random.Generator) -> list[T]:
    """``n`` values in the proportions of ``cycle``, shuffled: each value is dealt next when its count lags its
    share most, so every count is within one of ``n`` times its share, whatever ``n`` (a task mix holds in every
    split, not only on average).

    :param n: how many values
    :param cycle: the values of one round, in their proportions (e.g. ``(0, 0, 1, 1, 1, 2)``)
    :param rng: the shuffle's random source
    """
    kinds = list(dict.fromkeys(cycle))
    share = {v: cycle.count(v) / len(cycle) for v in kinds}
    dealt = dict.fromkeys(kinds, 0)
    values = []
    for i in range(n):
        value = max(kinds, key=lambda v: (i + 1) * share[v] - dealt[v])
        dealt[value] += 1
        values.append(value)
    rng.shuffle(values)
    return values


def family_splits(rng: np.random.Generator, in_dist: Sequence[F], shares: Sequence[tuple[str, int]],
                  ood: Sequence[F], n_ood: int) -> Iterator[tuple[F, list[str]]]:
    """Yield every template family with the split of each of its tasks, shuffled.

    An in-distribution family makes ``count`` tasks of each ``(split, count)`` in ``shares``, an ``ood`` family
    ``n_ood`` tasks of split ``"ood"``. Each list is shuffled with ``rng`` when its family is reached, so the
    draws the caller makes for one family's tasks come before the next family's shuffle.
    """
    for families, family_shares in ((in_dist, shares), (ood, (("ood", n_ood),))):
        for make in families:
            splits = [s for s, n in family_shares for _ in range(n)]
            rng.shuffle(splits)
            yield make, splits


def generator_main(doc: str, domain: str, generate: Callable[[Path, int], Any], seed: int = 0,
                   report: Callable[[Any, Path], object] = lambda result, out: result,
                   argv: Sequence[str] | None = None) -> None:
    """The command line of every domain's generator: parse ``[--out DIR] [--seed N]``, run
    ``generate(out, seed)`` and print ``report(result, out)``.

    :param doc: the generator module's docstring; its first line describes the command
    :param domain: the output folder when ``--out`` is not given is ``envs_data/<domain>``
    :param generate: writes the domain's shipped data files into a folder, deterministically for a seed
    :param seed: the default ``--seed``
    :param report: what to print from ``generate``'s result and the folder
    :param argv: the arguments (default ``sys.argv[1:]``)
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help=f"output folder (default envs_data/{domain})")
    parser.add_argument("--seed", type=int, default=seed)
    args = parser.parse_args(argv)
    out = args.out or data_path(domain)
    print(report(generate(out, args.seed), out))
