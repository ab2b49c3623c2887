"""The NT protocols as one declarative call each (the API behind ``nteval run``, ``nteval
focused`` and ``nteval highrecall``): a protocol from the registry builds topics and qrels, every
system runs over the index the protocol searches, the evaluation core scores the runs, and the
protocol's verdict is written beside the results."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import protocols
from .atomic import write_text
from .errors import InputError
from .evaluate import parse_measures
from .formats.trec import write_qrels, write_topics
from .index import read_manifest
from .protocols.base import Protocol, ProtocolSpec, TopicSet
from .protocols.highrecall import (  # noqa: F401  (re-exported: the public names of earlier versions)
    DEFAULT_SREFS,
    HIGHRECALL_PRESETS,
    PAPER_SREFS,
    REFERENCE_SYSTEMS,
    apply_preset,
    highrecall_topics,
    reference_systems,
    resolve_sref,
    resolve_srefs,
)
from .runs import run_all
from .scores import Scores, evaluate_runs, strata_means
from .systems.sets import builtin_systems, find_named_system, resolve_systems  # noqa: F401
from .topics.ids import topic_set_id
from .verdict import MIN_TOPICS, check_topic_floor

FOCUSED_MEASURES = protocols.get("focused").measures
HIGHRECALL_MEASURES = protocols.get("highrecall").measures


def write_results(out: Path, proto: Protocol, seed: int, measures: list[str], runs: dict, infos: list,
                  tset: TopicSet, extra: dict[str, Any], correction: str = "holm", progress: bool = False
                  ) -> tuple[dict[str, Any], Scores]:
    """Evaluate every run and write per-topic scores, results.tsv, results.json and results.tex
    (booktabs, for a paper), and the protocol's verdict (significance groups, reliability) in
    results.json and significance.tsv."""
    import sys

    from tqdm import tqdm

    from .verdict import make_verdict

    vmeasure = proto.verdict.measure
    evaluated = measures + ([vmeasure] if vmeasure not in measures else [])
    scores = evaluate_runs(runs, tset.qrels, evaluated, progress=progress, names=[i.system.name for i in infos])
    write_text(out / "per_topic.tsv", scores.tsv(measures))
    systems = {n: {m: round(v, 6) for m, v in means.items() if m in measures} for n, means in scores.means.items()}
    with tqdm(total=1, desc="verdict (paired tests, reliability)", disable=not progress, file=sys.stderr, leave=False) as bar:
        verdict = make_verdict(proto.name, scores.per_topic, correction=correction, seed=seed) if scores.per_topic else None
        bar.update()
    if verdict and verdict.get("reliability") and verdict["reliability"]["curve"]:
        from .report.plots import topics_curve

        rel = verdict["reliability"]
        topics_curve({f"{proto.name} {rel['measure']}": rel["curve"]}, out / f"reliability_{rel['measure']}.png",
                     f"How many topics are enough? {proto.name} protocol, {rel['systems']} systems\n"
                     f"(split-half τ, {rel['topics']} topics available)")
    if verdict and verdict["significance"]:
        sig = verdict["significance"]
        write_text(out / "significance.tsv", "system_a\tsystem_b\tmeasure\tdiff\tp\tp_adjusted\tsignificant\n" + "".join(
            f"{p['a']}\t{p['b']}\t{sig['measure']}\t{p['diff']:.6f}\t{p['p']:.6g}\t{p['p_adjusted']:.6g}\t{int(p['significant'])}\n"
            for p in sig["pairs"]))
    results = {
        "protocol": proto.name, "n_topics": len(tset.qrels), "seed": seed, "measures": measures,
        "topic_set": topic_set_id(proto.name, tset.topics, tset.qrels),
        "verdict": verdict,
        "topic_counts": dict(tset.counts),
        "systems": systems,
        "empty_queries": {i.system.name: i.empty_queries for i in infos},
        "system_configs": {i.system.name: {"algorithm": i.system.algorithm, "params": i.system.params} for i in infos},
        "timing": {i.system.name: {"seconds": round(i.seconds, 3), "queries_per_s": i.queries_per_s, "reused": i.reused}
                   for i in infos},
        "system_notes": {i.system.name: i.notes for i in infos if i.notes},
        **extra,
    }
    if tset.strata:
        results["strata"] = strata_means(scores, tset.strata, measures)
    header = "system\talgorithm\t" + "\t".join(measures) + "\tempty_queries"
    rows = [header] + [f"{i.system.name}\t{i.system.describe()}\t" + "\t".join(f"{systems[i.system.name][m]:.4f}" for m in measures)
                       + f"\t{i.empty_queries}" for i in infos]
    write_text(out / "results.tsv", "\n".join(rows) + "\n")
    write_text(out / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    from .report.text import results_latex

    write_text(out / "results.tex", results_latex(results, vmeasure if vmeasure in measures else None))
    return results, scores


def run_protocol_scores(protocol: str | Protocol, index_dir: str | Path, out: str | Path,
                        spec: ProtocolSpec | None = None, systems: str | Path | None = None, depth: int = 1000,
                        measures: list[str] | None = None, progress: bool = True, min_topics: int = MIN_TOPICS,
                        correction: str = "holm", runs_dir: str | Path | None = None,
                        extra_systems: list | None = None, systems_file: Path | None = None,
                        scheduler: str | None = None, **params: Any) -> tuple[dict[str, Any], Scores]:
    """:func:`run_protocol`, also returning the in-memory :class:`~nteval.scores.Scores`. OUT is
    locked for the run (:func:`nteval.atomic.out_dir_lock`): two processes never mix one OUT.
    ``systems_file``: where S_ref names are looked up when ``systems`` is a list of Systems.
    ``scheduler``: a Dask scheduler's address: the systems' runs are computed by its workers, one
    task per system (:func:`nteval.runs.run_all`); held-out runs (``holdout``) stay local."""
    from .atomic import out_dir_lock
    from .runs import cluster_session, run_all_holdout, run_memory_budget

    run_memory_budget()  # a bad NTEVAL_RUN_MEMORY_HITS fails before OUT is touched
    proto = protocols.get(protocol) if isinstance(protocol, str) else protocol
    spec = spec if spec is not None else proto.Spec.from_params(**params)
    index_dir, out = Path(index_dir), Path(out)
    with out_dir_lock(out), cluster_session(scheduler, [index_dir]):
        manifest = read_manifest(index_dir)
        proto.check_index(index_dir)
        measures = [str(m) for m in parse_measures(measures or list(proto.measures))]
        systems_path, system_list = resolve_systems(systems, extra_systems)
        systems_path = systems_path or systems_file
        tset = proto.build(index_dir, spec, out, progress=progress, systems_path=systems_path)
        check_topic_floor(proto.name, tset.counts["used"], tset.counts["requested"], tset.counts["eligible"],
                          min_topics, index_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_topics(out / "topics.tsv", tset.topics)
        write_qrels(out / "qrels.txt", tset.qrels)
        rdir = Path(runs_dir) if runs_dir else out / "runs"
        if tset.holdout:
            if scheduler:
                import sys

                print("note: --holdout runs are computed here, not on the cluster (their index copies live under OUT)",
                      file=sys.stderr)
            runs, infos, _ = run_all_holdout(index_dir, proto.searches, manifest["fingerprint"], tset.queries,
                                             system_list, rdir / "holdout", depth=depth, progress=progress,
                                             label=proto.name, sources=tset.sources)
        else:
            runs, infos = run_all(index_dir, proto.searches, manifest["fingerprint"], tset.queries, system_list, rdir,
                                  depth=depth, progress=progress, label=proto.name, scheduler=scheduler)
        extra = {"index": str(index_dir.absolute()), "index_fingerprint": manifest["fingerprint"],
                 "systems_file": str(systems_path) if systems_path else None, "depth": depth, **tset.stats}
        return write_results(out, proto, spec.seed, measures, runs, infos, tset, extra, correction=correction,
                             progress=progress)


def run_protocol(protocol: str | Protocol, index_dir: str | Path, out: str | Path, **kwargs: Any) -> dict[str, Any]:
    """Run every system under ``protocol`` (a registered name or a Protocol) and write OUT/topics.tsv,
    qrels.txt, runs/, per_topic.tsv, results.tsv, results.json (with the verdict), significance.tsv.

    ``spec`` (the protocol's ProtocolSpec) or its parameters as keywords (``n_topics=500, seed=1``);
    fails with a one-line InputError when fewer than ``min_topics`` topics are usable."""
    return run_protocol_scores(protocol, index_dir, out, **kwargs)[0]


def run_focused(index_dir: str | Path, out: str | Path, n_topics: int = 1000, seed: int = 42,
                systems: str | Path | None = None, depth: int = 1000, measures: list[str] | None = None,
                progress: bool = True, min_topics: int = MIN_TOPICS, correction: str = "holm",
                **filters: Any) -> dict[str, Any]:
    """Focused NT protocol: sample D0, titles → queries over ``nt``, each doc its own relevant.
    Fails (InputError) when fewer than ``min_topics`` documents can become topics."""
    return run_protocol("focused", index_dir, out, n_topics=n_topics, seed=seed, systems=systems, depth=depth,
                        measures=measures, progress=progress, min_topics=min_topics, correction=correction,
                        **filters)


def run_highrecall(index_dir: str | Path, out: str | Path, n_topics: int = 1000, seed: int = 42,
                   sref: str | Path | list | None = None, systems: str | Path | None = None, depth: int = 1000,
                   measures: list[str] | None = None, progress: bool = True, runs_dir: str | Path | None = None,
                   min_topics: int = MIN_TOPICS, correction: str = "holm", **params: Any) -> dict[str, Any]:
    """High-recall NT protocol (see :mod:`nteval.protocols.highrecall`): S_ref over ``all`` with the
    titles → Z-score pseudo-qrels; the n-th abstract sentence → queries over ``nt`` (with the
    source documents held out of it when ``holdout``). ``preset`` (:data:`HIGHRECALL_PRESETS`)
    replaces the S_ref, combination, grading, hold-out and judged settings. ``params``: the other
    fields of :class:`~nteval.protocols.highrecall.HighRecallSpec` (k, zt, sentence, judged...)."""
    return run_protocol("highrecall", index_dir, out, n_topics=n_topics, seed=seed, sref=sref, systems=systems,
                        depth=depth, measures=measures, progress=progress, runs_dir=runs_dir, min_topics=min_topics, correction=correction,
                        **params)


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
