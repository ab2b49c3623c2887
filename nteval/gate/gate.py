"""``nteval gate``: is the candidate at least as good as what is live, for the users' task?

A baseline (the system in production) and one or more candidates (the next release) run on a
pinned topic set (:mod:`nteval.gate.pin`) of the declared task (known-item: the focused topics,
RR; topical: the high-recall topics, AP), optionally with fresh topics from the documents added
since the pin. Each candidate gets one decision (:mod:`nteval.gate.decide`): better,
non-inferior, worse or inconclusive; the gate passes when every candidate is better or
non-inferior. Beside the decision: the topics that moved most, churn (RBO, overlap@10), the
share of unjudged new documents in the top 10, and for fresh topics the gap between the pinned and
the fresh gain (a sign of tuning on, or having seen, the pinned topics).

Exit codes (stable, :data:`EXIT`): 0 pass, 3 regression, 4 inconclusive, 5 pass with an alert of
the history, 2 bad input (as every nteval command), 1 a failure of nteval or the machine.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..answer import TASKS
from ..atomic import out_lock
from ..effects import ceiling
from ..errors import InputError, short
from ..evidence import coverage, reference_encoders, study_side
from ..experiment import check_unchanged, collection_counts
from ..formats.trec import one_tag
from ..index import read_manifest
from ..leak import refuse_leaks, title_gain
from ..params import check_declared, param, same_as
from ..runs import Searched, run_all
from ..scores import evaluate_runs
from ..session import session
from ..settings import Execution, RunSettings
from ..systems.base import load_systems
from ..systems.external import runs_from_dir
from ..systems.families import EMBEDDING_FAMILIES, declared, families
from ..systems.remote import answers_used
from ..systems.sets import builtin_systems, find_named_system, shipped_sets, suggest_system
from ..traits import CLASS_TOP, Matches, read_matches, same_encoder
from .changes import churn, moved_topics, unjudged_share
from .decide import MIN_FRESH, PASSING, DecisionRule, decide
from .families import after_overstatement, apply_rules, earned_configs, family_check, for_the_decision
from .history import check_history, mean_ci, record_gate
from .outputs import claim_out, stake, unstake, write_check_outputs, write_outputs
from .pin import AppliedTopics, Pin, apply_pin, check_references, fresh_topics, read_pin
from .report import headline

#: exit status → what it means (documented in docs/gate.md; stable across versions)
EXIT = {"pass": 0, "regression": 3, "inconclusive": 4, "alert": 5}
#: the measure each task's decision is made on (the protocols' verdict measures)
TASK_MEASURE = {"known-item": "RR", "topical": "AP"}


@dataclass(frozen=True)
class GateSpec:
    """How a gate decides. ``task``: known-item or topical (required); ``mmd``: the margin (the
    minimum meaningful difference; relative to the baseline's score); ``alpha``: the error rate of
    each decision (split over the candidates); ``fresh``: fresh topics to add (0: none);
    ``label``/``baseline_label``: the releases' version labels in outputs and the history."""

    task: str | None = param(None, "the search task your users do: known-item (the focused topics, RR) or topical "
                                   "(the high-recall topics, AP)", choices=tuple(TASKS))
    mmd: Any = param("5%", "the non-inferiority margin: the minimum meaningful difference, a share of the baseline's "
                           "score (5%) or an absolute difference (0.01)", metavar="SHARE%|DIFF")
    alpha: float = param(0.05, "error rate of each decision (a false pass at the margin, a false regression), split "
                               "over the candidates (Bonferroni)", min=0.0001, max=0.25)
    fresh: int = param(0, "also decide on up to this many fresh topics: documents added to the index since the pin "
                          "(0: none)", min=0)
    depth: int = same_as(RunSettings, "depth")
    changed: int = param(10, "topics listed as most worse and most better", min=0, max=1000)
    label: str | None = param(None, "the candidate's version label (e.g. v2.4; default: its system name)")
    baseline_label: str | None = param(None, "the baseline's version label (default: its system name)")
    reuse_answers: bool = param(False, "replay the answers a live engine (http, postgres) gave earlier gates and checks "
                                       "instead of asking it now (the headline says how many, and from when)")

    def __post_init__(self) -> None:
        check_declared(self, as_options=True)

    def checked(self) -> GateSpec:
        """The spec, or one line when the task is not declared (a gate decides for one task)."""
        if self.task is None:
            raise InputError(None, "--task: declare the task your users do: known-item (find the one document a "
                                   "description points to) or topical (find everything on a topic)")
        for flag, label in (("--label", self.label), ("--baseline-label", self.baseline_label)):
            if label is not None and (not label.strip() or len(label) > 100 or not label.isprintable()
                                      or any(c in label for c in "|`<>")):
                raise InputError(None, f"{flag} {label!r}: a version label is one line of up to 100 printable "
                                       "characters, without | ` < > (it is shown in tables, pages and the history)")
        if self.label is not None and self.label == self.baseline_label:
            raise InputError(None, f"--label and --baseline-label are both {self.label!r}: a candidate is another "
                                   "release than the one live")
        return self

    @property
    def protocol(self) -> str:
        return TASKS[str(self.task)][0]

    @property
    def measure(self) -> str:
        return TASK_MEASURE[str(self.task)]


def resolve_system(ref: str, systems_file: str | Path | None, role: str):
    """A system a gate runs: a name in ``systems_file`` or the shipped sets, a systems YAML holding
    one system, or a TREC run file (named by its run tag). One line naming the option otherwise."""
    p = Path(str(ref)).expanduser()
    if p.suffix in (".yaml", ".yml") and p.is_file():
        found = load_systems(p)
        if len(found) != 1:
            raise InputError(p, f"--{role}: a systems file given as the {role} must hold exactly one system (found "
                                f"{len(found)}); give --systems FILE and the system's name instead")
        return found[0], p
    if p.is_file():
        one_tag(p)  # (two runs in one file: one line naming both tags)
        (s,) = runs_from_dir(p)
        s.params["run"] = str(p.resolve())
        return s, None
    files = [Path(systems_file) if systems_file else None] + [builtin_systems(n) for n in shipped_sets()]
    named = find_named_system(str(ref), files)
    if named is None:
        where = f"{systems_file} or the shipped sets" if systems_file else "the shipped sets (give --systems FILE)"
        raise InputError(None, f"--{role} {short(ref)}{suggest_system(str(ref), files)}: no such system in {where}, "
                               "and not a systems YAML or a run file")
    return named


#: a run file answering fewer of the pinned topics than this share is refused (a run of another
#: topic set, or one cut short, would otherwise be scored 0 on the rest and decide the gate)
MIN_RUN_COVERAGE = 0.5


def answered(runs: dict[str, dict[str, list]], systems: list, topics: dict[str, str], kind: str) -> dict[str, int]:
    """How many of ``topics`` each system answered (one hit or more). A system that answered none,
    or a run file answering fewer than :data:`MIN_RUN_COVERAGE` of them, is one line: an empty or
    truncated run must not pass (as a baseline) or fail (as a candidate) a release."""
    n = len(topics)
    out: dict[str, int] = {}
    for s in systems:
        got = sum(1 for q in topics if runs.get(s.name, {}).get(q))
        out[s.name] = got
        run_file = None if s.kind.computed else s.params.get("run")
        if n and got == 0:
            raise InputError(run_file, f"system {s.name} answered none of the {n:,} {kind} topics (an empty or cut-short "
                                       "run?): there is nothing to decide on")
        if run_file and n and got < MIN_RUN_COVERAGE * n:
            raise InputError(run_file, f"this run answers {got:,} of the {n:,} {kind} topics: a run of another topic set, "
                                       "or one cut short? A gate decides on runs over the pin's topics (PIN/"
                                       "focused/topics.tsv or PIN/highrecall/topics.tsv); a topic it does not answer "
                                       "would score 0")
    return out


def _with_inputs(system, file: Path | None) -> list:
    """A system and, first, the systems its run is made from (fusions), from the same file."""
    inputs = system.kind.inputs(system)
    if not inputs:
        return [system]
    pool = {s.name: s for s in load_systems(file)} if file else {}
    out: list = []
    for name in inputs:
        if name not in pool:
            raise InputError(file, f"system {system.name}: its input {name} is not in the same file")
        out += [s for s in _with_inputs(pool[name], file) if s.name not in {o.name for o in out}]
    return out + [system]


def engine_of(system, notes: dict | None, manifest: dict[str, Any]) -> str | None:
    """The engine that answered a system's queries, with its version where known (the history
    records it): what the engine reported (the remote kinds put it in their notes), else the
    kind's engine package and version."""
    from importlib.metadata import PackageNotFoundError, version

    if notes and notes.get("engine_version"):
        engine = notes.get("preset") if notes.get("preset") not in (None, "", "custom") else notes.get("engine")
        return f"{engine} {notes['engine_version']}" if engine else str(notes["engine_version"])
    kind = system.kind
    if kind.needs_lucene:
        return f"Lucene {manifest.get('versions', {}).get('lucene', '?')}"
    package = kind.engine_package
    if package:
        try:
            return f"{package} {version(package)}"
        except PackageNotFoundError:
            return package
    return None


def _scores(runs, qrels: dict, names: list[str], measure: str) -> dict[str, dict[str, float]]:
    sc = evaluate_runs(runs, qrels, [measure], progress=False, names=names)
    return sc.of(measure)


def _settings(verb: str, spec: GateSpec | None, options: dict[str, Any]) -> tuple[GateSpec, Any, Any]:
    """A gate's or check's (spec, execution, runs cache) from the Python API's keywords: any field of
    :class:`GateSpec`, ``execution`` (or ``progress``) and ``runs_dir``; one line for anything else."""
    from dataclasses import replace

    execution = options.pop("execution", None) or Execution(progress=options.pop("progress", None))
    runs_dir = options.pop("runs_dir", None)
    spec = replace(spec or GateSpec(), **{k: options.pop(k) for k in list(options) if k in GateSpec.__dataclass_fields__}).checked()
    if options:
        raise InputError(None, f"{verb}: unknown parameter {next(iter(options))!r}")
    # a live engine is asked now: its answers to earlier gates and checks are replayed only when asked for
    execution = replace(execution, answers="reuse" if spec.reuse_answers else "ask")
    return spec, execution, runs_dir


def _answers(result: dict[str, Any], infos: list) -> None:
    """``result["answers"]``: what the live engines answered now and what came from earlier; when
    any answer was not asked now, the headline says so."""
    result["answers"] = answers_used(infos)
    note = result["answers"]["note"]
    if note and "headline" in result:
        result["headline"]["text"] += f" {note}"


@contextlib.contextmanager
def _claimed(out: str | Path) -> Iterator[None]:
    """OUT locked and claimed (:func:`~nteval.gate.outputs.claim_out`) before anything else, so every
    way a gate or check can stop, the first check of its options included, leaves no earlier
    gate.md or junit.xml in OUT for a pipeline to post."""
    if not isinstance(out, (str, Path)):
        raise InputError(None, f"out={out!r}: give an output directory")
    made = not Path(out).exists()
    with out_lock(out):
        claim_out(Path(out), "gate")
        try:
            yield
        except InputError:
            if made:   # a refusal leaves no OUT it made with nothing in it but its stake (hostile T8)
                unstake(Path(out))
            raise


@contextlib.contextmanager
def _opened(out: Path, index_dir: str | Path, pin: str | Path | Pin, history: str | Path | None,
            execution: Any) -> Iterator[tuple[Path, Pin, dict[str, Any]]]:
    """What a gate or check works in: the history checked before anything is searched, then the
    session (OUT locked, the index read-locked), the pin read and the index's manifest. Yields
    (index_dir, pin, manifest)."""
    if history is not None:
        check_history(history)
    with session(out, index_dir, execution.scheduler) as index_path:
        stake(out)
        yield index_path, pin if isinstance(pin, Pin) else read_pin(pin), read_manifest(index_path)


def _runs_cache(runs_dir: str | Path | None, out: Path, pin: Pin, spec: GateSpec) -> Path:
    """Where a gate's or check's runs are kept: OUT/runs, or with ``--runs-cache DIR`` (shared by
    gates of both tasks, on several pins) DIR/PIN-ID/PROTOCOL, so that each topic set keeps its own
    runs instead of the gates of the other task rewriting them."""
    return Path(runs_dir) / pin.id / spec.protocol if runs_dir else out / "runs"


def _run_set(applied: AppliedTopics, systems: list, where, runs_dir: Path, depth: int, execution):
    return run_all(where, applied.topics, systems, runs_dir, depth, execution)


#: why fresh topics are not made for a gate or check of a system nteval does not run
FRESH_NEEDS_RUNS = "fresh topics need systems nteval runs (a run file answers only the topics it was made for)"


def _fresh_skipped(spec: GateSpec, to_run: list) -> AppliedTopics | None:
    """When fresh topics were asked for (``--fresh N``) and a system cannot search them (a run
    file): the reason said on stderr before any work, and the empty fresh set that records it."""
    import sys

    outside = [s.name for s in to_run if not s.kind.computed]
    if not spec.fresh or not outside:
        return None
    print(f"note: --fresh {spec.fresh}: no fresh topic made: {FRESH_NEEDS_RUNS}; not run by nteval: "
          f"{', '.join(outside)}", file=sys.stderr)
    return AppliedTopics(spec.protocol, "fresh", {}, {}, {}, {"asked": spec.fresh, "systems_left_out": outside,
                                                              "why_not": FRESH_NEEDS_RUNS})


def _fresh_possible(spec: GateSpec, pin: Pin, skipped: AppliedTopics | None) -> None:
    """Before any run: fresh topical topics this install cannot judge as the pin's were judged are
    one line now, not after the pinned runs (hostile T8: the refusal came after work was written)."""
    if spec.fresh and skipped is None and spec.protocol == "highrecall":
        check_references(pin, f"fresh topics (--fresh {spec.fresh})")


def _fresh_made(spec: GateSpec, pin: Pin, index_dir: Path, out: Path, execution) -> AppliedTopics:
    fresh = fresh_topics(pin, index_dir, spec.protocol, spec.fresh, out / ".fresh-work", execution.progress)
    _cleanup(out / ".fresh-work")
    return fresh


def _gate_systems(baseline: str, candidates: list[str], systems: str | Path | None) -> tuple[Any, list, list]:
    """(the baseline, the candidates, every system to run: fusions' inputs first), resolved; one
    line when two share a name."""
    base_sys, base_file = resolve_system(baseline, systems, "baseline")
    cands = [resolve_system(c, systems, "candidate") for c in candidates]
    names = [base_sys.name] + [c[0].name for c in cands]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(None, f"the baseline and candidates must have distinct names ({dup} is given twice); "
                               "rename one in its systems file or run tag")
    to_run: list = []
    for s, f in [(base_sys, base_file), *cands]:
        to_run += [x for x in _with_inputs(s, f) if x.name not in {r.name for r in to_run}]
    return base_sys, [c[0] for c in cands], to_run


@dataclass(frozen=True)
class _Job:
    """What a gate or check works with once :func:`_opened`: its spec, the pin, the index
    (directory and manifest), OUT, where its runs are cached (:func:`_runs_cache`) and how they run."""

    spec: GateSpec
    pin: Pin
    index_dir: Path
    manifest: dict[str, Any]
    out: Path
    cache: Path
    execution: Any

    def searched(self, kind: str):
        """The index as topic set ``kind`` (pinned, fresh) searches it, its runs labelled by the pin."""
        label = f"{self.pin.id}-{self.spec.protocol}" + ("-fresh" if kind == "fresh" else "")
        return Searched(self.index_dir, "nt", self.manifest["fingerprint"], label=label)


def _gate_sets(job: _Job, to_run: list, shown: list) -> list[tuple[AppliedTopics, Any, list]]:
    """The topic sets a gate decides on, each with its runs and run infos: the pinned topics (the
    runs checked for answers and for titles), and the fresh ones when asked for (runs None when
    none could be made or searched)."""
    spec, pin, index_dir = job.spec, job.pin, job.index_dir
    proto = spec.protocol
    pinned = apply_pin(pin, index_dir, proto)
    if not pinned.topics:
        raise InputError(pin.path, f"no pinned {proto} topic is left on this index (all {pinned.status['pinned']} "
                                   "retired): make a new pin")
    skipped = _fresh_skipped(spec, to_run)
    _fresh_possible(spec, pin, skipped)
    runs, infos = _run_set(pinned, to_run, job.searched("pinned"), job.cache / "pinned", spec.depth, job.execution)
    pinned.status["answered"] = answered(runs, shown, pinned.topics, "pinned")
    checked = refuse_leaks(index_dir, proto, runs, pinned.topics, pinned.sources, to_run)
    if checked:
        pinned.status["title_leak"] = checked
    sets = [(pinned, runs, infos)]
    fresh = skipped or (_fresh_made(spec, pin, index_dir, job.out, job.execution) if spec.fresh else None)
    if fresh is not None and fresh.topics:
        sets.append((fresh, *_run_set(fresh, to_run, job.searched("fresh"), job.cache / "fresh", spec.depth,
                                      job.execution)))
    elif fresh is not None:
        sets.append((fresh, None, []))
    return sets


def run_gate(index_dir: str | Path, pin: str | Path | Pin, out: str | Path, baseline: str,
             candidates: list[str] | str, spec: GateSpec | None = None, systems: str | Path | None = None,
             **options: Any) -> dict[str, Any]:
    """Gate ``candidates`` against ``baseline`` (each: a system name, a one-system YAML or a run
    file) on ``pin``'s topics of ``spec.task``; write OUT/gate.json, gate.md (for a pull-request
    comment), junit.xml, per_topic.tsv, runs/. ``options``: ``history`` (a SQLite path or a
    postgresql:// URL: the results are appended, alerts checked), ``execution``
    (:class:`~nteval.settings.Execution`), ``runs_dir`` (a run cache shared by gates), and any
    field of :class:`GateSpec` as a keyword. Returns gate.json's content; its ``exit`` is the
    status :data:`EXIT` gives."""
    with _claimed(out):
        out = Path(out)
        history = options.pop("history", None)
        spec, execution, runs_dir = _settings("run_gate", spec, options)
        rule = DecisionRule.of(spec.mmd, spec.alpha)
        _check_types(pin=pin, baseline=baseline, history=history, candidates=candidates)
        candidates = [candidates] if isinstance(candidates, (str, Path)) else list(candidates)
        if not candidates:
            raise InputError(None, "--candidate: give at least one candidate system")
        if spec.label and len(candidates) > 1:
            raise InputError(None, "--label names the release of one candidate; with several candidates, their system "
                                   "names are their labels")
        started, utc = time.perf_counter(), _now()
        with _opened(out, index_dir, pin, history, execution) as (index_dir, pin, manifest):
            base_sys, cands, to_run = _gate_systems(baseline, candidates, systems)
            job = _Job(spec, pin, index_dir, manifest, out, _runs_cache(runs_dir, out, pin, spec), execution)
            sets = _gate_sets(job, to_run, [base_sys, *cands])
            result = _decide_all(job, rule, sets, base_sys.name, [c.name for c in cands])
            result.update(out=str(out), utc=utc, seconds=round(time.perf_counter() - started, 3))
            _answers(result, [i for _, _, inf in sets for i in inf])

            check_unchanged(index_dir, manifest, [i for _, _, inf in sets for i in inf])
            if history is not None:
                result["history"] = record_gate(history, result)
            result["exit"] = exit_status(result)

            write_outputs(out, result)
            return result


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


def _cleanup(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


#: how pinned topics are scored once the index holds documents the pin does not know
CONDENSED = ("pinned topics are scored on condensed rankings (Sakai 2007): the documents added since the pin are "
             "left out of each ranking before scoring, as they were never judged for these topics; so a pinned score "
             "stays comparable across index updates, and the fresh topics score the new documents")


def condensed(runs, names: list[str], known: set[str]) -> dict[str, dict[str, list]]:
    """The runs of ``names`` without the documents outside ``known`` (a condensed list: each
    ranking keeps its order, unjudged-by-construction documents removed)."""
    return {n: {q: [h for h in r if h[0] in known] for q, r in runs[n].items()} for n in names}


def _decide_all(job: _Job, rule: DecisionRule, sets: list, base: str, cands: list[str]) -> dict[str, Any]:
    """Scores, decisions, changes and churn for every candidate on the pinned (and fresh) topics;
    each candidate's overall decision; gate.json's content with its outcome and headline."""
    spec, pin, manifest, index_dir = job.spec, job.pin, job.manifest, job.index_dir
    k = len(cands)
    fresh_used = len(sets) > 1 and sets[1][1] is not None and len(sets[1][0].topics) >= MIN_FRESH
    looks_worse = k * (2 if fresh_used else 1)
    out_sets: dict[str, Any] = {}
    per_topic: dict[str, dict[str, dict[str, float]]] = {}
    infos_all: dict[str, Any] = {}
    for applied, runs, infos in sets:
        entry, scores = _decide_set(job, rule, applied, runs, base, cands, looks_worse, fresh_used)
        out_sets[applied.kind] = entry
        if scores is not None:
            per_topic[applied.kind] = scores
            infos_all[applied.kind] = {i.system.name: i for i in infos}
    pinned_infos = infos_all.get("pinned", {})
    configs = {n: {"algorithm": i.system.algorithm, "params": i.system.params} for n, i in pinned_infos.items()}

    checks = _families(job, configs, base, cands, out_sets, per_topic,
                       (sets[0][1], sets[0][0].topics, sets[0][0].status.get("title_leak")))
    candidates = {c: _overall(out_sets, per_topic, base, c, fresh_used) for c in cands}
    for c, check in checks.items():
        candidates[c]["family"] = check
        why = next((d.get("across_families") for d in (candidates[c]["pinned"], candidates[c]["fresh"] or {})
                    if d.get("across_families")), None)
        if why and candidates[c]["decided"].startswith("across families"):
            check["rule"] = why
        for_the_decision(check, candidates[c]["pinned"].get("nt_decision") or candidates[c]["pinned"]["decision"])
        remains = after_overstatement(check, candidates[c]["pinned"])
        if remains:
            check["remains"] = remains
            if check.get("caution"):
                check["caution"] += f" ({remains})"
    engines = {n: engine_of(i.system, i.notes, manifest) for n, i in pinned_infos.items()}
    labels = {base: spec.baseline_label or base, **{c: (spec.label if spec.label and k == 1 else c) for c in cands}}
    result: dict[str, Any] = {
        "gate": "nteval gate", "task": spec.task, "protocol": spec.protocol, "measure": spec.measure,
        **_where(Path(index_dir), manifest, pin, spec.protocol),
        "baseline": base, "candidates": candidates, "labels": labels, "engines": engines,
        "systems": configs,  # (remote kinds keep ${ENV} unexpanded)
        "sets": out_sets, "spec": asdict(spec),
        "rule": {"margin": rule.mmd.describe().replace("the better system's", "the baseline's"), "alpha": rule.alpha,
                 "candidates": k, "looks_for_worse": looks_worse,
                 "multiplicity": _multiplicity(k, looks_worse, rule.alpha)},
        "per_topic": per_topic,
        "judged_by": judged_by(spec.protocol, pin),
        "ceiling": _ceiling(out_sets["pinned"], base, cands),
        "coverage": coverage(collection_counts(manifest, "nt")),
    }
    result["outcome"] = outcome(result)

    result["headline"] = headline(result)
    return result


def _decide_set(job: _Job, rule: DecisionRule, applied: AppliedTopics, runs, base: str, cands: list[str],
                looks_worse: int, fresh_used: bool) -> tuple[dict[str, Any], Any]:
    """One topic set of a gate: its entry in gate.json (status, whether it is decided on, each
    candidate's decision with its moved topics and churn) and the per-topic scores (None when it
    could not be scored). Pinned rankings are condensed when the index holds documents the pin does
    not know (their judgments never saw them)."""
    spec, pin = job.spec, job.pin
    entry: dict[str, Any] = {"kind": applied.kind, "status": applied.status, "topics": len(applied.topics)}
    if runs is None or not applied.topics:
        entry["decided"] = False
        entry["why_not"] = applied.status.get("why_not") or "no fresh topic: no document was added since the pin"
        return entry, None
    known = pin.known()
    scored = runs
    if applied.kind == "pinned" and pin.added_since(job.index_dir):
        scored = condensed(runs, [base, *cands], known)
        entry["condensed"] = CONDENSED
    scores = _scores(scored, applied.qrels, [base, *cands], spec.measure)
    qids = sorted(applied.qrels)
    b = np.array([scores[base][q] for q in qids])
    entry["decided"] = applied.kind == "pinned" or fresh_used
    if applied.kind == "fresh" and not fresh_used:
        entry["why_not"] = f"only {len(qids)} fresh topics (fewer than {MIN_FRESH}): shown, not decided on"
    entry["baseline"] = {"system": base, "mean": round(float(b.mean()), 6)}
    entry["candidates"] = {}
    for c in cands:
        dec = decide(b, np.array([scores[c][q] for q in qids]), qids, rule, looks=len(cands), worse_looks=looks_worse)
        how = {"topics": applied.topics, "qrels": applied.qrels, "sources": applied.sources,
               "runs": (scored[base], scored[c]), "task": spec.task, "measure": spec.measure}
        leak = (applied.status.get("title_leak") or {}).get(c)
        if leak and leak.get("rule") == "rescues":
            _unless_a_leak_made_it(dec, leak, scores[base], scores[c], len(qids), rule.alpha)
        dec["changed"] = moved_topics(scores[base], scores[c], how, spec.changed)
        dec["churn"] = churn(runs[base], runs[c], qids)
        if applied.kind == "pinned":
            dec["unjudged_top10"] = unjudged_share(runs[c], qids, known)
        entry["candidates"][c] = dec
    return entry, scores


def _ceiling(pinned: dict[str, Any], base: str, cands: list[str]) -> dict[str, Any] | None:
    """:func:`nteval.effects.ceiling` of the gate's systems on the pinned topics (the line `compare`
    prints): most of them near the measure's ceiling, their differences compressed."""
    decs = pinned.get("candidates") or {}
    if not decs:
        return None
    means = {base: {"mean": next(iter(decs.values()))["baseline_mean"]}}
    means.update({c: {"mean": decs[c]["candidate_mean"]} for c in cands if c in decs})
    return ceiling(means)


def _unless_a_leak_made_it(dec: dict[str, Any], leak: dict[str, Any], base: dict[str, float], cand: dict[str, float],
                           n_topics: int, alpha: float) -> None:
    """A passing decision for a candidate that may have seen the titles: kept only when it holds
    without the gain a title search can have made (:func:`~nteval.leak.title_gain`) taken off its
    bounds; else the decision that still holds (better → non-inferior → inconclusive), and why."""
    tg = title_gain(leak, base, cand, n_topics, alpha)
    dec["title_gain"] = tg
    if tg["every_gain"]:  # (evidence, if too little to refuse the run: said in the first line and in JUnit)
        tg["evidence"] = (f"caution: the title-leak guard found evidence that this run searched the titles ({tg['why']}), "
                          f"too little to refuse it on {n_topics:,} topics; its decision is made without that gain")
    gain, before = tg["gain"], dec["decision"]
    if not gain or before not in PASSING or (before == "better" and dec["ci"][0] - gain > 0):
        return
    after = "non-inferior" if dec["noninferiority_lower"] - gain > 0 else "inconclusive"
    if after == before:
        return
    dec["decision"], dec["without_the_title_gain"] = after, before
    tg["changed"] = f"{before} is not claimed: {tg['why']}; search the title-stripped collection, or pin more topics"
    if after == "inconclusive":
        dec["more_topics"] = {"topics": None, "more": None, "toward": None, "note": tg["changed"]}


def _overall(sets: dict[str, Any], per_topic: dict, base: str, c: str, fresh_used: bool) -> dict[str, Any]:
    """A candidate's decision: the pinned topics', or worse when fresh topics decided on showed it
    worse (fresh topics can fail a release, never pass one); with the pinned–fresh gap."""
    pin_dec = sets["pinned"]["candidates"][c]
    fresh_dec = sets.get("fresh", {}).get("candidates", {}).get(c) if fresh_used else None
    overall, why = pin_dec["decision"], "on the pinned topics"
    if pin_dec.get("across_families"):
        why = f"across families: {pin_dec['across_families']}"
    if fresh_dec is not None and fresh_dec["decision"] == "worse" and overall != "worse":
        overall, why = "worse", "on the fresh topics (fresh topics can fail a release, never pass one)"
    elif fresh_dec is not None and fresh_dec.get("across_families") and overall in PASSING:
        overall, why = "inconclusive", f"across families, on the fresh topics: {fresh_dec['across_families']}"
    return {"decision": overall, "decided": why, "pinned": pin_dec, "fresh": fresh_dec,
            "gap": _gap(pin_dec, fresh_dec, per_topic, base, c) if fresh_dec is not None else None}


def judged_by(protocol: str, pin: Pin) -> str | None:
    """Who judged a topical pin's topics, for a person (None for known-item topics: each is judged by
    its own document): the lexical vote and the neural reference in equal shares, or the lexical
    references alone, which understate neural retrieval (a pin made without the neural extra)."""
    sref = ((pin.meta.get("protocols", {}).get(protocol) or {}).get("settings") or {}).get("sref")
    if protocol != "highrecall" or not sref:
        return None
    fams = sref.get("families") or {}
    if "neural" in fams:
        return (f"the lexical vote ({', '.join(fams.get('lexical', []))}) and {', '.join(fams['neural'])} "
                "(all-MiniLM-L6-v2), equal shares")
    names = ", ".join(fams.get("lexical", [])) or str(sref.get("name", "")).replace("+", ", ")
    return (f"lexical references alone ({names}): the pin was made without the neural reference, and they "
            "understate neural retrieval (pip install 'nteval[neural]', then a new pin)")


def _traits(job: _Job, configs: dict[str, dict[str, Any]], names: list[str], runs: Any,
            topics: dict[str, str] | None, leaks: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the rankings of the systems whose family nteval does not know show of it (a run file, an
    engine, a declared family, a fusion of one of them): :func:`nteval.traits.read_matches` of their
    top :data:`~nteval.gate.families.CLASS_TOP` on the pinned topics."""
    fam = families(configs)
    unsure = [n for n in names if n in configs and (fam.get(n) is None or declared(n, configs))]
    if not unsure or not topics or runs is None:
        return {}
    read = {n: Matches.of(m) for n, r in (leaks or {}).items() if n in unsure and (m := r.get("matches"))}
    return {**read, **read_matches(job.index_dir, runs, topics, [n for n in unsure if n not in read], top=CLASS_TOP)}


def top10_shared(runs: Any, a: str, b: str) -> float:
    """The share of the topics ``a`` answers on which its top 10 (as a set) is ``b``'s."""
    ra, rb = runs[a], runs[b]
    qids = [q for q in ra if ra[q]]
    same = sum(1 for q in qids if {d for d, _ in ra[q][:10]} == {d for d, _ in rb.get(q, [])[:10]})
    return same / len(qids) if qids else 0.0


def _encoders_read(job: _Job, sref: dict[str, Any] | None, configs: dict[str, dict[str, Any]], traits: dict[str, Any],
                   runs: Any, topics: dict[str, str] | None) -> dict[str, dict[str, Any]]:
    """For each system nteval does not compute that may be an encoder (declared neural, or an
    undeclared ranking that is no lexical system's): whether it orders its top hits as the
    references' own model does (:func:`nteval.traits.same_encoder`, with the references' encoder as
    the pin records it). Nothing where the references hold no neural model or the extra is missing."""
    from ..encoders.models import encoder_params, load_encoder

    fam = families(configs)
    names = [n for n in traits if (fam.get(n) in EMBEDDING_FAMILIES and declared(n, configs))
             or (fam.get(n) is None and traits[n].ranking_class() == "non-lexical")]
    neural = ((sref or {}).get("families") or {}).get("neural") or []
    ref = ((sref or {}).get("params") or {}).get(neural[0]) if neural else None
    if not names or not ref or not topics or runs is None:
        return {}
    spec = encoder_params(ref.get("params") or {})
    try:
        encoder = load_encoder(spec["model"], spec["dim"], neural[0], spec["backend"], spec["max_tokens"])
    except InputError:  # (an install that cannot run the references' encoder: nteval cannot tell)
        return {}
    return {n: same_encoder(job.index_dir, runs[n], topics, encoder, job.manifest["fingerprint"]) for n in names}


def _families(job: _Job, configs: dict[str, dict[str, Any]], base: str, cands: list[str], sets: dict[str, Any],
              per_topic: dict, pinned: tuple[Any, dict[str, str] | None, dict[str, Any] | None]) -> dict[str, dict[str, Any]]:
    """Each candidate of another family than the baseline's: what the validation study measured of
    how this verdict judges the pair (its family earned by its ranking, with a caution for the
    headline), and the rules of :mod:`nteval.gate.families` applied to every decided topic set: a
    "worse" NT's measured understatement of the family could explain, and a "better" or
    "non-inferior" its measured overstatement could, changed in place (the set's decision, with the
    one NT made and why), so gate.json, gate.md, JUnit and the history tell one decision. ``pinned``:
    the pinned topics' (runs, topics, title-leak checks)."""
    pinned_runs, topics, leaks = pinned
    protocol = job.spec.protocol
    sref = ((job.pin.meta.get("protocols", {}).get(protocol) or {}).get("settings") or {}).get("sref")
    side = study_side(protocol, sref)
    references = reference_encoders(sref)
    traits = _traits(job, configs, [base, *cands], pinned_runs, topics, leaks)
    # (the references' own model as the pin records it for its topical topics: what a ranking is checked against,
    # whichever task: an encoder's ranking of the known-item topics is that model's or not just the same)
    hr_sref = ((job.pin.meta.get("protocols", {}).get("highrecall") or {}).get("settings") or {}).get("sref")
    encoders = _encoders_read(job, hr_sref, configs, traits, pinned_runs, topics)
    checks: dict[str, dict[str, Any]] = {}
    for c in cands:
        eff, earned = earned_configs(configs, [c, base], pinned_runs)
        alike = {n: top10_shared(pinned_runs, n, o) for n, o in ((c, base), (base, c)) if n in traits}
        check = family_check(side, eff, base, c, references, traits, encoders, alike)
        if check is None:
            continue
        check.update({k: v for k, v in (("earned", earned.get(c)), ("baseline_earned", earned.get(base)),
                                        ("inputs_earned", {n: i for n, i in earned.items() if n not in (c, base)}))
                      if v})
        checks[c] = check
        for kind, entry in sets.items():
            dec = (entry.get("candidates") or {}).get(c)
            if dec is None or not entry.get("decided", True) or kind not in per_topic:
                continue
            apply_rules(check, dec, per_topic[kind][base], per_topic[kind][c], passes=kind == "pinned")
    return checks


def _multiplicity(k: int, looks_worse: int, alpha: float) -> str:
    if k == 1 and looks_worse == 1:
        return f"one candidate, one look: each decision's error rate is at most {alpha:g}"
    parts = []
    if k > 1:
        parts.append(f"Bonferroni over the {k} candidates: each pass bound at 1 − {alpha:g}/{k}, so the chance that any "
                     f"candidate truly losing the margin passes is at most {alpha:g}")
    if looks_worse > k:
        parts.append(f"the 'worse' side looks twice (pinned and fresh topics): at 1 − {alpha:g}/{looks_worse}, so the chance "
                     f"of any false regression is at most {alpha:g}")
    return "; ".join(parts)


def _gap(pinned: dict[str, Any], fresh: dict[str, Any], per_topic: dict, base: str, cand: str) -> dict[str, Any]:
    """The candidate's gain over the baseline on the pinned topics minus its gain on the fresh ones,
    with a 95 % interval (the two topic sets are independent samples: normal approximation on the
    two means' standard errors), and whether it says the candidate was tuned on, or saw, the
    pinned topics: the interval above 0 and the gap at least the margin."""
    def diffs(kind: str) -> np.ndarray:
        pt = per_topic[kind]
        return np.array([pt[cand][q] - pt[base][q] for q in sorted(pt[base])])

    dp, df = diffs("pinned"), diffs("fresh")
    gap = float(dp.mean() - df.mean())
    se = math.sqrt(dp.var(ddof=1) / dp.size + df.var(ddof=1) / df.size) if dp.size > 1 and df.size > 1 else float("inf")
    lo, hi = gap - 1.96 * se, gap + 1.96 * se
    flagged = bool(lo > 0 and gap >= pinned["margin"])
    note = (f"the candidate gains {gap:+.4f} more over the baseline on the pinned topics than on fresh ones (95 % CI "
            f"[{lo:+.4f}, {hi:+.4f}], at least the margin): a sign it was tuned on the pinned topics or trained on "
            "their documents — or that the documents added since the pin differ from the older ones; the fresh "
            "decision is the one no tuning can have seen" if flagged else
            f"pinned and fresh gains agree (gap {gap:+.4f}, 95 % CI [{lo:+.4f}, {hi:+.4f}]): no sign of tuning on the "
            "pinned topics")
    return {"gap": round(gap, 6), "ci95": [round(lo, 6), round(hi, 6)], "flagged": flagged, "note": note,
            "method": "difference of the mean per-topic gains on two independent topic sets, normal 95 % interval; "
                      "flagged when the interval is above 0 and the gap at least the margin"}


def outcome(result: dict[str, Any]) -> str:
    """pass (every candidate better or non-inferior), regression (any worse) or inconclusive."""
    decisions = [c["decision"] for c in result["candidates"].values()]
    if any(d == "worse" for d in decisions):
        return "regression"
    if all(d in PASSING for d in decisions):
        return "pass"
    return "inconclusive"


def exit_status(result: dict[str, Any]) -> int:
    """The process's exit status: the outcome's, or 5 (alert) when the gate passed but the history
    raised an alert."""
    status = EXIT[result["outcome"]]
    alerts = (result.get("history") or {}).get("alerts") or []
    if status == 0 and alerts:
        return EXIT["alert"]
    return status


#: the Python API's arguments: the types each takes, and what to give instead
_ARGUMENTS: dict[str, tuple[tuple[type, ...], str]] = {
    "pin": ((str, Path, Pin), "a pin directory"),
    "history": ((str, Path, type(None)), "a SQLite file or a postgresql:// URL"),
    "baseline": ((str, Path), "a system: a name, a one-system YAML or a run file"),
    "system": ((str, Path), "a system: a name, a one-system YAML or a run file"),
    "candidates": ((str, Path, list, tuple), "a system (name, YAML or run file) or a list of them"),
}


def _check_types(**given: Any) -> None:
    """The Python API's arguments, checked as the CLI's options are: one line, not a TypeError."""
    for name, value in given.items():
        types, what = _ARGUMENTS[name]
        if not isinstance(value, types) or (isinstance(value, (list, tuple))
                                            and not all(isinstance(v, (str, Path)) for v in value)):
            raise InputError(None, f"{name}={value!r}: give {what}")


def run_check(index_dir: str | Path, pin: str | Path | Pin, out: str | Path, system: str, history: str | Path,
              spec: GateSpec | None = None, systems: str | Path | None = None, **options: Any) -> dict[str, Any]:
    """``nteval check``: one system (the live one, say) on ``pin``'s topics of ``spec.task`` (and
    fresh topics with ``spec.fresh``), its scores appended to ``history`` and the alert rules
    checked: no decision, only the record and its alerts. OUT/check.json, check.md, junit.xml;
    ``exit`` 0, or 5 on an alert."""
    with _claimed(out):
        out = Path(out)
        spec, execution, runs_dir = _settings("run_check", spec, options)
        _check_types(pin=pin, system=system, history=history)
        if history is None:
            raise InputError(None, "--history: `nteval check` appends to a history; give a SQLite file or a "
                                   "postgresql:// URL")
        started, utc = time.perf_counter(), _now()
        with _opened(out, index_dir, pin, history, execution) as (index_dir, pin, manifest):
            sys_, file = resolve_system(system, systems, "system")
            to_run = _with_inputs(sys_, file)
            job = _Job(spec, pin, index_dir, manifest, out, _runs_cache(runs_dir, out, pin, spec), execution)
            sets, per_topic, infos = _check_sets(job, sys_, to_run)
            result: dict[str, Any] = {
                "gate": "nteval check", "kind": "check", "task": spec.task, "protocol": spec.protocol,
                "measure": spec.measure, **_where(index_dir, manifest, pin, spec.protocol),
                "system": sys_.name, "baseline": None, "labels": {sys_.name: spec.label or sys_.name},
                "engines": {sys_.name: engine_of(sys_, next((i.notes for i in infos if i.system.name == sys_.name), None),
                                                manifest)},
                "sets": {k: {**v, "candidates": {sys_.name: {}} if k in per_topic else {}} for k, v in sets.items()},
                "spec": asdict(spec), "per_topic": per_topic, "utc": utc, "out": str(out),
            }
            note = _check_encoder_note(spec, pin, sys_, infos)
            if note:
                result["encoder_note"] = note
            _answers(result, infos)

            check_unchanged(index_dir, manifest, infos)
            result["history"] = record_gate(history, result)
            result["seconds"] = round(time.perf_counter() - started, 3)
            result["exit"] = EXIT["alert"] if result["history"]["alerts"] else 0
            write_check_outputs(out, result)
            return result


def _check_encoder_note(spec: GateSpec, pin: Pin, sys_, infos: list) -> str | None:
    """A check's word on a neural system (or hybrid) whose encoder the references that judged the
    pin's topical topics do not contain, or that nteval cannot name (issue 55: its scores are judged
    by references without its model): :func:`nteval.evidence.unseen_note`."""
    from ..evidence import unseen_note
    from ..systems.families import UNSEEN_FAMILIES, against_references

    if spec.protocol != "highrecall":
        return None
    sref = ((pin.meta.get("protocols", {}).get(spec.protocol) or {}).get("settings") or {}).get("sref")
    references = reference_encoders(sref)
    configs = {i.system.name: {"algorithm": i.system.algorithm, "params": i.system.params} for i in infos}
    fam = against_references(families(configs), configs, references).get(sys_.name)
    if fam not in UNSEEN_FAMILIES:
        return None
    note = unseen_note(sys_.name, spec.protocol, fam, references)
    return note["measured"] if note else None


def _check_sets(job: _Job, sys_, to_run: list) -> tuple[dict[str, Any], dict[str, Any], list]:
    """A check's topic sets (pinned; fresh when asked for and the system is one nteval runs): each
    set's entry (status, mean, 95 % interval), the per-topic scores and the runs' infos."""
    spec, pin, index_dir = job.spec, job.pin, job.index_dir
    proto = spec.protocol
    skipped = _fresh_skipped(spec, to_run)
    _fresh_possible(spec, pin, skipped)
    sets: dict[str, Any] = {}
    per_topic: dict[str, Any] = {}
    infos_all: list = []
    for kind in ("pinned", "fresh") if spec.fresh else ("pinned",):
        a = (apply_pin(pin, index_dir, proto) if kind == "pinned" else
             skipped or _fresh_made(spec, pin, index_dir, job.out, job.execution))
        entry: dict[str, Any] = {"kind": a.kind, "status": a.status, "topics": len(a.topics)}
        sets[a.kind] = entry
        if not a.topics:
            continue
        runs, infos = _run_set(a, to_run, job.searched(a.kind), job.cache / a.kind, spec.depth, job.execution)
        entry["answered"] = answered(runs, [sys_], a.topics, a.kind)[sys_.name]
        if a.kind == "pinned":
            refuse_leaks(index_dir, proto, runs, a.topics, a.sources, to_run)
        infos_all += infos
        if a.kind == "pinned" and pin.added_since(index_dir):
            runs = condensed(runs, [sys_.name], pin.known())
            entry["condensed"] = CONDENSED
        per_topic[a.kind] = _scores(runs, a.qrels, [sys_.name], spec.measure)
        sc = per_topic[a.kind][sys_.name]
        entry.update(mean=round(sum(sc.values()) / len(sc), 6), ci95=list(mean_ci(sc)))
    return sets, per_topic, infos_all


def _where(index_dir: Path, manifest: dict[str, Any], pin: Pin, protocol: str) -> dict[str, Any]:
    """The index and pin a gate or check ran on, as gate.json and check.json record them."""
    return {"index": str(index_dir), "index_fingerprint": manifest["fingerprint"],
            "index_documents": manifest["indexes"]["nt"]["documents"],
            "pin": {"id": pin.id, "digest": pin.meta["digest"], "path": str(pin.path), "sampled": pin.meta["spec"]["n_topics"],
                    "topic_set": pin.meta["protocols"][protocol]["topic_set"], "made_on": pin.meta["index"]["fingerprint"],
                    "eligible": pin.meta["protocols"][protocol].get("eligible"),
                    "index_changed": pin.meta["index"]["fingerprint"] != manifest["fingerprint"],
                    "documents_added_since": pin.added_since(index_dir)}}
