"""Correlations between two score vectors over the same systems (scipy.stats underneath)."""
from __future__ import annotations

from collections.abc import Sequence


def correlations(x: Sequence[float], y: Sequence[float]) -> dict[str, dict[str, float | None]]:
    """Pearson r, Spearman ρ and Kendall τ-b with two-sided p-values (None where undefined:
    fewer than 3 systems or a constant vector)."""
    from scipy import stats

    out: dict[str, dict[str, float | None]] = {}
    if len(x) != len(y):
        raise ValueError("score vectors differ in length")
    constant = len(set(x)) < 2 or len(set(y)) < 2
    for name, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr), ("kendall", stats.kendalltau)):
        if len(x) < 3 or constant:
            out[name] = {"value": None, "p": None}
            continue
        res = fn(list(x), list(y))
        stat = getattr(res, "statistic", None)
        if stat is None:
            stat = res[0]
        out[name] = {"value": float(stat), "p": float(res.pvalue)}
    return out
