"""Runs that searched the titles: caught from the run itself, not crowned.

NT topics come from titles (a focused topic's query *is* its document's title; a high-recall
topic's pseudo-relevant documents are what S_ref found with the title), so a system whose index
kept the titles answers them from the answer key. The natural way to bring a production engine is
to run it on its own index, and that index keeps the titles: a BM25 over title + abstract of the
PubMed documents scored RR 0.996 where the same BM25 over the abstracts scored 0.909.

A run nteval computes searches ``nt`` and cannot have seen a title; the rules below are checked on
every run it does not compute (:meth:`~nteval.systems.kind.SystemKind.may_see_titles`), and they
are calibrated so that none of nteval's own title-blind systems (lexical, expansion, proximity,
static embeddings, MiniLM on torch and ONNX int8, e5, the hybrids: ``scripts/title_leak_study.py``,
docs/bring-your-own.md) would be refused on any collection where they were measured. What a
ranking shows of itself decides which thresholds apply (:meth:`nteval.traits.Matches.ranking_class`):
a **lexical** ranking (its hits hold the query's words, as BM25's do) cannot reach what an encoder
trained on title–abstract pairs reaches without the titles, so it is held to the lexical systems'
ceilings; any other is held to the encoders'.

- **outside** (both protocols): hits on records ``nt`` does not hold — records without an abstract,
  whose only text is their title. A system that searched the title-stripped collection cannot rank
  them; one that searched an index with the titles does. Refused when its top :data:`OUTSIDE_TOP`
  hold such records on at least :data:`OUTSIDE_TOPICS` topics. On PubMed (a third of the records
  have no abstract) this catches every title search measured, of every family, and the searches of
  the titles on a share of the topics.
- **focused** (known-item) runs, on the *reference's misses*: the topics whose document nteval's
  title-blind BM25 (k1 0.9, b 0.4, over ``nt``) does not rank first. A run is refused when it ranks
  first at least :data:`RESCUE_FLAG` of them and a one-sided binomial test against its class's
  :data:`RESCUE_CEILING` gives p < :data:`P_LEAK`. A run that rescues more than its class's
  title-blind systems do (binomial p < the gate's α against :data:`RESCUE_BLIND`) but too few to be
  refused may have searched the titles on part of its topics: a gate takes all it gained off its
  decision's bounds (:func:`title_gain`).
- **high-recall** (topical) runs, on *title-only evidence*: for each hit in a run's top :data:`TOP`
  (on up to :data:`MAX_TOPICS` topics), the query terms its title holds and its abstract lacks,
  weighted by their idf in ``nt``. Refused when the mean per hit is at least its class's
  :data:`HIGHRECALL_FLAG` and the lower (1 − :data:`P_LEAK`) normal bound of that mean over topics is
  above its class's :data:`HIGHRECALL_CEILING`.

An encoder's ranking that searched the titles and one that did not can leave the same trace (an
encoder trained on title–abstract pairs finds from the abstract what the title says): where the
non-lexical thresholds cannot tell them apart and the lexical ones would refuse, the result says so
(``undecided``) instead of refusing. What it means and what to do is said in one line: search the
exported, title-stripped collection (`nteval export`), or the engine's field without titles.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .errors import InputError
from .formats.trec import canonical
from .lucene.searcher import Index
from .traits import CLASS_TOP, Matches, Terms, matches, titles_of

#: the title-blind reference of the focused rule: nteval's BM25 over nt (the ``bm25`` system)
REFERENCE_K1, REFERENCE_B = 0.9, 0.4
P_LEAK = 0.001
#: the classes of rankings (a ranking whose class cannot be read is held to the non-lexical thresholds)
LEXICAL, NONLEXICAL = "lexical", "non-lexical"
#: The thresholds below are what the rule written in ``scripts/title_leak_study.py`` gives from the
#: six collections measured (the sample, the two PubMed files, CISI, CF, MED, SciFact; docs/title_leak.json).
#: a focused run is refused when it ranks first at least this share of the reference's misses …
RESCUE_FLAG = {LEXICAL: 0.5, NONLEXICAL: 0.9}
#: … significantly above this share (the most a title-blind system of the class rescued, with room)
RESCUE_CEILING = {LEXICAL: 0.35, NONLEXICAL: 0.75}
#: the most a title-blind system of the class rescued where measured: more (binomial p < α) is a
#: sign of a search of the titles on part of the topics (:func:`title_gain`)
RESCUE_BLIND = {LEXICAL: 0.25, NONLEXICAL: 0.65}
#: high-recall: title-only evidence in the top TOP hits of at most MAX_TOPICS topics …
TOP = 10
MAX_TOPICS = 300
#: … flag from this mean idf-weighted evidence per hit …
HIGHRECALL_FLAG = {LEXICAL: 0.15, NONLEXICAL: 0.19}
#: … significantly above this (the most a title-blind system of the class reached, with room)
HIGHRECALL_CEILING = {LEXICAL: 0.09, NONLEXICAL: 0.13}
#: outside: records nt does not hold among the top OUTSIDE_TOP hits of at least OUTSIDE_TOPICS topics
OUTSIDE_TOP = 100
OUTSIDE_TOPICS = 5

ADVICE = ("search the title-stripped collection: `nteval export --from PIN/focused --format beir` (or a run's OUT) gives it (titles empty), "
          "or point the engine at a field without titles")


def _binomial_p(hits: int, n: int, p: float) -> float:
    from scipy.stats import binomtest

    return float(binomtest(hits, n, p, alternative="greater").pvalue) if n else 1.0


def klass(m: Matches | Mapping[str, Any] | None) -> str:
    """The class whose thresholds a ranking is held to (``lexical`` or ``non-lexical``) from its
    :class:`~nteval.traits.Matches` (or their ``as_dict``)."""
    if isinstance(m, Mapping):
        return LEXICAL if m.get("class") == LEXICAL else NONLEXICAL
    return LEXICAL if m is not None and m.ranking_class() == LEXICAL else NONLEXICAL


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


def outside_leak(run: Mapping[str, list], nt_docs: Any, qids: list[str]) -> dict[str, Any]:
    """The outside rule on one run (``nt_docs``: a container of ``nt``'s docids): the topics whose
    top :data:`OUTSIDE_TOP` hold a record ``nt`` does not."""
    topics, hits, example = 0, 0, None
    for q in qids:
        out = [d for d, _ in run.get(q, [])[:OUTSIDE_TOP] if d not in nt_docs]
        if out:
            topics += 1
            hits += len(out)
            example = example or out[0]
    return {"rule": "outside", "topics": len(qids), "top": OUTSIDE_TOP, "outside_topics": topics, "outside_hits": hits,
            "example": example, "flagged": topics >= OUTSIDE_TOPICS}


def focused_leak(run: Mapping[str, list], ranks: Mapping[str, int | None], sources: Mapping[str, str],
                 cls: str = NONLEXICAL) -> dict[str, Any]:
    """The focused rule on one run of class ``cls`` (``run``: {qid: [(docid, score), ...]} in rank
    order; ``ranks``: :func:`reference_ranks`): how many of the reference's misses it ranks first."""
    misses = sorted(q for q, r in ranks.items() if r != 1)
    first = [q for q in misses if run.get(q) and run[q][0][0] == sources[q]]
    n = len(misses)
    p = _binomial_p(len(first), n, RESCUE_CEILING[cls])
    flagged = n > 0 and len(first) / n >= RESCUE_FLAG[cls] and p < P_LEAK
    out = {"rule": "rescues", "class": cls, "topics": len(ranks), "misses": n, "hits": len(first),
           "share": round(len(first) / n, 4) if n else None, "ceiling": RESCUE_CEILING[cls], "p": p,
           "flagged": bool(flagged), "rescued": first}
    if cls == NONLEXICAL and not flagged and n:  # (would a lexical ranking with this evidence be refused?)
        lex = _binomial_p(len(first), n, RESCUE_CEILING[LEXICAL])
        if len(first) / n >= RESCUE_FLAG[LEXICAL] and lex < P_LEAK or len(first) / n > RESCUE_BLIND[LEXICAL]:
            out["undecided"] = (f"it ranks first {len(first)} of the {n} documents nteval's title-blind BM25 misses "
                                f"({len(first) / n:.0%}): more than a lexical system does without the titles "
                                f"({RESCUE_BLIND[LEXICAL]:.0%} at most), within what an encoder does "
                                f"({RESCUE_BLIND[NONLEXICAL]:.0%} at most): nteval cannot tell an encoder that "
                                "finds them from one that searched the titles")
    return out


def title_gain(leak: Mapping[str, Any], base: Mapping[str, float], cand: Mapping[str, float], n_topics: int,
               alpha: float = 0.05) -> dict[str, Any]:
    """The part of a candidate's mean gain over the baseline that a search of the titles on part of
    its topics can have made (``leak``: its :func:`focused_leak`; ``base``, ``cand``: per-topic RR):
    when it rescues more of the reference's misses than title-blind systems of its class do (a
    one-sided binomial test against :data:`RESCUE_BLIND`, p < ``alpha``), its gain on every topic it
    scores higher than the baseline on; otherwise nothing (a title-blind system that ranks first
    more of BM25's misses cannot be told from a partial title search by its rescues, and its
    computed twin would be judged on all it gained). A gate's decision must hold without it
    (:mod:`nteval.gate.gate`)."""
    cls = leak.get("class") or NONLEXICAL
    evidence = _binomial_p(leak["hits"], leak["misses"], RESCUE_BLIND[cls])
    wide = evidence < alpha
    topics = [q for q in cand if cand[q] > base.get(q, 0.0)] if wide else []
    gain = sum(cand[q] - base.get(q, 0.0) for q in topics) / n_topics if n_topics else 0.0
    why = (f"it ranks first {leak['hits']} of the {leak['misses']} documents nteval's title-blind BM25 misses "
           f"({leak['share']:.0%}; title-blind {'lexical systems' if cls == LEXICAL else 'encoders'} "
           f"{RESCUE_BLIND[cls]:.0%} at most, p = {evidence:.2g}), as a search of the titles on part of the topics "
           f"would, and {gain:+.4f} of its score comes from the {len(topics)} topics it scores higher than the baseline on"
           ) if wide else ""
    return {"topics": len(topics), "gain": round(gain, 6), "evidence_p": evidence, "every_gain": wide, "why": why,
            "class": cls}


def highrecall_leak(terms: Terms, run: Mapping[str, list], topics: Mapping[str, str], titles: Mapping[str, str],
                    qids: list[str], cls: str = NONLEXICAL) -> dict[str, Any]:
    """The high-recall rule on one run of class ``cls`` (``titles``: docid → title of the documents met)."""
    from scipy.stats import norm

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
            evidence += sum(terms.idf(t) for t in only)
        hits += len(top)
        per_topic.append(evidence / len(top))
    n = len(per_topic)
    mean = sum(per_topic) / n if n else 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in per_topic) / (n - 1)) if n > 1 else 0.0
    lower = mean - float(norm.ppf(1 - P_LEAK)) * sd / math.sqrt(n) if n > 1 else 0.0

    def flag(c: str) -> bool:
        return mean >= HIGHRECALL_FLAG[c] and lower > HIGHRECALL_CEILING[c]

    out = {"rule": "title-only evidence", "class": cls, "topics": n, "top": TOP, "hits": hits, "title_only": title_only,
           "share": round(mean, 4), "lower": round(lower, 4), "ceiling": HIGHRECALL_CEILING[cls], "flagged": flag(cls)}
    if cls == NONLEXICAL and not out["flagged"] and flag(LEXICAL):
        out["undecided"] = (f"its top-{TOP} hits match query words only in the document's title {mean:.3f} idf-weighted "
                            f"per hit (lower bound {lower:.3f}): more than a lexical system does without the titles, "
                            "within what an encoder does: nteval cannot tell an encoder that finds them from one that "
                            "searched the titles")
    return out


def check_runs(index_dir: Path, protocol: str, runs: Mapping[str, Mapping[str, list]], topics: Mapping[str, str],
               sources: Mapping[str, str], names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The title-leak rules on each run of ``names``: {name: result} (the outside rule, then the
    rule of ``protocol`` at the thresholds of the run's class; ``matches``: what its top
    :data:`~nteval.traits.CLASS_TOP` show, :class:`~nteval.traits.Matches`). A result with
    ``flagged`` true carries ``text``, the line every output shows."""
    names = list(names)
    if not names or protocol not in ("focused", "highrecall"):
        return {}
    qids = sorted(topics)[:MAX_TOPICS]
    met = {d for n in names for q in qids for d, _ in runs[n].get(q, [])[:max(CLASS_TOP, OUTSIDE_TOP)]}
    titles = titles_of(index_dir, met)
    out: dict[str, dict[str, Any]] = {}
    terms = Terms(index_dir)
    try:
        seen = {n: matches(terms, runs[n], topics, titles, qids, CLASS_TOP) for n in names}
        nt_docs = {d for d in met if terms.document(d) is not None}
        ranks = reference_ranks(index_dir, topics, sources) if protocol == "focused" else None
        for n in names:
            cls = klass(seen[n])
            r = outside_leak(runs[n], nt_docs, qids)
            if not r["flagged"]:
                r = (focused_leak(runs[n], ranks or {}, sources, cls) if protocol == "focused"
                     else highrecall_leak(terms, runs[n], topics, titles, qids, cls))
            r["class"] = cls
            r["matches"] = seen[n].as_dict()
            out[n] = r
    finally:
        terms.close()
    for n, r in out.items():
        if r["flagged"]:
            r["text"] = leak_text(n, r)
    return out


def leak_text(name: str, r: dict[str, Any]) -> str:
    if r["rule"] == "outside":
        seen = (f"{r['outside_hits']:,} of its top-{r['top']} hits on {r['outside_topics']:,} of {r['topics']:,} topics are "
                f"records without an abstract (e.g. {r['example']}), whose only text is their title: the title-stripped "
                "collection does not hold them")
    elif r["rule"] == "rescues":
        seen = (f"it puts the document first on {r['hits']} of the {r['misses']} topics nteval's title-blind BM25 does not "
                f"({r['share']:.0%}; title-blind {'lexical systems' if r['class'] == LEXICAL else 'encoders'} did on at "
                f"most {RESCUE_BLIND[r['class']]:.0%}, binomial p = {r['p']:.1g} against {r['ceiling']:.0%})")
    else:
        seen = (f"{r['title_only']} of its top-{r['top']} hits match query words only in the document's title, "
                f"{r['share']:.3f} idf-weighted per hit (lower bound {r['lower']:.3f}; title-blind "
                f"{'lexical systems' if r['class'] == LEXICAL else 'encoders'} reach at most about {r['ceiling']:.2f})")
    return f"system {name} searched the titles: {seen}; its scores are not NT scores — {ADVICE}"


def refuse_leaks(index_dir: Path, protocol: str, runs: Mapping[str, Mapping[str, list]], topics: Mapping[str, str],
                 sources: Mapping[str, str], systems: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Check the runs of the systems that may have seen the titles (outside runs, programs,
    callables, pipelines, remote engines: :meth:`~nteval.systems.kind.SystemKind.may_see_titles`);
    one line (:class:`~nteval.errors.InputError`) naming the first that did. Returns every check."""
    systems = list(systems)
    names = [s.name for s in systems if s.kind.may_see_titles(s)]
    checked = check_runs(index_dir, protocol, runs, topics, sources, names)
    for name, r in checked.items():
        if r["flagged"]:
            where = next((s.params.get("run") for s in systems if s.name == name), None)
            raise InputError(where, r["text"])
    for name in checked:
        _say_deep_titles(index_dir, name, runs[name])
    return checked


def _say_deep_titles(index_dir: Path, name: str, run: Mapping[str, list]) -> None:
    """A run not refused whose rankings hold records without an abstract (deeper than the rules read,
    or on too few topics): said once; they count as non-relevant."""
    import sys

    from .corpus.store import known_docids

    hits = [d for r in run.values() for d, _ in r]
    outside = set(hits) - known_docids(index_dir, hits, "nt")
    if outside:
        n = sum(1 for d in hits if d in outside)
        print(f"note: system {name}: {n:,} of its {len(hits):,} hits ({len(outside):,} documents, e.g. {min(outside)}) "
              "are not among the documents NT searches (records of the collection without an abstract: an engine that "
              "matched them searched their titles), too deep or too few to refuse it; they count as non-relevant",
              file=sys.stderr)
