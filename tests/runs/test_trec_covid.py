"""nteval evaluate reproduces the official TREC-COVID round-1 leaderboard (real runs, real qrels)."""
from __future__ import annotations

import csv
import tarfile

import pytest
from conftest import shared

from nteval.evaluate import evaluate_run
from nteval.formats.trec import read_qrels, read_run

RUNS = ["run1", "BBGhelani1", "sab20.1.blind", "udel_fang_run1", "covidex.r1.t5", "SparseDenseSciBert"]


@pytest.mark.shared
def test_round1_leaderboard_to_four_decimals(tmp_path):
    base = shared("trec-covid")
    qrels = read_qrels(base / "qrels" / "qrels-covid-round1.txt")
    board = {r["run"]: r for r in csv.DictReader(open(base / "leaderboards" / "round1-leaderboard.csv"))}
    with tarfile.open(base / "runs" / "trec-covid-round1-runs.tar.gz") as tar:
        members = {m.name.rsplit("/", 1)[-1]: m for m in tar.getmembers() if m.isfile()}
        names = [n for n in RUNS if n in members and n in board]
        assert len(names) >= 4
        for name in names:
            tar.extract(members[name], tmp_path, filter="data")
            means, _ = evaluate_run(qrels, read_run(tmp_path / members[name].name), ["AP", "nDCG@10", "P@5"])
            row = board[name]
            assert round(means["AP"], 4) == pytest.approx(float(row["MAP"]), abs=1e-9), name
            assert round(means["nDCG@10"], 4) == pytest.approx(float(row["ndcg@10"]), abs=1e-9), name
            assert round(means["P@5"], 4) == pytest.approx(float(row["p@5"]), abs=1e-9), name
