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

from typing import TYPE_CHECKING, Any, ClassVar

from ..formats.trec import trec_order
from ..lucene.searcher import Index, Ranking
from ..params import Param
from .kind import RunContext, SystemKind
from .lucene_kinds import K1, B

if TYPE_CHECKING:
    from ..formats.trec import Run
    from .system import System


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
    top = index.positions([docid for docid, _ in bm25[:depth]], terms)
    return [(docid, bm25_weight * score + proximity_weight * (imd_score(top[i], len(terms)) if i < depth else 0.0))
            for i, (docid, score) in enumerate(bm25)]


_DEPTH = Param("depth", 100, "BM25's top documents reranked", positive=True)


class Proximity(SystemKind):
    name = "proximity"
    params: ClassVar[tuple[Param, ...]] = (K1, B, _DEPTH)
    summary = "BM25's top depth reranked by the proximity score alone (a deliberately weak system)"
    family = "proximity"

    def weights(self, params: dict[str, Any]) -> tuple[float, float]:
        return 0.0, 1.0

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        index, p = target.lucene, system.params
        index.configure("bm25", k1=p["k1"], b=p["b"])
        bm25_weight, proximity_weight = self.weights(p)
        out: Run = {}
        for qid, text in topics.items():
            base = index.search(text, self.base_depth(p, depth))
            out[qid] = self.cut(rerank(index, text, base, p["depth"], bm25_weight, proximity_weight), depth)
            ctx.tick(1)
        return out

    def base_depth(self, params: dict[str, Any], depth: int) -> int:
        return params["depth"]

    def cut(self, ranking: Ranking, depth: int) -> Ranking:
        return ranking


class BM25Proximity(Proximity):
    name = "bm25_proximity"
    params = (K1, B, _DEPTH, Param("bm25_weight", 2.0, "weight of BM25"),
              Param("proximity_weight", 1.0, "weight of the proximity score"))
    summary = "bm25_weight × BM25 + proximity_weight × proximity on BM25's top depth (paper: 2×BM25 + proximity)"

    def weights(self, params: dict[str, Any]) -> tuple[float, float]:
        return params["bm25_weight"], params["proximity_weight"]

    def base_depth(self, params: dict[str, Any], depth: int) -> int:
        return max(depth, params["depth"])

    def cut(self, ranking: Ranking, depth: int) -> Ranking:
        """The ``depth`` best by the combined score (cut after the re-sort: a list cut in BM25's order
        would make the top of the ranking depend on how deep it is asked for)."""
        return trec_order(ranking)[:depth]
