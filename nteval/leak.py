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

- **focused** (known-item) runs, on the *reference's misses*: the topics whose document nteval's
  own title-blind BM25 (k1 0.9, b 0.4, over ``nt``: :data:`REFERENCE_K1`, :data:`REFERENCE_B`) does
  not rank first. A title-blind system finds few of those first (the ones BM25 missed are hard:
  their abstracts share few words with the title); one that saw the titles finds almost all (the
  query *is* the title). The run is refused when it *rescues* (ranks first) at least :data:`RESCUE_FLAG` of them
  and a one-sided binomial test against :data:`RESCUE_CEILING` gives p < :data:`P_LEAK`. This
  works at every size a gate accepts: at 300 topics BM25 misses 10 to 35 of them, and a run that
  saw the titles rescues nearly all. A run that searched the titles for a *share* of its topics
  rescues about that share, so it is not refused; but a gate does not let such a search decide:
  the part of a candidate's gain that comes from ranking first documents BM25 and the baseline do
  not (and, when it rescues more than title-blind systems, all it gained: :func:`title_gain`) is
  taken off its decision's bounds (:mod:`nteval.gate.gate`): a decision such a search could have
  made is not claimed.
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

from .corpus.store import FILENAME, DocStore
from .errors import InputError
from .formats.trec import canonical
from .lucene.jvm import autoclass
from .lucene.searcher import Index

#: the title-blind reference of the focused rule: nteval's BM25 over nt (the ``bm25`` system)
REFERENCE_K1, REFERENCE_B = 0.9, 0.4
#: a focused run is refused when it ranks first at least this share of the reference's misses …
RESCUE_FLAG = 0.8
#: … significantly above this share (the most a title-blind system rescued, :data:`RESCUE_BLIND`, with room)
RESCUE_CEILING = 0.4
#: the most a title-blind system rescued where measured (dense retrieval on SciFact; 0.20 on PubMed)
RESCUE_BLIND = 0.35
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


def reference_ranks(index_dir: Path, topics: Mapping[str, str], sources: Mapping[str, str],
                    depth: int = 100) -> dict[str, int | None]:
    """The rank of each focused topic's document in the reference run (nteval's BM25 over
    ``nt``, in the order its run files keep: :func:`~nteval.formats.trec.canonical`); None beyond
    ``depth``."""
    index = Index(Path(index_dir) / "nt")
    try:
        index.configure("bm25", k1=REFERENCE_K1, b=REFERENCE_B)
        found = index.batch_search(dict(topics), k=depth)
    finally:
        index.close()
    out: dict[str, int | None] = {}
    for q in topics:
        ranked = [d for d, _ in canonical(found.get(q, []), depth)]
        out[q] = ranked.index(sources[q]) + 1 if sources[q] in ranked else None
    return out


def focused_leak(run: Mapping[str, list], ranks: Mapping[str, int | None], sources: Mapping[str, str]) -> dict[str, Any]:
    """The focused rule on one run (``run``: {qid: [(docid, score), ...]} in rank order; ``ranks``:
    :func:`reference_ranks`): how many of the reference's misses it ranks first."""
    misses = sorted(q for q, r in ranks.items() if r != 1)
    first = [q for q in misses if run.get(q) and run[q][0][0] == sources[q]]
    n = len(misses)
    p = _binomial_p(len(first), n, RESCUE_CEILING)
    flagged = n > 0 and len(first) / n >= RESCUE_FLAG and p < P_LEAK
    return {"rule": "rescues", "topics": len(ranks), "misses": n, "hits": len(first),
            "share": round(len(first) / n, 4) if n else None, "ceiling": RESCUE_CEILING, "p": p, "flagged": bool(flagged),
            "rescued": first}


def title_gain(leak: Mapping[str, Any], base: Mapping[str, float], cand: Mapping[str, float], n_topics: int,
               alpha: float = 0.05) -> dict[str, Any]:
    """The part of a candidate's mean gain over the baseline that a search of the titles can have
    made (``leak``: its :func:`focused_leak`; ``base``, ``cand``: per-topic RR). A title search
    puts the document first, so on a topic it searched with the titles, what it gained over the
    baseline is a rank-1 hit the baseline does not have:

    - when it rescues more of the reference's misses than title-blind systems do (a one-sided
      binomial test against :data:`RESCUE_BLIND`, p < ``alpha``), it may have searched the titles on
      part of its topics: its gain on every topic it scores higher than the baseline on;
    - otherwise, its gain on the reference's misses it ranks first and the baseline does not:
      finding first what a title-blind BM25 does not find first is what a title search does, and
      a title-blind system that ranks better cannot be told from it there.

    A gate's decision must hold without it (:mod:`nteval.gate.gate`)."""
    evidence = _binomial_p(leak["hits"], leak["misses"], RESCUE_BLIND)
    wide = evidence < alpha
    if wide:
        topics = [q for q in cand if cand[q] > base.get(q, 0.0)]
    else:
        topics = [q for q in leak.get("rescued") or [] if cand.get(q, 0.0) >= 1.0 and base.get(q, 0.0) < 1.0]
    gain = sum(cand[q] - base.get(q, 0.0) for q in topics) / n_topics if n_topics else 0.0
    if wide:
        why = (f"it ranks first {leak['hits']} of the {leak['misses']} documents nteval's title-blind BM25 misses "
               f"({leak['share']:.0%}; title-blind systems {RESCUE_BLIND:.0%} at most, p = {evidence:.2g}), as a search of "
               f"the titles on part of the topics would, and {gain:+.4f} of its score comes from the {len(topics)} "
               "topics it scores higher than the baseline on")
    else:
        why = (f"{gain:+.4f} of its score comes from ranking first {len(topics)} documents that nteval's title-blind "
               "BM25 and the baseline do not, as a search of the titles would")
    return {"topics": len(topics), "gain": round(gain, 6), "evidence_p": evidence, "every_gain": wide, "why": why}


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
    out: dict[str, dict[str, Any]] = {}
    if protocol == "focused":
        ranks = reference_ranks(index_dir, topics, sources)
        out = {n: focused_leak(runs[n], ranks, sources) for n in names}
    else:
        qids = sorted(topics)[:MAX_TOPICS]
        met = {d for n in names for q in qids for d, _ in runs[n].get(q, [])[:TOP]}
        store = DocStore(Path(index_dir) / FILENAME)
        try:
            titles = {d: (store.get(d) or {}).get("title", "") for d in met}
        finally:
            store.close()
        terms = _Terms(index_dir)
        try:
            out = {n: highrecall_leak(terms, runs[n], topics, titles, qids) for n in names}
        finally:
            terms.close()
    for n, r in out.items():
        if r["flagged"]:
            r["text"] = leak_text(n, r)
    return out


def leak_text(name: str, r: dict[str, Any]) -> str:
    if r["rule"] == "rescues":
        seen = (f"it puts the document first on {r['hits']} of the {r['misses']} topics nteval's title-blind BM25 does not "
                f"({r['share']:.0%}; title-blind systems did on at most {RESCUE_BLIND:.0%}, binomial p = "
                f"{r['p']:.1g} against {r['ceiling']:.0%})")
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
    names = [s.name for s in systems if s.kind.may_see_titles(s)]
    checked = check_runs(index_dir, protocol, runs, topics, sources, names)
    for name, r in checked.items():
        if r["flagged"]:
            where = next((s.params.get("run") for s in systems if s.name == name), None)
            raise InputError(where, r["text"])
    return checked
