"""Lucene doc number → collection docid, as a memory-mapped NumPy file beside the index.

Every search maps Lucene doc numbers to docids. A Python list of every docid costs ~65 bytes a
document in every process (~2.3 GB at Medline's 36M); this table is an ``.npy`` file written by
Java straight from the ``id`` doc values — ``int64`` when all docids are canonical decimals (PMIDs:
8 bytes a document), else fixed-width UTF-8 — and memory-mapped, so all processes on a machine
share one copy in the page cache. The first search of an index writes it (a few seconds at
Medline scale; concurrent writers are safe: temp file, then rename); in a directory nteval cannot
write it is built in memory, still 8 bytes a PMID.

The file is named after the Lucene commit it describes (``nteval-docids.segments_N.npy``) and
checked against the index's document count, so a table never outlives its index.

An index of at most :data:`STRING_CACHE_DOCS` documents also keeps, once it is searched, its
docids as Python strings (~65 bytes a document: ≤ 65 MB): a million hits then cost a list look-up
each instead of a new string (0.10 → 0.04 s per million hits, a sixth of a batch search's time).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from . import jvm

PREFIX = "nteval-docids."
#: indexes up to this many documents keep their docids as Python strings once searched
STRING_CACHE_DOCS = 1_000_000


class DocidTable:
    """``table[d]`` → docid of Lucene doc ``d``; ``table.take(ds)`` → docids of many."""

    def __init__(self, array: np.ndarray):
        self.array = array
        self.numeric = array.dtype.kind == "i"
        self._strings: list[str] | None = None

    def __len__(self) -> int:
        return int(self.array.shape[0])

    def __getitem__(self, d: int) -> str:
        v = self.array[d]
        return str(int(v)) if self.numeric else v.decode("utf-8")

    def take(self, docs) -> list[str]:
        if self._strings is None and len(self) <= STRING_CACHE_DOCS:
            self._strings = self._decode(self.array.tolist())
        if self._strings is not None:
            return list(map(self._strings.__getitem__, np.asarray(docs, dtype=np.int64).tolist()))
        return self._decode(self.array[np.asarray(docs, dtype=np.int64)].tolist())

    def _decode(self, vals: list) -> list[str]:
        return list(map(str, vals)) if self.numeric else [v.decode("utf-8") for v in vals]

    def tolist(self) -> list[str]:
        return self.take(np.arange(len(self)))


def table_path(index_dir: Path, reader) -> Path:
    commit = jvm.cast("org.apache.lucene.index.DirectoryReader", reader).getIndexCommit()
    return Path(index_dir) / f"{PREFIX}{commit.getSegmentsFileName()}.npy"


def _load(path: Path, max_doc: int, reader=None) -> np.ndarray | None:
    """The table at ``path`` if it is one of ``max_doc`` entries that agree with the index where
    sampled (:func:`_agrees`), else None (missing, truncated, garbage, reordered: written again)."""
    try:
        arr = np.load(path, mmap_mode="r")
    except (OSError, ValueError):
        return None
    if arr.ndim != 1 or arr.shape[0] != max_doc:
        return None
    return arr if reader is None or _agrees(arr, reader) else None


#: How many Lucene documents a table is checked at (spread over the index, the ends included).
SAMPLE = 64


def _agrees(arr: np.ndarray, reader) -> bool:
    """The table gives the index's own id at :data:`SAMPLE` documents spread over it (a reordered or
    foreign table of the right length fails at almost any of them)."""
    n = int(arr.shape[0])
    if n == 0:
        return True
    table = DocidTable(arr)
    stored = reader.storedFields()
    for d in sorted({int(x) for x in np.linspace(0, n - 1, min(n, SAMPLE))}):
        doc = stored.document(d)
        if doc is None or str(doc.get("id")) != table[d]:
            return False
    return True


def _java_write(reader, path: Path | str) -> None:
    jvm.autoclass("nteval.BatchSearch").writeDocids(reader, "id", str(Path(path).absolute()))


def write_table(index_dir: Path, reader) -> Path:
    """Write (atomically) the table for the index's current commit and remove stale ones."""
    index_dir = Path(index_dir)
    path = table_path(index_dir, reader)
    fd, tmp = tempfile.mkstemp(prefix=".docids-", suffix=".npy.tmp", dir=index_dir)
    os.close(fd)
    try:
        _java_write(reader, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    for old in index_dir.glob(f"{PREFIX}*.npy"):
        if old != path:
            old.unlink(missing_ok=True)
    return path


def open_table(index_dir: Path, reader) -> DocidTable:
    """The index's table: the file when present and current, else written now (or, in a directory
    nteval cannot write, built in a temporary file and read into memory)."""
    max_doc = int(reader.maxDoc())
    path = table_path(index_dir, reader)
    arr = _load(path, max_doc, reader)
    if arr is None and path.is_file():
        import sys

        print(f"note: the docid table {path} does not match its index (damaged?): writing it again", file=sys.stderr)
    if arr is None:
        try:
            arr = _load(write_table(index_dir, reader), max_doc)
        except OSError:
            arr = None
        if arr is None:  # read-only index directory
            with tempfile.TemporaryDirectory(prefix="nteval-docids-") as tmp:
                out = Path(tmp) / "table.npy"
                _java_write(reader, out)
                arr = np.load(out)
    return DocidTable(arr)
