"""Topic ids: which topic set a run answers, readable from the ids alone.

Every NT protocol makes its topics from documents (or MeSH descriptors) of one index, and several
protocols sample the same documents (focused and high-recall share D0). If they shared topic ids,
a run made for one topic set would be scored as if it answered another: a high-recall run (its
queries are sentences of the source abstracts) put beside focused runs tops the table. So a topic
id says what its query is, and ids of different protocols cannot collide:

| protocol | topic id | query |
|---|---|---|
| focused | ``PMID`` (Campagne 2008: qrels ``PMID 0 PMID 1``) | the title |
| high-recall | ``PMID-s3`` | sentence 3 of the abstract (``-sN`` for ``--sentence N``) |
| cross-lingual | ``PMID-ger`` | the title in that language |
| keywords | ``PMID-k3`` | the 3 rarest words of the title (``-kN`` for ``--param words=N``) |
| MeSH | the descriptor's UI, e.g. ``D003042`` | its name |

The ids stay plain TREC topic ids (no white space), so trec_eval and ir_measures read every file
as before. A run of another seed's or another index's topics holds ids these topics do not have
(the sample differs), and is refused the same way (:func:`nteval.systems.external.validate`).
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping

_SENTENCE = re.compile(r"-s(\d+)$")
_LANGUAGE = re.compile(r"-([a-z]{3})$")
_KEYWORDS = re.compile(r"-k(\d+)$")
_MESH = re.compile(r"^D\d{6,}$")


def highrecall_id(docid: str, sentence: int) -> str:
    """The high-recall topic made from sentence ``sentence`` of document ``docid``'s abstract."""
    return f"{docid}-s{sentence}"


def keywords_id(docid: str, words: int) -> str:
    """The keywords topic made from the ``words`` rarest words of document ``docid``'s title."""
    return f"{docid}-k{words}"


def crosslingual_id(docid: str, language: str) -> str:
    """The cross-lingual topic made from document ``docid``'s title in ``language``."""
    return f"{docid}-{language}"


def describe(qids: Iterable[str]) -> str:
    """What kind of topics a set of ids looks like (for an error message), e.g. "high-recall
    topics (sentence 3, ids like 12345-s3)"."""
    ids = list(qids)[:200]
    if not ids:
        return "no topics"
    sentences = {m.group(1) for q in ids if (m := _SENTENCE.search(q))}
    if sentences and all(_SENTENCE.search(q) for q in ids):
        return f"high-recall topics (sentence {', '.join(sorted(sentences))}; ids like {ids[0]})"
    words = {m.group(1) for q in ids if (m := _KEYWORDS.search(q))}
    if words and all(_KEYWORDS.search(q) for q in ids):
        return f"keywords topics ({', '.join(sorted(words))} rarest title words; ids like {ids[0]})"
    if all(_MESH.match(q) for q in ids):
        return f"MeSH topics (descriptor UIs, e.g. {ids[0]})"
    languages = {m.group(1) for q in ids if (m := _LANGUAGE.search(q))}
    if languages and all(_LANGUAGE.search(q) for q in ids):
        return f"cross-lingual topics ({', '.join(sorted(languages))}; ids like {ids[0]})"
    return f"topics with ids like {ids[0]}"


def topic_set_id(protocol: str, topics: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]]) -> str:
    """A topic set's identity: sha256 (first 16 hex digits) of its protocol, queries and qrels,
    in results.json and export.json. The same seed, index and settings give the same id on any
    machine; any other topic set, another. (Run files cannot carry it: their topic ids do.)"""
    blob = json.dumps([protocol, sorted(topics.items()), sorted((q, sorted(v.items())) for q, v in qrels.items())],
                      ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
