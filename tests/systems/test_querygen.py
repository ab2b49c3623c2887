"""Query generators (nteval.systems.querygen: disjunctive, conj_disj, and_then) follow the index's
document frequencies (real index, real Lucene)."""
from __future__ import annotations

from nteval.lucene.searcher import Index


def test_query_generators_follow_document_frequency(first200_index):
    from nteval.systems.querygen import and_then, conj_disj, disjunctive, ranked_terms

    with Index(first200_index / "nt") as ix:
        ix.configure("bm25")
        text = "Dopamine modulates acute responses to cocaine, nicotine and ethanol in Drosophila"
        terms = ranked_terms(ix, text, 10)
        dfs = [ix.doc_freq(t) for t in terms]
        assert dfs == sorted(dfs) and all(df > 0 for df in dfs)
        one = disjunctive(ix, text, 1000, 1)
        assert len(one) == dfs[0]  # OR of the single rarest term matches exactly its df documents
        both = conj_disj(ix, text, 1000, 2)  # (rarest) AND (second rarest)
        assert {d for d, _ in both} <= {d for d, _ in one}
        staged = and_then(ix, text, 1000, 5)
        scores = [s for _, s in staged]
        assert scores == sorted(scores, reverse=True)
        assert len(staged) == len(disjunctive(ix, text, 1000, 5))  # the final OR stage fills the rest

