"""The fast search path (plain IndexSearcher + docid table) against Anserini's SimpleSearcher."""
from __future__ import annotations

import pytest

from nteval.corpus.store import DocStore
from nteval.lucene.searcher import Index, _convert


@pytest.mark.parametrize("name", ["all", "nt"])
@pytest.mark.parametrize("model,params", [("bm25", {"k1": 0.9, "b": 0.4}), ("bm25", {"k1": 2.0, "b": 1.0}),
                                          ("qld", {"mu": 500.0})])
def test_fast_path_ranks_like_simplesearcher(first200_index, name, model, params):
    store = DocStore(first200_index / "docs.sqlite")
    titles = {d: t for d, t, _ in list(store.iter_texts())[:80] if t}
    store.close()
    with Index(first200_index / name) as ix:
        ix.configure(model, **params)
        fast = ix.batch_search(titles, 100)
        compared = 0
        for qid, text in titles.items():
            slow = _convert(ix._searcher.search(text, 100))
            assert [d for d, _ in fast[qid]] == [d for d, _ in slow], qid
            # SimpleSearcher rounds to 4 decimals (and nudges ties by 1e-6); ours are Lucene's exact scores
            assert all(abs(a - b) < 5e-4 for (_, a), (_, b) in zip(fast[qid], slow))
            compared += len(slow)
    assert compared > 1000
    if name == "all":  # the docid table maps Lucene numbers to the right documents: a title finds its own record
        assert sum(fast[q][0][0] == q for q in titles) >= 0.9 * len(titles)
