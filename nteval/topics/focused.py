"""Focused NT topics: the title is the query; the document itself (searched over the title-less
``nt`` index) is the one relevant document."""
from __future__ import annotations

import re

from ..corpus.store import DocStore
from ..formats.trec import Qrels

_BRACKETED = re.compile(r"^\[(.*)\]\.?$")


def query_text(title: str) -> str:
    """The title as a query: folded white space; MEDLINE's bracketed translated titles
    ("[Clear cell acanthoma ...].") lose the brackets."""
    t = " ".join(title.split())
    m = _BRACKETED.match(t)
    return m.group(1) if m else t


def focused_topics(store: DocStore, docids: list[str]) -> tuple[dict[str, str], Qrels]:
    """qid = the docid (so a qrels line reads ``PMID 0 PMID 1``)."""
    topics: dict[str, str] = {}
    qrels: Qrels = {}
    for d in docids:
        doc = store.get(d)
        if doc is None:  # pragma: no cover - ids come from the same store
            continue
        topics[d] = query_text(doc["title"])
        qrels[d] = {d: 1}
    return topics, qrels
