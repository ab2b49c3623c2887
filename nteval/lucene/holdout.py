"""Copies of an index with some documents held out (Lucene deletions), for leak-free topics.

A high-recall query is a sentence of its source document's abstract, and the source document is
in ``nt``: every system finds it at rank 1, and feedback systems (RM3, Rocchio) then expand the
query with the rest of that abstract — information no real searcher's query carries — which
pulls in the documents S_ref found from the title. Holding the source document out of the index
a topic is searched in removes the leak for *every* system, ours or anyone's, without touching
its code.

The copy hard-links the index files (Lucene never rewrites a file, so the original cannot
change), then marks the held-out documents deleted (a new ``.liv`` file and commit point) with
no merges. Deleted documents are never returned nor used for feedback, while Lucene's collection
statistics (document frequencies, average length) still count them, so every other document
keeps exactly the score it has in the full index.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from . import jvm


def holdout_copy(index_dir: Path, dest: Path, docids: Iterable[str]) -> Path:
    """Build ``dest`` = ``index_dir`` with ``docids`` deleted; atomic (temp dir, then rename)."""
    index_dir, dest = Path(index_dir), Path(dest)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        for f in index_dir.iterdir():
            if f.is_file() and f.name != "write.lock":
                os.link(f, tmp / f.name)
        FSDirectory = jvm.autoclass("org.apache.lucene.store.FSDirectory")
        File = jvm.autoclass("java.io.File")
        config = jvm.autoclass("org.apache.lucene.index.IndexWriterConfig")()
        config.setOpenMode(jvm.autoclass("org.apache.lucene.index.IndexWriterConfig$OpenMode").APPEND)
        config.setMergePolicy(jvm.autoclass("org.apache.lucene.index.NoMergePolicy").INSTANCE)
        Term = jvm.autoclass("org.apache.lucene.index.Term")
        TermQuery = jvm.autoclass("org.apache.lucene.search.TermQuery")
        directory = FSDirectory.open(File(str(tmp.resolve())).toPath())
        writer = jvm.autoclass("org.apache.lucene.index.IndexWriter")(directory, config)
        try:
            for d in docids:
                writer.deleteDocuments(TermQuery(Term("id", str(d))))  # (pyjnius picks the Query... overload)
            writer.commit()
        finally:
            writer.close()
            directory.close()
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest
