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
from .document import Document, Skipped


def json_object(path: Path, line: str, lineno: int) -> dict:
    """One JSON-lines record, or an InputError naming the file and line."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as err:
        raise InputError(path, f"not a JSON object: {err.msg}", place=f"line {lineno}") from None
    if not isinstance(obj, dict):
        raise InputError(path, "not a JSON object", place=f"line {lineno}")
    return obj


def read_beir(path: str | Path) -> Iterator[Document | Skipped]:
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    lineno = 0
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
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
