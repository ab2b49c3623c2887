"""Agreement between two rankings of the same systems.

- :func:`correlations`: Pearson r (values), Spearman ρ and Kendall τ-b (rankings), each with its
  two-sided p-value (scipy.stats), and τ_AP (Yilmaz, Aslam & Robertson 2008), which weighs
  disagreements near the top more (no p-value).
- :func:`bootstrap_ci`: 95 % intervals from resampling **topics**, BCa (scipy.stats.bootstrap).

Ties are handled on purpose everywhere: Pearson needs none; Spearman uses average ranks; Kendall
is τ-b (tied pairs leave the numerator and shrink the denominator); τ_AP leaves out pairs tied in
either ranking (see :func:`tau_ap`), so a ranking compared with itself scores 1 even with ties.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

STATISTICS = ("pearson", "spearman", "kendall", "tau_ap")


def _tau_ap_rows(est: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """τ_AP for each row of ``est`` (batch × n) against the matching row of ``truth``."""
    est, truth = np.atleast_2d(est), np.atleast_2d(truth)
    above = est[:, None, :] > est[:, :, None]          # [b, i, j]: j strictly above i in the estimate
    t_above = truth[:, None, :] > truth[:, :, None]
    t_tied = truth[:, None, :] == truth[:, :, None]
    counted = above & ~t_tied
    n_i = counted.sum(axis=2)
    c_i = (above & t_above).sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(n_i > 0, c_i / np.maximum(n_i, 1), 0.0)
        m = (n_i > 0).sum(axis=1)
        return np.where(m > 0, 2.0 * ratio.sum(axis=1) / np.maximum(m, 1) - 1.0, np.nan)


def tau_ap(estimate: Sequence[float], truth: Sequence[float]) -> float | None:
    """τ_AP of the ranking induced by ``estimate`` against the one induced by ``truth``.

    For each item i, N(i) counts the items ``estimate`` puts strictly above it that ``truth``
    does not tie with it, and C(i) those of them ``truth`` also puts above it;
    τ_AP = 2 · mean_i C(i)/N(i) − 1 over the items with N(i) > 0. Without ties this is Yilmaz
    et al.'s 2/(n−1) Σ_{i≥2} C(i)/(i−1) − 1 exactly. Pairs tied in either ranking carry no order
    information and are left out (as τ-b leaves them out), so ``tau_ap(x, x) == 1`` whatever the
    ties. Asymmetric by design. None when undefined (n < 2, or every pair tied).
    """
    n = len(estimate)
    if n < 2 or len(truth) != n:
        return None
    v = float(_tau_ap_rows(np.asarray(estimate, float), np.asarray(truth, float))[0])
    return None if np.isnan(v) else v


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


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    den = np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (a * b).sum(axis=-1) / np.where(den > 0, den, 1), np.nan)


def _kendall_b_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall τ-b per row (= scipy.stats.kendalltau's default), vectorised over rows."""
    i, j = np.triu_indices(a.shape[-1], 1)
    sa = np.sign(a[..., i] - a[..., j])
    sb = np.sign(b[..., i] - b[..., j])
    den = np.sqrt((sa * sa).sum(axis=-1) * (sb * sb).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (sa * sb).sum(axis=-1) / np.where(den > 0, den, 1), np.nan)


def statistic_rows(mx: np.ndarray, my: np.ndarray) -> np.ndarray:
    """The :data:`STATISTICS` (rows of the result) for each row pair of system-score vectors."""
    from scipy.stats import rankdata

    mx, my = np.atleast_2d(mx), np.atleast_2d(my)
    return np.stack([_pearson_rows(mx, my), _pearson_rows(rankdata(mx, axis=-1), rankdata(my, axis=-1)),
                     _kendall_b_rows(mx, my), _tau_ap_rows(mx, my)])


def point_estimates(x_topics: np.ndarray, y_topics: np.ndarray) -> dict[str, float | None]:
    """The statistics of the per-system means of two systems × topics matrices."""
    vals = statistic_rows(np.asarray(x_topics, float).mean(axis=1), np.asarray(y_topics, float).mean(axis=1))[:, 0]
    return {k: (None if np.isnan(v) else float(v)) for k, v in zip(STATISTICS, vals)}


CI_METHOD = ("BCa bootstrap (scipy.stats.bootstrap), topics resampled with replacement, NT and human topics "
             "independently")


def bootstrap_ci(x_topics: np.ndarray, y_topics: np.ndarray, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95, batch: int = 100) -> dict[str, tuple[float, float] | None]:
    """Confidence intervals for each statistic of :data:`STATISTICS`; ``["method"]`` says how.

    ``x_topics``: systems × topics per-topic scores on one side (e.g. NT), ``y_topics`` the same
    systems × (other) topics on the other side (e.g. human). The two sides are different topic
    sets, so each is resampled on its own (a two-sample bootstrap); each replicate averages per
    system and recomputes the statistics.

    Why BCa and not the percentile interval used before: resampling topics adds noise to the
    per-system means, so a rank correlation's bootstrap distribution sits *below* its estimate
    (attenuation), and percentile intervals could exclude their own estimate (CISI: τ 0.878,
    CI [0.678, 0.871]). BCa corrects for that bias (z0) and for skew (acceleration from the
    jackknife), and is scipy's default. Where BCa is undefined — the estimate lies beyond every
    replicate, so z0 is infinite — the percentile interval is used; an interval that still misses
    its estimate is stretched to it. ``method["per_statistic"]`` says which happened, so every
    interval contains its estimate and says how it was made. ``method["spread"]`` gives, per
    statistic, the replicates' own percentile interval and the share of them below the estimate
    (ties count half): far from 1/2, the interval rests on a large bias correction.

    What the interval does not do: with few judged topics, the estimate itself is attenuated by
    topic noise, and no bootstrap of those topics recovers the agreement many topics would show
    (``scripts/ci_coverage.py`` measures how often it is covered; README, "How far the CIs hold").
    """
    from scipy.stats import bootstrap

    x_topics, y_topics = np.asarray(x_topics, float), np.asarray(y_topics, float)
    point = point_estimates(x_topics, y_topics)

    def stat(ix: np.ndarray, iy: np.ndarray, axis: int = -1) -> np.ndarray:
        mx = np.moveaxis(x_topics[:, ix.astype(np.intp)].mean(axis=-1), 0, -1)
        my = np.moveaxis(y_topics[:, iy.astype(np.intp)].mean(axis=-1), 0, -1)
        flat = statistic_rows(mx.reshape(-1, mx.shape[-1]), my.reshape(-1, my.shape[-1]))
        return flat.reshape((len(STATISTICS),) + mx.shape[:-1])

    data = (np.arange(x_topics.shape[1], dtype=float), np.arange(y_topics.shape[1], dtype=float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bootstrap(data, stat, n_resamples=n_boot, batch=batch, vectorized=True, method="BCa",
                        confidence_level=level, rng=np.random.default_rng(seed))
    dist = np.asarray(res.bootstrap_distribution)
    lo_q, hi_q = (1 - level) / 2 * 100, (1 + level) / 2 * 100
    out: dict = {}
    methods: dict[str, str] = {}
    spread: dict[str, dict[str, Any]] = {}
    for k, name in enumerate(STATISTICS):
        est = point[name]
        lo, hi = float(res.confidence_interval.low[k]), float(res.confidence_interval.high[k])
        arr = dist[k][~np.isnan(dist[k])]
        if est is None or arr.size == 0:
            out[name] = None
            continue
        # where the replicates lie: a share far from 1/2 means a large bias correction (see caveats)
        percentile = (float(np.percentile(arr, lo_q)), float(np.percentile(arr, hi_q)))
        spread[name] = {"percentile": percentile,
                        "share_below_estimate": float(((arr < est).sum() + 0.5 * (arr == est).sum()) / arr.size)}
        methods[name] = "BCa"
        if np.isnan(lo) or np.isnan(hi):
            lo, hi = percentile
            methods[name] = "percentile (BCa undefined here)"
        if not lo <= est <= hi:
            lo, hi = min(lo, est), max(hi, est)
            methods[name] += ", stretched to the estimate"
        out[name] = (lo, hi)
    out["method"] = {"name": CI_METHOD, "level": level, "replicates": n_boot, "per_statistic": methods,
                     "spread": spread}
    return out
