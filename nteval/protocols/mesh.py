"""MeSH topics: relevance judged by NLM's human indexers (OHSUMED's MeSH topics are the precedent).

Every Medline record is tagged with MeSH descriptors, the main subjects starred (``MajorTopicYN``).
A topic is a descriptor that is a major topic of between ``min_docs`` and ``max_docs`` documents
of the index; the query is its name as Medline writes it; the relevant documents are those it is
a major topic of (with ``graded``: 2 there, 1 where it is assigned but not major). Systems search
``all`` (titles included: nothing is hidden, the judgments come from elsewhere). Records without
MeSH (in-process citations) cannot be judged and are counted.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..corpus.store import FILENAME as STORE
from ..corpus.store import DocStore
from ..errors import InputError
from ..index import require_store_features
from .base import Protocol, ProtocolSpec, TopicSet, VerdictSpec, param


@dataclass(frozen=True)
class MeshSpec(ProtocolSpec):
    min_docs: int = param(5, "a descriptor becomes a topic if it is a major topic of at least this many documents", min=1)
    max_docs: int = param(500, "… and of at most this many (broader ones are not topics a search answers)", min=1)
    graded: bool = param(False, "relevance 2 where the descriptor is major, 1 where it is assigned but minor "
                                "(binary: the major documents only)")

    def validate(self) -> None:
        super().validate()
        if self.max_docs < self.min_docs:
            raise InputError(None, f"max_docs={self.max_docs}: must be ≥ min_docs ({self.min_docs})")


class Mesh(Protocol[MeshSpec]):
    name = "mesh"
    Spec = MeshSpec
    searches = "all"
    measures = ("AP", "nDCG@10", "R@1000", "P@10", "Bpref")
    verdict = VerdictSpec(
        "mesh", "AP",
        "topical search for a concept: rank high the documents whose main subject a MeSH descriptor names",
        "NLM's indexers' judgments (major topics); not yet measured against ad hoc human judgments")
    summary = ("query: a MeSH descriptor's name; relevant: the documents it is a major topic of (NLM's indexers); "
               "systems search all")
    requires = ("mesh",)

    def check_index(self, index_dir: Path) -> None:
        """Also refuse, before any work, an index none of whose documents has MeSH headings."""
        manifest = require_store_features(index_dir, self.requires)
        if manifest.get("store", {}).get("documents_with_mesh", 1) == 0:
            raise InputError(index_dir, "no document of this index has MeSH headings (not a Medline corpus?): the mesh "
                                        "protocol needs them")

    def build(self, index_dir: Path, spec: MeshSpec, out: Path, progress: bool | None = None,
              systems_path: Path | None = None) -> TopicSet:
        store = DocStore(Path(index_dir) / STORE)
        try:
            candidates = store.mesh_major_topics(spec.min_docs, spec.max_docs)
            key = lambda c: hashlib.sha256(f"{spec.seed}:{c[0]}".encode()).digest()  # noqa: E731  as sample_ids
            chosen = sorted(candidates, key=key)[: spec.n_topics]
            topics: dict[str, str] = {}
            qrels: dict[str, dict[str, int]] = {}
            for ui, name, _n in chosen:
                docs = store.mesh_documents(ui)  # 2 = major, 1 = assigned but minor
                topics[ui] = name
                qrels[ui] = dict(docs) if spec.graded else {d: 1 for d, g in docs.items() if g == 2}
            with_mesh, total = store.documents_with_mesh(), len(store)
        finally:
            store.close()
        if not candidates:
            raise InputError(index_dir, f"no MeSH descriptor is a major topic of between {spec.min_docs} and "
                                        f"{spec.max_docs} documents here ({with_mesh:,} of {total:,} documents have MeSH "
                                        "headings; min_docs / max_docs)")
        top = 2 if spec.graded else 1  # the major documents' grade
        sizes = sorted(sum(1 for g in q.values() if g == top) for q in qrels.values())
        stats: dict[str, Any] = {
            "topics_requested": spec.n_topics, "eligible_descriptors": len(candidates),
            "documents": {"total": total, "with_mesh": with_mesh, "without_mesh": total - with_mesh},
            "relevant_per_topic": {"min": sizes[0], "median": sizes[len(sizes) // 2], "max": sizes[-1],
                                   "total": sum(sizes)},
            "mesh": {"min_docs": spec.min_docs, "max_docs": spec.max_docs, "graded": spec.graded},
        }
        return TopicSet(topics, qrels, {"requested": spec.n_topics, "eligible": len(candidates), "used": len(qrels)},
                        stats=stats)

    def report_lines(self, results: dict[str, Any]) -> list[str]:
        d, r = results["documents"], results["relevant_per_topic"]
        return [f"MeSH topics: {results['n_topics']:,} descriptors of {results['eligible_descriptors']:,} that are a "
                f"major topic of {results['mesh']['min_docs']}–{results['mesh']['max_docs']} documents; "
                f"relevant per topic min {r['min']}, median {r['median']}, max {r['max']}; "
                f"{d['without_mesh']:,} of {d['total']:,} documents have no MeSH (cannot be judged)", ""]


PROTOCOL = Mesh
