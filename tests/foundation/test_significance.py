"""Paired randomization tests, corrections and groups: against scipy and hand cases; on a real run."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from nteval.significance import adjust, compare_systems, groups, holm, indistinguishable_from_best, paired_randomization


def _scipy_p(a, b, n_resamples, rng=None):
    return stats.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                                  vectorized=True, n_resamples=n_resamples, rng=rng).pvalue


@pytest.mark.parametrize("n", [5, 9, 12])
def test_exact_test_equals_scipy(n):
    rng = np.random.default_rng(n)
    a = rng.random(n)
    b = a + rng.normal(0.1, 0.2, n)
    assert paired_randomization((a - b)[None], n_resamples=10_000)[0] == pytest.approx(_scipy_p(a, b, 10_000), abs=1e-12)


def test_hand_case():
    # differences +1, +1, +1: of the 8 sign flips, only (+,+,+) reaches mean 1 and only (−,−,−) reaches −1
    # → one-sided p 1/8, two-sided 2 · 1/8 = 0.25 (scipy's convention)
    assert paired_randomization(np.array([[1.0, 1.0, 1.0]]))[0] == pytest.approx(0.25)
    # identical systems (ties everywhere): p = 1
    assert paired_randomization(np.zeros((1, 40)))[0] == 1.0


def test_random_test_agrees_with_scipy_within_monte_carlo_error():
    rng = np.random.default_rng(7)
    a = rng.random(300)
    b = a + rng.normal(0.03, 0.25, 300)
    ours = paired_randomization((a - b)[None], n_resamples=20_000, seed=1)[0]
    ref = _scipy_p(a, b, 20_000, rng=np.random.default_rng(2))
    se = np.sqrt(ref * (1 - ref) / 20_000) * 2
    assert abs(ours - ref) < 4 * se + 1e-3


def test_holm_and_bh():
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm by hand: sorted 0.005·4, 0.01·3, 0.03·2, 0.04·1 → 0.02, 0.03, 0.06, max(0.06, 0.04)
    assert list(holm(p)) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert list(adjust(p, "bh")) == pytest.approx(list(stats.false_discovery_control(p, method="bh")))
    with pytest.raises(ValueError):
        adjust(p, "bonferroni")


def test_groups_hand_case():
    names = ["a", "b", "c", "d"]
    means = [0.9, 0.8, 0.7, 0.1]
    diff = {frozenset(p): False for p in [("a", "b"), ("b", "c")]}
    diff |= {frozenset(p): True for p in [("a", "c"), ("a", "d"), ("b", "d"), ("c", "d")]}
    # a~b, b~c, but a≠c: overlapping groups {a, b}, {b, c}; d alone
    assert groups(names, means, diff) == [["a", "b"], ["b", "c"], ["d"]]


def test_compare_systems_on_a_real_focused_run(first200_index, tmp_path):
    from nteval.experiment import run_focused

    res = run_focused(first200_index, tmp_path / "f", n_topics=100, seed=3, systems="default", progress=False,
                      min_topics=20)
    v = res["verdict"]
    assert v["measure"] == "RR" and set(v["scores"]) == set(res["systems"])
    sig = v["significance"]
    assert sig["correction"].startswith("Holm") and len(sig["pairs"]) == 15
    # the one-word disjunction is told apart from the best system, and sits in the last group
    best = next(iter(v["scores"]))
    assert any(p["significant"] for p in sig["pairs"] if {p["a"], p["b"]} == {best, "disjunctive_1"})
    assert v["groups"][-1] == ["disjunctive_1"]
    # every system is in some group; significance.tsv has every pair
    assert {s for g in v["groups"] for s in g} == set(res["systems"])
    assert len((tmp_path / "f" / "significance.tsv").read_text().splitlines()) == 16
    # the same seed gives the same verdict
    again = run_focused(first200_index, tmp_path / "f", n_topics=100, seed=3, systems="default", progress=False,
                        min_topics=20)
    assert again["verdict"] == v
    # vs the best only
    per = {s: {q: 1.0 if i % 2 else 0.5 for i, q in enumerate("abcdefghij")} for s in ("x", "y")}
    per["z"] = {q: 0.0 for q in "abcdefghij"}
    ib = indistinguishable_from_best(per)
    assert ib["best"] == "x" and ib["indistinguishable"] == ["x", "y"]


def test_many_systems_can_still_be_told_apart():
    """With 24 systems (276 pairs) a fixed 10,000 resamples cannot give any p below Holm's bar
    (276 · 2/10,001 > 0.05): every system fell into one group. Resamples now scale with the pairs."""
    from nteval.significance import resamples_for

    rng = np.random.default_rng(0)
    per = {f"s{i:02d}": {f"q{j}": float(0.02 * i + rng.normal(0, 0.1)) for j in range(300)} for i in range(24)}
    res = compare_systems(per, "AP")
    assert resamples_for(276) == 110_400 and "110,400 random sign flips (20 × 276 pairs / alpha" in res["test"]
    assert sum(p["significant"] for p in res["pairs"]) > 200 and len(res["groups"]) > 5
    assert res["groups"][0][0] == "s23" and res["groups"][-1][-1] == "s00"
