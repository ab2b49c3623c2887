"""High-recall NT (Campagne 2008): a reference system S_ref searches ``all`` with each sampled
document's title; its hits z-scored per query with z ≥ ZT are pseudo-relevant; the query is the
n-th sentence of the abstract, run over ``nt``. Several S_refs are fused (a vote by default)."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import write_text
from ..corpus.store import FILENAME as STORE
from ..corpus.store import DocStore, known_docids
from ..encoders.models import SHIPPED_MODELS, cuda_available, missing_modules
from ..errors import InputError
from ..formats.trec import write_qrels, write_topics
from ..index import read_manifest
from ..runs import Searched, index_folds, run_all
from ..settings import Execution
from ..systems.base import System, load_systems, make_system
from ..systems.families import families
from ..systems.pooled import lexical_pools, pooled_run
from ..systems.sets import builtin_systems, find_named_system, suggest_system
from ..topics.focused import focused_topics
from ..topics.highrecall import (
    COMBINE,
    JUDGED_POLICIES,
    STD_KINDS,
    balanced_pseudo_qrels,
    fused_pseudo_qrels,
    pseudo_relevant_stats,
    sentence_query,
)
from ..topics.ids import highrecall_id
from .base import Protocol, TopicSet, VerdictSpec, param
from .focused import DocumentSampleSpec, sample_documents, sample_record

#: The reference systems a high-recall run fuses by default, and the paper's single one.
REFERENCE_SYSTEMS: dict[str, tuple[str, dict[str, Any]]] = {
    "bm25": ("bm25", {}),                                  # Anserini's BM25 (k1 0.9, b 0.4): the paper's S_ref
    "bm25_k1.2_b0.75": ("bm25", {"k1": 1.2, "b": 0.75}),   # the textbook BM25
    "qld_mu1000": ("qld", {"mu": 1000}),                   # a language model, Dirichlet smoothing
    "minilm": ("dense", {"model": "minilm"}),              # all-MiniLM-L6-v2, torch fp32, 256 word pieces
    # the same model encoding as the study scripts/reference_encoding_study.py chose (ONNX Runtime,
    # int8 weights, each text cut to 128 word pieces): 3.4 times fewer CPU-seconds per PubMed
    # abstract, the same verdicts within 0.01 of τ and one place of every neural model
    "minilm_int8_128": ("dense", {"model": "minilm", "backend": "onnx-int8", "max_tokens": 128}),
}
#: The lexical references (voting on z ≥ ZT), and the neural one given an equal share beside them
#: (:func:`nteval.topics.highrecall.balanced_pseudo_qrels`) when the neural extra is installed.
LEXICAL_SREFS: tuple[str, ...] = ("bm25", "bm25_k1.2_b0.75", "qld_mu1000")
NEURAL_SREFS: tuple[str, ...] = ("minilm_int8_128",)
#: The neural reference where ONNX Runtime is missing or torch sees a GPU, and of the pins made before
#: the int8 one: the model as torch runs it, as fair, 3.4 times slower on a CPU (docs/verdicts.md)
NEURAL_SREFS_TORCH: tuple[str, ...] = ("minilm",)
PAPER_SREFS: tuple[str, ...] = ("bm25",)
#: How deep in the lexical references' rankings a neural reference looks for its share (0: it
#: searches the whole collection): chosen by scripts/unseen_encoders_study.py's rule (docs/verdicts.md).
DEFAULT_POOL = 0
#: How many documents each non-lexical family of references adds per topic, as a multiple of the
#: lexical vote's (1: equal shares). scripts/loco_fairness_study.py measures 1, 2 and 3 on four
#: judged collections, leaving one out at a time (docs/verdicts.md, "Fair across collections").
DEFAULT_SHARE = 1.0
#: Families of systems whose references vote together on z ≥ ZT (the lexical share).
LEXICAL_FAMILIES = frozenset({"bm25", "qld", "proximity", "reduction", "fusion"})


def default_srefs() -> tuple[str, ...]:
    """The references a high-recall run uses when none is named: the lexical vote and the neural
    reference (equal shares), or the lexical vote alone where the neural extra is not installed
    (every output then says that neural and hybrid systems are judged by lexical references only)."""
    return LEXICAL_SREFS if SHIPPED_MODELS["minilm"].missing() else LEXICAL_SREFS + neural_srefs()


def neural_srefs() -> tuple[str, ...]:
    """The neural reference this install judges with: :data:`NEURAL_SREFS`, or torch's
    (:data:`NEURAL_SREFS_TORCH`) where ONNX Runtime is missing or torch sees a GPU (it encodes
    there, faster than int8 on the CPU; both judge alike: docs/verdicts.md). A pin records which."""
    missing = missing_modules("onnxruntime", "onnx")
    gpu = not missing and cuda_available()
    if missing or gpu:
        if not _SAID_TORCH:  # (hostile K10: the 3.4-times-slower torch reference stood in without a word)
            _SAID_TORCH.append(1)
            why = (f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed" if missing
                   else "torch sees a GPU")
            print(f"note: the neural reference is torch's all-MiniLM-L6-v2 ({', '.join(NEURAL_SREFS_TORCH)}), not "
                  f"{', '.join(NEURAL_SREFS)}: {why}"
                  + ("; on a CPU it encodes about 3.4 times slower (make install-neural installs ONNX Runtime)"
                     if missing else ""), file=sys.stderr)
        return NEURAL_SREFS_TORCH
    return NEURAL_SREFS


_SAID_TORCH: list[int] = []


#: (kept for callers of the old name: the references when the neural extra is installed)
DEFAULT_SREFS: tuple[str, ...] = LEXICAL_SREFS + NEURAL_SREFS


def reference_systems(names: tuple[str, ...]) -> list[System]:
    return [make_system(n, *REFERENCE_SYSTEMS[n]) for n in names]


def reference_families(refs: list[System]) -> dict[str, list[System]]:
    """The references grouped by family, the lexical ones first (``lexical``; the others by their
    family: ``neural``, ``dense``, ``expansion``…). Only a run with references of several families
    is balanced; references of one family are fused as before (:func:`fused_pseudo_qrels`)."""
    fam = families({r.name: {"algorithm": r.algorithm, "params": r.params} for r in refs})
    groups: dict[str, list[System]] = {}
    for r in refs:
        f = fam.get(r.name)
        groups.setdefault("lexical" if f in LEXICAL_FAMILIES or f is None else str(f), []).append(r)
    return dict(sorted(groups.items(), key=lambda kv: kv[0] != "lexical"))


def resolve_sref(sref: str | Path | System | None, systems_path: Path | None = None) -> System:
    """S_ref: BM25 (k1 0.9, b 0.4) when None; a YAML file holding one system; or a system name
    looked up in the systems file in use, then in the shipped sets."""
    if isinstance(sref, System):
        return sref
    if sref is None:
        return make_system("bm25", "bm25")
    p = Path(str(sref))
    if p.suffix in (".yaml", ".yml") or p.is_file():
        found = load_systems(p)
        if len(found) != 1:
            raise InputError(p, f"an S_ref file must declare exactly one system, found {len(found)}")
        return found[0]
    if str(sref) in REFERENCE_SYSTEMS and (systems_path is None or find_named_system(str(sref), [systems_path]) is None):
        return reference_systems((str(sref),))[0]
    files = [systems_path, builtin_systems("table1"), builtin_systems("default"), builtin_systems("wide_dense")]
    named = find_named_system(str(sref), files)
    if named is not None:
        return named[0]

    raise InputError(None, f"--sref {sref!r}{suggest_system(str(sref), files)}: no such system in {systems_path or 'the systems file'} or the shipped sets "
                           "(give a name from them or a YAML file with one system)")


def _check_highrecall(k: int, judged: str, std: str, sentence: int) -> None:
    if judged not in JUDGED_POLICIES:
        raise InputError(None, f"--judged must be one of {', '.join(JUDGED_POLICIES)}")
    if std not in STD_KINDS:
        raise InputError(None, f"--std must be one of {', '.join(STD_KINDS)}")
    if sentence < 1 or k < 2:
        raise InputError(None, "--sentence must be ≥ 1 and --k ≥ 2")


#: Named high-recall settings. ``paper``: Campagne 2008 as published (one BM25 S_ref, binary
#: pseudo-qrels, relevant-only judgments, the source document left in the searched index).
HIGHRECALL_PRESETS: dict[str, dict[str, Any]] = {
    "paper": {"sref": PAPER_SREFS, "combine": "vote", "graded": False, "holdout": False, "judged": "relevant-only"},
    # nteval 0.1's default before the neural reference: the lexical vote alone
    "lexical": {"sref": LEXICAL_SREFS, "combine": "vote", "graded": False, "holdout": False, "judged": "topk-nonrelevant"},
    # the default where the neural extra is installed, asked for by name (refused in one line without it)
    "balanced": {"sref": LEXICAL_SREFS + NEURAL_SREFS, "combine": "vote", "graded": False, "holdout": False,
                 "judged": "topk-nonrelevant"},
}


def apply_preset(name: str) -> tuple[list[System], str, bool, bool, str]:
    """(S_refs, combine, graded, holdout, judged) of a named high-recall setting."""
    if name not in HIGHRECALL_PRESETS:
        raise InputError(None, f"--preset must be one of {', '.join(HIGHRECALL_PRESETS)}")
    p = HIGHRECALL_PRESETS[name]
    return reference_systems(p["sref"]), p["combine"], p["graded"], p["holdout"], p["judged"]


def highrecall_topics(index_dir: Path, ids: list[str], refs: list[System], out: Path, spec: HighRecallSpec,
                      progress: bool | None = None
                      ) -> tuple[dict[str, str], dict, dict[str, Any], dict[str, str], dict[str, str]]:
    """Queries (n-th sentences) of the kept topics, pseudo-qrels, their statistics, the sentence
    of every sampled doc that has one (runs over those are shared across S_refs), and each topic's
    source document. Topic ids are ``DOCID-sN`` (:func:`nteval.topics.ids.highrecall_id`): a
    high-recall run can never pass for a focused one, whose ids are the docids.

    ``spec`` gives k, ZT, the sentence, the judged policy and the rest. Several S_refs are fused
    (``spec.combine``: vote or mean z, see :func:`nteval.topics.highrecall.fused_pseudo_qrels`);
    ``spec.graded`` gives grade 2 to z ≥ ZT + 1; ``spec.holdout``: each topic will be searched with its source document (and its fold-mates) held
    out of the index, so they leave its qrels too (``stats["holdout_folds"]``).

    Writes OUT/titles.tsv, OUT/sref/ (S_ref's cached run over ``all``), OUT/topics.tsv,
    OUT/qrels.txt and OUT/pseudo_relevant_counts.tsv."""
    spec.validate()
    k, zt, sentence, judged, std = spec.k, spec.zt, spec.sentence, spec.judged, spec.std
    fallback, combine, graded, holdout = spec.fallback, spec.combine, spec.graded, spec.holdout
    manifest = read_manifest(index_dir)
    store = DocStore(index_dir / STORE)
    try:
        titles, _ = focused_topics(store, ids)
        sentences: dict[str, str] = {}
        for d in ids:
            doc = store.get(d)
            assert doc is not None  # (ids come from the same store)
            q = sentence_query(doc["sentences"], sentence, fallback)
            if q is not None:
                sentences[d] = q
    finally:
        store.close()
    out.mkdir(parents=True, exist_ok=True)
    write_topics(out / "titles.tsv", titles)
    # S_ref sees the titles: it searches `all` with the title only (never the sentence)
    groups = reference_families(refs)
    sref_runs, pooled = reference_runs(index_dir, manifest, titles, groups, out, spec, progress)
    qrels_all, outside = judgeable(index_dir, manifest, references_qrels(groups, sref_runs, spec))
    folds: list[list[str]] = []
    if holdout:
        folds = index_folds(index_dir, "nt", list(sentences))
        held = {q: set(f) for f in folds for q in f}
        kept = {q: {d: r for d, r in v.items() if d not in held[q]} for q, v in qrels_all.items() if q in held}
        qrels_all = {q: v for q, v in kept.items() if any(r > 0 for r in v.values())}
    # (S_ref's titles are keyed by docid, so its cached runs serve any sentence; the topics by their own ids)
    qid = {d: highrecall_id(d, sentence) for d in sentences}
    qrels = {qid[d]: qrels_all[d] for d in ids if d in qrels_all and d in sentences}
    if not qrels:
        raise InputError(index_dir, "no topic kept: no S_ref hit reached the Z threshold (or no abstract has the sentence)")
    sources = {q: d for d, q in qid.items()}
    topics = {q: sentences[sources[q]] for q in qrels}
    write_topics(out / "topics.tsv", topics)
    write_qrels(out / "qrels.txt", qrels)
    sizes = [sum(1 for r in v.values() if r > 0) for v in qrels.values()]
    write_text(out / "pseudo_relevant_counts.tsv",
               "qid\tpseudo_relevant\n" + "".join(f"{q}\t{n}\n" for q, n in zip(qrels, sizes)))
    record = references_record(refs, groups, combine)
    if record["balance"] and spec.share != 1.0:   # (a pin made before shares could differ records none: 1)
        record["share"] = spec.share
    if pooled:
        record["pool"] = pooled
    stats = {
        "sref": record,
        "k": k, "zt": zt, "std": std, "judged": judged, "sentence": sentence, "sentence_fallback": fallback,
        "graded": graded, "holdout": holdout,
        "judged_outside_nt": outside,
        "dropped": {"no_sentence": len(ids) - len(sentences),
                    "no_pseudo_relevant": sum(1 for q in ids if q in sentences and q not in qrels_all)},
        "pseudo_relevant_per_topic": pseudo_relevant_stats(qrels),
    }
    if holdout:
        stats["holdout_folds"] = {"folds": len(folds), "max_fold": max(len(f) for f in folds)}
    return topics, qrels, stats, {qid[d]: s for d, s in sentences.items()}, sources


class _Runs(dict):
    """Reference runs by name (what :func:`references_qrels` reads)."""

    def several(self, names: list[str]) -> list[Any]:
        return [self[n] for n in names]


def reference_runs(index_dir: Path, manifest: dict[str, Any], titles: dict[str, str], groups: dict[str, list[System]],
                   out: Path, spec: HighRecallSpec, progress: bool | None) -> tuple[_Runs, dict[str, Any] | None]:
    """Every reference's run of the titles over ``all``. With ``spec.pool`` (> 0) and lexical
    references beside them, a dense reference re-ranks the union of the lexical references' top
    ``pool`` per title instead of searching the whole collection (:mod:`nteval.systems.pooled`: its
    cost grows with the topics, not the corpus); returns the runs and, then, what the pool was."""
    pooled_refs = [r for f, g in groups.items() if f != "lexical" for r in g if r.algorithm == "dense"] \
        if spec.pool and "lexical" in groups else []
    searched = [r for g in groups.values() for r in g if r not in pooled_refs]
    runs, _ = run_all(Searched(index_dir, "all", manifest["fingerprint"]), titles, searched, out / "sref", spec.k,
                      Execution(progress=progress, scheduler=spec_scheduler()))
    got = _Runs({r.name: runs[r.name] for r in searched})
    if not pooled_refs:
        return got, None
    pools = lexical_pools(got.several([r.name for r in groups["lexical"]]), spec.pool)
    notes: dict[str, Any] = {"depth": spec.pool, "of": [r.name for r in groups["lexical"]],
                             "documents": len({d for p in pools.values() for d in p})}
    for r in pooled_refs:
        got[r.name], n = pooled_run(r, index_dir, titles, pools, spec.k, mapper=dask_mapper(), progress=progress)
        notes.setdefault("encoded_now", {})[r.name] = n["encoded_now"]
        notes.setdefault("encoded_by", {})[r.name] = {"model": n["model"], "device": n["device"]}
    return got, notes


def spec_scheduler() -> str | None:
    """The Dask scheduler the references' work goes to: the pipeline's ``--scheduler`` session (none
    when no session was opened: nteval.cluster, which loads Dask, is then not even imported)."""
    import sys

    cluster = sys.modules.get("nteval.cluster")
    return cluster.current() if cluster is not None else None


def dask_mapper(scheduler: str | None = None) -> Any:
    """Chunks of encoding as tasks on the Dask session's workers (results in order), or None
    without a session: the pooled reference then encodes here."""
    from ..cluster import RETRIES, result_of, session

    address = scheduler or spec_scheduler()
    if not address:
        return None

    def mapper(fn: Any, args: list[tuple]) -> Any:
        with session(address) as client:
            futures = [client.submit(fn, *a, pure=False, retries=RETRIES) for a in args]
            for a, f in zip(args, futures):
                yield result_of(f, f"encoding {len(a[-1])} documents")

    return mapper


def references_qrels(groups: dict[str, list[System]], sref_runs: Any, spec: HighRecallSpec) -> dict[str, dict[str, int]]:
    """The pseudo-qrels (by source document) of the references' runs: the lexical vote with every
    other family's equal share beside it (:func:`nteval.topics.highrecall.balanced_pseudo_qrels`),
    or the fusion of one family's references (:func:`nteval.topics.highrecall.fused_pseudo_qrels`)."""
    kw: dict[str, Any] = dict(k=spec.k, zt=spec.zt, std=spec.std, judged=spec.judged, combine=spec.combine,
                              graded=spec.graded)
    if len(groups) > 1 and "lexical" in groups:
        return balanced_pseudo_qrels(sref_runs.several([r.name for r in groups["lexical"]]),
                                     [sref_runs.several([r.name for r in g]) for f, g in groups.items() if f != "lexical"],
                                     share=spec.share, **kw)
    return fused_pseudo_qrels(sref_runs.several([r.name for g in groups.values() for r in g]), **kw)


def references_record(refs: list[System], groups: dict[str, list[System]], combine: str) -> dict[str, Any]:
    """results.json's ``sref``: the references, their families and how they were combined."""
    first = refs[0]
    return {"name": "+".join(r.name for r in refs), "algorithm": first.algorithm if len(refs) == 1 else "fused",
            "params": first.params if len(refs) == 1 else {r.name: {"algorithm": r.algorithm, "params": r.params}
                                                           for r in refs},
            "index": "all", "query": "title", "combine": combine if len(refs) > 1 else None,
            "families": {f: [r.name for r in g] for f, g in groups.items()},
            "balance": "equal shares" if len(groups) > 1 and "lexical" in groups else None}


def judgeable(index_dir: Path, manifest: dict[str, Any], qrels: dict[str, dict[str, int]]
              ) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """The pseudo-qrels restricted to documents of ``nt``, the index the systems search, and how
    many judgments went. S_ref judges over ``all`` (the whole collection as a searcher sees it, with
    titles: its z-scores are over its own top k there); a record without an abstract is not in
    ``nt``, so no system can retrieve it and a judgment of it would only lower every system's
    recall alike. Topics left without a pseudo-relevant document are dropped by the caller."""
    if manifest["indexes"]["nt"]["documents"] == manifest["indexes"]["all"]["documents"]:
        return qrels, {"pseudo_relevant": 0, "nonrelevant": 0}

    inside = known_docids(index_dir, {d for v in qrels.values() for d in v}, "nt")
    gone = {"pseudo_relevant": 0, "nonrelevant": 0}
    kept: dict[str, dict[str, int]] = {}
    for q, v in qrels.items():
        for d, r in v.items():
            if d not in inside:
                gone["pseudo_relevant" if r > 0 else "nonrelevant"] += 1
        keep = {d: r for d, r in v.items() if d in inside}
        if any(r > 0 for r in keep.values()):
            kept[q] = keep
    return kept, gone


def resolve_srefs(sref: str | Path | list | tuple | None, systems_path: Path | None = None) -> list[System]:
    """One or several S_refs (several are fused); None or [] = :func:`default_srefs`."""
    if sref is None or (isinstance(sref, (list, tuple)) and not sref):
        return reference_systems(default_srefs())
    if isinstance(sref, (list, tuple)):
        return [resolve_sref(s, systems_path) for s in sref]
    return [resolve_sref(sref, systems_path)]



@dataclass(frozen=True)
class HighRecallSpec(DocumentSampleSpec):
    sref: tuple[str, ...] = param((), "reference system(s): names from the system sets, or YAML files with one system; "
                                      "several are fused (combine), several families balanced (equal shares); default: "
                                      f"the vote of {', '.join(LEXICAL_SREFS)} and, with the neural extra, "
                                      f"{', '.join(NEURAL_SREFS)} (all-MiniLM-L6-v2) with an equal share")
    k: int = param(1000, "S_ref hits z-scored per title", min=2)
    zt: float = param(2.0, "Z threshold: hits with z ≥ zt are pseudo-relevant")
    sentence: int = param(3, "which abstract sentence is the query (1-based)", min=1)
    judged: str = param("topk-nonrelevant", "S_ref's other top-k hits judged non-relevant, or relevant-only",
                        choices=JUDGED_POLICIES)
    std: str = param("population", "standard deviation of the z-scores", choices=tuple(STD_KINDS))
    fallback: str = param("skip", "abstracts with fewer sentences: skip the topic, or use the last sentence",
                          choices=("skip", "last"))
    combine: str = param("vote", "several S_refs: majority vote of z ≥ zt, or mean z", choices=COMBINE)
    graded: bool = param(False, "graded pseudo-qrels: relevance 2 where z ≥ zt + 1 (for nDCG), else 1",
                         flag="--graded/--binary")
    holdout: bool = param(False, "search each topic with its source document held out of the index (no feedback leak)",
                          flag="--holdout/--no-holdout")
    pool: int = param(DEFAULT_POOL, "a neural reference re-ranks the union of the lexical references' top POOL for each title "
                           "instead of encoding the whole collection (0: it searches the whole collection)", min=0)
    share: float = param(DEFAULT_SHARE, "with references of several families: each non-lexical family adds SHARE times "
                                        "as many pseudo-relevant documents per topic as the lexical vote (1: equal "
                                        "shares)", min=0.1, max=10.0)
    preset: str | None = param(None, "paper: Campagne 2008 as published; lexical: the lexical vote alone; balanced: "
                                     "the lexical vote and all-MiniLM-L6-v2, equal shares (each overrides sref, "
                                     "combine, graded, holdout, judged)", choices=tuple(HIGHRECALL_PRESETS))

    def __post_init__(self) -> None:
        if self.preset is not None and self.preset in HIGHRECALL_PRESETS:
            p = HIGHRECALL_PRESETS[self.preset]
            for key in ("sref", "combine", "graded", "holdout", "judged"):
                object.__setattr__(self, key, tuple(p[key]) if key == "sref" else p[key])
            if self.preset == "balanced":   # (the default's neural reference, as this install judges with it)
                object.__setattr__(self, "sref", LEXICAL_SREFS + neural_srefs())
        # None, one S_ref or a list of them: always a tuple (empty = the default vote)
        sref = () if self.sref is None else (self.sref,) if isinstance(self.sref, (str, Path, System)) else self.sref
        object.__setattr__(self, "sref", tuple(sref))
        super().__post_init__()

    def validate(self) -> None:
        _check_highrecall(self.k, self.judged, self.std, self.sentence)  # the messages the CLI has always given
        if self.combine not in COMBINE:
            raise InputError(None, f"--combine must be one of {', '.join(COMBINE)}")
        super().validate()


class HighRecall(Protocol[HighRecallSpec]):
    name = "highrecall"
    Spec = HighRecallSpec
    searches = "nt"
    in_demo = True
    measures = ("AP", "Bpref", "P@10", "nDCG@10", "R@1000")
    verdict = VerdictSpec(
        "highrecall", "AP",
        "topical, recall-oriented search: rank everything on the topic of a sentence high (ad hoc, reviews)",
        "human judgments on collections with many relevant documents per query (CISI; the figures: results.json "
        "evidence, nteval's validation study)")
    summary = ("query: the n-th abstract sentence of a sampled document; relevant: S_ref's hits for its title "
               "over all with z ≥ ZT; systems search nt")
    grid_measures = ("AP", "Bpref")
    correlate_pairs = (("AP", "AP"), ("Bpref", "Bpref"), ("nDCG@10", "nDCG@10"))

    def build(self, index_dir: Path, spec: HighRecallSpec, out: Path, progress: bool | None = None,
              systems_path: Path | None = None) -> TopicSet:
        ids, n_eligible = sample_documents(index_dir, spec)
        refs = resolve_srefs(spec.sref, systems_path)
        topics, qrels, stats, sentences, sources = highrecall_topics(Path(index_dir), ids, refs, Path(out), spec,
                                                                     progress)
        if not spec.sref and not {r.name for r in refs} & {*NEURAL_SREFS, *NEURAL_SREFS_TORCH}:
            stats["sref"]["neural_reference"] = NEURAL_MISSING
        return TopicSet(topics, qrels, {"requested": spec.n_topics, "eligible": n_eligible, "used": len(qrels)},
                        stats={**sample_record(spec, n_eligible), **stats}, run_topics=sentences,
                        holdout=spec.holdout, sources=sources)

    def report_lines(self, results: dict[str, Any]) -> list[str]:
        return [highrecall_summary(results)]


def asked(res: dict[str, Any]) -> str:
    """How many topics were asked for: a count, or with ``--topics auto`` how many documents its batches sampled."""
    n = res["topics_requested"]
    if n == "auto":
        return f"{(res.get('topic_counts') or {}).get('sampled', res['n_topics']):,} sampled by --topics auto"
    return f"{n:,} requested"


#: Said where the default references lack the neural one (the neural extra is not installed).
NEURAL_MISSING = ("the neural extra is not installed, so the lexical references alone judged relevance: they "
                  "understate neural and hybrid systems (nteval's validation study, docs/validation.md); "
                  "pip install 'nteval[neural]' adds all-MiniLM-L6-v2's equal share")


def references_text(sref: dict[str, Any]) -> str:
    """How the references judged, for a person: which families, and how they were combined."""
    fams = sref.get("families") or {}
    if sref.get("balance") and fams:
        shares = "; ".join(f"{f}: {', '.join(n)}" + (" (their z ≥ ZT vote sets each topic's count)" if f == "lexical"
                                                      else " (the same count of its best)") for f, n in fams.items())
        return f"S_ref: {len(fams)} families of references, equal shares ({shares})"
    return f"S_ref {sref['name']} ({sref['algorithm']})"


def highrecall_summary(res: dict[str, Any]) -> str:
    """The pseudo-qrels in three lines: S_ref and its settings, topics kept and dropped, pseudo-relevant per topic."""
    pr = res["pseudo_relevant_per_topic"]
    d = res["dropped"]
    hist = ", ".join(f"{k}: {v}" for k, v in pr["histogram"].items())
    missing = res["sref"].get("neural_reference")
    return "\n".join([
        f"{references_text(res['sref'])} over all/ with titles, top {res['k']}, "
        f"z ≥ {res['zt']} ({res['std']} std), judged: {res['judged']}, query = sentence {res['sentence']}"
        + (f"\nCAUTION: {missing}" if missing else ""),
        f"topics kept {res['n_topics']:,} of {asked(res)} "
        f"(dropped: {d['no_sentence']} without sentence {res['sentence']}, {d['no_pseudo_relevant']} without a pseudo-relevant hit)",
        f"pseudo-relevant per topic: min {pr['min']}, median {pr['median']}, mean {pr['mean']}, max {pr['max']}  [{hist}]",
    ])


PROTOCOL = HighRecall
