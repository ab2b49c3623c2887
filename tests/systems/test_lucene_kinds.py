"""The Lucene bag-of-words kinds (nteval.systems.lucene_kinds: BM25, QLD, BM25 with RM3 or Rocchio
feedback) and every kind that searches Lucene: queries with Lucene syntax never crash, and queries
that analyze to nothing rank nothing (real index, real Lucene)."""
from __future__ import annotations

import pytest

from nteval.lucene.searcher import Index
from nteval.systems.base import make_system
from nteval.systems.execute import run_system

NASTY = {
    "q1": 'Insulin "resistance": (a) AND glucose* OR fat? -obesity /liver\\',
    "q2": "the of and",                      # analyzes to nothing
    "q3": "NOT AND OR",
    "q4": "[Brackets] {braces} ~tilde ^caret !bang &&",
    "q5": "http://example.org/a?b=c",
}


@pytest.mark.parametrize("algorithm", ["bm25", "qld", "bm25_rm3", "bm25_rocchio", "disjunctive", "conj_disj",
                                       "and_then", "proximity", "bm25_proximity"])
def test_lucene_syntax_never_crashes_and_empty_queries_rank_nothing(first200_index, algorithm):
    with Index(first200_index / "nt") as ix:
        run = run_system(ix, make_system("s", algorithm), NASTY, depth=20)
    assert set(run) == set(NASTY)
    assert run["q2"] == []
    if algorithm != "conj_disj":  # (an AND of two ORs may legitimately match nothing in 178 docs)
        assert run["q1"], "words of a query with Lucene syntax are still searched"

