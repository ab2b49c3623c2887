"""The agreement many judged topics would show (correlate's many-topic τ, empirical Bayes) and the
coverage study behind it (scripts/ci_coverage.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from nteval.stats import bootstrap_ci, many_topic_tau, point_estimates

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import ci_coverage  # noqa: E402


def _draw(rng, means, n, noise=0.3):
    s = len(means)
    return means[:, None] + rng.normal(0, noise, (1, n)) + rng.normal(0, noise, (s, n))


def test_no_future_topics_gives_back_the_observed_tau():
    """target = the judged topics themselves: every pair's human order is its observed one."""
    rng = np.random.default_rng(0)
    means = np.sort(rng.normal(0.5, 0.1, 12))
    x, y = _draw(rng, means, 500), _draw(rng, means + rng.normal(0, 0.05, 12), 40)
    r = many_topic_tau(x, y, n_boot=50, seed=0, target=40)
    assert r["value"] == pytest.approx(point_estimates(x, y)["kendall"], abs=1e-9)
    assert r["ci95"][0] <= r["value"] <= r["ci95"][1] and r["pairs"] == 66


def test_clear_human_differences_give_tau_one():
    rng = np.random.default_rng(1)
    means = np.linspace(0.1, 0.9, 8)
    x, y = _draw(rng, means, 300, 0.05), _draw(rng, means, 30, 0.05)
    r = many_topic_tau(x, y, n_boot=50, seed=0, target=300)
    assert r["observed"] == 1.0 and r["value"] == pytest.approx(1.0, abs=1e-3)


def test_it_corrects_the_attenuation_the_observed_tau_suffers():
    """Simulated systems whose true NT and human rankings agree at a known tau: from 30 judged
    topics the observed tau falls short of the tau 300 topics give, the estimate does not, and its
    interval holds the 300-topic tau more often than the BCa interval of the observed tau."""
    rng = np.random.default_rng(4)
    truth_nt = np.sort(rng.normal(0.5, 0.05, 20))
    truth_h = truth_nt + rng.normal(0, 0.025, 20)
    x, y_all = _draw(rng, truth_nt, 1000), _draw(rng, truth_h, 300)
    truth = point_estimates(x, y_all)["kendall"]
    held_eb = held_bca = 0
    obs, est = [], []
    for d in range(20):
        y = y_all[:, rng.choice(300, 30, replace=False)]
        r = many_topic_tau(x, y, n_boot=100, seed=d, target=300)
        b = bootstrap_ci(x, y, n_boot=200, seed=d)["kendall"]
        held_eb += r["ci95"][0] <= truth <= r["ci95"][1]
        held_bca += b[0] <= truth <= b[1]
        obs.append(r["observed"])
        est.append(r["value"])
    assert np.mean(obs) < truth - 0.1 and abs(np.mean(est) - truth) < abs(np.mean(obs) - truth) / 2  # 0.60 vs 0.82
    assert held_eb >= 16 and held_eb > held_bca


def test_coverage_script_on_a_real_correlate_run(correlated):
    """The study's machinery on the bundled SciFact slice (6 systems, 30 claims; its figures are noise,
    but the script must run and count right)."""
    r, out = correlated
    assert r.exit_code == 0, r.output
    systems, x, y = ci_coverage.matrices(out, "focused", "RR")
    assert x.shape[0] == y.shape[0] == len(systems) and y.shape[1] == 30
    res = ci_coverage.coverage(x, y, 20, draws=3, n_boot=40)
    assert res["truth"] == point_estimates(x, y)["kendall"] and res["human_topics"] == 20
    for c in res["intervals"].values():
        assert c["n"] == 3 and 0 <= c["holds"] <= 1 and c["holds"] + c["truth_above"] + c["truth_below"] == pytest.approx(1)
    import json

    rep = json.loads((out / "report.json").read_text())
    mt = rep["pairs"][0]["many_topics"]
    assert mt["target_topics"] == 40 and mt["ci95"][0] <= mt["value"] <= mt["ci95"][1]  # (the fixture's 40 NT topics)
