"""What is known about each verdict before this run, and what it covers.

- ``nteval/data/validation.json`` is the output of ``scripts/validation_study.py`` (SciFact and CISI,
  the ``wide_dense`` set of 28 systems, 1,000 NT topics per protocol, the human topics of each
  collection), recomputed from a snapshot of its runs by a test. It holds, per protocol and per kind
  of collection, how far the NT ranking agrees with the human one — Kendall τ, and the significance
  decisions (of the pairs of systems the humans separate, how many the verdict separates the same
  way, and the other way round) — and per family of systems how far NT over- or understates the
  family's advantage over BM25 against the humans' (the *bias*). Every protocol run prints the
  first as **evidence from the study, not from this run**, and one note per family of its systems
  with a measured bias; a headline flags the systems of its best group that have one
  (:func:`bias_flags`).
- ``nteval/data/grid_facts.json`` (``scripts/grid_study.py``): what nteval's PubMed grid shows of the
  protocols' preferred BM25 settings (:func:`grid_fact`), the only grid facts a run may cite.
- :func:`coverage`: how much of a collection a verdict cannot see (no abstract: never searched; no
  title: never a topic), with a caveat above :data:`COVERAGE_CAVEAT`.

A system's family comes from what it does (its algorithm and, for a fusion, its inputs), so it
applies to any system of a run, not only the study's.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from .systems.families import FAMILIES, families, uses  # noqa: F401  (a system's family: systems/families.py)

#: What each kind of collection is, for a person (the study's collections are one of each).
KINDS = {"precise": "a precise-task collection (about one relevant document per query: known-item-like)",
         "topical": "a topical collection (many relevant documents per query: ad hoc, recall-oriented)"}

STUDY = "validation.json"


@lru_cache(maxsize=4)
def _shipped(name: str) -> dict[str, Any] | None:
    """A study shipped in nteval/data (None if the package was built without it)."""
    try:
        return json.loads((resources.files("nteval") / "data" / name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def study() -> dict[str, Any] | None:
    """The shipped validation study (None if the package was built without it)."""
    return _shipped(STUDY)


def _collections() -> dict[str, dict[str, Any]]:
    s = study()
    return s["study"]["collections"] if s else {}


def evidence(protocol: str) -> dict[str, Any] | None:
    """The study's agreement of ``protocol``'s verdict with human judgments, per collection: the
    rank correlation, and the significance decisions (``decisions``: how many of the pairs of
    systems the humans separate the verdict separates the same way, and the other way round)."""
    s = study()
    if not s or protocol not in s.get("agreement", {}):
        return None
    decided = (s.get("decisions") or {}).get(protocol, {})
    return {"source": f"nteval's validation study ({s['study']['summary']}), not this run",
            "study": {k: s["study"][k] for k in ("summary", "command", "systems", "date", "nteval") if k in s["study"]},
            "decision_test": s["study"].get("decision_test"),
            "collections": {c: {**_collections()[c], **row,
                                **({"decisions": {k: decided[c][k] for k in ("human_separated", "same_direction",
                                                                             "share_same_direction", "reversed",
                                                                             "human_best_in_best_group")}}
                                   if c in decided else {})}
                            for c, row in s["agreement"][protocol].items()}}


def evidence_lines(protocol: str) -> list[str]:
    """The evidence as a person reads it (labelled as the study's, not this run's)."""
    ev = evidence(protocol)
    if ev is None:
        return []
    parts = []
    for c in ev["collections"].values():
        lo, hi = c["ci95"]
        d = c.get("decisions")
        parts.append(f"on {KINDS[c['kind']].split(' (')[0]} ({c['label']}, {c['relevant_per_query']:.1f} relevant per "
                     f"query) Kendall tau {c['kendall']:.2f} [{lo:.2f}, {hi:.2f}] with human {c['human_measure']}"
                     + (f", {d['same_direction']} of the {d['human_separated']} pairs of systems the humans separate "
                        f"separated the same way ({d['share_same_direction'] * 100:.0f} %), {len(d['reversed'])} the "
                        f"other way round" if d and d["share_same_direction"] is not None else ""))
    test = f"; decisions: {ev['decision_test']}" if ev.get("decision_test") else ""
    return [f"  evidence — {ev['source']}: the {protocol} ranking agrees with humans " + "; ".join(parts)
            + f" (brackets: 95 % CIs, {ev['collections'][next(iter(ev['collections']))]['ci_method']}{test})"
            ] + (unseen_lines() if protocol == "highrecall" else [])


UNSEEN = "unseen_encoders.json"
#: The encoders of the unseen-encoders study, for a person.
ENCODER_LABELS = {"minilm": "all-MiniLM-L6-v2", "e5": "multilingual-e5-small"}


def unseen_study() -> dict[str, Any] | None:
    """The shipped unseen-encoders study (``scripts/unseen_encoders_study.py``), or None."""
    return _shipped(UNSEEN)


def unseen_bias(encoder: str, mechanism: str | None = None) -> dict[str, tuple[float, float, float]]:
    """Leave-model-out: the bias (points, 95 % CI) of ``encoder``'s own system on each topical
    collection of the study when the references hold the *other* encoder and not it, under
    ``mechanism`` (default: the study's choice, the shipped one)."""
    s = unseen_study()
    if not s:
        return {}
    mech = mechanism or s["choice"]["chosen"]
    other = next((e for e in ENCODER_LABELS if e != encoder), None)
    out = {}
    for c, per in s["collections"].items():
        row = per.get(f"{mech}[{other}]", {}).get("systems", {}).get(encoder)
        if row and c in ("cisi", "cf"):
            out[c] = tuple(row["bias"])
    return out


def unseen_lines() -> list[str]:
    """One evidence line: how the high-recall verdict judges a neural model its references do not
    contain (each encoder judged by references holding the other one; the study's, not this run's)."""
    s = unseen_study()
    if not s:
        return []
    labels = {"cisi": "CISI", "cf": "CF", "scifact": "SciFact"}
    parts = []
    for enc, label in ENCODER_LABELS.items():
        cells = [f"{point:+.0f} points [{lo:+.0f}, {hi:+.0f}] on {labels.get(c, c)}"
                 for c, (point, lo, hi) in unseen_bias(enc).items()]
        if cells:
            parts.append(f"{label} judged without its own model: " + ", ".join(cells))
    if not parts:
        return []
    return ["  evidence — leave-model-out (nteval's unseen-encoders study, not this run; bias = NT's advantage over "
            "BM25 minus the humans', 95 % CI): " + "; ".join(parts)
            + ". A neural model the references do not contain may be misjudged by about as much."]


#: A family whose measured bias (NT advantage over BM25 minus the humans') exceeds this on a
#: collection of the verdict's own kind is flagged: runs note it, headlines flag it, gates caution.
BIAS_CAUTION = 0.05
#: The high-recall verdict judged by the lexical references alone (the neural extra missing, or
#: ``--preset lexical``): the study measures it apart (scripts/validation_study.py's ``BEFORE``).
LEXICAL_SIDE = "highrecall_lexical"
OWN_KIND = {"focused": "precise", "highrecall": "topical", LEXICAL_SIDE: "topical"}


def study_side(protocol: str, sref: dict[str, Any] | None = None) -> str:
    """Which of the study's measured verdicts a run's is: ``focused``; ``highrecall`` when its
    references include the neural one (``sref``: results.json's), else the lexical references'
    (:data:`LEXICAL_SIDE`); any other protocol is its own name (the study has not measured it)."""
    if protocol != "highrecall" or sref is None:
        return protocol
    return protocol if "neural" in (sref.get("families") or {}) else LEXICAL_SIDE


def measured_bias(side: str, family: str | None) -> dict[str, dict[str, Any]] | None:
    """The study's bias of ``family`` under the verdict ``side`` on the collections of the verdict's
    own kind (``{collection: {bias, ci95, significant, nt_advantage, human_advantage}}``), or None
    when it has not measured it (an unknown family, a verdict the study does not cover)."""
    s = study()
    b = ((s or {}).get("biases", {}).get(side) or {}).get(family or "")
    if not b:
        return None
    own = OWN_KIND.get(side)
    cols = {c: v for c, v in b["collections"].items() if _collections().get(c, {}).get("kind") == own}
    return cols or None


def bias_notes(protocol: str, configs: dict[str, dict[str, Any]], side: str | None = None) -> list[dict[str, Any]]:
    """A note for each system of the run whose family has a bias the study flagged under the
    verdict ``side`` (default ``protocol``; :func:`study_side`), its ``flag_rule``: more than
    :data:`BIAS_CAUTION` on a collection of the verdict's own kind; with its size on each collection."""
    s = study()
    if not s:
        return []
    side = side or protocol
    measured = s.get("biases", {}).get(side, {})
    fam = families(configs)
    own = OWN_KIND.get(side)
    notes = []
    for name in configs:
        f = fam.get(name)
        b = measured.get(f) if f else None
        if not f or not b or not b.get("flagged"):
            continue
        sizes = []
        for cname, c in b["collections"].items():
            col = _collections()[cname]
            mine = ", the kind this verdict is for" if col["kind"] == own else ""
            sizes.append(f"{col['label']} ({col['kind']}{mine}): NT {c['nt_advantage'] * 100:+.0f} % vs humans "
                         f"{c['human_advantage'] * 100:+.0f} % over BM25, a bias of {c['bias'] * 100:+.0f} points "
                         f"(95 % CI [{c['ci95'][0] * 100:+.0f}, {c['ci95'][1] * 100:+.0f}])"
                         + ("" if c["significant"] else " (not significant)"))
        measured_text = (f"under {protocol} NT this family's advantage over BM25 is not the humans' — "
                         + "; ".join(sizes) + (f". {b['advice']}" if b.get("advice") else ""))
        notes.append({"system": name, "protocol": protocol, "family": f, "label": FAMILIES[f],
                      "direction": b.get("direction", 0), "collections": b["collections"],
                      "advice": b.get("advice", ""), "measured": measured_text,
                      "text": f"{name} ({FAMILIES[f]}): {measured_text}"})
    return notes


def bias_flags(notes: list[dict[str, Any]], systems: list[str]) -> list[dict[str, Any]]:
    """The bias notes of ``systems`` (say, a headline's best group), one flag per family, in the
    order of the systems: which systems, the family, the direction and size the study measured on
    each collection (the verdict's own kind of collection first), and a clause for a sentence."""
    mine = {n["system"]: n for n in notes}
    by_family: dict[str, list[dict[str, Any]]] = {}
    for s in systems:
        if s in mine:
            by_family.setdefault(mine[s]["family"], []).append(mine[s])
    out = []
    for family, ns in by_family.items():
        n = ns[0]
        protocol = str(n.get("protocol") or "")
        own = {"focused": "precise", "highrecall": "topical"}.get(protocol)
        cols = sorted(n["collections"].items(), key=lambda kv: _collections()[kv[0]]["kind"] != own)
        def size(c: str, v: dict[str, Any]) -> str:
            return (f"{v['bias'] * 100:+.0f} points on {_collections()[c]['label']}"
                    + ("" if v["significant"] else " (not significant)"))

        mine_kind = [size(c, v) for c, v in cols if _collections()[c]["kind"] == own]
        other = [size(c, v) for c, v in cols if _collections()[c]["kind"] != own]
        parts = ([" and ".join(mine_kind) + (", the kind of collection this verdict is for" if len(mine_kind) == 1
                                             else ", the kind of collections this verdict is for")]
                 if mine_kind else []) + other
        direction = n.get("direction", 0)
        verb = {1: "overstated", -1: "understated"}.get(direction, "misjudged")
        names = [x["system"] for x in ns]
        text = (f"{', '.join(names)}: {n['label'].split(' (')[0]}'s advantage over BM25 is {verb} by the "
                f"{'high-recall' if protocol == 'highrecall' else protocol} verdict against human AP in nteval's "
                "validation study (" + "; ".join(parts) + ")")
        out.append({"systems": names, "family": family, "label": n["label"], "direction": direction,
                    "sizes": {c: round(v["bias"] * 100, 1) for c, v in cols}, "text": text})
    return out


GRID_FACTS = "grid_facts.json"


@lru_cache(maxsize=1)
def grid_facts() -> dict[str, Any] | None:
    """The shipped facts of nteval's PubMed grid (``scripts/grid_study.py`` writes them with
    docs/grid.md's table; None if the package was built without them)."""
    try:
        return json.loads((resources.files("nteval") / "data" / GRID_FACTS).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def grid_fact(parameter: str) -> dict[str, Any] | None:
    """What the grid shows of the two protocols' best values of ``parameter`` along the other
    axis: ``{"across", "compared", "focused_higher", "focused_lower", "equal", "source"}``."""
    g = grid_facts()
    fact = (g or {}).get("facts", {}).get(parameter)
    if not g or not fact:
        return None
    return {**fact, "source": f"docs/grid.md, made by scripts/grid_study.py on {g['study']['date']} with nteval "
                              f"{g['study']['nteval']}"}


# -- what the verdict covers ------------------------------------------------------------------------

#: Above this share of the collection outside what NT sees, every output carries a caveat. Measured
#: in docs/validation.md ("What the verdict covers"): CISI with a seeded share of its abstracts
#: dropped (scripts/drop_abstracts.py).
COVERAGE_CAVEAT = 0.2


def coverage(collection: dict[str, Any]) -> dict[str, Any]:
    """How much of the collection an NT verdict cannot see, from a results.json ``collection``
    (:func:`nteval.experiment.collection_counts`). NT queries the title of a document that has a
    title and an abstract and searches the abstracts: a record without an abstract is never
    searched (it is not in ``nt``), one without a title is never a topic, and records the
    index's documents policy skipped for either are in no index. The verdict speaks for the
    documents with both; ``caveat`` says so when the others are more than :data:`COVERAGE_CAVEAT`."""
    n_all = int(collection.get("all", 0))
    skipped = int(collection.get("skipped_without_title_or_abstract", 0))
    records = n_all + skipped
    both = int(collection.get("with_title_and_abstract", collection.get("nt", n_all)))
    no_abstract = int(collection.get("without_abstract", n_all - int(collection.get("nt", n_all))))
    no_title = int(collection.get("without_title", 0))
    unseen = records - both
    share = unseen / records if records else 0.0
    parts = [f"{no_abstract:,} without an abstract (never searched by NT's systems)" if no_abstract else "",
             f"{no_title:,} without a title (never a topic)" if no_title else "",
             f"{skipped:,} skipped by the index's documents policy" if skipped else ""]
    text = (f"the verdict speaks for the {both:,} of {records:,} records ({(1 - share) * 100:.0f} %) with a title and an "
            "abstract" + (f"; it cannot see the other {unseen:,} ({share * 100:.0f} %): "
                          + ", ".join(x for x in parts if x) if unseen else ""))
    caveat = None
    if share > COVERAGE_CAVEAT:
        caveat = (f"{share * 100:.0f} % of the collection is outside what NT sees (above {COVERAGE_CAVEAT * 100:.0f} %): "
                  "the verdict ranks the systems on the documents with a title and an abstract only; how they find "
                  "the others is not measured" + _coverage_evidence())
    return {"records": records, "seen": both, "unseen": unseen, "share_unseen": round(share, 4),
            "without_abstract": no_abstract, "without_title": no_title, "skipped": skipped,
            "threshold": COVERAGE_CAVEAT, "text": text, "caveat": caveat}


def _coverage_evidence() -> str:
    """What the validation study measured when half a judged collection's abstracts were dropped."""
    cv = (study() or {}).get("coverage")
    if not cv:
        return ""
    a = cv["agreement"]["highrecall"]
    return (f" ({cv['collection']}: the high-recall verdict's Kendall τ with human AP {a['untouched']:.2f} untouched, "
            f"{a['dropped']:.2f} with them dropped; nteval's validation study, docs/validation.md)")


def coverage_lines(cov: dict[str, Any] | None) -> list[str]:
    """The coverage as a person reads it (a protocol's or compare's terminal output)."""
    if not cov:
        return []
    return [f"  coverage: {cov['text']}"] + ([f"  CAVEAT: {cov['caveat']}"] if cov.get("caveat") else [])
