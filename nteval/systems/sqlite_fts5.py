"""SQLite's full-text search (FTS5) as a system kind: embedded, no server, ranked by its
``bm25()`` with column weights (``algorithm: sqlite_fts5``; docs/live-engines.md).

The FTS5 table is built from the documents of the index the protocol searches, exactly the texts
Lucene indexed (:func:`nteval.corpus.store.index_texts`), on first use, and cached beside the
nteval index like the other engine caches (:mod:`nteval.systems.engines`: built aside, renamed
into place, digest-checked, one builder at a time). ``nt`` (what the NT protocols search) has one
column, the abstract; ``all`` (S_ref, human topics) has two, the title and the abstract, whose
``bm25()`` weights are ``title_weight`` and ``abstract_weight`` (equal weights make it one BM25 over
title and abstract together, as Lucene's single field).

**How it differs from nteval's Lucene**: FTS5's ``bm25()`` fixes k1 = 1.2 and b = 0.75, and its
idf is log((N − n + 0.5)/(n + 0.5)) (Lucene's adds 1 inside the log; a term in more than half the
documents gets FTS5's floor of 1e-6); it keeps exact document lengths. The ``porter`` tokenizer is
FTS5's ``porter unicode61``: Unicode letters and digits, lower-cased, diacritics removed, then the
original Porter stemmer (Lucene's too). FTS5 has no stop words: ``stops: lucene`` leaves Lucene's
English stop words out of the documents before they are indexed and out of the queries, so the
terms and the document lengths match Lucene's. A query is its words joined by ``OR`` (a bag of
words, as Lucene's), or by ``AND`` (``operator: and``, FTS5's own default).
"""
from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..corpus.store import index_docids
from ..params import Param
from ..progress import shown as show
from ..progress import tqdm
from .engines import LUCENE_STOPWORDS, engine_index
from .kind import RunContext, SystemKind

if TYPE_CHECKING:
    from ..formats.trec import Run
    from .system import System

K1 = Param("k1", 1.2, "BM25 term-frequency saturation (fixed in SQLite's bm25())", min=1.2, max=1.2)
B = Param("b", 0.75, "BM25 document-length normalization (fixed in SQLite's bm25())", min=0.75, max=0.75)
TOKENIZER = Param("tokenizer", "porter", "FTS5 tokenizer (porter: porter unicode61; index time)",
                  choices=("porter", "unicode61", "ascii", "trigram"))
STOPS = Param("stops", "lucene", "Lucene's English stop words left out of documents and queries (none: all indexed)",
              choices=("lucene", "none"))
OPERATOR = Param("operator", "or", "how a query's words combine (or: a bag of words; and: FTS5's default)",
                 choices=("or", "and"))
ABSTRACT_WEIGHT = Param("abstract_weight", 1.0, "bm25() weight of the abstract column", min=0, max=1000)
TITLE_WEIGHT = Param("title_weight", 1.0, "bm25() weight of the title column (only the all index has titles; nt has "
                                          "none)", min=0, max=1000)

_TOKENIZE = {"porter": "porter unicode61", "unicode61": "unicode61", "ascii": "ascii", "trigram": "trigram"}
_WORD = re.compile(r"[^\W_]+")
_STOP = frozenset(LUCENE_STOPWORDS)
#: documents per insert batch while building
BATCH = 5000


def without_stopwords(text: str) -> str:
    """``text`` with Lucene's English stop words (whole words, any case) blanked out."""
    return _WORD.sub(lambda m: " " if m.group(0).lower() in _STOP else m.group(0), text)


def fts_query(text: str, stops: str, operator: str) -> str:
    """The FTS5 MATCH expression of a query: each word quoted (FTS5 tokenizes inside the quotes with
    the table's tokenizer; no word is read as syntax), joined by OR or AND. Empty: nothing to match."""
    words = _WORD.findall(text)
    if stops == "lucene":
        words = [w for w in words if w.lower() not in _STOP]
    return f" {operator.upper()} ".join(f'"{w}"' for w in words)


def columns(index_name: str) -> tuple[str, ...]:
    return ("title", "abstract") if index_name == "all" else ("abstract",)


def fts_index(target: Any, tokenizer: str, stops: str, progress: bool | None) -> tuple[Path, dict[str, Any]]:
    """The cached FTS5 database of the target's documents (``fts.sqlite`` in its directory)."""
    cols = columns(target.index_name)

    def build(partial: Path, docs, n: int, shown: bool | None) -> dict[str, Any]:
        import sys

        db_path = partial / "fts.sqlite"
        db_path.unlink(missing_ok=True)  # (a cut build starts again: FTS5 builds in seconds)
        db = sqlite3.connect(str(db_path))
        bar = tqdm(total=n, unit=" doc", desc=f"FTS5 index of {target.index_name}", disable=not show(shown),
                   file=sys.stderr, leave=False, mininterval=0.5)
        try:
            db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")
            db.execute(f"CREATE VIRTUAL TABLE docs USING fts5({', '.join(cols)}, tokenize='{_TOKENIZE[tokenizer]}', "
                       "content='')")
            clean = without_stopwords if stops == "lucene" else (lambda t: t)
            rows: list[tuple] = []
            for seq, (_docid, text) in enumerate(docs):
                parts = text.split("\n", 1) if len(cols) == 2 else [text]
                rows.append((seq + 1, *[clean(p) for p in parts], *([""] * (len(cols) - len(parts)))))
                if len(rows) >= BATCH:
                    db.executemany(f"INSERT INTO docs(rowid, {', '.join(cols)}) VALUES (?{', ?' * len(cols)})", rows)
                    bar.update(len(rows))
                    rows = []
            if rows:
                db.executemany(f"INSERT INTO docs(rowid, {', '.join(cols)}) VALUES (?{', ?' * len(cols)})", rows)
                bar.update(len(rows))
            db.execute("INSERT INTO docs(docs) VALUES ('optimize')")
            db.commit()
        finally:
            bar.close()
            db.close()
        return {"sqlite": sqlite3.sqlite_version, "tokenizer": _TOKENIZE[tokenizer], "stops": stops, "columns": list(cols)}

    return engine_index(target.index_dir, target.index_name, target.fingerprint, f"fts5-{tokenizer}-{stops}", build,
                        progress)


class SqliteFts5(SystemKind):
    name = "sqlite_fts5"
    params = (K1, B, TOKENIZER, STOPS, OPERATOR, ABSTRACT_WEIGHT, TITLE_WEIGHT)
    summary = "SQLite FTS5 ranked by bm25() with column weights: embedded, built from the store on first use"
    family = "bm25"
    needs_lucene = False

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        from concurrent.futures import ThreadPoolExecutor

        p = system.params
        where, meta = fts_index(target, p["tokenizer"], p["stops"], target.progress)
        docids = index_docids(target.index_dir, target.index_name)
        cols = columns(target.index_name)
        weights = [p["title_weight"], p["abstract_weight"]] if len(cols) == 2 else [p["abstract_weight"]]
        sql = (f"SELECT rowid, bm25(docs, {', '.join(repr(float(w)) for w in weights)}) AS s FROM docs WHERE docs MATCH ? "
               "ORDER BY s LIMIT ?")
        local = threading.local()
        opened: list[sqlite3.Connection] = []
        lock = threading.Lock()
        uri = f"file:{where / 'fts.sqlite'}?mode=ro"

        def one(text: str) -> list[tuple[str, float]]:
            q = fts_query(text, p["stops"], p["operator"])
            if not q:
                return []
            db = getattr(local, "db", None)
            if db is None:
                db = local.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
                with lock:
                    opened.append(db)
            return [(docids[rowid - 1], -score) for rowid, score in db.execute(sql, (q, depth))]

        qids = list(topics)
        out: Run = {}
        try:
            with ThreadPoolExecutor(max_workers=max(1, ctx.threads)) as pool:
                for i in range(0, len(qids), 500):
                    chunk = qids[i:i + 500]
                    out.update(zip(chunk, pool.map(lambda q: one(topics[q]), chunk)))
                    ctx.tick(len(chunk))
        finally:
            for db in opened:
                db.close()
        target.notes[system.name] = {"engine": "sqlite_fts5", "engine_version": sqlite3.sqlite_version, "index": str(where),
                                     "tokenizer": meta.get("tokenizer"), "stops": p["stops"], "operator": p["operator"],
                                     "build_seconds": meta.get("build_seconds")}
        return out

    def identity(self, system: System) -> dict[str, Any]:
        return {**super().identity(system), "sqlite": sqlite3.sqlite_version}
