"""Run one System over a set of topics on an open index."""
from __future__ import annotations

from collections.abc import Callable

from ..formats.trec import Run
from ..lucene.searcher import Index
from . import querygen
from .base import System
from .fusion import rrf
from .proximity import rerank

_BOW = {"bm25", "qld", "bm25_rm3", "bm25_rocchio"}


def configure(index: Index, system: System) -> None:
    p = system.params
    if system.algorithm == "qld":
        index.configure("qld", mu=p["mu"])
    elif system.algorithm == "bm25_rm3":
        index.configure("bm25", k1=p["k1"], b=p["b"], rm3=True, fb_docs=p["fb_docs"], fb_terms=p["fb_terms"],
                        original_query_weight=p["original_query_weight"])
    elif system.algorithm == "bm25_rocchio":
        index.configure("bm25", k1=p["k1"], b=p["b"], rocchio=True, fb_docs=p["fb_docs"], fb_terms=p["fb_terms"],
                        alpha=p["alpha"], beta=p["beta"])
    else:
        index.configure("bm25", k1=p.get("k1", 0.9), b=p.get("b", 0.4))


def run_system(index: Index, system: System, topics: dict[str, str], depth: int,
               done: dict[str, Run] | None = None, threads: int = 2,
               tick: Callable[[int], None] | None = None) -> Run:
    """Rankings for every topic (an empty list where the query analyzes to nothing)."""
    tick = tick or (lambda n: None)
    a, p = system.algorithm, system.params
    if a == "rrf":
        run = rrf([done[name] for name in p["systems"]], k=p["k"], depth=depth)  # type: ignore[index]
        tick(len(topics))
        return {q: run.get(q, []) for q in topics}
    configure(index, system)
    if a in _BOW:
        out: Run = {}
        qids = list(topics)
        for i in range(0, len(qids), 200):  # chunks keep the progress bar moving
            chunk = {q: topics[q] for q in qids[i:i + 200]}
            out.update(index.batch_search(chunk, depth, threads))
            tick(len(chunk))
        return out
    out = {}
    for qid, text in topics.items():
        if a in ("proximity", "bm25_proximity"):
            base = index.search(text, max(depth, p["depth"]) if a == "bm25_proximity" else p["depth"])
            if a == "proximity":
                out[qid] = rerank(index, text, base, p["depth"], 0.0, 1.0)
            else:
                out[qid] = rerank(index, text, base, p["depth"], p["bm25_weight"], p["proximity_weight"])[:depth]
        else:
            out[qid] = getattr(querygen, a)(index, text, depth, p["max_words"])
        tick(1)
    return out
