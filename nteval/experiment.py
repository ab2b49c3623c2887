"""The NT protocols as one declarative call each (the API behind ``nteval run``, ``nteval
focused`` and ``nteval highrecall``): a protocol from the registry builds topics and qrels, every
system runs over the index the protocol searches, the evaluation core scores the runs, and the
protocol's verdict is written beside the results."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from . import protocols
from .answer import check_task, headline, index_label
from .atomic import write_text
from .effects import MMD
from .errors import InputError
from .evaluate import parse_measures
from .evidence import bias_notes, coverage, evidence, reference_encoders, study_side
from .formats.trec import Run, read_topics, write_qrels, write_topics
from .index import documents_policy, read_manifest
from .leak import refuse_leaks
from .progress import shown, tqdm
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
from .reliability import STABLE_TAU, reliability
from .report.plots import scatter, topics_curve
from .report.text import results_latex
from .runs import RunInfo, Searched, reuse_pieces, run_all, run_all_holdout
from .scores import Scores, evaluate_runs, strata_means
from .session import session
from .settings import AUTO_BATCH, AUTO_BUDGET, Execution, RunSettings, SystemSet, reject_unknown, split_options
from .stats import correlations
from .systems.sets import builtin_systems, find_named_system, resolve_set, resolve_systems  # noqa: F401
from .topics.highrecall import pseudo_relevant_stats
from .topics.ids import topic_set_id
from .verdict import check_topic_floor, make_verdict

FOCUSED_MEASURES = protocols.get("focused").measures
HIGHRECALL_MEASURES = protocols.get("highrecall").measures

__all__ = ["AUTO_BATCH", "AUTO_BUDGET", "Evaluated", "run_protocol", "run_protocol_scores", "run_focused",
           "run_highrecall", "run_sref_sensitivity", "write_results"]


class Evaluated(NamedTuple):
    """One topic set, the infos of the runs made on it, and their scores."""

    tset: TopicSet
    infos: list
    scores: Scores


@dataclass
class _Call:
    """What every step of one protocol run shares."""

    proto: Protocol
    index_dir: Path
    manifest: dict[str, Any]
    systems: list
    systems_path: Path | None
    settings: RunSettings
    execution: Execution


def _previous_verdict(out: Path, topic_set: str) -> dict[str, Any] | None:
    """The verdict results.json held in OUT before this run, if it was on the same topic set."""
    try:
        old = json.loads((out / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return old.get("verdict") if isinstance(old, dict) and old.get("topic_set") == topic_set else None


def _replaced(out: Path, results: dict[str, Any]) -> dict[str, Any] | None:
    """What an earlier verdict in OUT had that this run's does not (other topics, systems left out,
    another task), or None when it only adds to it (or there was none). Its results.json is kept
    as results.previous.json, and a note says so: a run into the same OUT never replaces an
    earlier verdict silently."""
    import shutil
    import sys

    path = out / "results.json"
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(old, dict) or not isinstance(old.get("systems"), dict):
        return None
    changes = []
    if old.get("topic_set") != results["topic_set"]:
        n_old, n_new = old.get("n_topics"), results["n_topics"]
        changes.append(f"{n_old} topics → {n_new}" if n_old != n_new else f"other topics ({n_new})")
    gone = sorted(set(old["systems"]) - set(results["systems"]))
    if gone:
        changes.append(f"system{'s' if len(gone) > 1 else ''} {', '.join(gone[:5])}{' …' if len(gone) > 5 else ''} "
                       "no longer in it")
    if old.get("task") != results["task"]:
        changes.append(f"task {old.get('task') or 'none'} → {results['task'] or 'none'}")
    if not changes:
        return None
    keep = out / "results.previous.json"
    shutil.copyfile(path, keep)
    print(f"note: {path} held an earlier verdict ({'; '.join(changes)}): replaced by this run's; the earlier one is "
          f"kept as {keep.name} (give another --out to keep both whole)", file=sys.stderr)
    return {"changes": changes, "previous": keep.name}


def write_results(out: Path, proto: Protocol, seed: int, result: Evaluated, extra: dict[str, Any],
                  settings: RunSettings, progress: bool | None = None) -> dict[str, Any]:
    """Write per-topic scores, results.tsv, results.json and results.tex (booktabs, for a paper),
    and the protocol's verdict (significance groups, effect sizes, reliability) in results.json
    and significance.tsv. ``result.scores``: every run evaluated on ``result.tset.qrels``;
    ``settings.measures``: the measures reported (resolved)."""
    import sys

    tset, infos, scores = result
    measures = list(settings.measures or proto.measures)
    correction, mmd, task = settings.correction, settings.mmd, settings.task
    vmeasure = proto.verdict.measure
    write_text(out / "per_topic.tsv", scores.tsv(measures))
    systems = {n: {m: round(v, 6) for m, v in means.items() if m in measures} for n, means in scores.means.items()}
    topic_set = topic_set_id(proto.name, tset.topics, tset.qrels)
    with tqdm(total=1, desc="verdict (paired tests, effect sizes, reliability)", disable=not shown(progress), file=sys.stderr,
              leave=False) as bar:
        verdict = make_verdict(proto.name, scores.per_topic, correction=correction, seed=seed, mmd=mmd,
                               previous=_previous_verdict(out, topic_set)) if scores.per_topic else None
        bar.update()
    if verdict and verdict.get("reliability") and verdict["reliability"]["curve"]:
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
        "topic_set": topic_set,
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

    results["coverage"] = coverage(results["collection"]) if results.get("collection") else None
    results["evidence"] = evidence(proto.name, study_side(proto.name, results.get("sref")))
    results["bias_notes"] = bias_notes(proto.name, results["system_configs"], study_side(proto.name, results.get("sref")),
                                       reference_encoders(results.get("sref")))
    results["task"] = task
    if task is not None and verdict:
        results["answer"] = headline(task, results, index_label(results))
    replaced = _replaced(out, results)
    if replaced:
        results["replaced"] = replaced
    header = "system\talgorithm\t" + "\t".join(measures) + "\tempty_queries"
    rows = [header] + [f"{i.system.name}\t{i.system.describe()}\t" + "\t".join(f"{systems[i.system.name][m]:.4f}" for m in measures)
                       + f"\t{i.empty_queries}" for i in infos]
    write_text(out / "results.tsv", "\n".join(rows) + "\n")
    write_text(out / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")

    write_text(out / "results.tex", results_latex(results, vmeasure if vmeasure in measures else None))
    return results


def _run_topic_set(call: _Call, spec: ProtocolSpec, out: Path, runs_dir: Path, floor: int | None) -> Evaluated:
    """Build one topic set into ``out`` (topics.tsv, qrels.txt and the protocol's own files), run
    every system into ``runs_dir`` and evaluate the runs. ``floor``: the topic floor checked before
    any system runs (None: the caller checks the total)."""
    proto, index_dir, ex, depth = call.proto, call.index_dir, call.execution, call.settings.depth
    tset = proto.build(index_dir, spec, out, progress=ex.progress, systems_path=call.systems_path)
    if floor is not None:
        check_topic_floor(proto.name, tset.counts["used"], tset.counts["requested"], tset.counts["eligible"], floor,
                          index_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_topics(out / "topics.tsv", tset.topics)
    write_qrels(out / "qrels.txt", tset.qrels)
    where = Searched(index_dir, proto.searches, call.manifest["fingerprint"], label=proto.name)
    runs: Mapping[str, Run]
    if tset.holdout:
        if ex.scheduler:
            import sys

            print("note: --holdout runs are computed here, not on the cluster (their index copies live under OUT)",
                  file=sys.stderr)
        runs, infos, _ = run_all_holdout(where, tset.queries, call.systems, runs_dir / "holdout", depth, ex,
                                         sources=tset.sources)
    else:
        if floor is None and tset.run_topics is not None:  # (a batch of --topics auto: what its runs answer)
            write_topics(out / "queries.tsv", tset.queries)
        elif floor is not None and (out / "batches").is_dir():
            _reuse_batches(out / "batches", where, tset.queries, call.systems, runs_dir, depth)
        runs, infos = run_all(where, tset.queries, call.systems, runs_dir, depth, ex)

    refuse_leaks(index_dir, proto.name, runs, tset.topics, {q: tset.source(q) for q in tset.topics}, call.systems)
    vmeasure = proto.verdict.measure
    measures = list(call.settings.measures or ())
    evaluated = measures + ([vmeasure] if vmeasure not in measures else [])
    scores = evaluate_runs(runs, tset.qrels, evaluated, progress=ex.progress, names=[i.system.name for i in infos])
    return Evaluated(tset, infos, scores)


def _reuse_batches(batches: Path, where: Searched, queries: dict[str, str], systems: list, runs_dir: Path,
                   depth: int) -> None:
    """A fixed ``--topics N`` into an OUT where ``--topics auto`` ran: the systems' runs over the
    first batches, when they are exactly these topics (the sample order is prefix-stable: N = the
    documents auto sampled), are put together instead of searched again
    (:func:`nteval.runs.reuse_pieces`)."""
    import sys

    pieces = []
    for d in sorted(p for p in batches.iterdir() if p.is_dir() and (p / "runs").is_dir()):
        qfile = d / "queries.tsv" if (d / "queries.tsv").is_file() else d / "topics.tsv"
        try:
            pieces.append((read_topics(qfile), d / "runs"))
        except (InputError, OSError):
            continue
    done = reuse_pieces(where, queries, systems, runs_dir, depth, pieces)
    if done:
        print(f"note: {len(done)} system run{'s' if len(done) != 1 else ''} put together from the --topics auto "
              f"batches in {batches} (the same topics): not searched again", file=sys.stderr)


def _merge(parts: list[Evaluated], counts: dict[str, Any]) -> Evaluated:
    """The batches of ``--topics auto`` as one topic set, its runs' infos summed, its scores joined."""
    from dataclasses import replace

    first = parts[0][0]
    topics: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    queries: dict[str, str] = {}
    sources: dict[str, str] = {}
    for tset, _, _ in parts:
        topics.update(tset.topics)
        qrels.update(tset.qrels)
        queries.update(tset.queries)
        sources.update(tset.sources or {})
    stats = dict(parts[-1][0].stats)
    if "pseudo_relevant_per_topic" in stats:  # (high-recall: recount over every batch)
        stats["pseudo_relevant_per_topic"] = pseudo_relevant_stats(qrels)
        stats["dropped"] = {k: sum(t.stats["dropped"][k] for t, _, _ in parts) for k in first.stats["dropped"]}
        stats["judged_outside_nt"] = {k: sum(t.stats["judged_outside_nt"][k] for t, _, _ in parts)
                                      for k in first.stats["judged_outside_nt"]}
    merged = replace(first, topics=topics, qrels=qrels, counts=counts, stats=stats,
                     run_topics=queries if first.run_topics is not None else None, sources=sources or None)
    infos = []
    for k, i in enumerate(parts[0][1]):
        same = [p[1][k] for p in parts]
        secs = sum(x.seconds for x in same)
        n = sum(len(p[0].queries) for p in parts)
        infos.append(RunInfo(i.system, i.path.parents[2], "batches",
                             all(x.reused for x in same), secs, sum(x.empty_queries for x in same),
                             round(n / secs, 1) if secs > 0 else None, i.notes))
    return Evaluated(merged, infos, _joined_scores(parts))


def _joined_scores(parts: list[Evaluated]) -> Scores:
    """The scores of every batch of ``--topics auto`` as one Scores over all their topics."""
    first = parts[0][2]
    return Scores.of_topics(first.measures, {s: {q: v for _, _, sc in parts for q, v in sc.per_topic[s].items()}
                                             for s in first.per_topic})


def _auto_topics(call: _Call, spec: ProtocolSpec, out: Path) -> tuple[Evaluated, dict[str, Any]]:
    """``--topics auto``: seeded batches of ``batch`` documents of the sample order (each in
    OUT/batches/NNN/, runs cached there) until the ranking is stable — the split-half τ of the
    verdict measure between two disjoint halves of the topics used reaches
    :data:`~nteval.reliability.STABLE_TAU` (0.9, mean of 200 draws) — or the eligible documents or
    the budget of sampled documents (``settings.topics_budget``) run out. Returns the merged topic
    set, infos and scores, and what happened (``auto``: batches, stopping reason, the τ at each
    step)."""
    from dataclasses import replace

    proto = call.proto
    budget, min_topics, batch = call.settings.topics_budget, call.settings.min_topics, call.settings.topics_batch
    if not hasattr(spec, "offset"):
        raise InputError(None, f"--topics auto: the {proto.name} protocol does not sample documents in a seeded order "
                               "(only focused and high-recall do); give a number of topics")
    if budget < min_topics:
        raise InputError(None, f"--topics-budget {budget:,} samples fewer documents than the floor of {min_topics:,} "
                               "topics (--min-topics): raise the budget or lower the floor")
    if len(call.systems) < 2:
        raise InputError(None, "--topics auto stops once the ranking of the systems is stable: one system has no "
                               "ranking to stabilize; give a number of topics (--topics N)")
    if any(s.kind.fixed_topics for s in call.systems):
        raise InputError(None, "--topics auto cannot score external run files: they answer a fixed topic set. Run "
                               "--topics auto without them first, then the same command with --topics N (the number "
                               "it used) and --runs")
    vm = proto.verdict.measure
    parts: list[Evaluated] = []
    steps: list[dict[str, Any]] = []
    reason = ""
    k = 0
    while True:
        # batches of `batch` documents of the seeded order, the last one cut to what the budget leaves
        size = min(batch, budget - k * batch)
        batch_changes: dict[str, Any] = {"n_topics": size, "offset": k * batch}  # (offset: not every ProtocolSpec's)
        bspec = replace(spec, **batch_changes)
        part = _run_topic_set(call, bspec, out / "batches" / f"{k:03d}", out / "batches" / f"{k:03d}" / "runs", None)
        parts.append(part)
        eligible = part[0].counts["eligible"]
        sampled = min(k * batch + size, eligible)
        used = sum(len(p[0].qrels) for p in parts)
        per = _joined_scores(parts).of(vm)
        rel = reliability(per, vm, seed=spec.seed) if len(per) >= 2 and used >= 4 else None
        tau = rel["split_half"]["tau_mean"] if rel and rel["split_half"] else None
        steps.append({"sampled": sampled, "topics": used, "split_half_tau": tau,
                      "per_half": rel["split_half"]["topics"] if rel and rel["split_half"] else None})
        if tau is not None and tau >= STABLE_TAU and used >= min_topics:
            reason = (f"stable: two disjoint halves of the {used:,} topics rank these {len(call.systems)} systems alike at "
                      f"split-half Kendall tau {tau:.3f} ≥ {STABLE_TAU} (mean of 200 draws; another set of systems may "
                      "need more or fewer topics)")
            break
        unstable = (f"split-half tau {tau:.3f} < {STABLE_TAU}" if tau is not None else
                    "split-half tau undefined (the systems tie on the topics of a half: no ranking to agree on)")
        if sampled >= eligible:
            reason = (f"the eligible pool is exhausted ({eligible:,} documents can be topics); {unstable}: the ranking "
                      "is not stable on this collection")
            break
        if sampled >= budget:
            reason = f"the budget of {budget:,} sampled documents is spent (--topics-budget); {unstable}: not yet stable"
            break
        k += 1
    counts = {"requested": "auto", "eligible": parts[0][0].counts["eligible"], "used": used, "batches": k + 1,
              "sampled": sampled, "stopped": reason}
    merged = _merge(parts, counts)
    tset = merged.tset
    tset.stats["sample"] = {**tset.stats.get("sample", {}), "n": sampled, "offset": 0}
    tset.stats["topics_requested"] = "auto"
    auto = {"batch": batch, "budget": budget, "criterion": f"split-half Kendall tau of {vm} ≥ {STABLE_TAU}",
            "stopped": reason, "steps": steps}
    return merged, auto


def run_protocol_scores(protocol: str | Protocol, index_dir: str | Path, out: str | Path,
                        spec: ProtocolSpec | None = None, systems: Any = None, settings: RunSettings | None = None,
                        execution: Execution | None = None, **options: Any) -> tuple[dict[str, Any], Scores]:
    """:func:`run_protocol`, also returning the in-memory :class:`~nteval.scores.Scores`.

    ``systems``: a systems YAML, a shipped set's name, a list of Systems or a
    :class:`~nteval.settings.SystemSet` (with the external runs of ``--runs``).
    ``settings`` (:class:`~nteval.settings.RunSettings`): depth, measures, topic floor,
    correction, minimum meaningful difference, declared task, ``--topics auto`` limits, runs cache.
    ``execution`` (:class:`~nteval.settings.Execution`): progress, threads, Dask scheduler (the
    systems' runs are computed by its workers, one task per system; held-out runs stay local).
    ``options``: the protocol spec's parameters (``n_topics=500, seed=1``; ``n_topics="auto"``
    draws topics in batches until the ranking is stable, :func:`_auto_topics`), and any field of
    the two objects above as a plain keyword (``depth=100, progress=False``).

    The shared prologue holds for the call (:func:`nteval.session.session`: OUT locked, index
    read-locked, one Dask session). ``settings.task`` (``known-item`` or ``topical``,
    :data:`nteval.answer.TASKS`): the protocol must measure it, and results.json leads with its
    headline answer."""
    systems = SystemSet.take(systems, options)
    settings, execution, params = split_options(options, settings, execution)
    proto = protocols.get(protocol) if isinstance(protocol, str) else protocol
    settings = _checked(settings, proto)
    auto = params.get("n_topics") == "auto" or (spec is not None and getattr(spec, "n_topics", None) == "auto")
    if auto:
        params = {k: v for k, v in params.items() if k != "n_topics"}
    elif spec is not None:
        reject_unknown(params, f"protocol {proto.name}")
    spec = spec if spec is not None and not auto else proto.Spec.from_params(**params)
    settings = _replace(settings, mmd=MMD.parse(settings.mmd))
    check_task(settings.task, proto.name)
    with session(out, index_dir, execution.scheduler) as index_dir:
        out = Path(out)
        manifest = read_manifest(index_dir)
        proto.check_index(index_dir)
        systems_path, system_list = resolve_set(systems)
        call = _Call(proto, index_dir, manifest, system_list, systems_path, settings, execution)
        extra: dict[str, Any] = {}
        if auto:
            result, extra["auto"] = _auto_topics(call, spec, out)
            tset = result.tset
            check_topic_floor(proto.name, tset.counts["used"], tset.counts["sampled"], tset.counts["eligible"],
                              settings.min_topics, index_dir)
            write_topics(out / "topics.tsv", tset.topics)
            write_qrels(out / "qrels.txt", tset.qrels)
        else:
            result = _run_topic_set(call, spec, out, settings.runs_dir or out / "runs", settings.min_topics)
        check_unchanged(index_dir, manifest, result.infos)
        extra = {"index": str(index_dir.absolute()), "index_fingerprint": manifest["fingerprint"],
                 "collection": collection_counts(manifest, proto.searches), "systems_file":
                 str(systems_path) if systems_path else None, "depth": settings.depth, **extra, **result.tset.stats}
        results = write_results(out, proto, spec.seed, result, extra, settings, execution.progress)
        return results, result.scores


def _checked(settings: RunSettings, proto: Protocol) -> RunSettings:
    """The settings with the measures parsed (the protocol's own when none are given)."""
    measures = [str(m) for m in parse_measures(list(settings.measures or proto.measures))]
    return _replace(settings, measures=tuple(measures))


def _replace(settings: RunSettings, **changes: Any) -> RunSettings:
    from dataclasses import replace

    return replace(settings, **changes)


def check_unchanged(index_dir: Path, manifest: dict[str, Any], infos: list) -> None:
    """The index is still the one the runs were made on (its fingerprint), or one line — and the
    runs this call made are removed, not left cached under a key that names another index. (nteval
    processes cannot change an index a reader holds (:func:`nteval.atomic.read_lock`); this
    catches anything else, e.g. another machine on a shared file system.)"""
    try:
        now = read_manifest(index_dir)["fingerprint"]
    except InputError:
        now = None
    if now == manifest["fingerprint"]:
        return
    for info in infos:
        if not info.reused and Path(info.path).is_file():
            Path(info.path).unlink(missing_ok=True)
            Path(info.path).with_suffix(".meta.json").unlink(missing_ok=True)
    raise InputError(index_dir, "the index changed while the systems ran (its fingerprint is not the one they started "
                                "on): their runs were discarded; run the command again")


def collection_counts(manifest: dict[str, Any], searches: str) -> dict[str, Any]:
    """What the index holds (every report says it): documents of each Lucene index, which one the
    systems searched, and how many documents have the title and abstract a topic needs."""
    st = manifest.get("store", {})
    skipped = (manifest.get("counts") or {}).get("skipped") or {}
    n_all, n_nt = manifest["indexes"]["all"]["documents"], manifest["indexes"]["nt"]["documents"]
    return {"all": n_all, "nt": n_nt, "searched": searches, "documents_policy": documents_policy(manifest),
            "with_title_and_abstract": st.get("with_title_and_abstract", n_nt),
            "without_abstract": st.get("without_abstract", n_all - n_nt), "without_title": st.get("without_title", 0),
            "skipped_without_title_or_abstract": sum(skipped.get(k, 0) for k in ("no_title", "no_abstract"))}


def run_protocol(protocol: str | Protocol, index_dir: str | Path, out: str | Path, **kwargs: Any) -> dict[str, Any]:
    """Run every system under ``protocol`` (a registered name or a Protocol) and write OUT/topics.tsv,
    qrels.txt, runs/, per_topic.tsv, results.tsv, results.json (with the verdict), significance.tsv.

    ``spec`` (the protocol's ProtocolSpec) or its parameters as keywords (``n_topics=500, seed=1``);
    ``systems``, ``settings``, ``execution`` and their fields as keywords: see
    :func:`run_protocol_scores`. Fails with a one-line InputError when fewer than
    ``settings.min_topics`` topics are usable."""
    return run_protocol_scores(protocol, index_dir, out, **kwargs)[0]


def run_focused(index_dir: str | Path, out: str | Path, n_topics: int | str = 1000, seed: int = 42,
                systems: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Focused NT protocol: sample D0, titles → queries over ``nt``, each doc its own relevant.
    ``kwargs``: the sampling filters of :class:`~nteval.protocols.focused.FocusedSpec`
    (``language``, ``year_min``…) and the settings of :func:`run_protocol_scores` (``depth``,
    ``measures``, ``progress``, ``min_topics``…). Fails (InputError) when fewer than
    ``min_topics`` documents can become topics."""
    return run_protocol("focused", index_dir, out, n_topics=n_topics, seed=seed, systems=systems, **kwargs)


def run_highrecall(index_dir: str | Path, out: str | Path, n_topics: int | str = 1000, seed: int = 42,
                   sref: str | Path | list | None = None, systems: Any = None, **kwargs: Any) -> dict[str, Any]:
    """High-recall NT protocol (see :mod:`nteval.protocols.highrecall`): S_ref over ``all`` with the
    titles → Z-score pseudo-qrels; the n-th abstract sentence → queries over ``nt`` (with the
    source documents held out of it when ``holdout``). ``preset`` (:data:`HIGHRECALL_PRESETS`)
    replaces the S_ref, combination, grading, hold-out and judged settings. ``kwargs``: the other
    fields of :class:`~nteval.protocols.highrecall.HighRecallSpec` (k, zt, sentence, judged...)
    and the settings of :func:`run_protocol_scores` (``depth``, ``runs_dir``, ``progress``…)."""
    return run_protocol("highrecall", index_dir, out, n_topics=n_topics, seed=seed, sref=sref, systems=systems,
                        **kwargs)


def run_sref_sensitivity(index_dir: str | Path, out: str | Path, srefs: list[str], **kwargs: Any) -> dict[str, Any]:
    """The paper's Figure 3: the same systems under two (or more) S_ref choices; Pearson, Spearman
    and Kendall between the score vectors per measure, and a scatter PNG per measure (first two
    S_refs). System runs are shared: only the pseudo-qrels differ."""
    from itertools import combinations

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
                scatter(x, y, systems, (f"{m} with S_ref = {a}", f"{m} with S_ref = {b}", title),
                        out / f"sref_{m.replace('@', '_at_')}.png")
        pairs[f"{a} vs {b}"] = stats
    result = {"protocol": "sref-sensitivity", "srefs": labels, "measures": measures, "systems": systems,
              "scores": {lab: per_sref[lab]["systems"] for lab in labels},
              "pseudo_relevant_per_topic": {lab: per_sref[lab]["pseudo_relevant_per_topic"] for lab in labels},
              "n_topics": {lab: per_sref[lab]["n_topics"] for lab in labels},
              "correlations": pairs}
    write_text(out / "sref_sensitivity.json", json.dumps(result, indent=2) + "\n")
    return result
