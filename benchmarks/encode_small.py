"""The first encoding of a small collection on this machine's cores: MED (1,033 records, one part of
the store) encoded by one-thread processes whose tasks are cut the old way (fixed tasks of
``TASK`` = 1,024 documents: 1,024 + 9 on two processes; the baseline, measured in the same run) and
the new (:func:`nteval.encoders.parts.task_slices`: as many even tasks as a multiple of the processes).

    PYTHONPATH=. python benchmarks/encode_small.py [--index IDX] [--rounds 3]

Without ``--index`` it indexes ``../shared/data/med/corpus.jsonl`` into a temporary directory. Each
round encodes the index's ``all`` with the reference's encoder (all-MiniLM-L6-v2, ONNX int8, 128
word pieces) into a fresh cache per way, the ways alternating, the ONNX export made once before any
figure and copied into each cache (not timed). The vectors of the two ways are compared byte for
byte. Writes benchmarks/encode_small.json: seconds per round, the medians, and the new way's speed
over the old (old seconds / new seconds). Only the cut is the old one: the old code also started
min(cores, ⌈documents / TASK⌉) processes, the same as now on two cores for 1,025–2,048 documents.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "benchmarks" / "encode_small.json"


def old_slices(n: int, workers: int) -> list[slice]:
    """The cut before task_slices: tasks of TASK documents, the last one what is left."""
    from nteval.encoders.parts import TASK

    return [slice(k, min(k + TASK, n)) for k in range(0, n, TASK)]


def encode_once(index: Path, cache: Path, warm: Path, way: str) -> tuple[float, bytes]:
    from nteval.encode import encode_index
    from nteval.encoders import parts, store

    shutil.copytree(warm / "onnx", cache / "onnx", ignore=shutil.ignore_patterns(".lock", ".*.tmp-*"))
    os.environ["NTEVAL_DENSE_CACHE"] = str(cache)
    store._VECTORS.clear()
    keep = parts.task_slices
    if way == "old":
        parts.task_slices = old_slices
    try:
        t = time.perf_counter()
        encode_index(index, progress=False)
        seconds = time.perf_counter() - t
    finally:
        parts.task_slices = keep
    (vectors,) = cache.glob("all-*/vectors-*.npy")
    return seconds, vectors.read_bytes()


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--index", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds: at least 1")
    if a.index is not None and not (a.index / "manifest.json").is_file():
        ap.error(f"--index {a.index}: not an nteval index (no manifest.json)")
    from nteval.encoders.models import usable_cores
    from nteval.index import build_index, read_manifest

    with tempfile.TemporaryDirectory(prefix="encode-small-") as tmp:
        work = Path(tmp)
        index = a.index
        if index is None:
            corpus = ROOT.parent / "shared" / "data" / "med" / "corpus.jsonl"
            if not corpus.is_file():
                sys.exit(f"{corpus}: not found (give --index)")
            index = work / "med_idx"
            build_index([corpus], index)
        docs = read_manifest(index)["indexes"]["all"]["documents"]
        warm = work / "warm"
        os.environ["NTEVAL_DENSE_CACHE"] = str(warm)
        from nteval.encoders.models import encoder_params, load_encoder
        from nteval.protocols.highrecall import REFERENCE_SYSTEMS, neural_srefs
        from nteval.systems.base import make_system

        n = neural_srefs()[0]
        spec = encoder_params(make_system(n, *REFERENCE_SYSTEMS[n]).params)
        load_encoder(spec["model"], spec["dim"], n, spec["backend"], spec["max_tokens"]).embed(["warm"])
        seconds: dict[str, list[float]] = {"old": [], "new": []}
        vectors: dict[str, bytes] = {}
        for r in range(a.rounds):
            for way in (("old", "new") if r % 2 == 0 else ("new", "old")):
                s, v = encode_once(index, work / f"{way}{r}", warm, way)
                seconds[way].append(round(s, 2))
                vectors.setdefault(way, v)
                print(f"round {r + 1} {way}: {s:.1f} s", flush=True)
    med = {w: statistics.median(v) for w, v in seconds.items()}
    result = {"index": "MED (../shared/data/med)" if a.index is None else str(a.index), "documents": docs, "cores": usable_cores(), "machine": platform.processor() or platform.machine(),
              "encoder": f"{spec['model']} ({spec['backend']}, {spec['max_tokens']} word pieces)",
              "ways": {"old": "fixed tasks of TASK documents (baseline)", "new": "task_slices: even tasks, a multiple of the processes"},
              "seconds": seconds, "median_seconds": med, "new_over_old_speed": round(med["old"] / med["new"], 2),
              "vectors_byte_identical": vectors["old"] == vectors["new"]}
    OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("median_seconds", "new_over_old_speed", "vectors_byte_identical")}))


if __name__ == "__main__":
    main()
