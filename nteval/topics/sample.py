"""Seeded, filtered sample D0 of the document store.

Order is ``sha256(f"{seed}:{docid}")`` over the eligible ids: the same seed and the same index
give the same sample on any machine and any Python/NumPy version (no PRNG stream involved), and
adding documents to a corpus never reshuffles the ones already drawn.
"""
from __future__ import annotations

import hashlib
import heapq
import sqlite3
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from ..corpus.store import FILENAME as STORE
from ..corpus.store import topic_candidates
from ..errors import InputError


@dataclass(frozen=True)
class SampleSpec:
    n: int = 1000
    seed: int = 42
    min_sentences: int = 3
    min_title_tokens: int = 3
    language: str | None = None      # e.g. "eng"; None = any
    year_min: int | None = None
    year_max: int | None = None
    offset: int = 0                  # skip this many of the sample order first (--topics auto's batches)

    def as_dict(self) -> dict:
        return asdict(self)


def eligible_ids(db: sqlite3.Connection, spec: SampleSpec) -> list[str]:
    return list(_eligible(db, spec))


def _eligible(db: sqlite3.Connection, spec: SampleSpec) -> Iterator[str]:
    return topic_candidates(db, spec.min_sentences, spec.min_title_tokens, spec.language, spec.year_min, spec.year_max)


def sample_ids(index_dir: Path, spec: SampleSpec) -> tuple[list[str], int]:
    """(sampled docids in sample order, number eligible): positions ``offset`` to ``offset + n`` of
    the seeded order. Streams the store and keeps only the smallest keys (``heapq.nsmallest``
    equals ``sorted(...)[:n]``): memory does not grow with the corpus (a list of 25M eligible
    Medline ids and their keys would be ~3 GB). The order is prefix-stable: the first n of a
    larger sample are the sample of n."""
    path = Path(index_dir) / STORE
    if not path.is_file():
        raise InputError(index_dir, f"not an nteval index directory (no {STORE})")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    key = lambda d: hashlib.sha256(f"{spec.seed}:{d}".encode()).digest()  # noqa: E731
    counted = [0]

    def counting(ids: Iterator[str]) -> Iterator[str]:
        for d in ids:
            counted[0] += 1
            yield d

    try:
        ranked = heapq.nsmallest(spec.offset + spec.n, counting(_eligible(db, spec)), key=key)[spec.offset:]
    finally:
        db.close()
    return ranked, counted[0]
