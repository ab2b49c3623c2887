"""Split-half reliability and the topics-needed curve."""
from __future__ import annotations

import numpy as np

from nteval.reliability import reliability, reliability_sentence, split_half_curve


def test_perfectly_separated_systems_are_stable_at_once():
    m = np.repeat(np.arange(6, dtype=float)[:, None], 200, axis=1)  # system i scores i on every topic
    curve = split_half_curve(m, draws=20)
    assert all(p["tau_mean"] == 1.0 for p in curve)
    assert curve[-1]["topics"] == 100


def test_noise_needs_more_topics_and_curve_rises():
    rng = np.random.default_rng(0)
    quality = np.linspace(0.3, 0.5, 10)
    m = quality[:, None] + rng.normal(0, 0.3, (10, 1000))
    per = {f"s{i}": {f"q{j}": float(m[i, j]) for j in range(1000)} for i in range(10)}
    rel = reliability(per, "AP", draws=100)
    taus = [p["tau_mean"] for p in rel["curve"]]
    assert taus[-1] > taus[0] + 0.3
    assert all(p["tau_lo"] <= p["tau_mean"] <= p["tau_hi"] for p in rel["curve"])
    assert rel["stable_from_topics"] is not None and 20 <= rel["stable_from_topics"] <= 500
    assert "stable" in reliability_sentence(rel)
    assert reliability(per, "AP", draws=100) == rel  # seeded
