"""Dense-retrieval benchmark (``benchmarks/run.py --dense-only``; part of ``make bench``), each
number beside a baseline measured in the same process on the same input:

1. encoding (documents/s): nteval's ``document_vectors`` (sqlite stream, parts of 8,192, atomic
   writes, the final .npy and its reload) vs the same wordllama encoder called directly
   (``encoder.embed`` in batches of 256, as nteval batches) on the same ``nt`` abstracts held in a list;
2. search at depth 1,000 (queries/s): FAISS flat (nteval's ``faiss_index`` + ``search``) vs a numpy
   brute force (``Q @ D.T`` in blocks, ``argpartition``, sort of the top k) on the same vectors and
   the same 1,000 encoded titles, with the overlap of their top-1,000 sets; then IVF and HNSW
   (nteval's defaults, then wider nprobe / efSearch) with their recall@1000 against flat;
3. memory: growth of the process's resident set (``VmRSS`` in /proc/self/status, after glibc's
   ``malloc_trim``) around each step, per vector, projected to a million vectors (float32 and float16
   storage); the .npy and FAISS file sizes on disk.

Vectors are cached under ``$NTEVAL_DENSE_CACHE`` pointed into the caller's scratch directory, so
nothing is written beside the index and every encoding is a real one.
"""
from __future__ import annotations

import contextlib
import gc
import os
import resource
import time
from pathlib import Path

import numpy as np

MODEL, DIM = "wordllama", 256
BATCH = 256  # nteval's _encode hands the encoder 256 texts at a time
DEPTH = 1000
#: nteval's default dense parameters (nteval/systems/base.py), flat swapped in where needed.
PARAMS = {"index": "flat", "nlist": 0, "nprobe": 0, "hnsw_m": 32, "ef_search": 0}  # 0: nteval's automatic choice


# -- the baseline and the checks (tested in tests/systems/test_dense.py) ---------------------------------

def numpy_topk(queries: np.ndarray, docs: np.ndarray, k: int, block: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product top ``k`` by brute force: (scores, rows), best first, like FAISS's
    ``index.search`` (``k`` is capped at the number of documents)."""
    n = docs.shape[0]
    k = max(1, min(int(k), n))
    scores = np.empty((len(queries), k), dtype=np.float32)
    rows = np.empty((len(queries), k), dtype=np.int64)
    for s in range(0, len(queries), block):
        sc = queries[s:s + block] @ docs.T
        top = np.argpartition(sc, n - k, axis=1)[:, n - k:] if k < n else np.tile(np.arange(n), (len(sc), 1))
        top_scores = np.take_along_axis(sc, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        rows[s:s + block] = np.take_along_axis(top, order, axis=1)
        scores[s:s + block] = np.take_along_axis(top_scores, order, axis=1)
    return scores, rows


def set_overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per query, the share of ``b``'s result set (rows ≥ 0) found in ``a``'s: recall of ``a``
    against ``b`` when ``b`` is the exact search."""
    out = np.empty(len(a))
    for i, (x, y) in enumerate(zip(a, b)):
        truth = set(y[y >= 0].tolist())
        out[i] = len(set(x[x >= 0].tolist()) & truth) / max(1, len(truth))
    return out


def differences_at_boundary(queries: np.ndarray, docs: np.ndarray, a: np.ndarray, b: np.ndarray,
                            tol: float = 1e-5) -> tuple[int, int]:
    """(queries whose two top-k sets differ, of them those where every document in only one set
    scores within ``tol`` of the k-th best score, computed in float64: ties or rounding at the
    boundary, not a different ranking)."""
    differ = at_boundary = 0
    docs64 = None
    for i, (x, y) in enumerate(zip(a, b)):
        only = set(x.tolist()) ^ set(y.tolist())
        if not only:
            continue
        differ += 1
        docs64 = docs.astype(np.float64) if docs64 is None else docs64
        exact = docs64 @ queries[i].astype(np.float64)
        kth = np.sort(exact)[::-1][len(y) - 1]
        if all(abs(exact[j] - kth) <= tol for j in only):
            at_boundary += 1
    return differ, at_boundary


def rss_bytes() -> int:
    """The resident set now (``VmRSS``); where /proc is missing, the peak (``ru_maxrss``), which
    also grows by what a step keeps when steps only add memory."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: kB (macOS reports bytes)


_LIBC = None


def release_free_memory() -> bool:
    """Hand the allocator's free memory back to the system (glibc ``malloc_trim(0)``, which also
    drops the pages of free chunks inside the heap), so the resident set counts only live memory: a
    step that reuses freed heap then shows its growth, and its freed temporaries do not. False where
    that is not glibc (the deltas are then approximate)."""
    global _LIBC
    import ctypes
    import ctypes.util

    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        _LIBC.malloc_trim(0)
        return True
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def _rss_growth(into: dict, key: str):
    gc.collect()
    release_free_memory()
    before = rss_bytes()
    yield
    gc.collect()
    release_free_memory()
    into[key] = rss_bytes() - before


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


# -- the benchmark ------------------------------------------------------------------------------------

def bench_dense(index_dir: Path, work: Path, n_queries: int = 1000, repeat: int = 2, synthetic: int = 100_000) -> dict:
    """All three parts on one nteval index; ``work`` is an empty scratch directory the caller removes."""
    from nteval.corpus.store import DocStore
    from nteval.encoders import models, store
    from nteval.index import read_manifest
    from nteval.systems import dense
    from nteval.topics.focused import focused_topics
    from nteval.topics.sample import SampleSpec, sample_ids

    fingerprint = read_manifest(index_dir)["fingerprint"]
    encoder = models.load_encoder(MODEL, DIM)
    texts = [t for _d, t in store.index_texts(index_dir, "nt")]
    n = len(texts)
    old_cache = os.environ.get("NTEVAL_DENSE_CACHE")
    out: dict = {"documents": n, "model": encoder.id, "dim": encoder.dim, "threads": _threads()}
    try:
        # 1. encoding: alternate the two, best of `repeat`; nteval's into a fresh cache directory each time
        encoder.embed(texts[:BATCH])  # warm-up (tokenizer, pages of the embedding table)
        direct, ours = [], []
        for r in range(repeat):
            t = time.perf_counter()
            base = np.concatenate([encoder.embed(texts[i:i + BATCH]) for i in range(0, n, BATCH)])
            direct.append(time.perf_counter() - t)
            os.environ["NTEVAL_DENSE_CACHE"] = str(work / f"cache-{r}")
            store._VECTORS.clear()
            t = time.perf_counter()
            vec = store.document_vectors(index_dir, "nt", fingerprint, encoder, "float32", progress=False)
            ours.append(time.perf_counter() - t)
        out["encoding"] = {"direct_docs_s": round(n / min(direct), 1), "nteval_docs_s": round(n / min(ours), 1),
                           "direct_s": [round(x, 2) for x in direct], "nteval_s": [round(x, 2) for x in ours],
                           "ratio": round(min(direct) / min(ours), 2),
                           "same_vectors": bool(np.array_equal(base, vec.matrix))}
        del base
        for r in range(repeat - 1):  # keep the last cache only
            _rmtree(work / f"cache-{r}")

        # 2. search at depth 1,000: the titles of sampled documents, encoded once
        ids, _ = sample_ids(index_dir, SampleSpec(n=n_queries, seed=1))
        store = DocStore(index_dir / "docs.sqlite")
        topics, _ = focused_topics(store, ids)
        store.close()
        q = encoder.embed(list(topics.values()))
        live = np.linalg.norm(q, axis=1) > 0  # a title with no known token matches nothing (nteval returns nothing)
        q = np.ascontiguousarray(q[live])
        k = min(DEPTH, n)
        docs = vec.matrix
        dense._FAISS.clear()
        flat = dense.faiss_index(vec, PARAMS)
        search = {"queries": int(live.sum()), "queries_without_known_token": int((~live).sum()), "k": k}
        search_reps = max(repeat, 3)
        numpy_topk(q[:64], docs, k)  # warm-up of both
        dense.search(flat, q[:64], k)
        tb, (_sb, rows_np) = _best(lambda: numpy_topk(q, docs, k), search_reps)
        tf, (_sf, rows_flat) = _best(lambda: dense.search(flat, q, k), search_reps)
        ov = set_overlap(rows_flat, rows_np)
        differ, at_boundary = differences_at_boundary(q, docs, rows_flat, rows_np)
        search.update({"flat_q_s": round(len(q) / tf, 1), "numpy_q_s": round(len(q) / tb, 1),
                       "ratio": round(tb / tf, 2), "overlap_mean": round(float(ov.mean()), 6),
                       "overlap_min": round(float(ov.min()), 4), "queries_differing": differ,
                       "differing_only_at_boundary": at_boundary})
        for kind in ("ivf", "hnsw"):
            t = time.perf_counter()
            index = dense.faiss_index(vec, {**PARAMS, "index": kind})
            build = time.perf_counter() - t
            files = list(vec.dir.glob(f"{kind}*.faiss"))
            search[kind] = {"build_s": round(build, 1), "nlist": int(index.nlist) if kind == "ivf" else None,
                            "file_bytes_per_vector": round(files[0].stat().st_size / n, 1) if files else None,
                            "settings": []}
            # nteval's default (0: chosen from the depth, see dense.search_settings) first, then
            # fixed settings: 16 IVF lists of ~n/nlist documents each can hold fewer than the 1,000
            # documents a ranking needs, and an HNSW candidate list shorter than the depth caps recall
            knob = "nprobe" if kind == "ivf" else "ef_search"
            values = [0] + ([v for v in (16, 64, 256) if v < index.nlist] if kind == "ivf" else [128, k])
            for value in values:
                index = dense.faiss_index(vec, {**PARAMS, "index": kind})
                value = dense.search_settings(index, {**PARAMS, "index": kind, knob: value}, k)[knob]
                dense.search(index, q[:64], k)
                ta, (_s, rows) = _best(lambda: dense.search(index, q, k), search_reps)
                search[kind]["settings"].append({
                    knob: value, "q_s": round(len(q) / ta, 1),
                    "recall_vs_flat": round(float(set_overlap(rows, rows_flat).mean()), 4),
                    "results_per_query": round(float((rows >= 0).sum(axis=1).mean()), 1)})
        out["search"] = search

        # 3. memory: vectors as nteval holds them (float32 rows; float16 storage is widened on load),
        # the flat index (FAISS keeps its own copy), a larger synthetic set for a cleaner slope
        store._VECTORS.clear()
        del vec, docs, flat, index
        dense._FAISS.clear()
        gc.collect()
        exact = release_free_memory()
        mem: dict = {}
        with _rss_growth(mem, "vectors_float32_bytes"):
            v32 = store.document_vectors(index_dir, "nt", fingerprint, encoder, "float32", progress=False)
        with _rss_growth(mem, "flat_index_bytes"):
            dense.faiss_index(v32, PARAMS)
        with _rss_growth(mem, "vectors_float16_bytes"):
            v16 = store.document_vectors(index_dir, "nt", fingerprint, encoder, "float16", progress=False)
        with _rss_growth(mem, "flat_float16_index_bytes"):
            dense.faiss_index(v16, PARAMS)
        f16 = v16.dir / "vectors-float16.npy"
        f32 = v32.dir / "vectors-float32.npy"
        del v32, v16
        store._VECTORS.clear()
        dense._FAISS.clear()
        gc.collect()
        rng = np.random.default_rng(0)
        synth = rng.standard_normal((synthetic, DIM), dtype=np.float32)
        synth /= np.linalg.norm(synth, axis=1, keepdims=True)
        with _rss_growth(mem, "synthetic_flat_bytes"):
            dense.faiss_index(store.Vectors(work / "synthetic", [], synth, {}, "float32"), PARAMS)
        dense._FAISS.clear()
        del synth
        gc.collect()
        per = {key: round(val / n, 1) for key, val in mem.items() if key != "synthetic_flat_bytes"}
        per["synthetic_flat"] = round(mem["synthetic_flat_bytes"] / synthetic, 1)
        ram32 = per["vectors_float32_bytes"] + per["flat_index_bytes"]
        ram16 = per["vectors_float16_bytes"] + per["flat_float16_index_bytes"]
        out["memory"] = {
            "method": "VmRSS growth (/proc/self/status) around each step, gc.collect() before and after, divided by the vectors"
                      + ("; glibc malloc_trim(0) before each reading, so freed memory leaves the RSS" if exact else ""),
            "rss_growth_bytes": mem, "bytes_per_vector": per, "synthetic_vectors": synthetic,
            "theory_float32_row": DIM * 4, "npy_float32_bytes_per_vector": round(f32.stat().st_size / n, 1),
            "npy_float16_bytes_per_vector": round(f16.stat().st_size / n, 1),
            "ram_flat_float32_per_vector": round(ram32, 1), "ram_flat_float16_per_vector": round(ram16, 1),
            "gb_per_million": {"ram_flat_float32": round(ram32 * 1e6 / 1e9, 2), "ram_flat_float16": round(ram16 * 1e6 / 1e9, 2),
                               "disk_float32": round(f32.stat().st_size / n * 1e6 / 1e9, 2),
                               "disk_float16": round(f16.stat().st_size / n * 1e6 / 1e9, 2),
                               "ivf_file": _gb(search["ivf"]["file_bytes_per_vector"]),
                               "hnsw_file": _gb(search["hnsw"]["file_bytes_per_vector"])},
        }
    finally:
        store._VECTORS.clear()
        dense._FAISS.clear()
        if old_cache is None:
            os.environ.pop("NTEVAL_DENSE_CACHE", None)
        else:
            os.environ["NTEVAL_DENSE_CACHE"] = old_cache
    return out


def _gb(per_vector: float | None) -> float | None:
    return None if per_vector is None else round(per_vector * 1e6 / 1e9, 2)


def _threads() -> dict:
    from nteval.systems.dense import _faiss

    return {"faiss_omp": _faiss().omp_get_max_threads(), "cpus": os.cpu_count()}


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def print_dense(d: dict) -> None:
    e, s, m = d["encoding"], d["search"], d["memory"]
    iv, hn, per, gb = s["ivf"], s["hnsw"], m["bytes_per_vector"], m["gb_per_million"]

    def settings(x: dict, knob: str, label: str) -> str:
        return ", ".join(f"{label} {y[knob]} {y['q_s']:,} q/s recall {y['recall_vs_flat']:.3f} ({y['results_per_query']:.0f} hits/q)"
                         for y in x["settings"])

    print(f"dense      {d['documents']:,} nt abstracts, wordllama {d['dim']}-d: nteval document_vectors {e['nteval_docs_s']:,.0f} docs/s "
          f"vs encoder.embed direct {e['direct_docs_s']:,.0f} docs/s  → {e['ratio']:.0%} (nteval's overhead: sqlite, parts, "
          f"atomic writes; same vectors: {e['same_vectors']})\n"
          f"           {s['queries']:,} titles, depth {s['k']}: FAISS flat {s['flat_q_s']:,} q/s vs numpy brute force "
          f"{s['numpy_q_s']:,} q/s  → {s['ratio']}×; same top-{s['k']} sets: overlap {s['overlap_mean']:.4%} "
          f"(min {s['overlap_min']:.1%}; {s['queries_differing']} queries differ, {s['differing_only_at_boundary']} of them only "
          f"by ties at the boundary)\n"
          f"           IVF (nlist {iv['nlist']}, built in {iv['build_s']} s): {settings(iv, 'nprobe', 'nprobe')}\n"
          f"           HNSW (M {PARAMS['hnsw_m']}, built in {hn['build_s']} s): {settings(hn, 'ef_search', 'efSearch')}  "
          f"(recall@{s['k']} vs flat; first = nteval's default; builds on 1 thread)\n"
          f"           memory (growth of VmRSS per vector around each step, after malloc_trim): vectors {per['vectors_float32_bytes']:.0f} B + flat index "
          f"{per['flat_index_bytes']:.0f} B (synthetic {m['synthetic_vectors']:,}: {per['synthetic_flat']:.0f} B) → "
          f"{gb['ram_flat_float32']} GB per 1M vectors; float16 storage {per['vectors_float16_bytes']:.0f} + "
          f"{per['flat_float16_index_bytes']:.0f} B → {gb['ram_flat_float16']} GB (rows widened to float32 on load)\n"
          f"           on disk per 1M: float32 .npy {gb['disk_float32']} GB, float16 .npy {gb['disk_float16']} GB, "
          f"IVF {gb['ivf_file']} GB, HNSW {gb['hnsw_file']} GB")
