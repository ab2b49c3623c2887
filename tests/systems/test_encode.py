"""``nteval encode`` (issue 58): the fair references' first encoding of a collection, ahead of any
pin, here and on a real Dask cluster started with dask's own commands (``dask scheduler``, ``dask
worker``: separate processes, as a team's machines run them). The cluster's vectors are byte for
byte one process's (each text is encoded alone, whatever part or worker it falls to), and a pin
after ``encode`` encodes nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import cli, needs_onnx, quick

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """A Dask scheduler and two one-thread workers, each its own process, started with dask's CLI."""
    where = tmp_path_factory.mktemp("dask-cli")
    dask = Path(sys.executable).with_name("dask")
    env = {**os.environ, "DASK_TEMPORARY_DIRECTORY": str(where)}
    env.pop("NTEVAL_DENSE_CACHE", None)   # (a worker has its own machine's caches: nothing shared with the client)
    procs = [subprocess.Popen([str(dask), "scheduler", "--scheduler-file", str(where / "s.json"), "--port", "0",
                               "--dashboard-address", ":0"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=env, start_new_session=True)]
    deadline = time.monotonic() + quick(60)
    while not (where / "s.json").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    procs.append(subprocess.Popen([str(dask), "worker", "--scheduler-file", str(where / "s.json"), "--nworkers", "2",
                                   "--nthreads", "1", "--local-directory", str(where)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, env=env, start_new_session=True))
    address = json.loads((where / "s.json").read_text())["address"]
    with distributed.Client(address, timeout=quick(60)) as client:
        client.wait_for_workers(2, timeout=quick(120))
    yield address
    for p in reversed(procs):
        os.killpg(p.pid, 15)
        p.wait(timeout=quick(30))


@needs_onnx
def test_encode_on_a_cluster_is_one_process_encoding_and_a_pin_after_it_encodes_nothing(first200_index, scheduler,
                                                                                         tmp_path, monkeypatch):
    from nteval.systems import dense

    monkeypatch.setattr(dense, "PART", 40)   # (five parts: both workers take some)
    caches = {}
    for where, args in (("here", []), ("cluster", ["--scheduler", scheduler])):
        monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(tmp_path / where))
        monkeypatch.setattr(dense, "_VECTORS", {})
        r = cli("encode", "--index", first200_index, *args)
        assert r.exit_code == 0, r.output
        assert "199 documents of all with all-MiniLM-L6-v2 (ONNX Runtime int8, 128 word pieces, cpu): 199 encoded now" \
            in r.output, r.output
        (caches[where],) = (tmp_path / where).glob("all-*")
    here, there = (np.load(caches[w] / "vectors-float32.npy") for w in ("here", "cluster"))
    assert here.shape == (199, 384) and (here == there).all()
    meta = json.loads((caches["cluster"] / "meta.json").read_text())
    assert meta["cluster"]["workers"] == 2 and meta["encoded_this_time"] == 199
    before = (caches["cluster"] / "vectors-float32.npy").stat().st_mtime_ns
    r = cli("pin", "--index", first200_index, "--topics", 60, "--out", tmp_path / "pin")   # (with NTEVAL_DENSE_CACHE=cluster)
    assert r.exit_code == 0 and "encoding" not in r.output, r.output
    assert (caches["cluster"] / "vectors-float32.npy").stat().st_mtime_ns == before
    assert [p.name for p in (tmp_path / "cluster").glob("all-*")] == [caches["cluster"].name]
    r = cli("encode", "--index", first200_index, "--scheduler", scheduler)
    assert r.exit_code == 0 and "cached already, nothing to encode" in r.output, r.output


def test_encode_refuses_a_system_that_encodes_nothing(first200_index):
    r = cli("encode", "--index", first200_index, "--system", "bm25")
    assert r.exit_code == 2 and "--system bm25: bm25 encodes nothing" in r.output, r.output


def test_a_fusion_encodes_what_it_fuses(first100_index, tmp_path, monkeypatch):
    """Hostile turn 8, N4: `encode --system hyb` (a fusion of BM25 and a dense system) said "linear
    encodes nothing", while a gate of hyb encodes its dense input. It encodes the dense systems it
    fuses, however deep; a fusion of lexical systems alone is one line."""
    monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(tmp_path / "dense"))
    systems = tmp_path / "s.yaml"
    systems.write_text("""- {name: b, algorithm: bm25}
- {name: b2, algorithm: bm25, params: {k1: 1.2}}
- {name: wl, algorithm: dense, params: {model: wordllama}}
- {name: hyb, algorithm: linear, params: {systems: [b, wl]}}
- {name: deep, algorithm: rrf, params: {systems: [hyb, b2]}}
- {name: lex, algorithm: rrf, params: {systems: [b, b2]}}
""", encoding="utf-8")
    r = cli("encode", "--index", first100_index, "--systems", systems, "--system", "deep", "--quiet")
    assert r.exit_code == 0 and r.output.startswith("wl: ") and len(r.output.strip().splitlines()) == 1, r.output
    r = cli("encode", "--index", first100_index, "--systems", systems, "--system", "hyb", "--quiet")
    assert r.exit_code == 0 and "cached already, nothing to encode" in r.output, r.output
    r = cli("encode", "--index", first100_index, "--systems", systems, "--system", "lex")
    assert r.exit_code == 2 and "--system lex: a fusion of b, b2, none of them dense: it encodes nothing" in r.output
