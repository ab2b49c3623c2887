"""One topics-needed plot for several protocol runs (each run already writes its own).

    python scripts/plot_topics_needed.py OUT.png focused/results.json highrecall/results.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from nteval.report.plots import topics_curve


def main() -> None:
    out, *results = sys.argv[1:]
    curves, systems, topics = {}, set(), set()
    for path in results:
        r = json.loads(Path(path).read_text())
        rel = r["verdict"]["reliability"]
        curves[f"{r['protocol']} {rel['measure']}"] = rel["curve"]
        systems.add(rel["systems"])
        topics.add(rel["topics"])
    topics_curve(curves, Path(out), f"How many topics are enough? {'/'.join(map(str, sorted(systems)))} systems, "
                                    f"{'/'.join(map(str, sorted(topics)))} topics\n(τ between the rankings from two "
                                    f"disjoint random topic sets, 200 draws)")


if __name__ == "__main__":
    main()
