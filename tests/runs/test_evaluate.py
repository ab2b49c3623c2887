"""Tie order and trec_eval semantics, checked against hand-computed values."""
from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from click.testing import CliRunner

from nteval.cli import main
from nteval.evaluate import evaluate_run
from nteval.formats.trec import format_run, read_run, trec_order


def test_ties_break_by_docid_descending_like_trec_eval():
    ranking = [("d1", 1.0), ("d3", 0.5), ("d2", 1.0)]
    assert [d for d, _ in trec_order(ranking)] == ["d2", "d1", "d3"]


def test_float32_ties():
    # 1.00000001 and 1.0 are the same float32: a tie, so docid decides (descending)
    assert [d for d, _ in trec_order([("a", 1.00000001), ("b", 1.0)])] == ["b", "a"]


def test_hand_computed_ap_and_rr_under_ties():
    qrels = {"q1": {"d1": 1}, "q2": {"d3": 1, "d9": 1}}
    run = {"q1": [("d1", 2.0), ("d2", 2.0), ("d0", 3.0)],   # order d0, d2, d1 → RR 1/3, AP 1/3
           "q2": [("d3", 1.0), ("d4", 1.0)]}                 # order d4, d3 → RR 1/2, AP (1/2)/2
    means, per = evaluate_run(qrels, run, ["RR", "AP", "P@2"])
    assert per["q1"]["RR"] == pytest.approx(1 / 3) and per["q1"]["AP"] == pytest.approx(1 / 3)
    assert per["q2"]["RR"] == pytest.approx(1 / 2) and per["q2"]["AP"] == pytest.approx(0.25)
    assert per["q2"]["P@2"] == pytest.approx(0.5)
    assert means["AP"] == pytest.approx((1 / 3 + 0.25) / 2)
    # the run file we write carries the same order in its rank column
    lines = format_run(run, "t").splitlines()
    assert lines[:3] == ["q1 Q0 d0 1 3.000000 t", "q1 Q0 d2 2 2.000000 t", "q1 Q0 d1 3 2.000000 t"]


def test_missing_topics_score_zero_like_trec_eval_c():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    means, per = evaluate_run(qrels, {"q1": [("a", 1.0)]}, ["RR"])
    assert per["q2"]["RR"] == 0.0 and means["RR"] == pytest.approx(0.5)


def test_evaluate_cli_json(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\nq2 0 b 1\n")
    (tmp_path / "sys.run").write_text("q1 Q0 x 1 2.0 s\nq1 Q0 a 2 1.0 s\n")
    r = CliRunner().invoke(main, ["evaluate", "--qrels", str(tmp_path / "qrels.txt"), "--measures", "RR AP", "--json",
                                  str(tmp_path / "sys.run")])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == {"s": {"RR": 0.25, "AP": 0.25}}  # named by its tag


def test_bad_run_line(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\n")
    (tmp_path / "bad.run").write_text("q1 Q0 a 1 1.0 s\nq1 Q0 b 2 s\n")
    r = CliRunner().invoke(main, ["evaluate", "--qrels", str(tmp_path / "qrels.txt"), str(tmp_path / "bad.run")])
    assert r.exit_code == 2 and "bad.run:line 2" in r.stderr


def test_unknown_measure(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\n")
    (tmp_path / "s.run").write_text("q1 Q0 a 1 1.0 s\n")
    r = CliRunner().invoke(main, ["evaluate", "--qrels", str(tmp_path / "qrels.txt"), "--measures", "MAPX", str(tmp_path / "s.run")])
    assert r.exit_code == 2 and "MAPX" in r.stderr


def test_read_run_roundtrip(tmp_path):
    run = {"q": [("b", 1.5), ("a", 1.5), ("c", 0.1)]}
    p = tmp_path / "r.run"
    p.write_text(format_run(run, "x"))
    assert read_run(p) == {"q": [("b", 1.5), ("a", 1.5), ("c", 0.1)]}


def _trec_order_by_definition(ranking):
    """trec_eval's order written as its definition: a stable sort by docid descending, then a stable
    sort by float32 score descending."""
    items = sorted(ranking, key=lambda x: x[0], reverse=True)
    return sorted(items, key=lambda x: -float(np.float32(x[1])))


def test_trec_order_is_its_definition_on_rankings_sorted_or_not():
    """The fast path (scores that already descend: only runs of ties re-ordered) and the whole sort
    give the definition's order, on random rankings with many ties, float32 ties, ±0, ±inf,
    duplicate docids, and on rankings already in order or in score order with ties the other way."""
    rng = random.Random(7)
    pool = [0.0, -0.0, 1.0, 1.00000001, 2.5, math.inf, -math.inf, -1.0, 3.0]
    checked = 0
    for _ in range(5000):
        r = [(f"d{rng.randint(0, 30)}", rng.choice(pool) if rng.random() < 0.5 else round(rng.random() * 3, rng.randint(0, 2)))
             for _ in range(rng.randint(0, 40))]
        for variant in (r, sorted(r, key=lambda x: -x[1]), sorted(r, key=lambda x: (-x[1], x[0])),
                        _trec_order_by_definition(r)):
            want = _trec_order_by_definition(variant)
            assert [(d, repr(s)) for d, s in trec_order(variant)] == [(d, repr(s)) for d, s in want], variant
            checked += 1
    assert checked == 20000


def test_six_decimals_is_pythons_formatting_exactly():
    """canonical()'s scores: ``float(f"{s:.6f}")`` of each, computed without a string each: equal (sign
    of zero included) on random scores of every magnitude, on exact halves (k + 0.5)·10⁻⁶ and their
    neighbouring doubles, and on the edges (±0, ±inf, NaN, ±10⁹, 10³⁰⁰)."""
    from nteval.formats.trec import six_decimals

    rng = np.random.default_rng(3)
    k = np.concatenate([rng.integers(-10**15, 10**15, 50_000), rng.integers(-10**9, 10**9, 50_000)]).astype(float)
    half = (k + 0.5) / 1e6
    cases = [rng.normal(0, 10, 100_000), rng.random(100_000) * 30, rng.normal(0, 1e-5, 20_000), rng.normal(0, 1e8, 20_000),
             half, np.nextafter(half, np.inf), np.nextafter(half, -np.inf),
             np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e9, -1e9, 1e300, 5e-7, -5e-7, 2.5e-6, 123.4567895])]
    for scores in cases:
        got = six_decimals(scores)
        want = np.array([float(f"{s:.6f}") for s in scores.tolist()])
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        assert same.all(), scores[~same][:5]
        assert (np.signbit(got) == np.signbit(want)).all()


def test_six_decimals_of_huge_scores_warns_nothing():
    """Scores whose product by 10⁶ overflows (and NaN, ±inf) are Python's to format, silently, as
    the f-string was (hostile review: a RuntimeWarning, an error under -W error)."""
    import warnings

    from nteval.formats.trec import canonical, six_decimals

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = six_decimals(np.array([1e305, -1.7e308, np.inf, np.nan, 3.0]))
        assert canonical([("a", 1e305), ("b", 2.0)]) == [("a", 1e305), ("b", 2.0)]
    assert got[0] == 1e305 and got[1] == -1.7e308 and np.isinf(got[2]) and np.isnan(got[3]) and got[4] == 3.0
