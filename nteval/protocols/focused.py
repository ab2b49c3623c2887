"""Focused NT (Campagne 2008): a sampled document's title is the query, its own abstract in the
title-less ``nt`` index the one relevant document."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..corpus.store import FILENAME as STORE
from ..corpus.store import DocStore
from ..errors import InputError
from ..topics.focused import focused_topics
from ..topics.sample import SampleSpec, sample_ids
from .base import Protocol, ProtocolSpec, TopicSet, VerdictSpec, param


@dataclass(frozen=True)
class DocumentSampleSpec(ProtocolSpec):
    """Protocols whose topics are sampled documents (D0): the same filters give the same D0 to
    every such protocol, so focused and high-recall share their sample."""

    min_sentences: int = param(3, "abstract sentences a topic document needs", min=0)
    min_title_tokens: int = param(3, "title tokens a topic document needs", min=0)
    language: str | None = param(None, "only documents in this language (Medline code, e.g. eng)")
    year_min: int | None = param(None, "only documents published in or after this year")
    year_max: int | None = param(None, "only documents published in or before this year")
    offset: int = param(0, "skip this many documents of the seeded sample order first (how --topics auto draws "
                           "its batches)", min=0)

    def sample(self) -> SampleSpec:
        return SampleSpec(n=self.n_topics, seed=self.seed, min_sentences=self.min_sentences,
                          min_title_tokens=self.min_title_tokens, language=self.language,
                          year_min=self.year_min, year_max=self.year_max, offset=self.offset)


def sample_documents(index_dir: Path, spec: DocumentSampleSpec) -> tuple[list[str], int]:
    """D0 (seeded, in sample order) and the number of eligible documents."""
    ids, n_eligible = sample_ids(index_dir, spec.sample())
    if not ids:
        raise InputError(index_dir, "no document passes the topic filters (title/abstract/sentence/language/year)")
    return ids, n_eligible


def sample_record(spec: DocumentSampleSpec, n_eligible: int) -> dict[str, Any]:
    """What results.json records of the sample (``sample`` as SampleSpec names it)."""
    return {"sample": spec.sample().as_dict(), "eligible_documents": n_eligible, "topics_requested": spec.n_topics}


class Focused(Protocol[DocumentSampleSpec]):
    name = "focused"
    Spec = DocumentSampleSpec
    searches = "nt"
    in_demo = True
    measures = ("RR", "Success@1", "Success@10", "nDCG@10", "R@1000")
    verdict = VerdictSpec(
        "focused", "RR",
        "known-item / precise search: put the one document a short description (its title) points to at the top",
        "human judgments on collections with about one relevant document per query (SciFact claims; the figures: "
        "results.json evidence, nteval's validation study)")
    summary = "query: a sampled document's title; relevant: its own abstract; systems search nt (titles stripped)"
    correlate_pairs = (("RR", "nDCG@10"), ("RR", "AP"))

    def build(self, index_dir: Path, spec: DocumentSampleSpec, out: Path, progress: bool | None = None,
              systems_path: Path | None = None) -> TopicSet:
        ids, n_eligible = sample_documents(index_dir, spec)
        store = DocStore(Path(index_dir) / STORE)
        try:
            topics, qrels = focused_topics(store, ids)
        finally:
            store.close()
        return TopicSet(topics, qrels, {"requested": spec.n_topics, "eligible": n_eligible, "used": len(qrels)},
                        stats=sample_record(spec, n_eligible))


PROTOCOL = Focused
