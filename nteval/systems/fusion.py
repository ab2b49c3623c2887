"""Reciprocal-rank fusion (Cormack et al. 2009): score(d) = Σ_runs 1 / (k + rank_run(d))."""
from __future__ import annotations

from ..formats.trec import Run, trec_order


def rrf(runs: list[Run], k: int = 60, depth: int = 1000) -> Run:
    out: Run = {}
    qids = sorted({q for r in runs for q in r})
    for qid in qids:
        scores: dict[str, float] = {}
        for run in runs:
            for rank, (docid, _s) in enumerate(trec_order(run.get(qid, [])), 1):
                scores[docid] = scores.get(docid, 0.0) + 1.0 / (k + rank)
        out[qid] = trec_order(scores.items())[:depth]
    return out
