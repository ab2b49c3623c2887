"""The dense benchmark's numpy brute force agrees with FAISS flat search (benchmarks/dense.py)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

faiss = pytest.importorskip("faiss")
_spec = importlib.util.spec_from_file_location("bench_dense", Path(__file__).resolve().parents[1] / "benchmarks" / "dense.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _unit(rng, n, d):
    v = rng.standard_normal((n, d), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_numpy_topk_matches_faiss_flat():
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
