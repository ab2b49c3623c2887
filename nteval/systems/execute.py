"""Run one System over a set of topics: its kind runs it against a :class:`Target` (the Lucene
index opened on first use; dense vectors, fusions and external systems never open it)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..formats.trec import Run
from ..index import read_manifest
from ..lucene.searcher import Index
from .kind import RunContext
from .system import System

#: the Lucene index directories this process opened (:func:`open_target`), closed by :func:`close_targets`
_INDEXES: dict[str, Target] = {}


class Target:
    """What systems search: one Lucene index (``all`` or ``nt``) of an nteval index directory.
    The Lucene index is opened on first use only (dense and external systems do not need it).
    ``notes`` collects what non-Lucene systems report (encoding cache, recall vs flat, foreign hits);
    ``answers``: whether a live engine's earlier answers are replayed or it is asked now
    (:data:`nteval.settings.ANSWERS`)."""

    def __init__(self, index_dir: str | Path, index_name: str, fingerprint: str | None = None,
                 label: str | None = None, progress: bool | None = None, answers: str = "replay"):
        self.index_dir, self.index_name = Path(index_dir), index_name
        self._fingerprint = fingerprint
        self.label = label or index_name
        self.progress = progress
        self.answers = answers
        self.notes: dict[str, dict[str, Any]] = {}
        self._lucene = None

    @classmethod
    def wrapping(cls, index) -> Target:
        """A Target around an already open Lucene ``Index`` (callers of earlier versions passed one)."""
        t = cls(index.path.parent, index.path.name)
        t._lucene = index
        return t

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = read_manifest(self.index_dir)["fingerprint"]
        return self._fingerprint

    @property
    def lucene(self):
        if self._lucene is None:
            self._lucene = Index(self.index_dir / self.index_name)
        return self._lucene

    @property
    def opened(self) -> bool:
        return self._lucene is not None

    def close(self) -> None:
        if self._lucene is not None:
            self._lucene.close()
            self._lucene = None


def run_system(target, system: System, topics: dict[str, str], depth: int,
               done: Mapping[str, Run] | None = None, threads: int | None = None,
               tick: Callable[[int], None] | None = None) -> Run:
    """Rankings for every topic (an empty list where the query analyzes to nothing), by the
    system's kind (:mod:`nteval.systems.registry`). ``target``: a :class:`Target`, or an open
    :class:`~nteval.lucene.searcher.Index`; ``threads``: Java search threads for bag-of-words
    systems (default: the cores of the machine)."""
    import os

    if not isinstance(target, Target):
        target = Target.wrapping(target)
    ctx = RunContext(done=done or {}, threads=threads or os.cpu_count() or 1, tick=tick or (lambda n: None))
    return system.kind.run(target, system, topics, depth, ctx)


def open_target(index: str, label: str):
    """The process's open :class:`~nteval.systems.execute.Target` of Lucene index directory ``index``
    (opened on first use; dense vectors load once per process)."""
    target = _INDEXES.get(index)
    if target is None:
        target = _INDEXES[index] = Target(Path(index).parent, Path(index).name, label=label)
    return target


def close_targets() -> None:
    """Close every index this process opened (a cluster worker shutting down)."""
    while _INDEXES:
        _INDEXES.popitem()[1].close()
