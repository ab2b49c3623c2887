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

Feedback systems run Anserini's own reranker cascade (``Rm3Reranker`` / ``RocchioReranker``, then
``ScoreTiesAdjusterReranker``, as ``SimpleSearcher.set_rm3``/``set_rocchio`` build it) on Java threads,
on a searcher that loads no stored documents (``nteval.BatchSearch.feedbackSearch``): the same
documents and scores as ``SimpleSearcher.batch_search`` (tested), without holding every hit's JSON
in the heap.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
LUCENE_DEFAULT_CLAUSES = 1024
#: hit slots per call into Java (queries × k): the flat arrays it returns stay ≈ 80 MB
BATCH_HITS = 10_000_000
#: queries per Java batch of :meth:`Index.batch_search` (its rankings are made while the next batch searches)
PIPELINE_QUERIES = 100


class Index:
    """An open Lucene index (read-only)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not any(self.path.glob("segments_*")):
            raise InputError(self.path, "not a Lucene index (no segments_N file)")
        where = str(self.path.absolute())  # the JVM's working directory is where it started, not ours
        self._searcher = jvm.autoclass("io.anserini.search.SimpleSearcher")(where)
        self._utils = jvm.autoclass("io.anserini.index.IndexReaderUtils")
        self._reader = self._utils.getReader(where)
        self._Term = jvm.autoclass("org.apache.lucene.index.Term")
        self._df_cache: dict[str, int] = {}
        self._cascade = None  # Anserini reranker cascade of the configured feedback system, if any
        self._cutoff = False  # RM3 feeds back from SimpleSearcher's first stage of `rerankcutoff` hits
        self._fast = jvm.autoclass("org.apache.lucene.search.IndexSearcher")(self._reader)
        self._fast.setSimilarity(self._searcher.get_similarity())
        self._batch = jvm.autoclass("nteval.BatchSearch")
        self._fb = self._batch.feedbackSearcher(self._reader)
        self._analyzer = self._searcher.get_analyzer()
        self._bow = jvm.autoclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
        self._sort = jvm.autoclass("io.anserini.search.SearchCollection").BREAK_SCORE_TIES_BY_DOCID
        self._docids: DocidTable | None = None
        self.long_queries = 0  # bag-of-words queries of more than LUCENE_DEFAULT_CLAUSES distinct terms
        jvm.autoclass("org.apache.lucene.search.IndexSearcher").setMaxClauseCount(MAX_CLAUSES)  # static, per JVM

    def close(self) -> None:
        self._searcher.close()
        self._reader.close()

    def __enter__(self) -> Index:
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
        """Positions of the given analyzed terms in ``docid`` (from the stored term vectors); a term
        the document lacks is absent."""
        return self.positions([docid], terms)[0]

    def positions(self, docids: Sequence[str], terms: Sequence[str]) -> list[dict[str, list[int]]]:
        """:meth:`term_positions` of each of ``docids``, in one call into Java
        (``BatchSearch.termPositions``: a call per document, returning a map of all its terms, was
        most of a proximity system's time)."""
        import numpy as np

        terms = list(terms)
        if not docids or not terms:
            return [{} for _ in docids]
        packed = self._batch.termPositions(self._reader, "id", FIELD, [str(d) for d in docids], terms)
        data = np.frombuffer(packed.tostring() if hasattr(packed, "tostring") else bytes(packed), dtype="<i4").tolist()
        out: list[dict[str, list[int]]] = []
        pos = 0
        for _ in docids:
            found: dict[str, list[int]] = {}
            for t in terms:
                n = data[pos]
                if n:
                    found[t] = data[pos + 1:pos + 1 + n]
                pos += 1 + n
            out.append(found)
        return out

    # -- scoring model ----------------------------------------------------------------------
    def configure(self, model: str, **params: float) -> None:
        """Similarity and feedback for bag-of-words search: ``bm25`` (k1, b), ``qld`` (mu),
        plus optional ``rm3`` / ``rocchio`` feedback (``fb_docs`` feedback documents, ``fb_terms``
        expansion terms, and ``original_query_weight`` or ``alpha``/``beta``)."""
        s = self._searcher
        if model == "qld":
            s.set_qld(float(params.get("mu", 1000.0)))
        else:
            s.set_bm25(float(params.get("k1", 0.9)), float(params.get("b", 0.4)))
        self._fast.setSimilarity(s.get_similarity())
        self._fb.setSimilarity(s.get_similarity())
        self._cascade, self._cutoff = None, False
        if params.get("rm3"):
            # as SimpleSearcher.set_rm3(fbTerms, fbDocs, weight): no collection parser, filterTerms on
            rm3 = jvm.autoclass("io.anserini.rerank.lib.Rm3Reranker")(
                self._analyzer, None, FIELD, int(params["fb_terms"]), int(params["fb_docs"]),
                float(params["original_query_weight"]), False, True)
            self._cascade, self._cutoff = _cascade("rm3", rm3), True
        elif params.get("rocchio"):
            # as SimpleSearcher.set_rocchio("JsonCollection", top fb terms, top fb docs, bottom fb terms,
            # bottom fb docs, alpha, beta, gamma, output query, use negative)
            parser = jvm.autoclass("java.lang.Class").forName("io.anserini.collection.JsonCollection")
            rocchio = jvm.autoclass("io.anserini.rerank.lib.RocchioReranker")(
                self._analyzer, parser, FIELD, int(params["fb_terms"]), int(params["fb_docs"]), 0, 0,
                float(params.get("alpha", 1.0)), float(params.get("beta", 0.75)), 0.0, False, False)
            self._cascade = _cascade("rocchio", rocchio)

    # -- search -----------------------------------------------------------------------------
    def _count_long(self, text: str) -> None:
        if len(text.split()) > LUCENE_DEFAULT_CLAUSES // 2 and len(set(self.analyze(text))) > LUCENE_DEFAULT_CLAUSES:
            self.long_queries += 1

    def search(self, query: str, k: int = 1000) -> Ranking:
        """Bag-of-words search (Lucene syntax in ``query`` is not interpreted)."""
        if self._cascade is not None:
            return self.batch_search({"q": query}, k, threads=1)["q"]
        self._count_long(query)
        return self.search_query(self._bow.buildQuery(FIELD, self._analyzer, query), k)

    def batch_search(self, queries: dict[str, str], k: int = 1000, threads: int = 2) -> dict[str, Ranking]:
        """Bag-of-words search of many queries on ``threads`` Java threads (one call into Java per
        batch: pyjnius itself is not thread-safe). Same documents, order and scores as :meth:`search`."""
        if not queries:
            return {}
        qids = list(queries)
        for q in qids:
            self._count_long(queries[q])
        k = self._depth(k)
        out: dict[str, Ranking] = {}
        # batches of PIPELINE_QUERIES (Java's arrays hold len(batch) × k slots): while Java searches
        # batch i + 1 on its threads, this thread turns batch i's hits into rankings
        step = max(1, min(BATCH_HITS // k, PIPELINE_QUERIES))
        parts = [qids[i:i + step] for i in range(0, len(qids), step)]

        def start(part: list[str]):
            texts = [queries[q] for q in part]
            if self._cascade is None:
                return self._batch.startSearch(self._fast, self._bow, self._analyzer, FIELD, texts, k, self._sort,
                                               int(threads))
            return self._batch.startFeedbackSearch(self._fb, self._bow, self._analyzer, FIELD, texts, k, self._sort,
                                                   self._cascade, self._cutoff, int(threads))

        pending = start(parts[0])
        try:
            for j, part in enumerate(parts):
                found = pending.get()
                pending = start(parts[j + 1]) if j + 1 < len(parts) else None
                out.update(self._rankings(part, found))
        finally:
            if pending is not None:  # (an error or Ctrl-C here: the next batch stops)
                pending.cancel()
        return out

    def similarity(self, model: str, **params: float):
        """The Lucene ``Similarity`` :meth:`configure` would set for ``model`` (``bm25``: k1, b;
        ``qld``: mu), without changing this index's own."""
        s = jvm.autoclass("io.anserini.search.SimpleSearcher")(str(self.path.absolute()))
        try:
            if model == "qld":
                s.set_qld(float(params.get("mu", 1000.0)))
            else:
                s.set_bm25(float(params.get("k1", 0.9)), float(params.get("b", 0.4)))
            return s.get_similarity()
        finally:
            s.close()

    def grid_search(self, queries: dict[str, str], k: int, similarities: Sequence[Any],
                    threads: int = 2) -> list[dict[str, Ranking]]:
        """Every similarity's rankings of ``queries`` from one pass over the postings (one list of
        rankings per similarity, in their order): the same documents, order and scores as
        :meth:`batch_search` with each similarity configured in turn (``nteval.GridSearch``:
        exhaustive, Lucene's own per-term scores, ties by docid)."""
        import numpy as np

        out: list[dict[str, Ranking]] = [{} for _ in similarities]
        if not queries or not similarities:
            return out
        qids = list(queries)
        for q in qids:
            self._count_long(queries[q])
        k = self._depth(k)
        table = self._docid_table()
        rank = self._docid_ranks()
        grid = jvm.autoclass("nteval.GridSearch")
        sims = list(similarities)
        step = max(1, BATCH_HITS // (k * len(sims)))
        for i in range(0, len(qids), step):
            part = qids[i:i + step]
            docs, scores, counts = grid.search(self._fast, self._bow, self._analyzer, FIELD, [queries[q] for q in part],
                                               k, sims, rank, int(threads))
            n = len(part)
            docs = np.asarray(docs, dtype=np.int64).reshape(len(sims), n, k)
            scores = np.asarray(scores, dtype=np.float32).reshape(len(sims), n, k)
            counts = np.asarray(counts, dtype=np.int64).reshape(len(sims), n)
            for c in range(len(sims)):
                for j, q in enumerate(part):
                    m = int(counts[c, j])
                    out[c][q] = list(zip(table.take(docs[c, j, :m]), scores[c, j, :m].tolist()))
        return out

    def grid_evaluate(self, queries: dict[str, str], depth: int, similarities: Sequence[Any],
                      qrels: dict[str, dict[str, int]], measures: Sequence[str], held: dict[str, set[str]] | None = None,
                      threads: int = 2) -> list[tuple[dict[str, dict[str, float]], int]]:
        """Every similarity's per-topic ``measures`` (RR, AP, Bpref, P@k, R@k, Success@k: trec_eval's
        values) against ``qrels`` from one pass, without a ranking crossing into Python: for each
        similarity, ({qid of qrels: {measure: value}}, how many queries rank nothing). The rankings
        are those of :meth:`grid_search` at ``depth`` (plus the longest ``held`` list, whose
        documents are then dropped), as a run file holds them (scores to 6 decimals, trec_eval's
        order)."""
        import numpy as np

        sims = list(similarities)
        qids = list(queries)
        extra = max((len(v) for v in (held or {}).values()), default=0)
        k = self._depth(depth + extra)
        position = self._docid_positions()
        judged = [[position.get(d, -1) for d in qrels.get(q, {})] for q in qids]
        rels = [[int(r) for r in qrels.get(q, {}).values()] for q in qids]
        drops = [[position[d] for d in (held or {}).get(q, ()) if d in position] for q in qids]
        grid = jvm.autoclass("nteval.GridSearch")
        rank = self._docid_ranks()
        names = [str(m) for m in measures]
        per: list[dict[str, dict[str, float]]] = [{} for _ in sims]
        empty = [0] * len(sims)
        step = 2000
        for i in range(0, len(qids), step):
            part = qids[i:i + step]
            vals = np.asarray(grid.evaluate(self._fast, self._bow, self._analyzer, FIELD, [queries[q] for q in part],
                                            int(depth), k - int(depth), sims, rank,
                                            judged[i:i + step], rels[i:i + step], drops[i:i + step], names,
                                            int(threads)), dtype=np.float64)
            n, nm = len(part), len(names)
            values = vals[: len(sims) * n * nm].reshape(len(sims), n, nm).tolist()
            flags = vals[len(sims) * n * nm:].reshape(len(sims), n)
            for c in range(len(sims)):
                empty[c] += int(flags[c].sum())
                for j, q in enumerate(part):
                    if q in qrels:
                        per[c][q] = dict(zip(names, values[c][j]))
        return [({q: p.get(q, dict.fromkeys(names, 0.0)) for q in qrels}, e) for p, e in zip(per, empty)]

    def _docid_positions(self) -> dict[str, int]:
        """Collection docid → Lucene doc number."""
        if getattr(self, "_positions", None) is None:
            self._positions = {d: i for i, d in enumerate(self._docid_table().tolist())}
        return self._positions

    def _docid_ranks(self):
        """Each Lucene doc number's position in docid order (the score ties' order), as a Java int[]."""
        if getattr(self, "_ranks", None) is None:
            import numpy as np

            ids = self._docid_table().tolist()
            order = sorted(range(len(ids)), key=ids.__getitem__)
            rank = np.empty(len(ids), dtype=np.int32)
            rank[order] = np.arange(len(ids), dtype=np.int32)
            self._ranks = rank.tolist()
        return self._ranks

    def feedback_terms(self, query: str, k: int = 1000) -> dict[str, float]:
        """The weighted terms the configured feedback system searched with for ``query`` (RM3: the
        query interpolated with the relevance model); empty without feedback or for an empty query."""
        if self._cascade is None:
            return {}
        terms = self._batch.feedbackTerms(self._fb, self._bow, self._analyzer, FIELD, query, self._depth(k),
                                          self._sort, self._cascade, self._cutoff)
        return {str(t): float(terms.get(t)) for t in terms.keySet().toArray()}

    def _depth(self, k: int) -> int:
        """``k`` as a Java batch allocates it: at least 1, at most the index's documents."""
        return max(1, min(int(k), max(1, self.max_doc)))

    def search_query(self, query, k: int = 1000) -> Ranking:
        """Search with a Lucene ``Query`` object (see :mod:`nteval.lucene.queries`); no feedback."""
        if query is None:
            return []
        # (one call into Java: reading each hit's doc and score was a call per hit)
        return self._rankings([""], self._batch.searchQuery(self._fast, query, self._depth(k), self._sort))[""]

    def _rankings(self, qids: list[str], packed) -> dict[str, Ranking]:
        """The Java batch's hits (one byte array: the counts, then every hit's Lucene doc number,
        then its score, little-endian; ``BatchSearch.packed``) → rankings. Bytes, not Java int[] and
        float[]: pyjnius makes a Python list of those, a third of the batch's time."""
        import gc

        import numpy as np

        data = packed.tostring() if hasattr(packed, "tostring") else bytes(packed)
        n = len(qids)
        counts = np.frombuffer(data, dtype="<i4", count=n)
        total = int(counts.sum())
        ids = self._docid_table().take(np.frombuffer(data, dtype="<i4", count=total, offset=4 * n))
        scores = np.frombuffer(data, dtype="<f4", count=total, offset=4 * (n + total)).tolist()
        out: dict[str, Ranking] = {}
        pos = 0
        collecting = gc.isenabled()
        gc.disable()  # (a million (docid, score) tuples hold no cycle: no collection while they are made)
        try:
            for q, c in zip(qids, counts.tolist()):
                out[q] = list(zip(ids[pos:pos + c], scores[pos:pos + c]))
                pos += c
        finally:
            if collecting:
                gc.enable()
        return out

    def _docid_table(self) -> DocidTable:
        """Lucene doc number → collection docid (:mod:`nteval.lucene.docids`: a memory-mapped file
        beside the index, shared by every process); opened on the first search."""
        if self._docids is None:
            self._docids = open_table(self.path, self._reader)
        return self._docids


def _cascade(tag: str, reranker):
    """Anserini's cascade as ``SimpleSearcher`` builds it: the feedback reranker, then its score-tie
    adjustment (scores rounded to 4 decimals, ties nudged apart by 1e-6)."""
    cascade = jvm.autoclass("io.anserini.rerank.RerankerCascade")(tag)
    cascade.add(reranker)
    cascade.add(jvm.autoclass("io.anserini.rerank.lib.ScoreTiesAdjusterReranker")())
    return cascade
