"""The paper's automatic query generators, as Lucene boolean queries scored by BM25.

All three start from the query's unique analyzed terms (the index's own analyzer), drop terms the
index does not contain (df = 0: they can match nothing, and in a conjunction they would empty
every stage), sort the rest by increasing document frequency (ties: term), and keep the
``max_words`` rarest:

- **disjunctive**: OR of the kept terms.
- **conj_disj** (conjunctive-disjunctive): the kept terms split into the rarer half (the larger
  half when odd) and the rest; query = (OR of group 1) AND (OR of group 2). One term → that term.
- **and_then** (combination "and then"): stage 1 = AND of all kept terms, stage 2 = AND of the
  m−1 rarest, …, stage m−1 = AND of the 2 rarest, last stage = OR of all kept terms. Each stage
  only fills ranks the earlier stages left empty (documents already ranked are skipped); scores
  are written as ``(stages − stage) × 1000 + BM25`` so that TREC scores fall with rank.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..lucene import queries
from ..lucene.searcher import Index, Ranking
from ..params import Param
from .kind import RunContext, SystemKind
from .lucene_kinds import K1, B

if TYPE_CHECKING:
    from ..formats.trec import Run
    from .system import System

STAGE_OFFSET = 1000.0


def ranked_terms(index: Index, text: str, max_words: int) -> list[str]:
    seen: list[str] = []
    for t in index.analyze(text):
        if t not in seen:
            seen.append(t)
    present = [t for t in seen if index.doc_freq(t) > 0]
    return sorted(present, key=lambda t: (index.doc_freq(t), t))[:max_words]


def disjunctive(index: Index, text: str, k: int, max_words: int) -> Ranking:
    terms = ranked_terms(index, text, max_words)
    return index.search_query(queries.disjunction(terms), k) if terms else []


def conj_disj(index: Index, text: str, k: int, max_words: int) -> Ranking:
    terms = ranked_terms(index, text, max_words)
    if not terms:
        return []
    if len(terms) == 1:
        return index.search_query(queries.disjunction(terms), k)
    half = (len(terms) + 1) // 2
    return index.search_query(queries.conjunction_of_disjunctions([terms[:half], terms[half:]]), k)


def and_then(index: Index, text: str, k: int, max_words: int) -> Ranking:
    terms = ranked_terms(index, text, max_words)
    if not terms:
        return []
    stages = [queries.conjunction(terms[:j]) for j in range(len(terms), 1, -1)] + [queries.disjunction(terms)]
    out: Ranking = []
    taken: set[str] = set()
    for s, q in enumerate(stages):
        if len(out) >= k:
            break
        for docid, score in index.search_query(q, k):
            if docid not in taken:
                taken.add(docid)
                out.append((docid, (len(stages) - s) * STAGE_OFFSET + score))
                if len(out) >= k:
                    break
    return out


class PerQueryBM25(SystemKind):
    """A query generator of this module: each query built in Python from the max_words rarest
    terms and searched with BM25 (k1, b), one at a time."""

    family = "reduction"
    #: the generator: (index, text, depth, max_words) → ranking
    generate: staticmethod

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        index, p = target.lucene, system.params
        index.configure("bm25", k1=p["k1"], b=p["b"])
        out: Run = {}
        for qid, text in topics.items():
            out[qid] = self.generate(index, text, depth, p["max_words"])
            ctx.tick(1)
        return out


def _max_words(default: int) -> Param:
    return Param("max_words", default, "the rarest analyzed query terms kept", positive=True)


class Disjunctive(PerQueryBM25):
    name, generate = "disjunctive", staticmethod(disjunctive)
    params = (K1, B, _max_words(5))
    summary = "OR of the max_words rarest query terms (Campagne 2008)"


class ConjDisj(PerQueryBM25):
    name, generate = "conj_disj", staticmethod(conj_disj)
    params = (K1, B, _max_words(6))
    summary = "(OR of the rarer half) AND (OR of the rest) (Campagne 2008)"


class AndThen(PerQueryBM25):
    name, generate = "and_then", staticmethod(and_then)
    params = (K1, B, _max_words(5))
    summary = "AND of all kept terms, then of fewer, then OR (Campagne 2008)"
