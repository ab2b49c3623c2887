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
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from importlib import resources
from typing import Any

from .systems.families import (  # noqa: F401  (a system's family: systems/families.py)
    FAMILIES,
    UNSEEN_FAMILIES,
    against_references,
    families,
    uses,
)

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


#: the collections whose evidence is set aside (:func:`evidence_without`): none outside a study
_SET_ASIDE: ContextVar[frozenset[str]] = ContextVar("nteval_evidence_set_aside", default=frozenset())


@contextmanager
def evidence_without(*collections: str) -> Iterator[None]:
    """Within it, every measured bias (a family's, an encoder's the references do not contain) comes
    from the study's other collections, as if ``collections`` had never been measured: what the
    gate's cross-family rules allow on a collection whose own figures they did not see (the
    leave-one-collection-out study, scripts/loco_fairness_study.py). Nested, the sets add up."""
    token = _SET_ASIDE.set(_SET_ASIDE.get() | frozenset(collections))
    try:
        yield
    finally:
        _SET_ASIDE.reset(token)


def _counted(collection: str) -> bool:
    """Whether a collection's evidence counts here (:func:`evidence_without`)."""
    return collection not in _SET_ASIDE.get()


def _collections() -> dict[str, dict[str, Any]]:
    s = study()
    return s["study"]["collections"] if s else {}


def evidence(protocol: str, side: str | None = None) -> dict[str, Any] | None:
    """The study's agreement of ``protocol``'s verdict with human judgments, per collection: the
    rank correlation, and the significance decisions (``decisions``: how many of the pairs of
    systems the humans separate the verdict separates the same way, and the other way round).
    ``side`` (:func:`study_side`): which of the study's verdicts this run's is, when the study
    measured it apart (the high-recall verdict of the lexical references alone: hostile K7)."""
    s = study()
    side = side if side and side in (s or {}).get("agreement", {}) else protocol
    if not s or side not in s.get("agreement", {}):
        return None
    decided = (s.get("decisions") or {}).get(side, {})
    return {"source": f"nteval's validation study ({s['study']['summary']}), not this run",
            "study": {k: s["study"][k] for k in ("summary", "command", "systems", "date", "nteval") if k in s["study"]},
            "decision_test": s["study"].get("decision_test"),
            "collections": {c: {**_collections()[c], **row,
                                **({"decisions": {k: decided[c][k] for k in ("human_separated", "same_direction",
                                                                             "share_same_direction", "reversed",
                                                                             "human_best_in_best_group")}}
                                   if c in decided else {})}
                            for c, row in s["agreement"][side].items()},
            "side": side}


def evidence_lines(protocol: str, side: str | None = None) -> list[str]:
    """The evidence as a person reads it (labelled as the study's, not this run's), for the verdict
    ``side`` (:func:`study_side`): the lexical references' own agreement, and no leave-model-out
    line (which is about references that hold a neural model), when they judged alone."""
    ev = evidence(protocol, side)
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
    who = " (judged by the lexical references alone)" if ev["side"] == LEXICAL_SIDE else ""
    return [f"  evidence — {ev['source']}: the {protocol} ranking{who} agrees with humans " + "; ".join(parts)
            + f" (brackets: 95 % CIs, {ev['collections'][next(iter(ev['collections']))]['ci_method']}{test})"
            ] + (unseen_lines() if ev["side"] == "highrecall" else [])


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
        if row and c in ("cisi", "cf") and _counted(c):
            out[c] = tuple(row["bias"])
    if mechanism is None:
        out |= {c: v for c, v in loco_unseen_bias(encoder).items() if c not in out}
    return out


LOCO = "loco_fairness.json"


def loco_unseen_bias(encoder: str = "e5") -> dict[str, tuple[float, float, float]]:
    """The leave-one-collection-out study's (``scripts/loco_fairness_study.py``, issue 57) bias of
    ``encoder``'s own system judged by references without it, in points with its 95 % interval, on
    each collection of the high-recall verdict's kind (topical) it measured: the same leave-model-out
    figure as the unseen-encoders study's, on collections that study lacks (MED). ``e5``: under the
    shipped design (references holding all-MiniLM-L6-v2, not e5); ``minilm``: under the same design
    with e5 in MiniLM's place (the study's ``--e5-refs``). (SciFact, which it holds out and reports,
    is not of that kind.)"""
    s = _shipped(LOCO)
    kinds = {c: v.get("kind") for c, v in _collections().items()}
    out = {}
    for c, per in ((s or {}).get("collections") or {}).items():
        shipped = per.get("shipped") or {}
        bias = (shipped.get("e5") or {}).get("bias") if encoder == "e5" else (shipped.get(encoder) or {}).get("unseen_bias")
        if bias and kinds.get(c, "topical") == OWN_KIND["highrecall"] and _counted(c):
            out[c] = tuple(bias)
    return out


def unseen_lines() -> list[str]:
    """One evidence line: how the high-recall verdict judges a neural model its references do not
    contain (each encoder judged by references holding the other one; the study's, not this run's)."""
    s = unseen_study()
    if not s:
        return []
    labels = {"cisi": "CISI", "cf": "CF", "scifact": "SciFact", "med": "MED"}
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


def measured_bias(side: str, family: str | None,
                  references: frozenset[str] | None = None) -> dict[str, dict[str, Any]] | None:
    """The study's bias of ``family`` under the verdict ``side`` on the collections of the verdict's
    own kind (``{collection: {bias, ci95, significant, nt_advantage, human_advantage}}``), or None
    when it has not measured it (an unknown family, a verdict the study does not cover). A neural
    system or hybrid whose encoder the references do not contain (``…_unseen``,
    :data:`~nteval.systems.families.UNSEEN_FAMILIES`; ``references``: the references' encoders)
    has the leave-model-out study's bias (:func:`unseen_family_bias`); one whose encoder nteval
    cannot name (``…_unknown``) the envelope of that and the references' own model's; under any
    other verdict than the balanced high-recall one, its family's."""
    if family in UNSEEN_FAMILIES:
        base, how = family.rsplit("_", 1)
        if side != "highrecall":
            return measured_bias(side, base)
        unseen = unseen_family_bias(base, references or frozenset())
        return unseen if how == "unseen" else _envelope(unseen, measured_bias(side, base))
    s = study()
    b = ((s or {}).get("biases", {}).get(side) or {}).get(family or "")
    if not b:
        return None
    own = OWN_KIND.get(side)
    cols = {c: v for c, v in b["collections"].items()
            if _collections().get(c, {}).get("kind") == own and _counted(c)}
    return cols or None


def unseen_family_bias(family: str, references: frozenset[str]) -> dict[str, dict[str, Any]] | None:
    """Leave-model-out: the bias (NT's advantage over BM25 minus the humans', as a share of BM25's
    score, 95 % CI) on each topical collection of the unseen-encoders study of a ``family``
    (``neural``: the encoder alone; ``hybrid``: its RRF with BM25) system whose encoder the
    references do not contain: the study's encoders that ``references`` (the references' encoders,
    e.g. ``{"minilm"}``) leave out, judged by references holding ``references``; the envelope of
    several (each collection's widest interval and largest bias). Where the study has no such row
    (references it did not hold), every encoder judged by references without it. None: no study."""
    s = unseen_study()
    if not s:
        return None
    mech = s["choice"]["chosen"]
    held = "+".join(sorted(references))
    found = _unseen_rows(s, mech, family, lambda refs, enc: refs == held and enc not in references)
    return found or _unseen_rows(s, mech, family, lambda refs, enc: enc not in refs.split("+")) or None


def _unseen_rows(s: dict[str, Any], mech: str, family: str, wanted: Any) -> dict[str, dict[str, Any]]:
    """The envelope over the study's rows (``wanted(references, encoder)``) of ``family`` systems."""
    out: dict[str, dict[str, Any]] = {}
    for col, per in s["collections"].items():
        if _collections().get(col, {}).get("kind") != "topical" or not _counted(col):
            continue
        for key, row in per.items():
            held = re.fullmatch(rf"{re.escape(mech)}\[([^\]]+)\]", key)  # (not "full[minilm] + MeSH": another reference)
            if held is None:
                continue
            refs = held.group(1)
            for enc in ENCODER_LABELS:
                system = enc if family == "neural" else f"{enc}_bm25_rrf"
                got = (row.get("systems") or {}).get(system)
                if got and wanted(refs, enc):
                    out[col] = _widest(out.get(col), _unseen_row(got["bias"], enc, refs.split("+")))
    # (collections the study lacks: the LOCO study's e5 under the shipped design, the study's chosen
    # one, and MiniLM under it with e5 in MiniLM's place)
    if family != "neural" or mech != s["choice"]["chosen"]:
        return out
    for enc, other in (("e5", "minilm"), ("minilm", "e5")):
        if wanted(other, enc):
            for col, bias in loco_unseen_bias(enc).items():
                if col not in s["collections"] and _collections().get(col, {}).get("kind") == "topical":
                    out[col] = _widest(out.get(col), _unseen_row(bias, enc, [other]))
    return out


def _unseen_row(bias: Any, encoder: str, references: list[str]) -> dict[str, Any]:
    point, lo, hi = (v / 100 for v in bias)
    return {"bias": round(point, 4), "ci95": [round(lo, 4), round(hi, 4)], "encoders": [ENCODER_LABELS[encoder]],
            "references": [ENCODER_LABELS.get(r, r) for r in references], "source": "leave-model-out"}


def _widest(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """One collection's envelope of two measured biases: the larger bias by size, the union of
    the intervals, both sources."""
    if a is None:
        return b
    return {"bias": a["bias"] if abs(a["bias"]) >= abs(b["bias"]) else b["bias"],
            "ci95": [min(a["ci95"][0], b["ci95"][0]), max(a["ci95"][1], b["ci95"][1])],
            "encoders": sorted(set(a.get("encoders", [])) | set(b.get("encoders", []))),
            "references": sorted(set(a.get("references", [])) | set(b.get("references", []))),
            "source": a.get("source") if a.get("source") == b.get("source") else "envelope"}


def _envelope(a: dict[str, dict[str, Any]] | None, b: dict[str, dict[str, Any]] | None) -> dict[str, dict[str, Any]] | None:
    if not a or not b:
        return a or b
    return {c: _widest(a.get(c), {**b[c], "source": "seen"}) for c in b} | {c: v for c, v in a.items() if c not in b}


def reference_encoders(sref: dict[str, Any] | None) -> frozenset[str] | None:
    """The encoders (dense ``model`` names) of the neural references in a results.json or pin
    ``sref``; None when no neural model judged (the lexical references alone, or no references)."""
    if not sref:
        return None
    names = (sref.get("families") or {}).get("neural") or []
    params = sref.get("params") or {}
    found = {str((params.get(n) or {}).get("params", {}).get("model")) for n in names if params.get(n)}
    return frozenset(found) if found else None


def bias_notes(protocol: str, configs: dict[str, dict[str, Any]], side: str | None = None,
               references: frozenset[str] | None = None) -> list[dict[str, Any]]:
    """A note for each system of the run whose family has a bias the study flagged under the
    verdict ``side`` (default ``protocol``; :func:`study_side`), its ``flag_rule``: more than
    :data:`BIAS_CAUTION` on a collection of the verdict's own kind; with its size on each collection.
    Under the balanced high-recall verdict (``references``: the encoders of its references), a
    neural system or hybrid whose encoder the references do not contain (or whose encoder nteval
    cannot name) always has one, with the leave-model-out study's bias (:func:`unseen_note`)."""
    s = study()
    if not s:
        return []
    side = side or protocol
    measured = s.get("biases", {}).get(side, {})
    fam = against_references(families(configs), configs, references if side == "highrecall" else None)
    own = OWN_KIND.get(side)
    notes = []
    for name in configs:
        f = fam.get(name)
        if f in UNSEEN_FAMILIES:
            note = unseen_note(name, protocol, f, references)
            if note:
                notes.append(note)
            continue
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


def unseen_note(name: str, protocol: str, family: str, references: frozenset[str] | None) -> dict[str, Any] | None:
    """The note on a neural system or hybrid the references do not contain (``family``: a key of
    :data:`~nteval.systems.families.UNSEEN_FAMILIES`): the leave-model-out study's bias on each topical
    collection, with its interval (the envelope with the references' own model's where nteval cannot
    name the encoder); flagged (for headlines) beyond :data:`BIAS_CAUTION`."""
    b = measured_bias("highrecall", family, references)
    if not b:
        return None
    held = ", ".join(ENCODER_LABELS.get(r, r) for r in sorted(references or ()))
    first = next(iter(b.values()))
    sizes = "; ".join(f"{_collections()[c]['label']}: {v['bias'] * 100:+.0f} points (95 % CI [{v['ci95'][0] * 100:+.0f}, "
                      f"{v['ci95'][1] * 100:+.0f}])" for c, v in b.items())
    if family.endswith("_unseen"):
        what = (f"its encoder is not among the references that judged these topics ({held}); nteval's leave-model-out "
                f"study judged {', '.join(first.get('encoders', []))}"
                f"{' fused with BM25 (RRF)' if family.startswith('hybrid') else ''} by references without it (holding "
                f"{', '.join(first.get('references', []))}): NT's advantage over BM25 minus the humans' — {sizes}")
    else:
        what = (f"nteval cannot tell whether its encoder is among the references that judged these topics ({held}): the "
                f"study's evidence for the references' own model and for one they do not contain, together — {sizes}")
    signs = {(v["ci95"][0] > 0) - (v["ci95"][1] < 0) for v in b.values()}
    direction = signs.pop() if len(signs) == 1 else 0
    return {"system": name, "protocol": protocol, "family": family, "label": UNSEEN_FAMILIES[family],
            "direction": direction,
            "collections": {c: {**v, "significant": v["ci95"][0] > 0 or v["ci95"][1] < 0} for c, v in b.items()},
            "advice": "", "measured": what, "flag": any(abs(v["bias"]) > BIAS_CAUTION for v in b.values()),
            "text": f"{name} ({UNSEEN_FAMILIES[family]}): {what}"}


def bias_flags(notes: list[dict[str, Any]], systems: list[str]) -> list[dict[str, Any]]:
    """The bias notes of ``systems`` (say, a headline's best group), one flag per family, in the
    order of the systems: which systems, the family, the direction and size the study measured on
    each collection (the verdict's own kind of collection first), and a clause for a sentence."""
    mine = {n["system"]: n for n in notes if n.get("flag", True)}
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
