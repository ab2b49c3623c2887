"""A handle on one Lucene index: ranked search (bag-of-words or Lucene query objects), collection
statistics, stored documents, term positions.

Goes straight to Anserini's Java classes (``SimpleSearcher``, ``IndexReaderUtils``) through
:mod:`nteval.lucene.jvm`; importing ``pyserini.search`` would import torch. Call it from one
Python thread: pyjnius is not safe for concurrent calls (parallelism lives in separate processes).

Fast path: without feedback (RM3/Rocchio), ranking runs on a plain Lucene ``IndexSearcher`` with
Anserini's query generator, similarity and sort (score, then docid), and hits are mapped to
collection docids through a table read once per index. ``SimpleSearcher`` would load every
hit's stored document (the raw JSON) to read its id — 80 % of the search time — and rounds
scores to 4 decimals. Same documents in the same order; scores here are Lucene's exact float32.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import InputError
from . import jvm
from .docids import DocidTable, open_table

FIELD = "contents"
Ranking = list[tuple[str, float]]

#: Lucene refuses a query of more than 1,024 clauses (``TooManyClauses``) by default, and one long
#: query (a BEIR title, a 3rd sentence that is a whole table) then aborted a whole protocol. The
#: limit is raised to this many, enough for any text of a stored record (see
#: ``corpus.document.MAX_RECORD_CHARS``); queries above Lucene's default are counted
#: (:attr:`Index.long_queries`, ``long_queries`` in a run's ``.meta.json``).
MAX_CLAUSES = 1_000_000
#: queries per SimpleSearcher call for feedback systems (RM3, Rocchio): bounds the JVM heap they need
FEEDBACK_BATCH = 100
LUCENE_DEFAULT_CLAUSES = 1024


class Index:
    """An open Lucene index (read-only)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not any(self.path.glob("segments_*")):
            raise InputError(self.path, "not a Lucene index (no segments_N file)")
        self._searcher = jvm.autoclass("io.anserini.search.SimpleSearcher")(str(self.path))
        self._utils = jvm.autoclass("io.anserini.index.IndexReaderUtils")
        self._reader = self._utils.getReader(str(self.path))
        self._Term = jvm.autoclass("org.apache.lucene.index.Term")
        self._df_cache: dict[str, int] = {}
        self._feedback = False
        self._fast = jvm.autoclass("org.apache.lucene.search.IndexSearcher")(self._reader)
        self._fast.setSimilarity(self._searcher.get_similarity())
        self._analyzer = self._searcher.get_analyzer()
        self._bow = jvm.autoclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
        self._sort = jvm.autoclass("io.anserini.search.SearchCollection").BREAK_SCORE_TIES_BY_DOCID
        self._docids: DocidTable | None = None
        self.long_queries = 0  # bag-of-words queries of more than LUCENE_DEFAULT_CLAUSES distinct terms
        jvm.autoclass("org.apache.lucene.search.IndexSearcher").setMaxClauseCount(MAX_CLAUSES)  # static, per JVM

    def close(self) -> None:
        self._searcher.close()
        self._reader.close()

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- collection -------------------------------------------------------------------------
    @property
    def num_docs(self) -> int:
        """Live documents (deleted ones excluded)."""
        return int(self._reader.numDocs())

    @property
    def max_doc(self) -> int:
        """Documents including deleted ones not yet merged away (== num_docs in our indexes)."""
        return int(self._reader.maxDoc())

    def analyze(self, text: str) -> list[str]:
        """Terms of ``text`` under the index's analyzer (Porter stemming, stopwords removed)."""
        return [str(t) for t in jvm.autoclass("io.anserini.analysis.AnalyzerUtils").analyze(self._analyzer, text)]

    def doc_freq(self, term: str) -> int:
        """Document frequency of an already-analyzed term (0 if absent); cached."""
        df = self._df_cache.get(term)
        if df is None:
            df = self._df_cache[term] = int(self._reader.docFreq(self._Term(FIELD, term)))
        return df

    def raw(self, docid: str) -> str | None:
        r = self._searcher.doc_raw(docid)
        return None if r is None else str(r)

    def term_positions(self, docid: str, terms: Sequence[str]) -> dict[str, list[int]]:
        """Positions of the given analyzed terms in ``docid`` (from the stored term vectors)."""
        m = self._utils.getTermPositions(self._reader, docid)
        out: dict[str, list[int]] = {}
        for t in terms:
            lst = m.get(t)
            if lst is not None:
                out[t] = [int(x) for x in lst.toArray()]
        return out

    # -- scoring model ----------------------------------------------------------------------
    def configure(self, model: str, **params: float) -> None:
        """Similarity and feedback for bag-of-words search: ``bm25`` (k1, b), ``qld`` (mu),
        plus optional ``rm3`` / ``rocchio`` feedback parameters."""
        s = self._searcher
        s.unset_rm3()
        s.unset_rocchio()
        if model == "qld":
            s.set_qld(float(params.get("mu", 1000.0)))
        else:
            s.set_bm25(float(params.get("k1", 0.9)), float(params.get("b", 0.4)))
        if params.get("rm3"):
            s.set_rm3(int(params["fb_docs"]), int(params["fb_terms"]), float(params["original_query_weight"]))
        if params.get("rocchio"):
            # (collection class, top fb terms, top fb docs, bottom fb terms, bottom fb docs, alpha, beta, gamma,
            #  output query, use negative)
            s.set_rocchio("JsonCollection", int(params["fb_terms"]), int(params["fb_docs"]), 0, 0,
                          float(params.get("alpha", 1.0)), float(params.get("beta", 0.75)), 0.0, False, False)
        self._feedback = bool(params.get("rm3") or params.get("rocchio"))
        self._fast.setSimilarity(s.get_similarity())

    # -- search -----------------------------------------------------------------------------
    def _count_long(self, text: str) -> None:
        if len(text.split()) > LUCENE_DEFAULT_CLAUSES // 2 and len(set(self.analyze(text))) > LUCENE_DEFAULT_CLAUSES:
            self.long_queries += 1

    def search(self, query: str, k: int = 1000) -> Ranking:
        """Bag-of-words search (Lucene syntax in ``query`` is not interpreted)."""
        self._count_long(query)
        if self._feedback:
            return _convert(self._searcher.search(query, int(k)))
        return self.search_query(self._bow.buildQuery(FIELD, self._analyzer, query), k)

    def batch_search(self, queries: dict[str, str], k: int = 1000, threads: int = 2) -> dict[str, Ranking]:
        """Bag-of-words search of many queries on ``threads`` Java threads (one call into Java per
        batch: pyjnius itself is not thread-safe). Same documents, order and scores as :meth:`search`."""
        if not queries:
            return {}
        if not self._feedback:
            return self._batch_fast(queries, k, threads)
        qids = list(queries)
        for q in qids:
            self._count_long(queries[q])
        out: dict[str, Ranking] = {}
        # SimpleSearcher holds every hit's stored document until the call returns: 100 queries ×
        # 1,000 hits of ~4 KB is ~400 MB of heap; 500 at once grew the JVM to its 4 GB cap
        for i in range(0, len(qids), FEEDBACK_BATCH):
            part = qids[i:i + FEEDBACK_BATCH]
            res = self._searcher.batch_search(_java_list(queries[q] for q in part), _java_list(part), int(k), int(threads))
            out.update({q: _convert(res.get(q)) for q in part})
        return out

    def search_query(self, query, k: int = 1000) -> Ranking:
        """Search with a Lucene ``Query`` object (see :mod:`nteval.lucene.queries`); no feedback."""
        if query is None:
            return []
        table = self._docids if self._docids is not None else self._docid_table()
        hits = self._fast.search(query, int(k), self._sort, True).scoreDocs
        ids = table.take([h.doc for h in hits])
        return [(d, float(h.score)) for d, h in zip(ids, hits)]

    def _batch_fast(self, queries: dict[str, str], k: int, threads: int) -> dict[str, Ranking]:
        import numpy as np

        qids = list(queries)
        for q in qids:
            self._count_long(queries[q])
        table = self._docids if self._docids is not None else self._docid_table()
        k = max(1, min(int(k), max(1, self.max_doc)))
        docs, scores, counts = jvm.autoclass("nteval.BatchSearch").search(
            self._fast, self._bow, self._analyzer, FIELD, [queries[q] for q in qids], k, self._sort, int(threads))
        docs = np.asarray(docs, dtype=np.int64).reshape(len(qids), k)
        scores = np.asarray(scores, dtype=np.float32).reshape(len(qids), k).tolist()
        out: dict[str, Ranking] = {}
        for i, q in enumerate(qids):
            n = int(counts[i])
            out[q] = list(zip(table.take(docs[i, :n]), scores[i][:n]))
        return out

    def _docid_table(self) -> DocidTable:
        """Lucene doc number → collection docid (:mod:`nteval.lucene.docids`: a memory-mapped file
        beside the index, shared by every process)."""
        self._docids = open_table(self.path, self._reader)
        return self._docids


def _java_list(items):
    lst = jvm.autoclass("java.util.ArrayList")()
    for x in items:
        lst.add(x)
    return lst


def _convert(hits) -> Ranking:
    if hits is None:
        return []
    return [(str(h.docid), float(h.score)) for h in hits]
