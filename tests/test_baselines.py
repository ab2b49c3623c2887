"""Run-based judgment-free baselines: hand cases, then real TREC-COVID runs."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import shared

from nteval.cli import main
from nteval.correlate.baselines import mean_relevant, reference_count_qrels, soboroff_qrels

RUNS = {
    "A": {"q1": [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)]},
    "B": {"q1": [("d2", 3.0), ("d1", 2.0), ("d4", 1.0)]},
    "C": {"q1": [("d2", 2.0), ("d5", 1.0)]},
}


def test_reference_count_by_hand():
    # d2 retrieved by 3 runs, d1 by 2, the rest by 1 (ties → docid order)
    assert reference_count_qrels(RUNS, ["q1"], 2) == {"q1": {"d2": 1, "d1": 1}}
    assert reference_count_qrels(RUNS, ["q1"], 3) == {"q1": {"d2": 1, "d1": 1, "d3": 1}}
    assert reference_count_qrels(RUNS, ["q1"], 1, pool_depth=1) == {"q1": {"d2": 1}}


def test_soboroff_draws_distinct_pool_documents_seeded():
    a = soboroff_qrels(RUNS, ["q1"], 3, seed=4)
    assert len(a["q1"]) == 3 and set(a["q1"]) <= {"d1", "d2", "d3", "d4", "d5"}
    assert a == soboroff_qrels(RUNS, ["q1"], 3, seed=4)
    draws = [frozenset(soboroff_qrels(RUNS, ["q1"], 1, seed=s)["q1"]) for s in range(300)]
    # with duplicates in the pool, d2 (3 of 8 entries) is drawn far more often than d5 (1 of 8)
    assert draws.count(frozenset({"d2"})) > 2 * draws.count(frozenset({"d5"}))


def test_mean_relevant():
    assert mean_relevant({"a": {"x": 1, "y": 0, "z": 2}, "b": {"w": 1}}) == 2  # (2 + 1) / 2 rounded


def test_rank_baselines_on_trec_covid(tmp_path):
    import tarfile

    base = shared("trec-covid")
    with tarfile.open(base / "runs" / "trec-covid-round1-runs.tar.gz") as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)[:20]
        tar.extractall(tmp_path / "runs", members=members, filter="data")
    r = CliRunner().invoke(main, ["rank-baselines", "--runs", str(tmp_path / "runs"), "--qrels",
                                  str(base / "qrels" / "qrels-covid-round1.txt"), "--trials", "2",
                                  "--out", str(tmp_path / "rb.json")])
    assert r.exit_code == 0, r.output + r.stderr
    import json

    res = json.loads((tmp_path / "rb.json").read_text())
    assert res["runs"] == 20 and res["topics"] == 30
    for b in ("reference_count", "soboroff"):
        assert res["correlations_vs_official"][b]["AP"]["kendall"]["value"] > 0.3


def test_too_few_runs(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "one.run").write_text("q1 Q0 a 1 1.0 s\n")
    (tmp_path / "q.txt").write_text("q1 0 a 1\n")
    r = CliRunner().invoke(main, ["rank-baselines", "--runs", str(tmp_path / "r"), "--qrels", str(tmp_path / "q.txt")])
    assert r.exit_code == 2 and "need at least 3" in r.stderr
