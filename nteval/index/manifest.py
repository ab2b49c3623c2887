"""What an nteval index directory is, read back: its manifest (checked), the documents policy it
was built with, its content fingerprint, the document-store features it holds.

Building and updating an index is :mod:`nteval.index.build`; everything that only reads an index
(protocols, runs, reports, export) needs this module alone.
"""
from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..corpus.store import FILENAME as STORE_FILENAME
from ..corpus.store import DocStore
from ..errors import InputError, read_json_file

__all__ = ["DEFAULT_DOCUMENTS", "DOCUMENT_POLICIES", "MANIFEST", "SKIP_REASONS", "check_documents", "documents_policy",
           "fingerprint", "foreign_entries", "is_index_dir", "read_manifest", "require_store_features", "sha256_file"]

MANIFEST = "manifest.json"


SKIP_REASONS = ("no_text", "no_title", "no_abstract", "malformed", "book", "too_large")


#: Which records become documents (``nteval index --documents``). The principle of the default:
#: **the user's whole collection is searched.** Every record with searchable text is a document;
#: each index holds the text of its name: ``all`` = title + newline + abstract (either may be
#: empty: PubMed finds a record without an abstract by its title), ``nt`` = the abstract, so a
#: record without one is not in ``nt`` (stripped of its title it has no text). Only topics need a
#: title and an abstract (the sampling filters say so). ``title+abstract`` is Campagne 2008's
#: collection: records lacking either are skipped (counted ``no_title`` / ``no_abstract``), and
#: ``all`` and ``nt`` hold the same documents.
DOCUMENT_POLICIES = {
    "any-text": "every record with a title or an abstract; all = title + newline + abstract (either may be "
                "empty), nt = the records with an abstract, without their titles",
    "title+abstract": "only records with both a title and an abstract (Campagne 2008); all and nt hold the same "
                      "documents",
}


DEFAULT_DOCUMENTS = "any-text"


def sha256_file(path: Path, bufsize: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(bufsize):
            h.update(chunk)
    return h.hexdigest()


def fingerprint(manifest: dict[str, Any]) -> str:
    """Content key for caches downstream: sources' hashes, parameters, tool versions (no clock).

    The store's format is left out on purpose: the caches keyed on it hold Lucene results, and the
    Lucene indexes do not change with the store's layout (topics and qrels have keys of their own).
    """
    key = {"sources": [s["sha256"] for s in manifest["sources"]], "parameters": manifest["parameters"],
           "versions": manifest["versions"], "counts": manifest["counts"]}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def check_documents(documents: str) -> None:
    if documents not in DOCUMENT_POLICIES:
        raise InputError(None, f"--documents {documents!r}: must be one of {', '.join(DOCUMENT_POLICIES)}")


def documents_policy(manifest: dict[str, Any]) -> str:
    """The documents policy an index was built with (``title+abstract`` before policies existed)."""
    return manifest.get("parameters", {}).get("documents", "title+abstract")


def is_index_dir(path: Path) -> bool:
    """An nteval index directory (what ``--force`` may replace): a real directory with a manifest."""
    path = Path(path)
    return path.is_dir() and not path.is_symlink() and (path / MANIFEST).is_file()


#: What nteval itself writes at the top of an index directory: the Lucene indexes, the document
#: store (with SQLite's side files), the manifest, the engine and dense-vector caches (when
#: NTEVAL_ENGINE_CACHE / NTEVAL_DENSE_CACHE do not move them), a build's staging area, and the
#: ``.NAME.lock`` files that :func:`nteval.atomic.read_lock` leaves beside each. ``--force``
#: and ``--update`` replace the directory whole: anything else in it is a user's and stops them.
_OWN = ("all", "nt", MANIFEST, STORE_FILENAME, *(f"{STORE_FILENAME}-{s}" for s in ("wal", "shm", "journal")),
        "engines", "dense", ".collections")
INDEX_ENTRIES = frozenset({*_OWN, *(f".{name}.lock" for name in _OWN)})  # (the locks of readers of INDEX/nt…)
#: the first level of the caches: ``<index>-<engine or model id>-<fingerprint>`` (``.partial``),
#: their ``.NAME.lock`` files, the pooled reference's vector stores (``pool-<index>-<model>.sqlite``)
#: and the engines' answer caches
_CACHE_ENTRY = re.compile(r"^\.?(all|nt)-[^/]+$|^pool-(all|nt)-[^/]+\.sqlite(-wal|-shm|-journal)?$")


def foreign_entries(path: Path) -> list[str]:
    """What index directory ``path`` holds that nteval did not write (a user's notes, a folder):
    its top-level entries outside :data:`INDEX_ENTRIES`, and the first-level entries of its
    ``engines/`` and ``dense/`` caches that are not caches; sorted, directories ending in "/"."""
    path = Path(path)

    def shown(p: Path) -> str:
        rel = p.relative_to(path).as_posix()
        return rel + "/" if p.is_dir() and not p.is_symlink() else rel

    out: list[str] = []
    try:
        for p in path.iterdir():
            if p.name not in INDEX_ENTRIES:
                out.append(shown(p))
            elif p.name in ("engines", "dense") and p.is_dir() and not p.is_symlink():
                for c in p.iterdir():
                    if p.name == "engines" and c.name == "answers":
                        out += [shown(f) for f in _walk(c) if not _ANSWERS.match(f.name)]
                    elif not _CACHE_ENTRY.match(c.name):
                        out.append(shown(c))
                    elif c.is_dir() and not c.is_symlink():
                        out += [shown(c / rel) for rel in _cache_foreign(c)]
    except OSError:
        return out
    return sorted(out)


#: an engine's answer cache (:mod:`nteval.systems.remote`): one SQLite file per system and key
_ANSWERS = re.compile(r"^.+-[0-9a-f]{16}\.sqlite(-(wal|shm|journal))?$")


def _walk(d: Path):
    """The files under ``d`` (hidden ones, nteval's locks and staging, left out)."""
    for f in sorted(d.rglob("*")):
        if f.is_file() and not any(part.startswith(".") for part in f.relative_to(d).parts):
            yield f


def _cache_foreign(cache: Path) -> list[str]:
    """The files of an engine or dense cache (``INDEX/engines/<cache>/``, ``INDEX/dense/<cache>/``)
    its build did not write: its meta.json lists every file the build wrote (and a dense cache each
    vector file); PISA adds its per-setting postings under ``settings/`` and rotates its log; dense
    retrieval adds its FAISS indexes. A cache being built (no meta.json yet) is nteval's."""
    try:
        meta = json.loads((cache / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(meta, dict):
        return []
    known = set(meta.get("files") or {}) | set(meta.get("sha256") or {})
    out = []
    for f in _walk(cache):
        rel = f.relative_to(cache)
        top = rel.parts[0]
        if (rel.as_posix() in known or rel.as_posix() == "meta.json"
                or (len(rel.parts) == 1 and (".log" in f.name or f.suffix == ".faiss"))
                or (top == "settings" and len(rel.parts) >= 3 and (cache / "settings" / rel.parts[1] / "setting.json").is_file())):
            continue
        out.append(rel.as_posix())
    return out


def _indexes_below(path: Path, limit: int = 3) -> str:
    """"; the index is PATH/index" when ``path`` is a directory that holds indexes (the demo's
    output, a project folder) two levels down at most; else ""."""
    if not path.is_dir():
        return ""
    try:
        found = sorted(p.parent for pattern in (f"*/{MANIFEST}", f"*/*/{MANIFEST}") for p in path.glob(pattern)
                       if is_index_dir(p.parent))
    except OSError:
        return ""
    if not found:
        return ""
    names = ", ".join(str(p) for p in found[:limit]) + (f" and {len(found) - limit} more" if len(found) > limit else "")
    return f"; {'the index below it is' if len(found) == 1 else 'indexes below it:'} {names}"


def _index_hint(where: Path) -> str:
    """What the user probably meant: the nteval index a Lucene index ``nt``/``all`` belongs to,
    ``nteval index`` for a source file, or the indexes below a directory."""
    if (where.parent / MANIFEST).is_file():
        return f"; it is a part of the nteval index {where.parent}: give --index {where.parent}"
    if where.is_file():
        from ..corpus.sources import BEIR_SUFFIXES, XML_SUFFIXES

        if where.name.lower().endswith(XML_SUFFIXES + BEIR_SUFFIXES):
            return (f"; it is a source file: index it first (nteval index {where} --out my-index), then give "
                    "--index my-index")
        return ": --index takes the directory `nteval index --out` made"
    return _indexes_below(where)


def read_manifest(index_dir: str | Path) -> dict[str, Any]:
    """The manifest of an nteval index, checked: a corrupt or hand-edited ``manifest.json``
    (``{broken``, ``{}``) or a ``docs.sqlite`` that is not a database is a one-line error naming
    the file, not a traceback later."""
    path = Path(index_dir) / MANIFEST
    if not Path(index_dir).exists():
        raise InputError(index_dir, "no such index directory")
    if not path.is_file():
        raise InputError(index_dir, f"not an nteval index directory (no {MANIFEST}){_index_hint(Path(index_dir))}")
    manifest = read_json_file(path, "corrupt manifest", "rebuild the index with nteval index --force")
    problem = _manifest_problem(manifest)
    if problem:
        raise InputError(path, f"corrupt manifest: {problem} (rebuild the index with nteval index --force)")
    store = Path(index_dir) / STORE_FILENAME
    try:
        with open(store, "rb") as fh:
            header = fh.read(16)
    except (FileNotFoundError, IsADirectoryError):
        raise InputError(store, "missing document store (rebuild the index with nteval index --force)") from None
    if header != b"SQLite format 3\x00":
        raise InputError(store, "not an SQLite database (rebuild the index with nteval index --force)")
    return manifest


def _manifest_problem(m: Any) -> str | None:
    """What is missing or mistyped in a manifest (None if it has what nteval reads)."""
    if not isinstance(m, dict):
        return "not a JSON object"
    fp = m.get("fingerprint")
    if not isinstance(fp, str) or len(fp) != 64 or any(c not in "0123456789abcdef" for c in fp):
        return '"fingerprint" missing or not a sha256 hex digest'
    counts = m.get("counts")
    if not isinstance(counts, dict) or not isinstance(counts.get("skipped"), dict) or not all(
            isinstance(counts.get(k), int) for k in ("seen", "kept", "replaced", "deleted_pmids", "deleted_removed")):
        return '"counts" missing or incomplete'
    sources = m.get("sources")
    if not isinstance(sources, list) or not all(
            isinstance(s, dict) and isinstance(s.get("counts"), dict) and "path" in s for s in sources):
        return '"sources" missing or malformed'
    idx = m.get("indexes")
    if not isinstance(idx, dict) or not all(isinstance(idx.get(k), dict) and isinstance(idx[k].get("documents"), int)
                                            for k in ("all", "nt")):
        return '"indexes" missing or malformed'
    if not isinstance(m.get("versions"), dict):
        return '"versions" missing'
    return None


def require_store_features(index_dir: str | Path, features: Sequence[str]) -> dict[str, Any]:
    """The manifest, once the index's document store is known to hold ``features`` (names in
    :data:`nteval.corpus.store.FEATURES`); an index built before they existed is a one-line error
    that says to rebuild it, not an SQL error later."""
    manifest = read_manifest(index_dir)
    path = Path(index_dir) / STORE_FILENAME
    try:
        store = DocStore(path)
    except sqlite3.DatabaseError as err:
        raise InputError(path, f"unreadable document store: {err} (rebuild the index with nteval index --force)") from None
    try:
        store.require(*features)
    finally:
        store.close()
    return manifest
