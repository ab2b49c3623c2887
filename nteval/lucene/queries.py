"""Lucene boolean queries over analyzed terms (for the paper's query generators).

Terms are already analyzed, so they go in as ``TermQuery`` objects: no query parser is involved
and titles with Lucene syntax (``"``, ``:``, ``AND``, ``*``...) can never be misread.
"""
from __future__ import annotations

from collections.abc import Sequence

from . import jvm
from .searcher import FIELD


def _classes():
    return (jvm.autoclass("org.apache.lucene.search.BooleanQuery$Builder"),
            jvm.autoclass("org.apache.lucene.search.BooleanClause$Occur"),
            jvm.autoclass("org.apache.lucene.search.TermQuery"),
            jvm.autoclass("org.apache.lucene.index.Term"))


def _terms(terms: Sequence[str], occur: str):
    Builder, Occur, TermQuery, Term = _classes()
    b = Builder()
    for t in terms:
        b.add(TermQuery(Term(FIELD, t)), getattr(Occur, occur))
    return b.build()


def disjunction(terms: Sequence[str]):
    """OR of the terms (score = sum of matching terms' scores)."""
    return _terms(terms, "SHOULD")


def conjunction(terms: Sequence[str]):
    """AND of the terms."""
    return _terms(terms, "MUST")


def conjunction_of_disjunctions(groups: Sequence[Sequence[str]]):
    """(OR of group 1) AND (OR of group 2) AND ..."""
    Builder, Occur, _TermQuery, _Term = _classes()
    inner = [disjunction(g) for g in groups if g]  # built first: nesting builders lost clauses
    b = Builder()
    for q in inner:
        b.add(q, Occur.MUST)
    return b.build()
