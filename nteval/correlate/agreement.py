"""``nteval correlate``: can NT's ranking of my systems be trusted on this corpus?

Runs every system on (a) NT focused and (b) NT high-recall over the collection's own corpus, and
(c) the human topics with the human qrels (searching ``all``: real users' documents have titles),
then for each (NT measure, human measure) pair reports Pearson, Spearman, Kendall τ-b and τ_AP
with p-values and topic-bootstrap 95 % CIs. Beside NT: a human-vs-human ceiling (random halves of
the human topics, repeated) and the run-based judgment-free baselines on the human topics.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .. import protocols as registry
from .._version import __version__
from ..answer import TASKS, check_task, disagreements
from ..atomic import write_text
from ..corpus.store import known_docids, require_judged_in_index
from ..effects import MMD
from ..errors import InputError
from ..evaluate import evaluate_run
from ..evidence import COVERAGE_CAVEAT, coverage
from ..experiment import collection_counts, run_protocol_scores
from ..formats.topics import load_judged_topics
from ..formats.trec import write_qrels, write_topics
from ..index import read_manifest
from ..lucene import jvm
from ..progress import shown, tqdm
from ..protocols import get
from ..report.agreement import write_reports
from ..report.caveats import MIN_SYSTEMS, caveats
from ..runs import Searched, run_all
from ..session import session
from ..settings import Execution, HumanJudgments, RunSettings, SystemSet, reject_unknown, split_options
from ..stats import bootstrap_ci, correlations, many_topic_tau
from ..systems.sets import resolve_set
from .baselines import mean_relevant, pools, reference_count_qrels, soboroff_qrels
from .decisions import Decisions, compare_decisions, separated_pairs, significance
from .gate_agreement import gate_agreement
from .spec import DEFAULT_PROTOCOLS, MIN_HUMAN_TOPICS, CorrelateSpec

__all__ = ["CorrelateSpec", "DEFAULT_PROTOCOLS", "MIN_HUMAN_TOPICS", "advantage_vs_baseline", "correlate_options",
           "protocol_pairs", "run_correlate"]


def protocol_pairs(names: tuple[str, ...] | list[str]) -> tuple[tuple[str, str, str], ...]:
    """(protocol, NT measure, human measure) for each protocol, as each protocol declares them."""
    return tuple((n, ntm, hm) for n in names for ntm, hm in get(n).correlate_pairs)


HUMAN_MEASURES = ("AP", "Bpref", "nDCG@10", "P@10", "R@1000")


def _relative_advantage(m: np.ndarray, i: int, base: int, n_boot: int, rng: np.random.Generator) -> dict[str, Any]:
    """mean(system)/mean(baseline) − 1 over topics, with a 95 % percentile CI from resampling the
    topics (paired: both systems keep the same resampled topics)."""
    a, b = m[i], m[base]
    point = float(a.mean() / b.mean() - 1) if b.mean() > 0 else None
    idx = rng.integers(0, m.shape[1], size=(n_boot, m.shape[1]))
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = a[idx].mean(axis=1) / b[idx].mean(axis=1) - 1
    reps = reps[np.isfinite(reps)]
    lo, hi = (float(np.percentile(reps, 2.5)), float(np.percentile(reps, 97.5))) if reps.size else (None, None)
    if point is not None and lo is not None and hi is not None:  # (lo and hi are None together)
        lo, hi = min(lo, point), max(hi, point)
    return {"value": point, "ci95": [lo, hi]}


def advantage_vs_baseline(nt_m: np.ndarray, h_m: np.ndarray, names: list[str], baseline: str, n_boot: int,
                          seed: int) -> dict[str, Any]:
    """Does NT reward a system over ``baseline`` more than humans do? Each system's relative
    advantage over the baseline under the NT verdict measure and under the human measure, with
    paired topic-bootstrap CIs; ``nt_overstates`` when the NT interval lies wholly above the human
    one (e.g. RM3 under the paper's high-recall setting on SciFact)."""
    if baseline not in names:
        return {}
    rng = np.random.default_rng(seed)
    base = names.index(baseline)
    out: dict[str, Any] = {}
    for i, n in enumerate(names):
        if i == base:
            continue
        nt = _relative_advantage(nt_m, i, base, n_boot, rng)
        hu = _relative_advantage(h_m, i, base, n_boot, rng)
        over = None
        if nt["ci95"][0] is not None and hu["ci95"][1] is not None:
            over = nt["ci95"][0] > hu["ci95"][1]
        out[n] = {"nt": nt, "human": hu, "nt_overstates": over}
    return out


def _human_ceiling(per: dict[str, dict[str, dict[str, float]]], systems: list[str], measure: str,
                   splits: int, seed: int) -> dict[str, Any]:
    topics = sorted(per[systems[0]])
    rng = np.random.default_rng(seed)
    m = np.array([[per[s][q][measure] for q in topics] for s in systems])
    out: dict[str, list[float]] = {"pearson": [], "spearman": [], "kendall": [], "tau_ap": []}
    for _ in range(splits):
        perm = rng.permutation(len(topics))
        a, b = perm[: len(topics) // 2], perm[len(topics) // 2:]
        c = correlations(list(m[:, a].mean(1)), list(m[:, b].mean(1)))
        for k in out:
            value = c[k]["value"]
            if value is not None:
                out[k].append(value)
    return {k: {"mean": float(np.mean(v)), "ci95": [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))]}
            if v else None for k, v in out.items()} | {"splits": splits, "topics_per_half": len(topics) // 2}


def _protocol_settings(r: dict[str, Any]) -> dict[str, Any]:
    """A protocol run's own settings worth printing beside its scores (S_ref, k, Z threshold…)."""
    out = {k: r[k] for k in ("depth", "k", "zt", "std", "judged", "sentence", "graded", "holdout") if k in r}
    if "sref" in r:
        out["S_ref"] = r["sref"]["name"]
    return out


def provenance(manifest: dict[str, Any]) -> dict[str, Any]:
    """When and with what a report was made (the index's tools come from its manifest)."""
    import datetime
    import platform

    return {"generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "nteval": __version__, "python": platform.python_version(), "index_versions": manifest.get("versions", {})}


def _check_external_sides(systems: list, sides: list[str]) -> None:
    """Before any work: an external run system must have a run for every topic set correlate uses."""
    for s in systems:
        if s.kind.fixed_topics:
            runs = s.params.get("runs")
            if runs is None:
                raise InputError(s.params.get("run"), f"system {s.name}: correlate runs several topic sets "
                                 f"({', '.join(sides)}); give one run per set (runs: {{focused: PATH, human: PATH}}, or "
                                 "--runs DIR with DIR/focused/, DIR/human/…)")
            missing = [x for x in sides if x not in runs]
            if missing:
                raise InputError(next(iter(runs.values())), f"system {s.name}: no run for the {missing[0]} topics "
                                                            f"(has: {', '.join(sorted(runs))})")


def run_correlate(index_dir: str | Path, queries: Any = None, qrels: Any = None, out: str | Path | None = None,
                  systems: Any = None, spec: CorrelateSpec | None = None, settings: RunSettings | None = None,
                  execution: Execution | None = None, **options: Any) -> dict[str, Any]:
    """Run ``systems`` under each NT protocol and on the human topics, and report how far the NT
    rankings agree with the human one (report.json, report.md, report.html, scatter plots in OUT).

    ``queries``/``qrels``: the human topics and judgments (or ``spec.human``);
    ``spec`` (:class:`~nteval.correlate.spec.CorrelateSpec`): protocols, NT topics, bootstrap,
    ceiling and baselines; ``settings`` (:class:`~nteval.settings.RunSettings`): depth, topic
    floor, correction, MMD, declared task; ``execution``: progress, Dask scheduler (every
    protocol's and the human topics' Lucene runs computed by its workers). Any of their fields may
    be given as a plain keyword (``n_boot=300, progress=False``); ``field`` and ``human_index``
    go to the human judgments, ``extra_systems`` (external runs: one per topic set, e.g.
    ``focused`` and ``human``) after ``systems``, ``highrecall`` (S_ref, k, zt…) to that protocol.

    The shared prologue holds for the whole call (:func:`nteval.session.session`: OUT locked, the
    index read-locked — its protocols and the human topics search one unchanging index — and one
    Dask session)."""
    if out is None:
        raise InputError(None, "run_correlate: give out, the output directory")
    spec, settings, execution, chosen = correlate_options(queries, qrels, systems, spec, settings, execution, options)
    with session(out, index_dir, execution.scheduler) as index_abs:
        return _run_correlate(index_abs, Path(out), chosen, spec, settings, execution)


def correlate_options(queries: Any, qrels: Any, systems: Any, spec: CorrelateSpec | None, settings: RunSettings | None,
                      execution: Execution | None, options: dict[str, Any]
                      ) -> tuple[CorrelateSpec, RunSettings, Execution, SystemSet]:
    """:func:`run_correlate`'s keywords routed to the objects that own them, checked before OUT
    is touched (one-line error for a keyword nobody takes)."""
    from dataclasses import fields, replace

    rest = dict(options)
    chosen = SystemSet.take(systems, rest)
    hr = rest.pop("highrecall", None)
    given = HumanJudgments.given(queries, qrels, rest.pop("field", None), rest.pop("human_index", "all"))
    settings, execution, rest = split_options(rest, settings, execution)
    names = {f.name for f in fields(CorrelateSpec)} - {"human"}
    mine = {k: rest.pop(k) for k in list(rest) if k in names}
    reject_unknown(rest, "run_correlate", names | {"field", "human_index", "highrecall"})
    if spec is None:
        if given is None:
            raise InputError(None, "run_correlate: give the human judgments (queries and qrels)")
        spec = CorrelateSpec(given, **mine)
    else:
        changes: dict[str, Any] = {**mine, **({"human": given} if given is not None else {})}
        spec = replace(spec, **changes)
    if hr:
        params = {k: dict(v) for k, v in spec.protocol_params.items()}
        spec = replace(spec, protocol_params={**params, "highrecall": {**hr, **params.get("highrecall", {})}})
    settings = replace(settings, mmd=MMD.parse(settings.mmd))
    task = check_task(settings.task)
    if task is not None and TASKS[task][0] not in spec.protocols:
        raise InputError(None, f"--task {task}: its verdict comes from the {TASKS[task][0]} protocol, which --protocols "
                               f"leaves out ({', '.join(spec.protocols)})")
    return spec, settings, execution, chosen


def release_memory() -> None:
    """Between the phases of ``correlate`` (each protocol, the human topics, the statistics): the
    memory the last phase freed goes back to the system — Python's (a collection, then glibc's
    ``malloc_trim``) and the JVM heap's free part (:func:`nteval.lucene.jvm.release_memory`). Each
    phase then starts from what is live, not from the high-water mark of the phases before it
    (measured in docs/correlate.md, "Time and memory")."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim this way
        pass
    jvm.release_memory()


def correlate_coverage(index_dir: Path, manifest: dict[str, Any], qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    """What the NT verdicts cannot see (:func:`nteval.evidence.coverage`), of the collection and of
    the human-relevant documents: those without an abstract are not in ``nt``, so no NT-searching
    system ever finds them, while the human topics search ``all``. Judged documents that are not in
    the collection at all are counted apart (``judged_not_in_index``): no system finds them, and
    they are not documents without an abstract."""
    judged = sorted({d for docs in qrels.values() for d in docs})
    in_index = known_docids(index_dir, judged, "all") if judged else set()
    relevant_all = sorted({d for docs in qrels.values() for d, rel in docs.items() if rel > 0})
    relevant = [d for d in relevant_all if d in in_index]
    in_nt = known_docids(index_dir, relevant, "nt") if relevant else set()
    share = 1 - len(in_nt) / len(relevant) if relevant else 0.0
    human = {"relevant": len(relevant), "in_nt": len(in_nt), "without_abstract": len(relevant) - len(in_nt),
             "share_unseen": round(share, 4), "threshold": COVERAGE_CAVEAT,
             "text": f"{len(relevant) - len(in_nt):,} of the {len(relevant):,} documents the humans judged relevant "
                     f"({share * 100:.0f} %) have no abstract: NT's systems never search them, the human topics do",
             "caveat": (f"{share * 100:.0f} % of the human-relevant documents have no abstract (above "
                        f"{COVERAGE_CAVEAT * 100:.0f} %): part of what the humans reward, NT cannot measure; the "
                        "agreement figures compare NT with humans on a collection NT sees only in part")
             if share > COVERAGE_CAVEAT else None}
    return {"collection": coverage(collection_counts(manifest, "nt")), "human_relevant": human,
            "judged_not_in_index": _not_in_index(judged, in_index, len(relevant_all) - len(relevant))}


def _not_in_index(judged: list[str], in_index: set[str], relevant: int) -> dict[str, Any]:
    """The judged documents that are not in the collection (``relevant`` of them judged relevant):
    no system can retrieve them, whatever it is."""
    missing = [d for d in judged if d not in in_index]
    out: dict[str, Any] = {"documents": len(missing), "relevant": relevant, "example": missing[0] if missing else None,
                           "caveat": None}
    if missing:
        out["caveat"] = (f"{len(missing):,} judged documents are not in the index (e.g. {missing[0]}; {relevant:,} of them "
                         "judged relevant): no system can retrieve them, so every human score counts the relevant ones "
                         "as missed; qrels of another version of the collection?")
    return out


def negative_grades(qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    """How many judgments have a negative grade (some collections mark "judged, harmful" or "not
    assessable" so), and how they are scored: as trec_eval scores them (measured in
    tests/correlate), not relevant with a gain of 0 for AP, nDCG@10, P@10 and R@1000 (never a
    negative gain), and as unjudged for Bpref."""
    grades = [rel for docs in qrels.values() for rel in docs.values()]
    negative = sorted({rel for rel in grades if rel < 0})
    n = sum(rel < 0 for rel in grades)
    caveat = None
    if n:
        caveat = (f"{n:,} of the {len(grades):,} human judgments have a negative grade ({', '.join(map(str, negative))}): "
                  "they are scored as trec_eval scores them, as not relevant with a gain of 0 (not a negative gain) by "
                  "AP, nDCG@10, P@10 and R@1000, the gate's human decisions included, and as unjudged by Bpref")
    return {"judgments": n, "grades": negative, "caveat": caveat}


def decision_figures(names: list[str], nt: dict[str, dict[str, Any]], nt_scores: dict[str, Any], hm: np.ndarray,
                     baseline_ap: dict[str, np.ndarray], correction: str, seed: int,
                     progress: bool | None) -> dict[str, Any]:
    """Beside τ, the significance decisions of each verdict and run-based baseline against the
    human ones (:mod:`nteval.correlate.decisions`): the human paired tests on human AP (``hm``:
    systems × judged topics) with the verdict's test and correction, then each ranking's figures."""
    import sys

    rankings = [s for s, r in nt.items() if r.get("verdict") and r["verdict"].get("significance")]
    bar = tqdm(total=1 + len(rankings) + 2 * len(baseline_ap), desc="decisions (paired tests of each ranking)",
               unit=" step", disable=not shown(progress), file=sys.stderr, leave=False)
    human = Decisions(hm, significance(names, hm, correction, seed=seed))
    bar.update()
    out: dict[str, Any] = {"human": {"measure": "AP", "topics": hm.shape[1], "test": human.significance["test"],
                                     "correction": human.significance["correction"],
                                     "alpha": human.significance["alpha"],
                                     "separated": sum(p["significant"] for p in human.significance["pairs"]),
                                     "pairs": len(human.significance["pairs"]), "groups": human.significance["groups"],
                                     "separated_pairs": separated_pairs(human.significance)},
                           "verdicts": {}, "baselines": {}}
    for side in rankings:
        v = nt[side]["verdict"]
        judged = Decisions(nt_scores[side].matrix(v["measure"], names), v["significance"])
        out["verdicts"][side] = {"measure": v["measure"], **compare_decisions(names, judged, human, seed=seed)}
        bar.update()
    for b, m in baseline_ap.items():
        judged = Decisions(m, significance(names, m, correction, seed=seed))
        bar.update()
        out["baselines"][b] = {"measure": "AP", "groups": judged.significance["groups"],
                               **compare_decisions(names, judged, human, seed=seed)}
        bar.update()
    bar.close()
    return out


def _run_correlate(index_dir: Path, out: Path, chosen: SystemSet, spec: CorrelateSpec, settings: RunSettings,
                   execution: Execution) -> dict[str, Any]:
    """The work of :func:`run_correlate`, inside its prologue: the NT sides, the human side, then
    the agreement figures (correlations, decisions, the gate's decisions, run-based baselines)."""
    manifest = read_manifest(index_dir)
    systems_path, system_list, topics, qrels, pairs = _inputs(index_dir, chosen, spec)
    nt, nt_scores = _nt_sides(index_dir, out, SystemSet(system_list, file=systems_path), spec, settings, execution)
    names = [s.name for s in system_list]
    judged = Judged(topics, qrels, sorted({p[2] for p in pairs} | set(HUMAN_MEASURES)), sorted({p[2] for p in pairs}))
    runs, human_scores, human_per = _human_side(index_dir, out / "human", manifest, system_list, judged, settings,
                                                execution)
    report_pairs, ceiling = _pair_figures(names, nt_scores, human_per, qrels, pairs, spec, execution.progress)
    baselines, baseline_ap = _baseline_figures(runs, names, judged, human_scores, spec, out / "human", execution.progress)
    human_ap = np.array([[human_per[n][q]["AP"] for q in sorted(qrels)] for n in names])
    decisions = decision_figures(names, nt, nt_scores, human_ap, baseline_ap, settings.correction, spec.seed,
                                 execution.progress)
    report = {
        "index": str(index_dir.absolute()), "index_fingerprint": manifest["fingerprint"], "systems_file": str(systems_path),
        "systems": names, "human": {"queries": str(spec.human.queries), "qrels": str(spec.human.qrels),
                                    "topics": len(topics), "judged_topics": len(qrels), "field": spec.human.field,
                                    "scores": human_scores},
        "verdict": _verdicts(nt, report_pairs),
        "system_configs": {s.name: s.describe() for s in system_list},
        "negative_grades": negative_grades(qrels),
        "nt": {side: {"n_topics": r["n_topics"], "topic_counts": r.get("topic_counts"), "scores": r["systems"],
                      "settings": _protocol_settings(r)} for side, r in nt.items()},
        "pairs": report_pairs, "human_ceiling": ceiling, "baselines": baselines, "decisions": decisions,
        "gate": gate_figures(names, nt, nt_scores, human_ap, execution.progress),
        "settings": {"n_topics": spec.n_topics, "seed": spec.seed, "depth": settings.depth, "bootstrap": spec.n_boot,
                     "splits": spec.splits, "pool_depth": spec.pool_depth, "soboroff_trials": spec.trials,
                     "pseudo_relevant_per_topic": mean_relevant(qrels)},
        "provenance": provenance(manifest),
    }
    report["bias_notes"] = {side: r.get("bias_notes") or [] for side, r in nt.items()}
    if "focused" in nt and "highrecall" in nt:
        report["disagreements"] = disagreements(nt["focused"], nt["highrecall"])
    report["task"] = settings.task
    if settings.task is not None:
        side = TASKS[settings.task][0]
        report["answer"] = {**nt[side]["answer"],
                            "agreement_with_human": report["verdict"].get(side, {}).get("agreement_with_human")}
    report["coverage"] = correlate_coverage(index_dir, manifest, qrels)
    report["caveats"] = caveats(report)

    write_text(out / "report.json", json.dumps(report, indent=2) + "\n")
    write_reports(report, out)
    return report


def _inputs(index_dir: Path, chosen: SystemSet, spec: CorrelateSpec) -> tuple:
    """(systems file, systems, human topics, human qrels, (protocol, NT measure, human measure) pairs),
    every input checked before any run."""
    hj = spec.human
    systems_path, system_list = resolve_set(chosen)
    _check_external_sides(system_list, [*spec.protocols, "human"])
    if len(system_list) < spec.min_systems:
        raise InputError(systems_path, f"{len(system_list)} systems: need at least {spec.min_systems} to correlate "
                                       "rankings (a rank correlation over fewer systems takes a handful of values; "
                                       "--min-systems)")
    topics, qrels = load_judged_topics(hj.queries, hj.qrels, hj.field)
    require_judged_in_index(index_dir, qrels, hj.qrels)
    if len(qrels) < spec.min_human_topics:
        raise InputError(hj.qrels, f"{len(qrels)} judged human topics: need at least {spec.min_human_topics} for a "
                                   "human ranking that means something (--min-human-topics)")
    pairs = spec.pairs if spec.pairs is not None else protocol_pairs(spec.protocols)
    for name in spec.protocols:  # what each protocol needs of the index, before any of them runs
        registry.get(name).check_index(index_dir)
    return systems_path, system_list, topics, qrels, pairs


def _nt_sides(index_dir: Path, out: Path, listed: SystemSet, spec: CorrelateSpec, settings: RunSettings,
              execution: Execution) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each NT protocol's results and per-topic scores (the declared task goes to its own protocol)."""
    from dataclasses import replace

    nt: dict[str, dict[str, Any]] = {}
    nt_scores = {}
    task = settings.task
    for name in spec.protocols:
        own = replace(settings, task=task if task is not None and TASKS[task][0] == name else None, runs_dir=None)
        nt[name], nt_scores[name] = run_protocol_scores(
            name, index_dir, out / name, systems=listed, settings=own, execution=execution, n_topics=spec.n_topics,
            seed=spec.seed, **spec.protocol_params.get(name, {}))
        release_memory()
    return nt, nt_scores


def _bar(total: int, desc: str, progress: bool | None):
    import sys

    return tqdm(total=total, desc=desc, unit=" step", disable=not shown(progress), file=sys.stderr, leave=False)


class Judged(NamedTuple):
    """The human side's topics and judgments, the measures scored on it, and those compared with NT."""
    topics: dict[str, str]
    qrels: dict[str, dict[str, int]]
    measures: list[str]
    compared: list[str]


def _human_side(index_dir: Path, hdir: Path, manifest: dict[str, Any], system_list: list, judged: Judged,
                settings: RunSettings, execution: Execution) -> tuple:
    """The systems' runs on the human topics (searching ``all``: real users' documents have titles),
    each one's human scores (mean and per topic), written to HDIR."""
    topics, qrels, hmeasures = judged.topics, judged.qrels, judged.measures
    write_topics(hdir / "topics.tsv", topics)
    write_qrels(hdir / "qrels.txt", qrels)
    runs, _ = run_all(Searched(index_dir, "all", manifest["fingerprint"], label="human"), topics, system_list,
                      hdir / "runs", settings.depth, Execution(progress=execution.progress, scheduler=execution.scheduler))
    release_memory()
    names = [s.name for s in system_list]
    human_scores: dict[str, dict[str, float]] = {}
    human_per: dict[str, dict[str, dict[str, float]]] = {}
    bar = _bar(len(names), "human judgments", execution.progress)
    for n in runs.held() + [n for n in names if n not in runs.held()]:  # (the runs in memory first)
        human_scores[n], human_per[n] = evaluate_run(qrels, runs[n], hmeasures)
        bar.update()
    bar.close()
    human_scores = {n: human_scores[n] for n in names}
    human_per = {n: human_per[n] for n in names}
    lines = ["system\tqid\tmeasure\tvalue"] + [f"{n}\t{q}\t{m}\t{v:.6f}" for n in names for q, vs in human_per[n].items()
                                                for m, v in vs.items()]
    write_text(hdir / "per_topic.tsv", "\n".join(lines) + "\n")
    return runs, human_scores, human_per


def _pair_figures(names: list[str], nt_scores: dict[str, Any], human_per: dict, qrels: dict, pairs,
                  spec: CorrelateSpec, progress: bool | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per (NT measure, human measure) pair: the correlations with their intervals, among the better
    half, the advantage over BM25, the many-topic τ; and the human-vs-human ceiling."""
    n_boot, seed = spec.n_boot, spec.seed
    bar = _bar(4 * len(pairs) + 1, "agreement statistics", progress)
    report_pairs = []
    for side, ntm, hm in pairs:
        bar.set_postfix_str(f"{side} {ntm} vs human {hm}")
        xt = nt_scores[side].matrix(ntm, names)
        yt = np.array([[human_per[n][q][hm] for q in sorted(qrels)] for n in names])
        # the estimate is computed from the same per-topic values the bootstrap resamples
        x, y = [float(v) for v in xt.mean(axis=1)], [float(v) for v in yt.mean(axis=1)]
        # weak systems that both sides find weak inflate rank correlations: also report the
        # agreement among the better half of the systems (by the human score)
        top = sorted(range(len(names)), key=lambda i: -y[i])[: max(3, len(names) // 2)]
        ci = bootstrap_ci(xt, yt, n_boot=n_boot, seed=seed)
        ci_method = ci.pop("method")
        bar.update()
        top_ci = top_stats = None
        if len(top) >= MIN_SYSTEMS:  # fewer: noise (see caveats)
            top_ci = bootstrap_ci(xt[top], yt[top], n_boot=n_boot, seed=seed)
            top_ci.pop("method")
            top_stats = correlations([x[i] for i in top], [y[i] for i in top])
        bar.update()
        adv = advantage_vs_baseline(xt, yt, names, "bm25", n_boot, seed) if (ntm, hm) in (("RR", "AP"), ("AP", "AP")) else None
        bar.update()
        # the agreement with a human ranking from as many topics as the NT one (see many_topic_tau)
        many = many_topic_tau(xt, yt, n_boot=n_boot, seed=seed, target=max(xt.shape[1], yt.shape[1]))
        bar.update()
        report_pairs.append({"nt": side, "nt_measure": ntm, "human_measure": hm, "advantage_vs_bm25": adv,
                             "stats": correlations(x, y), "ci95": ci, "ci_method": ci_method,
                             "many_topics": {**many, "ci95": list(many["ci95"])} if many else None,
                             "ci95_top_half": top_ci, "stats_top_half": top_stats,
                             "top_half_systems": [names[i] for i in top],
                             "nt_scores": dict(zip(names, x)), "human_scores": dict(zip(names, y))})
    bar.set_postfix_str("human-vs-human ceiling")
    ceiling = {hm: _human_ceiling(human_per, names, hm, spec.splits, seed) for hm in sorted({p[2] for p in pairs})}
    bar.update()
    bar.close()
    return report_pairs, ceiling


def _baseline_figures(runs, names: list[str], judged: Judged, human_scores: dict, spec: CorrelateSpec, hdir: Path,
                      progress: bool | None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The run-based judgment-free baselines on the human topics (reference count, Soboroff): their
    pseudo-qrels from the pooled runs, every system's scores under them, written to HDIR."""
    topics, hmeasures = judged.topics, judged.measures
    n_rel = mean_relevant(judged.qrels)
    bar = _bar(len(names), "pools of the run-based baselines", progress)
    # one pool per topic for every draw (each run read once: the run set holds few of them in memory)
    pooled = pools(runs, sorted(topics), spec.pool_depth, tick=bar.update)
    bar.close()
    base_q = {"reference_count": [reference_count_qrels(None, sorted(topics), n_rel, pooled=pooled)],
              "soboroff": [soboroff_qrels(None, sorted(topics), n_rel, seed=spec.seed + t, pooled=pooled)
                           for t in range(spec.trials)]}
    bar = _bar(len(names) * sum(len(q) for q in base_q.values()), "run-based baselines", progress)
    bscores: dict[str, dict[str, dict[str, float]]] = {b: {} for b in base_q}
    bper: dict[str, dict[str, list[float]]] = {b: {} for b in base_q}
    baseline_qids: dict[str, list[str]] = {}
    for n in runs.held() + [n for n in names if n not in runs.held()]:  # each run read once, those in memory first
        run = runs[n]
        for b, qsets in base_q.items():
            evals = [evaluate_run(q, run, hmeasures) for q in qsets]  # one evaluation per pseudo-qrels set
            bar.update(len(qsets))
            bscores[b][n] = {m: float(np.mean([v[m] for v, _ in evals])) for m in hmeasures}
            baseline_qids[b] = sorted(evals[0][1])
            bper[b][n] = [float(np.mean([per[q]["AP"] for _, per in evals])) for q in baseline_qids[b]]
    bar.close()
    baselines: dict[str, Any] = {}
    baseline_ap: dict[str, np.ndarray] = {}  # per-topic AP under each baseline's pseudo-qrels (trials averaged)
    for b in base_q:
        baselines[b] = {"scores": {n: bscores[b][n] for n in names},
                        "correlations": {hm: correlations([bscores[b][n][hm] for n in names],
                                                          [human_scores[n][hm] for n in names])
                                         for hm in judged.compared}}
        baseline_ap[b] = np.array([bper[b][n] for n in names])
    write_text(hdir / "baselines_per_topic.tsv", "baseline\tsystem\tqid\tAP\n" + "".join(
        f"{b}\t{n}\t{q}\t{v:.6f}\n" for b, m in baseline_ap.items() for n, row in zip(names, m)
        for q, v in zip(baseline_qids[b], row)))
    return baselines, baseline_ap


def _verdicts(nt: dict[str, dict[str, Any]], report_pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each verdict's scores, groups, agreement with human AP and reliability, as report.json keeps them."""
    return {side: {"measure": r["verdict"]["measure"], "task": r["verdict"]["task"],
                   "scores": r["verdict"]["scores"], "groups": r["verdict"]["groups"],
                   "agreement_with_human": next(({"human_measure": p["human_measure"], "stats": p["stats"],
                                                  "ci95": p["ci95"], "stats_top_half": p["stats_top_half"],
                                                  "many_topics": p["many_topics"]}
                                                 for p in report_pairs if p["nt"] == side
                                                 and p["nt_measure"] == r["verdict"]["measure"]
                                                 and p["human_measure"] == "AP"), None),
                   "reliability": {k: r["verdict"]["reliability"][k] for k in ("split_half", "stable_from_topics")}
                   if r["verdict"].get("reliability") else None}
            for side, r in nt.items() if r.get("verdict")}


def _family_checks(protocol: str, res: dict[str, Any]):
    """``check_of(baseline, candidate)`` for the gate section: the pair's family check under the
    verdict this run's references make (:func:`nteval.gate.families.family_check`, with the
    references' encoders: an encoder they do not contain has the leave-model-out evidence)."""
    from ..evidence import reference_encoders, study_side
    from ..gate.families import family_check

    configs = res.get("system_configs") or {}
    side = study_side(protocol, res.get("sref"))
    references = reference_encoders(res.get("sref"))

    def check_of(b: str, c: str) -> dict[str, Any] | None:
        return family_check(side, configs, b, c, references) if b in configs and c in configs else None

    return check_of


def gate_figures(names: list[str], nt: dict[str, dict[str, Any]], nt_scores: dict[str, Any], human_ap: np.ndarray,
                 progress: bool | None = None) -> dict[str, Any]:
    """For each verdict: the release gate's decisions (its own rule) on the NT per-topic scores of
    every ordered pair of systems, against the reference test's on human AP
    (:func:`nteval.correlate.gate_agreement.gate_agreement`); the pairs themselves go to
    report.json, the counts and rates to every report."""
    out: dict[str, Any] = {}
    sides = [s for s, r in nt.items() if r.get("verdict")]
    bar = _bar(len(sides), "the gate's decisions vs the human ones", progress)
    for side in sides:
        m = nt[side]["verdict"]["measure"]
        sc = nt_scores[side]
        out[side] = {"measure": m, **gate_agreement(names, sc.matrix(m, names), list(sc.topics), human_ap,
                                                    check_of=_family_checks(side, nt[side]))}
        bar.update()
    bar.close()
    return out
