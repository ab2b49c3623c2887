"""What a release changed, beside whether it is good enough: the topics that moved most (with the
known item's rank or the AP before and after) and the churn between the two rankings.

**Churn** is not quality (OpenSearch's Search Relevance Workbench compares configurations by it
alone): two systems can rank very differently and be equally good. It is reported beside the
decision so a release manager knows how much users will see change.

- **RBO** (rank-biased overlap, Webber, Moffat & Zobel 2010, "A similarity measure for indefinite
  rankings", TOIS 28(4)), persistence p = 0.9 (the top 10 carry 65 % of the weight), the
  extrapolated form RBO_ext of their eq. 32 evaluated at depth k = min(depth of either list, 100):
  1 for identical rankings, 0 for disjoint ones.
- **overlap@10**: the share of the baseline's top 10 that is also in the candidate's top 10.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: RBO's persistence
RBO_P = 0.9
#: how deep the rankings are compared for RBO
RBO_DEPTH = 100


def rbo_ext(a: Sequence[str], b: Sequence[str], p: float = RBO_P, depth: int = RBO_DEPTH) -> float:
    """Extrapolated rank-biased overlap of two rankings (lists of docids, best first), Webber et
    al. (2010) eq. 32 for lists evaluated to the same depth k: ``RBO_ext = X_k/k · p^k +
    (1 − p)/p · Σ_{d=1..k} X_d/d · p^d``, X_d the overlap of the two top-d prefixes."""
    k = min(depth, max(len(a), len(b)))
    if k == 0:
        return 1.0
    a, b = list(a[:k]), list(b[:k])
    seen_a: set[str] = set()
    seen_b: set[str] = set()
    overlap = 0
    total = 0.0
    for d in range(1, k + 1):
        x = a[d - 1] if d <= len(a) else None
        y = b[d - 1] if d <= len(b) else None
        if x is not None and y is not None and x == y:
            overlap += 1
        else:
            if x is not None:
                overlap += x in seen_b
                seen_a.add(x)
            if y is not None:
                overlap += y in seen_a
                seen_b.add(y)
        total += overlap / d * p ** d
    return float(overlap / k * p ** k + (1 - p) / p * total)


def overlap_at(a: Sequence[str], b: Sequence[str], k: int = 10) -> float:
    """|top-k of a ∩ top-k of b| / the longer of the two top-k lists (at most k): two identical
    rankings overlap fully however short (two empty ones too)."""
    n = max(len(a[:k]), len(b[:k]))
    return len(set(a[:k]) & set(b[:k])) / n if n else 1.0


def churn(base_run: dict[str, list], cand_run: dict[str, list], qids: Sequence[str]) -> dict[str, Any]:
    """Mean RBO and overlap@10 over ``qids`` between two runs ({qid: [(docid, score), ...]})."""
    rbos, overlaps = [], []
    for q in qids:
        a = [d for d, _ in base_run.get(q, [])]
        b = [d for d, _ in cand_run.get(q, [])]
        rbos.append(rbo_ext(a, b))
        overlaps.append(overlap_at(a, b))
    return {"rbo": round(float(np.mean(rbos)), 4) if rbos else None,
            "overlap@10": round(float(np.mean(overlaps)), 4) if overlaps else None,
            "identical_top10": int(sum(1 for v in overlaps if v == 1.0)), "topics": len(qids),
            "method": f"mean over topics of RBO_ext (Webber et al. 2010, p = {RBO_P}, depth {RBO_DEPTH}) and of the shared "
                      "share of the two top 10s"}


def rank_of(run: dict[str, list], qid: str, docid: str) -> int | None:
    """1-based rank of ``docid`` in ``run[qid]`` (None: not retrieved)."""
    for i, (d, _) in enumerate(run.get(qid, []), 1):
        if d == docid:
            return i
    return None


def moved_topics(base: dict[str, float], cand: dict[str, float], how: dict[str, Any], n: int) -> dict[str, list]:
    """The ``n`` topics that got most worse and most better (by the measure's change), each with
    its query and what a person checks: the known item's rank before/after (known-item), or the
    measure and the pseudo-relevant documents in the top 10 before/after (topical).
    ``how``: topics, qrels, sources, runs (base, cand), task, measure."""
    diffs = sorted(((cand[q] - base[q], q) for q in base), key=lambda t: (t[0], t[1]))
    worse = [(d, q) for d, q in diffs if d < 0][:n]
    better = [(d, q) for d, q in reversed(diffs) if d > 0][:n]
    return {"worse": [_topic(q, d, base, cand, how) for d, q in worse],
            "better": [_topic(q, d, base, cand, how) for d, q in better]}


def _topic(qid: str, diff: float, base: dict[str, float], cand: dict[str, float], how: dict[str, Any]) -> dict[str, Any]:
    m = how["measure"]
    row: dict[str, Any] = {"qid": qid, "query": how["topics"][qid], "source": how["sources"].get(qid, qid),
                           m: [round(base[qid], 4), round(cand[qid], 4)], "diff": round(diff, 4)}
    b_run, c_run = how["runs"]
    if how["task"] == "known-item":
        doc = next(iter(how["qrels"][qid]))
        row["rank"] = [rank_of(b_run, qid, doc), rank_of(c_run, qid, doc)]
    else:
        rel = {d for d, r in how["qrels"][qid].items() if r > 0}
        row["relevant_in_top10"] = [sum(1 for d, _ in b_run.get(qid, [])[:10] if d in rel),
                                    sum(1 for d, _ in c_run.get(qid, [])[:10] if d in rel)]
        row["relevant"] = len(rel)
    return row


def unjudged_share(run: dict[str, list], qids: Sequence[str], known: set[str], k: int = 10) -> dict[str, Any]:
    """How much of the top ``k`` over pinned topics are documents added after the pin (unjudged for
    those topics: AP counts them as non-relevant)."""
    total = new = 0
    for q in qids:
        top = [d for d, _ in run.get(q, [])[:k]]
        total += len(top)
        new += sum(1 for d in top if d not in known)
    return {"top": k, "hits": total, "added_after_pin": new, "share": round(new / total, 4) if total else 0.0}
