"""Build the Lucene indexes with Anserini's ``IndexCollection`` (the indexer behind
``python -m pyserini.index.lucene``).

:class:`PipelinedIndexer` indexes each parsed source file while the next one is still being parsed,
and repairs replaced/deleted documents at the end, so parse and Lucene work overlap.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Collection, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from . import jvm

#: Stored with every index: positions (proximity scoring), doc vectors (RM3/Rocchio feedback),
#: raw JSON (document text for inspection).
INDEX_FLAGS = ("-storePositions", "-storeDocvectors", "-storeRaw")

#: One JSON string encoder for every line: a JsonCollection line is written as
#: ``json.dumps({"id": docid, "contents": contents}, ensure_ascii=False)`` would write it, byte for
#: byte, without building an encoder and a dict per document.
_json = json.JSONEncoder(ensure_ascii=False).encode


#: A child indexer's memory, in MB: Lucene's RAM buffer (flushed to a new segment when full) and the
#: JVM heap that holds it. Anserini's defaults (a 4,096 MB buffer, a heap of a quarter of the RAM)
#: let each child grow to gigabytes on a large corpus; these keep the whole build's tree near a
#: fixed size at any corpus size (benchmarks/scale.py). Override with NTEVAL_INDEX_BUFFER_MB /
#: NTEVAL_INDEX_HEAP_MB.
CHILD_BUFFER_MB = 256
CHILD_HEAP_MB = 768


def child_memory() -> tuple[int, int]:
    """(RAM buffer MB, heap MB) for a child indexer; the heap is at least the buffer + 256 MB."""
    from ..errors import env_int

    buffer = env_int("NTEVAL_INDEX_BUFFER_MB", CHILD_BUFFER_MB, minimum=1)
    heap = env_int("NTEVAL_INDEX_HEAP_MB", CHILD_HEAP_MB, minimum=1)
    return buffer, max(heap, buffer + 256)


def _indexer_command(input_dir: Path, index_dir: Path, threads: int) -> list[str]:
    java = str(Path(jvm.java_home()) / "bin" / "java")
    buffer, heap = child_memory()
    return [java, f"-Xmx{heap}m", "-XX:+UseSerialGC", "-Dslf4j.internal.verbosity=WARN", "-cp", str(jvm.anserini_jar()),
            "io.anserini.index.IndexCollection",
            "-collection", "JsonCollection", "-input", str(input_dir), "-index", str(index_dir),
            "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(threads), "-memoryBuffer", str(buffer),
            *INDEX_FLAGS, "-quiet"]


class PipelinedIndexer:
    """Several Lucene indexes (``all``, ``nt``) fed batch by batch while the caller keeps parsing.

    ``add_batch`` writes one JsonCollection shard per index and starts Anserini's
    ``IndexCollection`` on it in a child JVM (at most ``workers`` at once): real parallelism with
    no Python thread inside pyjnius, which is not safe for concurrent calls (we saw a SIGSEGV in
    ``IndexWriter.deleteDocuments`` and a varargs mix-up when two threads called into it). Each
    batch becomes a small Lucene index of its own (``IndexCollection`` always creates). ``finish``
    stitches each index with ``IndexWriter.addIndexes`` in batch order (in this process, one call
    at a time), deletes ids that must be repaired (replaced or deleted after being indexed), adds
    their final versions and expunges the deletions so collection statistics are exact. Lucene doc
    ids follow input order (one segment per parsed file, repaired ids last).

    With fewer than 4 cores the work is CPU-bound and overlapping buys nothing, while every child
    JVM pays its own JIT warm-up: batches are then *deferred* and each index is built by one child
    over all batch files at the end (measured on 2 cores: 21.5 s eager vs 17-18 s deferred for
    33k PubMed documents). ``eager`` overrides the choice.
    """

    def __init__(self, targets: dict[str, Path], staging: Path, workers: int | None = None, eager: bool | None = None,
                 progress: bool = False):
        self.targets = targets
        self.progress = progress
        self.staging = staging
        self.batches = 0
        cores = os.cpu_count() or 1
        child_memory()  # a bad NTEVAL_INDEX_*_MB fails here, before any work
        self.eager = cores >= 4 if eager is None else eager
        workers = workers or cores  # (the CLI passes --jobs)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lucene-child")
        self._futures: list[Future] = []
        self._children: set[subprocess.Popen] = set()
        self._closing = False

    def _shard(self, name: str, i: int, kind: str) -> Path:
        return self.staging / kind / name / f"{i:05d}"

    def _run_child(self, src: Path, dst: Path) -> None:
        """Index ``src`` into ``dst`` in a child JVM; ``dst`` appears (by rename) only once complete,
        so a resumed build knows which shards it can keep."""
        if self._closing:
            return
        from ..lifecycle import die_with_parent

        part = dst.with_name(dst.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        proc = subprocess.Popen(_indexer_command(src, part, 1), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                preexec_fn=die_with_parent)  # no orphan JVM after kill -9 of nteval
        self._children.add(proc)
        try:
            _out, err = proc.communicate()
        finally:
            self._children.discard(proc)
        if proc.returncode != 0 and not self._closing:
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["(no message)"]
            raise RuntimeError(f"Lucene indexing of {src} failed (exit {proc.returncode}): {tail[0]}")
        if proc.returncode == 0:
            os.rename(part, dst)

    def add_batch(self, docs: dict[str, Iterable[tuple[str, str]]]) -> int:
        """Queue one batch: for each index name, ``(docid, contents)`` pairs (every name the same
        ids). Returns how many documents it holds; an empty batch is dropped."""
        i = self.batches
        self.batches += 1
        written = 0
        for name, pairs in docs.items():
            src = self._shard(name, i, "json")
            shutil.rmtree(src, ignore_errors=True)  # left by a killed run that is being resumed
            src.mkdir(parents=True)
            with open(src / "docs.jsonl", "w", encoding="utf-8") as fh:
                written = 0
                for docid, contents in pairs:
                    fh.write(f'{{"id": {_json(docid)}, "contents": {_json(contents)}}}\n')
                    written += 1
        if not written:
            for name in docs:
                shutil.rmtree(self._shard(name, i, "json"))
            self.batches -= 1
            return 0
        if self.eager:
            for name in docs:
                self._futures.append(self._pool.submit(self._run_child, self._shard(name, i, "json"),
                                                       self._shard(name, i, "lucene")))
        return written

    def _index_deferred(self) -> int:
        """One child JVM per index over all batch files so far; returns how many shards result."""
        if self.eager or self.batches == 0:
            return self.batches
        for name in self.targets:
            merged = self.staging / "json-all" / name
            shutil.rmtree(merged, ignore_errors=True)  # left by a killed run that is being resumed
            merged.mkdir(parents=True)
            for i in range(self.batches):  # links: the batch files stay for a resumed run
                os.link(self._shard(name, i, "json") / "docs.jsonl", merged / f"{i:05d}.jsonl")
            self._futures.append(self._pool.submit(self._run_child, merged, self._shard(name, 0, "lucene")))
        return 1

    def _wait(self) -> None:
        """Wait for every queued child; with ``progress``, a bar that ticks (elapsed time) while the
        Lucene phase, silent otherwise, runs."""
        from tqdm import tqdm

        pending = {f for f in self._futures if not f.done()}
        with tqdm(total=len(self._futures), initial=len(self._futures) - len(pending), desc="lucene", unit=" index",
                  disable=not self.progress, file=sys.stderr, leave=False) as bar:
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                bar.update(len(done))
                bar.refresh()
        for f in self._futures:
            f.result()

    def resume(self, batches: int) -> bool:
        """Go on after a killed run whose first ``batches`` batches were complete: drop what came
        after them (and any half-made shard or target), queue the eager shards still missing.
        False (and nothing done) when a batch file of those is missing: nothing to resume from."""
        if any(not (self._shard(name, i, "json") / "docs.jsonl").is_file()
               for name in self.targets for i in range(batches)):
            return False
        self.batches = batches
        for target in self.targets.values():
            shutil.rmtree(target, ignore_errors=True)
        shutil.rmtree(self.staging / "json-all", ignore_errors=True)
        for name in self.targets:
            for kind in ("json", "lucene"):
                folder = self.staging / kind / name
                for p in folder.iterdir() if folder.is_dir() else ():
                    if not (p.name.isdigit() and int(p.name) < batches and (self.eager or kind == "json")):
                        shutil.rmtree(p)
            if self.eager:
                for i in range(batches):
                    if not self._shard(name, i, "lucene").is_dir():
                        self._futures.append(self._pool.submit(self._run_child, self._shard(name, i, "json"),
                                                               self._shard(name, i, "lucene")))
        return True

    def finish(self, repair_ids: Collection[str], final_docs: dict[str, Iterable[tuple[str, str]]],
               append: bool = False, close: bool = True) -> None:
        """Wait for all batches, stitch, and repair ``repair_ids`` (re-iterable: read once per
        index) with ``final_docs`` (the versions that survive). With ``append`` the targets are
        existing indexes (an update): the batches and repairs are applied to them. Without
        ``close`` the staging area stays until :meth:`close` (a resumable build first records that
        its indexes are complete)."""
        n_shards = self._index_deferred()
        self._wait()
        n_batches = self.batches
        repair_batch = None
        if repair_ids:
            self.eager = True  # the repair batch is indexed on its own
            if self.add_batch(final_docs):
                self._wait()
                repair_batch = n_batches
        for name, target in self.targets.items():
            shards = [self._shard(name, i, "lucene") for i in range(n_shards)]
            repair = self._shard(name, repair_batch, "lucene") if repair_batch is not None else None
            if append and not shards and not repair_ids:
                continue  # nothing to change
            if len(shards) == 1 and not repair_ids and not append:
                os.rename(shards[0], target)  # nothing to stitch
            else:
                _stitch(target, shards, repair_ids, repair, append=append)
        if close:
            self.close()

    def close(self, cleanup: bool = True) -> None:
        """Stop: kill running child JVMs (after an error or Ctrl-C); remove the staging area unless
        ``cleanup`` is False (a build that keeps it to resume from)."""
        self._closing = True
        for proc in list(self._children):
            proc.kill()
        self._pool.shutdown(wait=True, cancel_futures=True)
        if cleanup:
            shutil.rmtree(self.staging, ignore_errors=True)


def _directory(path: Path):
    FSDirectory = jvm.autoclass("org.apache.lucene.store.FSDirectory")
    File = jvm.autoclass("java.io.File")
    return FSDirectory.open(File(str(path)).toPath())  # (Paths.get is varargs: avoid)


def _stitch(target: Path, shards: list[Path], repair_ids: Iterable[str], repair_shard: Path | None,
            append: bool = False) -> None:
    """target := shards in order (after target's own documents with ``append``), minus
    ``repair_ids``, plus ``repair_shard``; no deleted document is left (exact BM25 statistics)."""
    IndexWriterConfig = jvm.autoclass("org.apache.lucene.index.IndexWriterConfig")
    OpenMode = jvm.autoclass("org.apache.lucene.index.IndexWriterConfig$OpenMode")
    IndexWriter = jvm.autoclass("org.apache.lucene.index.IndexWriter")
    Term = jvm.autoclass("org.apache.lucene.index.Term")
    TermQuery = jvm.autoclass("org.apache.lucene.search.TermQuery")
    policy = jvm.autoclass("org.apache.lucene.index.TieredMergePolicy")()
    policy.setForceMergeDeletesPctAllowed(0.0)  # default 10% would keep a few deleted docs
    cfg = IndexWriterConfig()
    cfg.setOpenMode(OpenMode.APPEND if append else OpenMode.CREATE)
    cfg.setMergePolicy(policy)  # (not chained: pyjnius types the result as the parent class)
    w = IndexWriter(_directory(target), cfg)
    try:
        for shard in shards:
            w.addIndexes(_directory(shard))
        deleted = False
        for docid in repair_ids:
            w.deleteDocuments(TermQuery(Term("id", docid)))  # the Query overload: pyjnius picks it reliably
            deleted = True
        w.commit()
        if repair_shard is not None:
            w.addIndexes(_directory(repair_shard))
        if deleted:
            w.forceMergeDeletes()  # deleted docs would still count in df/avgdl for BM25
        w.commit()
    finally:
        w.close()
