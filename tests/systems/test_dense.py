"""Dense retrieval (nteval.systems.dense: wordllama + FAISS) and its hybrids on a real PubMed index,
through the real protocols; and the dense benchmark's numpy brute force against FAISS flat search
(benchmarks/dense.py)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import FORTY_TOPICS as ARGS
from conftest import cli, one_line_error
from pybm25 import PyBM25

#: benchmarks/dense.py, loaded from its file (benchmarks/ is no package)
_spec = importlib.util.spec_from_file_location("bench_dense", Path(__file__).resolve().parents[2] / "benchmarks" / "dense.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

YAML = """\
- {name: bm25, algorithm: bm25}
- {name: dense, algorithm: dense}
- {name: dense_ivf, algorithm: dense, params: {index: ivf, nprobe: 2}}
- {name: hybrid_rrf, algorithm: rrf, params: {systems: [bm25, dense]}}
- {name: hybrid_linear, algorithm: linear, params: {systems: [bm25, dense], weights: [0.7, 0.3]}}
"""


def test_flat_dense_search_is_exact_inner_product(first200_index, dense_cache):
    from nteval.encoders.models import load_encoder
    from nteval.encoders.store import document_vectors, index_texts
    from nteval.index import read_manifest
    from nteval.systems.dense import dense_run

    fp = read_manifest(first200_index)["fingerprint"]
    enc = load_encoder("wordllama", 256)
    texts = dict(index_texts(first200_index, "nt"))
    topics = {d: t[:120] for d, t in list(texts.items())[:15]}
    params = {"model": "wordllama", "dim": 256, "index": "flat", "nlist": 0, "nprobe": 16, "hnsw_m": 32,
              "ef_search": 128, "dtype": "float32"}
    run, notes = dense_run("dense", params, first200_index, "nt", fp, topics, 50, progress=False)
    vec = document_vectors(first200_index, "nt", fp, enc)
    assert vec.docids == list(texts) and notes["documents"] == len(texts)
    assert np.allclose(np.linalg.norm(vec.matrix, axis=1), 1.0, atol=1e-5)
    q = enc.embed(list(topics.values()))
    brute = q @ vec.matrix.T  # numpy brute force: the baseline faiss flat must equal
    for i, qid in enumerate(topics):
        order = np.argsort(-brute[i], kind="stable")[:50]
        assert [d for d, _ in run[qid]][:10] == [vec.docids[j] for j in order[:10]]
        assert np.allclose([s for _, s in run[qid]], brute[i][order], atol=1e-5)
    found = sum(run[qid][0][0] == qid for qid in topics)
    assert found >= len(topics) // 2, found  # a passage of its own abstract mostly finds the abstract first


def test_encoding_resumes_from_the_last_finished_part(first200_index, dense_cache, monkeypatch):
    from nteval.encoders import models, store
    from nteval.index import read_manifest

    fp = read_manifest(first200_index)["fingerprint"]
    real = models.load_encoder("wordllama", 256)
    calls = {"n": 0}

    def dying(texts):
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt  # killed while encoding the third part
        return real.embed(texts)

    monkeypatch.setattr(store, "PART", 50)
    with pytest.raises(KeyboardInterrupt):
        store.document_vectors(first200_index, "nt", fp, models.Encoder(real.id, real.dim, dying), progress=False)
    final = store.cache_dir(first200_index, "nt", fp, real)
    assert not final.exists()
    assert sorted(p.name for p in final.with_name(final.name + ".partial").glob("part-*.npy")) == \
        ["part-000000.npy", "part-000001.npy"]
    vec = store.document_vectors(first200_index, "nt", fp, real, progress=False)
    assert vec.meta["encoded_this_time"] == len(vec.docids) - 100
    assert not final.with_name(final.name + ".partial").exists()
    fresh = np.concatenate([real.embed([t for _, t in list(store.index_texts(first200_index, "nt"))])])
    assert np.allclose(vec.matrix, fresh, atol=1e-6)


def test_an_interrupted_part_keeps_what_it_encoded(first200_index, dense_cache, monkeypatch):
    """New user, turn 7, F6: Ctrl-C in the middle of a part (8,192 documents: 19 minutes of torch's
    work) lost all of it. The rows encoded so far are kept, by their texts' digests, and the next
    encoding encodes only the others; its vectors are a from-scratch encoding's."""
    from nteval.encoders import models, store
    from nteval.index import read_manifest

    fp = read_manifest(first200_index)["fingerprint"]
    real = models.load_encoder("wordllama", 256)
    texts = []

    def dying(batch):
        if len(texts) >= 40:
            raise KeyboardInterrupt   # killed after 40 documents of the first part
        texts.extend(batch)
        return real.embed(batch)

    monkeypatch.setattr(store, "PART", 100)
    with pytest.raises(KeyboardInterrupt):
        store.document_vectors(first200_index, "nt", fp, models.Encoder(real.id, real.dim, dying, batch=20), progress=False)
    final = store.cache_dir(first200_index, "nt", fp, real)
    assert [p.name for p in final.with_name(final.name + ".partial").glob("part-*")] == ["part-000000.unfinished.npz"]
    again = []

    def counting(batch):
        again.extend(batch)
        return real.embed(batch)

    vec = store.document_vectors(first200_index, "nt", fp, models.Encoder(real.id, real.dim, counting, batch=20),
                                 progress=False)
    assert len(again) == len(vec.docids) - 40 and not set(again) & set(texts)
    fresh = real.embed([t for _, t in store.index_texts(first200_index, "nt")])
    assert np.allclose(vec.matrix, fresh, atol=1e-6)


def test_dense_and_hybrids_run_beside_the_zoo_and_are_cached(first200_index, dense_cache, tmp_path):
    (tmp_path / "s.yaml").write_text(YAML)
    out = tmp_path / "f"
    r = cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out", out, *ARGS)
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert set(res["systems"]) == {"bm25", "dense", "dense_ivf", "hybrid_rrf", "hybrid_linear"}
    notes = res["system_notes"]
    assert 0 < notes["dense_ivf"]["recall_vs_flat"] < 1 and "recall_vs_flat" not in notes["dense"]
    assert notes["dense"]["model"].startswith("wordllama-l2_supercat-256") and Path(notes["dense"]["cache"]).is_dir()
    assert "recall of the top 1000 vs exact (flat) search" in r.output
    rr = {n: v["RR"] for n, v in res["systems"].items()}
    assert rr["dense"] > 0.3 and rr["bm25"] > 0.5  # both find titles' abstracts, far above chance (1/200)
    r2 = cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out", out, *ARGS)
    assert r2.exit_code == 0, r2.output
    again = json.loads((out / "results.json").read_text())
    assert all(t["reused"] for t in again["timing"].values())
    assert again["systems"] == res["systems"]


def test_bad_dense_declarations_fail_before_any_run(first200_index, tmp_path):
    (tmp_path / "s.yaml").write_text("- {name: bm25, algorithm: bm25}\n"
                                     "- {name: st, algorithm: dense, params: {model: /no/such/model}}\n")
    r = cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out", tmp_path / "o", *ARGS)
    one_line_error(r, "system 'st'", "/no/such/model")
    assert not (tmp_path / "o").exists()
    (tmp_path / "s.yaml").write_text("- {name: d, algorithm: dense, params: {index: annoy}}\n")
    one_line_error(cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out",
                         tmp_path / "o", *ARGS), "index must be one of flat, ivf, hnsw")


def test_dense_and_external_systems_in_holdout_high_recall(first200_index, dense_cache, tmp_path):
    """With source documents held out, dense and callables lose them from their rankings."""
    from nteval.experiment import run_highrecall
    from nteval.systems.base import make_system
    from nteval.systems.external import callable_system

    py = PyBM25(first200_index)
    systems = [make_system("bm25", "bm25"), make_system("dense", "dense"), callable_system("pybm25", py.search, "1"),
               make_system("hyb", "rrf", {"systems": ["bm25", "dense"]})]
    res = run_highrecall(first200_index, tmp_path / "h", n_topics=40, min_topics=10, systems=systems, progress=False,
                         holdout=True)
    held = res.get("holdout") or {}
    assert set(res["systems"]) == {"bm25", "dense", "pybm25", "hyb"}
    for name in ("dense", "pybm25", "hyb"):
        run = (tmp_path / "h" / "runs" / "holdout" / f"{name}.run").read_text().splitlines()
        assert run and all(line.split()[0] != line.split()[2] for line in run), (name, held)


# -- the benchmark's baseline (benchmarks/dense.py) ----------------------------------------------------

def _unit(rng, n, d):
    v = rng.standard_normal((n, d), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_numpy_topk_matches_faiss_flat():
    faiss = pytest.importorskip("faiss")
    rng = np.random.default_rng(7)
    docs, queries = _unit(rng, 3000, 32), _unit(rng, 70, 32)  # 70 queries: blocks of 32 leave a remainder
    index = faiss.IndexFlatIP(32)
    index.add(docs)
    fs, fr = index.search(queries, 100)
    ns, nr = bench.numpy_topk(queries, docs, 100, block=32)
    assert nr.shape == (70, 100) and np.all(np.diff(ns, axis=1) <= 0)          # best first
    np.testing.assert_allclose(ns, fs, atol=1e-5)
    assert bench.set_overlap(nr, fr).min() == 1.0
    assert bench.differences_at_boundary(queries, docs, nr, fr) == (0, 0)
    # k above the collection: everything, ordered, like FAISS's search capped by nteval
    s, r = bench.numpy_topk(queries[:3], docs[:50], 100)
    assert r.shape == (3, 50) and sorted(r[0].tolist()) == list(range(50))


def test_ties_at_the_boundary_are_told_apart_from_a_different_ranking():
    docs = np.array([[1.0, 0], [0.5, 0.5], [0.5, 0.5], [0, 1.0]], dtype=np.float32)
    q = np.array([[1.0, 0.0]], dtype=np.float32)
    a, b = np.array([[0, 1]]), np.array([[0, 2]])      # docs 1 and 2 tie at the 2nd place
    assert bench.set_overlap(a, b).tolist() == [0.5]
    assert bench.differences_at_boundary(q, docs, a, b) == (1, 1)
    assert bench.differences_at_boundary(q, docs, np.array([[0, 3]]), b) == (1, 0)
