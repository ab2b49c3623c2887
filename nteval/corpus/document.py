"""The record every reader yields and every later stage consumes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Document:
    """A title + abstract record.

    ``abstract_parts`` keeps structured abstracts' sections apart (sentences never cross them);
    ``abstract`` is the parts joined with single spaces, labels excluded (labels live in
    ``meta["abstract_labels"]``) so that section names do not become index terms. ``folded``: the
    reader has folded each part's whitespace (``" ".join(part.split())``), so the sentence
    splitter need not do it again.
    """

    docid: str
    title: str
    abstract_parts: list[str]
    meta: dict[str, Any] = field(default_factory=dict)
    folded: bool = field(default=False, compare=False, repr=False)

    @property
    def abstract(self) -> str:
        return " ".join(p for p in self.abstract_parts if p)


#: A record whose text exceeds this many characters is skipped and counted as ``too_large``
#: (Medline: every text node of the citation that reaches the parser, i.e. not the elements
#: :data:`nteval.corpus.medline.UNREAD` cut out first, each run of whitespace counted once; BEIR:
#: the JSON line). Real PubMed records stay under ~50,000 characters; the bound keeps a
#: compression bomb (a 764 KB .xml.gz whose one abstract inflates to 500 MB) from taking the
#: machine's memory.
MAX_RECORD_CHARS = 1_000_000


@dataclass
class Deletion:
    """A ``<DeleteCitation>`` block: these ids leave the collection at this point of the stream."""

    docids: list[str]


@dataclass
class Skipped:
    """A record that was read but cannot be used; counted by ``reason``."""

    docid: str | None
    reason: str
