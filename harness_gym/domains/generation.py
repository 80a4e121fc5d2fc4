"""Pieces shared by the task-bank generators: a uniform pick, the split of each template family's tasks, the
quota of each kind of a documented task mix, and the command line (``python -m harness_gym.domains.<name>.generate [--out DIR] [--seed N]``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping, Sequence
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


def mix_counts(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """How many of ``total`` tasks each kind of a task mix gets: ``total`` split in proportion to ``weights`` by
    the largest-remainder rule (each kind gets the floor of its share, the leftover tasks go to the largest
    fractional parts, ties to the kind listed first), so the counts sum to ``total`` and each is within one of
    its exact share.

    :param total: how many tasks to split
    :param weights: kind -> weight (not negative, not all zero); the order breaks ties
    """
    if total < 0 or not weights or any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise ValueError(f"need a total >= 0 and non-negative weights with a positive sum, got {total}, {weights}")
    norm = sum(weights.values())
    exact = {kind: total * w / norm for kind, w in weights.items()}
    counts = {kind: int(share) for kind, share in exact.items()}
    order = sorted(weights, key=lambda kind: -(exact[kind] - counts[kind]))
    for kind in order[:total - sum(counts.values())]:
        counts[kind] += 1
    return counts


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
