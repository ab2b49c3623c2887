"""Build the Lucene indexes: ``all`` (title, newline, abstract) and ``nt`` (abstract only).

nteval's own ``nteval.BuildIndexes`` (Java, in the helper jar) writes both from one pass: every
document exactly as Anserini's ``IndexCollection`` (the indexer behind ``python -m
pyserini.index.lucene``) with :data:`INDEX_FLAGS` indexes it (checked term by term, position by
position, by ``tests/index/test_build.py``), with each abstract analysed once and one JVM.

:class:`PipelinedIndexer` feeds it each parsed source file while the next one is still being
parsed, and repairs replaced/deleted documents at the end.
"""
from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Collection, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from ..errors import LuceneError, env_int
from ..lifecycle import die_with_parent
from ..progress import shown, tqdm
from . import jvm

#: Stored with every index: positions (proximity scoring), doc vectors (RM3/Rocchio feedback),
#: raw JSON (document text for inspection). IndexCollection's flags for the same documents.
INDEX_FLAGS = ("-storePositions", "-storeDocvectors", "-storeRaw")

#: The two indexes, in the order BuildIndexes takes their directories.
NAMES = ("all", "nt")

#: JSON string literals as ``json.dumps(s, ensure_ascii=False)`` writes them (the C encoder, called
#: once per string: a batch line ``["docid", "title", "abstract"]`` is three calls, not an
#: ``iterencode`` of a list).
_json = json.JSONEncoder(ensure_ascii=False).encode


#: The builder's memory, in MB: Lucene's RAM buffer per index (flushed to a new segment when full)
#: and the JVM heap that holds both. Anserini's defaults (a 4,096 MB buffer, a heap of a quarter of
#: the RAM) let an indexer grow to gigabytes on a large corpus; these keep the whole build's tree
#: near a fixed size at any corpus size (benchmarks/scale.py). The two buffers hold together what
#: one IndexCollection child held: at 1M records 128 MB each built as fast as 256 MB each (402.9
#: vs 404.8 s) with a peak of 1,700 MB instead of 1,949 (the builder runs while files still parse).
#: Override with NTEVAL_INDEX_BUFFER_MB / NTEVAL_INDEX_HEAP_MB.
CHILD_BUFFER_MB = 128
CHILD_HEAP_MB = 768


def child_memory() -> tuple[int, int]:
    """(RAM buffer MB per index, heap MB) for a builder; the heap is at least both buffers + 256 MB."""
    buffer = env_int("NTEVAL_INDEX_BUFFER_MB", CHILD_BUFFER_MB, minimum=1)
    heap = env_int("NTEVAL_INDEX_HEAP_MB", CHILD_HEAP_MB, minimum=1)
    return buffer, max(heap, 2 * buffer + 256)


#: HotSpot's C2 compiler tuned for a build of seconds to minutes, where the JIT compiler threads
#: otherwise spend ≈ 40 % of the builder's CPU compiling methods that then run only seconds:
#: C2 thresholds × 10 (measured on both shared files: 11.2 → 8.3 CPU-s of compiling, 25.1 → 23.5
#: CPU-s in all; wall time unchanged), and less inlining into C2 code (InlineSmallCode 2,500 →
#: 1,000 bytes, MaxInlineLevel 15 → 9: 22.0 → 20.5 CPU-s, 11.7 → 11.0 s for the builder alone). A
#: long build still compiles every hot method; it only runs the C1 version a little longer first.
JIT_FLAGS = ("-XX:Tier4InvocationThreshold=50000", "-XX:Tier4MinInvocationThreshold=6000",
             "-XX:Tier4CompileThreshold=150000", "-XX:Tier4BackEdgeThreshold=400000",
             "-XX:InlineSmallCode=1000", "-XX:MaxInlineLevel=9")


def _java(heap_mb: int) -> list[str]:
    return [str(Path(jvm.java_home()) / "bin" / "java"), f"-Xmx{heap_mb}m", "-XX:+UseSerialGC",
            "-Dslf4j.internal.verbosity=WARN"]


def builder_command() -> list[str]:
    """``nteval.BuildIndexes``: takes its commands on stdin (see :class:`_Builder`)."""
    buffer, heap = child_memory()
    return [*_java(heap), *JIT_FLAGS, "-cp", f"{jvm.batch_jar()}{os.pathsep}{jvm.anserini_jar()}", "nteval.BuildIndexes",
            str(buffer)]


def index_collection_command(input_dir: Path, index_dir: Path, threads: int = 1) -> list[str]:
    """Anserini's IndexCollection over a JsonCollection, as ``python -m pyserini.index.lucene`` runs it,
    with nteval's flags: the reference nteval's builder is held to (tests, benchmarks)."""
    buffer, heap = child_memory()
    return [*_java(heap), "-cp", str(jvm.anserini_jar()), "io.anserini.index.IndexCollection",
            "-collection", "JsonCollection", "-input", str(input_dir), "-index", str(index_dir),
            "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(threads), "-memoryBuffer", str(buffer),
            *INDEX_FLAGS, "-quiet"]


class _Builder:
    """One ``BuildIndexes`` child JVM. It writes one pair of shards (``all``, ``nt``) at a time from
    the batch files it is handed, and serves shard after shard, so its JIT warm-up is paid once
    per build. A shard appears (by rename) only once committed, so a resumed build knows which it
    can keep. Used by one thread at a time."""

    def __init__(self):
        self.proc = subprocess.Popen(builder_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE,
                                     preexec_fn=die_with_parent)  # no orphan JVM after kill -9 of nteval
        self._err: list[bytes] = []
        self._reader = threading.Thread(target=lambda: self._err.append(self.proc.stderr.read()), daemon=True)
        self._reader.start()  # (drained as it comes: a chatty child never blocks on a full pipe)
        self.shards: dict[str, Path] = {}
        self._sealed = False

    def open(self, shards: dict[str, Path]) -> None:
        """The next batches go to ``shards`` (their ``.part`` twins until committed)."""
        self.shards = shards
        self._sealed = False
        for part in self._parts().values():
            shutil.rmtree(part, ignore_errors=True)
            part.parent.mkdir(parents=True, exist_ok=True)

    def _parts(self) -> dict[str, Path]:
        return {n: p.with_name(p.name + ".part") for n, p in self.shards.items()}

    def _send(self, line: str) -> None:
        """Write a command; a child that has died is reported by :meth:`commit`, not here (a
        stream's batches are fed before their source file is checkpointed: failing here would
        lose that file's parse)."""
        try:
            self.proc.stdin.write(line.encode("ascii"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def feed(self, batch_file: Path) -> None:
        parts = self._parts()
        # a JSON array, ASCII-escaped: any path (tabs, newlines, undecodable bytes) reaches Java whole
        self._send(json.dumps([str(Path(p).absolute()) for p in (parts["all"], parts["nt"], batch_file)]) + "\n")

    def seal(self) -> None:
        """Ask for the commit of the open shards (it runs while the caller goes on)."""
        if not self._sealed:
            self._sealed = True
            self._send("\n")

    def commit(self) -> None:
        """Seal, wait for the commit, and rename the shards into place."""
        self.seal()
        for line in self.proc.stdout:
            if line.strip() == b"nteval-committed":
                break
        else:
            self._failed()
        for name, part in self._parts().items():
            os.rename(part, self.shards[name])

    def _failed(self) -> None:
        """Raise the child's own last word (it has died, or is about to)."""
        import signal

        self.proc.wait()
        self._reader.join()
        code = self.proc.returncode
        lines = b"".join(self._err).decode("utf-8", "replace").strip().splitlines()
        said = [ln for ln in lines if ln.startswith("BuildIndexes: ")]
        if said:
            why = said[-1].removeprefix("BuildIndexes: ")
        elif code < 0:
            why = f"killed by {signal.Signals(-code).name} (out of memory?)"
        else:  # the JVM's own last word (not a log line of Lucene's)
            why = next((ln for ln in reversed(lines) if not _LOG_LINE.match(ln)), "(no message)")
        where = next(iter(self.shards.values())).parent.parent.parent if self.shards else "shards"
        raise LuceneError(f"Lucene indexing into {where} failed (exit {code}): {why}")

    def stop(self, kill: bool = False) -> None:
        """End the child (at once with ``kill``) and close its pipes; safe to repeat."""
        if kill and self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait()
        self._reader.join()
        self.proc.stdout.close()
        self.proc.stderr.close()


#: java.util.logging's lines (Lucene says which directory implementation it uses) and their headers.
_LOG_LINE = re.compile(r"(INFO|WARNING|FINE\w*): |[A-Z][a-z]{2} \d{1,2}, \d{4} ")


class PipelinedIndexer:
    """nteval's two Lucene indexes (``all``, ``nt``) fed batch by batch while the caller keeps parsing.

    ``add_batch`` writes one batch file of ``(docid, title, abstract)`` rows. Below 4 cores one
    builder JVM, started by :meth:`start`, takes every batch file as it is written (it indexes
    while the next source file parses) into one shard per index. On ≥ 4 cores (or ``eager``) each
    batch becomes a shard pair of its own, written by a pool of ``workers // 2`` builders (each
    keeps ≈ 2 cores busy: reading and analysing, and one writer thread per index), which take
    batch after batch, so each JVM warms up once per build. No Python thread calls into pyjnius,
    which is not safe for concurrent calls (we saw a SIGSEGV in ``IndexWriter.deleteDocuments`` and
    a varargs mix-up when two threads called into it).

    ``finish`` stitches each index with ``IndexWriter.addIndexes`` in batch order (in this
    process, one call at a time), deletes ids that must be repaired (replaced or deleted after
    being indexed), adds their final versions and expunges the deletions so collection statistics
    are exact.
    """

    def __init__(self, targets: dict[str, Path], staging: Path, workers: int | None = None, eager: bool | None = None,
                 progress: bool | None = None):
        if set(targets) != set(NAMES):
            raise ValueError(f"targets must be {NAMES}, got {sorted(targets)}")
        self.targets = targets
        self.progress = progress
        self.staging = staging
        self.batches = 0
        self.digests: list[str] = []  # sha256 of each batch file as written (a resumed build checks them)
        cores = os.cpu_count() or 1
        child_memory()  # a bad NTEVAL_INDEX_*_MB fails here, before any work
        self.eager = cores >= 4 if eager is None else eager
        workers = workers or cores  # (the CLI passes --jobs)
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers // 2), thread_name_prefix="lucene-child")
        self._futures: list[Future] = []
        self._builders: list[_Builder] = []  # every one started
        self._idle: queue.SimpleQueue[_Builder] = queue.SimpleQueue()
        self._stream: _Builder | None = None  # the builder of a non-eager build, while batches come
        self._lock = threading.Lock()  # no builder starts once close() has begun
        self._closing = False

    @staticmethod
    def batch_path(staging: Path, i: int) -> Path:
        return staging / "json" / f"{i:05d}.jsonl"

    def _batch(self, i: int) -> Path:
        return self.batch_path(self.staging, i)

    def _shards(self, i: int | str) -> dict[str, Path]:
        """Batch ``i``'s shard pair (eager), or the one of a whole stream (``"stream"``: a name no
        eager batch has, so a build resumed in the other mode never takes one for the other)."""
        return {name: self.staging / "lucene" / name / (i if isinstance(i, str) else f"{i:05d}") for name in NAMES}

    def _take(self) -> _Builder | None:
        """An idle builder, or a new one (at most one per pool thread exists); None once closing."""
        with self._lock:
            if self._closing:
                return None
            try:
                return self._idle.get_nowait()
            except queue.Empty:
                builder = _Builder()
                self._builders.append(builder)
                return builder

    def _index_alone(self, i: int) -> None:
        """Batch ``i`` into its own shard pair (eager), on a pool thread."""
        builder = self._take()
        if builder is None:
            return
        builder.open(self._shards(i))
        builder.feed(self._batch(i))
        self._commit(builder)

    def start(self) -> None:
        """Start the builder of a non-eager build now (its JVM starts while the first file parses)
        rather than with the first batch."""
        if not self.eager and self._stream is None:
            self._stream = self._take()
            assert self._stream is not None  # (None only once close() has begun: no batch comes after it)
            self._stream.open(self._shards("stream"))

    def _submit(self, i: int) -> None:
        if self.eager:
            self._futures.append(self._pool.submit(self._index_alone, i))
        else:
            self.start()
            assert self._stream is not None  # (start() made it)
            self._stream.feed(self._batch(i))

    def add_batch(self, rows: Iterable[tuple[str, str, str]]) -> int:
        """Queue one batch of ``(docid, title, abstract)`` rows (``all`` indexes title + newline +
        abstract, ``nt`` the abstract). Returns how many rows it holds; an empty batch is dropped."""
        i = self.batches
        src = self._batch(i)
        src.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        digest = hashlib.sha256()
        with open(src, "w", encoding="utf-8") as fh:  # (a leftover of a killed run being resumed is replaced)
            for docid, title, abstract in rows:
                line = f"[{_json(docid)}, {_json(title)}, {_json(abstract)}]\n"
                fh.write(line)
                digest.update(line.encode("utf-8"))
                written += 1
        if not written:
            src.unlink()
            return 0
        self.batches += 1
        self.digests.append(digest.hexdigest())
        self._submit(i)
        return written

    def seal(self) -> None:
        """No more batches (before :meth:`finish`, so that the builder commits while the caller
        does other work)."""
        if self._stream is not None:
            self._stream.seal()

    def _commit_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None and self.batches:
            self._futures.append(self._pool.submit(self._commit, stream))
        elif stream is not None:
            self._idle.put(stream)  # nothing was fed: no shard to wait for

    def _commit(self, builder: _Builder) -> None:
        builder.commit()
        self._idle.put(builder)  # (warm for the next batch; not after a failure: that builder is dead)

    def _wait(self) -> None:
        """Wait for every builder; with ``progress``, a bar that ticks (elapsed time) while the
        Lucene phase, silent otherwise, runs."""
        self._commit_stream()
        pending = {f for f in self._futures if not f.done()}
        with tqdm(total=len(self._futures), initial=len(self._futures) - len(pending), desc="lucene", unit=" index",
                  disable=not shown(self.progress), file=sys.stderr, leave=False) as bar:
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                bar.update(len(done))
                bar.refresh()
        for f in self._futures:
            f.result()

    def resume(self, batches: int, digests: list[str] | None = None) -> bool:
        """Go on after a killed run whose first ``batches`` batches were complete: drop what came
        after them (and any half-made shard or target), queue the batches still to index. False
        (and nothing done) when a batch file of those is missing: nothing to resume from.
        ``digests``: their sha256 as written (the caller checked the files against them)."""
        if any(not self._batch(i).is_file() for i in range(batches)):
            return False
        self.batches = batches
        self.digests = list(digests or [])[:batches]
        for target in self.targets.values():
            shutil.rmtree(target, ignore_errors=True)
        folder = self.staging / "json"
        for p in folder.iterdir() if folder.is_dir() else ():
            if not (p.stem.isdigit() and int(p.stem) < batches and p.suffix == ".jsonl"):
                p.unlink() if p.is_file() else shutil.rmtree(p)
        done = {i for i in range(batches) if self.eager and all(s.is_dir() for s in self._shards(i).values())}
        for name in NAMES:
            folder = self.staging / "lucene" / name
            for p in folder.iterdir() if folder.is_dir() else ():
                if not (p.name.isdigit() and int(p.name) in done):
                    shutil.rmtree(p)
        for i in range(batches):
            if i not in done:
                self._submit(i)
        return True

    def finish(self, repair_ids: Collection[str], final_rows: Iterable[tuple[str, str, str]],
               append: bool = False, close: bool = True) -> None:
        """Wait for all batches, stitch, and repair ``repair_ids`` (re-iterable: read once per
        index) with ``final_rows`` (the versions that survive, ``(docid, title, abstract)``). With
        ``append`` the targets are existing indexes (an update): the batches and repairs are applied
        to them. Without ``close`` the staging area stays until :meth:`close` (a resumable build
        first records that its indexes are complete)."""
        shard_ids: list[int | str] = list(range(self.batches)) if self.eager else ["stream"] * min(self.batches, 1)
        self._wait()
        n_batches = self.batches
        repair_batch = None
        if repair_ids:
            self.eager = True  # the repair batch is indexed on its own
            if self.add_batch(final_rows):
                self._wait()
                repair_batch = n_batches
        for name, target in self.targets.items():
            shards = [self._shards(i)[name] for i in shard_ids]
            repair = self._shards(repair_batch)[name] if repair_batch is not None else None
            if append and not shards and not repair_ids:
                continue  # nothing to change
            if len(shards) == 1 and not repair_ids and not append:
                os.rename(shards[0], target)  # nothing to stitch
            else:
                _stitch(target, shards, repair_ids, repair, append=append)
        if close:
            self.close()

    def close(self, cleanup: bool = True) -> None:
        """Stop the builders (killed, after an error or Ctrl-C: whatever they had open is dropped);
        remove the staging area unless ``cleanup`` is False (a build that keeps it to resume from)."""
        failed = any(f.done() and not f.cancelled() and f.exception() is not None for f in self._futures)
        kill = cleanup is False or failed or self._stream is not None
        with self._lock:
            self._closing = True
        for builder in self._builders:
            builder.stop(kill=kill)
        self._pool.shutdown(wait=True, cancel_futures=True)
        for builder in self._builders:  # (one a pool thread had started just before)
            builder.stop(kill=True)
        self._stream = None
        if cleanup:
            shutil.rmtree(self.staging, ignore_errors=True)


def doc_count(path: Path) -> int:
    """The live documents of the Lucene index at ``path`` (in this process's JVM)."""
    reader = jvm.autoclass("org.apache.lucene.index.DirectoryReader").open(_directory(path))
    try:
        return int(reader.numDocs())
    finally:
        reader.close()


def _directory(path: Path):
    FSDirectory = jvm.autoclass("org.apache.lucene.store.FSDirectory")
    File = jvm.autoclass("java.io.File")
    return FSDirectory.open(File(str(Path(path).absolute())).toPath())  # (Paths.get is varargs: avoid)


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
