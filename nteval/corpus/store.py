"""The document store beside the indexes: one SQLite file with every kept document, its sentences
and metadata, queryable by the filters topic sampling needs (sentence count, title length,
language, year, vernacular title) without touching Lucene, and the records' MeSH headings.

Writes are applied in stream order but batched (``put_row``/``delete`` queue operations; ``flush``
runs each consecutive run of same-kind operations with one ``executemany``): a later record with
the same id replaces the earlier row (and its MeSH rows), a deletion removes them.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError, short
from .document import Document

#: Layout of the store, written as ``PRAGMA user_version`` (and into the manifest). 1 = the docs
#: table alone (stores written before the version existed read 0 and count as 1); 2 = + the
#: vernacular title columns and the ``mesh`` table; 3 = + the ``skipped`` table (why a record read
#: from the sources is not a document).
FORMAT = 3

#: What each optional part of the store needs (the lowest format that has it).
FEATURES = {"vernacular": 2, "mesh": 2, "skipped": 3}

#: Which stored documents each Lucene index holds. Every document has a title or an abstract (or
#: both): ``all`` indexes title + newline + abstract, so it holds them all; ``nt`` indexes the
#: abstract alone, so a record without one is not in it (Lucene's generator skips a blank text).
INDEX_MEMBERS = {"all": "1", "nt": "abstract != ''"}

SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (
    docid TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,            -- stream position of the version kept
    title TEXT NOT NULL,
    abstract TEXT NOT NULL,
    sentences TEXT NOT NULL,         -- sentences joined by '\\n' (they never contain one)
    meta TEXT NOT NULL,              -- JSON object (without "mesh": that lives in the mesh table)
    n_sentences INTEGER NOT NULL,
    n_title_tokens INTEGER NOT NULL,
    language TEXT,                   -- first language code, e.g. 'eng'
    year INTEGER,
    vernacular_title TEXT,           -- original-language title (Medline <VernacularTitle>), or NULL
    vernacular_language TEXT         -- its language when Medline makes it certain (e.g. 'ger'), or NULL
);
CREATE INDEX IF NOT EXISTS docs_seq ON docs(seq);
-- One row per DescriptorName (qualifier NULL) and per QualifierName of each MeshHeading.
CREATE TABLE IF NOT EXISTS mesh (
    docid TEXT NOT NULL,
    heading INTEGER NOT NULL,        -- position of the MeshHeading in the record, from 0
    descriptor_ui TEXT,              -- e.g. 'D003042'; NULL in 2006-format records (no UI attribute)
    descriptor TEXT NOT NULL,        -- the descriptor name as Medline writes it
    qualifier_ui TEXT,
    qualifier TEXT,                  -- NULL on the descriptor's own row
    major INTEGER NOT NULL           -- MajorTopicYN of this row's descriptor or qualifier (1 = Y)
);
CREATE INDEX IF NOT EXISTS mesh_docid ON mesh(docid);
-- Records read from the sources that are not documents, by their last word: the reason they were
-- skipped (no_text, no_title, malformed, too_large...) or 'deleted' (a DeleteCitation). A later
-- version that is a document removes its row.
CREATE TABLE IF NOT EXISTS skipped (
    docid TEXT PRIMARY KEY,
    reason TEXT NOT NULL
);
"""

#: Indexes only the protocols' queries use, made once the store is loaded (cheaper than keeping
#: them up to date row by row): which descriptors are a major topic of how many documents, which
#: documents a descriptor is assigned to, which documents have a vernacular title in a language.
QUERY_INDEXES = """
CREATE INDEX IF NOT EXISTS mesh_major ON mesh(major, descriptor_ui, docid);
CREATE INDEX IF NOT EXISTS mesh_descriptor ON mesh(descriptor_ui, docid, major);
CREATE INDEX IF NOT EXISTS docs_vernacular ON docs(vernacular_language);
"""

#: A descriptor's identity: its UI, or its name where the record carries no UI (2006 format).
_KEY = "COALESCE(descriptor_ui, descriptor)"

FILENAME = "docs.sqlite"
_BATCH = 2000

#: ``json.dumps(meta, ensure_ascii=False, sort_keys=True)`` with one encoder for every row
#: (``json.dumps`` with options builds a new encoder per call).
_META_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode


class DocStore:
    def __init__(self, path: str | Path, create: bool = False, durable: bool = False):
        """``create``: make the tables (an existing file is opened and completed) and the query
        indexes at :meth:`close`. Written without a journal, unless ``durable``: then a commit
        survives a killed process (a resumable build commits once per source file)."""
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: no document store")
        self.db = sqlite3.connect(str(self.path))
        if create:
            journal = "journal_mode=DELETE; PRAGMA synchronous=NORMAL" if durable else "journal_mode=OFF; PRAGMA synchronous=OFF"
            self.db.executescript(f"PRAGMA {journal}; PRAGMA user_version={FORMAT};" + SCHEMA)
        self.format = store_format(self.db)
        self.tracks_skips = self.format >= FEATURES["skipped"]
        self._created = create
        self.seq = 0  # stream position of the last put (an update goes on from its index's)
        self._ops: list[tuple[str, tuple]] = []
        self.removed = 0  # rows removed by delete() so far (after flush)

    def require(self, *features: str) -> None:
        """A one-line rebuild error, not an SQL one, when this store predates ``features``
        (names in :data:`FEATURES`)."""
        missing = [f for f in features if FEATURES[f] > self.format]
        if missing:
            raise InputError(self.path, f"no {' or '.join(missing)} data in the document store (format "
                             f"{self.format}, needs {max(FEATURES[f] for f in missing)}): the index was built "
                             "by an older nteval: rebuild it with nteval index --force")

    def close(self) -> None:
        self.flush()
        if self._created:
            self.add_query_indexes()
        self.db.commit()
        self.db.close()

    def add_query_indexes(self) -> None:
        """The indexes topic sampling queries need (made at :meth:`close` if not before: a build
        makes them while Lucene still indexes)."""
        self.flush()
        self.db.executescript(QUERY_INDEXES)

    @staticmethod
    def row(doc: Document, sentences: list[str]) -> tuple:
        """The stored row of ``doc`` (all but ``seq``), its MeSH rows last; pure, so worker
        processes can build it."""
        lang = doc.meta.get("language")
        lang = lang[0] if isinstance(lang, list) and lang else (lang if isinstance(lang, str) else None)
        meta = {k: v for k, v in doc.meta.items() if k != "mesh"}
        return (doc.docid, doc.title, doc.abstract, "\n".join(sentences),
                _META_JSON(meta), len(sentences),
                len(doc.title.split()), lang, doc.meta.get("year"), doc.meta.get("vernacular_title"),
                doc.meta.get("vernacular_language"), mesh_rows(doc.meta.get("mesh", [])))

    def put_row(self, row: tuple) -> None:
        """Queue an insert-or-replace of a row made by :meth:`row`."""
        self.seq += 1
        self._ops.append(("put", (row[0], self.seq, *row[1:])))
        if len(self._ops) >= _BATCH:
            self.flush()

    def delete(self, docid: str) -> None:
        """Queue removal of ``docid`` (a no-op when absent); ``removed`` counts real removals."""
        self._ops.append(("del", (docid,)))
        if len(self._ops) >= _BATCH:
            self.flush()

    def skip(self, docid: str, reason: str) -> None:
        """Queue the record of why ``docid`` is not a document (a store older than format 3 keeps none)."""
        if self.tracks_skips:
            self._ops.append(("skip", (docid, reason)))
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
                self._put(rows)
            elif kind == "skip":
                self.db.executemany("INSERT OR REPLACE INTO skipped VALUES (?, ?)", rows)
            else:
                self.db.executemany("DELETE FROM mesh WHERE docid=?", rows)
                self.removed += self.db.executemany("DELETE FROM docs WHERE docid=?", rows).rowcount
            i = j

    def _put(self, rows: list[tuple]) -> None:
        """Insert-or-replace ``rows`` (docs columns + MeSH rows last); a replaced record's MeSH rows
        go, and an id repeated inside the batch keeps only its last version's headings."""
        self.db.executemany("DELETE FROM mesh WHERE docid=?", [(r[0],) for r in rows])
        if self.tracks_skips:
            self.db.executemany("DELETE FROM skipped WHERE docid=?", [(r[0],) for r in rows])
        self.db.executemany("INSERT OR REPLACE INTO docs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", [r[:-1] for r in rows])
        last = {r[0]: i for i, r in enumerate(rows)}
        self.db.executemany("INSERT INTO mesh VALUES (?,?,?,?,?,?,?)",
                            [(r[0], *m) for i, r in enumerate(rows) if last[r[0]] == i for m in r[-1]])

    def __len__(self) -> int:
        self.flush()
        return int(self.db.execute("SELECT COUNT(*) FROM docs").fetchone()[0])

    def present(self, ids: Iterable[str], table: str = "docs") -> set[str]:
        """Those of ``ids`` that are in ``table`` (``docs``, or another table keyed by docid)."""
        self.flush()
        ids = list(ids)
        found: set[str] = set()
        for i in range(0, len(ids), _BATCH):
            chunk = ids[i:i + _BATCH]
            found.update(d for (d,) in self.db.execute(
                f"SELECT docid FROM {table} WHERE docid IN ({','.join('?' * len(chunk))})", chunk))
        return found

    def iter_texts(self, index: str = "all") -> Iterator[tuple[str, str, str]]:
        """(docid, title, abstract) of the documents of Lucene index ``index`` (``all``: every
        document; ``nt``: those with an abstract), in stream order of the kept versions."""
        self.flush()
        yield from self.db.execute(f"SELECT docid, title, abstract FROM docs WHERE {INDEX_MEMBERS[index]} ORDER BY seq")

    def count(self, where: str = "1") -> int:
        """Documents matching an SQL condition on the docs table (e.g. an :data:`INDEX_MEMBERS` value)."""
        self.flush()
        return int(self.db.execute(f"SELECT COUNT(*) FROM docs WHERE {where}").fetchone()[0])

    def skipped_reasons(self, ids: Iterable[str]) -> dict[str, str]:
        """docid → why it is not a document, for those of ``ids`` the sources held but the store
        skipped (empty for a store older than format 3, which kept no such record)."""
        if not self.tracks_skips:
            return {}
        self.flush()
        ids = sorted(set(ids))
        out: dict[str, str] = {}
        for i in range(0, len(ids), 900):
            chunk = ids[i:i + 900]
            out.update(self.db.execute(f"SELECT docid, reason FROM skipped WHERE docid IN ({','.join('?' * len(chunk))})",
                                       chunk))
        return out

    def get(self, docid: str) -> dict | None:
        self.flush()
        row = self.db.execute(
            "SELECT docid, title, abstract, sentences, meta FROM docs WHERE docid=?", (docid,)).fetchone()
        if row is None:
            return None
        meta = json.loads(row[4])
        mesh = self._headings(docid)
        if mesh:
            meta["mesh"] = mesh
        return {"docid": row[0], "title": row[1], "abstract": row[2],
                "sentences": row[3].split("\n") if row[3] else [], "meta": meta}

    def _headings(self, docid: str) -> list[dict[str, Any]]:
        """The record's MeSH headings rebuilt from its rows, in the shape the Medline reader gives."""
        if self.format < FEATURES["mesh"]:
            return []
        headings: list[dict[str, Any]] = []
        for dui, dname, qui, qname, major in self.db.execute(
                "SELECT descriptor_ui, descriptor, qualifier_ui, qualifier, major FROM mesh "
                "WHERE docid=? ORDER BY heading, rowid", (docid,)):
            if qname is None:
                headings.append({"name": dname, "ui": dui, "descriptor_major": bool(major),
                                 "major": bool(major), "qualifiers": []})
            else:
                headings[-1]["qualifiers"].append({"name": qname, "ui": qui, "major": bool(major)})
                headings[-1]["major"] = headings[-1]["major"] or bool(major)
        return headings

    def mesh_major_topics(self, min_docs: int, max_docs: int) -> list[tuple[str, str, int]]:
        """(key, name, documents) of each descriptor that is a major topic of between ``min_docs``
        and ``max_docs`` documents, by key. Major = the descriptor or one of its qualifiers is
        starred (NLM's rule); key = descriptor UI (the name where the record has none). A UI whose
        name changed between MeSH years is named as in its latest record."""
        self.require("mesh")
        self.flush()
        return [(k, n, c) for k, c, n, _ in self.db.execute(
            f"SELECT {_KEY} AS k, COUNT(DISTINCT m.docid) AS c, m.descriptor, MAX(d.seq) "
            "FROM mesh m JOIN docs d ON d.docid = m.docid WHERE m.major = 1 "
            "GROUP BY k HAVING c BETWEEN ? AND ? ORDER BY k", (min_docs, max_docs))]

    def mesh_documents(self, key: str) -> dict[str, int]:
        """docid → 2 where descriptor ``key`` (UI, or name for UI-less records) is a major topic,
        1 where it is assigned but not major: the graded relevance a MeSH topic can use."""
        self.require("mesh")
        self.flush()
        return {d: 1 + g for d, g in self.db.execute(
            "SELECT docid, MAX(major) FROM mesh WHERE descriptor_ui = ? "
            "OR (descriptor_ui IS NULL AND descriptor = ?) GROUP BY docid ORDER BY docid", (key, key))}

    def documents_with_mesh(self) -> int:
        """Documents with at least one MeSH heading (the rest, e.g. in-process citations, cannot
        be judged by MeSH)."""
        self.flush()
        if self.format < FEATURES["mesh"]:
            return 0
        return int(self.db.execute("SELECT COUNT(DISTINCT docid) FROM mesh").fetchone()[0])

    def vernacular_counts(self) -> dict[str | None, int]:
        """Documents with a vernacular title, per vernacular language (None = not certain), most first."""
        self.flush()
        if self.format < FEATURES["vernacular"]:
            return {}
        rows = self.db.execute("SELECT vernacular_language, COUNT(*) AS n FROM docs WHERE vernacular_title "
                               "IS NOT NULL GROUP BY vernacular_language ORDER BY n DESC, vernacular_language")
        return dict(rows.fetchall())


def mesh_rows(headings: list[dict[str, Any]]) -> tuple[tuple, ...]:
    """The ``mesh`` table rows (without docid) of a record's headings: the descriptor's row, then
    one per qualifier, each with its own MajorTopicYN."""
    rows: list[tuple] = []
    for pos, h in enumerate(headings):
        rows.append((pos, h["ui"], h["name"], None, None, int(h["descriptor_major"])))
        rows.extend((pos, h["ui"], h["name"], q["ui"], q["name"], int(q["major"])) for q in h["qualifiers"])
    return tuple(rows)


def store_format(db: sqlite3.Connection) -> int:
    """The store's layout version (0, never written by old stores, reads as 1)."""
    return max(int(db.execute("PRAGMA user_version").fetchone()[0]), 1)


def index_contents(index: str, title: str, abstract: str) -> str:
    """A document's text as Lucene index ``index`` holds it (``all``: title, newline, abstract;
    ``nt``: the abstract): the one rule the indexer, the dense encoder and the export share."""
    return f"{title}\n{abstract}" if index == "all" else abstract


def known_docids(collection: Path, docids: Iterable[str], index: str = "all") -> set[str]:
    """Which of ``docids`` are documents of Lucene index ``index`` of the index directory
    ``collection`` (read from its document store: ``nt`` lacks the records without an abstract)."""
    db = sqlite3.connect(f"file:{Path(collection) / FILENAME}?mode=ro", uri=True)
    try:
        found: set[str] = set()
        ids = sorted(set(docids))
        for i in range(0, len(ids), 900):
            chunk = ids[i:i + 900]
            found.update(r[0] for r in db.execute(f"SELECT docid FROM docs WHERE docid IN ({','.join('?' * len(chunk))}) "
                                                  f"AND {INDEX_MEMBERS.get(index, '1')}", chunk))
        return found
    finally:
        db.close()


#: Above this share of relevant judgments on documents the index lacks, qrels are refused: they
#: judge another collection (every system would score 0 on them, and agree by ties).
MAX_UNINDEXED_RELEVANT = 0.5


#: Why a record read from the sources is not a document, as a person reads it.
SKIP_WHY = {
    "no_title": "records without a title, which an index built with --documents title+abstract (the paper's "
                "setting) leaves out",
    "no_abstract": "records without an abstract, which an index built with --documents title+abstract (the paper's "
                   "setting) leaves out",
    "no_text": "records with neither a title nor a text",
    "deleted": "records a DeleteCitation of its sources removed",
    "malformed": "malformed records",
    "too_large": "records over the size limit",
    "book": "book records (PubmedBookArticle)",
}


def require_judged_in_index(collection: Path, qrels: dict[str, dict[str, int]], qrels_path: str | Path) -> None:
    """Refuse human qrels whose relevant documents are mostly not in ``collection``'s ``all``
    index (what human topics search), saying why they are missing: records the index skipped
    (by reason, e.g. left out by the paper's title+abstract policy), or ids in none of its sources
    (qrels of another collection)."""
    relevant = [d for docs in qrels.values() for d, rel in docs.items() if rel > 0]  # one per judgment
    if not relevant or not (Path(collection) / FILENAME).is_file():  # (no store: the index check says so)
        return
    known = known_docids(collection, relevant)
    missing = [d for d in relevant if d not in known]
    if len(missing) <= MAX_UNINDEXED_RELEVANT * len(relevant):
        return
    store = DocStore(Path(collection) / FILENAME)
    try:
        reasons = store.skipped_reasons(missing)
        tracked = store.tracks_skips
    finally:
        store.close()
    by_reason: dict[str, int] = {}
    for d in missing:
        r = reasons.get(d)
        if r is not None:
            by_reason[r] = by_reason.get(r, 0) + 1
    unseen = len(missing) - sum(by_reason.values())
    head = (f"{len(missing):,} of its {len(relevant):,} relevant judgments are on documents not in the index "
            f"{collection}")
    causes = [f"{n:,} on {SKIP_WHY.get(r, r + ' records')}" for r, n in sorted(by_reason.items(), key=lambda kv: -kv[1])]
    if by_reason:
        fix = ("; rebuild it with nteval index --force (the default --documents any-text keeps every record with a "
               "title or a text)" if {"no_title", "no_abstract"} & set(by_reason) else "")
        tail = f", {unseen:,} on ids in none of its sources (e.g. {short(next(d for d in missing if d not in reasons))})" \
            if unseen else ""
        raise InputError(qrels_path, f"{head}: the index skipped them when it was built — {', '.join(causes)}{tail}{fix}")
    if not tracked:
        raise InputError(qrels_path, f"{head} (e.g. {short(missing[0])}); its document store predates the record of "
                                     "skipped records (an older nteval, which also left out records without a title "
                                     "or an abstract): rebuild it with nteval index --force, then a missing document "
                                     "is named with its cause")
    raise InputError(qrels_path, f"{head}, and in none of its sources (e.g. {short(missing[0])}): qrels for another "
                                 "collection? (--index)")


# -- read-only queries over an index's store (every SQL of the store lives in this module) ------------

def _read_only(index_dir: str | Path) -> sqlite3.Connection:
    # (a stream may be read by another thread than the one that opened it: PISA's indexer does;
    # one reader at a time, so sharing the connection that way is safe)
    return sqlite3.connect(f"file:{Path(index_dir) / FILENAME}?mode=ro", uri=True, check_same_thread=False)


def index_texts(index_dir: str | Path, index_name: str) -> Iterator[tuple[str, str]]:
    """(docid, text) of every document of Lucene index ``index_name``, in the store's stream
    order, exactly as Lucene indexed its contents (:func:`index_contents`): what another engine
    (dense vectors, PISA, Tantivy) indexes to search the same collection."""
    db = _read_only(index_dir)
    try:
        for docid, title, abstract in db.execute(
                f"SELECT docid, title, abstract FROM docs WHERE {INDEX_MEMBERS[index_name]} ORDER BY seq"):
            yield docid, index_contents(index_name, title, abstract)
    finally:
        db.close()


def index_docids(index_dir: str | Path, index_name: str) -> list[str]:
    """The docids of :func:`index_texts`, in the same order, without reading the texts."""
    db = _read_only(index_dir)
    try:
        return [r[0] for r in db.execute(f"SELECT docid FROM docs WHERE {INDEX_MEMBERS[index_name]} ORDER BY seq")]
    finally:
        db.close()


def topic_candidates(db: sqlite3.Connection, min_sentences: int, min_title_tokens: int, language: str | None = None,
                     year_min: int | None = None, year_max: int | None = None) -> Iterator[str]:
    """Docids of the documents that may become topics: a title and an abstract, at least
    ``min_sentences`` abstract sentences and ``min_title_tokens`` title tokens, in ``language``
    and within the years when given (streamed, in the store's own order)."""
    where = ["n_sentences >= ?", "n_title_tokens >= ?", "title != ''", "abstract != ''"]
    args: list = [min_sentences, min_title_tokens]
    for cond, value in (("language = ?", language), ("year >= ?", year_min), ("year <= ?", year_max)):
        if value is not None and value != "":
            where.append(cond)
            args.append(value)
    return (r[0] for r in db.execute(f"SELECT docid FROM docs WHERE {' AND '.join(where)}", args))


def vernacular_titles(index_dir: str | Path, min_sentences: int) -> list[tuple[str, str, str, str]]:
    """(language, docid, vernacular title, English title) of every document with an abstract of
    at least ``min_sentences`` sentences whose record names its one original language."""
    db = _read_only(index_dir)
    try:
        return db.execute("SELECT vernacular_language, docid, vernacular_title, title FROM docs WHERE vernacular_title "
                          "IS NOT NULL AND vernacular_language IS NOT NULL AND n_sentences >= ? AND abstract != ''",
                          (min_sentences,)).fetchall()
    finally:
        db.close()
