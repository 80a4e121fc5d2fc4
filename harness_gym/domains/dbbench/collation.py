"""MySQL's ``utf8mb4_general_ci`` comparison and its LIKE, in Python, for the SQLite engine of
:mod:`~harness_gym.domains.dbbench.engines` (which registers them on every connection) and for the checker and
mutations that compare cells as MySQL does."""

from __future__ import annotations

import unicodedata
from functools import lru_cache


def fold_text(text: str) -> str:
    """Case- and accent-insensitive key of a string (what ``utf8mb4_general_ci`` compares)."""
    return _fold_cached(text) if len(text) <= 256 else _fold(text)


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


_fold_cached = lru_cache(maxsize=65536)(_fold)
"""Keys of short strings (table cells, names) are cached: at most 65536 of at most 256 characters."""


def _fold_padded(text: str) -> str:
    """What ``utf8mb4_general_ci`` compares of a string: its :func:`fold_text` without trailing spaces."""
    return fold_text(text.rstrip(" "))


_collation_key_cached = lru_cache(maxsize=65536)(_fold_padded)
"""Collation keys of short strings are cached: at most 65536 of at most 256 characters."""


def mysql_ci(a: str, b: str) -> int:
    """SQLite's ``MYSQL_CI`` collation: -1, 0 or 1 as ``a`` sorts before, with or after ``b`` (SQLite calls it
    for every comparison, so the cached key is looked up here directly)."""
    ka = _collation_key_cached(a) if len(a) <= 256 else _fold_padded(a)
    kb = _collation_key_cached(b) if len(b) <= 256 else _fold_padded(b)
    return (ka > kb) - (ka < kb)


def _like_tokens(pattern: str, escape: str) -> tuple[tuple[str, str], ...]:
    """A LIKE pattern as ``("lit", ch)``, ``("one", "")`` and ``("any", "")`` tokens (a run of ``%`` as one)."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == escape and i + 1 < len(pattern):
            tokens.append(("lit", pattern[i + 1]))
            i += 2
            continue
        if ch == "%":
            if not tokens or tokens[-1][0] != "any":
                tokens.append(("any", ""))
        else:
            tokens.append(("one", "") if ch == "_" else ("lit", ch))
        i += 1
    return tuple(tokens)


_like_tokens_cached = lru_cache(maxsize=4096)(_like_tokens)
"""Tokens of short patterns are cached: at most 4096 of at most 256 characters."""


def like_match(pattern: str, value: str, escape: str = "\\") -> bool:
    """Whether ``value`` matches the SQL LIKE ``pattern`` (``%`` any run, ``_`` one character, ``escape``
    quoting the next character), without regular expressions: one pass that backtracks only to the last
    ``%``, so the time is at most ``len(pattern) * len(value)`` steps, never exponential.

    :param pattern: the LIKE pattern (already case-folded by the caller)
    :param value: the text tested
    :param escape: the escape character
    """
    tokens = _like_tokens_cached(pattern, escape) if len(pattern) <= 256 else _like_tokens(pattern, escape)
    t = v = 0
    star_t, star_v = -1, 0
    while v < len(value):
        kind, char = tokens[t] if t < len(tokens) else ("", "")
        if kind == "one" or (kind == "lit" and char == value[v]):
            t += 1
            v += 1
        elif kind == "any":
            star_t, star_v = t, v
            t += 1
        elif star_t >= 0:
            star_v += 1
            v = star_v
            t = star_t + 1
        else:
            return False
    while t < len(tokens) and tokens[t][0] == "any":
        t += 1
    return t == len(tokens)
