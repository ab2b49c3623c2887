#!/usr/bin/env python3
"""Three engines side by side on one collection (``python benchmarks/engines.py [INDEX]``).

Baseline: PISA (block-max WAND over compressed postings, through pyterrier-pisa's wheel), the
fastest open-source engine. Measured in one run, on the same 1,000 sampled titles (focused D0,
seed 42) over the same documents (the ``nt`` index: abstracts, titles stripped), depth 1,000, BM25
k1 1.2 / b 0.75 (the values Tantivy's bindings fix):

1. search throughput (queries/s, warm: each engine searches the titles twice before it is timed
   (the JVM compiles Lucene's hot code during the first runs), best of 3) of nteval's Lucene runner
   (``Index.batch_search``: Java threads → docids → Python rankings, what every Lucene system of
   nteval runs), PISA and Tantivy (nteval's tantivy kind: Python threads over the bindings), at 1
   and 2 threads; ratio of each to PISA. Also per CPU-second of this process (all its threads):
   on a machine other jobs share, the wall-time figures measure the load as much as the engines;
   the CPU figures do not (but say nothing of how well the threads run in parallel);
2. index build time of each engine over the same texts (Lucene: from the manifest of ``nteval
   index``, which also parses the XML and writes the store; PISA and Tantivy: from the store's
   texts, as nteval's kinds build them);
3. where the Lucene runner's time goes when it is slower than PISA: the share spent in Java
   (search + docid lookups) vs turning hits into Python rankings.

INDEX: an nteval index (default: the two shared PubMed files, indexed into a temporary directory
when absent; the bundled sample without ../shared). Writes benchmarks/engines.json.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
SHARED = Path(os.environ.get("NTEVAL_SHARED_DATA", ROOT.parent / "shared" / "data")) / "medline" / "pubmed_baseline_update"
K1, B, DEPTH, N = 1.2, 0.75, 1000, 1000


def the_index(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    from nteval.demo import sample_path
    from nteval.index import build_index

    files = sorted(SHARED.glob("*.xml.gz")) or [sample_path()]
    out = Path(tempfile.gettempdir()) / ("nteval-bench-engines-" + "-".join(f.name.split(".")[0] for f in files))
    if not (out / "manifest.json").is_file():
        build_index(files, out, force=True)
    return out


def titles(index_dir: Path) -> dict[str, str]:
    from nteval.protocols import get

    proto = get("focused")
    tset = proto.build(index_dir, proto.Spec(n_topics=N, seed=42), Path(tempfile.mkdtemp()))
    return tset.topics


def best(fn, repeat: int = 3) -> tuple[float, float]:
    """The best of ``repeat`` wall times, and the best of their CPU times (every thread of this
    process: Java's and PISA's threads are in it). On a machine other jobs share, the wall time
    measures the load as much as the engine; the CPU time does not (but knows nothing of threads
    running in parallel)."""
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def parse_args(argv: list[str]):
    import argparse

    p = argparse.ArgumentParser(prog="python benchmarks/engines.py", description=__doc__.split("\n\n")[0],
                                epilog="What it measures: see the docstring of benchmarks/engines.py. "
                                       "Writes benchmarks/engines.json.")
    p.add_argument("index", nargs="?", default=None,
                   help="an nteval index (default: the two shared PubMed files, indexed into a temporary directory "
                        "when absent; the bundled sample without ../shared)")
    return p.parse_args(argv)


def main() -> None:
    args = parse_args(sys.argv[1:])
    import pandas as pd
    import pyterrier_pisa as pp
    import tantivy

    from nteval.index import read_manifest
    from nteval.lucene.searcher import Index
    from nteval.systems import tantivy as tk
    from nteval.systems.execute import Target
    from nteval.systems.pisa import output_to, pisa_index

    index_dir = the_index(args.index)
    manifest = read_manifest(index_dir)
    queries = titles(index_dir)
    qids = list(queries)
    out: dict = {"index": str(index_dir), "documents_nt": manifest["indexes"]["nt"]["documents"], "queries": len(qids),
                 "depth": DEPTH, "bm25": {"k1": K1, "b": B}, "cores": os.cpu_count(), "qps": {}, "build_seconds": {}}
    cache = Path(tempfile.mkdtemp(prefix="nteval-engines-"))
    os.environ["NTEVAL_ENGINE_CACHE"] = str(cache)
    target = Target(index_dir, "nt", manifest["fingerprint"])

    # -- builds (from the store's texts, as the kinds do)
    t0 = time.perf_counter()
    pwhere, _ = pisa_index(target, "porter2", False)
    out["build_seconds"]["pisa"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    twhere, _ = tk.tantivy_index(target, False)
    out["build_seconds"]["tantivy"] = round(time.perf_counter() - t0, 2)
    lucene_build = manifest.get("timing", {}) or manifest.get("build", {})
    out["build_seconds"]["nteval_index (parse + store + all and nt)"] = lucene_build.get("seconds") if isinstance(
        lucene_build, dict) else None

    # -- search
    idx = Index(index_dir / "nt")
    idx.configure("bm25", k1=K1, b=B)
    pidx = pp.PisaIndex(str(pwhere / "pisa"), stops="lucene")
    frame = pd.DataFrame({"qid": qids, "query": [queries[q] for q in qids]})
    tindex = tk._open(tantivy, twhere / "tantivy")
    tindex.reload()
    searcher, schema, analyzer = tindex.searcher(), tindex.schema, tk._analyzer(tantivy)
    from nteval.corpus.store import index_docids

    docids = index_docids(index_dir, "nt")

    def tantivy_one(query: str):
        terms = analyzer.analyze(query)
        if not terms:
            return []
        q = tantivy.Query.boolean_query([(tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", t))
                                         for t in terms])
        hits = searcher.search(q, limit=DEPTH, count=False).hits
        seqs = searcher.fast_field_values("seq", [a for _, a in hits])
        return [(docids[s], float(score)) for (score, _), s in zip(hits, seqs)]

    for threads in (1, 2):
        with output_to(cache / "pisa.log"):
            retr = pidx.bm25(k1=K1, b=B, num_results=DEPTH, threads=threads)
        engines = {
            "nteval_lucene": lambda t=threads: idx.batch_search(queries, DEPTH, t),
            "pisa": lambda r=retr: r.transform(frame),
            "tantivy": lambda t=threads: list(ThreadPoolExecutor(t).map(tantivy_one, [queries[q] for q in qids])),
        }
        for name, fn in engines.items():
            fn()  # warm (twice: the JVM's compilers work through the first runs)
            fn()
            secs, cpu = best(fn)
            out["qps"][f"{name}@{threads}"] = round(len(qids) / secs, 1)
            out.setdefault("queries_per_cpu_second", {})[f"{name}@{threads}"] = round(len(qids) / cpu, 1)
    for threads in (1, 2):
        for key, table in (("ratio_to_pisa", "qps"), ("ratio_to_pisa_cpu", "queries_per_cpu_second")):
            base = out[table][f"pisa@{threads}"]
            for name in ("nteval_lucene", "tantivy"):
                out.setdefault(key, {})[f"{name}@{threads}"] = round(out[table][f"{name}@{threads}"] / base, 3)
    out["load_average"] = os.getloadavg()

    # -- where the Lucene runner's time goes: the Java call alone (search, top-k, Lucene doc numbers and
    #    scores into flat arrays) vs the whole batch_search (+ doc numbers → docids, rankings as Python lists)
    from nteval.lucene.searcher import BATCH_HITS, FIELD

    texts = [queries[q] for q in qids]
    step = max(1, BATCH_HITS // DEPTH)
    for threads in (1, 2):
        def java_only(t=threads):
            for i in range(0, len(texts), step):
                idx._batch.search(idx._fast, idx._bow, idx._analyzer, FIELD, texts[i:i + step], DEPTH, idx._sort, t)

        java_only()
        java_only()
        secs, cpu = best(java_only)
        out["qps"][f"lucene_java_only@{threads}"] = round(len(qids) / secs, 1)
        out["queries_per_cpu_second"][f"lucene_java_only@{threads}"] = round(len(qids) / cpu, 1)
        for key, table in (("lucene_time_in_java", "qps"), ("lucene_cpu_in_java", "queries_per_cpu_second")):
            whole = out[table][f"nteval_lucene@{threads}"]
            out.setdefault(key, {})[str(threads)] = round(whole / out[table][f"lucene_java_only@{threads}"], 3)
    print(json.dumps(out, indent=2))
    (ROOT / "benchmarks" / "engines.json").write_text(json.dumps(out, indent=2) + "\n")
    idx.close()
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
