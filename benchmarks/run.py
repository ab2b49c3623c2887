#!/usr/bin/env python3
"""nteval benchmarks — one command (`make bench`), each line a ratio against a named baseline
measured in the same run on the same input.

1. parse rate (records/s): nteval's Medline reader vs pubmed_parser.parse_medline_xml (goal ≥ 3.5×)
2. index wall time: `nteval index SOURCES` (parse + sentences + store + both Lucene indexes) vs
   Anserini's IndexCollection, the indexer `python -m pyserini.index.lucene` runs, on the equivalent pre-built
   JsonCollections for all/ and nt/ (goal ≤ 1.1×), with both sides' CPU seconds and the floor they put
   under the ratio on this machine's cores; and, once, what a Pyserini user runs from the same XML
   (pubmed_parser → the two JsonCollections → the indexer)
3. start-up: `nteval --help` vs a bare `python -c pass` (goal ≤ 2 s)
4. search: nteval's runner (BM25, depth 1,000, Java threads → Python → trec-ordered TREC run file)
   vs raw Pyserini-style ``batch_search`` (Anserini's SimpleSearcher, hits left as Java objects,
   which is what ``LuceneSearcher.batch_search`` returns), and vs Anserini's ``SearchCollection``
   at 1 and 2 threads (goal ≥ 2×, same document sets), on the same 1,000 titles, same index,
   same process (goal ≥ 90% of the baseline's queries/s)
5. grid: `nteval grid` (BM25 k1 × b, 4 × 4, focused + high-recall) at --jobs 2 vs --jobs 1
   (cells per minute), and a run SIGKILLed half-way then resumed vs one uninterrupted run
   (`--grid-only` runs just this one; `--parse-index-only` runs only 1 and 2)
6. dense (benchmarks/dense.py; `--dense-only` runs just this one): wordllama encoding docs/s through
   nteval's cached document_vectors vs the encoder called directly; depth-1,000 search q/s of FAISS flat
   vs a numpy brute force (same top-1,000 sets checked), IVF and HNSW with recall vs flat; RSS growth per
   vector projected to a million, float32 and float16

7. neural (benchmarks/neural.py; `--neural-only`, with the neural extra): all-MiniLM-L6-v2's encoding
   docs/s through nteval vs sentence-transformers' own encode, both indexes of the inputs, cache bytes,
   and (`--install`) what the extra adds to an install

8. the fair pin at PubMed scale (benchmarks/pin_scale.py; `--pin-scale-only`, with the neural extra): a
   1,000-topic pin of both shared PubMed files with the fair references (lexical vote + MiniLM re-ranking
   the pool) vs the lexical ones, each stage apart, and the 1M-record projection (benchmarks/pin_scale.json)

Uses ../shared/data PubMed files when present, else the bundled sample.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("NTEVAL_SHARED_DATA", ROOT.parent / "shared" / "data")) / "medline" / "pubmed_baseline_update"


def inputs() -> tuple[Path, list[Path]]:
    if (SHARED / "pubmed21n1298.xml.gz").exists():
        return SHARED / "pubmed21n1298.xml.gz", [SHARED / "pubmed20n0014.xml.gz", SHARED / "pubmed21n1298.xml.gz"]
    from nteval.demo import sample_path

    return sample_path(), [sample_path()]


def timed(fn, repeat: int = 1) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def bench_parse(path: Path) -> dict:
    from nteval.corpus.medline import read_medline
    from nteval.corpus.document import Deletion
    from nteval.corpus.sentences import split_abstract

    n = sum(1 for r in read_medline(path) if not isinstance(r, Deletion))
    ours = timed(lambda: sum(1 for _ in read_medline(path)), repeat=2)
    ours_sent = timed(lambda: [split_abstract(r.abstract_parts) for r in read_medline(path) if hasattr(r, "abstract_parts")])
    try:
        import pubmed_parser as pp
    except ImportError:
        return {"records": n, "nteval_rec_s": n / ours, "note": "pubmed_parser not installed (pip install pubmed-parser==0.5.1)"}
    base = timed(lambda: sum(1 for _ in pp.parse_medline_xml(str(path))))
    return {"file": path.name, "records": n, "nteval_rec_s": round(n / ours), "nteval_with_sentences_rec_s": round(n / ours_sent),
            "pubmed_parser_rec_s": round(n / base), "ratio": round(base / ours, 2),
            "ratio_with_sentences": round(base / ours_sent, 2)}


def bench_search(index_dir: Path, n: int = 1000, repeat: int = 2) -> dict:
    from nteval.corpus.store import DocStore
    from nteval.lucene import jvm
    from nteval.runs import run_all
    from nteval.systems.base import make_system
    from nteval.topics.focused import focused_topics
    from nteval.topics.sample import SampleSpec, sample_ids

    ids, _ = sample_ids(index_dir, SampleSpec(n=n, seed=1))
    store = DocStore(index_dir / "docs.sqlite")
    topics, _ = focused_topics(store, ids)
    store.close()
    searcher = jvm.autoclass("io.anserini.search.SimpleSearcher")(str(index_dir / "nt"))
    searcher.set_bm25(0.9, 0.4)

    qids = list(topics)
    # chunks of 200 as nteval's runner does: one call for 1,000 queries × 1,000 hits holds ~1M
    # hits with their stored documents in the JVM heap and thrashes its GC
    chunks = [(_java_list(topics[q] for q in qids[i:i + 200]), _java_list(qids[i:i + 200])) for i in range(0, len(qids), 200)]

    def raw():
        out = {}
        for texts, jqids in chunks:
            res = searcher.batch_search(texts, jqids, 1000, 2)
            out.update({e.getKey(): e.getValue() for e in res.entrySet().toArray()})  # as pyserini does
        return out

    raw()  # JIT warm-up for both
    base, ours = [], []
    system = make_system("bm25", "bm25")
    for r in range(repeat):
        base.append(timed(raw))
        out = _scratch(f"runs-{r}")
        t = time.perf_counter()
        run_all(index_dir, "nt", f"bench-{r}", topics, [system], out, depth=1000, progress=False, threads=2)
        ours.append(time.perf_counter() - t)
        shutil.rmtree(out, ignore_errors=True)
    qb, qo = len(qids) / min(base), len(qids) / min(ours)
    res = {"queries": len(qids), "raw_batch_search_q_s": round(qb, 1), "nteval_runner_q_s": round(qo, 1),
           "ratio": round(qo / qb, 2)}
    res["searchcollection"] = bench_searchcollection(index_dir, topics, system, repeat)
    res["feedback"] = bench_feedback(index_dir, dict(list(topics.items())[:300]), repeat)
    return res


def bench_feedback(index_dir: Path, topics: dict[str, str], repeat: int = 2) -> list[dict]:
    """RM3 and Rocchio: nteval's runner (Anserini's reranker cascade on a searcher without stored
    fields) vs Anserini's ``SimpleSearcher.batch_search`` configured with its own setters, in
    batches of 100 queries as nteval's runner called it before, 2 threads each, depth 1,000; the
    rankings must be identical (the same docids with the same scores as the run file writes them)."""
    from nteval.formats.trec import read_run
    from nteval.lucene import jvm
    from nteval.runs import run_all
    from nteval.systems.base import make_system

    qids = list(topics)
    lists = [(_java_list(topics[q] for q in qids[i:i + 100]), _java_list(qids[i:i + 100]))
             for i in range(0, len(qids), 100)]
    rows = []
    for algorithm in ("bm25_rm3", "bm25_rocchio"):
        system = make_system(algorithm, algorithm)
        p = system.params
        searcher = jvm.autoclass("io.anserini.search.SimpleSearcher")(str(index_dir / "nt"))
        searcher.set_bm25(float(p["k1"]), float(p["b"]))
        if algorithm == "bm25_rm3":
            searcher.set_rm3(int(p["fb_terms"]), int(p["fb_docs"]), float(p["original_query_weight"]))
        else:
            searcher.set_rocchio("JsonCollection", int(p["fb_terms"]), int(p["fb_docs"]), 0, 0, float(p["alpha"]),
                                 float(p["beta"]), 0.0, False, False)

        def raw():
            out = {}
            for texts, ids in lists:
                res = searcher.batch_search(texts, ids, 1000, 2)
                out.update({q: [(str(h.docid), float(h.score)) for h in res.get(q)] for q in ids.toArray()})
            return out

        base, ours = [], []
        for r in range(repeat):
            t = time.perf_counter()
            theirs = raw()
            base.append(time.perf_counter() - t)
            out = _scratch(f"fb-{algorithm}-{r}")
            t = time.perf_counter()
            run_all(index_dir, "nt", f"fb-{r}", topics, [system], out, depth=1000, progress=False, threads=2)
            ours.append(time.perf_counter() - t)
            mine = read_run(out / f"{algorithm}.run")
            shutil.rmtree(out, ignore_errors=True)
        searcher.close()
        same = sum(1 for q in qids if {d: f"{x:.6f}" for d, x in theirs[q]} == {d: f"{x:.6f}" for d, x in mine.get(q, [])})
        rows.append({"system": algorithm, "topics": len(qids), "simplesearcher_q_s": round(len(qids) / min(base), 1),
                     "nteval_q_s": round(len(qids) / min(ours), 1), "ratio": round(min(base) / min(ours), 2),
                     "identical_rankings": same})
    return rows


def _java_list(items):
    from nteval.lucene import jvm

    lst = jvm.autoclass("java.util.ArrayList")()
    for x in items:
        lst.add(x)
    return lst


def bench_searchcollection(index_dir: Path, topics: dict[str, str], system, repeat: int = 2) -> list[dict]:
    """nteval's runner (a run file on disk, in-process JVM already up) vs Anserini's
    ``SearchCollection`` (a run file from a topics file; its wall time minus its JVM's start-up,
    measured by running it on one topic) at the same thread count; the same document sets per topic."""
    from nteval.formats.trec import read_run, write_topics
    from nteval.lucene.jvm import anserini_jar, java_home
    from nteval.runs import run_all

    java, jar = str(Path(java_home()) / "bin" / "java"), str(anserini_jar())
    work = _scratch("sc")
    write_topics(work / "topics.tsv", topics)
    write_topics(work / "one.tsv", dict(list(topics.items())[:1]))

    def sc(topic_file: str, threads: int, out: Path) -> float:
        t = time.perf_counter()
        subprocess.run([java, "-cp", jar, "io.anserini.search.SearchCollection", "-index", str(index_dir / "nt"),
                        "-topics", str(work / topic_file), "-topicReader", "TsvString", "-output", str(out),
                        "-bm25", "-bm25.k1", "0.9", "-bm25.b", "0.4", "-hits", "1000", "-threads", str(threads)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - t

    rows = []
    for threads in (1, 2):
        base, ours, startup = [], [], []
        for r in range(repeat):
            startup.append(sc("one.tsv", threads, work / "one.run"))
            base.append(sc("topics.tsv", threads, work / "sc.run") - min(startup))
            out = work / f"ours-{threads}-{r}"
            t = time.perf_counter()
            run_all(index_dir, "nt", f"sc-{threads}-{r}", topics, [system], out, depth=1000, progress=False,
                    threads=threads)
            ours.append(time.perf_counter() - t)
        theirs, mine = read_run(work / "sc.run"), read_run(out / "bm25.run")
        same = sum(1 for q in topics if {d for d, _ in theirs.get(q, [])} == {d for d, _ in mine.get(q, [])})
        rows.append({"threads": threads, "searchcollection_q_s": round(len(topics) / min(base), 1),
                     "nteval_q_s": round(len(topics) / min(ours), 1),
                     "ratio": round(min(base) / min(ours), 2), "jvm_startup_s": round(min(startup), 2),
                     "same_document_sets": same, "topics": len(topics)})
    shutil.rmtree(work, ignore_errors=True)
    return rows


def _print_search(q: dict) -> None:
    print(f"search     {q['queries']:,} titles, BM25, depth 1000: nteval runner {q['nteval_runner_q_s']} q/s vs raw batch_search "
          f"{q['raw_batch_search_q_s']} q/s  → {q['ratio']:.0%} (goal ≥ 90%)")
    for row in q.get("searchcollection", []):
        print(f"           {row['threads']} thread(s): nteval runner {row['nteval_q_s']} q/s vs Anserini SearchCollection "
              f"{row['searchcollection_q_s']} q/s (its JVM start-up {row['jvm_startup_s']} s left out) → {row['ratio']}× "
              f"(goal ≥ 2×); same document sets on {row['same_document_sets']} of {row['topics']} topics")
    _print_feedback(q.get("feedback", []))


def _print_feedback(rows: list[dict]) -> None:
    for row in rows:
        print(f"feedback   {row['system']}, {row['topics']} titles, depth 1000, 2 threads: nteval runner {row['nteval_q_s']} q/s "
              f"vs SimpleSearcher.batch_search {row['simplesearcher_q_s']} q/s → {row['ratio']}×; identical rankings on "
              f"{row['identical_rankings']} of {row['topics']} topics")


def _children_cpu() -> float:
    """CPU seconds (user + system) of every waited-for child process so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def bench_index(sources: list[Path], repeat: int = 3, keep: Path | None = None) -> dict:
    """Alternate the two commands ``repeat`` times (this VM's timings wander by ±20%) and compare
    medians. CPU seconds are counted too: nteval does more work than the baseline (it parses the XML,
    splits sentences and fills the store; the baseline starts from JSON), so on C cores it can never
    take less than its CPU time / C, which bounds the ratio from below whatever it overlaps. And the
    whole of what a Pyserini user would run (pubmed_parser → the two JsonCollections → the indexer)
    is timed once, from the same XML."""
    import json as _json

    from nteval.corpus.store import DocStore
    from nteval.lucene.jvm import anserini_jar, java_home

    work = _scratch("index")
    try:
        ours, base, ours_cpu, base_cpu = [], [], [], []
        # the baseline: Anserini's IndexCollection, the indexer `python -m pyserini.index.lucene` calls (run
        # straight from the jar: pyserini's Python wrapper needs pandas and torch, which nteval never installs)
        java, jar = str(Path(java_home()) / "bin" / "java"), str(anserini_jar())

        def anserini(coll: Path, dst: Path) -> None:
            for name in ("all", "nt"):
                shutil.rmtree(dst / name, ignore_errors=True)
                subprocess.run([java, "-cp", jar, "io.anserini.index.IndexCollection", "-collection", "JsonCollection",
                                "-input", str(coll / name), "-index", str(dst / name),
                                "-generator", "DefaultLuceneDocumentGenerator", "-threads", "2",
                                "-storePositions", "-storeDocvectors", "-storeRaw", "-optimize"],
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        n = 0
        for r in range(repeat):
            shutil.rmtree(work / "ours", ignore_errors=True)
            t, c = time.perf_counter(), _children_cpu()
            subprocess.run([sys.executable, "-m", "nteval.cli", "index", *map(str, sources), "--out", str(work / "ours"),
                            "--quiet"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
            ours.append(time.perf_counter() - t)
            ours_cpu.append(_children_cpu() - c)
            if r == 0:  # the equivalent pre-built JsonCollections (not timed)
                store = DocStore(work / "ours" / "docs.sqlite")
                for name in ("all", "nt"):
                    (work / "coll" / name).mkdir(parents=True)
                with open(work / "coll" / "all" / "docs.jsonl", "w") as fa, open(work / "coll" / "nt" / "docs.jsonl", "w") as fn:
                    for docid, title, abstract in store.iter_texts():
                        fa.write(_json.dumps({"id": docid, "contents": f"{title}\n{abstract}"}) + "\n")
                        fn.write(_json.dumps({"id": docid, "contents": abstract}) + "\n")
                        n += 1
                store.close()
            t, c = time.perf_counter(), _children_cpu()
            anserini(work / "coll", work / "pyserini")
            base.append(time.perf_counter() - t)
            base_cpu.append(_children_cpu() - c)
        pipeline = _pyserini_pipeline(sources, work, anserini)
        if keep is not None:
            shutil.copytree(work / "ours", keep)
        mo, mb = statistics.median(ours), statistics.median(base)
        cores = os.cpu_count() or 1
        floor = statistics.median(ours_cpu) / cores
        return {"documents": n, "repeat": repeat, "nteval_index_s": [round(x, 2) for x in ours],
                "pyserini_index_all_plus_nt_s": [round(x, 2) for x in base],
                "median_ratio": round(mo / mb, 2), "nteval_median_s": round(mo, 2), "pyserini_median_s": round(mb, 2),
                "nteval_cpu_s": round(statistics.median(ours_cpu), 1), "pyserini_cpu_s": round(statistics.median(base_cpu), 1),
                "cores": cores, "nteval_floor_s": round(floor, 1), "floor_ratio": round(floor / mb, 2),
                **pipeline, "end_to_end_ratio": round(mo / pipeline["pyserini_pipeline_s"], 2)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _pyserini_pipeline(sources: list[Path], work: Path, anserini) -> dict:
    """What a Pyserini user runs from the same XML: pubmed_parser (one process per file, as many as
    nteval uses) writes the all/ and nt/ JsonCollections (records with a title and an abstract),
    then the indexer. Timed once."""
    from concurrent.futures import ProcessPoolExecutor

    try:
        import pubmed_parser  # noqa: F401
    except ImportError:
        return {"pyserini_pipeline_s": float("nan"), "pipeline_note": "pubmed_parser not installed"}
    coll = work / "pp-coll"
    for name in ("all", "nt"):
        shutil.rmtree(coll / name, ignore_errors=True)
        (coll / name).mkdir(parents=True)
    t = time.perf_counter()
    with ProcessPoolExecutor(max_workers=min(len(sources), os.cpu_count() or 1)) as pool:
        counts = list(pool.map(_pubmed_parser_to_json, sources, [coll] * len(sources), range(len(sources))))
    parsed = time.perf_counter() - t
    anserini(coll, work / "pp-index")
    total = time.perf_counter() - t
    return {"pyserini_pipeline_s": round(total, 2), "pubmed_parser_s": round(parsed, 2), "pipeline_documents": sum(counts)}


def _pubmed_parser_to_json(path: Path, coll: Path, i: int) -> int:
    import json as _json

    import pubmed_parser as pp

    n = 0
    with open(coll / "all" / f"{i:03d}.jsonl", "w") as fa, open(coll / "nt" / f"{i:03d}.jsonl", "w") as fn:
        for rec in pp.parse_medline_xml(str(path)):
            title, abstract = (rec.get("title") or "").strip(), (rec.get("abstract") or "").strip()
            if title and abstract and not rec.get("delete"):
                fa.write(_json.dumps({"id": rec["pmid"], "contents": f"{title}\n{abstract}"}) + "\n")
                fn.write(_json.dumps({"id": rec["pmid"], "contents": abstract}) + "\n")
                n += 1
    return n


def _grid(index_dir: Path, out: Path, jobs: int, n_topics: int, kill_after: int | None = None) -> tuple[float, dict | None]:
    """Wall time of one `nteval grid` run (killed with SIGKILL once `kill_after` cells exist)."""
    import signal

    args = [sys.executable, "-m", "nteval.cli", "grid", "--index", str(index_dir), "--protocol", "both",
            "--param", "k1=0.6:1.5:0.3", "--param", "b=0.3:0.9:0.2", "--topics", str(n_topics), "--quiet",
            "--jobs", str(jobs), "--out", str(out)]
    t = time.perf_counter()
    p = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, start_new_session=True)
    if kill_after is not None:
        while p.poll() is None and sum(1 for _ in out.glob("cells/*/*.json")) < kill_after:
            time.sleep(0.05)
        os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    wall = time.perf_counter() - t
    return wall, (json.loads((out / "grid.json").read_text()) if kill_after is None else None)


def bench_grid(index_dir: Path, n_topics: int = 300) -> dict:
    work = _scratch("grid")
    try:
        w1, g1 = _grid(index_dir, work / "jobs1", 1, n_topics)
        w2, g2 = _grid(index_dir, work / "jobs2", 2, n_topics)
        cells = g1["cells"]["total"]
        wk, _ = _grid(index_dir, work / "killed", 2, n_topics, kill_after=cells // 2)
        done = sum(1 for _ in (work / "killed").glob("cells/*/*.json"))
        wr, gr = _grid(index_dir, work / "killed", 2, n_topics)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c1, c2 = g1["timing"]["cells_per_minute"], g2["timing"]["cells_per_minute"]
    return {"cells": cells, "topics": n_topics, "jobs1_cells_per_min": c1, "jobs2_cells_per_min": c2,
            "speedup": round(c2 / c1, 2), "jobs1_wall_s": round(w1, 1), "jobs2_wall_s": round(w2, 1),
            "killed_after_s": round(wk, 1), "cells_done_at_kill": done, "resumed_wall_s": round(wr, 1),
            "resumed_computed": gr["cells"]["computed"], "resumed_vs_full": round(wr / w2, 2),
            "killed_plus_resumed_vs_full": round((wk + wr) / w2, 2)}


def _print_grid(g: dict) -> None:
    print(f"grid       {g['cells']} cells (4×4 BM25 k1×b, focused + high-recall, {g['topics']} topics): --jobs 2 "
          f"{g['jobs2_cells_per_min']} cells/min vs --jobs 1 {g['jobs1_cells_per_min']} cells/min → {g['speedup']}× "
          f"(wall {g['jobs2_wall_s']} s vs {g['jobs1_wall_s']} s)\n"
          f"           killed (SIGKILL) after {g['killed_after_s']} s with {g['cells_done_at_kill']} cells stored; resumed run "
          f"{g['resumed_wall_s']} s computing {g['resumed_computed']} → {g['resumed_vs_full']}× a full --jobs 2 run "
          f"(killed + resumed: {g['killed_plus_resumed_vs_full']}×)")


def bench_startup() -> dict:
    def run(args):
        return timed(lambda: subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), repeat=5)

    bare = run([sys.executable, "-c", "pass"])
    helps = run([sys.executable, "-m", "nteval.cli", "--help"])
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "q.txt").write_text("q1 0 a 1\nq2 0 b 1\n")
        (Path(tmp) / "s.run").write_text("q1 Q0 a 1 1.0 s\nq2 Q0 c 1 1.0 s\n")
        ev = run([sys.executable, "-m", "nteval.cli", "evaluate", "--qrels", str(Path(tmp) / "q.txt"), str(Path(tmp) / "s.run")])
    return {"python_bare_s": round(bare, 3), "nteval_help_s": round(helps, 3), "nteval_evaluate_s": round(ev, 3),
            "ratio": round(helps / bare, 2)}


#: Every scratch directory of a run lives under one temporary root, removed however the run ends
#: (an error, Ctrl-C or SIGTERM), so `make bench` leaves nothing in /tmp.
_ROOT: Path | None = None


def _scratch(name: str) -> Path:
    assert _ROOT is not None, "scratch directories exist only inside main()"
    path = _ROOT / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def parse_args(argv: list[str] | None = None):
    """The options: without one, every benchmark runs (about 15 minutes on 2 cores)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="benchmarks/run.py", description="nteval's benchmarks: each a ratio against a named baseline measured in "
        "the same run on the same input (../shared/data PubMed files when present, else the bundled sample). "
        "Without an option every benchmark runs and benchmarks/out/results.json is written.")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--search-only", action="store_true", help="index once (not timed), then only the search benchmark")
    only.add_argument("--dense-only", action="store_true", help="only the dense benchmark (benchmarks/dense.py)")
    only.add_argument("--neural-only", action="store_true", help="only the neural benchmark (benchmarks/neural.py: "
                      "all-MiniLM-L6-v2's encoding of both indexes; needs the neural extra)")
    parser.add_argument("--install", action="store_true", help="with --neural-only: also time what the neural extra "
                        "adds to a fresh venv (pip install; about a minute)")
    parser.add_argument("--keep-index", type=Path, help="with --neural-only: an index of the inputs already built (its "
                        "dense cache is filled and kept), instead of a throwaway one")
    only.add_argument("--pin-scale-only", action="store_true", help="only the fair pin at PubMed scale (benchmarks/"
                      "pin_scale.py: a 1,000-topic pin, fair vs lexical references, stage by stage, 1M projection; "
                      "--keep-index: an index of both shared PubMed files; needs the neural extra)")
    only.add_argument("--grid-only", action="store_true", help="only the grid benchmark (--jobs 2 vs 1, kill and resume)")
    only.add_argument("--parse-index-only", action="store_true", help="only the parse and index ratios")
    return parser.parse_args(argv)


def main() -> None:
    global _ROOT, _ARGS
    import signal

    _ARGS = parse_args()

    def _term(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _term)
    with tempfile.TemporaryDirectory(prefix="nteval-bench-") as root:
        _ROOT = Path(root)
        _main()


_ARGS = None


def _indexed(sources: list[Path]) -> Path:
    """The sources indexed once (not timed) for a benchmark run on its own."""
    keep = _scratch("kept") / "idx"
    subprocess.run([sys.executable, "-m", "nteval.cli", "index", *map(str, sources), "--out", str(keep), "--quiet"],
                   check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return keep


def _print_parse(p: dict) -> None:
    if "ratio" in p:
        print(f"parse      {p['file']}: nteval {p['nteval_rec_s']:,} rec/s vs pubmed_parser {p['pubmed_parser_rec_s']:,} rec/s"
              f"  → {p['ratio']}× faster (goal ≥ 3.5×); with sentence splitting {p['nteval_with_sentences_rec_s']:,} rec/s → "
              f"{p['ratio_with_sentences']}×")
    else:
        print(f"parse      nteval {p['nteval_rec_s']:,.0f} rec/s ({p['note']})")


def _print_index(i: dict) -> None:
    print(f"index      {i['documents']:,} docs: nteval index (median of {i['repeat']}) {i['nteval_median_s']} s vs Anserini "
          f"IndexCollection (pyserini's indexer) on the pre-built all+nt JsonCollections {i['pyserini_median_s']} s  → ratio "
          f"{i['median_ratio']} (goal ≤ 1.1)\n           runs: nteval {i['nteval_index_s']}  pyserini "
          f"{i['pyserini_index_all_plus_nt_s']}\n"
          f"           CPU: nteval {i['nteval_cpu_s']} s (parse, sentences, store and both indexes), the indexer "
          f"{i['pyserini_cpu_s']} s (both indexes from JSON): on {i['cores']} cores nteval cannot finish under "
          f"{i['nteval_floor_s']} s = {i['floor_ratio']}× the baseline, however it overlaps its work\n"
          f"           end to end from the same XML: pubmed_parser → JsonCollections → the indexer "
          f"{i['pyserini_pipeline_s']} s (pubmed_parser {i.get('pubmed_parser_s')} s, {i.get('pipeline_documents')} docs) "
          f"→ nteval index takes {i['end_to_end_ratio']}× that")


def _main() -> None:
    parse_file, index_sources = inputs()
    if _ARGS.search_only:  # quick: index the sources once, then only the search benchmark
        keep = _indexed(index_sources)
        q = bench_search(keep)
        shutil.rmtree(keep.parent, ignore_errors=True)
        _print_search(q)
        return
    if _ARGS.dense_only:
        from benchmarks.dense import bench_dense, print_dense

        keep = _indexed(index_sources)
        print_dense(bench_dense(keep, _scratch("dense")))
        shutil.rmtree(keep.parent, ignore_errors=True)
        return
    if _ARGS.neural_only:
        import json

        from benchmarks.neural import bench_install, bench_neural, print_neural

        keep = _ARGS.keep_index or _indexed(index_sources)
        r = bench_neural(keep, _scratch("neural"), keep_cache=None if _ARGS.keep_index is None else keep / "dense")
        if _ARGS.install:
            r["install"] = bench_install(_scratch("install"))
        print_neural(r)
        out = ROOT / "benchmarks" / "neural.json"
        out.write_text(json.dumps({"inputs": [p.name for p in index_sources], **r}, indent=2) + "\n")
        if _ARGS.keep_index is None:
            shutil.rmtree(keep.parent, ignore_errors=True)
        return
    if _ARGS.pin_scale_only:
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "pin_scale.py"),
                        *(["--index", str(_ARGS.keep_index)] if _ARGS.keep_index else [])], check=True)
        return
    if _ARGS.grid_only:
        keep = _indexed(index_sources)
        _print_grid(bench_grid(keep))
        shutil.rmtree(keep.parent, ignore_errors=True)
        return
    results = {"machine": {"cores": os.cpu_count(), "python": sys.version.split()[0]}}
    if _ARGS.parse_index_only:  # the two corpus ratios of issue 15, nothing else
        _print_parse(bench_parse(parse_file))
        _print_index(bench_index(index_sources))
        return
    results["startup"] = s = bench_startup()
    print(f"start-up   nteval --help {s['nteval_help_s']:.3f} s, nteval evaluate (tiny run) {s['nteval_evaluate_s']:.3f} s "
          f"vs python -c pass {s['python_bare_s']:.3f} s  (goal ≤ 2 s, no JVM/torch)")
    results["parse"] = p = bench_parse(parse_file)
    _print_parse(p)
    keep = _scratch("kept") / "idx"
    results["index"] = i = bench_index(index_sources, keep=keep)
    _print_index(i)
    results["search"] = q = bench_search(keep)
    results["grid"] = g = bench_grid(keep)
    from benchmarks.dense import bench_dense, print_dense

    results["dense"] = d = bench_dense(keep, _scratch("dense"))
    shutil.rmtree(keep.parent, ignore_errors=True)
    _print_search(q)
    _print_grid(g)
    print_dense(d)
    out = ROOT / "benchmarks" / "out"
    out.mkdir(exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
