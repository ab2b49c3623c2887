"""A thin handle on one Lucene index: search, collection statistics, stored documents.

Goes straight to Anserini's Java classes (``SimpleSearcher``, ``IndexReaderUtils``) through
:mod:`nteval.lucene.jvm`; importing ``pyserini.search`` would import torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from . import jvm


@dataclass(frozen=True)
class Hit:
    docid: str
    score: float


class Index:
    """An open Lucene index (read-only)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not (self.path / "segments_1").exists() and not any(self.path.glob("segments_*")):
            raise InputError(self.path, "not a Lucene index (no segments_N file)")
        self._searcher = jvm.autoclass("io.anserini.search.SimpleSearcher")(str(self.path))
        self._utils = jvm.autoclass("io.anserini.index.IndexReaderUtils")
        self._reader = self._utils.getReader(str(self.path))

    def close(self) -> None:
        self._searcher.close()
        self._reader.close()

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def num_docs(self) -> int:
        """Live documents (deleted ones excluded)."""
        return int(self._reader.numDocs())

    @property
    def max_doc(self) -> int:
        """Documents including deleted ones not yet merged away (== num_docs in our indexes)."""
        return int(self._reader.maxDoc())

    def set_bm25(self, k1: float = 0.9, b: float = 0.4) -> None:
        self._searcher.set_bm25(float(k1), float(b))

    def search(self, query: str, k: int = 1000) -> list[Hit]:
        """Bag-of-words search (Lucene syntax in ``query`` is not interpreted)."""
        return [Hit(str(h.docid), float(h.score)) for h in self._searcher.search(query, int(k))]

    def analyze(self, text: str) -> list[str]:
        """Terms of ``text`` under the index's analyzer (Porter stemming, stopwords removed)."""
        analyzer = self._searcher.get_analyzer()
        return [str(t) for t in jvm.autoclass("io.anserini.analysis.AnalyzerUtils").analyze(analyzer, text)]

    def doc_freq(self, term: str) -> int:
        """Document frequency of an already-analyzed term (0 if absent)."""
        Term = jvm.autoclass("org.apache.lucene.index.Term")
        return int(self._reader.docFreq(Term("contents", term)))

    def raw(self, docid: str) -> str | None:
        r = self._searcher.doc_raw(docid)
        return None if r is None else str(r)
