"""How often does correlate's interval hold the agreement many more topics would show?

Takes a finished ``nteval correlate`` directory, treats the Kendall tau between the NT ranking
(all its topics) and the human ranking from *all* its judged topics as the truth, and draws
smaller sets of judged topics from it (without replacement). For each draw it computes, exactly as
``nteval correlate`` does,

- **before**: the BCa interval of the observed tau (``bootstrap_ci``) — topic noise around the tau
  at the drawn topic count, which few judged topics attenuate;
- **after**: the interval of the tau with as many judged topics as the truth has
  (``many_topic_tau``, empirical Bayes; correlate reports it with as many judged topics as NT topics),

and prints how often each holds the truth, on which side it misses, and how wide it is.

    python scripts/ci_coverage.py CORRELATE_OUT PROTOCOL MEASURE HUMAN_TOPICS DRAWS [--json FILE]
    e.g. python scripts/ci_coverage.py sf_corr focused RR 30 200   (human measure: AP)
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from nteval.atomic import write_text as atomic_write
from nteval.stats import bootstrap_ci, many_topic_tau, point_estimates


def per_topic(path: Path, measure: str) -> dict[str, dict[str, float]]:
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["measure"] == measure:
                scores[row["system"]][row["qid"]] = float(row["value"])
    return scores


def matrices(out: Path, side: str, measure: str, human_measure: str = "AP") -> tuple[list[str], np.ndarray, np.ndarray]:
    """(systems, NT matrix, human matrix) of a correlate directory (systems × topics, topics sorted)."""
    nt, human = per_topic(out / side / "per_topic.tsv", measure), per_topic(out / "human" / "per_topic.tsv", human_measure)
    systems = sorted(set(nt) & set(human))
    mat = lambda s: np.array([[s[n][q] for q in sorted(s[systems[0]])] for n in systems])  # noqa: E731
    return systems, mat(nt), mat(human)


def coverage(x: np.ndarray, y: np.ndarray, human_topics: int, draws: int, n_boot: int = 1000,
             seed: int = 1) -> dict[str, Any]:
    """Coverage of the truth (tau over all of ``y``'s topics) by both intervals over ``draws`` draws
    of ``human_topics`` of them."""
    truth = point_estimates(x, y)["kendall"]
    rng = np.random.default_rng(seed)
    rows: dict[str, list[tuple[bool, bool, bool, float]]] = {"before (BCa, observed tau)": [],
                                                              "after (tau with all the judged topics)": []}
    estimates = []
    for d in range(draws):
        yt = y[:, rng.choice(y.shape[1], human_topics, replace=False)]
        before = bootstrap_ci(x, yt, n_boot=n_boot, seed=d)["kendall"]
        after = many_topic_tau(x, yt, n_boot=n_boot, seed=d, target=y.shape[1])
        estimates.append((point_estimates(x, yt)["kendall"], after["value"] if after else None))
        for name, iv in zip(rows, (before, after["ci95"] if after else None)):
            if iv is not None:
                rows[name].append((iv[0] <= truth <= iv[1], iv[1] < truth, iv[0] > truth, iv[1] - iv[0]))
    out: dict[str, Any] = {"truth": truth, "systems": x.shape[0], "nt_topics": x.shape[1], "human_topics_all": y.shape[1],
                           "human_topics": human_topics, "draws": draws, "bootstrap": n_boot,
                           "mean_observed_tau": float(np.mean([e[0] for e in estimates])),
                           "mean_corrected_tau": float(np.mean([e[1] for e in estimates if e[1] is not None])),
                           "intervals": {}}
    for name, r in rows.items():
        a = np.array(r, float)
        out["intervals"][name] = {"holds": float(a[:, 0].mean()), "truth_above": float(a[:, 1].mean()),
                                  "truth_below": float(a[:, 2].mean()), "mean_width": float(a[:, 3].mean()), "n": len(r)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="a finished nteval correlate directory")
    ap.add_argument("protocol")
    ap.add_argument("measure", help="the NT measure (the human one is AP)")
    ap.add_argument("human_topics", type=int)
    ap.add_argument("draws", type=int)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--json", type=Path, help="also write the result here")
    a = ap.parse_args()
    _, x, y = matrices(a.out, a.protocol, a.measure)
    if a.human_topics >= y.shape[1]:
        sys.exit(f"ci_coverage: {a.human_topics} human topics is not fewer than the {y.shape[1]} judged")
    res = coverage(x, y, a.human_topics, a.draws, a.bootstrap)
    print(f"{a.out} {a.protocol} {a.measure} vs human AP: {res['systems']} systems; truth tau {res['truth']:.3f} from "
          f"{res['nt_topics']} NT x {res['human_topics_all']} human topics; {a.draws} draws of {a.human_topics} human "
          f"topics; mean tau of a draw {res['mean_observed_tau']:.3f}, mean corrected {res['mean_corrected_tau']:.3f}")
    for name, r in res["intervals"].items():
        print(f"  {name:40s} holds {r['holds']:.0%}, truth above {r['truth_above']:.0%}, below {r['truth_below']:.0%}, "
              f"mean width {r['mean_width']:.3f}")
    if a.json:
        atomic_write(a.json, json.dumps({"out": str(a.out), "protocol": a.protocol, "measure": a.measure, **res}, indent=1) + "\n")


if __name__ == "__main__":
    main()
