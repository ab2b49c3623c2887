"""The gate's statistics: the betting bounds, the four decisions on hand cases, Bonferroni, the
topics-to-decide estimate, churn, and the error rates measured on real PubMed per-topic scores."""
from __future__ import annotations

import gzip
import math
from collections import defaultdict

import numpy as np
import pytest
from conftest import DATA

from nteval.effects import MMD
from nteval.gate.changes import churn, overlap_at, rank_of, rbo_ext
from nteval.gate.decide import DecisionRule, betting_lower, bounds, decide, topic_order
from nteval.gate.simulate import equal_population, error_rates, margin_population

QIDS = [f"q{i}" for i in range(400)]


def test_betting_bound_covers_the_mean_at_its_level():
    """Coverage on a skewed 0/1 population (the shape of RR differences): the lower bound is above
    the true mean at most alpha of the time (binomial, 600 draws of 60 values)."""
    rng = np.random.default_rng(3)
    p, alpha, misses, reps = 0.08, 0.1, 0, 600
    for _ in range(reps):
        x = (rng.random(60) < p).astype(float)
        misses += betting_lower(x, 0.0, 1.0, alpha) > p
    assert misses / reps <= alpha  # (it is far below: betting bounds are conservative)


def test_betting_bound_is_tight_enough_at_many_topics():
    """At 2,000 values the bound is within 2x the normal approximation's distance from the mean,
    and it never exceeds the mean."""
    x = np.random.default_rng(0).beta(2, 5, 2000)
    lo = betting_lower(x, 0.0, 1.0, 0.05)
    normal = 1.645 * x.std(ddof=1) / math.sqrt(x.size)
    assert x.mean() - 2 * normal < lo < x.mean() - normal


def test_constant_scores_close_in_on_their_value():
    """Scores that never vary still leave some doubt at 50 topics (the bound holds for any
    distribution), and almost none at 5,000."""
    few, many = bounds(np.full(50, 0.25), -1.0, 1.0, 0.05), bounds(np.full(5000, 0.25), -1.0, 1.0, 0.05)
    assert few.lower < 0.25 < few.upper
    assert 0.24 < many.lower <= 0.25 <= many.upper < 0.26 and many.upper - many.lower < few.upper - few.lower


def test_bounds_do_not_depend_on_how_topics_are_listed():
    rng = np.random.default_rng(1)
    b, c = rng.random(300), rng.random(300)
    qids = [f"t{i}" for i in range(300)]
    one = decide(b, c, qids)
    perm = rng.permutation(300)
    two = decide(b[perm], c[perm], [qids[i] for i in perm])
    assert one == two


def _pair(diff_topics: int, loss: float, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """A baseline at RR 1 everywhere; a candidate that loses ``loss`` on ``diff_topics`` topics."""
    b = np.ones(n)
    c = b.copy()
    c[:diff_topics] -= loss
    return b, c


@pytest.mark.parametrize("topics, loss, expected", [
    (0, 0.0, "non-inferior"),        # identical: no loss (and not better)
    (8, 0.5, "non-inferior"),        # loses 0.01 on average: within the 5 % margin, shown
    (60, 0.5, "worse"),              # loses 0.075: beyond the margin, shown
])
def test_decisions_on_hand_cases(topics, loss, expected):
    b, c = _pair(topics, loss)
    assert decide(b, c, QIDS)["decision"] == expected


def test_better_and_inconclusive_hand_cases():
    rng = np.random.default_rng(5)
    b = rng.uniform(0.2, 0.6, 400)
    assert decide(b, np.clip(b + 0.1, 0, 1), QIDS)["decision"] == "better"
    # a noisy loss of about the margin on few topics: neither shown within it nor shown worse
    b2 = rng.uniform(0.0, 1.0, 40)
    c2 = np.clip(b2 + rng.normal(-0.03, 0.3, 40), 0, 1)
    d = decide(b2, c2, QIDS[:40])
    assert d["decision"] == "inconclusive"
    more = d["more_topics"]
    assert more["topics"] > 40 and more["toward"] in ("non-inferior", "worse")


def test_decisions_partition_and_agree_with_their_bounds():
    """Every decision follows from its bounds as the module's table says."""
    rng = np.random.default_rng(11)
    for _ in range(40):
        n = int(rng.integers(20, 300))
        b = rng.random(n)
        c = np.clip(b + rng.normal(rng.uniform(-0.1, 0.1), rng.uniform(0.01, 0.3), n), 0, 1)
        d = decide(b, c, QIDS[:n])
        lo, hi, ni = d["ci"][0], d["worse_upper"], d["noninferiority_lower"]
        expected = ("better" if lo > 0 else "non-inferior" if ni > 0 else "worse" if hi < 0 else "inconclusive")
        assert d["decision"] == expected
        assert d["ci"][0] <= d["diff"] <= d["ci"][1]


def test_bonferroni_widens_the_bounds():
    rng = np.random.default_rng(2)
    b = rng.random(300)
    c = np.clip(b + rng.normal(0, 0.1, 300), 0, 1)
    one, three = decide(b, c, QIDS[:300]), decide(b, c, QIDS[:300], looks=3)
    assert three["alpha_pass"] == pytest.approx(0.05 / 3)
    assert three["ci"][0] < one["ci"][0] and three["ci"][1] > one["ci"][1]
    worse_twice = decide(b, c, QIDS[:300], looks=1, worse_looks=2)
    assert worse_twice["worse_upper"] > one["worse_upper"] and worse_twice["ci"] == one["ci"]


def test_absolute_margin_and_rule_checks():
    b, c = _pair(4, 0.5)  # loses 0.005 on average
    d = decide(b, c, QIDS, DecisionRule.of("0.03"))
    assert d["margin"] == 0.03 and d["decision"] == "non-inferior"
    b, c = _pair(40, 0.5)  # loses 0.05
    assert decide(b, c, QIDS, DecisionRule.of("0.001"))["decision"] == "worse"
    from nteval.errors import InputError

    with pytest.raises(InputError, match="--alpha"):
        DecisionRule.of("5%", 0.7)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        decide(np.array([1.5, 0.2]), np.array([0.1, 0.2]), ["a", "b"])


def test_topic_order_is_the_sha256_of_the_ids():
    import hashlib

    qids = ["b", "a", "c"]
    order = topic_order(qids)
    keys = [hashlib.sha256(qids[i].encode()).digest() for i in order]
    assert keys == sorted(keys)


# -- churn -------------------------------------------------------------------------------------


def test_rbo_hand_case():
    """Webber et al. (2010) eq. 32 at depth 3 for [a, b, c] vs [b, a, c]: X = 0, 2, 3, so
    RBO = 3/3 · 0.9³ + (0.1/0.9) · (0 + 2/2 · 0.9² + 3/3 · 0.9³) = 0.9 exactly."""
    assert rbo_ext(["a", "b", "c"], ["b", "a", "c"]) == pytest.approx(0.9)
    assert rbo_ext(list("abcdef"), list("abcdef")) == pytest.approx(1.0)
    assert rbo_ext(list("abc"), list("xyz")) == 0.0


def test_overlap_rank_and_churn():
    a = [(f"d{i}", 1.0 - i / 100) for i in range(20)]
    b = [(f"d{i}", 1.0 - i / 100) for i in (1, 0, *range(2, 8), 50, 51)]
    assert overlap_at([d for d, _ in a], [d for d, _ in b]) == 0.8
    assert rank_of({"q": b}, "q", "d0") == 2 and rank_of({"q": b}, "q", "d99") is None
    c = churn({"q": a}, {"q": a}, ["q"])
    assert c["rbo"] == pytest.approx(1.0) and c["overlap@10"] == 1.0 and c["identical_top10"] == 1
    # identical rankings shorter than 10 (none at all too) overlap fully; a short one inside a long one does not
    short = [("x", 2.0), ("y", 1.0), ("z", 0.5)]
    c = churn({"e": [], "s": short}, {"e": [], "s": short}, ["e", "s"])
    assert c["rbo"] == 1.0 and c["overlap@10"] == 1.0 and c["identical_top10"] == 2
    assert overlap_at(["x", "y", "z"], [d for d, _ in a]) == 0.0 and overlap_at(["d0"], ["d0", "d1"]) == 0.5


# -- error rates on real per-topic scores ---------------------------------------------------------


def _real() -> dict[str, dict[str, np.ndarray]]:
    per: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    with gzip.open(DATA / "gate" / "per_topic_pubmed_ref2.tsv.gz", "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            proto, system, qid, _m, value = line.rstrip("\n").split("\t")
            per[proto][system][qid] = float(value)
    out = {}
    for proto, systems in per.items():
        qids = sorted(next(iter(systems.values())))
        out[proto] = {s: np.array([v[q] for q in qids]) for s, v in systems.items()}
    return out


def test_false_pass_at_the_margin_on_real_scores_is_at_most_alpha():
    """A candidate truly losing exactly the margin (real RR scores of PubMed runs mixed to it) is
    passed at most alpha of the time; the equal candidate is not called worse."""
    real = _real()["focused"]
    r = 0.05
    pop = margin_population("RR", real["bm25_k1.2_b0.75"], real["bm25_rm3"], real["qld_mu100"], r)
    assert pop is not None and abs(pop.true_shifted_mean(r)) < 1e-12
    cell = error_rates(pop, 200, 150, DecisionRule.of("5%", 0.05), seed=1)
    assert cell["rate"] <= 0.05, cell
    eq = equal_population("RR", real["bm25_k1.2_b0.75"], real["qld_mu100"])
    assert eq.true_diff() == pytest.approx(0.0, abs=1e-12)
    cell = error_rates(eq, 200, 100, DecisionRule.of("5%", 0.05), seed=2)
    assert cell["rate"] <= 0.05 and cell["decisions"]["worse"] == cell["rate"]


def test_mmd_margin_is_of_the_baseline():
    d = decide(np.full(10, 0.8), np.full(10, 0.8), QIDS[:10], DecisionRule(MMD(0.05, True), 0.05))
    assert d["margin"] == pytest.approx(0.04) and "baseline's" in d["margin_rule"]


def test_the_headline_says_only_what_the_bounds_show_of_the_size():
    """"better, by at least the margin" only when the interval's lower end clears the margin; "by less
    than the margin" only when its upper end stays under it; otherwise the interval is said."""
    from nteval.gate.report import candidate_clause

    def clause(lo: float, hi: float, margin: float = 0.0438) -> str:
        d = {"decision": "better", "ci": [lo, hi], "margin": margin, "candidate_mean": 0.92, "baseline_mean": 0.876,
             "diff": (lo + hi) / 2, "ci_level": 0.9, "margin_rule": "5 % of the baseline's score", "topics": 1000}
        res = {"candidates": {"v4": {"decision": "better", "decided": "on the pinned topics", "pinned": d}},
               "labels": {}, "baseline": "v1", "measure": "RR", "task": "known-item"}
        return candidate_clause(res, "v4")

    assert "by at least the margin" in clause(0.05, 0.09)
    assert "by less than the margin" in clause(0.01, 0.03)
    said = clause(0.0289, 0.0644)  # the new user's v4: +0.0447, the margin inside the interval
    assert "at least the margin" not in said and "less than the margin" not in said
    assert "(by the margin or not: the interval, +0.0289 to +0.0644, holds it)" in said
