#!/usr/bin/env python3
"""Check `nteval evaluate` against the official TREC-COVID round-1 leaderboard (all 143 runs).

    python scripts/check_trec_covid.py [../shared/data/trec-covid]

Prints every run whose MAP, nDCG@10 or P@5 differs from the leaderboard at 4 decimals and exits 1
if any does.
"""
from __future__ import annotations

import csv
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nteval.evaluate import evaluate_run  # noqa: E402
from nteval.formats.trec import read_qrels, read_run  # noqa: E402


def main() -> int:
    base = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "data" / "trec-covid")
    qrels = read_qrels(base / "qrels" / "qrels-covid-round1.txt")
    board = {r["run"]: r for r in csv.DictReader(open(base / "leaderboards" / "round1-leaderboard.csv"))}
    bad = checked = 0
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(base / "runs" / "trec-covid-round1-runs.tar.gz") as tar:
        tar.extractall(tmp, filter="data")
        for path in sorted(Path(tmp).rglob("*")):
            if not path.is_file() or path.name not in board:
                continue
            means, _ = evaluate_run(qrels, read_run(path), ["AP", "nDCG@10", "P@5"])
            row = board[path.name]
            want = {"AP": row["MAP"], "nDCG@10": row["ndcg@10"], "P@5": row["p@5"]}
            checked += 1
            diffs = {m: (f"{means[m]:.4f}", want[m]) for m in want if f"{means[m]:.4f}" != f"{float(want[m]):.4f}"}
            if diffs:
                bad += 1
                print(f"MISMATCH {path.name}: {diffs}")
    print(f"{checked} runs checked against the round-1 leaderboard, {bad} mismatching (MAP, nDCG@10, P@5 at 4 decimals)")
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
