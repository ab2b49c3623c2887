"""Multi-threaded batch search (nteval.BatchSearch, Java threads behind one pyjnius call) returns
exactly what one-query-at-a-time search returns, on a real index."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest


def test_the_shipped_jar_is_built_from_the_shipped_source():
    d = Path(__file__).parents[1] / "nteval" / "lucene" / "java"
    src = hashlib.sha256((d / "BatchSearch.java").read_bytes()).hexdigest()
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


def test_docid_table_in_one_call_equals_anserini_per_document(first200_index):
    from nteval.lucene.searcher import Index

    for name in ("all", "nt"):
        with Index(first200_index / name) as ix:
            convert = ix._utils.convertLuceneDocidToDocid
            assert ix._docid_table() == [str(convert(ix._reader, i)) for i in range(ix.max_doc)]
