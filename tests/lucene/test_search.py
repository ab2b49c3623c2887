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
    # feedback changed which documents come in which order (scores alone differ anyway: rounding)
    assert sum([d for d, _ in plain[q]] != [d for d, _ in expected[q]] for q in qids) > len(qids) // 2


def test_rm3_fb_terms_and_fb_docs_mean_what_they_say(first200_index):
    """fb_docs feedback documents, fb_terms expansion terms: with one feedback document every
    expansion term comes from the first hit; with many terms there are more than one (the two were
    swapped before: Anserini's set_rm3 takes fbTerms first)."""
    store = DocStore(first200_index / "docs.sqlite")
    title = next(t for _, t, _ in store.iter_texts() if t and len(t.split()) >= 6)
    store.close()
    with Index(first200_index / "nt") as ix:
        top = ix.search(title, 50)[0][0]  # BM25's first hit: the one feedback document below
        ix.configure("bm25", k1=0.9, b=0.4, rm3=True, fb_docs=1, fb_terms=30, original_query_weight=0.5)
        expansion = set(ix.feedback_terms(title)) - set(ix.analyze(title))
        vector = ix.term_positions(top, sorted(expansion))
        assert len(expansion) >= 10
        assert expansion <= set(vector), expansion - set(vector)
        ix.configure("bm25", k1=0.9, b=0.4, rm3=True, fb_docs=30, fb_terms=2, original_query_weight=0.5)
        assert len(set(ix.feedback_terms(title)) - set(ix.analyze(title))) <= 2
        ix.configure("bm25", k1=0.9, b=0.4)
        assert ix.feedback_terms(title) == {}


def _index_without_term_vectors(path) -> None:
    """Four documents, ids as doc values, contents indexed without term vectors (nteval's own
    indexes always store them) and kept as raw JSON."""
    A = jvm.autoclass
    directory = A("org.apache.lucene.store.FSDirectory").open(A("java.io.File")(str(path)).toPath())
    config = A("org.apache.lucene.index.IndexWriterConfig")(A("io.anserini.index.IndexCollection").DEFAULT_ANALYZER)
    writer = A("org.apache.lucene.index.IndexWriter")(directory, config)
    no = A("org.apache.lucene.document.Field$Store").NO
    for i, text in enumerate(["heart attack risk", "heart failure drugs", "cancer risk factors", "heart surgery"], 1):
        doc = A("org.apache.lucene.document.Document")()
        doc.add(A("org.apache.lucene.document.StringField")("id", str(i), A("org.apache.lucene.document.Field$Store").YES))
        doc.add(A("org.apache.lucene.document.BinaryDocValuesField")("id", A("org.apache.lucene.util.BytesRef")(str(i).encode())))
        doc.add(A("org.apache.lucene.document.TextField")("contents", text, no))
        doc.add(A("org.apache.lucene.document.StoredField")("raw", f'{{"id": "{i}", "contents": "{text}"}}'))
        writer.addDocument(doc)
    writer.commit()
    writer.close()
    directory.close()


def test_a_java_failure_names_its_cause_first(tmp_path):
    """RM3 needs term vectors: the error Python sees starts with Anserini's own message, not with
    the executor's or reflection's wrappers; Rocchio, which reads the raw JSON instead, ranks."""
    _index_without_term_vectors(tmp_path / "idx")
    with Index(tmp_path / "idx") as ix:
        ix.configure("bm25", rm3=True, fb_docs=2, fb_terms=5, original_query_weight=0.5)
        with pytest.raises(Exception) as e:
            ix.batch_search({"a": "heart", "b": "risk"}, 10)
        first = str(e.value).splitlines()[0]
        assert "NullPointerException: Please provide an index with stored doc vectors" in first, first
        ix.configure("bm25", rocchio=True, fb_docs=2, fb_terms=5)
        ours = ix.batch_search({"a": "heart", "b": "risk"}, 10)
    reference = jvm.autoclass("io.anserini.search.SimpleSearcher")(str(tmp_path / "idx"))
    reference.set_rocchio("JsonCollection", 5, 2, 0, 0, 1.0, 0.75, 0.0, False, False)
    res = reference.batch_search(_java_list(["heart", "risk"]), _java_list(["a", "b"]), 10, 2)
    assert ours == {q: _convert(res.get(q)) for q in ("a", "b")} and ours["a"]
    reference.close()
