"""An index's parts encoded by several processes: this machine's one-thread processes
(:class:`LocalParts`) or a Dask cluster's workers (``nteval.encode.ClusterParts``), the vectors the
same as one process's.

A transformer that encodes each text alone (the references' ONNX int8 encoder, ONNX fp32, e5) gives
a text the same vector whatever process, thread count or batch it falls to. Encoding one text at a
time does not use two threads well: measured on the PubMed baseline file (30,000 records, 2 cores,
``benchmarks/encode_cluster.json``), one process of two threads encodes 132 records per second and
two processes of one thread 204. So an encoding of more than :data:`POOL_FROM` documents on a
machine of several cores runs in as many one-thread processes, unless ``$NTEVAL_ENCODER_THREADS``
says how many threads to use (then it stays in this process, as asked).

The parts (:data:`nteval.encoders.store.PART` documents, what the store writes and resumes from) go
out in tasks of at most :data:`TASK` documents, as many as a multiple of the workers and of even
sizes (:func:`task_slices`), so that the processes finish together and a lost worker loses little;
the vectors of a part are handed back when all its tasks are.
"""
from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

#: the most documents per task (a part of the store goes out in tasks of at most this size: :func:`task_slices`)
TASK = 1024
#: parts in flight per process (the texts of a part travel with its tasks: ~10 MB for 8,192 abstracts)
WINDOW_PER_WORKER = 2
#: the fewest documents to encode for which one-thread processes are started (each loads the
#: encoder, a second or two; below this an encoding stays in this process)
POOL_FROM = TASK


def encode_part(spec: dict[str, Any], texts: list[str]) -> tuple[str, np.ndarray]:
    """A worker's task: the texts' vectors with the encoder of ``spec``
    (:func:`nteval.encoders.models.encoder_params`), loaded once per worker process, and its
    identity (a local pool's worker watches its nteval process from its start: :class:`LocalParts`)."""
    from .models import load_encoder

    encoder = load_encoder(spec["model"], spec["dim"], "encode", spec["backend"], spec["max_tokens"])
    return encoder.id, encoder.embed(texts)


def task_slices(n: int, workers: int) -> list[slice]:
    """A part's ``n`` documents to encode in tasks of at most :data:`TASK`, as many as a multiple of
    ``workers`` (when there are that many documents), their sizes within one of each other: a part of
    1,033 documents on two processes goes out as 517 + 516, not 1,024 + 9 (one process encoding
    nearly all of it while the other waited)."""
    if n <= 0:
        return []
    k = -(-n // TASK)
    if n >= workers > 1:
        k = -(-k // workers) * workers
    return [slice(i * n // k, (i + 1) * n // k) for i in range(k)]


class PartsPool:
    """The parts of an encoding computed by other processes, handed back to
    :func:`nteval.encoders.store._encode` as they are complete: ``(part, vectors, encoded, documents)``.
    Subclasses say how a task is submitted, waited for and read."""

    spec: dict[str, Any]

    def workers(self) -> int:
        raise NotImplementedError

    def submit(self, texts: list[str]) -> Any:
        raise NotImplementedError

    def first_done(self, pending: set[Any]) -> Any:
        raise NotImplementedError

    def result(self, future: Any, what: str) -> tuple[str, np.ndarray]:
        raise NotImplementedError

    def not_one_identity(self, ident: str, encoder: Any) -> Exception:
        raise NotImplementedError

    def meta(self) -> dict[str, Any]:
        """What the encoding's meta.json says of where it ran."""
        raise NotImplementedError

    def _part(self, encoder: Any, batch: list[tuple[str, str]], shas: list[str], donor: Any, bar: Any,
              clock: Any) -> tuple[np.ndarray, list[int], dict[Any, list[int]]]:
        """One part's vectors so far (the donor's rows), the rows left to encode, and the tasks
        submitted for them: future → the part's rows it encodes."""
        rows = donor.rows([d for d, _ in batch], shas) if donor is not None else [None] * len(batch)
        out = np.zeros((len(batch), encoder.dim), dtype=np.float32)
        have = [(i, r) for i, r in enumerate(rows) if r is not None]
        if have:
            out[[i for i, _ in have]] = donor.vectors[[r for _, r in have]]
            bar.update(len(have))
            clock.skipped(len(have))
        todo = [i for i, r in enumerate(rows) if r is None]
        return out, todo, {self.submit([batch[i][1] for i in todo[t]]): todo[t]
                           for t in task_slices(len(todo), self.workers())}

    def encode(self, encoder: Any, parts: Iterable[tuple[int, list[tuple[str, str]], list[str]]], donor: Any,
               bar: Any, clock: Any) -> Iterator[tuple[int, np.ndarray, int, int]]:
        window = max(1, WINDOW_PER_WORKER * max(1, self.workers()))   # (parts in flight)
        feed = iter(parts)
        #: a part in flight: its vectors so far, the rows its tasks fill, its size, its tasks not yet back
        flight: dict[int, tuple[np.ndarray, list[int], int, set[Any]]] = {}
        tasks: dict[Any, tuple[int, list[int]]] = {}   # (a task: its part and the part's rows it encodes)
        done: list[int] = []    # (parts whose vectors are all back, to hand on in that order)
        fed, last = True, time.perf_counter()
        while True:
            while fed and len(flight) - len(done) < window:
                nxt = next(feed, None)
                fed = nxt is not None
                if nxt is not None:
                    part, batch, shas = nxt
                    out, todo, new = self._part(encoder, batch, shas, donor, bar, clock)
                    flight[part] = (out, todo, len(batch), set(new))
                    tasks.update({f: (part, r) for f, r in new.items()})
                    if not new:   # (every row from the donor)
                        done.append(part)
            while done:
                out, todo, n, _ = flight.pop(part := done.pop(0))
                yield part, out, len(todo), n
            if not tasks:
                if fed:
                    continue   # (every part so far came from the donor: feed more)
                return
            future = self.first_done(set(tasks))
            part, rows_k = tasks.pop(future)
            ident, vectors = self.result(future, f"encoding {len(rows_k):,} documents of part {part}")
            if ident != encoder.id:
                raise self.not_one_identity(ident, encoder)
            out, _, _, waiting = flight[part]
            out[rows_k] = vectors
            waiting.discard(future)
            bar.update(len(rows_k))
            now = time.perf_counter()   # (the processes' rate: documents per second of wall time)
            clock.encoded(len(rows_k), now - last)
            last = now
            if not waiting:
                done.append(part)


class LocalParts(PartsPool):
    """``processes`` one-thread processes of this machine (loky, as ``grid --jobs``), each loading
    the encoder once; they end with the encoding, and at once if this process dies."""

    def __init__(self, spec: dict[str, Any], processes: int):
        from joblib.externals.loky.process_executor import ProcessPoolExecutor

        from ..lifecycle import watch_parent

        self.spec, self.processes, self.parent = spec, processes, os.getpid()
        # (each worker watches this process from its start, not from its first task: one killed while its
        # workers still loaded, before any had a task, left them running)
        self.pool = ProcessPoolExecutor(max_workers=processes, env={"NTEVAL_ENCODER_THREADS": "1"},
                                        initializer=watch_parent, initargs=(self.parent,))

    def workers(self) -> int:
        return self.processes

    def submit(self, texts: list[str]) -> Any:
        return self.pool.submit(encode_part, self.spec, texts)

    def first_done(self, pending: set[Any]) -> Any:
        from concurrent.futures import FIRST_COMPLETED, wait

        return next(iter(wait(pending, return_when=FIRST_COMPLETED).done))

    def result(self, future: Any, what: str) -> tuple[str, np.ndarray]:
        return future.result()

    def not_one_identity(self, ident: str, encoder: Any) -> Exception:
        return RuntimeError(f"a worker process encodes with {ident}, this process with {encoder.id}")

    def meta(self) -> dict[str, Any]:
        return {"processes": self.processes}

    def close(self, failed: bool) -> None:
        self.pool.shutdown(wait=not failed, kill_workers=failed)


def local_parts(encoder: Any, documents: int) -> LocalParts | None:
    """One-thread processes for an encoding of ``documents`` with ``encoder`` on this machine, or
    None to encode in this process: an encoder whose vectors depend on their batch (torch), fewer
    than :data:`POOL_FROM` documents, one core, ``$NTEVAL_ENCODER_THREADS`` set (by the user, or in
    a worker of this pool), or this process a worker of another pool or of a Dask cluster."""
    from .models import in_dask_worker, usable_cores

    if not encoder.spec or not encoder.alone or documents < POOL_FROM or os.environ.get("NTEVAL_ENCODER_THREADS"):
        return None
    if multiprocessing.parent_process() is not None or in_dask_worker():
        return None   # (a worker of some pool, grid --jobs's say, or of a cluster: its share is its own thread)
    cores = usable_cores()
    # (as many processes as cores: the tasks are cut to keep them all busy, :func:`task_slices`)
    return LocalParts(encoder.spec, min(cores, documents)) if cores > 1 else None
