"""A proximity scorer in the spirit of the paper's inter-match distance (IMD) scorer.

For a document, the positions of the query's analyzed terms (from the index's stored term
vectors) are merged in order; each pair of adjacent matches of *different* query terms adds
1 / distance. The sum is multiplied by coverage (distinct query terms matched / query terms), so
a document matching one term scores 0. It reranks BM25's top ``depth`` documents:

- **proximity**: proximity score alone (a deliberately weak system: it ignores term weights);
- **bm25_proximity**: ``bm25_weight × BM25 + proximity_weight × proximity`` (paper: 2×BM25 +
  proximity) on the top ``depth``; documents below ``depth`` keep ``bm25_weight × BM25``.
"""
from __future__ import annotations

from ..lucene.searcher import Index, Ranking


def imd_score(positions: dict[str, list[int]], n_query_terms: int) -> float:
    if len(positions) < 2 or n_query_terms < 2:
        return 0.0
    merged = sorted((p, t) for t, ps in positions.items() for p in ps)
    total = 0.0
    for (p1, t1), (p2, t2) in zip(merged, merged[1:]):
        if t1 != t2 and p2 > p1:
            total += 1.0 / (p2 - p1)
    return total * len(positions) / n_query_terms


def query_terms(index: Index, text: str) -> list[str]:
    out: list[str] = []
    for t in index.analyze(text):
        if t not in out:
            out.append(t)
    return out


def rerank(index: Index, text: str, bm25: Ranking, depth: int, bm25_weight: float, proximity_weight: float) -> Ranking:
    terms = query_terms(index, text)
    out: Ranking = []
    for i, (docid, score) in enumerate(bm25):
        prox = imd_score(index.term_positions(docid, terms), len(terms)) if i < depth else 0.0
        out.append((docid, bm25_weight * score + proximity_weight * prox))
    return out
