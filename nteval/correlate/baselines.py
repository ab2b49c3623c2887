"""Run-based judgment-free baselines: pseudo-qrels made from the runs themselves.

- **Soboroff et al. (2001)** random pseudo-qrels: pool each topic's top ``pool_depth`` documents
  from every run *with duplicates* (a document retrieved by many runs is more likely drawn), and
  draw ``n_relevant`` of them at random as relevant; ``trials`` draws, system scores averaged.
  ``n_relevant`` defaults to the mean number of relevant documents per topic in the real qrels
  (Soboroff used the per-topic count; the mean needs less from the judgments).
- **Reference count** (Nuray & Can 2006; Sakai & Lin 2010): documents retrieved in the top
  ``pool_depth`` by the most runs are pseudo-relevant (the ``n_relevant`` most referenced per
  topic; ties by docid).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping

import numpy as np

from ..formats.trec import Qrels, Run, trec_order


def mean_relevant(qrels: Qrels) -> int:
    counts = [sum(1 for r in docs.values() if r > 0) for docs in qrels.values()]
    return max(1, round(sum(counts) / len(counts))) if counts else 1


def pools(runs: Mapping[str, Run], topics: list[str], pool_depth: int,
          tick: Callable[[], object] | None = None) -> dict[str, list[str]]:
    """Each topic's pool: the top ``pool_depth`` documents of every run, with duplicates. Computed
    once for all the draws of a baseline (each run is read once: a run set may hold them on disk);
    ``tick`` is called after each run (a progress bar)."""
    out: dict[str, list[str]] = {q: [] for q in topics}
    for name in runs:
        run = runs[name]
        for q in topics:
            out[q].extend(d for d, _ in trec_order(run.get(q, []))[:pool_depth])
        if tick is not None:
            tick()
    return out


_pools = pools


def soboroff_qrels(runs: Mapping[str, Run] | None, topics: list[str], n_relevant: int, pool_depth: int = 100,
                   seed: int = 0, pooled: dict[str, list[str]] | None = None) -> Qrels:
    """One random draw of pseudo-qrels (pool with duplicates, ``n_relevant`` distinct docs);
    ``pooled``: the :func:`pools` of the runs, when several draws share them."""
    rng = np.random.default_rng(seed)
    out: Qrels = {}
    if pooled is None:
        pooled = pools(runs or {}, topics, pool_depth)
    for q in topics:
        pool = pooled.get(q, [])
        if not pool:
            continue
        order = rng.permutation(len(pool))  # a random sequence of pool entries; first distinct ones win
        chosen: dict[str, int] = {}
        for i in order:
            chosen.setdefault(pool[i], 1)
            if len(chosen) >= n_relevant:
                break
        out[q] = chosen
    return out


def reference_count_qrels(runs: Mapping[str, Run] | None, topics: list[str], n_relevant: int,
                          pool_depth: int = 100, pooled: dict[str, list[str]] | None = None) -> Qrels:
    out: Qrels = {}
    if pooled is None:
        pooled = pools(runs or {}, topics, pool_depth)
    for q in topics:
        pool = pooled.get(q, [])
        counts = Counter(pool)
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n_relevant]
        if top:
            out[q] = {d: 1 for d, _ in top}
    return out
