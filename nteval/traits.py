"""What a ranking shows of how it was made, read from the ranking and the index alone: whether its
hits match the query's words (a lexical system's always do), and where they match them (the
abstract nteval searches, or only the title it stripped).

A gate judges runs nteval did not compute (run files, engines, programs) beside runs it did, and
the same ranking must get the same decision however it arrives (:mod:`nteval.gate.families`). For
each of a run's top :data:`TOP` hits on up to :data:`MAX_TOPICS` topics, the query's analyzed terms
(the ``nt`` index's analyzer) are set against the hit's:

- **abstract** (``A``): the hit's abstract (its ``nt`` document) holds a query term;
- **title only** (``T``): its abstract holds none, its title one or more;
- **nowhere** (``N``): neither holds one (a semantic match: an encoder, query expansion);
- **outside** (``O``): the hit is no document of ``nt``: a record without an abstract, whose only
  text is its title (or a docid the collection lacks).

A lexical system (BM25, query likelihood, query reduction, proximity, fusions of them) scores a
document by the query terms it holds, so over the abstracts every hit it returns is an ``A``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .corpus.store import FILENAME, DocStore
from .lucene.jvm import autoclass
from .lucene.searcher import Index

#: hits read per topic, and topics read per run
TOP = 10
MAX_TOPICS = 300
#: a ranking matches words as a lexical system does when at most this share of its searched hits (top
#: :data:`CLASS_TOP`) hold no analyzed query word in their abstract (measured, scripts/title_leak_study.py:
#: 0 for every lexical system nteval runs, at most 0.13 % for an outside BM25 with its own tokenizer
#: (bm25s); from 0.8 % for query expansion, hybrids and encoders)
LEXICAL_NOWHERE = 0.004
#: … and an encoder's ranking holds at least this share of such hits (measured on the six collections
#: of scripts/title_leak_study.py: all-MiniLM-L6-v2, e5 and wordllama from 6.3 %; query expansion and
#: the hybrids from 0.05 % to 9.7 %): between the two, a ranking may be a lexical engine's that lets a
#: few hits through without the query's words (fuzzy matching, synonyms, a stray), or not
ENCODER_NOWHERE = 0.06
#: hits per topic a ranking's class is read from, and the fewest searched hits it needs
CLASS_TOP = 100
MIN_CLASS_HITS = 1000


class Terms:
    """Analyzed terms of texts and of indexed documents, as the index's analyzer makes them."""

    def __init__(self, index_dir: Path):
        self.nt = Index(Path(index_dir) / "nt")
        self._utils = autoclass("io.anserini.index.IndexReaderUtils")
        self._docs: dict[str, frozenset[str] | None] = {}
        self._texts: dict[str, frozenset[str]] = {}
        self._idf: dict[str, float] = {}

    def idf(self, term: str) -> float:
        """log(N / (1 + df)) of an analyzed term in ``nt``."""
        got = self._idf.get(term)
        if got is None:
            import math

            got = self._idf[term] = math.log(max(self.nt.num_docs, 1) / (1 + self.nt.doc_freq(term)))
        return got

    def text(self, text: str) -> frozenset[str]:
        got = self._texts.get(text)
        if got is None:
            got = self._texts[text] = frozenset(self.nt.analyze(text or ""))
        return got

    def document(self, docid: str) -> frozenset[str] | None:
        """The terms Lucene indexed for ``docid`` in ``nt`` (its stored document vector); None when
        ``nt`` does not hold it."""
        if docid not in self._docs:
            try:
                vec = self._utils.getDocumentVector(self.nt._reader, docid)
                self._docs[docid] = frozenset(str(k) for k in vec.keySet().toArray()) if vec is not None else None
            except Exception:  # (a docid nt does not hold)
                self._docs[docid] = None
        return self._docs[docid]

    def abstract(self, docid: str) -> frozenset[str]:
        """:meth:`document`, empty when ``nt`` does not hold it."""
        return self.document(docid) or frozenset()

    def close(self) -> None:
        self.nt.close()


def titles_of(index_dir: Path, docids: Iterable[str]) -> dict[str, str]:
    """The titles of ``docids`` from the index's document store ("" for a docid it lacks)."""
    store = DocStore(Path(index_dir) / FILENAME)
    try:
        return {d: (store.get(d) or {}).get("title", "") or "" for d in set(docids)}
    finally:
        store.close()


@dataclass(frozen=True)
class Matches:
    """Where one run's top hits match their queries (module docstring), over ``topics`` topics."""

    topics: int
    hits: int
    abstract: int
    title_only: int
    nowhere: int
    outside: int

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Matches:
        """The :class:`Matches` an :meth:`as_dict` wrote."""
        return cls(*(int(d[k]) for k in ("topics", "hits", "abstract", "title_only", "nowhere", "outside")))

    def share(self, what: str) -> float:
        return getattr(self, what) / self.hits if self.hits else 0.0

    @property
    def searched(self) -> int:
        """Hits on documents of ``nt`` (what a title-blind system searches)."""
        return self.hits - self.outside

    def ranking_class(self) -> str | None:
        """``lexical`` (its hits hold the query's words, as a lexical system's do), ``non-lexical``,
        or None (fewer than :data:`MIN_CLASS_HITS` searched hits: too few to tell)."""
        if self.searched < MIN_CLASS_HITS:
            return None
        return "lexical" if self.nowhere / self.searched <= LEXICAL_NOWHERE else "non-lexical"

    def may_be_lexical(self) -> bool:
        """A non-lexical ranking whose share of hits without a query word is below what encoders
        reach (:data:`ENCODER_NOWHERE`): a lexical engine with a few strays cannot be ruled out."""
        return self.ranking_class() == "non-lexical" and self.nowhere / self.searched < ENCODER_NOWHERE

    def class_text(self) -> str:
        """What the class was read from, for a person."""
        return (f"{self.nowhere:,} of its {self.searched:,} searched top hits on {self.topics:,} topics hold no word of "
                f"the query ({self.nowhere / max(self.searched, 1):.1%}; a lexical system's: at most "
                f"{LEXICAL_NOWHERE:.1%})")

    def as_dict(self) -> dict[str, Any]:
        return {"topics": self.topics, "hits": self.hits, "abstract": self.abstract, "title_only": self.title_only,
                "nowhere": self.nowhere, "outside": self.outside, "class": self.ranking_class(),
                "shares": {k: round(self.share(k), 4) for k in ("abstract", "title_only", "nowhere", "outside")}}


def matches(terms: Terms, run: Mapping[str, list], topics: Mapping[str, str], titles: Mapping[str, str],
            qids: list[str], top: int = TOP) -> Matches:
    """:class:`Matches` of ``run``'s top ``top`` hits on ``qids`` (``titles``: docid → title)."""
    n = hits = a = t = none = out = 0
    for q in qids:
        qt = terms.text(topics[q])
        ranked = run.get(q, [])[:top]
        if not qt or not ranked:
            continue
        n += 1
        for docid, _ in ranked:
            hits += 1
            doc = terms.document(docid)
            if doc is None:
                out += 1
            elif qt & doc:
                a += 1
            elif qt & terms.text(titles.get(docid, "")):
                t += 1
            else:
                none += 1
    return Matches(n, hits, a, t, none, out)


def read_matches(index_dir: Path, runs: Mapping[str, Mapping[str, list]], topics: Mapping[str, str],
                 names: Iterable[str], top: int = TOP) -> dict[str, Matches]:
    """:func:`matches` of each run of ``names`` (its top ``top``) on the first :data:`MAX_TOPICS`
    topics in id order."""
    names = list(names)
    if not names:
        return {}
    qids = sorted(topics)[:MAX_TOPICS]
    titles = titles_of(index_dir, (d for n in names for q in qids for d, _ in runs[n].get(q, [])[:top]))
    terms = Terms(index_dir)
    try:
        return {n: matches(terms, runs[n], topics, titles, qids, top) for n in names}
    finally:
        terms.close()


#: an encoder's ranking whose top hits are ordered as the references' own model orders them (mean
#: Kendall τ over topics at least this) is judged as that model: measured on the sample and CISI
#: (scripts/title_leak_study.py's runs), all-MiniLM-L6-v2's own rankings (torch 256, ONNX int8 128)
#: reach 0.53 to 0.83 against the int8 reference, e5, wordllama, BM25 and RM3 at most 0.38
SEEN_TAU = 0.45
#: topics and hits per topic the check reads
SEEN_TOPICS, SEEN_TOP = 100, 10


def same_encoder(index_dir: Path, run: Mapping[str, list], topics: Mapping[str, str], encoder: Any,
                 fingerprint: str | None = None) -> dict[str, Any]:
    """Whether a ranking nteval did not compute orders its top :data:`SEEN_TOP` hits as ``encoder``
    (a :class:`~nteval.encoders.models.Encoder`: the references' own model) does: the mean Kendall τ
    between the run's order and the encoder's cosines on up to :data:`SEEN_TOPICS` topics (the hits'
    abstracts and the queries encoded here: about a thousand texts; the hits' vectors are read from
    the index's store instead when that model has encoded ``nt`` of the index with ``fingerprint``,
    as a gate that computed a system of the model leaves it: its vector of a text is the text's
    alone). ``same`` at :data:`SEEN_TAU` or more."""
    import numpy as np
    from scipy.stats import kendalltau

    from .corpus.store import FILENAME, DocStore, index_contents

    qids = [q for q in sorted(topics) if len(run.get(q, [])) >= 3][:SEEN_TOPICS]
    docs = sorted({d for q in qids for d, _ in run[q][:SEEN_TOP]})
    vec = _stored_vectors(index_dir, fingerprint, encoder, docs) if docs and fingerprint else None
    if vec is None:
        store = DocStore(Path(index_dir) / FILENAME)
        try:  # (as the encoder read it when it encoded nt: the abstract alone)
            texts = {d: index_contents("nt", "", (store.get(d) or {}).get("abstract", "") or "") for d in docs}
        finally:
            store.close()
        vec = dict(zip(docs, encoder.embed([texts[d] for d in docs]))) if docs else {}
    queries = dict(zip(qids, encoder.queries([topics[q] for q in qids]))) if qids else {}
    taus = []
    for q in qids:
        ranked = [d for d, _ in run[q][:SEEN_TOP]]
        cos = [float(np.dot(vec[d], queries[q])) for d in ranked]
        tau = kendalltau(range(len(ranked)), [-c for c in cos]).statistic
        if tau == tau:  # (a topic whose cosines all tie has none)
            taus.append(float(tau))
    mean = float(np.mean(taus)) if taus else None
    return {"tau": round(mean, 4) if mean is not None else None, "topics": len(taus), "threshold": SEEN_TAU,
            "same": bool(mean is not None and mean >= SEEN_TAU), "encoder": getattr(encoder, "label", "") or encoder.id,
            "method": f"mean Kendall τ-b over {len(taus)} topics between the run's order of its top {SEEN_TOP} hits and "
                      "the references' encoder's cosines of the same hits"}


def _stored_vectors(index_dir: Path, fingerprint: str, encoder: Any, docs: list[str]) -> dict[str, Any] | None:
    """The rows of ``docs`` in the index's store of ``encoder``'s vectors of ``nt`` (None: not
    encoded yet, or a document it does not hold: the caller encodes them)."""
    from .encoders.store import cache_dir, document_vectors

    if not (cache_dir(Path(index_dir), "nt", fingerprint, encoder) / "meta.json").is_file():
        return None
    vec = document_vectors(Path(index_dir), "nt", fingerprint, encoder, progress=False)
    row = {d: i for i, d in enumerate(vec.docids)}
    if any(d not in row for d in docs):
        return None
    return {d: vec.matrix[row[d]] for d in docs}
