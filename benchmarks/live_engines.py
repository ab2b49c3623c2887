#!/usr/bin/env python3
"""The live-engine kinds against plain clients of the same engines (``python benchmarks/live_engines.py [INDEX]``).

Measured in one run, on the same sampled titles (focused D0, seed 42) over the same documents (the
``nt`` index), depth 1,000; each kind's run starts from an empty answer cache (it asks everything):

1. ``http`` (Elasticsearch preset) vs a plain client — urllib3's pooled connections, ``json.loads``,
   ids and scores read from ``hits.hits`` — at concurrency 1 and 8, against the same server: a
   process answering Lucene BM25's recorded answers in Elasticsearch's shape
   (tests/engine_server.py). Goal: the kind ≥ 90 % of the plain client's queries/s.
2. ``postgres`` vs the same SQL sent through psycopg directly, 4 connections each (a real
   PostgreSQL server started for the benchmark, tests/servers.py).
3. ``sqlite_fts5`` vs the same FTS5 queries in a plain ``sqlite3`` loop over the kind's own table,
   one thread each.

The two sides take turns (5 rounds; 3 for PostgreSQL): queries/s are each side's best run, the
ratio is the median over the rounds of the kind's queries/s over the baseline's in the same round
(on a machine shared with other work, neighbours are slowed alike); the client's CPU milliseconds
per query are recorded beside the http figures. The kinds' times are their whole ``run`` (cache, asking,
checks, id mapping, validation against the collection). Writes benchmarks/live_engines.json.
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
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]
SHARED = Path(os.environ.get("NTEVAL_SHARED_DATA", ROOT.parent / "shared" / "data")) / "medline" / "pubmed_baseline_update"
DEPTH, N, N_PG, REPEAT = 1000, 1000, 200, 3


def pair(a, b, n: int, repeat: int = REPEAT) -> tuple[dict, dict, float]:
    """``a`` and ``b`` run in turn ``repeat`` times (a, b, a, b…); for each, the best queries/s and
    the CPU milliseconds per query this process spent in its best run (all threads; an engine's
    server is another process); and the median over the rounds of b's queries/s over a's in the
    same round (two runs a few seconds apart: on a machine shared with other work, the ratio of
    neighbours is steadier than a ratio of bests)."""
    import statistics

    out: list[dict] = [{"qps": 0.0}, {"qps": 0.0}]
    ratios = []
    for _ in range(repeat):
        qps = []
        for i, fn in enumerate((a, b)):
            t, c = time.perf_counter(), time.process_time()
            fn()
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            qps.append(n / wall)
            if n / wall > out[i]["qps"]:
                out[i] = {"qps": round(n / wall, 1), "cpu_ms_per_query": round(cpu / n * 1000, 3)}
        ratios.append(qps[1] / qps[0])
    return out[0], out[1], round(statistics.median(ratios), 3)


def the_index(arg: str | None) -> Path:
    from engines import the_index as shared_index  # (benchmarks/engines.py: the two shared files, or the sample)

    return shared_index(arg)


def titles(index_dir: Path, n: int) -> dict[str, str]:
    from nteval.protocols import get

    proto = get("focused")
    return proto.build(index_dir, proto.Spec(n_topics=n, seed=42), Path(tempfile.mkdtemp())).topics


def kind_run(target, system, topics: dict[str, str], threads: int = 1) -> dict:
    """One run of the kind from an empty answer cache (a fresh NTEVAL_ENGINE_CACHE for the answers;
    FTS5's table is built once, before timing)."""
    from nteval.systems.execute import run_system

    return run_system(target, system, topics, DEPTH, threads=threads)


def main() -> None:
    import psycopg
    import urllib3
    from engine_server import Faults, LuceneBackend, RecordedBackend, start_process

    import servers
    from nteval.index import read_manifest
    from nteval.systems.execute import Target
    from nteval.systems.sqlite_fts5 import fts_index, fts_query
    from nteval.systems.system import make_system

    index_dir = the_index(sys.argv[1] if len(sys.argv) > 1 else None)
    manifest = read_manifest(index_dir)
    queries = titles(index_dir, N)
    texts = list(dict.fromkeys(queries.values()))
    out: dict = {"index": str(index_dir), "documents_nt": manifest["indexes"]["nt"]["documents"], "queries": len(queries),
                 "depth": DEPTH, "cores": os.cpu_count(), "repeat": REPEAT, "qps": {}, "ratio": {}}
    work = Path(tempfile.mkdtemp(prefix="nteval-live-"))
    target = Target(index_dir, "nt", manifest["fingerprint"], progress=False)

    def fresh_cache() -> None:
        os.environ["NTEVAL_ENGINE_CACHE"] = tempfile.mkdtemp(dir=work)

    # -- 1. http vs a plain urllib3 client, same server process ----------------------------------------
    lucene = LuceneBackend(index_dir)
    (work / "answers.json").write_text(json.dumps(RecordedBackend.record(lucene, texts, DEPTH).answers))
    lucene.close()
    proc, url = start_process(work / "answers.json", work / "port", Faults())
    try:
        for conc in (1, 8):
            system = make_system("es", "http", {"preset": "elasticsearch", "url": url + "/pubmed", "field": "abstract",
                                                "concurrency": conc})
            pool = urllib3.PoolManager(maxsize=conc, block=True, retries=False)
            search_url = url + "/pubmed/_search?search_type=dfs_query_then_fetch"

            def plain_one(text: str, pool=pool) -> list:
                body = json.dumps({"query": {"match": {"abstract": {"query": text, "operator": "or"}}}, "size": DEPTH,
                                   "_source": False, "track_total_hits": True}).encode()
                r = pool.request("POST", search_url, body=body, headers={"Content-Type": "application/json"})
                return [(h["_id"], h["_score"]) for h in json.loads(r.data)["hits"]["hits"]]

            def plain(conc=conc) -> None:
                with ThreadPoolExecutor(conc) as ex:
                    list(ex.map(plain_one, [queries[q] for q in queries]))

            def kind(system=system) -> None:
                fresh_cache()
                kind_run(target, system, queries)

            plain()  # warm both sides and the server
            kind()
            base, ours, ratio = pair(plain, kind, len(queries), 5)
            out["qps"][f"plain_http@{conc}"], out["qps"][f"http_kind@{conc}"] = base["qps"], ours["qps"]
            out.setdefault("cpu_ms_per_query", {}).update({f"plain_http@{conc}": base["cpu_ms_per_query"],
                                                          f"http_kind@{conc}": ours["cpu_ms_per_query"]})
            out["ratio"][f"http@{conc}"] = ratio
            print(json.dumps(out["qps"]), flush=True)
    finally:
        proc.kill()
        proc.wait()

    # -- 2. postgres vs psycopg directly ---------------------------------------------------------------
    bindir, why = servers.postgres_binaries()
    if bindir is None:
        out["postgres"] = f"skipped: {why}"
    else:
        pg = servers.start_postgres(bindir)
        try:
            os.environ["PGPASSWORD"] = servers.PASSWORD
            few = dict(list(queries.items())[:N_PG])
            system = make_system("pg", "postgres", {"url": pg.url(), "concurrency": 4})
            fresh_cache()
            t0 = time.perf_counter()
            kind_run(target, system, {q: few[q] for q in list(few)[:5]})  # loads nteval's table
            out["postgres_load_seconds"] = round(time.perf_counter() - t0, 2)
            from nteval.systems.postgres import own_table

            table = own_table("nt", "english", manifest["fingerprint"])
            sql = (f"SELECT docid, ts_rank(tsv, x.q, 0) AS score FROM {table} , (SELECT replace(replace("
                   "websearch_to_tsquery('english'::regconfig, %s)::text, ' & ', ' | '), '!', '')::tsquery AS q) x "
                   "WHERE tsv @@ x.q ORDER BY score DESC, docid LIMIT %s")
            import threading

            local = threading.local()
            conns: list = []

            def direct() -> None:
                def one(text):  # (a connection per thread, as the kind has)
                    if getattr(local, "conn", None) is None:
                        local.conn = psycopg.connect(pg.url(), autocommit=True)
                        conns.append(local.conn)
                    return local.conn.execute(sql, (text, DEPTH)).fetchall()

                with ThreadPoolExecutor(4) as ex:
                    list(ex.map(one, few.values()))
                while conns:
                    conns.pop().close()
                local.__dict__.clear()

            def kind_pg() -> None:
                fresh_cache()
                kind_run(target, system, few)

            base, ours, ratio = pair(direct, kind_pg, len(few), 3)
            out["qps"]["psycopg_direct@4"], out["qps"]["postgres_kind@4"] = base["qps"], ours["qps"]
            out["ratio"]["postgres@4"] = ratio
            out["postgres_queries"] = len(few)
            print(json.dumps(out["qps"]), flush=True)
        finally:
            pg.stop()

    # -- 3. sqlite_fts5 vs a plain sqlite3 loop over the same table ------------------------------------
    import sqlite3

    system = make_system("fts", "sqlite_fts5")
    fresh_cache()
    t0 = time.perf_counter()
    where, _ = fts_index(target, "porter", "lucene", False)
    out["fts5_build_seconds"] = round(time.perf_counter() - t0, 2)
    from nteval.corpus.store import index_docids

    docids = index_docids(index_dir, "nt")

    def plain_fts() -> None:
        db = sqlite3.connect(f"file:{where / 'fts.sqlite'}?mode=ro", uri=True)
        for text in queries.values():
            q = fts_query(text, "lucene", "or")
            [(docids[r - 1], -s) for r, s in db.execute("SELECT rowid, bm25(docs, 1.0) s FROM docs WHERE docs MATCH ? "
                                                        "ORDER BY s LIMIT ?", (q, DEPTH))]
        db.close()

    def kind_fts() -> None:
        kind_run(target, system, queries, threads=1)

    plain_fts()
    base, ours, ratio = pair(plain_fts, kind_fts, len(queries), 5)
    out["qps"]["plain_sqlite3@1"], out["qps"]["sqlite_fts5_kind@1"] = base["qps"], ours["qps"]
    out["ratio"]["sqlite_fts5@1"] = ratio
    target.close()
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2))
    (ROOT / "benchmarks" / "live_engines.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
