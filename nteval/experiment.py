"""The NT protocols as one declarative call each (the API behind ``nteval focused``)."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from .atomic import write_text
from .corpus.store import FILENAME as STORE
from .corpus.store import DocStore
from .errors import InputError
from .evaluate import DEFAULT_MEASURES, evaluate_run, parse_measures
from .formats.trec import write_qrels, write_topics
from .index import read_manifest
from .runs import run_all
from .systems.base import System, load_systems
from .topics.focused import focused_topics
from .topics.sample import SampleSpec, sample_ids
from .verdict import MIN_TOPICS, check_topic_floor


def builtin_systems(name: str) -> Path:
    return Path(str(resources.files("nteval") / "configs" / "systems" / f"{name}.yaml"))


def resolve_systems(spec: str | Path | None) -> tuple[Path, list[System]]:
    """A YAML path, or the name of a shipped set (``default``, ``table1``)."""
    if spec is None:
        spec = "default"
    p = Path(spec)
    if not p.exists() and builtin_systems(str(spec)).is_file():
        p = builtin_systems(str(spec))
    return p, load_systems(p)


def write_results(out: Path, protocol: str, spec: SampleSpec, measures: list[str], runs: dict, infos: list,
                  qrels: dict, extra: dict[str, Any], correction: str = "holm") -> dict[str, Any]:
    """Evaluate every run and write per-topic scores, results.tsv, results.json and results.tex
    (booktabs, for a paper), and the protocol's verdict (significance groups, reliability) in
    results.json and significance.tsv."""
    from .verdict import VERDICTS, make_verdict

    vspec = VERDICTS.get(protocol)
    evaluated = measures + ([vspec.measure] if vspec and vspec.measure not in measures else [])
    systems: dict[str, dict[str, float]] = {}
    per_all: dict[str, dict[str, dict[str, float]]] = {}
    lines = ["system\tqid\tmeasure\tvalue"]
    for info in infos:
        name = info.system.name
        means, per_topic = evaluate_run(qrels, runs[name], evaluated)
        per_all[name] = per_topic
        systems[name] = {m: round(v, 6) for m, v in means.items() if m in measures}
        for qid, vals in per_topic.items():
            for m, v in vals.items():
                if m in measures:
                    lines.append(f"{name}\t{qid}\t{m}\t{v:.6f}")
    write_text(out / "per_topic.tsv", "\n".join(lines) + "\n")
    verdict = make_verdict(protocol, per_all, correction=correction, seed=spec.seed) if vspec and per_all else None
    if verdict and verdict.get("reliability") and verdict["reliability"]["curve"]:
        from .report.plots import topics_curve

        rel = verdict["reliability"]
        topics_curve({f"{protocol} {rel['measure']}": rel["curve"]}, out / f"reliability_{rel['measure']}.png",
                     f"How many topics are enough? {protocol} protocol, {rel['systems']} systems\n"
                     f"(split-half τ, {rel['topics']} topics available)")
    if verdict and verdict["significance"]:
        sig = verdict["significance"]
        write_text(out / "significance.tsv", "system_a\tsystem_b\tmeasure\tdiff\tp\tp_adjusted\tsignificant\n" + "".join(
            f"{p['a']}\t{p['b']}\t{sig['measure']}\t{p['diff']:.6f}\t{p['p']:.6g}\t{p['p_adjusted']:.6g}\t{int(p['significant'])}\n"
            for p in sig["pairs"]))
    results = {
        "protocol": protocol, "n_topics": len(qrels), "seed": spec.seed, "measures": measures,
        "verdict": verdict,
        "topic_counts": {"requested": extra.get("topics_requested"), "eligible": extra.get("eligible_documents"),
                         "used": len(qrels)},
        "systems": systems,
        "empty_queries": {i.system.name: i.empty_queries for i in infos},
        "system_configs": {i.system.name: {"algorithm": i.system.algorithm, "params": i.system.params} for i in infos},
        "timing": {i.system.name: {"seconds": round(i.seconds, 3), "queries_per_s": i.queries_per_s, "reused": i.reused}
                   for i in infos},
        **extra,
    }
    header = "system\talgorithm\t" + "\t".join(measures) + "\tempty_queries"
    rows = [header] + [f"{i.system.name}\t{i.system.describe()}\t" + "\t".join(f"{systems[i.system.name][m]:.4f}" for m in measures)
                       + f"\t{i.empty_queries}" for i in infos]
    write_text(out / "results.tsv", "\n".join(rows) + "\n")
    write_text(out / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    from .report.text import results_latex

    write_text(out / "results.tex", results_latex(results, vspec.measure if vspec and vspec.measure in measures else None))
    return results


def _sample(index_dir: Path, n_topics: int, seed: int, filters: dict[str, Any]) -> tuple[SampleSpec, list[str], int]:
    spec = SampleSpec(n=n_topics, seed=seed, **filters)
    ids, n_eligible = sample_ids(index_dir, spec)
    if not ids:
        raise InputError(index_dir, "no document passes the topic filters (title/abstract/sentence/language/year)")
    return spec, ids, n_eligible


FOCUSED_MEASURES = ("RR", "Success@1", "Success@10", "nDCG@10", "R@1000")


def run_focused(index_dir: str | Path, out: str | Path, n_topics: int = 1000, seed: int = 42,
                systems: str | Path | None = None, depth: int = 1000, measures: list[str] | None = None,
                progress: bool = True, min_topics: int = MIN_TOPICS, correction: str = "holm",
                **filters: Any) -> dict[str, Any]:
    """Focused NT protocol: sample D0, titles → queries over ``nt``, each doc its own relevant.
    Fails (InputError) when fewer than ``min_topics`` documents can become topics."""
    index_dir, out = Path(index_dir), Path(out)
    manifest = read_manifest(index_dir)
    measures = [str(m) for m in parse_measures(measures or list(FOCUSED_MEASURES))]
    systems_path, system_list = resolve_systems(systems)
    spec, ids, n_eligible = _sample(index_dir, n_topics, seed, filters)
    check_topic_floor("focused", len(ids), n_topics, n_eligible, min_topics, index_dir)
    store = DocStore(index_dir / STORE)
    try:
        topics, qrels = focused_topics(store, ids)
    finally:
        store.close()
    out.mkdir(parents=True, exist_ok=True)
    write_topics(out / "topics.tsv", topics)
    write_qrels(out / "qrels.txt", qrels)
    runs, infos = run_all(index_dir, "nt", manifest["fingerprint"], topics, system_list, out / "runs", depth=depth,
                          progress=progress)
    extra = {"index": str(index_dir), "index_fingerprint": manifest["fingerprint"], "systems_file": str(systems_path),
             "depth": depth, "sample": spec.as_dict(), "eligible_documents": n_eligible,
             "topics_requested": n_topics}
    return write_results(out, "focused", spec, measures, runs, infos, qrels, extra, correction=correction)


HIGHRECALL_MEASURES = ("AP", "Bpref", "P@10", "nDCG@10", "R@1000")


def find_named_system(name: str, files: list[Path | None]) -> tuple[System, Path] | None:
    """The first system called ``name`` in the given systems files (missing ones skipped), and its file."""
    for path in files:
        if path is not None and Path(path).is_file():
            for s in load_systems(path):
                if s.name == name:
                    return s, Path(path)
    return None


#: The reference systems a high-recall run fuses by default, and the paper's single one.
REFERENCE_SYSTEMS = {
    "bm25": ("bm25", {}),                                  # Anserini's BM25 (k1 0.9, b 0.4): the paper's S_ref
    "bm25_k1.2_b0.75": ("bm25", {"k1": 1.2, "b": 0.75}),   # the textbook BM25
    "qld_mu1000": ("qld", {"mu": 1000}),                   # a language model, Dirichlet smoothing
}
DEFAULT_SREFS: tuple[str, ...] = ("bm25", "bm25_k1.2_b0.75", "qld_mu1000")
PAPER_SREFS: tuple[str, ...] = ("bm25",)


def reference_systems(names: tuple[str, ...]) -> list[System]:
    from .systems.base import make_system

    return [make_system(n, *REFERENCE_SYSTEMS[n]) for n in names]


def resolve_sref(sref: str | Path | System | None, systems_path: Path | None = None) -> System:
    """S_ref: BM25 (k1 0.9, b 0.4) when None; a YAML file holding one system; or a system name
    looked up in the systems file in use, then in the shipped sets."""
    from .systems.base import make_system

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
    found = find_named_system(str(sref), [systems_path, builtin_systems("table1"), builtin_systems("default")])
    if found is not None:
        return found[0]
    raise InputError(None, f"--sref {sref!r}: no such system in {systems_path or 'the systems file'} or the shipped sets "
                           "(give a name from them or a YAML file with one system)")


def _check_highrecall(k: int, judged: str, std: str, sentence: int) -> None:
    from .topics.highrecall import JUDGED_POLICIES, STD_KINDS

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
}


def apply_preset(name: str) -> tuple[list[System], str, bool, bool, str]:
    """(S_refs, combine, graded, holdout, judged) of a named high-recall setting."""
    if name not in HIGHRECALL_PRESETS:
        raise InputError(None, f"--preset must be one of {', '.join(HIGHRECALL_PRESETS)}")
    p = HIGHRECALL_PRESETS[name]
    return reference_systems(p["sref"]), p["combine"], p["graded"], p["holdout"], p["judged"]


def highrecall_topics(index_dir: Path, ids: list[str], sref_system: System | list[System], out: Path, k: int = 1000,
                      zt: float = 2.0, sentence: int = 3, judged: str = "topk-nonrelevant", std: str = "population",
                      fallback: str = "skip", progress: bool = True, combine: str = "vote", graded: bool = False,
                      holdout: bool = False) -> tuple[dict[str, str], dict, dict[str, Any], dict[str, str]]:
    """Queries (n-th sentences) of the kept topics, pseudo-qrels, their statistics, and the
    sentence of every sampled doc that has one (runs over those are shared across S_refs).

    Several S_refs are fused (``combine``: vote or mean z, see
    :func:`nteval.topics.highrecall.fused_pseudo_qrels`); ``graded`` gives grade 2 to z ≥ ZT + 1;
    ``holdout``: each topic will be searched with its source document (and its fold-mates) held
    out of the index, so they leave its qrels too (``stats["holdout_folds"]``).

    Writes OUT/titles.tsv, OUT/sref/ (S_ref's cached run over ``all``), OUT/topics.tsv,
    OUT/qrels.txt and OUT/pseudo_relevant_counts.tsv."""
    import statistics

    from .runs import index_folds
    from .topics.highrecall import COMBINE, fused_pseudo_qrels, sentence_query

    _check_highrecall(k, judged, std, sentence)
    if combine not in COMBINE:
        raise InputError(None, f"--combine must be one of {', '.join(COMBINE)}")
    refs = sref_system if isinstance(sref_system, list) else [sref_system]
    manifest = read_manifest(index_dir)
    store = DocStore(index_dir / STORE)
    try:
        titles, _ = focused_topics(store, ids)
        sentences: dict[str, str] = {}
        for d in ids:
            q = sentence_query(store.get(d)["sentences"], sentence, fallback)
            if q is not None:
                sentences[d] = q
    finally:
        store.close()
    out.mkdir(parents=True, exist_ok=True)
    write_topics(out / "titles.tsv", titles)
    # S_ref sees the titles: it searches `all` with the title only (never the sentence)
    sref_runs, _ = run_all(index_dir, "all", manifest["fingerprint"], titles, refs, out / "sref",
                           depth=k, progress=progress)
    qrels_all = fused_pseudo_qrels([sref_runs[r.name] for r in refs], k=k, zt=zt, std=std, judged=judged,
                                   combine=combine, graded=graded)
    folds: list[list[str]] = []
    if holdout:
        folds = index_folds(index_dir, "nt", list(sentences))
        held = {q: set(f) for f in folds for q in f}
        kept = {q: {d: r for d, r in v.items() if d not in held[q]} for q, v in qrels_all.items() if q in held}
        qrels_all = {q: v for q, v in kept.items() if any(r > 0 for r in v.values())}
    qrels = {q: qrels_all[q] for q in ids if q in qrels_all and q in sentences}
    if not qrels:
        raise InputError(index_dir, "no topic kept: no S_ref hit reached the Z threshold (or no abstract has the sentence)")
    topics = {q: sentences[q] for q in qrels}
    write_topics(out / "topics.tsv", topics)
    write_qrels(out / "qrels.txt", qrels)
    sizes = [sum(1 for r in v.values() if r > 0) for v in qrels.values()]
    write_text(out / "pseudo_relevant_counts.tsv",
               "qid\tpseudo_relevant\n" + "".join(f"{q}\t{n}\n" for q, n in zip(qrels, sizes)))
    hist: dict[str, int] = {}
    for lo, hi in [(1, 1), (2, 5), (6, 10), (11, 20), (21, 50), (51, 100), (101, 10**9)]:
        label = str(lo) if lo == hi else (f"{lo}-{hi}" if hi < 10**9 else f">{lo - 1}")
        hist[label] = sum(lo <= n <= hi for n in sizes)
    first = refs[0]
    stats = {
        "sref": {"name": "+".join(r.name for r in refs), "algorithm": first.algorithm if len(refs) == 1 else "fused",
                 "params": first.params if len(refs) == 1 else {r.name: {"algorithm": r.algorithm, "params": r.params}
                                                                for r in refs},
                 "index": "all", "query": "title", "combine": combine if len(refs) > 1 else None},
        "k": k, "zt": zt, "std": std, "judged": judged, "sentence": sentence, "sentence_fallback": fallback,
        "graded": graded, "holdout": holdout,
        "dropped": {"no_sentence": len(ids) - len(sentences),
                    "no_pseudo_relevant": sum(1 for q in ids if q in sentences and q not in qrels_all)},
        "pseudo_relevant_per_topic": {"min": min(sizes), "median": statistics.median(sizes),
                                      "mean": round(statistics.mean(sizes), 2), "max": max(sizes), "total": sum(sizes),
                                      "histogram": hist},
    }
    if holdout:
        stats["holdout_folds"] = {"folds": len(folds), "max_fold": max(len(f) for f in folds)}
    return topics, qrels, stats, sentences


def resolve_srefs(sref: str | Path | list | tuple | None, systems_path: Path | None = None) -> list[System]:
    """One or several S_refs (several are fused); None or [] = :data:`DEFAULT_SREFS`."""
    if sref is None or (isinstance(sref, (list, tuple)) and not sref):
        return reference_systems(DEFAULT_SREFS)
    if isinstance(sref, (list, tuple)):
        return [resolve_sref(s, systems_path) for s in sref]
    return [resolve_sref(sref, systems_path)]


def run_highrecall(index_dir: str | Path, out: str | Path, n_topics: int = 1000, seed: int = 42,
                   sref: str | Path | list | None = None, k: int = 1000, zt: float = 2.0, sentence: int = 3,
                   judged: str = "topk-nonrelevant", std: str = "population", fallback: str = "skip",
                   systems: str | Path | None = None, depth: int = 1000, measures: list[str] | None = None,
                   progress: bool = True, runs_dir: str | Path | None = None, min_topics: int = MIN_TOPICS,
                   correction: str = "holm", combine: str = "vote", graded: bool = False, holdout: bool = False,
                   preset: str | None = None, **filters: Any) -> dict[str, Any]:
    """High-recall NT protocol (see :mod:`nteval.topics.highrecall`): S_ref over ``all`` with the
    titles → Z-score pseudo-qrels; the n-th abstract sentence → queries over ``nt`` (with the
    source documents held out of it when ``holdout``). ``preset`` (:data:`HIGHRECALL_PRESETS`)
    replaces the S_ref, combination, grading, hold-out and judged settings."""
    from .runs import run_all_holdout

    if preset is not None:
        sref, combine, graded, holdout, judged = apply_preset(preset)
    _check_highrecall(k, judged, std, sentence)
    index_dir, out = Path(index_dir), Path(out)
    manifest = read_manifest(index_dir)
    measures = [str(m) for m in parse_measures(measures or list(HIGHRECALL_MEASURES))]
    systems_path, system_list = resolve_systems(systems)
    refs = resolve_srefs(sref, systems_path)
    spec, ids, n_eligible = _sample(index_dir, n_topics, seed, filters)
    _, qrels, stats, sentences = highrecall_topics(index_dir, ids, refs, out, k=k, zt=zt, sentence=sentence,
                                                   judged=judged, std=std, fallback=fallback, progress=progress,
                                                   combine=combine, graded=graded, holdout=holdout)
    check_topic_floor("highrecall", len(qrels), n_topics, n_eligible, min_topics, index_dir)
    rdir = Path(runs_dir) if runs_dir else out / "runs"
    if holdout:
        runs, infos, _ = run_all_holdout(index_dir, "nt", manifest["fingerprint"], sentences, system_list,
                                         rdir / "holdout", depth=depth, progress=progress)
    else:
        runs, infos = run_all(index_dir, "nt", manifest["fingerprint"], sentences, system_list, rdir, depth=depth,
                              progress=progress)
    extra = {
        "index": str(index_dir), "index_fingerprint": manifest["fingerprint"], "systems_file": str(systems_path),
        "depth": depth, "sample": spec.as_dict(), "eligible_documents": n_eligible, "topics_requested": n_topics,
        **stats,
    }
    return write_results(out, "highrecall", spec, measures, runs, infos, qrels, extra, correction=correction)


def run_sref_sensitivity(index_dir: str | Path, out: str | Path, srefs: list[str], **kwargs: Any) -> dict[str, Any]:
    """The paper's Figure 3: the same systems under two (or more) S_ref choices; Pearson, Spearman
    and Kendall between the score vectors per measure, and a scatter PNG per measure (first two
    S_refs). System runs are shared: only the pseudo-qrels differ."""
    from itertools import combinations

    from .correlate.stats import correlations
    from .report.plots import scatter

    if len(srefs) < 2:
        raise InputError(None, "give at least two --sref")
    out = Path(out)
    per_sref: dict[str, dict[str, Any]] = {}
    for sref in srefs:
        label = Path(sref).stem if str(sref).endswith((".yaml", ".yml")) else str(sref)
        per_sref[label] = run_highrecall(index_dir, out / f"sref-{label}", sref=sref, runs_dir=out / "runs", **kwargs)
    labels = list(per_sref)
    measures = per_sref[labels[0]]["measures"]
    systems = sorted(per_sref[labels[0]]["systems"])
    pairs = {}
    for a, b in combinations(labels, 2):
        stats = {}
        for m in measures:
            x = [per_sref[a]["systems"][s][m] for s in systems]
            y = [per_sref[b]["systems"][s][m] for s in systems]
            stats[m] = correlations(x, y)
            if (a, b) == (labels[0], labels[1]):
                c = stats[m]
                title = (f"{m}: S_ref {a} vs {b}\nPearson {c['pearson']['value']:.3f}, Spearman {c['spearman']['value']:.3f}, "
                         f"Kendall {c['kendall']['value']:.3f}") if c["pearson"]["value"] is not None else f"{m}: {a} vs {b}"
                scatter(x, y, systems, f"{m} with S_ref = {a}", f"{m} with S_ref = {b}", title,
                        out / f"sref_{m.replace('@', '_at_')}.png")
        pairs[f"{a} vs {b}"] = stats
    result = {"protocol": "sref-sensitivity", "srefs": labels, "measures": measures, "systems": systems,
              "scores": {lab: per_sref[lab]["systems"] for lab in labels},
              "pseudo_relevant_per_topic": {lab: per_sref[lab]["pseudo_relevant_per_topic"] for lab in labels},
              "n_topics": {lab: per_sref[lab]["n_topics"] for lab in labels},
              "correlations": pairs}
    write_text(out / "sref_sensitivity.json", json.dumps(result, indent=2) + "\n")
    return result
