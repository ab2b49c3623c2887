"""The proximity kinds (nteval.systems.proximity) on a real index (the 200-record PubMed slice, term
positions from Lucene's stored term vectors): where a query's words stand side by side, BM25's
ranking changes."""
from __future__ import annotations

import pytest

from nteval.formats.trec import trec_order
from nteval.lucene.searcher import Index
from nteval.systems.base import make_system
from nteval.systems.execute import run_system


def test_adjacent_query_words_lift_a_document_above_bm25s_order(first200_index):
    """bm25_proximity = 2 × BM25 + the inter-match-distance score on BM25's top 100. For a two-word
    query, a document where the two words stand adjacent gains at least 1 (one pair at distance 1,
    both words matched); one holding only one of the words gains nothing. So the ranking is not
    BM25's: an adjacent-words document overtakes one BM25 ranked above it whose words stand apart."""
    topics = {"q": "cancer cells"}
    with Index(first200_index / "nt") as ix:
        bm25 = run_system(ix, make_system("bm25", "bm25"), topics, 100)["q"]
        prox = run_system(ix, make_system("prox", "bm25_proximity"), topics, 100)["q"]
        terms = list(dict.fromkeys(ix.analyze(topics["q"])))
        positions = {d: ix.term_positions(d, terms) for d, _ in bm25}
    assert terms == ["cancer", "cell"] and len(bm25) > 20

    def adjacent(docid: str) -> bool:
        first, second = (positions[docid].get(t, []) for t in terms)
        return any(abs(i - j) == 1 for i in first for j in second)

    before, after = [d for d, _ in trec_order(bm25)], [d for d, _ in trec_order(prox)]
    assert sorted(after) == sorted(before) and after != before  # the same documents (all reranked), a new order
    bm25_score = dict(bm25)
    gain = {d: s - 2.0 * bm25_score[d] for d, s in prox}
    near = [d for d in before if adjacent(d)]
    apart = [d for d in before if len(positions[d]) == 2 and not adjacent(d)]
    one_word = [d for d in before if len(positions[d]) == 1]
    assert near and apart and one_word
    assert all(gain[d] >= 1.0 - 1e-9 for d in near)
    assert all(gain[d] == pytest.approx(0.0, abs=1e-9) for d in one_word)
    overtaken = [(n, a) for n in near for a in apart
                 if before.index(a) < before.index(n) and after.index(n) < after.index(a)]
    assert overtaken, "no adjacent-words document rose above a words-apart one BM25 had ranked higher"


def test_the_top_does_not_depend_on_the_depth_asked_for(first200_index):
    """The combined score decides the cut: bm25_proximity's top 10 is the first 10 of its top 100
    (it was BM25's first 10, re-sorted, when asked for fewer than it reranks)."""
    from nteval.corpus.store import DocStore

    store = DocStore(first200_index / "docs.sqlite")
    try:
        topics = {d: t for d, t in store.db.execute("SELECT docid, title FROM docs WHERE title != '' ORDER BY seq LIMIT 80")}
    finally:
        store.close()
    with Index(first200_index / "nt") as ix:
        system = make_system("prox", "bm25_proximity")
        deep = run_system(ix, system, topics, 100)
        shallow = run_system(ix, system, topics, 10)
    for q in topics:
        assert trec_order(shallow[q]) == trec_order(deep[q])[:10], q


def test_positions_of_a_batch_are_anserinis_term_positions_of_each_document(first200_index):
    """``Index.positions`` (one call into nteval's Java helper per topic) gives, for every document,
    what Anserini's ``IndexReaderUtils.getTermPositions`` gives (one call per document, a map of all
    its terms) restricted to the query's terms; a term a document lacks is absent, and a docid the
    index does not hold has no positions."""
    from nteval.lucene import jvm
    from nteval.lucene.searcher import FIELD

    utils = jvm.autoclass("io.anserini.index.IndexReaderUtils")
    with Index(first200_index / "nt") as ix:
        reader = utils.getReader(str((first200_index / "nt").absolute()))
        docids = [d for d, _ in ix.search("cancer cells in patients treated with a drug", 60)]
        terms = list(dict.fromkeys(ix.analyze("cancer cells in patients treated with a drug zzzunknownword")))
        got = ix.positions([*docids, "no-such-docid"], terms)
        seen = 0
        for docid, found in zip(docids, got):
            m = utils.getTermPositions(reader, docid)
            want = {t: [int(x) for x in m.get(t).toArray()] for t in terms if m.get(t) is not None}
            assert found == want, docid
            seen += sum(map(len, want.values()))
        reader.close()
    assert FIELD == "contents" and seen > 100 and len(got) == len(docids) + 1
    assert got[-1] == {} and all("zzzunknownword" not in f for f in got)
    assert sum(len(f) < len(terms) for f in got[:-1]) > 0   # some document lacks some term
