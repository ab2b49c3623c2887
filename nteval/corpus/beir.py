"""Reader for BEIR-layout corpora: ``corpus.jsonl[.gz]`` lines of ``{"_id", "title", "text"}``.

Judged collections (SciFact, TREC-COVID, ...) are distributed this way. ``text`` is the abstract;
BEIR has no sections, so it is one part.
"""
from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path

from ..errors import InputError
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
                docid = str(obj["_id"]).strip()
                if not docid or any(c.isspace() for c in docid):
                    raise InputError(path, f'"_id" {obj["_id"]!r} is empty or contains white space', place=f"line {lineno}")
                title = " ".join(str(obj.get("title") or "").split())
                text = " ".join(str(obj.get("text") or "").split())
                if not title:
                    yield Skipped(docid, "no_title")
                elif not text:
                    yield Skipped(docid, "no_abstract")
                else:
                    meta = {k: v for k, v in (obj.get("metadata") or {}).items()} if isinstance(obj.get("metadata"), dict) else {}
                    yield Document(docid=docid, title=title, abstract_parts=[text], meta=meta)
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise InputError(path, f"truncated or corrupt gzip stream: {err}", place=f"after line {lineno}") from None
    except UnicodeDecodeError as err:
        raise InputError(path, f"not UTF-8: {err.reason}", place=f"line {lineno + 1}") from None
    if lineno == 0:
        raise InputError(path, "empty file: no corpus lines")
