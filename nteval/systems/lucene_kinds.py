"""Lucene's bag-of-words rankers as system kinds: BM25, query likelihood with Dirichlet
smoothing, and BM25 with RM3 or Rocchio pseudo-relevance feedback (Anserini's implementations),
searched in batches by nteval's multi-threaded Java helper."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..params import Param
from .kind import RunContext, SystemKind

if TYPE_CHECKING:
    from ..formats.trec import Run
    from .system import System

#: Anserini's BM25 defaults (the paper's S_ref)
K1 = Param("k1", 0.9, "BM25 term-frequency saturation", positive=True)
B = Param("b", 0.4, "BM25 document-length normalization", min=0, max=1)
FB_DOCS = Param("fb_docs", 10, "feedback documents", positive=True)
FB_TERMS = Param("fb_terms", 10, "expansion terms", positive=True)
#: queries searched per call to the Java helper (keeps the progress bar moving)
CHUNK = 500


class BagOfWords(SystemKind):
    """A Lucene similarity (and optional feedback) configured on the open index, queries searched
    in chunks by the batch helper."""

    def configure(self, index: Any, params: dict[str, Any]) -> None:
        index.configure("bm25", k1=params["k1"], b=params["b"])

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        index = target.lucene
        self.configure(index, system.params)
        out: Run = {}
        qids = list(topics)
        for i in range(0, len(qids), CHUNK):
            chunk = {q: topics[q] for q in qids[i:i + CHUNK]}
            out.update(index.batch_search(chunk, depth, ctx.threads))
            ctx.tick(len(chunk))
        return out


class BM25(BagOfWords):
    name = "bm25"
    params = (K1, B)
    summary = "Okapi BM25 (Lucene)"
    family = "bm25"
    one_pass = "bm25"


class QLD(BagOfWords):
    name = "qld"
    params = (Param("mu", 1000.0, "Dirichlet smoothing", positive=True),)
    summary = "query likelihood, Dirichlet smoothing (Lucene)"
    family = "qld"
    one_pass = "qld"

    def configure(self, index: Any, params: dict[str, Any]) -> None:
        index.configure("qld", mu=params["mu"])


class RM3(BagOfWords):
    name = "bm25_rm3"
    params = (K1, B, FB_DOCS, FB_TERMS,
              Param("original_query_weight", 0.5, "weight of the original query in the expanded one", min=0, max=1))
    summary = "BM25 + RM3 pseudo-relevance feedback (Anserini)"
    family = "expansion"
    feedback = True

    def configure(self, index: Any, params: dict[str, Any]) -> None:
        index.configure("bm25", k1=params["k1"], b=params["b"], rm3=True, fb_docs=params["fb_docs"],
                        fb_terms=params["fb_terms"], original_query_weight=params["original_query_weight"])


class Rocchio(BagOfWords):
    name = "bm25_rocchio"
    params = (K1, B, FB_DOCS, FB_TERMS, Param("alpha", 1.0, "weight of the original query"),
              Param("beta", 0.75, "weight of the feedback documents' centroid"))
    summary = "BM25 + Rocchio pseudo-relevance feedback (Anserini)"
    family = "expansion"
    feedback = True

    def configure(self, index: Any, params: dict[str, Any]) -> None:
        index.configure("bm25", k1=params["k1"], b=params["b"], rocchio=True, fb_docs=params["fb_docs"],
                        fb_terms=params["fb_terms"], alpha=params["alpha"], beta=params["beta"])
