"""Agreement between two rankings of the same systems.

- :func:`correlations`: Pearson r (values), Spearman ρ and Kendall τ-b (rankings), each with its
  two-sided p-value (scipy.stats), and τ_AP (Yilmaz, Aslam & Robertson 2008), which weighs
  disagreements near the top more (no p-value).
- :func:`bootstrap_ci`: percentile 95 % intervals from resampling **topics** on both sides
  independently (seeded; the resampled means are computed as one numpy operation per chunk).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

STATISTICS = ("pearson", "spearman", "kendall", "tau_ap")


def tau_ap(estimate: Sequence[float], truth: Sequence[float]) -> float | None:
    """τ_AP of the ranking induced by ``estimate`` against the one induced by ``truth``.

    Items are ordered by ``estimate`` (descending; ties by position). For the item at rank i
    (i ≥ 2), C(i) counts the items above it that ``truth`` also puts above it (ties in
    ``truth`` count as half). τ_AP = 2/(n−1) Σ_i C(i)/(i−1) − 1; asymmetric by design.
    """
    n = len(estimate)
    if n < 2 or len(truth) != n:
        return None
    order = sorted(range(n), key=lambda i: -estimate[i])
    total = 0.0
    for pos in range(1, n):
        item = order[pos]
        correct = 0.0
        for above in order[:pos]:
            if truth[above] > truth[item]:
                correct += 1
            elif truth[above] == truth[item]:
                correct += 0.5
        total += correct / pos
    return 2.0 * total / (n - 1) - 1.0


def correlations(x: Sequence[float], y: Sequence[float]) -> dict[str, dict[str, float | None]]:
    """Pearson, Spearman, Kendall τ-b (with p-values) and τ_AP (x as estimate, y as truth).
    Undefined statistics (fewer than 3 systems, or a constant vector) are None."""
    from scipy import stats

    if len(x) != len(y):
        raise ValueError("score vectors differ in length")
    out: dict[str, dict[str, float | None]] = {}
    constant = len(set(x)) < 2 or len(set(y)) < 2
    for name, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr), ("kendall", stats.kendalltau)):
        if len(x) < 3 or constant:
            out[name] = {"value": None, "p": None}
            continue
        res = fn(list(x), list(y))
        stat = getattr(res, "statistic", None)
        out[name] = {"value": float(res[0] if stat is None else stat), "p": float(res.pvalue)}
    out["tau_ap"] = {"value": None if constant else tau_ap(list(x), list(y)), "p": None}
    return out


def _rank(a: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank)."""
    from scipy.stats import rankdata

    return rankdata(a, axis=-1)


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    den = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (a * b).sum(axis=1) / den, np.nan)


def bootstrap_ci(x_topics: np.ndarray, y_topics: np.ndarray, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95, chunk: int = 200) -> dict[str, tuple[float, float] | None]:
    """Percentile CIs for each statistic of :data:`STATISTICS`.

    ``x_topics``: systems × topics per-topic scores on one side (e.g. NT), ``y_topics`` the same
    systems × (other) topics on the other side (e.g. human). Each replicate resamples the columns
    of each matrix with replacement, averages per system and recomputes the statistics.
    """
    from scipy.stats import kendalltau

    x_topics, y_topics = np.asarray(x_topics, float), np.asarray(y_topics, float)
    rng = np.random.default_rng(seed)
    vals: dict[str, list[float]] = {k: [] for k in STATISTICS}
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        ix = rng.integers(0, x_topics.shape[1], size=(b, x_topics.shape[1]))
        iy = rng.integers(0, y_topics.shape[1], size=(b, y_topics.shape[1]))
        mx = x_topics[:, ix].mean(axis=2).T  # (b, systems)
        my = y_topics[:, iy].mean(axis=2).T
        vals["pearson"].extend(_pearson_rows(mx, my))
        vals["spearman"].extend(_pearson_rows(_rank(mx), _rank(my)))
        for r in range(b):
            vals["kendall"].append(kendalltau(mx[r], my[r]).statistic)
            vals["tau_ap"].append(tau_ap(list(mx[r]), list(my[r])) or np.nan)
        done += b
    lo, hi = (1 - level) / 2 * 100, (1 + level) / 2 * 100
    out: dict[str, tuple[float, float] | None] = {}
    for k, v in vals.items():
        arr = np.asarray(v, float)
        arr = arr[~np.isnan(arr)]
        out[k] = (float(np.percentile(arr, lo)), float(np.percentile(arr, hi))) if arr.size else None
    return out
