"""Reader for BEIR-layout corpora: ``corpus.jsonl[.gz]`` lines of ``{"_id", "title", "text"}``.

Judged collections (SciFact, TREC-COVID, ...) are distributed this way. ``text`` is the abstract;
BEIR has no sections, so it is one part. A line may also carry MeSH headings (``mesh_major``,
``mesh_minor``: :func:`beir_mesh`), as the CF collection does.
"""
from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path

from ..errors import InputError, short
from .document import MAX_RECORD_CHARS, Document, Skipped


def json_object(path: Path, line: str, lineno: int) -> dict:
    """One JSON-lines record, or an InputError naming the file and line."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as err:
        raise InputError(path, f"not a JSON object: {err.msg}", place=f"line {lineno}") from None
    if not isinstance(obj, dict):
        raise InputError(path, "not a JSON object", place=f"line {lineno}")
    return obj


def check_unicode(path: Path, value: str, what: str, lineno: int) -> str:
    """``value`` unless it holds an unpaired surrogate (JSON ``"\\ud800"`` decodes to one; it cannot
    be written as UTF-8 to the store or to Lucene)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InputError(path, f"{what} holds an unpaired surrogate {value[err.start]!r} (invalid Unicode)",
                         place=f"line {lineno}") from None
    return value


def json_id(path: Path, obj: dict, lineno: int, key: str = "_id") -> str:
    """A record id: a JSON string or integer, non-empty, without white space."""
    raw = obj[key]
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        raise InputError(path, f'"{key}" must be a string or an integer, got {short(raw)}', place=f"line {lineno}")
    docid = check_unicode(path, str(raw).strip(), f'"{key}"', lineno)
    if not docid or any(c.isspace() for c in docid):
        raise InputError(path, f'"{key}" {short(raw)} is empty or contains white space', place=f"line {lineno}")
    return docid


def json_text(path: Path, obj: dict, key: str, lineno: int) -> str:
    """A text field: a JSON string (or null/absent = empty), white space folded."""
    raw = obj.get(key)
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise InputError(path, f'"{key}" must be a string, got {short(raw)}', place=f"line {lineno}")
    return " ".join(check_unicode(path, raw, f'"{key}"', lineno).split())


def bounded_lines(fh, limit: int) -> Iterator[tuple[str, bool]]:
    """(line, too_long) for each line of a text stream, never holding more than ``limit`` + 1
    characters of one line: a longer line is read through in chunks and yielded as ``("", True)``."""
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith("\n"):
            while True:  # drain the rest of the oversized line
                rest = fh.readline(1 << 20)
                if not rest or rest.endswith("\n"):
                    break
            yield "", True
        else:
            yield line, False


def _first_bad_line(path: Path, opener) -> int | None:
    """The number of the first line of ``path`` that is not UTF-8 (None: none is)."""
    with opener(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return lineno
    return None


def beir_mesh(path: Path, obj: dict, lineno: int) -> list[dict]:
    """MeSH headings a BEIR line may carry (the CF collection's layout): ``mesh_major`` and
    ``mesh_minor``, lists of descriptor names (qualifiers dropped). A descriptor in both lists is
    one major heading. The corpus gives no descriptor UI, so the name stands for it."""
    heads: dict[str, bool] = {}
    for key, major in (("mesh_major", True), ("mesh_minor", False)):
        raw = obj.get(key)
        if raw is None:
            continue
        if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
            raise InputError(path, f'"{key}" must be a list of MeSH descriptor names, got {short(raw)}',
                             place=f"line {lineno}")
        for name in raw:
            name = " ".join(check_unicode(path, name, f'"{key}"', lineno).split())
            if name:
                heads[name] = heads.get(name, False) or major
    return [{"name": n, "ui": n, "descriptor_major": m, "major": m, "qualifiers": []} for n, m in heads.items()]


def read_beir(path: str | Path, max_chars: int | None = None) -> Iterator[Document | Skipped]:
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    limit = MAX_RECORD_CHARS if max_chars is None else max_chars
    lineno = 0
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for lineno, (line, too_long) in enumerate(bounded_lines(fh, limit), 1):
                if too_long:
                    yield Skipped(None, "too_large")
                    continue
                if not line.strip():
                    continue
                obj = json_object(path, line, lineno)
                if "_id" not in obj:
                    raise InputError(path, 'BEIR corpus line lacks "_id"', place=f"line {lineno}")
                docid = json_id(path, obj, lineno)
                title = json_text(path, obj, "title", lineno)
                text = json_text(path, obj, "text", lineno)
                if not title and not text:
                    yield Skipped(docid, "no_text")
                else:  # (a document without a title or without text: see nteval.index.DOCUMENT_POLICIES)
                    meta = {k: v for k, v in (obj.get("metadata") or {}).items()} if isinstance(obj.get("metadata"), dict) else {}
                    mesh = beir_mesh(path, obj, lineno)
                    if mesh:
                        meta["mesh"] = mesh
                    yield Document(docid=docid, title=title, abstract_parts=[text] if text else [], meta=meta)
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise InputError(path, f"truncated or corrupt gzip stream: {err}", place=f"after line {lineno}") from None
    except UnicodeDecodeError as err:  # the decoder reads ahead: find the line the bad bytes are on
        raise InputError(path, f"not UTF-8: {err.reason}", place=f"line {_first_bad_line(path, opener) or lineno + 1}") \
            from None
    if lineno == 0:
        raise InputError(path, "empty file: no corpus lines")
