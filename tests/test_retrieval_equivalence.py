"""BM25Index scores from precomputed postings equal, bit for bit, those of scoring every document term by term
(the algorithm the index used before, kept here as the reference), on every shipped corpus and its queries."""

from __future__ import annotations

import math
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest

import harness_gym
from harness_gym.core.retrieval import BM25Index, tokenize
from harness_gym.core.types import SPLITS, Context, Document


class ReferenceBM25:
    """BM25 as a loop over every document and every query term."""

    def __init__(self, docs: list[Document], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tfs, self.lens, df = [], [], Counter()
        for doc in docs:
            toks = tokenize(doc.title + " " + doc.text)
            self.tfs.append(Counter(toks))
            self.lens.append(len(toks))
            df.update(self.tfs[-1].keys())
        n = len(docs)
        self.avg = (sum(self.lens) / n) if n else 0.0
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: str) -> list[float]:
        k1, b, q = self.k1, self.b, tokenize(query)
        out = []
        for tf, dl in zip(self.tfs, self.lens):
            s = 0.0
            norm = k1 * (1 - b + b * dl / self.avg) if self.avg else k1
            for t in q:
                f = tf.get(t)
                if f:
                    s += self.idf[t] * f * (k1 + 1) / (f + norm)
            out.append(s)
        return out


def reference_scores(docs: list[Document], query: str) -> list[float]:
    return ReferenceBM25(docs).scores(query)


def reference_ranking(scores: list[float]) -> tuple[tuple[int, float], ...]:
    return tuple((i, scores[i]) for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i)))


def shipped_queries(domain) -> list[str]:
    """Every task's retrieval query and prompt, every document's title, and for multi-hop domains the expanded
    queries after following the top-ranked unseen article up to three times."""
    queries = [doc.title for doc in domain.corpus]
    for split in SPLITS:
        for task in domain.tasks(split):
            queries += [domain.query(task), task.prompt]
            if hasattr(domain, "expanded_query"):
                retrieved: list[str] = []
                for _ in range(3):
                    query = domain.expanded_query(task, retrieved)
                    queries.append(query)
                    unseen = [i for i, _ in domain.index.ranking(query) if domain.corpus[i].doc_id not in retrieved]
                    if not unseen:
                        break
                    retrieved.append(domain.corpus[unseen[0]].doc_id)
    return list(dict.fromkeys(queries))


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_scores_and_rankings_equal_the_term_by_term_loop(env_id):
    env = gym.make(env_id)
    domain = env.unwrapped.domain
    docs = list(domain.corpus)
    fresh = BM25Index(docs)
    reference = ReferenceBM25(docs)
    queries = shipped_queries(domain)
    assert len(queries) > len(docs)
    for query in queries:
        expected = reference.scores(query)
        got = fresh.scores(query)
        assert got == expected, f"{env_id}: scores differ for {query[:80]!r}"
        assert all(type(s) is float for s in got)
        ranking = fresh.ranking(query)
        assert ranking == reference_ranking(expected), f"{env_id}: ranking differs for {query[:80]!r}"
        assert all(type(i) is int and type(s) is float for i, s in ranking)
    env.close()


def test_repeated_query_terms_count_each_time_and_unknown_terms_score_nothing():
    docs = [Document("a", "Cats", "cats purr"), Document("b", "Dogs", "dogs bark at cats"), Document("c", "", "")]
    index = BM25Index(docs)
    for query in ("cats cats dogs", "zebra", "", "CATS_dogs"):
        assert index.scores(query) == reference_scores(docs, query)
    assert index.scores("zebra") == [0.0, 0.0, 0.0]
    assert index.ranking("zebra") == ((0, 0.0), (1, 0.0), (2, 0.0))
    assert BM25Index([]).scores("cats") == [] and BM25Index([]).ranking("cats") == ()
    empty = [Document("x", "", ""), Document("y", "", "")]
    assert BM25Index(empty).scores("x") == reference_scores(empty, "x") == [0.0, 0.0]


def best_unseen_by_the_ranking(domain, query: str, retrieved: list[str]):
    """Domain.best_unseen as it was defined: a walk over the (index, score) pairs of the whole ranking."""
    ranking = domain.index.ranking(query)
    if not ranking:
        return None
    best = ranking[0][1]
    unseen = [(i, s) for i, s in ranking if domain.corpus[i].doc_id not in retrieved][:2]
    if not unseen:
        return None
    (doc_idx, score), after = unseen[0], (unseen[1][1] if len(unseen) > 1 else 0.0)
    share = score / best if best > 0 else 0.0
    return (domain.corpus[doc_idx], best > 0 and share >= domain.relevant_looking_ratio, share,
            (score - after) / best if best > 0 else 0.0, query)


@pytest.mark.parametrize("env_id", ["HarnessKnowledge-v1", "HarnessResearchQA-v1", "HarnessPlan-v1"])
def test_best_unseen_equals_the_walk_over_the_whole_ranking(env_id):
    env = gym.make(env_id)
    domain = env.unwrapped.domain
    rng = np.random.default_rng(0)
    for task in domain.tasks("train")[:40]:
        ctx = Context(task=task)
        for _ in range(len(domain.corpus) + 1):
            query = domain.query(task)
            expected = best_unseen_by_the_ranking(domain, query, ctx.retrieved)
            got = domain.best_unseen(query, ctx)
            assert (got if got is None else tuple(got)) == expected
            if got is not None:
                assert all(type(v) is float for v in (got.score_share, got.gap_share))
            if got is None or len(ctx.retrieved) > 12:
                break
            # retrieve the best unseen document, or now and then another one, so that gaps open in the ranking
            pick = got.document.doc_id if rng.random() < 0.7 else domain.corpus[int(rng.integers(len(domain.corpus)))].doc_id
            if pick not in ctx.retrieved:
                ctx.retrieved.append(pick)
    env.close()
