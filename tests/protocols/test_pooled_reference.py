"""The pooled neural reference (issue 49): an encoder re-ranking the union of the lexical
references' top P per title. Its ranking is the full search's restricted to the pool (the same
vectors), it encodes only what the pools hold, only once (by docid and text), and a Dask cluster
of 2 workers gives the same vectors and pseudo-qrels as one process. wordllama (shipped in its
wheel) stands for any encoder: the mechanism does not depend on the model."""
from __future__ import annotations

import json

import numpy as np
import pytest

from nteval.corpus.store import index_docids
from nteval.encoders import models
from nteval.formats.trec import read_qrels
from nteval.index import read_manifest
from nteval.systems import dense, pooled
from nteval.systems.base import make_system


def _titles(index_dir, n=25):
    from nteval.corpus.store import FILENAME, DocStore

    store = DocStore(index_dir / FILENAME)
    try:
        out = {}
        for d in index_docids(index_dir, "nt"):
            doc = store.get(d)
            if doc and doc["title"]:
                out[d] = doc["title"]
            if len(out) == n:
                break
        return out
    finally:
        store.close()


def test_pooled_ranking_is_the_full_search_restricted_to_the_pool(first200_index, dense_cache):
    wl = make_system("wl", "dense", {"model": "wordllama"})
    titles = _titles(first200_index)
    docs = index_docids(first200_index, "all")
    pools = {q: sorted(docs[i::3])[:60] for i, q in enumerate(titles)}   # any pool: every third document
    run, notes = pooled.pooled_run(wl, first200_index, titles, pools, 1000, progress=False)
    assert notes["encoded_now"] == notes["pooled_documents"] == len({d for p in pools.values() for d in p})
    fp = read_manifest(first200_index)["fingerprint"]
    full, _ = dense.dense_run("wl", {**wl.params}, first200_index, "all", fp, titles, len(docs), progress=False)
    for q in titles:
        allowed = set(pools[q])
        restricted = [(d, s) for d, s in full[q] if d in allowed]
        assert [d for d, _ in run[q]] == [d for d, _ in sorted(restricted, key=lambda x: (-x[1], x[0]))]
        assert np.allclose([s for _, s in run[q]], sorted((s for _, s in restricted), reverse=True), atol=1e-5)
    # a second call encodes nothing; a changed text is encoded again, alone
    again, notes2 = pooled.pooled_run(wl, first200_index, titles, pools, 1000, progress=False)
    assert notes2["encoded_now"] == 0 and again == run
    enc = models.load_encoder("wordllama", 0)
    store = pooled.VectorStore(pooled.store_path(first200_index, "all", enc), enc)
    seen = sorted({d for p in pools.values() for d in p})[:10]
    texts = pooled.texts_of(first200_index, "all", seen)
    texts[seen[3]] += " (corrected)"
    assert store.missing(texts) == [seen[3]]
    store.close()


def test_a_store_of_another_model_is_refused(first200_index, dense_cache):
    enc = models.load_encoder("wordllama", 0)
    path = pooled.store_path(first200_index, "all", enc)
    pooled.VectorStore(path, enc).close()
    other = models.Encoder("another-model-1234", enc.dim, enc.embed)
    with pytest.raises(dense.InputError, match="not another-model-1234"):
        pooled.VectorStore(path, other)
    assert pooled.store_path(first200_index, "all", other) != path   # (it would have its own)


def test_highrecall_with_a_pooled_reference_records_its_pool(first200_index, dense_cache, tmp_path):
    from conftest import cli

    (tmp_path / "s.yaml").write_text("- {name: bm25, algorithm: bm25}\n- {name: qld, algorithm: qld}\n")
    out = tmp_path / "h"
    r = cli("highrecall", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--topics", "30", "--min-topics", "10",
            "--sref", "bm25", "--sref", "qld_mu1000", "--sref", "dense", "--pool", "100", "--out", out, "--quiet")
    assert r.exit_code == 0, r.output
    sref = json.loads((out / "results.json").read_text())["sref"]
    assert sref["pool"]["depth"] == 100 and sref["pool"]["of"] == ["bm25", "qld_mu1000"]
    assert sref["pool"]["encoded_now"]["dense"] == sref["pool"]["documents"] > 0
    assert sref["pool"]["encoded_by"]["dense"] == {"model": models.load_encoder("wordllama", 0).id, "device": "cpu"}
    assert sref["balance"] == "equal shares"


def test_dask_workers_encode_the_same_vectors_as_one_process(first200_index, tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    import dask

    docs = index_docids(first200_index, "all")[:300]
    texts = pooled.texts_of(first200_index, "all", docs)
    enc = models.load_encoder("wordllama", 0)
    local = pooled.VectorStore(tmp_path / "local.sqlite", enc)
    assert pooled.encode_missing(local, texts, {"model": "wordllama"}) == len(texts)
    dask.config.set({"temporary-directory": str(tmp_path / "scratch")})
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  local_directory=str(tmp_path / "scratch")) as cluster:
        remote = pooled.VectorStore(tmp_path / "remote.sqlite", enc)
        from nteval.protocols.highrecall import dask_mapper

        mapper = dask_mapper(cluster.scheduler_address)
        assert pooled.encode_missing(remote, texts, {"model": "wordllama"}, mapper) == len(texts)
        with distributed.Client(cluster.scheduler_address) as client:
            assert len(client.nthreads()) == 2
    ids = sorted(texts)
    assert local.get(ids).tobytes() == remote.get(ids).tobytes()
    local.close(), remote.close()


def test_pool_zero_searches_the_whole_collection(first200_index, dense_cache, tmp_path):
    """--pool 0 (the default, chosen by the unseen-encoders study's rule): the dense reference
    searches all (encodes the collection)."""
    from nteval.protocols.highrecall import DEFAULT_POOL, HighRecallSpec

    assert DEFAULT_POOL == 0 == HighRecallSpec().pool
    from conftest import cli

    (tmp_path / "s.yaml").write_text("- {name: bm25, algorithm: bm25}\n")
    out = tmp_path / "h0"
    r = cli("highrecall", "--index", first200_index, "--systems", tmp_path / "s.yaml", "--topics", "30", "--min-topics", "10", "--pool", "0",
            "--sref", "bm25", "--sref", "qld_mu1000", "--sref", "dense", "--out", out, "--quiet")
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert "pool" not in res["sref"] and read_qrels(out / "qrels.txt")


def test_a_full_pooled_store_is_said_of_the_store(tmp_path):
    """Hostile K5: a device that fills while the pooled store is written is said of the store (its
    path), not of the command's --out; the transaction is rolled back, the store stays usable."""
    import errno

    import numpy as np
    import pytest

    from nteval.encoders.models import Encoder
    from nteval.errors import explain_failure
    from nteval.systems.pooled import VectorStore

    enc = Encoder("probe", 64, lambda t: np.ones((len(t), 64), dtype=np.float32))
    store = VectorStore(tmp_path / "pool.sqlite", enc)
    store.put(["a"], {"a": "x"}, np.ones((1, 64)))
    store.db.execute(f"PRAGMA max_page_count = {store.db.execute('PRAGMA page_count').fetchone()[0] + 2}")
    ids = [f"d{i}" for i in range(2000)]   # (a database capped at two more pages: sqlite's own "full")
    with pytest.raises(OSError) as caught:
        store.put(ids, {d: d for d in ids}, np.ones((len(ids), 64)))
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(tmp_path / "pool.sqlite")
    line, status = explain_failure(caught.value, out="OUT")
    assert str(tmp_path / "pool.sqlite") in line and "OUT" not in line and status == 1
    assert store.missing({"a": "x", "d0": "d0"}) == ["d0"]   # (rolled back; the first vector kept)
    store.close()
