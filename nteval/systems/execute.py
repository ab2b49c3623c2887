"""Run one System over a set of topics: Lucene families on the open index, dense retrieval on its
cached vectors, fusions from the runs already made, external systems through their adapter."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..formats.trec import Run
from . import querygen
from .base import System
from .fusion import linear, rrf
from .proximity import rerank

_BOW = {"bm25", "qld", "bm25_rm3", "bm25_rocchio"}
#: Algorithms that need no Lucene index open (dense reads its vectors; the others read runs or call out).
NO_LUCENE = {"dense", "rrf", "linear", "external", "callable", "command"}


class Target:
    """What systems search: one Lucene index (``all`` or ``nt``) of an nteval index directory.
    The Lucene index is opened on first use only (dense and external systems do not need it).
    ``notes`` collects what non-Lucene systems report (encoding cache, recall vs flat, foreign hits)."""

    def __init__(self, index_dir: str | Path, index_name: str, fingerprint: str | None = None,
                 label: str | None = None, progress: bool | None = None):
        self.index_dir, self.index_name = Path(index_dir), index_name
        self._fingerprint = fingerprint
        self.label = label or index_name
        self.progress = progress
        self.notes: dict[str, dict[str, Any]] = {}
        self._lucene = None

    @classmethod
    def wrapping(cls, index) -> "Target":
        """A Target around an already open Lucene ``Index`` (callers of earlier versions passed one)."""
        t = cls(index.path.parent, index.path.name)
        t._lucene = index
        return t

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            from ..index import read_manifest

            self._fingerprint = read_manifest(self.index_dir)["fingerprint"]
        return self._fingerprint

    @property
    def lucene(self):
        if self._lucene is None:
            from ..lucene.searcher import Index

            self._lucene = Index(self.index_dir / self.index_name)
        return self._lucene

    @property
    def opened(self) -> bool:
        return self._lucene is not None

    def close(self) -> None:
        if self._lucene is not None:
            self._lucene.close()
            self._lucene = None


def configure(index, system: System) -> None:
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


def run_system(target, system: System, topics: dict[str, str], depth: int,
               done: Mapping[str, Run] | None = None, threads: int | None = None,
               tick: Callable[[int], None] | None = None) -> Run:
    """Rankings for every topic (an empty list where the query analyzes to nothing). ``target``: a
    :class:`Target`, or an open :class:`~nteval.lucene.searcher.Index`; ``threads``: Java search
    threads for bag-of-words systems (default: the cores of the machine)."""
    import os

    threads = threads or os.cpu_count() or 1
    if not isinstance(target, Target):
        target = Target.wrapping(target)
    tick = tick or (lambda n: None)
    a, p = system.algorithm, system.params
    if a in ("rrf", "linear"):
        inputs = [done[name] for name in p["systems"]]  # type: ignore[index]
        run = rrf(inputs, k=p["k"], depth=depth) if a == "rrf" else linear(inputs, p["weights"], p["norm"], depth)
        tick(len(topics))
        return {q: run.get(q, []) for q in topics}
    if a == "dense":
        from .dense import dense_run

        run, notes = dense_run(system.name, p, target.index_dir, target.index_name, target.fingerprint, topics, depth,
                               progress=target.progress)
        target.notes[system.name] = notes
        tick(len(topics))
        return run
    if system.is_external:
        from .external import external_rankings, validate

        run, notes = validate(system, external_rankings(system, target.label, topics, depth), topics, depth,
                              target.index_dir, target.index_name, target.label)
        target.notes[system.name] = notes
        tick(len(topics))
        return run
    index = target.lucene
    configure(index, system)
    if a in _BOW:
        out: Run = {}
        qids = list(topics)
        for i in range(0, len(qids), 500):  # chunks keep the progress bar moving
            chunk = {q: topics[q] for q in qids[i:i + 500]}
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
