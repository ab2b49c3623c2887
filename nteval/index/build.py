"""``nteval index``: one parse pass over Medline/BEIR sources → ``all/`` (title + abstract) and
``nt/`` (abstract only) Lucene indexes, the document store, and ``manifest.json``; updates applied
in place (``nteval index --update``).

The whole directory is built beside its final name and renamed into place on success, so a failed
or interrupted build leaves nothing under that name. Reading an index back is
:mod:`nteval.index.manifest`.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import platform
import sqlite3
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._version import __version__
from ..atomic import atomic_dir, partial_dir, refuse_foreign
from ..corpus.document import Deletion, Document, Skipped
from ..corpus.sentences import split_abstract
from ..corpus.store import FILENAME as STORE_FILENAME
from ..corpus.store import FORMAT as STORE_FORMAT
from ..corpus.store import INDEX_MEMBERS, DocStore
from ..errors import InputError, LuceneError
from ..lifecycle import watch_parent
from ..lucene import indexer, jvm
from ..progress import shown, tqdm
from .manifest import (
    DEFAULT_DOCUMENTS,
    MANIFEST,
    SKIP_REASONS,
    check_documents,
    documents_policy,
    fingerprint,
    foreign_entries,
    is_index_dir,
    read_manifest,
    sha256_file,
)

#: a parse reports its progress every this many records
TICK_RECORDS = 1000

#: What Lucene's indexer strips as blank (Java's ``String.trim``: every character up to the space,
#: control characters included), where Python's ``str.split`` keeps NUL, SOH and their kind.
_BLANK = "".join(map(chr, range(33)))


def _without_blank_text(rec: Document) -> Document | None:
    """``rec`` with a title or an abstract that is only control characters and spaces (``"\u0000"``,
    ``"\u0001 \u0001"``) made empty, as Lucene sees it: a record without an abstract (counted so),
    not one the ``nt`` index silently leaves out while the store counts it. None when nothing is left."""
    title = rec.title if rec.title.strip(_BLANK) else ""
    parts = [p for p in rec.abstract_parts if p.strip(_BLANK)]
    if title == rec.title and len(parts) == len(rec.abstract_parts):
        return rec
    if not title and not parts:
        return None
    return Document(rec.docid, title, parts, rec.meta, rec.folded)


def parse_file(path: Path, documents: str = DEFAULT_DOCUMENTS, tick: Callable[[int], None] | None = None) -> list[tuple]:
    """Read one source into store operations, in file order (runs in a worker process).

    ``("put", store_row)``, ``("skip", docid, reason)``, ``("delete", [docids])``: plain tuples of
    strings, cheap to send back from a worker. ``documents``: a :data:`DOCUMENT_POLICIES` name.
    ``tick(n)``: called with the number of records read so far, every :data:`TICK_RECORDS`.
    """
    ops: list[tuple] = []
    both = documents == "title+abstract"
    from ..corpus.sources import read_records  # (lxml: not loaded by `nteval --help`)
    for n, rec in enumerate(read_records(path), 1):
        if tick is not None and n % TICK_RECORDS == 0:
            tick(n)
        if isinstance(rec, Document):
            rec = _without_blank_text(rec) or Skipped(rec.docid, "no_text")
        if isinstance(rec, Document):
            if both and not (rec.title and rec.abstract):
                ops.append(("skip", rec.docid, "no_title" if not rec.title else "no_abstract"))
                continue
            ops.append(("put", DocStore.row(rec, split_abstract(rec.abstract_parts, rec.folded))))
        elif isinstance(rec, Skipped):
            ops.append(("skip", rec.docid, rec.reason))
        elif isinstance(rec, Deletion):
            ops.append(("delete", rec.docids))
    return ops


def _parse_and_hash(path: Path, documents: str, counter: str | None = None) -> tuple[list[tuple], str]:
    """:func:`parse_file` and the file's sha256 (in this process or a parse worker); ``counter``: a
    file where the number of records read so far is kept (the parent's progress bar reads it)."""

    def tick(n: int) -> None:
        import os

        if counter is not None:
            tmp = f"{counter}.{os.getpid()}"
            with open(tmp, "w") as fh:
                fh.write(str(n))
            os.replace(tmp, counter)

    return parse_file(path, documents, tick if counter else None), sha256_file(path)


class _RecordCount:
    """Records read by the parses under way (each writes its count to a file of ``where``), added
    to a progress bar twice a second by a thread: a file of 30,000 records no longer shows
    ``parse: 0/2 file`` for 20 s."""

    def __init__(self, where: Path, bar) -> None:
        import threading

        self.where, self.bar, self.done = where, bar, 0  # records of the files finished
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def counter(self, i: int) -> str:
        return str(self.where / f"{i}.count")

    def finished(self, i: int, records: int) -> None:
        Path(self.counter(i)).unlink(missing_ok=True)
        self.done += records
        self.bar.n = self.done
        self.bar.refresh()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            going = 0
            for f in self.where.glob("*.count"):
                try:
                    going += int(f.read_text() or 0)
                except (OSError, ValueError):
                    pass
            self.bar.n = self.done + going
            self.bar.refresh()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


PARSE_WORKER_IDLE_S = 10


def _parsed(files: Sequence[Path], jobs: int, documents: str, count: _RecordCount | None = None):
    """(position, path, ops, sha256) in file order; files are parsed in parallel processes when
    there are several. ``count``: where the parses report the records they have read."""
    def counter(i: int) -> str | None:
        return count.counter(i) if count is not None else None

    if jobs > 1 and len(files) > 1:
        import os

        from joblib import Parallel, delayed

        # idle_worker_timeout: the workers (≈ 200 MB each, a parsed file's operations) exit 10 s
        # after the last file instead of loky's 300 s, so they are gone while Lucene indexes; each
        # watches this process from its start (loky's initializer) and exits as soon as it is gone
        results = Parallel(n_jobs=min(jobs, len(files)), return_as="generator", backend="loky",
                           idle_worker_timeout=PARSE_WORKER_IDLE_S, initializer=watch_parent, initargs=(os.getpid(),))(
            delayed(_parse_and_hash)(p, documents, counter(i)) for i, p in enumerate(files))
        for i, (p, (ops, sha)) in enumerate(zip(files, results)):
            yield i, p, ops, sha
    else:
        for i, p in enumerate(files):
            yield i, p, *_parse_and_hash(p, documents, counter(i))


def _touched(ops: list[tuple]) -> set[str]:
    """The ids a file's operations put, skip or delete (the only rows it can add or remove)."""
    ids: set[str] = set()
    for op in ops:
        if op[0] == "put":
            ids.add(op[1][0])
        elif op[0] == "skip":
            if op[1]:
                ids.add(op[1])
        else:
            ids.update(op[1])
    return ids


#: ``on_done(path, sha256, counts, deleted_ids)``: called once a file is applied to the store.
OnDone = Callable[[Path, str, dict, list], None]


def load_store(store: DocStore, files: Sequence[Path], progress: bool | None = None, jobs: int = 1,
               on_file: Callable[[list[tuple]], None] | None = None,
               on_done: OnDone | None = None, documents: str = DEFAULT_DOCUMENTS) -> tuple[list[dict], list[list[str]]]:
    """Parse ``files`` and apply them in order to ``store`` with replace/delete semantics; returns
    each file's counts and the ids its DeleteCitations listed (see :func:`totals`).

    A record whose newest version is unusable (no title/abstract) also removes the older usable
    version: the newest version is authoritative. Replacements are derived from row counts:
    ``replaced = documents - (rows gained) - (rows removed)``, the rows counted over the ids the
    file touches (index look-ups, not a count of the whole table per file).
    """
    import tempfile

    per_source: list[dict] = []
    deleted_ids: list[list[str]] = []
    bar = tqdm(total=None, desc="parse", unit=" record", disable=not shown(progress), file=sys.stderr, leave=False,
               unit_scale=True)
    bar.set_postfix_str(f"0/{len(files)} files", refresh=False)
    with tempfile.TemporaryDirectory(prefix="nteval-parse-") as tmp:
        count = _RecordCount(Path(tmp), bar) if not bar.disable else None
        try:
            for i, path, ops, sha in _parsed(files, jobs, documents, count):
                if on_file is not None:
                    on_file(ops)
                counts, deleted = _apply_ops(store, ops)
                per_source.append(counts)
                deleted_ids.append(deleted)
                if on_done is not None:
                    on_done(path, sha, counts, deleted)
                if count is not None:
                    count.finished(i, counts["seen"] + counts["deleted_pmids"])
                bar.set_postfix_str(f"{i + 1}/{len(files)} files")
        finally:
            if count is not None:
                count.close()
            bar.close()  # (also when a file is refused: its heartbeat must not outlive the parse)
    return per_source, deleted_ids


def _apply_ops(store: DocStore, ops: list[tuple]) -> tuple[dict, list[str]]:
    """One parsed file's operations applied to the store, in order; returns the file's counts and
    the ids its DeleteCitations listed."""
    c: Counter = Counter()
    deleted: list[str] = []
    touched = _touched(ops)
    stored = store.present(touched)  # (+ ids put below: the ids a skip may have to remove)
    rows_before, removed_before = len(stored), store.removed
    for op in ops:
        kind = op[0]
        if kind == "put":
            c["seen"] += 1
            c["documents"] += 1
            store.put_row(op[1])
            stored.add(op[1][0])
        elif kind == "skip":
            c["seen"] += 1
            c[f"skipped_{op[2]}"] += 1
            if op[1] in stored:  # (most skipped records were never stored: no DELETE for them)
                store.delete(op[1])
            if op[1]:
                store.skip(op[1], op[2])
        else:
            c["deleted_pmids"] += len(op[1])
            deleted.extend(op[1])
            store.flush()
            before = store.removed
            for d in op[1]:
                store.delete(d)
                store.skip(d, "deleted")
            store.flush()
            c["deleted_removed"] += store.removed - before
    rows_after = len(store.present(touched))
    removed = store.removed - removed_before
    counts = {
        "seen": c["seen"], "documents": c["documents"],
        "replaced": c["documents"] - (rows_after - rows_before) - removed,
        "deleted_pmids": c["deleted_pmids"], "deleted_removed": c["deleted_removed"],
        "superseded_by_skipped": removed - c["deleted_removed"],
        "skipped": {r: c[f"skipped_{r}"] for r in SKIP_REASONS},
    }
    return counts, deleted


def totals(per_source: Sequence[dict], kept: int, deleted_ids: list[str]) -> dict[str, Any]:
    """The manifest's ``counts``: the sources' counts summed, ``kept`` from the store."""
    sums = lambda key: sum(s[key] for s in per_source)  # noqa: E731
    return {
        "seen": sums("seen"), "kept": kept, "replaced": sums("replaced"),
        "deleted_pmids": sums("deleted_pmids"), "deleted_removed": sums("deleted_removed"),
        "superseded_by_skipped": sums("superseded_by_skipped"),
        "skipped": {r: sum(s["skipped"].get(r, 0) for s in per_source) for r in SKIP_REASONS},
        "deleted_ids": deleted_ids,
    }


class _LuceneFeed:
    """Feeds each parsed file to the indexes as it arrives and marks which ids need repair: those
    already in Lucene (indexed by an earlier file, or in the index being updated) that a later
    record replaces or deletes. An id is in Lucene iff it is in the store or already marked, so
    both questions go to SQLite (the store's ``_repair`` table), not to a Python set of every id."""

    def __init__(self, pipe: indexer.PipelinedIndexer, store: DocStore, append: bool = False):
        self.pipe = pipe
        self.store = store
        self.append = append
        store.db.execute(f"CREATE TABLE IF NOT EXISTS {REPAIR_TABLE} (docid TEXT PRIMARY KEY)")

    def __call__(self, ops: list[tuple]) -> None:
        # The file's own net effect first (its last word on each id), so duplicates inside one
        # file never reach Lucene; only ids already in Lucene need a repair (a delete).
        final: dict[str, tuple | None] = {}
        for op in ops:
            if op[0] == "put":
                final.pop(op[1][0], None)  # re-insert: keep stream order of the last version
                final[op[1][0]] = op[1]
            else:
                for docid in ([op[1]] if op[0] == "skip" else op[1]):
                    if docid:
                        final[docid] = None
        known = self.store.present(final) | self.store.present(final, table=REPAIR_TABLE)
        docs, repair = [], []
        for docid, row in final.items():
            if docid in known:
                repair.append((docid,))  # its final version is added by finish()
            elif row is not None:
                docs.append((docid, row[1], row[2]))
        self.store.db.executemany(f"INSERT OR IGNORE INTO {REPAIR_TABLE} VALUES (?)", repair)
        if docs:
            self.pipe.add_batch(docs)

    def finish(self) -> None:
        """Lucene's last step (the staging area stays until ``pipe.close()``); the ids to repair
        stay in the store until the manifest is written (a resumed build may need them again)."""
        self.store.flush()
        self.pipe.seal()  # Lucene takes its last batch; meanwhile, what the end needs anyway:
        self.store.add_query_indexes()
        jvm.versions()  # (cached for the manifest)
        self.pipe.finish(_RepairIds(self.store), self._final(), append=self.append, close=False)

    def _final(self):
        """(docid, title, abstract) of the surviving version of each repaired id, by docid (lazy:
        the query runs only if the batch is written)."""
        yield from self.store.db.execute(
            f"SELECT d.docid, d.title, d.abstract FROM {REPAIR_TABLE} r JOIN docs d ON d.docid = r.docid "
            "ORDER BY r.docid")


REPAIR_TABLE = "_repair"


class _RepairIds:
    """The ids marked for repair, sorted, read from the store each time they are iterated."""

    def __init__(self, store: DocStore):
        self.db = store.db

    def __len__(self) -> int:
        return int(self.db.execute(f"SELECT COUNT(*) FROM {REPAIR_TABLE}").fetchone()[0])

    def __iter__(self):
        return (d for (d,) in self.db.execute(f"SELECT docid FROM {REPAIR_TABLE} ORDER BY docid"))

    def __contains__(self, docid: object) -> bool:
        return self.db.execute(f"SELECT 1 FROM {REPAIR_TABLE} WHERE docid = ?", (docid,)).fetchone() is not None


def build_index(sources: Sequence[str | Path], out: str | Path, force: bool = False,
                progress: bool | None = None, jobs: int | None = None, documents: str = DEFAULT_DOCUMENTS) -> dict[str, Any]:
    """Build ``out`` from ``sources`` atomically and return its manifest.

    ``documents`` (:data:`DOCUMENT_POLICIES`): which records become documents; by default every
    record with a title or an abstract (the whole collection is searched), ``title+abstract`` for
    the paper's collection.

    ``jobs`` (default: the core count) is the build's parallelism: processes parsing source files,
    and child JVMs indexing them (each writes ``all`` and ``nt`` on two threads; below 4 cores one
    child takes every parsed file as it comes, on ≥ 4 cores ``jobs // 2`` children take a parsed
    file each, one after another). Each child is capped at
    :func:`~nteval.lucene.indexer.child_memory`, so peak memory grows with ``jobs``, not the corpus.

    Resumable: the build works in ``.OUT.partial`` beside ``out`` and checkpoints each source file
    once it is applied (:class:`_Checkpoints`). Killed (SIGKILL, SIGTERM) or interrupted (Ctrl-C)
    after a file is complete, it keeps that directory, and the same command (any sources that start
    with the same files, unchanged, and the same settings) resumes after the last complete file,
    or after Lucene's step if that had finished. Any other build of ``out`` discards it; a build
    that fails on bad input removes it.
    """
    import os

    jobs = jobs or os.cpu_count() or 1
    out = Path(out)
    check_documents(documents)
    from ..corpus.sources import expand  # (lxml: not loaded by `nteval --help`)
    files = expand(list(sources))
    if out.exists() and not force:
        raise FileExistsError(f"{out}: already exists (use --force to replace it)")
    state: dict[str, Any] = {"done": 0, "kept": False}

    def keep(exc: BaseException) -> bool:
        state["kept"] = isinstance(exc, (KeyboardInterrupt, LuceneError)) and state["done"] > 0
        return state["kept"]

    try:
        with atomic_dir(out, force=force, replaceable=is_index_dir, what=f"an nteval index (no {MANIFEST})",
                        resumable=True, keep=keep, foreign=foreign_entries) as tmp:
            pipe = indexer.PipelinedIndexer({"all": tmp / "all", "nt": tmp / "nt"}, tmp / ".collections",
                                            workers=jobs, progress=progress)
            ckpt = _Checkpoints.open(tmp, files, pipe, out, documents)
            state["done"] = len(ckpt.rows)
            if not ckpt.lucene_done:
                def on_done(*args) -> None:
                    ckpt.add(*args)
                    state["done"] += 1

                _load(ckpt.store, _LuceneFeed(pipe, ckpt.store), files[len(ckpt.rows):], progress, jobs,
                      on_done=on_done, on_indexed=ckpt.indexed, documents=documents)
            else:
                pipe.close()
            entries = [_source_entry(p, r["counts"], r["sha256"]) for p, r in zip(files, ckpt.rows)]
            return _write_manifest(tmp, ckpt.store, entries, [d for r in ckpt.rows for d in r["deleted"]],
                                   index_parameters(documents))
    except (KeyboardInterrupt, LuceneError):
        if state["kept"]:
            print(f"nteval: {state['done']} of {len(files)} source file(s) done are kept in {partial_dir(out)}: the "
                  "same command resumes from there (remove it to discard them)", file=sys.stderr)
        raise


def _load(store: DocStore, feed: _LuceneFeed, files: Sequence[Path], progress: bool | None, jobs: int,
          on_done: OnDone | None = None, on_indexed: Callable[[], None] | None = None,
          documents: str = DEFAULT_DOCUMENTS):
    """Apply ``files`` to the store and the indexes (``load_store`` + Lucene finish; then
    ``on_indexed()``, then the staging area goes)."""
    try:
        feed.pipe.start()
        per_source, deleted = load_store(store, files, progress=progress, jobs=jobs, on_file=feed, on_done=on_done,
                                         documents=documents)
        if len(store) == 0:
            skipped: dict[str, int] = {}
            for src in per_source:
                for reason, n in src["skipped"].items():
                    skipped[reason] = skipped.get(reason, 0) + n
            why = ", ".join(f"{n:,} {reason}" for reason, n in sorted(skipped.items(), key=lambda x: -x[1]) if n)
            raise InputError(files[0] if len(files) == 1 else None,
                             f"no usable document: every record was skipped ({why or 'none was read'}; see "
                             "docs/indexing.md for what each reason means)")
        feed.finish()
        if on_indexed is not None:
            on_indexed()
    except BaseException:
        # Let queued Java work end; the temporary directory then goes, or stays to resume from.
        feed.pipe.close(cleanup=False)
        raise
    feed.pipe.close()
    return per_source, deleted


def _file_id(path: Path) -> list:
    """What says a source file is the one a checkpoint was made from (cheap: no hashing)."""
    st = path.stat()
    return [str(path.resolve()), st.st_size, st.st_mtime_ns]


def _build_key(documents: str) -> str:
    """What a resumed build must share with the killed one, besides its first source files."""
    return hashlib.sha256(json.dumps({"nteval": __version__, "store": STORE_FORMAT,
                                      "parameters": index_parameters(documents),
                                      "jar": jvm.anserini_jar().name}, sort_keys=True).encode()).hexdigest()


_BUILD_TABLES = """
CREATE TABLE IF NOT EXISTS _build (key TEXT NOT NULL, lucene_done INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS _checkpoint (i INTEGER PRIMARY KEY, file TEXT NOT NULL, sha256 TEXT NOT NULL,
    counts TEXT NOT NULL, deleted TEXT NOT NULL, seq INTEGER NOT NULL, batches INTEGER NOT NULL,
    digests TEXT NOT NULL, documents INTEGER NOT NULL);
"""


class _Checkpoints:
    """Per-file checkpoints of a build, in tables of its own store: a file's rows, its ids to
    repair and its checkpoint row (counts, sha256, stream position, Lucene batches written) are
    committed together, after its Lucene batch is written. A killed build leaves the store as of
    its last commit (SQLite rolls back the rest) and batches past the checkpoint, which
    :meth:`PipelinedIndexer.resume` drops. The tables go when the manifest is written."""

    def __init__(self, store: DocStore, pipe: indexer.PipelinedIndexer, rows: list[dict], lucene_done: bool):
        self.store, self.pipe, self.rows, self.lucene_done = store, pipe, rows, lucene_done

    @classmethod
    def open(cls, tmp: Path, files: Sequence[Path], pipe: indexer.PipelinedIndexer, out: Path,
             documents: str) -> _Checkpoints:
        """The checkpoints in ``tmp`` if the build they come from can go on with ``files`` (said on
        stderr), else a fresh start (what ``tmp`` held is removed)."""
        import shutil

        key = _build_key(documents)
        prev = _previous(tmp / STORE_FILENAME, key, files)
        rows, lucene_done = prev if isinstance(prev, tuple) else ([], False)
        damage = _damage(tmp, rows, lucene_done) if rows else None
        if damage:
            prev = damage  # (and discarded below)
        if not damage and rows and (lucene_done or pipe.resume(rows[-1]["batches"], rows[-1]["digests"])):
            print(f"nteval: resuming the build of {out}: {len(rows)} of {len(files)} source file(s) already done"
                  + (", and the Lucene indexes" if lucene_done else ""), file=sys.stderr)
        else:
            if rows or isinstance(prev, str):
                why = prev if isinstance(prev, str) else "its Lucene batches are incomplete"
                print(f"nteval: discarding the interrupted build in {tmp} ({why})", file=sys.stderr)
            for p in tmp.iterdir():
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
            rows, lucene_done = [], False
        store = DocStore(tmp / STORE_FILENAME, create=True, durable=True)
        store.db.executescript(_BUILD_TABLES)
        if not rows:
            store.db.execute("INSERT INTO _build VALUES (?, 0)", (key,))
            store.db.commit()
        store.seq = rows[-1]["seq"] if rows else 0
        return cls(store, pipe, rows, lucene_done)

    def add(self, path: Path, sha256: str, counts: dict, deleted: list[str]) -> None:
        """``path`` is applied (store, ids to repair, Lucene batch written): commit it."""
        self.store.flush()
        row = {"sha256": sha256, "counts": counts, "deleted": deleted, "seq": self.store.seq,
               "batches": self.pipe.batches, "digests": list(self.pipe.digests), "documents": len(self.store)}
        self.store.db.execute("INSERT INTO _checkpoint VALUES (?,?,?,?,?,?,?,?,?)",
                              (len(self.rows), json.dumps(_file_id(path)), sha256, json.dumps(counts),
                               json.dumps(deleted), row["seq"], row["batches"], json.dumps(row["digests"]),
                               row["documents"]))
        self.store.db.commit()
        self.rows.append(row)

    def indexed(self) -> None:
        """The Lucene indexes are complete: a resumed build goes straight to the manifest."""
        self.store.db.execute("UPDATE _build SET lucene_done = 1")
        self.store.db.commit()
        self.lucene_done = True


def _previous(path: Path, key: str, files: Sequence[Path]) -> tuple[list[dict], bool] | str | None:
    """(checkpoint rows, Lucene done) of the killed build whose store is ``path``; why they cannot
    be used by a build of ``files`` (a string); None when there is none."""
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(str(path))  # its first read rolls back what the killed build left uncommitted
        try:
            [(prev_key, lucene_done)] = db.execute("SELECT key, lucene_done FROM _build").fetchall()
            rows = db.execute("SELECT file, sha256, counts, deleted, seq, batches, digests, documents FROM _checkpoint "
                              "ORDER BY i").fetchall()
        finally:
            db.close()
    except (sqlite3.DatabaseError, ValueError):
        return "no readable checkpoints"
    if prev_key != key:
        return "another nteval version or other index parameters"
    if len(rows) > len(files) or (lucene_done and len(rows) < len(files)) or any(
            json.loads(r[0]) != _file_id(f) for r, f in zip(rows, files)):
        return "other or changed source files"
    return [{"sha256": r[1], "counts": json.loads(r[2]), "deleted": json.loads(r[3]), "seq": r[4], "batches": r[5],
             "digests": json.loads(r[6]), "documents": r[7]} for r in rows], bool(lucene_done)


def _damage(tmp: Path, rows: list[dict], lucene_done: bool) -> str | None:
    """Why a killed build's directory cannot be trusted to resume from, if it cannot: its store
    holds another number of documents than its last checkpoint counted, or a staged Lucene batch
    is not the file its checkpoint recorded (its sha256). Such damage would otherwise make a wrong
    index under the right fingerprint."""
    db = sqlite3.connect(str(tmp / STORE_FILENAME))
    try:
        n = int(db.execute("SELECT COUNT(*) FROM docs").fetchone()[0])
    except sqlite3.DatabaseError:
        return "its document store is unreadable"
    finally:
        db.close()
    if n != rows[-1]["documents"]:
        return f"its document store holds {n:,} documents, its last checkpoint counted {rows[-1]['documents']:,}"
    if lucene_done:
        return None
    for i, digest in enumerate(rows[-1]["digests"]):
        batch = indexer.PipelinedIndexer.batch_path(tmp / ".collections", i)
        if batch.is_file() and sha256_file(batch) != digest:
            return f"its staged batch {batch.name} changed since its checkpoint"
    return None


def _source_entry(path: Path, counts: dict, sha256: str) -> dict[str, Any]:
    from ..corpus.sources import source_format  # (lxml: not loaded by `nteval --help`)
    return {"path": str(path), "format": source_format(path), "bytes": path.stat().st_size, "sha256": sha256,
            "counts": counts}


#: What the Lucene indexes are made with (part of the fingerprint), besides the documents policy
#: (:func:`index_parameters`; indexes made before the policy existed have these alone and are
#: ``title+abstract`` indexes).
PARAMETERS = {
    "analyzer": "Anserini DefaultEnglishAnalyzer (Porter stemmer, Lucene English stopwords)",
    "index_flags": list(indexer.INDEX_FLAGS),
    "segments": "one per source file (+1 for repaired ids); doc order = input order",
    "sentence_splitter": "blingfire + digit-start rule (nteval.corpus.sentences)",
    "abstract": "AbstractText sections joined by one space, labels kept in meta only",
}


def index_parameters(documents: str) -> dict[str, Any]:
    """The manifest's ``parameters`` of an index built with documents policy ``documents``."""
    check_documents(documents)
    return {**PARAMETERS, "documents": documents}


def _write_manifest(tmp: Path, store: DocStore, sources: list[dict], deleted_ids: list[str],
                    parameters: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Close ``store`` and write ``tmp/manifest.json`` for ``sources`` (every source, in order)."""
    for table in (REPAIR_TABLE, "_checkpoint", "_build"):  # a build's bookkeeping
        store.db.execute(f"DROP TABLE IF EXISTS {table}")
    n = len(store)
    n_nt = store.count(INDEX_MEMBERS["nt"])
    for name, want in (("all", n), ("nt", n_nt)):  # what Lucene holds is what the store says, or no index
        got = indexer.doc_count(tmp / name)
        if got != want:
            raise InputError(None, f"the {name} index being built holds {got:,} documents but the document store {want:,}: the build "
                             "went wrong (a damaged resume directory?) and is discarded; run the command again")
    store_info = {"path": STORE_FILENAME, "format": store.format, "documents": n,
                  "without_title": store.count("title = ''"), "without_abstract": n - n_nt,
                  "with_title_and_abstract": store.count("title != '' AND abstract != ''"),
                  "documents_with_mesh": store.documents_with_mesh(),
                  "vernacular_titles": {lang or "unknown": c for lang, c in store.vernacular_counts().items()}}
    store.close()
    manifest: dict[str, Any] = {
        "nteval_version": __version__,
        "created_utc": _now(),
        "sources": sources,
        "counts": totals([s["counts"] for s in sources], n, deleted_ids),
        "indexes": {
            "all": {"path": "all", "documents": n, "contents": "title + newline + abstract"},
            "nt": {"path": "nt", "documents": n_nt, "contents": "abstract only (titles stripped)"},
        },
        "store": store_info,
        "parameters": parameters,
        "versions": {"python": platform.python_version(), **jvm.versions()},
        **(extra or {}),
    }
    manifest["fingerprint"] = fingerprint(manifest)
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


#: The oldest store layout an update can extend (format 2's columns; a format-2 store keeps no
#: record of skipped records, and stays format 2).
UPDATABLE_STORE_FORMAT = 2


#: Versions that must not change between a build and its updates (they decide the index terms).
_PINNED = ("anserini_jar", "lucene")


def update_index(index_dir: str | Path, sources: Sequence[str | Path], progress: bool | None = None,
                 jobs: int | None = None) -> dict[str, Any]:
    """Apply Medline update files (or more BEIR corpora) ``sources``, in order, to the index
    ``index_dir``; return its new manifest. The result equals a from-scratch build over the
    index's sources followed by these (same documents, counts, fingerprint and search results).

    Built beside ``index_dir`` — Lucene files hard-linked (Lucene never rewrites a file), the
    store copied — and swapped in by rename: a failure or Ctrl-C leaves ``index_dir`` as it was.
    Engine caches keyed on the old fingerprint (``engines/``) are not carried over; the dense
    vectors are (:func:`_carry_vectors`), so the next encoding encodes only new or changed records.
    An index holding anything nteval did not write (:func:`~.manifest.foreign_entries`) is
    refused in one line before any work: the swap would delete it.
    """
    import os
    import shutil

    jobs = jobs or os.cpu_count() or 1
    index_dir = Path(index_dir)
    if not index_dir.exists():
        raise InputError(index_dir, "no such index directory; --update applies update files to an index made by nteval index")
    if not is_index_dir(index_dir):
        raise InputError(index_dir, f"not an nteval index directory (no {MANIFEST}); --update applies update files "
                                    "to an index made by nteval index")
    refuse_foreign(index_dir, foreign_entries(index_dir), "--update")  # (before any work; again under the lock)
    from ..corpus.sources import expand  # (lxml: not loaded by `nteval --help`)
    files = expand(list(sources))
    shas = [sha256_file(p) for p in files]
    with atomic_dir(index_dir, force=True, replaceable=is_index_dir, what=f"an nteval index (no {MANIFEST})",
                    foreign=foreign_entries, doing="--update") as tmp:
        old = read_manifest(index_dir)  # (again, under the lock)
        _check_update(index_dir, old, files, shas)
        for name in ("all", "nt"):
            (tmp / name).mkdir()
            for f in (index_dir / name).iterdir():
                if f.is_file() and f.name != "write.lock":
                    os.link(f, tmp / name / f.name)
        shutil.copyfile(index_dir / STORE_FILENAME, tmp / STORE_FILENAME)
        _carry_vectors(index_dir / "dense", tmp / "dense")
        store = DocStore(tmp / STORE_FILENAME)
        store.db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")  # a copy: thrown away on failure
        if store.format < UPDATABLE_STORE_FORMAT:  # (a format-2 store is updated as it is: it records no skips)
            raise InputError(index_dir, f"its document store has format {store.format} (this nteval writes "
                                        f"{STORE_FORMAT}): rebuild the index with nteval index --force")
        store.seq = sum(s["counts"]["documents"] for s in old["sources"])  # stream positions go on
        feed = _LuceneFeed(indexer.PipelinedIndexer({"all": tmp / "all", "nt": tmp / "nt"}, tmp / ".collections",
                                                    workers=jobs, progress=progress), store, append=True)
        per_source, deleted = _load(store, feed, files, progress, jobs, documents=documents_policy(old))
        new = [_source_entry(p, c, h) for p, c, h in zip(files, per_source, shas)]
        this = {"read": sum(c["seen"] for c in per_source),
                "added": sum(c["documents"] - c["replaced"] for c in per_source),
                "revised": sum(c["replaced"] for c in per_source),
                "deleted": sum(c["deleted_removed"] for c in per_source)}
        updates = [*old.get("updates", []), {"utc": _now(), "sources": len(files), "nteval_version": __version__,
                                             "records": this}]
        return _write_manifest(tmp, store, old["sources"] + new, old["counts"]["deleted_ids"] +
                               [d for ds in deleted for d in ds], old["parameters"],
                               extra={"created_utc": old.get("created_utc"), "updates": updates})


def _carry_vectors(old: Path, new: Path) -> None:
    """The finished dense-vector caches and pooled stores of the index before its update, hard-linked
    into the updated one: the next encoding takes the vector of every document whose text did not
    change from them instead of encoding it again (:class:`nteval.encoders.store._Donor`; the pooled
    store is per document already)."""
    import os

    if not old.is_dir() or old.is_symlink():
        return
    for c in old.iterdir():
        if c.is_symlink() or c.name.startswith("."):
            continue
        if c.is_file() and c.name.startswith("pool-") and c.suffix == ".sqlite":
            new.mkdir(exist_ok=True)
            os.link(c, new / c.name)
        elif c.is_dir() and not c.name.endswith(".partial") and (c / "meta.json").is_file() \
                and (c / "texts.txt").is_file():
            (new / c.name).mkdir(parents=True)
            for f in c.iterdir():
                if f.is_file() and not f.is_symlink():
                    os.link(f, new / c.name / f.name)


def not_applied(index_dir: str | Path, sources: Sequence[str | Path]) -> tuple[list[Path], list[Path]]:
    """(the files of ``sources`` the index does not hold yet, in order; those it holds: same sha256
    as one of its sources). An empty folder gives none."""
    from ..corpus.sources import expand

    held = {s["sha256"] for s in read_manifest(Path(index_dir))["sources"]}
    files: list[Path] = []
    for src in sources:  # (a folder with no update file yet, a .gitkeep at most: nothing to apply from it)
        try:
            files += expand([src])
        except InputError:
            if not Path(src).is_dir():
                raise
    todo = [p for p in files if sha256_file(p) not in held]
    return todo, [p for p in files if p not in todo]


def _check_update(index_dir: Path, old: dict[str, Any], files: Sequence[Path], shas: Sequence[str]) -> None:
    """One-line refusals: a source already applied (same sha256), given twice, or an index made
    with other parameters or another Anserini/Lucene (its terms would not be the update's)."""
    seen = {s["sha256"]: s["path"] for s in old["sources"]}
    for path, sha in zip(files, shas):
        if sha in seen:
            raise InputError(path, f"already in {index_dir} (same sha256 as its source {seen[sha]}); nothing was changed")
        seen[sha] = f"{path} (given twice)"
    policy = documents_policy(old)
    if old.get("parameters") not in (index_parameters(policy), PARAMETERS if policy == "title+abstract" else None):
        raise InputError(index_dir, "built with other index parameters than this nteval's (see its manifest): an "
                                    "update would mix them; rebuild the index with nteval index --force")
    now = jvm.versions()
    for key in _PINNED:
        if old["versions"].get(key) != now.get(key):
            raise InputError(index_dir, f"built with {key} {old['versions'].get(key)}, this nteval has {now.get(key)}: "
                                        "an update would mix them; rebuild the index with nteval index --force")
