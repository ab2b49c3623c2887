"""The document store beside the indexes: one SQLite file with every kept document, its sentences
and metadata, queryable by the filters topic sampling needs (sentence count, title length,
language, year) without touching Lucene.

Writes are applied in stream order but batched (``put_row``/``delete`` queue operations; ``flush``
runs each consecutive run of same-kind operations with one ``executemany``): a later record with
the same id replaces the earlier row, a deletion removes it.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from .document import Document

SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (
    docid TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,            -- stream position of the version kept
    title TEXT NOT NULL,
    abstract TEXT NOT NULL,
    sentences TEXT NOT NULL,         -- sentences joined by '\\n' (they never contain one)
    meta TEXT NOT NULL,              -- JSON object
    n_sentences INTEGER NOT NULL,
    n_title_tokens INTEGER NOT NULL,
    language TEXT,                   -- first language code, e.g. 'eng'
    year INTEGER
);
CREATE INDEX IF NOT EXISTS docs_seq ON docs(seq);
"""

FILENAME = "docs.sqlite"
_BATCH = 2000


class DocStore:
    def __init__(self, path: str | Path, create: bool = False):
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: no document store")
        self.db = sqlite3.connect(str(self.path))
        if create:
            self.db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
        self._seq = 0
        self._ops: list[tuple[str, tuple]] = []
        self.removed = 0  # rows removed by delete() so far (after flush)

    def close(self) -> None:
        self.flush()
        self.db.commit()
        self.db.close()

    @staticmethod
    def row(doc: Document, sentences: list[str]) -> tuple:
        """The stored row of ``doc`` (all but ``seq``); pure, so worker processes can build it."""
        lang = doc.meta.get("language")
        lang = lang[0] if isinstance(lang, list) and lang else (lang if isinstance(lang, str) else None)
        return (doc.docid, doc.title, doc.abstract, "\n".join(sentences),
                json.dumps(doc.meta, ensure_ascii=False, sort_keys=True), len(sentences),
                len(doc.title.split()), lang, doc.meta.get("year"))

    def put_row(self, row: tuple) -> None:
        """Queue an insert-or-replace of a row made by :meth:`row`."""
        self._seq += 1
        self._ops.append(("put", (row[0], self._seq, *row[1:])))
        if len(self._ops) >= _BATCH:
            self.flush()

    def delete(self, docid: str) -> None:
        """Queue removal of ``docid`` (a no-op when absent); ``removed`` counts real removals."""
        self._ops.append(("del", (docid,)))
        if len(self._ops) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        ops, self._ops = self._ops, []
        i = 0
        while i < len(ops):
            kind = ops[i][0]
            j = i
            while j < len(ops) and ops[j][0] == kind:
                j += 1
            rows = [op[1] for op in ops[i:j]]
            if kind == "put":
                self.db.executemany("INSERT OR REPLACE INTO docs VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
            else:
                self.removed += self.db.executemany("DELETE FROM docs WHERE docid=?", rows).rowcount
            i = j

    def __len__(self) -> int:
        self.flush()
        return int(self.db.execute("SELECT COUNT(*) FROM docs").fetchone()[0])

    def iter_texts(self) -> Iterator[tuple[str, str, str]]:
        """(docid, title, abstract) in stream order of the kept versions."""
        self.flush()
        yield from self.db.execute("SELECT docid, title, abstract FROM docs ORDER BY seq")

    def get(self, docid: str) -> dict | None:
        self.flush()
        row = self.db.execute(
            "SELECT docid, title, abstract, sentences, meta FROM docs WHERE docid=?", (docid,)).fetchone()
        if row is None:
            return None
        return {"docid": row[0], "title": row[1], "abstract": row[2],
                "sentences": row[3].split("\n") if row[3] else [], "meta": json.loads(row[4])}
