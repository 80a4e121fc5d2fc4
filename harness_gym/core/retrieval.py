"""Okapi BM25 ranking over a domain corpus (used by RETRIEVE in every domain)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from harness_gym.core.types import Document

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens; ``snake_case`` names are split into their parts as well."""
    tokens = _TOKEN.findall(text.lower().replace("_", " "))
    return tokens


class BM25Index:
    """BM25 (k1, b) over title + text of each document; rankings are cached per query string.

    :param docs: the corpus
    :param k1: term-frequency saturation
    :param b: length normalisation
    """

    def __init__(self, docs: Sequence[Document], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._tfs: list[Counter[str]] = []
        self._lens: list[int] = []
        df: Counter[str] = Counter()
        for doc in docs:
            toks = tokenize(doc.title + " " + doc.text)
            tf = Counter(toks)
            self._tfs.append(tf)
            self._lens.append(len(toks))
            df.update(tf.keys())
        n = len(docs)
        self._avg = (sum(self._lens) / n) if n else 0.0
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.ranking = lru_cache(maxsize=4096)(self._ranking)

    def scores(self, query: str) -> list[float]:
        q = tokenize(query)
        out: list[float] = []
        for tf, dl in zip(self._tfs, self._lens):
            s = 0.0
            norm = self.k1 * (1 - self.b + self.b * dl / self._avg) if self._avg else self.k1
            for t in q:
                f = tf.get(t)
                if f:
                    s += self._idf[t] * f * (self.k1 + 1) / (f + norm)
            out.append(s)
        return out

    def _ranking(self, query: str) -> tuple[tuple[int, float], ...]:
        """Document indices sorted by descending score (ties by index), as (index, score)."""
        scores = self.scores(query)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        return tuple((i, scores[i]) for i in order)
