"""A system's family: what it does (its algorithm and, for a fusion, its inputs), not its name.

The validation study measures NT's bias per family (:mod:`nteval.evidence`), the high-recall
references are balanced across families (:func:`nteval.protocols.highrecall.reference_families`)
and the gate cautions across them (:mod:`nteval.gate.families`): one classification for all three,
which applies to any system of a run, not only the study's.
"""
from __future__ import annotations

from typing import Any

from . import registry

#: Families of systems (what the study measures biases for), in the order notes are given.
FAMILIES: dict[str, str] = {
    "expansion": "query expansion (pseudo-relevance feedback: RM3, Rocchio)",
    "neural": "neural retrieval (a transformer encoder: all-MiniLM-L6-v2, sentence-transformers models)",
    "hybrid": "sparse + neural hybrid (fusion with a neural input)",
    "dense": "static embeddings (wordllama: averaged token vectors)",
    "static_hybrid": "sparse + static-embedding hybrid (fusion with a wordllama input)",
    "fusion": "fusion of lexical systems",
    "reduction": "query reduction (a few of the query's words: disjunctive, conj_disj, and_then)",
    "proximity": "term proximity",
    "bm25": "BM25",
    "qld": "query likelihood (Dirichlet)",
}


def _kind(algorithm: Any) -> Any:
    """The registered kind of a results.json algorithm name (None for one this version lacks)."""
    return registry.get(algorithm) if isinstance(algorithm, str) and registry.known(algorithm) else None


def uses(name: str, configs: dict[str, dict[str, Any]], families: set[str], seen: frozenset = frozenset()) -> bool:
    """``name`` is, or fuses (however deep), a system of one of ``families`` (keys of
    :data:`FAMILIES`; ``configs``: results.json's ``system_configs``)."""
    c = configs.get(name)
    if c is None or name in seen:
        return False
    kind = _kind(c.get("algorithm"))
    if kind is None:
        return False
    if kind.family in families:
        return True
    return kind.fusion and any(uses(x, configs, families, seen | {name})
                               for x in (c.get("params") or {}).get("systems", []))


def _own_family(c: dict[str, Any]) -> str | None:
    """The family of one system that is not a fusion: its kind's (:meth:`SystemKind.family_of`), or
    the one it declares (``params["family"]``, for systems nteval does not compute)."""
    declared = (c.get("params") or {}).get("family")
    if declared in FAMILIES:
        return declared
    kind = _kind(c.get("algorithm"))
    return kind.family_of(c.get("params") or {}) if kind is not None else None


def families(configs: dict[str, dict[str, Any]]) -> dict[str, str | None]:
    """Each system's family (a key of :data:`FAMILIES`), from ``{name: {"algorithm", "params"}}``
    (results.json's ``system_configs``). A dense system is ``neural`` (a transformer encoder) or
    ``dense`` (wordllama's static embeddings); a fusion with a neural input, however deep, is
    ``hybrid``, one with a static-embedding input ``static_hybrid``, any other ``fusion``. An input
    fused with weight 0 is no part of the fusion; an input of no known family (an external run that
    declares none) makes the fusion's family unknown too (None). External systems have none, unless
    they declare ``params["family"]``."""
    out: dict[str, str | None] = {}
    for name, c in configs.items():
        kind = _kind(c.get("algorithm"))
        if kind is not None and kind.fusion:
            out[name] = _fusion_family(name, configs)
        else:
            out[name] = _own_family(c)
    return out


#: the families of systems that rank by embeddings (what makes a fusion a hybrid)
EMBEDDING_FAMILIES = frozenset({"neural", "hybrid", "dense", "static_hybrid"})


def weighted_inputs(c: dict[str, Any]) -> list[str]:
    """The systems a fusion's config fuses with a non-zero weight (``linear``'s ``weights``; every
    input of a fusion without weights)."""
    params = c.get("params") or {}
    names = list(params.get("systems") or [])
    weights = params.get("weights") or []
    if len(weights) != len(names):
        return names
    return [n for n, w in zip(names, weights) if isinstance(w, (int, float)) and w != 0]


def _input_families(name: str, configs: dict[str, dict[str, Any]], seen: frozenset = frozenset()) -> set[str | None]:
    """The families of what a fusion fuses with a non-zero weight, however deep (None: an input of
    no known family)."""
    found: set[str | None] = set()
    for x in weighted_inputs(configs.get(name) or {}):
        c = configs.get(x)
        if x in seen:
            continue
        if c is None:
            found.add(None)
            continue
        kind = _kind(c.get("algorithm"))
        if kind is not None and kind.fusion:
            fam = _fusion_family(x, configs, seen | {name})
            found.add(fam)
        else:
            found.add(_own_family(c))
    return found


def _fusion_family(name: str, configs: dict[str, dict[str, Any]], seen: frozenset = frozenset()) -> str | None:
    """A fusion's family from what it fuses (``hybrid`` with a neural input, ``static_hybrid`` with a
    static-embedding one, else ``fusion``); a fusion of one input (after the inputs of weight 0 are
    dropped) ranks as that input does and has its family (hostile K3: a one-input ``linear`` of a
    regressed BM25 was a "fusion of lexical systems" and its loss within that family's allowance);
    where an input has no known family, the fusion's own declaration (``params.family``) or None. A
    declaration never replaces what the inputs make it (hostile T3: a declaration bought a
    within-family gate)."""
    one = sorted(set(weighted_inputs(configs.get(name) or {})) - seen)
    if len(one) == 1 and one[0] in configs:
        c = configs[one[0]]
        kind = _kind(c.get("algorithm"))
        return _fusion_family(one[0], configs, seen | {name}) if kind is not None and kind.fusion else _own_family(c)
    inputs = _input_families(name, configs, seen)
    if None in inputs:
        declared_family = (configs.get(name, {}).get("params") or {}).get("family")
        return declared_family if declared_family in FAMILIES else None
    return ("hybrid" if "neural" in inputs or "hybrid" in inputs
            else "static_hybrid" if "dense" in inputs or "static_hybrid" in inputs else "fusion")


def declared(name: str, configs: dict[str, dict[str, Any]], seen: frozenset = frozenset()) -> bool:
    """Whether ``name``'s family comes, in part, from a declaration (``params["family"]`` on it or on
    any system it fuses): what a system says of itself, not what nteval computes."""
    c = configs.get(name)
    if c is None or name in seen:
        return False
    if (c.get("params") or {}).get("family") in FAMILIES:
        return True
    kind = _kind(c.get("algorithm"))
    return bool(kind is not None and kind.fusion and any(declared(x, configs, seen | {name})
                                                         for x in weighted_inputs(c)))


# -- a neural system against the references that judged it --------------------------------------------

#: A neural system or hybrid judged by references whose neural share does not hold its encoder
#: (``…_unseen``), or whose encoder nteval cannot name (``…_unknown``: an external system, which
#: may or may not be the references' own model). The validation study measures the references' own
#: model; the leave-model-out study (:func:`nteval.evidence.unseen_study`) the others. Not families
#: a system may declare: what nteval finds when it sets the system against a pin's references.
UNSEEN_FAMILIES: dict[str, str] = {
    "neural_unseen": "neural retrieval with an encoder the references do not contain",
    "hybrid_unseen": "sparse + neural hybrid with an encoder the references do not contain",
    "neural_unknown": "neural retrieval with an encoder nteval cannot name (it may be the references' own)",
    "hybrid_unknown": "sparse + neural hybrid with an encoder nteval cannot name (it may be the references' own)",
}


def encoders(name: str, configs: dict[str, dict[str, Any]], seen: frozenset = frozenset()) -> set[str | None]:
    """The transformer encoders ``name`` ranks with, however deep it fuses them: a neural dense
    system's model (:func:`nteval.encoders.models.model_identity`: ``minilm``, ``e5``, or a local
    model by its weights); None for a neural system nteval does not compute (a run file, an engine),
    whose model it cannot name."""
    c = configs.get(name)
    if c is None or name in seen:
        return set()
    kind = _kind(c.get("algorithm"))
    if kind is not None and kind.fusion:
        out: set[str | None] = set()
        for x in weighted_inputs(c):
            out |= encoders(x, configs, seen | {name})
        return out
    if _own_family(c) != "neural":
        return set()
    model = (c.get("params") or {}).get("model") if kind is not None and kind.computed else None
    if not model:
        return {None}
    from ..encoders.models import model_identity  # (a local directory holding MiniLM's own weights is MiniLM)

    return {model_identity(str(model))}


def against_references(fam: dict[str, str | None], configs: dict[str, dict[str, Any]],
                       references: frozenset[str] | None) -> dict[str, str | None]:
    """``fam`` (:func:`families`) with each neural system and hybrid whose encoder the references
    (``references``: their encoders' models, None when no neural model judged) do not contain
    marked ``…_unseen``, and one whose encoder nteval cannot name ``…_unknown``
    (:data:`UNSEEN_FAMILIES`). Without a neural reference nothing changes: the lexical references'
    own study measured every neural system as one they do not contain."""
    if not references:
        return dict(fam)
    out = dict(fam)
    for name, f in fam.items():
        if f not in ("neural", "hybrid"):
            continue
        encs = encoders(name, configs)
        if None in encs:
            out[name] = f"{f}_unknown"
        elif encs and not encs <= references:
            out[name] = f"{f}_unseen"
    return out
