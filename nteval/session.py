"""The prologue every pipeline entry point shares (protocol runs, compare, grid, correlate; from
the CLI or from Python): checks that cost nothing before OUT is touched, then OUT locked, the
index read-locked and a Dask session open for the whole call."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from .atomic import out_dir_lock, read_lock
from .lucene import jvm
from .runs import cluster_session, run_memory_budget


@contextlib.contextmanager
def session(out: str | Path, index_dir: str | Path, scheduler: str | None = None) -> Iterator[Path]:
    """For the block: OUT locked (:func:`nteval.atomic.out_dir_lock`: two processes never mix one
    OUT), the index read-locked (:func:`nteval.atomic.read_lock`: nothing rebuilds it under the
    runs) and, with ``scheduler``, one connection to the Dask scheduler, checked on its workers
    (:func:`nteval.runs.cluster_session`). Before any of them: a bad ``NTEVAL_RUN_MEMORY_HITS`` or
    a Java VM that cannot start fails in one line. Re-entrant: a pipeline calling another (compare
    → two protocol runs, correlate → its protocols) takes it again at no cost. Yields the index
    directory as an absolute path."""
    run_memory_budget()
    jvm.preflight()
    index_dir = Path(index_dir).absolute()
    with out_dir_lock(out), read_lock(index_dir), cluster_session(scheduler, [index_dir]):
        yield index_dir
