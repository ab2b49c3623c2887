"""Effect sizes and practical equivalence (nteval.effects), checked against scipy and hand cases,
and on a real protocol run."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy.stats import bootstrap

from nteval.effects import CLASSES, MMD, ceiling, effects, family_note, group_changes
from nteval.errors import InputError
from nteval.significance import compare_systems


def _per_topic(matrix: np.ndarray) -> dict[str, dict[str, float]]:
    return {f"s{i}": {f"q{j:03d}": float(v) for j, v in enumerate(row)} for i, row in enumerate(matrix)}


def test_mmd_parses_relative_and_absolute_and_refuses_nonsense():
    assert MMD.parse(None) == MMD(0.05, True) and MMD.parse("3%") == MMD(0.03, True) and MMD.parse("0.01") == MMD(0.01, False)
    assert MMD.parse("5%").threshold(0.2, 0.25) == pytest.approx(0.0125)   # 5 % of the better score
    assert MMD.parse("0.01").threshold(0.2, 0.9) == 0.01
    for bad in ("five", "-1%", "100%", "nan", "-0.1"):
        with pytest.raises(InputError, match="--mmd"):
            MMD.parse(bad)
    # L7: each refusal gives its own reason ("inf" and "1e308" were told "must be ≥ 0")
    for bad, reason in (("inf", "must be a finite number"), ("inf%", "must be a finite number"),
                        ("-inf", "must be a finite number"), ("1e308", "must be below 1 "), ("5", "must be below 1 .*write 5%"),
                        ("1", "must be below 1 "),
                        ("150%", "must be below 100 %"), ("-0.1", "must be ≥ 0")):
        with pytest.raises(InputError, match=f"--mmd '{re.escape(bad)}': {reason}"):
            MMD.parse(bad)


def test_intervals_are_scipys_bca_bootstrap():
    """One system: the interval is scipy.stats.bootstrap's BCa interval of its mean over topics;
    a pair: the BCa interval of the mean paired difference (same seed, same resamples)."""
    rng = np.random.default_rng(3)
    m = np.clip(rng.normal([[0.5], [0.45]], 0.25, (2, 80)), 0, 1)
    eff = effects(_per_topic(m), compare_systems(_per_topic(m), "AP"), seed=11, resamples=999)
    ref = bootstrap((np.arange(80, dtype=float),), lambda i, axis=-1: m[:, i.astype(int)].mean(axis=-1)[0],
                    n_resamples=999, batch=200, vectorized=True, method="BCa", rng=np.random.default_rng(11))
    lo, hi = eff["systems"]["s0"]["ci95"]
    assert (lo, hi) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high), abs=1e-6)
    ref = bootstrap((np.arange(80, dtype=float),), lambda i, axis=-1: (m[0, i.astype(int)] - m[1, i.astype(int)]).mean(axis=-1),
                    n_resamples=999, batch=200, vectorized=True, method="BCa", rng=np.random.default_rng(11))
    pair = eff["pairs"][0]
    assert pair["ci95"] == pytest.approx([ref.confidence_interval.low, ref.confidence_interval.high], abs=1e-6)
    assert pair["diff"] == pytest.approx(m[0].mean() - m[1].mean(), abs=1e-6)


def test_three_classes_by_hand():
    """s0 vs s1: a constant 0.004 gap on every topic (separated, but 0.8 % < MMD 5 %); s0 vs s2: a
    0.2 gap (separated, ≥ MMD); s0 vs s3: noise around 0 (not separated; equivalent when tight)."""
    rng = np.random.default_rng(0)
    base = rng.uniform(0.4, 0.6, 200)
    noise = rng.choice([-0.001, 0.001], 200)
    m = np.array([base, base - 0.004, base - 0.2, base + noise])
    pt = _per_topic(m)
    eff = effects(pt, compare_systems(pt, "AP", seed=1), seed=1)
    cls = {(p["a"], p["b"]): p for p in eff["pairs"]}
    assert cls[("s0", "s1")]["class"] == CLASSES[1] and cls[("s0", "s1")]["relative"] == round(0.004 / base.mean(), 4)
    assert cls[("s0", "s2")]["class"] == CLASSES[2]
    assert cls[("s0", "s3")]["class"] == CLASSES[0] and cls[("s0", "s3")]["equivalent"] is True
    assert eff["counts"][CLASSES[2]] == 3  # s2 is far from all three others
    # an absolute MMD smaller than the small gap makes it a real difference
    assert {(p["a"], p["b"]): p["class"] for p in effects(pt, compare_systems(pt, "AP", seed=1), "0.001")["pairs"]}[
        ("s0", "s1")] == CLASSES[2]


def test_ceiling_family_and_group_changes():
    systems = {f"s{i}": {"mean": v, "ci95": [v, v]} for i, v in enumerate([0.98, 0.97, 0.966, 0.4])}
    c = ceiling(systems)
    assert c["systems"] == ["s0", "s1", "s2"] and "3 of 4 systems score ≥ 0.95 (0.966–0.980)" in c["note"]
    assert ceiling({"a": {"mean": 0.96}, "b": {"mean": 0.3}}) is None  # half is not most
    sig = {"alpha": 0.05, "pairs": [{"a": "x", "b": "y", "p": 0.01, "p_adjusted": 0.08, "significant": False},
                                    {"a": "x", "b": "z", "p": 0.001, "p_adjusted": 0.003, "significant": True}]}
    assert family_note(sig) == {"pairs_in_family": 2, "separated_only_before_correction": 1, "examples": [["x", "y"]]}
    before = {"pairs": [{"a": "x", "b": "y", "significant": True}]}
    assert group_changes(before, sig) == {"pairs_before": 1, "pairs_now": 2, "changed": [["x", "y", True, False]]}
    assert group_changes(sig, sig) is None


def test_a_protocol_run_gives_sizes_and_says_when_added_systems_moved_groups(first200_index, tmp_path):
    from nteval.experiment import run_focused

    small = tmp_path / "two.yaml"
    small.write_text("- {name: bm25, algorithm: bm25}\n- {name: qld_mu1000, algorithm: qld, params: {mu: 1000}}\n")
    kw = dict(n_topics=60, seed=3, progress=False, min_topics=10)
    a = run_focused(first200_index, tmp_path / "o", systems=small, **kw)
    e = a["verdict"]["effects"]
    assert set(e["systems"]) == {"bm25", "qld_mu1000"} and e["mmd"]["rule"] == "5 % of the better system's score"
    assert "Sparck Jones" in e["mmd"]["principle"] and "BCa" in e["method"]
    for s, v in e["systems"].items():
        assert v["ci95"][0] <= a["systems"][s]["RR"] <= v["ci95"][1]
    b = run_focused(first200_index, tmp_path / "o", systems="table1", **kw)  # same OUT, same topics, more systems
    gc = b["verdict"]["group_changes"]
    assert gc is not None and gc["pairs_before"] == 1 and gc["pairs_now"] == 136
    saved = json.loads((tmp_path / "o" / "results.json").read_text())
    assert saved["verdict"]["effects"]["counts"] == b["verdict"]["effects"]["counts"]
