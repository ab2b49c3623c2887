"""A neural reference whose cost grows with the topics, not the corpus: the encoder re-ranks the
pool the lexical references already retrieved for each title (issue 49).

The high-recall verdict's neural share needs, per topic, the encoder's best ``n`` documents for the
title (:func:`nteval.topics.highrecall.balanced_pseudo_qrels`). Searching ``all`` with the encoder
means encoding every record (46 minutes for the 50,729 records of the two shared PubMed files with
all-MiniLM-L6-v2 on 2 cores; weeks for PubMed). Re-ranking the union of the lexical references' top
``pool`` documents encodes at most topics × pool documents, whatever the corpus: the ranking is the
encoder's own cosine order (the same vectors a full search would use), restricted to the pool.

Vectors are kept per document (:class:`VectorStore`: one SQLite file per index and model, each row
keyed by docid and the sha256 of the text encoded), so a new pin, fresh topics or an updated index
encode only documents not seen before or whose text changed; a store made by another model or
another nteval version has another name and is never read. Encoding goes in fixed chunks of
sorted docids, so one process and a Dask cluster (``--scheduler``: chunks as tasks) give the same
vectors, byte for byte.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..corpus.store import FILENAME as STORE
from ..corpus.store import INDEX_MEMBERS, index_contents
from ..encoders.models import Encoder, encoder_params, load_encoder
from ..errors import InputError
from ..formats.trec import trec_order
from ..progress import shown, tqdm

#: Documents per encoding chunk (a Dask task; one commit of the store).
CHUNK = 256


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def store_path(index_dir: Path, index_name: str, encoder: Encoder) -> Path:
    root = Path(os.environ["NTEVAL_DENSE_CACHE"]) if os.environ.get("NTEVAL_DENSE_CACHE") else Path(index_dir) / "dense"
    return root / f"pool-{index_name}-{encoder.id}-nteval{__version__}.sqlite"


class VectorStore:
    """Unit vectors of documents under one model, by docid and text digest (SQLite, one transaction
    per chunk: a killed encoding keeps every finished chunk and nothing half-written)."""

    def __init__(self, path: Path, encoder: Encoder):
        self.path, self.encoder = path, encoder
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, timeout=60)
            self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self.db.execute("CREATE TABLE IF NOT EXISTS vec (docid TEXT PRIMARY KEY, sha TEXT NOT NULL, v BLOB NOT NULL)")
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('model', ?), ('dim', ?), ('nteval', ?)",
                            (encoder.id, str(encoder.dim), __version__))
            self.db.commit()
            got = dict(self.db.execute("SELECT key, value FROM meta"))
        except (OSError, sqlite3.Error) as err:
            raise InputError(path, f"cannot hold the reference's vectors ({err}): set NTEVAL_DENSE_CACHE to a "
                                   "directory you can write") from None
        if got.get("model") != encoder.id or got.get("dim") != str(encoder.dim):
            raise InputError(path, f"holds vectors of {got.get('model')}, not {encoder.id}: remove it")

    def missing(self, texts: Mapping[str, str]) -> list[str]:
        """The docids whose vector is absent or was made from another text, sorted."""
        have: dict[str, str] = {}
        ids = sorted(texts)
        for i in range(0, len(ids), 900):
            chunk = ids[i:i + 900]
            have.update(self.db.execute(f"SELECT docid, sha FROM vec WHERE docid IN ({','.join('?' * len(chunk))})",
                                        chunk))
        return [d for d in ids if have.get(d) != _sha(texts[d])]

    def put(self, docids: Sequence[str], texts: Mapping[str, str], vectors: np.ndarray) -> None:
        try:
            with self.db:
                self.db.executemany("INSERT OR REPLACE INTO vec VALUES (?, ?, ?)",
                                    [(d, _sha(texts[d]), np.asarray(v, dtype="<f4").tobytes())
                                     for d, v in zip(docids, vectors)])
        except sqlite3.OperationalError as err:
            if "full" in str(err):   # (hostile K5: the full device was said to be the command's --out)
                import errno

                raise OSError(errno.ENOSPC, f"sqlite: {err}", str(self.path)) from None
            raise

    def get(self, docids: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(docids), self.encoder.dim), dtype=np.float32)
        pos = {d: i for i, d in enumerate(docids)}
        ids = list(pos)
        for i in range(0, len(ids), 900):
            chunk = ids[i:i + 900]
            for d, v in self.db.execute(f"SELECT docid, v FROM vec WHERE docid IN ({','.join('?' * len(chunk))})", chunk):
                out[pos[d]] = np.frombuffer(v, dtype="<f4")
        return out

    def close(self) -> None:
        self.db.close()


def texts_of(index_dir: Path, index_name: str, docids: Sequence[str]) -> dict[str, str]:
    """Each docid's text as Lucene index ``index_name`` holds it (documents not in it are left out)."""
    db = sqlite3.connect(f"file:{Path(index_dir) / STORE}?mode=ro", uri=True)
    out: dict[str, str] = {}
    ids = sorted(set(docids))
    try:
        for i in range(0, len(ids), 900):
            chunk = ids[i:i + 900]
            for d, title, abstract in db.execute(
                    f"SELECT docid, title, abstract FROM docs WHERE docid IN ({','.join('?' * len(chunk))}) "
                    f"AND {INDEX_MEMBERS[index_name]}", chunk):
                out[d] = index_contents(index_name, title, abstract)
    finally:
        db.close()
    return out


#: Computes ``fn(*args)`` for each args tuple elsewhere (a Dask cluster), yielding results in order.
Mapper = Callable[[Callable[..., np.ndarray], list[tuple]], Iterator[np.ndarray]]


def encode_chunk(encoder: Mapping[str, Any], texts: list[str]) -> np.ndarray:
    """One chunk's vectors (a Dask task: the worker loads the encoder, :func:`encoder_params`, once
    and keeps it)."""
    return load_encoder(encoder["model"], encoder["dim"], backend=encoder["backend"],
                        max_tokens=encoder["max_tokens"]).embed(texts)


def encode_missing(store: VectorStore, texts: Mapping[str, str], params: Mapping[str, Any], mapper: Mapper | None = None,
                   progress: Callable[[int], None] | None = None) -> int:
    """Encode the documents the store lacks, in chunks of :data:`CHUNK` sorted docids, each stored
    as it arrives; ``mapper`` (the pipeline's Dask session: :func:`nteval.protocols.highrecall.dask_mapper`)
    computes the chunks elsewhere, in order (``params``: the dense system's). Returns how many were
    encoded."""
    todo = store.missing(texts)
    chunks = [todo[i:i + CHUNK] for i in range(0, len(todo), CHUNK)]
    # (the backend the store's encoder resolved to: a worker encodes as this process would)
    spec = {**encoder_params(params), "backend": store.encoder.backend or "auto"}
    args = [(spec, [texts[d] for d in c]) for c in chunks]
    results = mapper(encode_chunk, args) if mapper and chunks else (store.encoder.embed(a[1]) for a in args)
    for c, vectors in zip(chunks, results):
        store.put(c, texts, vectors)
        if progress:
            progress(len(c))
    return len(todo)


def pooled_run(system: Any, index_dir: Path, queries: Mapping[str, str], pools: Mapping[str, Sequence[str]], k: int,
               index_name: str = "all", mapper: Mapper | None = None, progress: bool | None = None
               ) -> tuple[dict[str, list[tuple[str, float]]], dict[str, Any]]:
    """The dense system ``system`` (``algorithm: dense``) re-ranking each topic's ``pools[q]`` for
    ``queries[q]``: its top ``k`` by cosine, ties by docid. Returns the run and notes (documents in
    the pools, how many were encoded now, the store)."""
    params = system.params
    spec = encoder_params(params)
    encoder = load_encoder(spec["model"], spec["dim"], system.name, spec["backend"], spec["max_tokens"])
    texts = texts_of(index_dir, index_name, [d for p in pools.values() for d in p])
    store = VectorStore(store_path(index_dir, index_name, encoder), encoder)
    try:
        todo = len(store.missing(texts))
        bar = tqdm(total=todo, unit=" doc", desc=f"encoding the references' pool ({encoder.id})",
                   disable=not shown(progress) or not todo, file=sys.stderr, leave=False, mininterval=0.5)
        try:
            encoded = encode_missing(store, texts, params,
                                     mapper, bar.update)
        finally:
            bar.close()
        qids = list(queries)
        q = encoder.queries([queries[x] for x in qids])
        run: dict[str, list[tuple[str, float]]] = {}
        for i, qid in enumerate(qids):
            docs = sorted({d for d in pools.get(qid, ()) if d in texts})
            if not docs or not np.any(q[i]):
                run[qid] = []
                continue
            scores = store.get(docs) @ q[i]
            order = sorted(range(len(docs)), key=lambda j: (-float(scores[j]), docs[j]))[:k]
            run[qid] = [(docs[j], float(scores[j])) for j in order]
    finally:
        store.close()
    notes = {"model": encoder.id, "device": encoder.device, "pooled_documents": len(texts), "encoded_now": encoded,
             "store": str(store.path)}
    return run, notes


def lexical_pools(runs: Sequence[Mapping[str, Sequence[tuple[str, float]]]], depth: int) -> dict[str, list[str]]:
    """Each topic's union of the lexical references' top ``depth`` (trec order), sorted."""
    pools: dict[str, set[str]] = {}
    for run in runs:
        for qid, ranking in run.items():
            pools.setdefault(qid, set()).update(d for d, _ in trec_order(ranking)[:depth])
    return {q: sorted(p) for q, p in pools.items()}
