"""Correlation statistics against scipy and hand-computed cases."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from nteval.stats import bootstrap_ci, correlations, tau_ap

X = [0.31, 0.25, 0.40, 0.12, 0.28, 0.33]
Y = [0.52, 0.41, 0.60, 0.20, 0.50, 0.45]


def test_matches_scipy():
    c = correlations(X, Y)
    assert c["pearson"]["value"] == pytest.approx(stats.pearsonr(X, Y).statistic)
    assert c["spearman"]["value"] == pytest.approx(stats.spearmanr(X, Y).statistic)
    assert c["kendall"]["value"] == pytest.approx(stats.kendalltau(X, Y).statistic)
    assert c["kendall"]["p"] == pytest.approx(stats.kendalltau(X, Y).pvalue)


def test_tau_ap_hand_computed():
    truth = [4, 3, 2, 1]  # A > B > C > D
    # estimate A, C, B, D: C(2)=1/1, C(3)=1/2, C(4)=3/3 → 2/3·2.5 − 1 = 2/3 (= Kendall τ here)
    assert tau_ap([4, 2, 3, 1], truth) == pytest.approx(2 / 3)
    # estimate B, A, C, D (swap at the top): C(2)=0, C(3)=2/2, C(4)=3/3 → 2/3·2 − 1 = 1/3
    assert tau_ap([3, 4, 2, 1], truth) == pytest.approx(1 / 3)
    # a swap at the bottom costs less than the same swap at the top
    assert tau_ap([4, 3, 1, 2], truth) > tau_ap([3, 4, 2, 1], truth)
    assert tau_ap(truth, truth) == 1.0 and tau_ap([1, 2, 3, 4], truth) == -1.0


def test_undefined_cases():
    assert correlations([1, 1, 1], [1, 2, 3])["pearson"]["value"] is None
    assert correlations([1, 2], [2, 1])["kendall"]["value"] is None


def test_bootstrap_ci_contains_point_estimate_and_is_seeded():
    rng = np.random.default_rng(1)
    quality = np.linspace(0.2, 0.6, 8)
    xt = quality[:, None] + rng.normal(0, 0.15, (8, 300))
    yt = quality[:, None] * 0.8 + rng.normal(0, 0.15, (8, 120))
    ci = bootstrap_ci(xt, yt, n_boot=300, seed=3)
    point = correlations(list(xt.mean(1)), list(yt.mean(1)))
    for k in ("pearson", "spearman", "kendall"):
        lo, hi = ci[k]
        assert lo <= point[k]["value"] <= hi and -1 <= lo < hi <= 1
    assert bootstrap_ci(xt, yt, n_boot=300, seed=3) == ci


def test_tau_ap_ties_are_left_out():
    """Issue: tau_ap(x, x) gave 0.2 for x = [0.9667]*5 + [0.6] (Kendall τ-b gives 1.0)."""
    x = [0.9667] * 5 + [0.6]
    assert tau_ap(x, x) == 1.0
    assert stats.kendalltau(x, x).statistic == pytest.approx(1.0)
    # ties in the estimate only: the pairs it ties carry no order, the rest are concordant
    assert tau_ap([2, 2, 1], [3, 2, 1]) == 1.0
    # hand case with a tie in the truth: estimate A > B > C, truth A = B > C
    # item B: its one item above (A) is tied in the truth → not counted; item C: A and B above, both
    # above in the truth → 2/2. τ_AP = 2 · (1/1) − 1 = 1
    assert tau_ap([3, 2, 1], [2, 2, 1]) == 1.0
    # reversed with ties: every counted pair discordant
    assert tau_ap([1, 2, 3], [2, 2, 1]) == -1.0
    assert tau_ap([1, 1, 1], [1, 2, 3]) is None


def test_vectorised_kendall_equals_scipy():
    from nteval.stats import _kendall_b_rows

    rng = np.random.default_rng(5)
    for _ in range(100):
        a, b = rng.integers(0, 4, 9).astype(float), rng.integers(0, 4, 9).astype(float)
        want = stats.kendalltau(a, b).statistic
        got = _kendall_b_rows(a[None], b[None])[0]
        assert (np.isnan(want) and np.isnan(got)) or got == pytest.approx(want)


def test_bca_ci_says_its_method():
    rng = np.random.default_rng(2)
    q = np.linspace(0.2, 0.6, 10)
    ci = bootstrap_ci(q[:, None] + rng.normal(0, 0.2, (10, 200)), q[:, None] + rng.normal(0, 0.2, (10, 80)), n_boot=200)
    assert ci["method"]["name"].startswith("BCa") and set(ci["method"]["per_statistic"]) == {
        "pearson", "spearman", "kendall", "tau_ap"}


def test_the_replicates_spread_is_reported():
    """``method["spread"]``: where the replicates lie. Identical topics: every replicate is the
    estimate (ties count half). Noisy topics: resampling attenuates τ, so most replicates fall
    below the estimate, and their 95 % range reaches lower than the bias-corrected interval."""
    q = np.linspace(0.2, 0.6, 10)
    flat = bootstrap_ci(np.repeat(q[:, None], 30, axis=1), np.repeat(q[::-1, None], 20, axis=1), n_boot=200)
    assert flat["method"]["spread"]["kendall"] == {"percentile": (-1.0, -1.0), "share_below_estimate": 0.5}
    assert flat["kendall"] == (-1.0, -1.0)
    rng = np.random.default_rng(3)
    noisy = bootstrap_ci(q[:, None] + rng.normal(0, 0.5, (10, 30)), q[:, None] + rng.normal(0, 0.5, (10, 30)),
                         n_boot=500)
    sp = noisy["method"]["spread"]["kendall"]
    assert sp["share_below_estimate"] > 0.5
    assert sp["percentile"][0] < noisy["kendall"][0]


def test_a_rates_exact_interval_is_clopper_pearsons():
    """Hand cases (none of n: the upper end solves (1 - p)^n = 0.025; all of n: the lower end p^n =
    0.025) and the beta quantiles that define the interval, 3 of 293 (MED's held-out false passes)."""
    from nteval.stats import rate_interval, rate_text

    assert rate_interval(0, 338) == [0.0, pytest.approx(1 - 0.025 ** (1 / 338), abs=1e-4)]
    assert rate_interval(20, 20) == [pytest.approx(0.025 ** (1 / 20), abs=1e-4), 1.0]
    lo, hi = rate_interval(3, 293)
    assert lo == pytest.approx(stats.beta.ppf(0.025, 3, 291), abs=1e-4)
    assert hi == pytest.approx(stats.beta.ppf(0.975, 4, 290), abs=1e-4)
    assert hi > 0.01 > 3 / 293 - 0.0003   # (about 1 %, and not shown under it)
    assert rate_interval(0, 0) is None and rate_text(None, None) == "n/a"
    assert rate_text(3 / 293, [lo, hi]) == "1.0 % [0.2, 3.0]"
