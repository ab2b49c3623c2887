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
    (``scripts/ci_coverage.py`` measures how often it is covered; docs/correlate.md, "How far the intervals hold").
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


# -- the agreement many topics would show -------------------------------------------------------------

MANY_TOPICS_METHOD = (
    "empirical-Bayes estimate of the Kendall tau many judged topics would show: for every pair of systems, the "
    "human paired t statistic of their per-topic difference, oriented by the NT ranking's order of the pair; a "
    "nonparametric prior of the oriented effect sizes fitted to all pairs (EM on a grid, Kiefer-Wolfowitz), each "
    "pair's posterior probability that its human order agrees with NT's{target}; tau = the mean over the pairs of "
    "2p - 1 (pairs NT ties are left out, as tau-b leaves ties out). 95 % interval: the percentiles of {replicates} "
    "bootstrap replicates (topics resampled on both sides), moved to centre on the estimate")

#: δ (a pair's true mean difference in per-topic standard deviations): the grid of the prior.
_GRID = np.linspace(-3.0, 3.0, 61)


def _oriented_t(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, int]:
    """Per pair of systems: the human paired t statistic oriented by NT's order of the pair (0 where NT
    ties the pair or the two systems score the same on every human topic), and how many pairs count."""
    i, j = np.triu_indices(x.shape[0], 1)
    xm = x.mean(axis=1)
    sx = np.sign(xm[i] - xm[j])
    d = y[i] - y[j]
    n = y.shape[1]
    m, sd = d.mean(axis=1), d.std(axis=1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(sd > 0, m / sd * np.sqrt(n), np.sign(m) * 10 * np.sqrt(n))  # constant non-zero difference: sure
    keep = (sx != 0) & ~((sd == 0) & (m == 0))
    return np.where(keep, t * sx, np.nan), int(keep.sum())


def _eb_fit(u: np.ndarray, n: int, weights: np.ndarray | None, iters: int) -> tuple[np.ndarray, np.ndarray]:
    """(prior weights on :data:`_GRID`, per-pair posterior) of the oriented t statistics ``u``
    (NaN: left out), the t's spread taken as Student's with n - 1 degrees of freedom (variance
    (n - 1)/(n - 3), normal shape). Likelihoods are scaled per pair in log space (a pair whose t
    lies far beyond the grid still gets the nearest grid points, not an underflow to nothing)."""
    u = u[~np.isnan(u)]
    var = (n - 1) / (n - 3) if n > 3 else 1.0
    loglik = -0.5 * (u[:, None] - _GRID[None, :] * np.sqrt(n)) ** 2 / var
    lik = np.exp(loglik - loglik.max(axis=1, keepdims=True))
    w = np.full(_GRID.size, 1 / _GRID.size) if weights is None else weights.copy()
    m = max(lik.shape[0], 1)
    for _ in range(iters):  # w ← the mean over pairs of each pair's posterior (lik·w, normalized), as two products
        w = w * (lik.T @ (1.0 / (lik @ w + 1e-300))) / m
    post = lik * w
    post /= post.sum(axis=1, keepdims=True) + 1e-300
    return w, post


def _eb_tau(u: np.ndarray, n: int, target: float, weights: np.ndarray | None = None,
            iters: int = 200) -> tuple[float, np.ndarray]:
    """The expected Kendall tau with ``target`` human topics (inf: the true human ranking), given
    the oriented t statistics of the pairs; and the fitted prior (to warm-start a replicate)."""
    from scipy.special import ndtr  # (the standard normal cdf, without scipy.stats' argument handling)

    w, post = _eb_fit(u, n, weights, iters)
    keep = u[~np.isnan(u)]
    if np.isfinite(target) and target > n:
        k = target - n  # the topics still to come: P(the mean difference over all `target` topics > 0)
        p = (post * ndtr((np.sqrt(n) * keep[:, None] + k * _GRID[None, :]) / np.sqrt(k))).sum(axis=1)
    elif np.isfinite(target):
        p = (keep > 0) + 0.5 * (keep == 0)
    else:
        p = (post * (_GRID > 0)).sum(axis=1) + 0.5 * (post * (_GRID == 0)).sum(axis=1)
    return float((2 * p - 1).mean()) if keep.size else float("nan"), w


def many_topic_tau(x_topics: np.ndarray, y_topics: np.ndarray, n_boot: int = 400, seed: int = 0,
                   level: float = 0.95, target: float = float("inf")) -> dict[str, Any] | None:
    """The Kendall tau between the NT and the human ranking that ``target`` judged human topics
    would show, with its interval (:data:`MANY_TOPICS_METHOD`). ``x_topics``: NT, systems ×
    topics; ``y_topics``: human. ``nteval correlate`` asks for as many human topics as NT topics
    (two rankings from as many topics each). ``target`` infinite is the agreement with the true
    human ranking; with few systems or few judged topics the data can hardly tell it (a prior
    that puts every pair's effect a little above 0 fits them as well as a mix of signs), so the
    reports use a finite target, whose coverage scripts/ci_coverage.py measures.

    Why: tau from few judged topics is attenuated — noise in the human means scrambles close
    systems — so more topics give a higher tau, and an interval around the observed tau (BCa or
    not) misses the many-topic agreement, mostly below it (22-98 % coverage at 30-100 judged topics,
    ``scripts/ci_coverage.py``). Here each pair's human order is judged with the uncertainty of
    its own paired difference, shrunk by what all the pairs say together. The NT ranking, from many
    more topics, is taken as measured (its split-half reliability is in the report)."""
    x, y = np.asarray(x_topics, float), np.asarray(y_topics, float)
    nx, ny = x.shape[1], y.shape[1]
    if x.shape[0] < 3 or ny < 5 or nx < 2:
        return None
    u, pairs = _oriented_t(x, y)
    if pairs == 0:
        return None
    est, w = _eb_tau(u, ny, target)
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(n_boot):
        ub, _ = _oriented_t(x[:, rng.integers(0, nx, nx)], y[:, rng.integers(0, ny, ny)])
        if np.isnan(ub).all():
            continue
        reps.append(_eb_tau(ub, ny, target, w, iters=25)[0])
    r = np.asarray(reps)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return None
    lo_q, mid, hi_q = np.percentile(r, [(1 - level) / 2 * 100, 50, (1 + level) / 2 * 100])
    lo, hi = max(-1.0, est - (mid - lo_q)), min(1.0, est + (hi_q - mid))
    observed = point_estimates(x, y)["kendall"]
    where = "with infinitely many judged topics" if not np.isfinite(target) else f"with {int(target):,} judged topics"
    return {"value": est, "ci95": (min(lo, est), max(hi, est)), "observed": observed, "pairs": pairs,
            "target_topics": None if not np.isfinite(target) else int(target), "human_topics": ny,
            "method": MANY_TOPICS_METHOD.format(
                target=" " + where if np.isfinite(target) else " in the true human ranking",
                replicates=int(r.size))}


def pair_posteriors(x_topics: np.ndarray, y_topics: np.ndarray) -> dict[str, Any] | None:
    """Each pair of systems' posterior over δ, its true human mean difference in per-topic
    standard deviations, oriented by the NT order of the pair (δ > 0: humans agree with NT), from
    the empirical-Bayes prior :func:`many_topic_tau` fits to all pairs. ``pairs``: (i, j) row
    indices of ``x_topics``/``y_topics`` (i < j); ``orientation``: the NT sign of mean(i) − mean(j)
    (0: NT ties them); ``posterior``: pairs × :data:`_GRID` (NaN rows where NT ties the pair or the
    humans score the two alike on every topic); ``grid``: δ. None when there is nothing to fit."""
    x, y = np.asarray(x_topics, float), np.asarray(y_topics, float)
    if x.shape[0] < 2 or y.shape[1] < 5:
        return None
    u, counted = _oriented_t(x, y)
    if counted == 0:
        return None
    _, post = _eb_fit(u, y.shape[1], None, 200)
    full = np.full((u.size, _GRID.size), np.nan)
    full[~np.isnan(u)] = post
    i, j = np.triu_indices(x.shape[0], 1)
    return {"pairs": list(zip(i.tolist(), j.tolist())), "orientation": np.sign(x[i].mean(axis=1) - x[j].mean(axis=1)),
            "posterior": full, "grid": _GRID.copy(), "human_topics": y.shape[1]}


def rate_interval(k: int, n: int) -> list[float] | None:
    """The exact (Clopper–Pearson) 95 % interval of a rate of k in n, the pairs taken as independent:
    they share systems and topics, so this is the least the rate is uncertain by (with 3 of 293 it
    reaches 3.0 %: a rate near 1 % over a few hundred losses cannot be shown under 1 %)."""
    from scipy.stats import binomtest

    if n == 0:
        return None
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return [round(float(ci.low), 4), round(float(ci.high), 4)]


def rate_text(rate: float | None, ci: list[float] | None) -> str:
    """A rate in percent with its interval, for a person: ``1.0 % [0.2, 3.0]``."""
    if rate is None:
        return "n/a"
    return f"{rate * 100:.1f} %" + (f" [{ci[0] * 100:.1f}, {ci[1] * 100:.1f}]" if ci else "")
