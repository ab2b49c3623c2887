"""The first encoding of a collection here and on a Dask cluster (issue 58), and its acceptance check.

    PYTHONPATH=. python benchmarks/encode_cluster.py --index IDX [--mix IDX2]

1. **Ways to encode**: an index's ``all`` texts (the fair references' encoding: all-MiniLM-L6-v2,
   ONNX int8, 128 word pieces, each text alone) encoded by ``nteval encode`` into a fresh cache each
   time: in one process of two threads (``NTEVAL_ENCODER_THREADS=2``, the default until now: the
   baseline, measured in the same run), here in one-thread processes (the default now), and with
   ``--scheduler`` on clusters started with dask's own commands: one worker process of one thread,
   two of one thread each. Records per second, per CPU-second for the workers, and the scaling
   efficiency from one worker to two.
2. **Acceptance**: a 1,000-topic pin (seed 42) after the local encoding and after the two-worker
   one: their topics and judgments byte-identical, and neither encodes anything; every way's vectors
   byte-identical; the cluster's wall time against one process's; each pin after ``encode``
   against a lexical pin (``--preset lexical``) of the same topics.
3. **Projection** (marked projected: no such cluster was measured): encoding 1M and 36M records on N
   two-core workers at the two-worker rate measured here, for this file's mix of records and each
   ``--mix`` index's (another share of records with an abstract), and a first fair 1M-record pin.

The encoding goes out in tasks of at most ``nteval.encoders.parts.TASK`` documents: an index of fewer than
two parts of ``nteval.encoders.store.PART`` (the bundled sample: 1,997 records) is refused. The
shared PubMed baseline file (30,000 records, 4 parts) with the update file as ``--mix`` takes about
20 minutes on 2 cores. Writes benchmarks/encode_cluster.json.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
#: the projection's unit: a 1M-record index
MILLION = 1_000_000
#: where the reference's ONNX export is made once (main() sets it): every encoding and worker starts from a copy
WARM = Path()


def _encode(cache: Path, index: Path, scheduler: str | None, env: dict[str, str]) -> float:
    """Seconds of ``nteval encode`` into the fresh cache ``cache`` (given the ONNX export made once: not timed)."""
    shutil.copytree(WARM / "onnx", cache / "onnx")
    t = time.perf_counter()
    subprocess.run([str(BIN / "nteval"), "encode", "--index", str(index), "--quiet",
                    *(["--scheduler", scheduler] if scheduler else [])], check=True, stdout=subprocess.DEVNULL,
                   env={**env, "NTEVAL_DENSE_CACHE": str(cache)})
    return time.perf_counter() - t


def _cluster(where: Path, workers: int, env: dict[str, str]) -> tuple[str, list[subprocess.Popen]]:
    dask = BIN / "dask"
    procs = [subprocess.Popen([str(dask), "scheduler", "--scheduler-file", str(where / "s.json"), "--port", "0",
                               "--dashboard-address", ":0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=env, start_new_session=True)]
    while not (where / "s.json").exists():
        time.sleep(0.2)
    procs.append(subprocess.Popen([str(dask), "worker", "--scheduler-file", str(where / "s.json"), "--nworkers",
                                   str(workers), "--nthreads", "1", "--local-directory", str(where)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env={**env, "NTEVAL_ENCODER_THREADS": "1", "NTEVAL_DENSE_CACHE": str(WARM)},
                                  start_new_session=True))   # (the workers find the ONNX export made once)
    address = json.loads((where / "s.json").read_text())["address"]
    import distributed

    with distributed.Client(address, timeout=60) as client:
        client.wait_for_workers(workers, timeout=120)
    return address, procs


def _pin(index: Path, out: Path, cache: Path | None, env: dict[str, str], *extra: str) -> tuple[float, str]:
    """A 1,000-topic pin (seed 42) of ``index`` into ``out``: its seconds and what it printed."""
    t = time.perf_counter()
    r = subprocess.run([str(BIN / "nteval"), "pin", "--index", str(index), "--topics", "1000", "--seed", "42",
                        "--out", str(out), *extra], check=True, capture_output=True, text=True,
                       env={**env, "NTEVAL_DENSE_CACHE": str(cache or out.parent / "no-cache")})
    return time.perf_counter() - t, r.stdout + r.stderr


def _cache_state(cache: Path) -> list[tuple[str, int]]:
    """The documents' encodings of a cache (``all-*``), each file with its modification time: a pin that
    encoded documents would change them (its title queries' vectors are not these)."""
    return sorted((str(f.relative_to(cache)), f.stat().st_mtime_ns) for d in cache.glob("all-*") for f in d.rglob("*")
                  if f.is_file())


def _same_judgments(a: Path, b: Path) -> bool:
    files = ("focused/topics.tsv", "focused/qrels.txt", "highrecall/topics.tsv", "highrecall/qrels.txt.gz",
             "highrecall/sources.tsv")
    return all((a / f).read_bytes() == (b / f).read_bytes() for f in files)


def _warm(work: Path, env: dict[str, str]) -> None:
    """The reference's ONNX graph exported once into WARM, before any figure (loading the encoder makes it)."""
    global WARM
    WARM = work / "warm"
    subprocess.run([sys.executable, "-c", "from nteval.encoders.models import encoder_params, load_encoder; "
                    "from nteval.protocols.highrecall import REFERENCE_SYSTEMS, neural_srefs; "
                    "from nteval.systems.base import make_system; n = neural_srefs()[0]; "
                    "s = encoder_params(make_system(n, *REFERENCE_SYSTEMS[n]).params); "
                    "load_encoder(s['model'], s['dim'], n, s['backend'], s['max_tokens']).embed(['warm'])"],
                   check=True, env={**env, "NTEVAL_DENSE_CACHE": str(WARM)})


def _encodings(index: Path, work: Path, env: dict[str, str]) -> list[dict]:
    """Each way of encoding the index's ``all`` into a fresh cache: its seconds."""
    rows = [{"how": "one process of 2 threads (NTEVAL_ENCODER_THREADS=2: the default until now; baseline)",
             "key": "threads", "workers": 0, "cache": work / "threads", "env": {"NTEVAL_ENCODER_THREADS": "2"}},
            {"how": "here, one-thread processes (the default now)", "key": "here", "workers": 0, "cache": work / "here",
             "env": {}}]
    for r in rows:
        r["seconds"] = _encode(r["cache"], index, None, {**env, **r.pop("env")})
    for n in (1, 2):
        (work / f"d{n}").mkdir()
        address, procs = _cluster(work / f"d{n}", n, env)
        try:
            rows.append({"how": f"Dask: {n} worker process{'es' if n > 1 else ''} of 1 thread (dask's CLI)",
                         "key": f"dask{n}", "workers": n, "cache": work / f"c{n}"})
            rows[-1]["seconds"] = _encode(rows[-1]["cache"], index, address, env)
        finally:
            for p in reversed(procs):
                os.killpg(p.pid, 15)
                p.wait(timeout=60)
    return rows


#: a GPU's rate, an anchor from the literature, not measured here: sentence-transformers' published
#: speed of all-MiniLM-L6-v2 on one V100 (14,200 sentences per second, short sentences; abstracts of
#: up to 128 word pieces are longer, so this is a best case), in torch fp32 (another identity than the
#: references' CPU int8: a GPU makes its own pin)
GPU_ANCHOR = 14_200


def _projection(rate_two_core: float, mixes: dict[str, float], pin_after_s: float, docs: int) -> dict:
    """Minutes, projected: encoding N records on W two-core workers at ``rate_two_core`` records/s each
    (this file's mix; ``mixes``: each other mix's rate relative to it) and on one GPU at
    :data:`GPU_ANCHOR`, and a first fair pin of 1M records (the encoding, then the pin after it
    scaled by records from this index's)."""
    enc = {name: {f"{n} two-core workers": round(records / (rate_two_core * rel * n) / 60, 1) for n in workers}
           for mix, rel in {"this file": 1.0, **mixes}.items()
           for name, records, workers in ((f"1M records, {mix}", MILLION, (8, 16, 64)),
                                          (f"36M records (PubMed), {mix}", 36 * MILLION, (64, 100, 128)))}
    pin_1m = pin_after_s / docs * MILLION / 60
    first = {f"{n} two-core workers": round(MILLION / (rate_two_core * n) / 60 + pin_1m, 1) for n in (8, 16, 64)}
    first["one GPU (anchor, best case)"] = round(MILLION / GPU_ANCHOR / 60 + pin_1m, 1)
    gpu = {"records_per_s_anchor": GPU_ANCHOR, "1M records": round(MILLION / GPU_ANCHOR / 60, 1),
           "36M records (PubMed)": round(36 * MILLION / GPU_ANCHOR / 60, 1)}
    return {"encoding_minutes": enc, "encoding_minutes_one_gpu": gpu, "first_fair_pin_1M_minutes": first,
            "pin_after_encode_1M_minutes_one_machine": round(pin_1m, 1)}


def _reproject(path: Path) -> None:
    """The projection again from a written benchmarks/encode_cluster.json's measurements (nothing re-run)."""
    out = json.loads(path.read_text(encoding="utf-8"))
    rows = {r["how"].split(" (")[0]: r for r in out["rows"]}
    rate = next(r["records_per_s"] for h, r in rows.items() if h.startswith("Dask: 2 worker"))
    here = next(r["records_per_s"] for h, r in rows.items() if h.startswith("here"))
    mixes = {f"{Path(k).name} mix": v["records_per_s"] / here for k, v in out["other_mixes"].items()}
    out["projected"] = _projection(rate, mixes, max(out["acceptance"]["pin_after_encode_seconds"].values()),
                                   out["records"])
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out["projected"], indent=1))


def main() -> None:
    from nteval.encoders.store import PART

    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--index", type=Path, help="an index of at least two parts (16,384 records)")
    ap.add_argument("--reproject", action="store_true", help="only the projection again, from the written JSON")
    ap.add_argument("--mix", type=Path, action="append", default=[],
                    help="another index (another share of records with an abstract): its rate here, one-thread processes")
    a = ap.parse_args()
    if a.reproject:
        return _reproject(Path(__file__).with_suffix(".json"))
    if a.index is None:
        ap.error("give --index (or --reproject)")
    docs = json.loads((a.index / "manifest.json").read_text())["indexes"]["all"]["documents"]
    if docs < 2 * PART:
        raise SystemExit(f"{a.index}: {docs:,} records are {-(-docs // PART)} part(s) of {PART:,}: a cluster could "
                         "not share them; give an index of at least two parts")
    work = Path(tempfile.mkdtemp(prefix="nteval-encode-bench-"))
    env = {k: v for k, v in os.environ.items() if k not in ("NTEVAL_DENSE_CACHE", "NTEVAL_ENCODER_THREADS")}
    _warm(work, env)
    rows = _encodings(a.index, work, env)
    by = {r["key"]: r for r in rows}
    for r in rows:
        r["records_per_s"] = round(docs / r["seconds"], 1)
        r["records_per_cpu_s"] = round(docs / r["seconds"] / max(1, r["workers"]), 1) if r["workers"] else None
    digests = {hashlib.sha256(next(r["cache"].glob("all-*")).joinpath("vectors-float32.npy").read_bytes()).hexdigest()
               for r in rows}
    lexical_s, _ = _pin(a.index, work / "pin-lexical", None, env, "--preset", "lexical")
    pins = {}
    for k in ("here", "dask2"):
        before = _cache_state(by[k]["cache"])
        seconds, _ = _pin(a.index, work / f"pin-{k}", by[k]["cache"], env, "--preset", "balanced")
        pins[k] = {"seconds": round(seconds, 1), "encoded_anything": _cache_state(by[k]["cache"]) != before}
    check = {
        "vectors_byte_identical_every_way": len(digests) == 1,
        "pins_after_encode_same_topics_and_judgments": _same_judgments(work / "pin-here", work / "pin-dask2"),
        "pins_after_encode_encoded_nothing": not any(p["encoded_anything"] for p in pins.values()),
        "cluster_over_one_process_wall": round(by["dask2"]["seconds"] / by["threads"]["seconds"], 3),
        "cluster_over_here_wall": round(by["dask2"]["seconds"] / by["here"]["seconds"], 3),
        "lexical_pin_seconds": round(lexical_s, 1),
        "pin_after_encode_seconds": {k: p["seconds"] for k, p in pins.items()},
        "pin_after_encode_over_lexical_pin": round(max(p["seconds"] for p in pins.values()) / lexical_s, 2),
    }
    check["holds"] = (check["vectors_byte_identical_every_way"] and check["pins_after_encode_same_topics_and_judgments"]
                      and check["pins_after_encode_encoded_nothing"] and check["cluster_over_one_process_wall"] <= 1.25
                      and check["cluster_over_here_wall"] <= 1.25 and check["pin_after_encode_over_lexical_pin"] <= 3)
    mixes = {}
    for i, m in enumerate(a.mix):
        n = json.loads((m / "manifest.json").read_text())["indexes"]
        seconds = _encode(work / f"mix{i}", m, None, env)
        mixes[str(m)] = {"records": n["all"]["documents"], "with_abstract": n["nt"]["documents"],
                         "records_per_s": round(n["all"]["documents"] / seconds, 1)}
    here_rate = by["here"]["records_per_s"]
    out = {"records": docs, "index": str(a.index),
           "with_abstract": json.loads((a.index / "manifest.json").read_text())["indexes"]["nt"]["documents"],
           "rows": [{k: v for k, v in r.items() if k not in ("cache", "key")} for r in rows],
           "scaling_efficiency_1_to_2_dask_workers": round(by["dask2"]["records_per_s"] / (2 * by["dask1"]["records_per_s"]), 3),
           "here_processes_over_threads": round(by["threads"]["seconds"] / by["here"]["seconds"], 2),
           "acceptance": check, "other_mixes": mixes,
           "projected": _projection(by["dask2"]["records_per_s"],
                                    {f"{Path(k).name} mix": v["records_per_s"] / here_rate for k, v in mixes.items()},
                                    max(p["seconds"] for p in pins.values()), docs),
           "projection_note": "projected, not measured on a cluster: each two-core worker encodes at the rate two "
                              "one-thread Dask workers reach here (their efficiency included); another mix of records "
                              "scales it by that mix's rate here over this file's; the pin after the encoding runs on "
                              "one machine and is scaled by records from this index's (its searches grow with the "
                              "index: an upper bound, not measured at 1M); network, the client's writing of parts and "
                              "a shared filesystem are not counted",
           "load_avg_after": round(os.getloadavg()[0], 1)}
    Path(__file__).with_suffix(".json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
