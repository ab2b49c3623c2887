#!/usr/bin/env python3
"""The Python side of a protocol run, each hot path against the implementation it replaced, measured
in the same run on the same input (the bundled PubMed sample, its 300 first titles as queries):

1. proximity: the positions of the query's terms in BM25's top 100 per topic, one call into nteval's
   Java helper per topic (``Index.positions``) vs Anserini's ``IndexReaderUtils.getTermPositions``
   per document (a map of every term of the document, converted through pyjnius)
2. a query nteval builds (the disjunctive kinds): its hits read as one packed array
   (``Index.search_query``) vs each hit's doc and score read through pyjnius
3. ``trec_order`` of depth-1,000 rankings as a search returns them vs its definition (a stable sort
   by docid descending, then by float32 score descending)
4. ``canonical``'s six-decimal scores (``six_decimals``) vs ``float(f"{s:.6f}")`` per score

Every pair is checked to give the same result before it is timed. Writes benchmarks/run_overhead.json.

    python benchmarks/run_overhead.py [--index DIR] [--topics N]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from operator import itemgetter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from run import timed  # noqa: E402  (benchmarks/run.py: the best of N timings)

from nteval.corpus.store import DocStore  # noqa: E402
from nteval.formats.trec import six_decimals, trec_order  # noqa: E402
from nteval.lucene import jvm  # noqa: E402
from nteval.lucene import queries as lucene_queries  # noqa: E402
from nteval.lucene.searcher import Index  # noqa: E402
from nteval.systems.proximity import query_terms  # noqa: E402
from nteval.systems.querygen import ranked_terms  # noqa: E402


def per_document_positions(ix: Index, reader, docid: str, terms: list[str]) -> dict[str, list[int]]:
    """The replaced implementation: Anserini's map of every term of the document, then the query's."""
    m = ix._utils.getTermPositions(reader, docid)
    return {t: [int(x) for x in m.get(t).toArray()] for t in terms if m.get(t) is not None}


def per_hit_search(ix: Index, query, k: int) -> list[tuple[str, float]]:
    """The replaced implementation: each hit's doc number and score read through pyjnius."""
    hits = ix._fast.search(query, k, ix._sort, True).scoreDocs
    ids = ix._docid_table().take([h.doc for h in hits])
    return [(d, float(h.score)) for d, h in zip(ids, hits)]


def by_definition(ranking):
    items = sorted(ranking, key=itemgetter(0), reverse=True)
    return sorted(items, key=lambda x: -float(np.float32(x[1])))


def row(name: str, baseline: str, base_s: float, ours_s: float, units: int, unit: str) -> dict:
    r = {"what": name, "baseline": baseline, "baseline_s": round(base_s, 4), "nteval_s": round(ours_s, 4),
         "speedup": round(base_s / ours_s, 2), "units": units, "unit": unit}
    print(f"{name:<34} {base_s:8.3f} s baseline ({baseline}) vs {ours_s:8.3f} s: {r['speedup']:6.2f}x  ({units:,} {unit})")
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, help="an nteval index (default: the bundled sample, indexed here)")
    ap.add_argument("--topics", type=int, default=300)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "run_overhead.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nteval-bench-") as tmp:
        index = args.index
        if index is None:
            from nteval.demo import sample_path
            from nteval.index import build_index

            index = Path(tmp) / "index"
            build_index([sample_path()], index)
        store = DocStore(index / "docs.sqlite")
        try:
            titles = [t for (t,) in store.db.execute("SELECT title FROM docs WHERE title != '' ORDER BY seq")][:args.topics]
        finally:
            store.close()
        rows = []
        with Index(index / "nt") as ix:
            ix.configure("bm25", k1=0.9, b=0.4)
            reader = ix._utils.getReader(str((index / "nt").absolute()))
            work = [([d for d, _ in ix.search(t, 100)], query_terms(ix, t)) for t in titles]
            pairs = sum(len(d) for d, _ in work)
            assert all(ix.positions(d, q) == [per_document_positions(ix, reader, x, q) for x in d] for d, q in work[:30])
            rows.append(row("proximity: term positions", "getTermPositions per document",
                            timed(lambda: [[per_document_positions(ix, reader, x, q) for x in d] for d, q in work]),
                            timed(lambda: [ix.positions(d, q) for d, q in work], 3), pairs, "documents"))
            reader.close()
            queries = [lucene_queries.disjunction(ranked_terms(ix, t, 3)) for t in titles if ranked_terms(ix, t, 3)]
            assert all(ix.search_query(q, 1000) == per_hit_search(ix, q, 1000) for q in queries[:30])
            rows.append(row("a query nteval builds: hits", "pyjnius per hit",
                            timed(lambda: [per_hit_search(ix, q, 1000) for q in queries], 3),
                            timed(lambda: [ix.search_query(q, 1000) for q in queries], 3), len(queries), "queries"))
            rankings = [ix.search(t, 1000) for t in titles]
        hits = sum(map(len, rankings))
        assert all(trec_order(r) == by_definition(r) for r in rankings)
        rows.append(row("trec_order of search rankings", "two full sorts", timed(lambda: [by_definition(r) for r in rankings], 3),
                        timed(lambda: [trec_order(r) for r in rankings], 3), hits, "hits"))
        scores = np.array([s for r in rankings for _, s in r])
        assert six_decimals(scores).tolist() == [float(f"{s:.6f}") for s in scores.tolist()]
        rows.append(row("six-decimal scores", "f-string per score",
                        timed(lambda: [float(f"{s:.6f}") for s in scores.tolist()], 3),
                        timed(lambda: six_decimals(scores), 3), len(scores), "scores"))
    out = {"index": str(args.index or "bundled sample"), "topics": len(titles), "jvm": jvm.versions(), "rows": rows}
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
