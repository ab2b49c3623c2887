"""PISA (Mallia et al., OSIRRC 2019; block-max indexes, compressed postings) as a system kind,
through ``pyterrier-pisa``'s wheel: ``pip install 'nteval[engines]'``.

The index is built from the documents of the index the protocol searches (``nt`` or ``all``),
exactly the texts Lucene indexed (:func:`nteval.corpus.store.index_texts`), and cached beside
the nteval index (:mod:`nteval.systems.engines`). BM25's ``k1`` and ``b`` are Lucene's
declarations (:mod:`nteval.systems.lucene_kinds`): the same names, defaults and bounds.

**How its analysis differs from nteval's Lucene**: PISA tokenizes with its own English tokenizer
and stems with Porter2 (Snowball English; Lucene: the original Porter stemmer); stop words are
Lucene's English list by default (``stops: lucene``; ``terrier`` is PISA's default, a longer
list), so only the tokenizer and the stemmer differ. Its BM25 multiplies by ``k1 + 1`` (Lucene
does not: the same order) and uses exact document lengths (Lucene: lengths rounded into one byte),
so its scores and some close rankings differ from Lucene BM25's with the same ``k1``/``b``.
"""
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..atomic import file_lock
from ..params import Param
from .engines import engine_index, package_version, require
from .kind import RunContext, SystemKind
from .lucene_kinds import K1, B

if TYPE_CHECKING:
    from ..formats.trec import Run
    from .system import System

STEMMER = Param("stemmer", "porter2", "PISA's stemmer (index time; Lucene's Porter stemmer is not among them)",
                choices=("porter2", "krovetz", "none"))
STOPS = Param("stops", "lucene", "stop words removed from queries (lucene: nteval's Lucene list; terrier: PISA's "
                                 "default)", choices=("lucene", "terrier", "none"))
#: queries handed to PISA per call (keeps the progress bar moving)
CHUNK = 500


@contextlib.contextmanager
def output_to(path: Path) -> Iterator[None]:
    """File descriptors 1 and 2 (what PISA's C++ code prints: a log line per step, progress
    counters) go to ``path`` for the block: nteval's own output stays readable."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(path, "ab") as fh:
            os.dup2(fh.fileno(), 1)
            os.dup2(fh.fileno(), 2)
            try:
                yield
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        for fd in saved:
            os.close(fd)


def pisa_index(target: Any, stemmer: str, progress: bool | None) -> tuple[Path, dict[str, Any]]:
    """The cached PISA index of the target's documents with ``stemmer``."""
    pp = require("pyterrier_pisa", "engines", "pisa")

    def build(partial: Path, docs, n: int, shown: bool | None) -> dict[str, Any]:
        import shutil

        from tqdm import tqdm

        from ..progress import shown as show

        where = partial / "pisa"
        if where.exists():  # PISA's indexer cannot resume a cut build: start it again
            shutil.rmtree(where)
        bar = tqdm(total=n, unit=" doc", desc=f"PISA index of {target.index_name}", disable=not show(shown),
                   file=sys.stderr, leave=False, mininterval=0.5)

        def rows():
            for docid, text in docs:
                bar.update(1)
                yield {"docno": docid, "text": text}

        try:
            with output_to(partial / "pisa.log"):
                pp.PisaIndex(str(where), stemmer=stemmer, threads=1, text_field="text").index(rows())
        finally:
            bar.close()
        return {"stemmer": stemmer, "pyterrier_pisa": getattr(pp, "__version__", None)}

    return engine_index(target.index_dir, target.index_name, target.fingerprint, f"pisa-{stemmer}", build, progress)


class PisaBM25(SystemKind):
    name = "pisa"
    engine_package = "pyterrier-pisa"
    params = (K1, B, STEMMER, STOPS)
    summary = "Okapi BM25 in PISA (block-max WAND over compressed postings; pip install 'nteval[engines]')"
    family = "bm25"
    needs_lucene = False

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        import pandas as pd

        pp = require("pyterrier_pisa", "engines", "pisa")
        where, meta = pisa_index(target, system.params["stemmer"], target.progress)
        stops = system.params["stops"]
        # (PISA's own "lucene" list is Lucene's English stop words: engines.LUCENE_STOPWORDS)
        index = pp.PisaIndex(str(where / "pisa"), threads=max(1, ctx.threads), stops=stops)
        # the first search with a k1, b compresses the index for them (files beside it): one process at a time
        with file_lock(where.parent / f".{where.name}.lock"), output_to(where / "pisa.log"):
            retriever = index.bm25(k1=system.params["k1"], b=system.params["b"], num_results=depth,
                                   threads=max(1, ctx.threads))
        out: Run = {q: [] for q in topics}
        qids = list(topics)
        for i in range(0, len(qids), CHUNK):
            chunk = qids[i:i + CHUNK]
            frame = retriever.transform(pd.DataFrame({"qid": chunk, "query": [topics[q] for q in chunk]}))
            for qid, docno, score in zip(frame["qid"], frame["docno"], frame["score"]):
                out[str(qid)].append((str(docno), float(score)))
            ctx.tick(len(chunk))
        target.notes[system.name] = {"engine": "pisa", "index": str(where), "stemmer": meta.get("stemmer"),
                                     "stops": stops, "build_seconds": meta.get("build_seconds")}
        return out

    def identity(self, system: System) -> dict[str, Any]:
        return {**super().identity(system), "pyterrier_pisa": package_version("pyterrier-pisa")}
