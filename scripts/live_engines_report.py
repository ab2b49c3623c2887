#!/usr/bin/env python3
"""The live-engine kinds side by side with Lucene BM25 on a real index (docs/live-engines.md).

``python scripts/live_engines_report.py INDEX OUT [--topics 1000]``: starts a PostgreSQL server
(tests/servers.py) and an HTTP engine answering from nteval's Lucene BM25 in Elasticsearch's
shape (tests/engine_server.py, its own process), writes OUT/systems.yaml, runs ``nteval focused``
and ``nteval highrecall`` with it (the commands are printed), then prints the scores, the verdict
groups, how far each kind's top 10 is from Lucene's, and what each analyzer makes of a few words.
INDEX is written to (engine caches in INDEX/engines/): use a copy of a shared index.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from nteval.atomic import write_text as atomic_write

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

SYSTEMS = """\
- {{name: lucene_bm25, algorithm: bm25}}
- {{name: lucene_bm25_k1.2_b0.75, algorithm: bm25, params: {{k1: 1.2, b: 0.75}}}}
- {{name: sqlite_fts5, algorithm: sqlite_fts5}}
- {{name: sqlite_fts5_nostops, algorithm: sqlite_fts5, params: {{stops: none}}}}
- {{name: postgres_or, algorithm: postgres, params: {{url: "{pg}"}}}}
- {{name: postgres_or_cd, algorithm: postgres, params: {{url: "{pg}", rank: ts_rank_cd, normalization: 1}}}}
- {{name: postgres_and, algorithm: postgres, params: {{url: "{pg}", operator: and}}}}
- {{name: http_es_lucene, algorithm: http, params: {{preset: elasticsearch, url: "{es}/pubmed", field: abstract, concurrency: 4}}}}
"""
WORDS = ["generously", "studies", "COVID-19", "IL-6", "β-blockers", "non-small-cell", "don't", "between", "was",
         "children's", "HbA1c", "5-fluorouracil"]


def analyzers(index_dir: Path, pg_url: str) -> list[dict]:
    """Each word as Lucene, FTS5 (porter unicode61, Lucene's stop words) and PostgreSQL (english) index it."""
    import sqlite3

    import psycopg

    from nteval.lucene.searcher import Index
    from nteval.systems.sqlite_fts5 import without_stopwords

    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    rows = []
    with Index(index_dir / "nt") as idx, psycopg.connect(pg_url, autocommit=True) as pg:
        for i, w in enumerate(WORDS):
            db.execute("INSERT INTO t(rowid, x) VALUES (?, ?)", (i + 1, without_stopwords(w)))
            fts = [r[0] for r in db.execute("SELECT term FROM v WHERE doc = ? ORDER BY offset", (i + 1,))]
            vec = pg.execute("SELECT to_tsvector('english', %s)::text", (w,)).fetchone()[0]
            rows.append({"word": w, "lucene": idx.analyze(w), "fts5": fts, "postgres": vec})
    return rows


def overlap10(out: Path, base: str) -> dict[str, float]:
    """Mean share of each system's top 10 that is in ``base``'s top 10 (per topic)."""
    runs: dict[str, dict[str, list[str]]] = {}
    for f in (out / "runs").glob("*.run"):
        r: dict[str, list[str]] = {}
        for line in f.read_text().splitlines():
            q, _, d, rank, *_ = line.split()
            if int(rank) <= 10:
                r.setdefault(q, []).append(d)
        runs[f.stem] = r
    ref = runs[base]
    return {n: round(sum(len(set(r.get(q, [])) & set(ref[q])) / 10 for q in ref) / len(ref), 3) for n, r in sorted(runs.items())}


def differences(out: Path, measure: str, pairs: list[tuple[str, str]], examples: int = 3) -> dict:
    """For each (a, b): the topics where ``measure`` differs by more than 0.5, split by which side
    wins, with a few example topics (query, both values)."""
    import csv

    scores: dict[str, dict[str, float]] = {}
    with open(out / "per_topic.tsv", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["measure"] == measure:
                scores.setdefault(row["system"], {})[row["qid"]] = float(row["value"])
    texts = dict(line.split("\t", 1) for line in (out / "topics.tsv").read_text().splitlines() if "\t" in line)
    report = {}
    for a, b in pairs:
        if a not in scores or b not in scores:
            continue
        worse = [q for q in scores[a] if scores[b][q] < scores[a][q] - 0.5]
        better = [q for q in scores[a] if scores[b][q] > scores[a][q] + 0.5]
        report[f"{b} vs {a}"] = {
            "topics": len(scores[a]), f"{b} much worse": len(worse), f"{b} much better": len(better),
            "examples_worse": [{"qid": q, "query": texts.get(q, "")[:140], a: scores[a][q], b: scores[b][q]}
                               for q in worse[:examples]],
            "examples_better": [{"qid": q, "query": texts.get(q, "")[:140], a: scores[a][q], b: scores[b][q]}
                                for q in better[:examples]]}
    return report


PAIRS = [("lucene_bm25_k1.2_b0.75", "sqlite_fts5"), ("sqlite_fts5", "sqlite_fts5_nostops"),
         ("lucene_bm25", "postgres_or"), ("postgres_or", "postgres_and"), ("lucene_bm25", "http_es_lucene")]


def main() -> None:
    import servers
    from engine_server import Faults  # noqa: F401  (the server module, started as a program below)

    ap = argparse.ArgumentParser()
    ap.add_argument("index", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--topics", type=int, default=1000)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    bindir, why = servers.postgres_binaries()
    if bindir is None:
        sys.exit(f"no PostgreSQL: {why}")
    pg = servers.start_postgres(bindir)
    os.environ["PGPASSWORD"] = servers.PASSWORD
    port_file = args.out / "engine.port"
    port_file.unlink(missing_ok=True)
    es = subprocess.Popen([sys.executable, str(ROOT / "tests" / "engine_server.py"), "--backend", "lucene", "--index",
                           str(args.index), "--port-file", str(port_file)], env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        while not port_file.is_file():
            if es.poll() is not None:
                sys.exit("the engine server did not start")
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        yaml = args.out / "systems.yaml"
        yaml.write_text(SYSTEMS.format(pg=pg.url(), es=url))
        report: dict = {"index": str(args.index), "topics": args.topics, "protocols": {}}
        for proto in ("focused", "highrecall"):
            out = args.out / proto
            cmd = [sys.executable, "-m", "nteval", proto, "--index", str(args.index), "--topics", str(args.topics),
                   "--systems", str(yaml), "--out", str(out), "--quiet"]
            print("$", " ".join(cmd[2:]), flush=True)
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
            res = json.loads((out / "results.json").read_text())
            measure = res["verdict"]["measure"]
            report["protocols"][proto] = {
                "seconds": round(time.perf_counter() - t0, 1), "measure": measure,
                "scores": {n: {m: s.get(m) for m in res["measures"]} for n, s in res["systems"].items()},
                "groups": res["verdict"]["groups"],
                "notes": {n: {k: v.get(k) for k in ("engine_version", "queries_per_s", "asked", "from_cache", "build_seconds")
                              if k in v} for n, v in res.get("system_notes", {}).items()},
                "top10_overlap_with_lucene_bm25": overlap10(out, "lucene_bm25"),
                "where_they_differ": differences(out, measure, PAIRS),
            }
        report["analyzers"] = analyzers(args.index, pg.url())
        atomic_write((args.out / "report.json"), json.dumps(report, indent=2) + "\n")
        print(json.dumps(report, indent=2))
    finally:
        es.kill()
        es.wait()
        pg.stop()


if __name__ == "__main__":
    main()
