"""Other search engines' indexes of the collection a protocol searches (PISA, Tantivy…), built
from nteval's document store and cached beside the nteval index.

A cache is ``INDEX/engines/<index>-<engine id>-<fingerprint>/`` (``NTEVAL_ENGINE_CACHE`` moves
the root): the engine's own files and a ``meta.json`` naming the documents it holds (their count
and the sha256 of their ids in order) and every file the build wrote (size and sha256). It is
built in ``<name>.partial`` beside it and renamed into place once complete, one builder at a time
(a file lock: grid workers may ask for the same index), so a cut build never passes for a finished
one; a builder that can resume (Tantivy) picks up the partial directory where it stopped. A cache
whose meta.json does not check out, or one of whose files is missing or changed since the build
(checked before each use; a file's digest once per process), is built again, and said so: an
engine never opens a damaged file (PISA would die with a signal, Tantivy open an empty index).
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

from ..atomic import file_lock, sha256_file, write_text
from ..corpus.store import index_docids, index_texts
from ..errors import InputError, short

#: the layout of an engine cache's meta.json (2: it lists the build's files with their digests)
ENGINE_FORMAT = 2

#: ``build(partial_dir, documents, n_documents, progress) -> info``: the engine's index written
#: into ``partial_dir`` from ``documents`` ((docid, text) in the store's order); ``info`` (JSON)
#: lands in meta.json.
Builder = Callable[[Path, Iterator[tuple[str, str]], int, "bool | None"], dict[str, Any]]


def docids_digest(docids: list[str]) -> str:
    return hashlib.sha256("".join(f"{d}\n" for d in docids).encode("utf-8")).hexdigest()


def engine_dir(index_dir: Path, index_name: str, fingerprint: str, engine_id: str) -> Path:
    root = Path(os.environ["NTEVAL_ENGINE_CACHE"]) if os.environ.get("NTEVAL_ENGINE_CACHE") else index_dir / "engines"
    return root / f"{index_name}-{engine_id}-{fingerprint[:16]}"


#: sha256 of files already read by this process: (path, inode, size, mtime) → digest
_DIGESTS: dict[tuple[str, int, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """The sha256 of file ``path`` (read once per process while its inode, size and mtime stay)."""
    st = path.stat()
    key = (str(path.absolute()), st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = sha256_file(path)
    return _DIGESTS[key]


def file_digests(directory: Path, skip: Callable[[Path], bool] = lambda p: False) -> dict[str, list[Any]]:
    """{path relative to ``directory``: [size, sha256]} of its regular files (hidden files, a
    ``meta.json`` and ``*.log`` files at its top, and those ``skip`` names, left out)."""
    out: dict[str, list[Any]] = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory)
        if (path.is_symlink() or not path.is_file() or any(part.startswith(".") for part in rel.parts)
                or str(rel) == "meta.json" or (len(rel.parts) == 1 and ".log" in path.name) or skip(rel)):
            continue
        out[rel.as_posix()] = [path.stat().st_size, file_sha256(path)]
    return out


def files_problem(directory: Path, recorded: Any) -> str | None:
    """Which file of ``recorded`` (:func:`file_digests`) is missing or changed under ``directory``."""
    if not isinstance(recorded, dict):
        return "its files are not recorded"
    for rel, entry in recorded.items():
        path = directory / rel
        if not path.is_file():
            return f"{rel} is missing"
        if not (isinstance(entry, list) and len(entry) == 2):
            return "its files are not recorded"
        if path.stat().st_size != entry[0]:
            return f"{rel} has {path.stat().st_size:,} bytes, not the {entry[0]:,} it was written with"
        if file_sha256(path) != entry[1]:
            return f"{rel} changed since it was written"
    return None


def cache_problem(final: Path, engine_id: str, docids: list[str]) -> str | None:
    """What is wrong with the engine cache ``final`` (None: nothing)."""
    try:
        meta = json.loads((final / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "meta.json unreadable"
    if not isinstance(meta, dict) or meta.get("engine") != engine_id:
        return "meta.json of another format or engine"
    if meta.get("format") != ENGINE_FORMAT:
        return f"its meta.json is of format {short(meta.get('format'))}, written by another version of nteval"
    if meta.get("documents") != len(docids) or meta.get("docids_sha256") != docids_digest(docids):
        return "it holds other documents than the index"
    return files_problem(final, meta.get("files"))


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
                said = (f"was built by another version of nteval ({problem})" if "another version" in problem
                        else f"is damaged ({problem})")
                print(f"note: the {engine_id} index {final} {said}: building it again", file=sys.stderr)
                shutil.rmtree(final, ignore_errors=True)
            partial = final.with_name(final.name + ".partial")
            partial.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            info = build(partial, index_texts(index_dir, index_name), len(docids), progress)
            meta = {"format": ENGINE_FORMAT, "engine": engine_id, "index": index_name, "fingerprint": fingerprint,
                    "documents": len(docids), "docids_sha256": docids_digest(docids),
                    "build_seconds": round(time.perf_counter() - t0, 3), **info}
            meta["files"] = file_digests(partial)  # what must be there, as the build left it
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
