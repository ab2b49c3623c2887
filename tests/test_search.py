"""nteval's search paths against Anserini's SimpleSearcher: the fast path (plain IndexSearcher +
docid table) and the feedback path (Anserini's reranker cascade on a searcher without stored fields)."""
from __future__ import annotations

import pytest

from nteval.corpus.store import DocStore
from nteval.lucene import jvm
from nteval.lucene.searcher import Index


def _convert(hits) -> list[tuple[str, float]]:
    return [] if hits is None else [(str(h.docid), float(h.score)) for h in hits]


def _java_list(items):
    lst = jvm.autoclass("java.util.ArrayList")()
    for x in items:
        lst.add(x)
    return lst


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


FEEDBACK = [("rm3", {"rm3": True, "fb_docs": 10, "fb_terms": 10, "original_query_weight": 0.5}),
            ("rm3", {"rm3": True, "fb_docs": 3, "fb_terms": 25, "original_query_weight": 0.8}),
            ("rocchio", {"rocchio": True, "fb_docs": 10, "fb_terms": 10, "alpha": 1.0, "beta": 0.75}),
            ("rocchio", {"rocchio": True, "fb_docs": 4, "fb_terms": 20, "alpha": 0.6, "beta": 0.4})]


@pytest.mark.parametrize("kind,params", FEEDBACK)
def test_feedback_path_equals_simplesearcher(first200_index, kind, params):
    """Same documents, same order, same (rounded, tie-nudged) scores as Anserini's SimpleSearcher
    configured through its own setters, in one thread and in two."""
    store = DocStore(first200_index / "docs.sqlite")
    titles = {d: t for d, t, _ in list(store.iter_texts())[:60] if t}
    store.close()
    titles["empty"] = "the of and"  # analyzes to nothing
    reference = jvm.autoclass("io.anserini.search.SimpleSearcher")(str(first200_index / "nt"))
    reference.set_bm25(0.9, 0.4)
    if kind == "rm3":  # SimpleSearcher.set_rm3(fbTerms, fbDocs, originalQueryWeight)
        reference.set_rm3(params["fb_terms"], params["fb_docs"], params["original_query_weight"])
    else:
        reference.set_rocchio("JsonCollection", params["fb_terms"], params["fb_docs"], 0, 0,
                              params["alpha"], params["beta"], 0.0, False, False)
    qids = list(titles)
    res = reference.batch_search(_java_list(titles[q] for q in qids), _java_list(qids), 200, 2)
    expected = {q: _convert(res.get(q)) for q in qids}
    reference.close()
    with Index(first200_index / "nt") as ix:
        ix.configure("bm25", k1=0.9, b=0.4, **params)
        for threads in (1, 2):
            assert ix.batch_search(titles, 200, threads=threads) == expected
        assert ix.search(titles[qids[0]], 200) == expected[qids[0]]
        ix.configure("bm25", k1=0.9, b=0.4)  # feedback off again: the fast path, exact scores
        plain = ix.batch_search(titles, 200)
    assert sum(len(r) for r in expected.values()) > 5000
    assert expected["empty"] == []
    assert sum(plain[q] != expected[q] for q in qids) > len(qids) // 2  # feedback changed the rankings


def test_rm3_fb_terms_and_fb_docs_mean_what_they_say(first200_index):
    """fb_docs feedback documents, fb_terms expansion terms: with one feedback document every
    expansion term comes from the first hit; with many terms there are more than one (the two were
    swapped before: Anserini's set_rm3 takes fbTerms first)."""
    store = DocStore(first200_index / "docs.sqlite")
    title = next(t for _, t, _ in store.iter_texts() if t and len(t.split()) >= 6)
    store.close()
    with Index(first200_index / "nt") as ix:
        ix.configure("bm25", k1=0.9, b=0.4, rm3=True, fb_docs=1, fb_terms=30, original_query_weight=0.5)
        top = ix.search(title, 1000)[0][0]
        expansion = set(ix.feedback_terms(title)) - set(ix.analyze(title))
        vector = ix.term_positions(top, sorted(expansion))
        assert len(expansion) >= 10
        assert expansion <= set(vector), expansion - set(vector)
        ix.configure("bm25", k1=0.9, b=0.4, rm3=True, fb_docs=30, fb_terms=2, original_query_weight=0.5)
        assert len(set(ix.feedback_terms(title)) - set(ix.analyze(title))) <= 2
        ix.configure("bm25", k1=0.9, b=0.4)
        assert ix.feedback_terms(title) == {}
