"""The first encoding of a collection on a Dask cluster (issue 58): records per second with one and
two worker processes on this machine (the scaling efficiency), against one process using every
core (the baseline, measured in the same run), and the projected wall time of a first fair
1M-record pin on N two-core workers (projected: not measured on such a cluster).

    PYTHONPATH=. nice -n 10 python benchmarks/encode_cluster.py --index IDX

An index's ``all`` texts (the fair references' encoding: all-MiniLM-L6-v2, ONNX int8, 128 word
pieces), ``nteval encode`` into a fresh cache each time. The encoding goes to the workers in parts of
8,192 records, one task each: an index of fewer than two parts (the bundled sample: 1,997 records)
gives a cluster one task and measures no scaling, and is refused; the two shared PubMed files (50,729
records, 7 parts) take about 13 minutes an encoding here. locally (one process, its encoder on
every core), then with ``--scheduler`` on clusters started with dask's own commands: one worker
process of one thread, two of one thread each (``NTEVAL_ENCODER_THREADS=1`` on the workers). Writes
benchmarks/encode_cluster.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
#: the projection's anchors: records of a 1M-record index, and the lexical part of a first fair pin
#: (benchmarks/pin_scale.json: its lexical stages take minutes at that size)
MILLION = 1_000_000


def _encode(index: Path, cache: Path, scheduler: str | None, env: dict[str, str]) -> float:
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
                                  env={**env, "NTEVAL_ENCODER_THREADS": "1"}, start_new_session=True))
    address = json.loads((where / "s.json").read_text())["address"]
    import distributed

    with distributed.Client(address, timeout=60) as client:
        client.wait_for_workers(workers, timeout=120)
    return address, procs


def main() -> None:
    from nteval.encoders.store import PART

    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--index", type=Path, required=True, help="an index of at least two parts (16,384 records)")
    a = ap.parse_args()
    docs = json.loads((a.index / "manifest.json").read_text())["indexes"]["all"]["documents"]
    if docs < 2 * PART:
        raise SystemExit(f"{a.index}: {docs:,} records are {-(-docs // PART)} part(s) of {PART:,}, one task each: a "
                         "cluster could not share them; give an index of at least two parts")
    work = Path(tempfile.mkdtemp(prefix="nteval-encode-bench-"))
    env = {k: v for k, v in os.environ.items() if k != "NTEVAL_DENSE_CACHE"}
    index = a.index
    _encode(index, work / "warm", None, env)   # (exports the graph once: not part of any figure)
    rows = [{"how": "one process, every core (baseline)", "seconds": _encode(index, work / "c0", None, env)}]
    for n in (1, 2):
        (work / f"d{n}").mkdir()
        address, procs = _cluster(work / f"d{n}", n, env)
        try:
            rows.append({"how": f"Dask: {n} worker process{'es' if n > 1 else ''} of 1 thread",
                         "seconds": _encode(index, work / f"c{n}", address, env)})
        finally:
            for p in reversed(procs):
                os.killpg(p.pid, 15)
                p.wait(timeout=60)
    for r in rows:
        r["records_per_s"] = round(docs / r["seconds"], 1)
    one, two = rows[1]["records_per_s"], rows[2]["records_per_s"]
    efficiency = round(two / (2 * one), 3)
    per_worker = two   # (a two-core worker: what two one-thread processes encode here, their efficiency included)
    projection = {f"{n} two-core workers": round(MILLION / (per_worker * n) / 60, 1) for n in (8, 16, 64)}
    out = {"records": docs, "rows": rows, "scaling_efficiency_1_to_2": efficiency,
           "projected_minutes_to_encode_1M_records": projection,
           "projection_note": "projected from the two-process rate measured here, as the rate of each two-core "
                              "worker: not measured on a cluster; network and the client's writing not counted",
           "load_avg_after": round(os.getloadavg()[0], 1)}
    Path(__file__).with_suffix(".json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
