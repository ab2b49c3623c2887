"""nteval's PubMed grid: BM25 k1 × b under the focused and the high-recall protocol on both shared
PubMed files, and the facts a run may cite from it (``nteval/data/grid_facts.json``: which b each
protocol prefers at each k1, read by :func:`nteval.answer.parameter_reason`).

    python scripts/grid_study.py --shared ../shared/data --work WORK --write
    python scripts/grid_study.py --from-table                   # the facts only, from the shipped table

1. Indexes pubmed20n0014 and pubmed21n1298 under WORK (unless there) and runs docs/grid.md's
   command on it in a fresh directory: ``nteval grid --protocol both --param k1=0.2:2.0:0.2
   --param b=0.1:1.0:0.1 --topics 500 --jobs 2`` (seed 42), timed.
2. The table of every cell (``docs/grid_pubmed_bm25.tsv``) and the side-by-side maps
   (``docs/grid_pubmed_bm25_focused_vs_highrecall.png``) are the grid's own files.
3. The facts come from the table alone: each protocol's best cell and the cells within 1 % of it,
   and for each k1 the b at which each protocol's first measure (focused RR, high-recall AP) peaks:
   how many k1 values put the focused protocol's best b above, below or at the high-recall one's.

``--write`` replaces the table, the figure, nteval/data/grid_facts.json and the block of
docs/grid.md between ``<!-- grid:pubmed -->`` and ``<!-- /grid:pubmed -->``; without it the
script prints the block. tests/evidence/test_shipped_evidence.py fails when the facts or the
block are not what this script computes from the shipped table.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from nteval.atomic import write_text as atomic_write

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs" / "grid_pubmed_bm25.tsv"
FIGURE = ROOT / "docs" / "grid_pubmed_bm25_focused_vs_highrecall.png"
FACTS = ROOT / "nteval" / "data" / "grid_facts.json"
DOC = ROOT / "docs" / "grid.md"
SOURCES = ("medline/pubmed_baseline_update/pubmed20n0014.xml.gz", "medline/pubmed_baseline_update/pubmed21n1298.xml.gz")
AXES = ("k1=0.2:2.0:0.2", "b=0.1:1.0:0.1")
TOPICS, JOBS = 500, 2
COMMAND = ("nteval grid --index idx --protocol both --param k1=0.2:2.0:0.2 --param b=0.1:1.0:0.1 --topics 500 "
           "--jobs 2 --out grid")
#: the measure each protocol's facts are read on (its verdict measure)
FIRST = {"focused": "RR", "highrecall": "AP"}
NEAR = 0.01


def run(shared: Path, work: Path) -> dict[str, Any]:
    """Index (unless there) and run the grid afresh; the table and figure it wrote, and its time."""
    from nteval.grid import parse_axis, run_grid
    from nteval.index import build_index, read_manifest

    idx, out = work / "pubmed_idx", work / "grid"
    if not (idx / "manifest.json").is_file():
        build_index([shared / s for s in SOURCES], idx)
    if out.exists():
        shutil.rmtree(out)
    t0 = time.perf_counter()
    run_grid(idx, out, [parse_axis(a) for a in AXES], protocol="both", n_topics=TOPICS, jobs=JOBS,
             progress=sys.stderr.isatty())
    seconds = time.perf_counter() - t0
    return {"table": out / "grid.tsv", "figure": out / "grid_compare.png", "seconds": round(seconds, 1),
            "documents": read_manifest(idx)["indexes"]["nt"]["documents"]}


def read_table(path: Path = TABLE) -> dict[tuple[str, str], dict[tuple[float, float], float]]:
    """{(protocol, measure): {(k1, b): value}} of a grid.tsv."""
    out: dict[tuple[str, str], dict[tuple[float, float], float]] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            out.setdefault((row["protocol"], row["measure"]), {})[(float(row["k1"]), float(row["b"]))] = float(row["value"])
    return out


def _best_b(cells: dict[tuple[float, float], float], k1: float) -> float:
    """The b at which the measure peaks for this k1 (the smallest such b on a tie)."""
    col = {b: v for (k, b), v in cells.items() if k == k1}
    top = max(col.values())
    return min(b for b, v in col.items() if v == top)


def facts(table: dict[tuple[str, str], dict[tuple[float, float], float]]) -> dict[str, Any]:
    """What the table shows: the best cells and, per k1, each protocol's best b."""
    best: dict[str, Any] = {}
    for (protocol, measure), cells in table.items():
        (k1, b), v = max(cells.items(), key=lambda kv: (kv[1], -kv[0][0], -kv[0][1]))
        near = [c for c, x in cells.items() if x >= v * (1 - NEAR)]
        k1s, bs = sorted({c[0] for c in cells}), sorted({c[1] for c in cells})
        best.setdefault(protocol, {})[measure] = {
            "k1": k1, "b": b, "value": round(v, 4), "near_cells": len(near),
            "near_k1": [min(c[0] for c in near), max(c[0] for c in near)],
            "near_b": [min(c[1] for c in near), max(c[1] for c in near)],
            "range": [round(min(cells.values()), 4), round(v, 4)],
            "on_edge": [n for n, x, axis in (("k1", k1, k1s), ("b", b, bs)) if x in (axis[0], axis[-1])]}
    f, h = table[("focused", FIRST["focused"])], table[("highrecall", FIRST["highrecall"])]
    per = [{"k1": k1, "focused": _best_b(f, k1), "highrecall": _best_b(h, k1)} for k1 in sorted({c[0] for c in f})]
    return {"best": best,
            "facts": {"b": {"across": "k1", "compared": len(per),
                            "focused_higher": sum(p["focused"] > p["highrecall"] for p in per),
                            "focused_lower": sum(p["focused"] < p["highrecall"] for p in per),
                            "equal": sum(p["focused"] == p["highrecall"] for p in per),
                            "per_value": per}}}


def block(g: dict[str, Any]) -> str:
    """docs/grid.md's PubMed results, from the facts."""
    s, best, b = g["study"], g["best"], g["facts"]["b"]
    rows = []
    for protocol, measures in best.items():
        for m, x in measures.items():
            rows.append(f"| {'high-recall' if protocol == 'highrecall' else protocol}, {m} | k1 {x['k1']:g}, b {x['b']:g} | "
                        f"{x['value']:.4f} | {x['near_cells']} cells, k1 {x['near_k1'][0]:g}–{x['near_k1'][1]:g}, "
                        f"b {x['near_b'][0]:g}–{x['near_b'][1]:g} ({m} {x['range'][0]:.4f}–{x['range'][1]:.4f} over the grid)"
                        + (f"; best on the {' and '.join(x['on_edge'])} edge: widen there" if x["on_edge"] else "") + " |")
    per = b["per_value"]
    verdict = ("holds" if 2 * b["focused_higher"] > b["compared"] else "does not hold")
    lines = [f"**PubMed** (index of both shared files, {s['documents']:,} documents; {s['topics']} topics, seed 42; BM25 "
             f"k1 0.2–2.0 × b 0.1–1.0, 10 × 10, both protocols = 200 cells; {s['seconds']:.0f} s wall at `--jobs 2` on "
             f"2 shared cores, made by `python scripts/grid_study.py --write` on {s['date']} with nteval {s['nteval']}; "
             "table: `docs/grid_pubmed_bm25.tsv`; facts a run may cite: `nteval/data/grid_facts.json`):", "",
             "![BM25 k1 × b under the focused and the high-recall protocol](grid_pubmed_bm25_focused_vs_highrecall.png)", "",
             "| protocol | best cell | value | within 1 % of best |", "|---|---|---|---|", *rows, "",
             f"The paper's observation (Campagne 2008, Fig. 5: the focused protocol prefers a higher b) {verdict} here: "
             f"the focused protocol's best b (RR) is above the high-recall protocol's (AP) at {b['focused_higher']} of "
             f"{b['compared']} k1 values, below at {b['focused_lower']}, equal at {b['equal']} (k1 "
             + ", ".join(f"{p['k1']:g}: {p['focused']:g} vs {p['highrecall']:g}" for p in per) + "). A disagreement "
             "between two BM25 settings in `nteval compare` says which b each verdict prefers in that run, and cites "
             "this count."]
    return "\n".join(lines)


MARK = re.compile(r"(<!-- grid:pubmed -->\n)(.*?)(\n<!-- /grid:pubmed -->)", re.S)


def fill(text: str, content: str) -> str:
    return MARK.sub(lambda m: m.group(1) + content + m.group(3), text)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--work", type=Path, help="where the index and the grid go")
    ap.add_argument("--from-table", action="store_true", help="the facts only, from the shipped table")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    import nteval

    if a.from_table:
        shipped = json.loads(FACTS.read_text(encoding="utf-8"))
        study = shipped["study"]
        table = TABLE
    elif a.work is None:
        ap.error("give --work (or --from-table)")
    else:
        got = run(a.shared, a.work)
        study = {"command": COMMAND, "script": "python scripts/grid_study.py --shared ../shared/data --work WORK --write",
                 "date": datetime.date.today().isoformat(), "nteval": nteval.__version__, "topics": TOPICS,
                 "documents": got["documents"], "seconds": got["seconds"]}
        table = got["table"]
    g = {"study": study, **facts(read_table(table))}
    if a.write:
        if not a.from_table:
            shutil.copyfile(got["table"], TABLE)
            shutil.copyfile(got["figure"], FIGURE)
        atomic_write(FACTS, json.dumps(g, indent=1) + "\n")
        atomic_write(DOC, fill(DOC.read_text(encoding="utf-8"), block(g)))
        print(f"wrote {FACTS.relative_to(ROOT)} and the PubMed block of {DOC.relative_to(ROOT)}")
    else:
        print(block(g))


if __name__ == "__main__":
    main()
