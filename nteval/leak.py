"""Runs that searched the titles: caught from the run itself, not crowned.

NT topics come from titles (a focused topic's query *is* its document's title; a high-recall
topic's pseudo-relevant documents are what S_ref found with the title), so a system whose index
kept the titles answers them from the answer key. The natural way to bring a production engine is
to run it on its own index, and that index keeps the titles: a BM25 over title + abstract of the
PubMed documents scored RR 0.997 where the best title-blind system scored 0.922.

Two rules, each on documents a title-blind system cannot reach through its query's words:

- **focused** (known-item) runs: the *blind topics*, those whose title shares no term with its
  document's abstract (terms as the index analyzes them: Lucene's English analyzer, Porter stems,
  stop words out). A system that searches abstracts only has no query word to find that document
  by; a run that saw the titles finds it at once. The run is flagged when it puts the source
  document first on at least :data:`BLIND_SHARE` of the blind topics (at least
  :data:`MIN_BLIND` of them) and a one-sided binomial test against :data:`HONEST_CEILING`, the
  most any title-blind system reached where it was measured (``scripts/title_leak_study.py``,
  docs/any-system.md), gives p < :data:`P_LEAK`.
- **high-recall** (topical) runs: *title-only hits*, documents in a run's top
  :data:`TOP` whose abstract holds none of the query's terms but whose title holds one. A
  title-blind lexical system cannot retrieve them; dense systems rarely do. The run is flagged when
  their share of its top hits is at least :data:`TITLE_ONLY_SHARE` (with at least
  :data:`MIN_TITLE_ONLY` such hits).

What it means and what to do is said in one line: search the exported, title-stripped collection
(`nteval export`), or the engine's field without titles.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: a focused run is flagged from this share of blind topics answered at rank 1 …
BLIND_SHARE = 0.5
#: … over at least this many blind topics …
MIN_BLIND = 10
#: … and when a binomial test against this rate (the most a title-blind system reached) rejects it
HONEST_CEILING = 0.25
P_LEAK = 0.001
#: high-recall: how deep the title-only hits are counted, on at most this many topics
TOP = 5
MAX_TOPICS = 500
#: a high-recall run is flagged from this share of title-only hits among its top hits …
TITLE_ONLY_SHARE = 0.05
#: … when there are at least this many
MIN_TITLE_ONLY = 10

ADVICE = ("search the title-stripped collection: `nteval export --from OUT --format beir` gives it (titles empty), "
          "or point the engine at a field without titles")


class _Terms:
    """Analyzed terms of texts and of indexed documents, as the index's analyzer makes them."""

    def __init__(self, index_dir: Path):
        from .lucene.jvm import autoclass
        from .lucene.searcher import Index

        self.nt = Index(Path(index_dir) / "nt")
        self._utils = autoclass("io.anserini.index.IndexReaderUtils")
        self._docs: dict[str, frozenset[str]] = {}
        self._texts: dict[str, frozenset[str]] = {}

    def text(self, text: str) -> frozenset[str]:
        got = self._texts.get(text)
        if got is None:
            got = self._texts[text] = frozenset(self.nt.analyze(text or ""))
        return got

    def abstract(self, docid: str) -> frozenset[str]:
        """The terms Lucene indexed for ``docid`` in ``nt`` (its stored document vector)."""
        got = self._docs.get(docid)
        if got is None:
            try:
                vec = self._utils.getDocumentVector(self.nt._reader, docid)
                got = frozenset(str(k) for k in vec.keySet().toArray()) if vec is not None else frozenset()
            except Exception:  # (a docid nt does not hold)
                got = frozenset()
            self._docs[docid] = got
        return got

    def close(self) -> None:
        self.nt.close()


def _binomial_p(hits: int, n: int, p: float) -> float:
    from scipy.stats import binomtest

    return float(binomtest(hits, n, p, alternative="greater").pvalue) if n else 1.0


def blind_topics(terms: _Terms, topics: Mapping[str, str], sources: Mapping[str, str]) -> list[str]:
    """Focused topics whose title (the query) shares no analyzed term with its document's abstract."""
    return sorted(q for q, text in topics.items() if terms.text(text) and not (terms.text(text) & terms.abstract(sources[q])))


def focused_leak(run: Mapping[str, list], blind: list[str], sources: Mapping[str, str]) -> dict[str, Any]:
    """The focused rule on one run (``run``: {qid: [(docid, score), ...]} in rank order)."""
    first = sum(1 for q in blind if run.get(q) and run[q][0][0] == sources[q])
    n = len(blind)
    p = _binomial_p(first, n, HONEST_CEILING)
    flagged = n >= MIN_BLIND and first / n >= BLIND_SHARE and p < P_LEAK
    return {"rule": "blind topics", "blind_topics": n, "source_first": first,
            "share": round(first / n, 4) if n else None, "p": p, "flagged": bool(flagged)}


def highrecall_leak(terms: _Terms, run: Mapping[str, list], topics: Mapping[str, str], titles: Mapping[str, str],
                    qids: list[str]) -> dict[str, Any]:
    """The high-recall rule on one run: title-only hits among the top :data:`TOP` of up to
    :data:`MAX_TOPICS` topics (``titles``: docid → title of the documents met)."""
    hits = title_only = 0
    for q in qids[:MAX_TOPICS]:
        qt = terms.text(topics[q])
        if not qt:
            continue
        for docid, _ in run.get(q, [])[:TOP]:
            hits += 1
            if not (qt & terms.abstract(docid)) and qt & terms.text(titles.get(docid, "")):
                title_only += 1
    share = title_only / hits if hits else 0.0
    flagged = title_only >= MIN_TITLE_ONLY and share >= TITLE_ONLY_SHARE
    return {"rule": "title-only hits", "top": TOP, "hits": hits, "title_only": title_only,
            "share": round(share, 4), "flagged": bool(flagged)}


def check_runs(index_dir: Path, protocol: str, runs: Mapping[str, Mapping[str, list]], topics: Mapping[str, str],
               sources: Mapping[str, str], names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The leak rule of ``protocol`` on each run of ``names``: {name: result} (a result with
    ``flagged`` true carries ``text``, the line every output shows)."""
    names = list(names)
    if not names or protocol not in ("focused", "highrecall"):
        return {}
    terms = _Terms(index_dir)
    try:
        out: dict[str, dict[str, Any]] = {}
        if protocol == "focused":
            blind = blind_topics(terms, topics, sources)
            for n in names:
                out[n] = focused_leak(runs[n], blind, sources)
        else:
            from .corpus.store import FILENAME, DocStore

            qids = sorted(topics)[:MAX_TOPICS]
            met = {d for n in names for q in qids for d, _ in runs[n].get(q, [])[:TOP]}
            store = DocStore(Path(index_dir) / FILENAME)
            try:
                titles = {d: (store.get(d) or {}).get("title", "") for d in met}
            finally:
                store.close()
            for n in names:
                out[n] = highrecall_leak(terms, runs[n], topics, titles, qids)
    finally:
        terms.close()
    for n, r in out.items():
        if r["flagged"]:
            r["text"] = leak_text(n, r)
    return out


def leak_text(name: str, r: dict[str, Any]) -> str:
    if r["rule"] == "blind topics":
        seen = (f"it puts the document first on {r['source_first']} of the {r['blind_topics']} topics whose title shares "
                f"no word with the document's abstract ({r['share']:.0%}; title-blind systems reach at most "
                f"{HONEST_CEILING:.0%}, binomial p = {r['p']:.1g})")
    else:
        seen = (f"{r['title_only']} of its top {r['top']} hits ({r['share']:.1%}) match the query only through the "
                f"document's title")
    return f"system {name} searched the titles: {seen}; its scores are not NT scores — {ADVICE}"


def refuse_leaks(index_dir: Path, protocol: str, runs: Mapping[str, Mapping[str, list]], topics: Mapping[str, str],
                 sources: Mapping[str, str], systems: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Check the runs of the systems that may have seen the titles (outside runs, programs,
    callables, pipelines, remote engines: :meth:`~nteval.systems.kind.SystemKind.may_see_titles`);
    one line (:class:`~nteval.errors.InputError`) naming the first that did. Returns every check."""
    from .errors import InputError

    names = [s.name for s in systems if s.kind.may_see_titles(s)]
    checked = check_runs(index_dir, protocol, runs, topics, sources, names)
    for name, r in checked.items():
        if r["flagged"]:
            where = next((s.params.get("run") for s in systems if s.name == name), None)
            raise InputError(where, r["text"])
    return checked
