"""Keywords NT: known-item search from a few remembered words.

A searcher looking for a paper they have seen rarely types its whole title: they type the few
words they remember best, and the words that tell one paper from the rest are the rare ones (the
simulated known-item queries of Azzopardi, de Rijke and Balog, SIGIR 2007, draw query terms from
the target document with a preference for discriminative terms). Here the query is the ``words``
rarest words of a sampled document's title — lowest document frequency in the title-less ``nt``
index the systems search, words that occur in no abstract left out (nothing could find them) —
in title order; its own abstract in ``nt`` is the one relevant document. The same seed and sample
filters give the same D0 as focused, so the two verdicts compare a full description with a few
remembered words on the same documents.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..corpus.store import FILENAME as STORE
from ..corpus.store import DocStore
from ..lucene.searcher import Index
from ..params import param
from ..topics.focused import query_text
from ..topics.ids import keywords_id
from .base import Protocol, TopicSet, VerdictSpec
from .focused import DocumentSampleSpec, sample_documents, sample_record


@dataclass(frozen=True)
class KeywordsSpec(DocumentSampleSpec):
    words: int = param(3, "title words in the query: the rarest ones in the searched index", min=1, max=20)


def rare_words(title: str, words: int, analyze, doc_freq) -> list[str]:
    """The ``words`` title words whose analyzed terms are rarest (lowest document frequency; ties
    by position), in title order; a word that analyzes to nothing (a stop word) or only to terms
    of no document is never chosen, nor a second word with the same terms."""
    cands: list[tuple[int, int, str]] = []
    seen: set[tuple[str, ...]] = set()
    for pos, raw in enumerate(title.split()):
        word = raw.strip(".,;:!?()[]{}\"'")
        terms = tuple(analyze(word)) if word else ()
        if not terms or terms in seen:
            continue
        seen.add(terms)
        dfs = [doc_freq(t) for t in terms]
        if min(dfs) == 0:
            continue
        cands.append((min(dfs), pos, word))
    chosen = sorted(cands)[:words]
    return [w for _, _, w in sorted(chosen, key=lambda c: c[1])]


class Keywords(Protocol[KeywordsSpec]):
    name = "keywords"
    Spec = KeywordsSpec
    searches = "nt"
    measures = ("RR", "Success@1", "Success@10", "nDCG@10")
    verdict = VerdictSpec(
        "keywords", "RR", "known-item search from a few remembered words: the rarest words of the title",
        "not measured against human judgments yet")
    summary = "query: the rarest words of a sampled document's title; relevant: its own abstract; systems search nt"

    def build(self, index_dir: Path, spec: KeywordsSpec, out: Path, progress: bool | None = None,
              systems_path: Path | None = None) -> TopicSet:
        ids, n_eligible = sample_documents(index_dir, spec)  # D0: the same sample as focused for a seed
        store = DocStore(Path(index_dir) / STORE)
        try:
            titles = {d: query_text(doc["title"]) for d in ids if (doc := store.get(d)) is not None}
        finally:
            store.close()
        topics: dict[str, str] = {}
        with Index(Path(index_dir) / self.searches) as idx:
            for d, title in titles.items():
                chosen = rare_words(title, spec.words, idx.analyze, idx.doc_freq)
                if chosen:
                    topics[keywords_id(d, spec.words)] = " ".join(chosen)
        sources = {q: q.rsplit("-k", 1)[0] for q in topics}
        qrels = {q: {d: 1} for q, d in sources.items()}
        lengths = [len(t.split()) for t in topics.values()]
        stats = {**sample_record(spec, n_eligible),
                 "keywords": {"words": spec.words, "no_word_in_index": len(titles) - len(topics),
                              "mean_words": round(sum(lengths) / len(lengths), 3) if lengths else 0}}
        return TopicSet(topics, qrels, {"requested": spec.n_topics, "eligible": n_eligible, "used": len(qrels)},
                        stats=stats, sources=sources)

    def report_lines(self, results: dict) -> list[str]:
        k = results.get("keywords") or {}
        return [f"queries: the {k.get('words')} rarest title words ({k.get('mean_words')} on average); "
                f"{k.get('no_word_in_index', 0)} sampled titles had no word found in nt"] if k else []


PROTOCOL = Keywords
