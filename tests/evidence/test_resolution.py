"""What a judged collection can decide (scripts/resolution_study.py): the judges' part of a family's
bias interval, checked against scipy's bootstrap and a hand case, and the shipped figures recomputed
from the shipped validation snapshot and the JSON's own inputs."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import script

rs = script("resolution_study")


def test_queries_for_five_points_by_hand():
    """±10 on 15 queries needs 4× as many (60); ±21.3 on 15, ceil(15 · 4.26²) = 273; ±4 is already
    within 5, so the queries there are enough (300)."""
    assert rs.queries_for(15, 10.0) == 60
    assert rs.queries_for(15, 21.3) == 273
    assert rs.queries_for(300, 4.0) == 300


def test_an_advantage_every_topic_shares_has_no_width():
    """A system with twice BM25's AP on every topic: +100 points on every resample, interval [100, 100]."""
    bm25 = np.array([0.1, 0.3, 0.2, 0.4, 0.05])
    r = rs.advantage(np.stack([2 * bm25]), bm25, rs.resamples(5, np.random.default_rng(0)))
    assert r["advantage"] == 100.0 and r["interval"] == [100.0, 100.0] and r["half_width"] == 0.0
    assert r["queries_for_5"] == 5


def test_the_judges_rank_by_hand():
    """a beats b beats c on every topic: ranks 1, 2, 3 on every resample; a tie with the best shares
    rank 1 (c tied with a: both #1, b #3)."""
    a, b = np.array([0.5, 0.6, 0.7, 0.4]), np.array([0.4, 0.5, 0.6, 0.3])
    human = {"a": a, "b": b, "c": b - 0.1}
    j = rs.resamples(4, np.random.default_rng(0))
    assert [rs.judges_rank(human, t, j) for t in "abc"] == [
        {"rank": 1, "interval": [1, 1]}, {"rank": 2, "interval": [2, 2]}, {"rank": 3, "interval": [3, 3]}]
    human["c"] = a.copy()
    assert rs.judges_rank(human, "c", j) == {"rank": 1, "interval": [1, 1]}
    assert rs.judges_rank(human, "b", j) == {"rank": 3, "interval": [3, 3]}


def test_the_judges_interval_is_scipys_percentile_bootstrap():
    """The same statistic through scipy.stats.bootstrap (topics resampled, paired across systems,
    percentile): its bounds within 1 point of ours (independent draws, 2,000 replicates each)."""
    from scipy.stats import bootstrap

    rng = np.random.default_rng(7)
    bm25 = rng.beta(2, 5, size=40)
    members = np.stack([np.clip(bm25 * rng.uniform(0.6, 1.9, 40), 0, 1) for _ in range(2)])

    def stat(b, m1, m2, axis=-1):
        return ((m1.mean(axis) / b.mean(axis) - 1) + (m2.mean(axis) / b.mean(axis) - 1)) / 2 * 100

    ref = bootstrap((bm25, *members), stat, paired=True, method="percentile", n_resamples=2000,
                    random_state=np.random.default_rng(1), vectorized=True).confidence_interval
    ours = rs.advantage(members, bm25, rs.resamples(40, np.random.default_rng(0)))
    assert abs(ours["interval"][0] - ref.low) < 1.0 and abs(ours["interval"][1] - ref.high) < 1.0, (ours, ref)
    assert ours["advantage"] == round(float(stat(bm25, *members)), 1)


def test_the_shipped_figures_are_what_the_snapshot_gives():
    """nteval/data/resolution.json is what the study computes now from the shipped snapshot and its own
    inputs (the e5 systems' judged AP), and docs/verdicts.md's block is its table."""
    shipped = json.loads(rs.OUT_JSON.read_text(encoding="utf-8"))
    snapshot = json.loads(__import__("gzip").decompress(rs.SNAPSHOT.read_bytes()))
    again = rs.study(snapshot, shipped["inputs"])
    assert again == shipped
    assert rs.block(shipped) in rs.DOC.read_text(encoding="utf-8")
    med = shipped["collections"]["med"]
    assert med["judged_queries"] == 15 and med["families"]["neural"]["half_width"] > rs.WITHIN


def test_inputs_of_other_topics_or_judgments_are_refused():
    """e5's judged AP from other topics, or beside a BM25 whose judged AP is not the snapshot's
    (another corpus or qrels), is refused: the shipped MED inputs with one BM25 value moved."""
    snapshot = json.loads(__import__("gzip").decompress(rs.SNAPSHOT.read_bytes()))
    with pytest.raises(SystemExit, match="med: the e5 systems' judged topics"):
        rs.human_scores(snapshot, {"med": {"qids": ["1"], "values": {"e5": [0.1], "e5_bm25_rrf": [0.2]}}}, "med")
    med = json.loads(rs.OUT_JSON.read_text(encoding="utf-8"))["inputs"]["med"]
    assert len(rs.human_scores(snapshot, {"med": med}, "med")) == 32
    moved = {**med, "values": {**med["values"], "bm25": [med["values"]["bm25"][0] + 0.01, *med["values"]["bm25"][1:]]}}
    with pytest.raises(SystemExit, match="med: BM25's judged AP here is not the snapshot's"):
        rs.human_scores(snapshot, {"med": moved}, "med")


def test_an_unknown_collection_or_missing_shared_is_one_line(tmp_path):
    import subprocess
    import sys

    cmd = [sys.executable, str(rs.ROOT / "scripts" / "resolution_study.py")]
    for extra, said in ((["--e5", "cisi,trec"], "--e5: unknown collection(s) trec"),
                        (["--e5", "med"], "--e5: only with --work"),
                        (["--work", str(tmp_path / "w"), "--shared", str(tmp_path / "none")], "cisi/beir/corpus.jsonl not found")):
        r = subprocess.run(cmd + extra, capture_output=True, text=True)
        assert r.returncode == 2 and said in r.stderr.splitlines()[-1] and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "w").exists()
