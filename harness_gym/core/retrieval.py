"""Okapi BM25 ranking over a domain corpus (used by RETRIEVE in every domain)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from harness_gym.core.types import Document

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens; ``snake_case`` names are split into their parts as well."""
    tokens = _TOKEN.findall(text.lower().replace("_", " "))
    return tokens


class BM25Index:
    """BM25 (k1, b) over title + text of each document; rankings are cached per query string.

    Each (term, document) pair's share of a score depends only on the corpus, so it is computed once here, and
    a query's scores add up the shares of its terms, term by term in the query's order (the same floating-point
    operations, in the same order, as scoring every document term by term).

    :param docs: the corpus
    :param k1: term-frequency saturation
    :param b: length normalisation
    """

    def __init__(self, docs: Sequence[Document], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        tfs: list[Counter[str]] = []
        lens: list[int] = []
        df: Counter[str] = Counter()
        for doc in docs:
            toks = tokenize(doc.title + " " + doc.text)
            tf = Counter(toks)
            tfs.append(tf)
            lens.append(len(toks))
            df.update(tf.keys())
        n = len(docs)
        self._n_docs = n
        self._avg = (sum(lens) / n) if n else 0.0
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        norms = [self.k1 * (1 - self.b + self.b * dl / self._avg) if self._avg else self.k1 for dl in lens]
        # every (term, document) pair's share, idf * f * (k1 + 1) / (f + norm), in one pass of float64 operations
        # (the same IEEE operations, in the same order, as the scalar expression), then grouped by term
        terms = list(self._idf)
        term_ids = {t: j for j, t in enumerate(terms)}
        pair_terms: list[int] = []
        pair_freqs: list[int] = []
        for tf in tfs:
            pair_terms.extend(map(term_ids.__getitem__, tf))
            pair_freqs.extend(tf.values())
        term_of = np.array(pair_terms, dtype=np.intp)
        doc_of = np.repeat(np.arange(n, dtype=np.intp), [len(tf) for tf in tfs])
        freq = np.array(pair_freqs, dtype=np.float64)
        idf = np.array([self._idf[t] for t in terms], dtype=np.float64)
        norm = np.array(norms, dtype=np.float64)
        shares = idf[term_of] * freq * (self.k1 + 1) / (freq + norm[doc_of])
        by_term = np.argsort(term_of, kind="stable")  # within a term, the documents stay in ascending order
        doc_of, shares = doc_of[by_term], shares[by_term]
        ends = np.cumsum(np.bincount(term_of, minlength=len(terms))).tolist()
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {
            t: (doc_of[start:end], shares[start:end]) for t, start, end in zip(terms, [0, *ends[:-1]], ends)}
        """term -> (indices of the documents holding it, ascending; its share of each one's score)"""
        self.ranked = lru_cache(maxsize=4096)(self._ranked)

    def _score_array(self, query: str) -> np.ndarray:
        """Every document's score: the shares of the query's terms, in the query's order, added to 0.0 one by one
        (``np.bincount`` adds its weights in input order, so each document gets the additions of the term by term
        loop ``out[ids] += shares``, in the same order: ``tests/test_retrieval_equivalence.py``)."""
        postings = [p for p in map(self._postings.get, tokenize(query)) if p is not None]
        if not postings:
            return np.zeros(self._n_docs, dtype=np.float64)
        if len(postings) == 1:
            ids, shares = postings[0]
        else:
            ids = np.concatenate([p[0] for p in postings])
            shares = np.concatenate([p[1] for p in postings])
        return np.bincount(ids, weights=shares, minlength=self._n_docs)

    def scores(self, query: str) -> list[float]:
        """The BM25 score of every document for ``query``, in corpus order (0 where no query term occurs)."""
        return self._score_array(query).tolist()

    def _ranked(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`ranking` as two read-only arrays, the document indices and their scores (for a reader of its
        first entries, without making a pair per document)."""
        scores = self._score_array(query)
        order = np.argsort(-scores, kind="stable")
        ranked_scores = scores[order]
        order.flags.writeable = False
        ranked_scores.flags.writeable = False
        return order, ranked_scores

    def ranking(self, query: str) -> tuple[tuple[int, float], ...]:
        """Document indices sorted by descending score (ties by index), as (index, score); made from the cached
        :meth:`ranked` at each call (the hot paths read :meth:`ranked` itself)."""
        order, scores = self.ranked(query)
        return tuple(zip(order.tolist(), scores.tolist()))
