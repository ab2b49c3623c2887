"""Multi-threaded batch search (nteval.BatchSearch, Java threads behind one pyjnius call) returns
exactly what one-query-at-a-time search returns, on a real index."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest


def test_the_shipped_jar_is_built_from_the_shipped_source():
    d = Path(__file__).parents[2] / "nteval" / "lucene" / "java"
    src = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(d.glob("*.java")))).hexdigest()
    assert (d / "nteval-batch.jar.source-sha256").read_text().strip() == src, "run `make java` after editing the source"


@pytest.mark.parametrize("model", ["bm25", "qld"])
def test_batch_search_equals_search(first200_index, model):
    from nteval.corpus.store import DocStore
    from nteval.lucene.searcher import Index

    store = DocStore(first200_index / "docs.sqlite")
    titles = {d: t for d, t, _ in list(store.iter_texts())[:60]}
    store.close()
    titles["empty"] = "the of and"          # analyzes to nothing: no hits
    titles["syntax"] = 'AND "(title*:?' + titles[next(iter(titles))]
    with Index(first200_index / "nt") as ix:
        ix.configure(model, k1=1.2, b=0.75, mu=500)
        one = {q: ix.search(t, 50) for q, t in titles.items()}
        for threads in (1, 2, 4):
            assert ix.batch_search(titles, 50, threads) == one
        assert one["empty"] == [] and len(one[next(iter(titles))]) == 50
        assert ix.batch_search(titles, 10_000, 2) == {q: ix.search(t, 10_000) for q, t in titles.items()}


def test_docid_table_equals_anserini_per_document(first200_index):
    """PMIDs: an int64 .npy beside the index, named after its Lucene commit, memory-mapped."""
    import numpy as np

    from nteval.lucene import docids
    from nteval.lucene.searcher import Index

    for name in ("all", "nt"):
        with Index(first200_index / name) as ix:
            convert = ix._utils.convertLuceneDocidToDocid
            table = ix._docid_table()
            assert table.tolist() == [str(convert(ix._reader, i)) for i in range(ix.max_doc)]
            files = list((first200_index / name).glob("nteval-docids.*.npy"))
            assert [f.name for f in files] == [docids.table_path(first200_index / name, ix._reader).name]
            assert isinstance(table.array, np.memmap) and table.array.dtype == np.dtype("<i8")


def test_docid_table_of_any_docids(tmp_path):
    """Docids that are not canonical decimals (a leading zero, letters, non-ASCII) are stored as
    fixed-width UTF-8 and come back exactly, in search results too."""
    import gzip
    import json

    import numpy as np

    from nteval.index import build_index
    from nteval.lucene.searcher import Index

    ids = ["007", "d-1", "ünïcödé-ß", "42", "x" * 40]
    with gzip.open(tmp_path / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
        for i, d in enumerate(ids):
            fh.write(json.dumps({"_id": d, "title": f"title {i} protein", "text": f"abstract number {i} kinase binding"}) + "\n")
    build_index([tmp_path / "corpus.jsonl.gz"], tmp_path / "idx")
    with Index(tmp_path / "idx" / "nt") as ix:
        table = ix._docid_table()
        convert = ix._utils.convertLuceneDocidToDocid
        assert table.tolist() == [str(convert(ix._reader, i)) for i in range(ix.max_doc)]
        assert sorted(table.tolist()) == sorted(ids)
        assert table.array.dtype == np.dtype("S40")  # the widest docid
        assert {d for d, _ in ix.search("kinase", 10)} == set(ids)


def test_docid_table_stale_or_unwritable(first200_index, tmp_path, monkeypatch):
    """A table for another commit or of the wrong length is replaced; where the index directory
    cannot be written the table is built in memory and searches still map docids."""
    import shutil

    import numpy as np

    from nteval.lucene import docids
    from nteval.lucene.searcher import Index

    idx = tmp_path / "nt"
    shutil.copytree(first200_index / "nt", idx)
    with Index(first200_index / "nt") as ix:
        want = ix.search("protein", 20)
        current = docids.table_path(idx, ix._reader).name
    for f in idx.glob("nteval-docids.*.npy"):
        f.unlink()
    np.save(idx / "nteval-docids.segments_0.npy", np.arange(3))  # another commit's
    np.save(idx / current, np.arange(3))  # this commit's name, wrong length
    with Index(idx) as ix:
        assert ix.search("protein", 20) == want
    assert [f.name for f in idx.glob("nteval-docids.*.npy")] == [current]

    for f in idx.glob("nteval-docids.*.npy"):
        f.unlink()

    def refuse(*a, **k):
        raise PermissionError("read-only")

    monkeypatch.setattr(docids, "write_table", refuse)
    with Index(idx) as ix:
        assert ix.search("protein", 20) == want
        assert not isinstance(ix._docids.array, np.memmap)
    assert not list(idx.glob("nteval-docids.*")) and not list(idx.glob(".docids-*"))
