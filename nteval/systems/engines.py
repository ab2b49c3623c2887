"""Other search engines' indexes of the collection a protocol searches (PISA, Tantivy…), built
from nteval's document store and cached beside the nteval index.

A cache is ``INDEX/engines/<index>-<engine id>-<fingerprint>/`` (``NTEVAL_ENGINE_CACHE`` moves
the root): the engine's own files and a ``meta.json`` naming the documents it holds (their count
and the sha256 of their ids in order). It is built in ``<name>.partial`` beside it and renamed
into place once complete, one builder at a time (a file lock: grid workers may ask for the same
index), so a cut build never passes for a finished one; a builder that can resume (Tantivy) picks
up the partial directory where it stopped. A cache whose meta.json does not check out is built
again, and said so.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..atomic import file_lock, write_text
from ..corpus.store import index_docids, index_texts
from ..errors import InputError, short

#: the layout of an engine cache's meta.json
ENGINE_FORMAT = 1

#: ``build(partial_dir, documents, n_documents, progress) -> info``: the engine's index written
#: into ``partial_dir`` from ``documents`` ((docid, text) in the store's order); ``info`` (JSON)
#: lands in meta.json.
Builder = Callable[[Path, Iterator[tuple[str, str]], int, "bool | None"], dict[str, Any]]


def docids_digest(docids: list[str]) -> str:
    return hashlib.sha256("".join(f"{d}\n" for d in docids).encode("utf-8")).hexdigest()


def engine_dir(index_dir: Path, index_name: str, fingerprint: str, engine_id: str) -> Path:
    root = Path(os.environ["NTEVAL_ENGINE_CACHE"]) if os.environ.get("NTEVAL_ENGINE_CACHE") else index_dir / "engines"
    return root / f"{index_name}-{engine_id}-{fingerprint[:16]}"


def cache_problem(final: Path, engine_id: str, docids: list[str]) -> str | None:
    """What is wrong with the engine cache ``final`` (None: nothing)."""
    try:
        meta = json.loads((final / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "meta.json unreadable"
    if not isinstance(meta, dict) or meta.get("format") != ENGINE_FORMAT or meta.get("engine") != engine_id:
        return "meta.json of another format or engine"
    if meta.get("documents") != len(docids) or meta.get("docids_sha256") != docids_digest(docids):
        return "it holds other documents than the index"
    return None


def engine_index(index_dir: Path, index_name: str, fingerprint: str, engine_id: str, build: Builder,
                 progress: bool | None = None) -> tuple[Path, dict[str, Any]]:
    """The cached index of ``engine_id`` over Lucene index ``index_name``'s documents, built first
    when missing or damaged; returns its directory and meta.json."""
    final = engine_dir(Path(index_dir), index_name, fingerprint, engine_id)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        where = os.environ.get("NTEVAL_ENGINE_CACHE")
        raise InputError(None if where else final.parent,
                         (f"NTEVAL_ENGINE_CACHE={short(where)}: " if where else "") + f"cannot hold the {engine_id} "
                         f"index ({err.strerror}): set NTEVAL_ENGINE_CACHE to a directory you can write") from None
    docids = index_docids(index_dir, index_name)
    with file_lock(final.parent / f".{final.name}.lock"):
        problem = cache_problem(final, engine_id, docids) if final.exists() else "none yet"
        if problem is not None:
            if problem != "none yet":
                print(f"note: the {engine_id} index {final} is damaged ({problem}): building it again", file=sys.stderr)
                shutil.rmtree(final, ignore_errors=True)
            partial = final.with_name(final.name + ".partial")
            partial.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            info = build(partial, index_texts(index_dir, index_name), len(docids), progress)
            meta = {"format": ENGINE_FORMAT, "engine": engine_id, "index": index_name, "fingerprint": fingerprint,
                    "documents": len(docids), "docids_sha256": docids_digest(docids),
                    "build_seconds": round(time.perf_counter() - t0, 3), **info}
            write_text(partial / "meta.json", json.dumps(meta, indent=2) + "\n")
            os.replace(partial, final)
            problem = cache_problem(final, engine_id, docids)
            if problem is not None:  # pragma: no cover - the build just wrote it
                raise InputError(final, f"the {engine_id} index cannot be made right ({problem}); remove it")
    return final, json.loads((final / "meta.json").read_text(encoding="utf-8"))


def require(module: str, extra: str, kind: str) -> Any:
    """``import module``, or a one-line error naming the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        who = kind if kind.startswith("nteval ") or " " in kind else f"system kind {kind}"
        raise InputError(None, f"{who} needs the Python package {module.replace('_', '-')} "
                               f"({err}): pip install 'nteval[{extra}]'") from None


def package_version(dist: str) -> str | None:
    """The installed version of distribution ``dist`` (part of a kind's cache identity), or None."""
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


#: Lucene's English stop words (Anserini's DefaultEnglishAnalyzer: Lucene's ENGLISH_STOP_WORDS_SET),
#: given to the other engines so that the stop words at least are the same as nteval's Lucene.
LUCENE_STOPWORDS = ("a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no",
                    "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this",
                    "to", "was", "will", "with")
