"""Turn the user's SOURCE arguments (files or directories, any mix of formats) into one stream."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..errors import InputError
from .beir import read_beir
from .document import Deletion, Document, Skipped
from .medline import read_medline

XML_SUFFIXES = (".xml", ".xml.gz")
BEIR_SUFFIXES = (".jsonl", ".jsonl.gz")


def source_format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(XML_SUFFIXES):
        return "medline"
    if name.endswith(BEIR_SUFFIXES):
        return "beir"
    raise InputError(path, "unknown corpus format: expected .xml, .xml.gz (Medline) or .jsonl[.gz] (BEIR corpus)")


def expand(sources: list[str | Path]) -> list[Path]:
    """Files in the order given; a directory contributes its corpus files in sorted name order
    (NLM numbers baseline/update files so that sorted order is application order). A BEIR
    directory contributes its ``corpus.jsonl[.gz]`` only (queries.jsonl is not a corpus)."""
    files: list[Path] = []
    for src in sources:
        p = Path(src)
        if not p.exists():
            raise InputError(p, "no such file or directory")
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and f.name.lower().endswith(XML_SUFFIXES))
            if not found:
                found = [f for f in (p / "corpus.jsonl", p / "corpus.jsonl.gz") if f.is_file()]
            if not found:
                raise InputError(p, "directory holds no Medline XML (.xml, .xml.gz) and no BEIR corpus.jsonl[.gz]")
            files.extend(found)
        else:
            source_format(p)
            files.append(p)
    return files


def read_records(path: Path) -> Iterator[Document | Deletion | Skipped]:
    return read_medline(path) if source_format(path) == "medline" else read_beir(path)
