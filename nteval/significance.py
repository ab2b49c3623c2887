"""Which systems can be told apart: paired tests over topics, a multiple-comparison correction,
and groups of systems that cannot be told apart.

- Test: the paired randomization test (Fisher; Smucker, Allan & Carterette 2007 recommend it
  for IR) on the mean per-topic difference. Under H0 the two systems' labels are exchangeable
  within a topic, so each replicate flips the sign of every topic's difference at random; one
  sign matrix serves every pair (one matrix product). Exact (all 2^n flips) when 2^n is at most
  the number of resamples. p-values are computed as ``scipy.stats.permutation_test`` does
  (``permutation_type="samples"``): two-sided = 2·min(one-sided), +1 in numerator and
  denominator for a random (not exact) test, the same relative tolerance for ties with the
  observed value — a test checks both give the same p-values.
- Correction: Holm (step-down, controls the family-wise error rate; default) or
  Benjamini–Hochberg (``scipy.stats.false_discovery_control``, controls the false discovery rate).
- Groups: systems sorted by mean score; a group is a maximal run of consecutive systems in
  which no pair differs significantly (groups may overlap, as homogeneous subsets do).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

CORRECTIONS = {"holm": "Holm (family-wise error rate)", "bh": "Benjamini-Hochberg (false discovery rate)"}
DEFAULT_RESAMPLES = 10_000
MAX_RESAMPLES = 200_000


def resamples_for(pairs: int, alpha: float = 0.05) -> int:
    """Enough resamples that the smallest p a random test can give (2/(R+1), two-sided) survives
    Holm over all the pairs: with 10,000 and 276 pairs (24 systems) it cannot (276 · 2/10,001 >
    0.05) and no pair would ever be called different. R = 20 · pairs / alpha, at least 10,000,
    at most 200,000."""
    return int(min(MAX_RESAMPLES, max(DEFAULT_RESAMPLES, 20 * pairs / alpha)))


def _resamples_text(n_resamples: int, pairs: int) -> str:
    """The resample count, and why it is more than the usual 10,000 when it is."""
    if n_resamples <= DEFAULT_RESAMPLES:
        return f"{n_resamples:,} random sign flips"
    return (f"{n_resamples:,} random sign flips (20 × {pairs:,} pairs / alpha: enough that the smallest p a random test "
            "can give survives the correction over every pair)")


def _exact(n: int, n_resamples: int) -> bool:
    """Enumerate all 2^n sign flips (the exact test) when that is no more than the resamples."""
    return n <= 30 and 2 ** n <= n_resamples


def _all_signs(n: int) -> np.ndarray:
    codes = np.arange(2 ** n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)[None, :]
    return np.where(codes & 1, -1.0, 1.0)


def topic_matrix(per_topic: dict[str, dict[str, float]]) -> tuple[list[str], list[str], np.ndarray]:
    """(systems, topics, systems × topics matrix) of ``{system: {qid: value}}`` (topics sorted)."""
    names = list(per_topic)
    qids = sorted(per_topic[names[0]]) if names else []
    m = np.array([[per_topic[s][q] for q in qids] for s in names], float).reshape(len(names), len(qids))
    return names, qids, m


def paired_randomization(diffs: np.ndarray, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                         chunk: int = 10_000) -> np.ndarray:
    """Two-sided p-values of H0 "mean difference = 0" for each row of ``diffs`` (pairs × topics).
    Random sign matrices are drawn ``chunk`` rows at a time (bounded memory), so the p-values
    for a seed depend on the chunk size too."""
    diffs = np.atleast_2d(np.asarray(diffs, float))
    n = diffs.shape[1]
    rng = np.random.default_rng(seed)
    observed = diffs.mean(axis=1)
    gamma = np.abs(np.finfo(float).eps * 100 * observed)[:, None]
    exact = _exact(n, n_resamples)
    if exact:
        batches = iter([_all_signs(n)])
    else:
        batches = (np.where(rng.random((min(chunk, n_resamples - done), n)) < 0.5, -1.0, 1.0)
                   for done in range(0, n_resamples, chunk))
    le = np.zeros(diffs.shape[0])
    ge = np.zeros(diffs.shape[0])
    r = 0
    for signs in batches:
        null = (diffs @ signs.T) / n                   # pairs × replicates
        le += (null <= observed[:, None] + gamma).sum(axis=1)
        ge += (null >= observed[:, None] - gamma).sum(axis=1)
        r += signs.shape[0]
    adj = 0 if exact else 1
    less, greater = (le + adj) / (r + adj), (ge + adj) / (r + adj)
    return np.clip(2 * np.minimum(less, greater), 0.0, 1.0)


def holm(p: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values (step-down; monotone; capped at 1)."""
    ps = np.asarray(p, float)
    m = ps.size
    order = np.argsort(ps, kind="stable")
    adj = np.maximum.accumulate((m - np.arange(m)) * ps[order])
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out


def adjust(p: Sequence[float] | np.ndarray, method: str = "holm") -> np.ndarray:
    if method == "holm":
        return holm(p)
    if method == "bh":
        from scipy.stats import false_discovery_control

        return false_discovery_control(np.asarray(p, float), method="bh") if len(p) else np.asarray([])
    raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}")


def groups(names: Sequence[str], means: Sequence[float], different: dict[frozenset, bool]) -> list[list[str]]:
    """Maximal runs of consecutive systems (by mean, best first) with no significant pair inside."""
    order = sorted(range(len(names)), key=lambda i: (-means[i], names[i]))
    out: list[list[int]] = []
    for start in range(len(order)):
        end = start
        while end + 1 < len(order) and not any(different[frozenset((names[order[k]], names[order[end + 1]]))]
                                               for k in range(start, end + 1)):
            end += 1
        run = order[start:end + 1]
        if not out or not set(run) <= set(out[-1]):
            out.append(run)
    return [[names[i] for i in g] for g in out]


def compare_systems(per_topic: dict[str, dict[str, float]], measure: str, correction: str = "holm",
                    alpha: float = 0.05, n_resamples: int | None = None, seed: int = 0) -> dict[str, Any]:
    """All pairwise tests between the systems of ``per_topic`` ({system: {qid: value}}) on one
    measure, corrected together; the groups that cannot be told apart. ``n_resamples`` defaults
    to :func:`resamples_for` the number of pairs."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}")
    names, qids, m = topic_matrix(per_topic)
    means = m.mean(axis=1) if qids else np.zeros(len(names))
    pairs = [(a, b) for a in range(len(names)) for b in range(a + 1, len(names))]
    n_resamples = n_resamples or resamples_for(len(pairs), alpha)
    diffs = np.array([m[a] - m[b] for a, b in pairs]).reshape(len(pairs), len(qids))
    p = paired_randomization(diffs, n_resamples, seed) if pairs and qids else np.ones(len(pairs))
    p_adj = adjust(p, correction) if pairs else np.asarray([])
    different = {frozenset((names[a], names[b])): bool(pa <= alpha) for (a, b), pa in zip(pairs, p_adj)}
    exact = bool(qids) and _exact(len(qids), n_resamples)
    return {
        "measure": measure, "topics": len(qids),
        "test": f"paired randomization test (sign flips of per-topic differences), two-sided, "
                f"{'exact (every sign flip)' if exact else _resamples_text(n_resamples, len(pairs))}",
        "correction": CORRECTIONS[correction], "alpha": alpha,
        "pairs": [{"a": names[a], "b": names[b], "diff": round(float(means[a] - means[b]), 6),
                   "p": float(pv), "p_adjusted": float(pa), "significant": bool(pa <= alpha)}
                  for (a, b), pv, pa in zip(pairs, p, p_adj)],
        "groups": groups(names, list(means), different),
    }


def indistinguishable_from_best(per_topic: dict[str, dict[str, float]], correction: str = "holm", alpha: float = 0.05,
                                n_resamples: int | None = None, seed: int = 0) -> dict[str, Any]:
    """Each candidate vs the best one (by mean): which cannot be told apart from it (a grid's
    cells, say). The comparisons with the best are corrected together."""
    names, qids, m = topic_matrix(per_topic)
    means = m.mean(axis=1)
    best = int(np.argmax(means))
    others = [i for i in range(len(names)) if i != best]
    n_resamples = n_resamples or resamples_for(len(others), alpha)
    p = paired_randomization(np.array([m[best] - m[i] for i in others]).reshape(len(others), len(qids)),
                             n_resamples, seed) if others else np.asarray([])
    p_adj = adjust(p, correction) if others else np.asarray([])
    tied = [names[best]] + [names[i] for i, pa in zip(others, p_adj) if pa > alpha]
    return {"best": names[best], "correction": CORRECTIONS[correction], "alpha": alpha, "topics": len(qids),
            "test": "paired randomization test vs the best, two-sided",
            "p_adjusted": {names[i]: float(pa) for i, pa in zip(others, p_adj)}, "indistinguishable": tied}
