#!/usr/bin/env python3
"""A 10 × 10 BM25 grid under both NT protocols: one pass over the postings vs one run per cell.

    python benchmarks/grid_one_pass.py [--index INDEX] [--topics 1000] [--jobs 2] [--skip-per-cell]

Baseline: the per-cell grid (``nteval grid --per-cell``: one Lucene run of every topic per cell,
``--jobs`` worker processes), measured in the same run on the same index and topics. Reports:

1. wall time of the whole grid (k1 0.2:2.0:0.2 × b 0.1:1.0:0.1, focused + high-recall, depth
   1,000) both ways, the ratio, and the mean time of one per-cell cell (goal: the one-pass grid in
   ≤ 5× one per-cell cell); and, for scale, a 1 × 1 grid from scratch (topics, S_ref and the one
   setting's cell per protocol: what scoring one setting costs a user);
2. equality: grid.tsv byte for byte, grid.json without its timings, and the run files of sampled
   cells (written from the one-pass rankings and from each cell's own Lucene run, byte for byte);
3. what a Python user would pick for fast BM25: ``bm25s`` (its own tokenizer: Porter2 stems,
   English stop words) over the same documents, the same 100 settings × the same focused topics
   at depth 1,000 — time only (its rankings differ by tokenization);
4. peak RSS of each grid's process tree (``benchmarks/peak_rss.py``).

INDEX: an nteval index (default: the two shared PubMed files, indexed once into a temporary
directory; the bundled sample without ../shared). Writes benchmarks/out/grid_one_pass.json.

``--scale N`` instead: the same one-pass grid on the N-record set of ``benchmarks/scale.py`` (the
shared records re-numbered and repeated), indexed first in a temporary directory removed
afterwards: wall time and peak RSS of the index and of the grid
(benchmarks/out/grid_one_pass_scale.json).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
AXES = ["k1=0.2:2.0:0.2", "b=0.1:1.0:0.1"]
SINGLE = ["k1=1.2", "b=0.75"]


def nteval(*args: str) -> list[str]:
    return [sys.executable, "-m", "nteval", *args]


def grid(index: Path, out: Path, topics: int, jobs: int, per_cell: bool, axes: list[str] = AXES) -> dict:
    from scale import measured

    cmd = nteval("grid", "--index", str(index), "--param", axes[0], "--param", axes[1], "--topics", str(topics),
                 "--jobs", str(jobs), "--quiet", "--out", str(out), *(["--per-cell"] if per_cell else []))
    m = measured(cmd)
    res = json.loads((out / "grid.json").read_text())
    return {**m, "cells": res["cells"], "compute_seconds": res["timing"]["compute_seconds"]}


def tables(out: Path) -> tuple[bytes, str]:
    g = json.loads((out / "grid.json").read_text())
    for k in ("timing", "cells", "index"):
        g.pop(k, None)
    return (out / "grid.tsv").read_bytes(), json.dumps(g, sort_keys=True)


def runs_equal(index: Path, out: Path, samples: int = 4) -> dict:
    """Run files of ``samples`` cells per protocol, from one pass and from each cell's own run."""
    from nteval.formats.trec import canonical, format_run, read_topics
    from nteval.grid import parse_axis
    from nteval.grid.spec import grid_systems
    from nteval.lucene.searcher import Index
    from nteval.systems.base import make_system
    from nteval.systems.execute import run_system

    cells = grid_systems(make_system("bm25", "bm25"), [parse_axis(a) for a in AXES])
    chosen = [cells[i] for i in (0, len(cells) // 3, 2 * len(cells) // 3, len(cells) - 1)][:samples]
    report = {}
    for proto in ("focused", "highrecall"):
        topics = read_topics(out / proto / "topics.tsv")
        if proto == "highrecall":
            from nteval.formats.trec import read_qrels

            qrels = read_qrels(out / proto / "qrels.txt")
            topics = {q: t for q, t in topics.items() if q in qrels}
        with Index(index / "nt") as idx:
            one = idx.grid_search(topics, 1000, [idx.similarity("bm25", **s.params) for _, s in chosen])
            same = 0
            for (_params, s), rankings in zip(chosen, one):
                mine = format_run({q: canonical(rankings[q], 1000) for q in topics}, s.name)
                theirs = run_system(idx, s, topics, 1000)
                ref = format_run({q: canonical(theirs.get(q, []), 1000) for q in topics}, s.name)
                same += mine == ref
        report[proto] = {"cells": len(chosen), "byte_identical": same, "topics": len(topics)}
    return report


def bm25s_time(index: Path, out: Path) -> dict:
    import bm25s
    import numpy as np

    from nteval.corpus.store import index_texts
    from nteval.formats.trec import read_topics

    docs = [t for _, t in index_texts(index, "nt")]
    queries = list(read_topics(out / "focused" / "topics.tsv").values())
    t0 = time.perf_counter()
    corpus_tokens = bm25s.tokenize(docs, stopwords="en", show_progress=False)
    query_tokens = bm25s.tokenize(queries, stopwords="en", show_progress=False)
    tokenize = time.perf_counter() - t0
    k1s = [round(0.2 * i, 1) for i in range(1, 11)]
    bs = [round(0.1 * i, 1) for i in range(1, 11)]
    t0 = time.perf_counter()
    for k1 in k1s:
        for b in bs:
            model = bm25s.BM25(k1=k1, b=b)
            model.index(corpus_tokens, show_progress=False)
            res, scores = model.retrieve(query_tokens, k=min(1000, len(docs)), show_progress=False, n_threads=2)
            assert res.shape[0] == len(queries) and np.isfinite(scores).all()
    return {"settings": len(k1s) * len(bs), "queries": len(queries), "documents": len(docs),
            "tokenize_seconds": round(tokenize, 2), "index_and_retrieve_seconds": round(time.perf_counter() - t0, 2),
            "bm25s": bm25s.__version__}


def scale_run(n: int, topics: int, jobs: int) -> dict:
    import shutil

    from scale import measured, write_sets

    work = Path(tempfile.mkdtemp(prefix="nteval-grid-scale-"))
    try:
        t0 = time.perf_counter()
        (work / "xml").mkdir()
        files = write_sets(work / "xml", n)
        made = round(time.perf_counter() - t0, 1)
        idx = work / "index"
        ix = measured(nteval("index", *map(str, files), "--out", str(idx), "--quiet"))
        docs = json.loads((idx / "manifest.json").read_text())["indexes"]
        g = grid(idx, work / "grid", topics, jobs, per_cell=False)
        return {"records": n, "documents": {k: v["documents"] for k, v in docs.items()}, "sets_seconds": made,
                "index": ix, "one_pass_grid": g, "topics": topics, "axes": AXES}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", default=None)
    ap.add_argument("--scale", type=int, default=None)
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--skip-per-cell", action="store_true")
    args = ap.parse_args()
    if args.scale:
        res = scale_run(args.scale, args.topics, args.jobs)
        print(json.dumps(res, indent=2))
        dest = ROOT / "benchmarks" / "out"
        dest.mkdir(exist_ok=True)
        (dest / "grid_one_pass_scale.json").write_text(json.dumps(res, indent=2) + "\n")
        return
    from engines import the_index as default_index

    index = Path(args.index) if args.index else default_index(None)
    work = Path(tempfile.mkdtemp(prefix="nteval-grid-bench-"))
    out: dict = {"index": str(index), "topics": args.topics, "axes": AXES, "jobs": args.jobs}
    out["one_pass"] = grid(index, work / "one", args.topics, args.jobs, per_cell=False)
    print(json.dumps({"one_pass": out["one_pass"]}), flush=True)
    if not args.skip_per_cell:
        out["per_cell"] = grid(index, work / "per", args.topics, args.jobs, per_cell=True)
        n = out["per_cell"]["cells"]["computed"]
        one_cell = out["per_cell"]["compute_seconds"] * args.jobs / n  # (jobs workers in parallel)
        out["one_per_cell_cell_seconds"] = round(one_cell, 2)
        out["speedup"] = round(out["per_cell"]["seconds"] / out["one_pass"]["seconds"], 2)
        out["one_pass_in_per_cell_cells"] = round(out["one_pass"]["seconds"] / one_cell, 1)
        out["tables_identical"] = tables(work / "one") == tables(work / "per")
        # what one setting costs from scratch: a 1 × 1 grid (the topics, S_ref, one cell per protocol)
        out["one_setting"] = grid(index, work / "single", args.topics, args.jobs, per_cell=True, axes=SINGLE)
        out["one_pass_in_one_setting_runs"] = round(out["one_pass"]["seconds"] / out["one_setting"]["seconds"], 2)
    out["run_files"] = runs_equal(index, work / "one")
    out["bm25s"] = bm25s_time(index, work / "one")
    print(json.dumps(out, indent=2))
    dest = ROOT / "benchmarks" / "out"
    dest.mkdir(exist_ok=True)
    (dest / "grid_one_pass.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
