"""How often does correlate's Kendall CI hold the agreement many more topics would show?

Takes a finished ``nteval correlate`` directory with many topics on both sides, treats the Kendall τ
of all of them as the truth, and draws smaller topic sets from it (without replacement). For each
draw it computes the CI exactly as ``nteval correlate`` does (:func:`bootstrap_ci`, BCa) and, for
comparison, the replicates' percentile interval; it prints how often each holds the truth, how
wide it is on average, and on which side it misses, split by how one-sided the replicates are (the
report's caveat fires above 84 %).

    python scripts/ci_coverage.py CORRELATE_OUT focused RR 1000 30 100
    (protocol, its measure, NT topics per draw, human topics per draw, draws; human measure AP)
"""
from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from nteval.correlate.caveats import MAX_SHARE_ONE_SIDE
from nteval.correlate.stats import bootstrap_ci, point_estimates


def per_topic(path: Path, measure: str) -> dict[str, dict[str, float]]:
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    with path.open(newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["measure"] == measure:
                scores[row["system"]][row["qid"]] = float(row["value"])
    return scores


def matrix(scores: dict[str, dict[str, float]], systems: list[str]) -> np.ndarray:
    topics = sorted(scores[systems[0]])
    return np.array([[scores[s][q] for q in topics] for s in systems])


def main() -> None:
    out, side, measure, n_nt, n_human, draws = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:7])
    nt, human = per_topic(Path(out, side, "per_topic.tsv"), measure), per_topic(Path(out, "human", "per_topic.tsv"), "AP")
    systems = sorted(set(nt) & set(human))
    X, Y = matrix(nt, systems), matrix(human, systems)
    truth = point_estimates(X, Y)["kendall"]
    rng = np.random.default_rng(1)
    rows = []
    for d in range(draws):
        xt = X[:, rng.choice(X.shape[1], n_nt, replace=False)]
        yt = Y[:, rng.choice(Y.shape[1], n_human, replace=False)]
        ci = bootstrap_ci(xt, yt, n_boot=1000, seed=d)
        if ci["kendall"] is None:
            continue
        spread = ci["method"]["spread"]["kendall"]
        rows.append({"est": point_estimates(xt, yt)["kendall"], "BCa": ci["kendall"], "percentile": spread["percentile"],
                     "one_sided": max(spread["share_below_estimate"], 1 - spread["share_below_estimate"]) > MAX_SHARE_ONE_SIDE})
    print(f"{out} {side} {measure} vs human AP: {len(systems)} systems; truth τ {truth:.3f} from {X.shape[1]} NT x "
          f"{Y.shape[1]} human topics; {len(rows)} draws of {n_nt} x {n_human}; mean τ of a draw "
          f"{np.mean([r['est'] for r in rows]):.3f}")
    for group, keep in (("all draws", lambda r: True), ("caveat fires", lambda r: r["one_sided"]),
                        ("caveat quiet", lambda r: not r["one_sided"])):
        sel = [r for r in rows if keep(r)]
        if not sel:
            continue
        for method in ("BCa", "percentile"):
            held = np.mean([r[method][0] <= truth <= r[method][1] for r in sel])
            above = np.mean([r[method][1] < truth for r in sel])
            below = np.mean([r[method][0] > truth for r in sel])
            width = np.mean([r[method][1] - r[method][0] for r in sel])
            print(f"  {group:13s} ({len(sel):3d})  {method:10s} holds {held:.0%}, truth above {above:.0%}, "
                  f"below {below:.0%}, mean width {width:.3f}")


if __name__ == "__main__":
    main()
