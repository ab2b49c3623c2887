"""The gate-vs-human decision figures (nteval.correlate.gate_agreement): the reference test against
scipy's paired t-test, and the counts against the pairs' own decisions."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from nteval.correlate.gate_agreement import gate_agreement, human_decision


@pytest.mark.parametrize("shift", [0.12, 0.03, 0.0, -0.03, -0.12])
def test_the_reference_test_is_scipys_one_sided_paired_t(shift):
    rng = np.random.default_rng(7)
    b = rng.uniform(0.1, 0.7, 40)
    c = np.clip(b + shift + rng.normal(0, 0.08, 40), 0, 1)
    d = human_decision(b, c)
    p_better = stats.ttest_rel(c, b, alternative="greater").pvalue
    p_ni = stats.ttest_1samp(c - 0.95 * b, 0.0, alternative="greater").pvalue
    p_worse = stats.ttest_rel(c, b, alternative="less").pvalue
    p_beyond = stats.ttest_1samp(c - 0.95 * b, 0.0, alternative="less").pvalue
    expected = ("better" if p_better < 0.05 else "non-inferior" if p_ni < 0.05 else "worse" if p_worse < 0.05
                else "inconclusive")
    assert d["decision"] == expected
    assert d["beyond_margin"] == (p_beyond < 0.05)


def test_identical_systems_are_non_inferior_for_both_sides_and_counted_once_per_ordered_pair():
    rng = np.random.default_rng(3)
    good = rng.uniform(0.3, 0.9, 300)
    nt = np.vstack([good, good, good * 0.5])          # a copy of the first, and a system at half its score
    hq = rng.uniform(0.2, 0.8, 30)
    human = np.vstack([hq, hq, hq * 0.5])
    g = gate_agreement(["a", "a2", "half"], nt, [f"q{i}" for i in range(300)], human)
    assert g["pairs"] == 6
    rows = {(r["baseline"], r["candidate"]): r for r in g["rows"]}
    assert rows[("a", "a2")]["gate"] == "non-inferior" and rows[("a", "a2")]["human"] == "non-inferior"
    assert rows[("a", "half")]["gate"] == "worse" and rows[("a", "half")]["human"] == "worse"
    assert rows[("a", "half")]["human_beyond_margin"] and rows[("half", "a")]["gate"] == "better"
    assert g["agreement"] == 1.0 and g["false_pass"] == 0 and g["false_alarm"] == 0
    assert g["human_loss_beyond_margin"] == 2 and g["human_pass"] == 4
