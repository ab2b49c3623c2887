"""Runs that searched the titles: caught from the run itself, not crowned.

NT topics come from titles (a focused topic's query *is* its document's title; a high-recall
topic's pseudo-relevant documents are what S_ref found with the title), so a system whose index
kept the titles answers them from the answer key. The natural way to bring a production engine is
to run it on its own index, and that index keeps the titles: a BM25 over title + abstract of the
PubMed documents scored RR 0.997 where the best title-blind system scored 0.922.

Two rules, each stated on what a title-blind system cannot do, with thresholds set above the most
any title-blind system reached where they were measured (nteval's whole zoo, dense and hybrid
systems included, on the PubMed index of both shared files and on SciFact:
``scripts/title_leak_study.py``, docs/any-system.md):

- **focused** (known-item) runs, on the *low-overlap topics*: those whose title has at most half
  of its terms in its document's abstract (terms as the index analyzes them: Lucene's English
  analyzer, Porter stems, stop words out). A system that searches abstracts has little to find
  that document by; one that saw the titles has the whole query in it. The run is flagged when it
  puts the source document first on at least :data:`FOCUSED_SHARE` of them (at least
  :data:`MIN_LOW` topics) and a one-sided binomial test against :data:`FOCUSED_CEILING` gives
  p < :data:`P_LEAK`.
- **high-recall** (topical) runs, on *title-only evidence*: for each hit in a run's top
  :data:`TOP` (on up to :data:`MAX_TOPICS` topics), the query terms its title holds and its abstract
  lacks, weighted by their idf in ``nt``. A title-blind system meets such terms only by chance (a
  topical document's title often repeats the topic); a run that matched titles is drawn to them.
  The run is flagged when its mean evidence per hit is at least :data:`HIGHRECALL_FLAG` and the
  lower (1 − :data:`P_LEAK`) normal bound of that mean over topics is above
  :data:`HIGHRECALL_CEILING`. This rule is weaker than the focused one: seeing the titles helps a
  high-recall run much less (+3 % AP on PubMed, against +8 % RR for a focused one), and leaves less
  trace.

What it means and what to do is said in one line: search the exported, title-stripped collection
(`nteval export`), or the engine's field without titles.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: a focused topic is low-overlap when at most this share of its title's terms is in its abstract
LOW_OVERLAP = 0.5
#: the focused rule needs this many low-overlap topics …
MIN_LOW = 20
#: … flags from this share answered at rank 1 …
FOCUSED_SHARE = 0.8
#: … significantly above this (the most a title-blind system reached: see the module)
FOCUSED_CEILING = 0.6
P_LEAK = 0.001
#: high-recall: title-only evidence in the top TOP hits of at most MAX_TOPICS topics …
TOP = 10
MAX_TOPICS = 300
#: … flag from this mean idf-weighted evidence per hit …
HIGHRECALL_FLAG = 0.14
#: … significantly above this (the most a title-blind system reached: 0.102, dense retrieval)
HIGHRECALL_CEILING = 0.11

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


def low_overlap_topics(terms: _Terms, topics: Mapping[str, str], sources: Mapping[str, str]) -> list[str]:
    """Focused topics whose title has at most :data:`LOW_OVERLAP` of its terms in its document's abstract."""
    out = []
    for q, text in topics.items():
        title = terms.text(text)
        if title and len(title & terms.abstract(sources[q])) <= LOW_OVERLAP * len(title):
            out.append(q)
    return sorted(out)


def focused_leak(run: Mapping[str, list], low: list[str], sources: Mapping[str, str]) -> dict[str, Any]:
    """The focused rule on one run (``run``: {qid: [(docid, score), ...]} in rank order)."""
    first = sum(1 for q in low if run.get(q) and run[q][0][0] == sources[q])
    n = len(low)
    p = _binomial_p(first, n, FOCUSED_CEILING)
    flagged = n >= MIN_LOW and first / n >= FOCUSED_SHARE and p < P_LEAK
    return {"rule": "low-overlap topics", "topics": n, "hits": first, "share": round(first / n, 4) if n else None,
            "ceiling": FOCUSED_CEILING, "p": p, "flagged": bool(flagged)}


def highrecall_leak(terms: _Terms, run: Mapping[str, list], topics: Mapping[str, str], titles: Mapping[str, str],
                    qids: list[str]) -> dict[str, Any]:
    """The high-recall rule on one run (``titles``: docid → title of the documents met)."""
    import math

    from scipy.stats import norm

    n_docs = max(terms.nt.num_docs, 1)
    per_topic, hits, title_only = [], 0, 0
    for q in qids[:MAX_TOPICS]:
        qt = terms.text(topics[q])
        top = run.get(q, [])[:TOP]
        if not qt or not top:
            continue
        evidence = 0.0
        for docid, _ in top:
            only = (qt & terms.text(titles.get(docid, ""))) - terms.abstract(docid)
            title_only += bool(only)
            evidence += sum(math.log(n_docs / (1 + terms.nt.doc_freq(t))) for t in only)
        hits += len(top)
        per_topic.append(evidence / len(top))
    n = len(per_topic)
    mean = sum(per_topic) / n if n else 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in per_topic) / (n - 1)) if n > 1 else 0.0
    lower = mean - float(norm.ppf(1 - P_LEAK)) * sd / math.sqrt(n) if n > 1 else 0.0
    flagged = mean >= HIGHRECALL_FLAG and lower > HIGHRECALL_CEILING
    return {"rule": "title-only evidence", "topics": n, "top": TOP, "hits": hits, "title_only": title_only,
            "share": round(mean, 4), "lower": round(lower, 4), "ceiling": HIGHRECALL_CEILING, "flagged": bool(flagged)}


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
            low = low_overlap_topics(terms, topics, sources)
            for n in names:
                out[n] = focused_leak(runs[n], low, sources)
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
    if r["rule"] == "low-overlap topics":
        seen = (f"it puts the document first on {r['hits']} of the {r['topics']} topics whose title has at most half its "
                f"words in the document's abstract ({r['share']:.0%}; title-blind systems reach at most about "
                f"{r['ceiling']:.0%}, binomial p = {r['p']:.1g})")
    else:
        seen = (f"{r['title_only']} of its top-{r['top']} hits match query words only in the document's title, "
                f"{r['share']:.3f} idf-weighted per hit (lower bound {r['lower']:.3f}; title-blind systems reach at most "
                f"about {r['ceiling']:.2f})")
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
