#!/usr/bin/env python3
"""The release gate's cost (``python benchmarks/gate.py [INDEX]``), as whole processes.

Baseline: ``nteval compare`` of the same two systems on the same number of topics (what a user
ran before the gate existed: both protocols, sampled topics, both verdicts). Measured in one run,
on 1,000 topics of the PubMed index of both shared files (the bundled sample without ../shared),
BM25 0.9/0.4 (live) against BM25 1.2/0.75 (candidate):

1. ``nteval pin`` (once per topic set: both tasks' topics, the high-recall S_ref over ``all``);
2. ``nteval gate --task known-item`` and ``--task topical`` with neither run cached (cold) and with
   both runs cached (``--runs-cache``, warm: what a CI gate pays when the live system's runs on
   the pin are kept);
3. ``nteval compare`` of the two systems (cold), the baseline;
4. ``nteval history --out`` of a history of 50 releases (drawn from real per-topic scores).

Ratios: each gate to the compare. Writes benchmarks/gate.json.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
N = 1000
SYSTEMS = """- {name: live, algorithm: bm25, params: {k1: 0.9, b: 0.4}}
- {name: candidate, algorithm: bm25, params: {k1: 1.2, b: 0.75}}
"""


def nteval(*args: str) -> float:
    """Seconds one ``nteval`` process takes (its exit status checked: 0, or a gate's 3/4)."""
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "nteval", *map(str, args)], capture_output=True, text=True)
    secs = time.perf_counter() - t
    if r.returncode not in (0, 3, 4, 5):
        raise SystemExit(f"nteval {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr[-400:]}")
    return round(secs, 2)


def history_of(n: int, where: Path) -> None:
    """A history of ``n`` releases, each a real system's real per-topic scores (the test slice of
    PubMed runs) with small per-release changes, written as gates write them."""
    import gzip
    from collections import defaultdict

    import numpy as np

    from nteval.gate.history import Record, opened

    per: dict[str, dict[str, float]] = defaultdict(dict)
    with gzip.open(ROOT / "tests" / "data" / "gate" / "per_topic_pubmed_ref2.tsv.gz", "rt") as fh:
        next(fh)
        for line in fh:
            proto, system, qid, _m, v = line.rstrip("\n").split("\t")
            if proto == "focused":
                per[system][qid] = float(v)
    systems = sorted(per)
    rng = np.random.default_rng(0)
    with opened(where) as h:
        for i in range(n):
            scores = per[systems[i % len(systems)]]
            noisy = {q: float(min(1.0, max(0.0, v + rng.normal(0, 0.01)))) for q, v in scores.items()}
            h.append([Record(f"sys{i % len(systems)}", f"v{i + 1}", "candidate" if i else "baseline", "known-item",
                             "RR", "pin-bench", "ts", "pinned", "f" * 64, noisy,
                             decision="non-inferior" if i else None, utc=f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}")])


def main() -> None:
    if "--help" in sys.argv or "-h" in sys.argv:
        print(__doc__)
        return
    from engines import the_index

    index = the_index(sys.argv[1] if len(sys.argv) > 1 else None)
    work = Path(tempfile.mkdtemp(prefix="nteval-bench-gate-"))
    (work / "systems.yaml").write_text(SYSTEMS)
    out: dict = {"index": str(index), "topics": N, "nteval": {}}
    t = out["nteval"]
    t["pin"] = nteval("pin", "--index", index, "--topics", N, "--out", work / "pin", "--quiet")
    for task in ("known-item", "topical"):
        common = ["gate", "--index", index, "--pin", work / "pin", "--task", task, "--baseline", "live",
                  "--candidate", "candidate", "--systems", work / "systems.yaml", "--quiet"]
        t[f"gate_{task}_cold"] = nteval(*common, "--out", work / f"cold-{task}", "--runs-cache", work / f"cache-{task}")
        t[f"gate_{task}_warm"] = nteval(*common, "--out", work / f"warm-{task}", "--runs-cache", work / f"cache-{task}")
    t["compare"] = nteval("compare", "--index", index, "--topics", N, "--systems", work / "systems.yaml",
                          "--out", work / "compare", "--quiet")
    history_of(50, work / "h.sqlite")
    t["history_50_releases"] = nteval("history", work / "h.sqlite", "--out", work / "trend")
    out["ratios_to_compare"] = {k: round(v / t["compare"], 3) for k, v in t.items() if k.startswith("gate")}
    out["cpus"] = os.cpu_count()
    (ROOT / "benchmarks" / "gate.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
