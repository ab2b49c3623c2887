"""Fidelity where decisions are made: the decision-level figures against a hand computation."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from nteval.correlate.decisions import Decisions, _holm_rows, compare_decisions, likely_separated, significance, top_k_tau
from nteval.significance import compare_systems, holm


def _sig(means: dict[str, float], separated: set[tuple[str, str]], groups: list[list[str]]) -> dict:
    names = list(means)
    pairs = [{"a": a, "b": b, "diff": means[a] - means[b], "significant": (a, b) in separated or (b, a) in separated}
             for i, a in enumerate(names) for b in names[i + 1:]]
    return {"pairs": pairs, "groups": groups, "correction": "Holm (family-wise error rate)", "alpha": 0.05}


def test_decision_figures_by_hand():
    names = ["a", "b", "c", "d", "e"]
    # NT means a > b > c > d > e; human means b > a > c > e > d
    nt_m = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6, "e": 0.5}
    hu_m = {"a": 0.5, "b": 0.6, "c": 0.4, "d": 0.1, "e": 0.2}
    nt = Decisions(np.array([[nt_m[n]] * 8 for n in names]),
                   _sig(nt_m, {("a", "b"), ("a", "c"), ("a", "d"), ("a", "e"), ("b", "d"), ("d", "e")},
                        [["a"], ["b", "c"], ["c", "d"], ["e"]]))
    hu = Decisions(np.array([[hu_m[n]] * 6 for n in names]),
                   _sig(hu_m, {("a", "b"), ("a", "d"), ("b", "d"), ("b", "e"), ("c", "d")}, [["b", "a"], ["c"], ["e", "d"]]))
    d = compare_decisions(names, nt, hu)
    # humans separate 5 pairs: a-b (b wins), a-d (a), b-d (b), b-e (b), c-d (c)
    # NT: a-b (a wins: reversed), a-d (a: same), b-d (b: same), b-e (not separated: missed), c-d (missed)
    assert d["human_separated"] == 5 and d["separated"] == 6
    assert d["same_direction"] == 2 and d["share_same_direction"] == 0.4
    assert d["reversed"] == [{"judgment_free_prefers": "a", "humans_prefer": "b"}]
    assert d["missed"] == 2
    # NT only: a-c, a-e, d-e (d wins for NT; humans have e above d but do not separate them)
    assert d["only_judgment_free"]["count"] == 3
    # top-5 tau: all five systems; by hand, the concordant pairs of (NT, human) orders
    x, y = [nt_m[n] for n in names], [hu_m[n] for n in names]
    concordant = sum(np.sign(x[i] - x[j]) == np.sign(y[i] - y[j]) for i in range(5) for j in range(i + 1, 5))
    assert d["top_k_tau"]["5"] == pytest.approx((2 * concordant - 10) / 10) == pytest.approx(kendalltau(x, y)[0])
    assert concordant == 8 and d["top_k_tau"]["10"] is None
    # the human best (b) is not in NT's best group ({a})
    assert d["human_best"] == ["b"] and d["best_group"] == ["a"] and d["human_best_in_best_group"] is False
    nt2 = Decisions(nt.scores, {**nt.significance, "groups": [["a", "b"], ["c"]]})
    assert compare_decisions(names, nt2, hu)["human_best_in_best_group"] is True


def test_top_k_tau_takes_the_humans_best_k():
    names = ["s1", "s2", "s3", "s4", "s5", "s6"]
    human = np.array([0.1, 0.9, 0.8, 0.7, 0.6, 0.5])     # best five: s2..s6
    judged = np.array([0.99, 0.5, 0.6, 0.7, 0.8, 0.9])   # reverses them exactly; s1 left out
    assert top_k_tau(names, judged, human, 5) == pytest.approx(-1.0)
    assert top_k_tau(names, judged, human, 6) == pytest.approx(kendalltau(judged, human)[0])


def test_significance_of_a_matrix_is_the_verdicts_test():
    rng = np.random.default_rng(3)
    m = rng.random((4, 40)) + np.array([[0.3], [0.25], [0.0], [0.0]])
    names = ["w", "x", "y", "z"]
    a = significance(names, m, seed=7)
    b = compare_systems({n: {f"q{i:03d}": float(v) for i, v in enumerate(row)} for n, row in zip(names, m)}, "",
                        seed=7)
    assert [p["p_adjusted"] for p in a["pairs"]] == [p["p_adjusted"] for p in b["pairs"]] and a["groups"] == b["groups"]


def test_holm_rows_is_holm_per_row():
    p = np.random.default_rng(0).random((6, 9)) ** 3
    assert np.allclose(_holm_rows(p), np.stack([holm(r) for r in p]))


def test_likely_separated_follows_the_human_effect_sizes():
    """The estimate grows with the pair's human paired t statistic (oriented by NT's order): a pair
    humans clearly order as NT does is (almost) always separated with 200 judged topics, in NT's
    direction; a pair the humans order the other way (t < 0) much less often in NT's direction."""
    from nteval.stats import _oriented_t

    rng = np.random.default_rng(5)
    names = [f"s{i}" for i in range(6)]
    true = np.array([0.60, 0.50, 0.40, 0.30, 0.30, 0.30])
    human = true[:, None] + rng.normal(0, 0.3, (6, 30))
    nt_scores = true[:, None] + rng.normal(0, 0.05, (6, 200))
    hu = Decisions(human, significance(names, human))
    nt = Decisions(nt_scores, significance(names, nt_scores))
    u, _ = _oriented_t(nt_scores, human)
    i, j = np.triu_indices(6, 1)
    pair = lambda k: frozenset((names[i[k]], names[j[k]]))  # noqa: E731
    hi, lo = int(np.nanargmax(u)), int(np.nanargmin(u))
    assert u[hi] > 3 and u[lo] < 0
    lh = likely_separated(names, nt, hu, [pair(hi)], draws=400)
    ll = likely_separated(names, nt, hu, [pair(lo)], draws=400)
    assert lh["topics"] == 200 and lh["same_direction"]["mean"] > 0.9 and lh["other_direction"]["mean"] < 0.05
    assert ll["same_direction"]["mean"] < lh["same_direction"]["mean"] - 0.2
    every = likely_separated(names, nt, hu, [pair(k) for k in range(15)], draws=400)
    assert every["pairs"] == 15 and every["same_direction"]["mean"] + every["other_direction"]["mean"] <= 15
    assert likely_separated(names, nt, hu, []) is None


def test_attenuation_is_said_only_where_the_many_topic_estimate_is_above_the_observed_tau():
    """Issue 39: "attenuated by the noise of few judged topics" was printed where the many-topic
    estimate (0.740) was below the observed τ (0.754)."""
    from nteval.report.agreement import attenuation

    assert attenuation({"value": 0.80, "ci95": [0.7, 0.9]}, 0.754) == ("the observed τ is attenuated by the noise of few "
                                                                        "judged topics")
    below = attenuation({"value": 0.740, "ci95": [0.6, 0.85]}, 0.754)
    assert "attenuated by" not in below and below.startswith("it is below the observed τ 0.754, so nothing here says")
    assert "within the estimate's 95 % interval" in below
    assert "within" not in attenuation({"value": 0.5, "ci95": [0.4, 0.6]}, 0.754)
