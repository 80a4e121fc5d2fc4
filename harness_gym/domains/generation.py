"""Pieces shared by the task-bank generators: a uniform pick, the kinds of a documented task mix in exact
proportions (:func:`quota`), the split of each template family's tasks, and the command line
(``python -m harness_gym.domains.<name>.generate [--out DIR] [--seed N]``; the default ``--out`` is the domain's
folder in its assets folder, ``envs_data/<name>`` for a shipped domain)."""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from harness_gym.core.paths import data_path

_DOMAINS = Path(__file__).resolve().parent
"""The folder of the shipped domains' packages."""
F = TypeVar("F")
T = TypeVar("T")


def pick(rng: np.random.Generator, items: Sequence[T]) -> T:
    """One item of ``items``, uniformly, with exactly one integer draw from ``rng`` (``rng.choice`` would draw
    differently and convert the items to an array).

    :param rng: the generator's random source
    :param items: what to pick from (not empty)
    """
    return items[int(rng.integers(len(items)))]




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


def quota(n: int, shares: Sequence[tuple[T, float]]) -> list[T]:
    """``n`` kinds in the proportions ``shares`` (kind, weight), as close as whole numbers allow: each kind gets the
    integer part of its share of ``n``, and the remaining places go to the largest remainders (ties to the kind
    listed first). In the order of ``shares``; the caller shuffles them with its own random source. A task mix
    laid out this way shows its documented proportions in every split, however small.

    :param n: how many items to assign a kind to
    :param shares: each kind with its weight (weights need not sum to 1; none negative, some positive)
    """
    total = float(sum(w for _, w in shares))
    if total <= 0 or any(w < 0 for _, w in shares):
        raise ValueError(f"quota: weights must be non-negative with a positive sum, got {[w for _, w in shares]}")
    exact = [n * w / total for _, w in shares]
    counts = [int(e) for e in exact]
    by_remainder = sorted(range(len(shares)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in by_remainder[:n - sum(counts)]:
        counts[i] += 1
    return [kind for (kind, _), c in zip(shares, counts) for _ in range(c)]


def mix_counts(total: int, weights: Mapping[T, float]) -> dict[T, int]:
    """:func:`quota` as counts: how many of ``total`` tasks each kind of a task mix gets (every kind of ``weights``,
    in its order, zero counts included).

    :param total: how many tasks to split
    :param weights: kind -> weight (not negative, some positive); the order breaks ties
    """
    counts = dict.fromkeys(weights, 0)
    for kind in quota(total, list(weights.items())):
        counts[kind] += 1
    return counts


def deal(n: int, cycle: Sequence[T], rng: random.Random | np.random.Generator) -> list[T]:
    """:func:`quota` shuffled: ``n`` values in the proportions of one round ``cycle`` (e.g. ``(0, 0, 1, 1, 1, 2)``),
    in a random order drawn from ``rng``.

    :param n: how many values
    :param cycle: the values of one round, in their proportions
    :param rng: the shuffle's random source
    """
    values = quota(n, [(v, cycle.count(v)) for v in dict.fromkeys(cycle)])
    rng.shuffle(values)
    return values


def generator_main(doc: str, domain: str, generate: Callable[[Path, int], Any], seed: int = 0,
                   report: Callable[[Any, Path], object] = lambda result, out: result,
                   argv: Sequence[str] | None = None, *, assets_dir: str | Path | None = None) -> None:
    """The command line of every domain's generator: parse ``[--out DIR] [--seed N]``, run
    ``generate(out, seed)`` and print ``report(result, out)``.

    :param doc: the generator module's docstring; its first line describes the command
    :param domain: the domain's name: the output folder when ``--out`` is not given is ``<assets_dir>/<domain>``
    :param generate: writes the domain's shipped data files into a folder, deterministically for a seed
    :param seed: the default ``--seed``
    :param report: what to print from ``generate``'s result and the folder
    :param argv: the arguments (default ``sys.argv[1:]``)
    :param assets_dir: the domain's :attr:`~harness_gym.core.domain.Domain.assets_dir`; ``None`` is ``envs_data``
        and only for a domain shipped in ``harness_gym/domains`` (any other must then be given ``--out``, so that
        no generator writes into the installed package by default)
    """
    shipped = assets_dir is None and (_DOMAINS / domain / "generate.py").is_file()
    default = Path(assets_dir) / domain if assets_dir is not None else data_path(domain) if shipped else None
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--out", type=Path, default=default, required=default is None,
                        help="output folder" + (f" (default {default})" if default is not None else ""))
    parser.add_argument("--seed", type=int, default=seed)
    args = parser.parse_args(argv)
    print(report(generate(args.out, args.seed), args.out))
