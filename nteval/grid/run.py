"""``nteval grid``: evaluate every cell of a 1–2 parameter grid under the NT protocols (and human
judgments when given), in parallel worker processes, resuming from the cells already on disk."""
from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import protocols as registry
from ..answer import PARAMETER_REASONS, TASKS, check_task
from ..atomic import write_text
from ..corpus.store import require_judged_in_index
from ..errors import InputError
from ..evaluate import parse_measures
from ..formats.topics import load_judged_topics
from ..formats.trec import Run, canonical, read_qrels, read_topics, write_qrels, write_topics
from ..index import read_manifest
from ..lifecycle import watch_parent
from ..progress import shown, tqdm
from ..protocols.highrecall import HighRecallSpec
from ..report.contours import grid_plots
from ..runs import Searched, drop_held, index_folds, run_all
from ..scores import evaluate_runs
from ..session import session
from ..settings import Execution, HumanJudgments, reject_unknown, take
from ..settings import Execution as Ex
from ..significance import indistinguishable_from_best
from ..stats import correlations
from ..systems import registry as kinds
from ..systems.sets import builtin_systems, find_named_system, resolve_systems, suggest_system
from ..systems.system import System, make_system
from ..verdict import check_topic_floor
from .cells import (
    Task,
    cell_key,
    compute_cell,
    compute_cells_one_pass,
    file_digest,
    one_pass_groups,
    read_cell,
    read_exclusions,
)
from .spec import Axis, GridSpec, grid_systems, value_label

PROTOCOLS = ("focused", "highrecall")   # what --protocol both means
#: human judgments' measures when --measure is not given (protocols: their ``grid_measures``)
HUMAN_MEASURES = ("AP", "nDCG@10")
NEAR_BEST = 0.01  # "region within 1 % of the best cell"


@dataclass
class Judgments:
    """One protocol's evaluation set: which index its queries search, its topics and qrels."""
    name: str
    index_name: str
    dir: Path
    measures: tuple[str, ...]
    n_topics: int


def find_system(spec: str, systems: str | Path | None) -> System:
    """``--system``: an algorithm name (its default parameters), or a system's name in ``--systems``
    (or the shipped sets) whose other parameters stay fixed while the grid varies some."""
    if spec in kinds.algorithms():
        return make_system(spec, spec)
    files = [resolve_systems(systems)[0] if systems else None, builtin_systems("table1"), builtin_systems("wide"),
             builtin_systems("default")]
    found = find_named_system(spec, files)
    if found is not None:
        s, path = found
        if s.kind.fusion:
            raise InputError(path, f"--system {spec}: a fusion of runs has no gridable parameter of its own")
        return s
    gridable = [a for a in kinds.algorithms() if not kinds.get(a).fusion]
    raise InputError(None, f"--system {spec!r}{suggest_system(spec, files, tuple(kinds.algorithms()))}: neither an "
                           f"algorithm ({', '.join(gridable)}) nor a system name in the systems file or "
                           "the shipped sets")


def protocol_list(protocol: str) -> list[str]:
    """``--protocol``: a registered protocol, several joined by commas, ``both`` (focused and
    high-recall) or ``none`` (human judgments only)."""
    if protocol == "both":
        return list(PROTOCOLS)
    if protocol == "none":
        return []
    chosen = [p.strip() for p in protocol.split(",") if p.strip()]
    for name in chosen:
        if name not in registry.names():
            raise InputError(None, f"--protocol must be one of {', '.join((*registry.names(), 'both', 'none'))} "
                                   f"(or several joined by commas), got {name!r}")
    return chosen


def prepare(index_dir: Path, out: Path, grid: GridSpec, params: dict[str, dict[str, Any]],
            systems_path: Path | None = None, progress: bool | None = None) -> tuple[list[Judgments], dict[str, Any]]:
    """Write each protocol's topics.tsv and qrels.txt under OUT/<protocol>/ (the same seed and
    filters give document-sampling protocols the same D0, as ``nteval run`` does).
    ``params``: per protocol, its spec's parameters beyond topics, seed and filters."""
    protocols, measures, filters = protocol_list(grid.protocol), grid.measures, grid.sample
    info: dict[str, Any] = {}
    human = None
    hj = grid.human
    if hj is not None:  # read (and reject) human judgments before writing anything
        human = load_judged_topics(hj.queries, hj.qrels, hj.field)
        require_judged_in_index(index_dir, human[1], hj.qrels)
    specs = {}
    for name in protocols:  # every spec validated before any protocol writes
        proto = registry.get(name)
        proto.check_index(index_dir)
        fields = {f for f, *_ in proto.Spec.describe()}
        specs[name] = proto.Spec.from_params(n_topics=grid.n_topics, seed=grid.seed,
                                             **{k: v for k, v in filters.items() if k in fields},
                                             **params.get(name, {}))
    out_js: list[Judgments] = []
    for name in protocols:
        proto = registry.get(name)
        tset = proto.build(index_dir, specs[name], out / name, progress=progress, systems_path=systems_path)
        stats = dict(tset.stats)
        if "sample" in stats and "sample" not in info:
            info["sample"] = {**stats["sample"], "eligible_documents": stats.get("eligible_documents")}
        check_topic_floor(f"grid {name}", tset.counts["used"], tset.counts["requested"], tset.counts["eligible"],
                          grid.min_topics, index_dir)
        rest = {k: v for k, v in stats.items() if k not in ("sample", "eligible_documents", "topics_requested")}
        if rest:
            info[name] = rest
        write_topics(out / name / "topics.tsv", tset.topics)
        write_qrels(out / name / "qrels.txt", tset.qrels)
        if tset.holdout:
            folds = index_folds(index_dir, proto.searches, list(tset.queries))
            write_text(out / name / "holdout.tsv",  # qid → the documents its fold holds out
                       "".join(f"{q}\t{','.join(tset.source(x) for x in f)}\n" for f in folds for q in f
                               if q in tset.topics))
        chosen = tuple(measures) if measures else proto.grid_measures
        out_js.append(Judgments(name, f"{proto.searches}-holdout" if tset.holdout else proto.searches, out / name,
                                chosen, len(tset.topics)))
    if human is not None and hj is not None:
        write_topics(out / "human" / "topics.tsv", human[0])
        write_qrels(out / "human" / "qrels.txt", human[1])
        info["human"] = {"queries": str(hj.queries), "qrels": str(hj.qrels), "field": hj.field, "index": hj.index}
        out_js.append(Judgments("human", hj.index, out / "human", tuple(measures) if measures else HUMAN_MEASURES,
                                len(human[0])))
    return out_js, info


def _parallel(todo: list[tuple[Task, str]], jobs: int, bar, scheduler: str | None = None,
              one_pass: bool = True) -> tuple[int, int]:
    """Compute cells; returns (worker processes of per-cell runs, passes over the postings). Each worker process
    keeps its JVM, indexes and topics for all its cells.
    With ``scheduler`` (a Dask scheduler's address) the cluster's workers compute them. Cells whose
    system's kind scores a grid in one pass over the postings (BM25, QLD) are computed that way here,
    a protocol's cells at a time, Java search threads = ``jobs`` (at least 2); the others, and every
    cell on a cluster, one by one."""
    if scheduler:
        from .remote import grid_cells

        return grid_cells(scheduler, todo, bar), 0
    groups, todo = one_pass_groups(todo) if one_pass else ([], todo)
    for group in groups:
        def tick(done: int, total: int, group=group) -> None:
            bar.set_postfix_str(f"{group[0][0].protocol}: {len(group)} cells in one pass, {done:,}/{total:,} topics")

        tick(0, 0)
        compute_cells_one_pass(group, max(2, jobs), tick)
        bar.update(len(group))
    if not todo:
        return 0, len(groups)  # (no worker process: the passes ran in this one, on Java threads)
    if jobs == 1 or len(todo) == 1:
        for task, key in todo:
            bar.set_postfix_str(f"{task.protocol} {task.system.name}", refresh=False)
            compute_cell(task, key)
            bar.update(1)
        return 1, len(groups)
    from joblib import Parallel, delayed

    workers = min(jobs, len(todo))
    # each worker watches this process from its start (loky's initializer), not from its first task:
    # one killed before the tasks reached its workers left them idle for loky's 300 s
    par = Parallel(n_jobs=workers, return_as="generator_unordered", batch_size=1, pre_dispatch="2*n_jobs",
                   initializer=watch_parent, initargs=(os.getpid(),))
    for cell in par(delayed(compute_cell)(task, key) for task, key in todo):
        bar.set_postfix_str(f"{cell['protocol']} pid {cell['pid']}", refresh=False)
        bar.update(1)
    return workers, len(groups)


def _near_best(cells: list[tuple[dict[str, float], float]], axes: list[Axis]) -> dict[str, Any]:
    best_params, best = max(cells, key=lambda c: c[1])  # first maximum in row-major order
    threshold = best - abs(best) * NEAR_BEST
    near = [p for p, v in cells if v >= threshold]
    # a best cell on the border of an axis may not be the optimum: the grid should be widened there
    edge = [a.name for a in axes if len(a.values) > 2 and best_params[a.name] in (min(a.values), max(a.values))]
    return {"best": {"params": best_params, "value": best, "on_edge": edge},
            "near_best": {"tolerance": NEAR_BEST, "threshold": round(threshold, 6), "cells": len(near),
                          "ranges": {a.name: [min(p[a.name] for p in near), max(p[a.name] for p in near)] for a in axes},
                          "values": {a.name: sorted({p[a.name] for p in near}) for a in axes}}}


def _tied_with_best(stored: list, measure: str, names: list[str], seed: int) -> dict[str, Any]:
    """The cells a paired randomization test (Holm over the comparisons with the best) cannot tell
    apart from the best cell — beside the 1 % region, which ignores topic noise."""
    label = lambda p: ",".join(f"{n}={value_label(p[n])}" for n in names)  # noqa: E731
    per = {label(p): c["per_topic"][measure] for p, c in stored}
    res = indistinguishable_from_best(per, seed=seed)
    tied = set(res["indistinguishable"])
    return {"test": res["test"], "correction": res["correction"], "alpha": res["alpha"], "cells": len(tied),
            "params": [p for p, _ in stored if label(p) in tied]}


def best_cells_disagreement(protocols: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """Do focused and high-recall disagree *significantly* on the best cell? Each protocol's best
    cell against the other's, by each protocol's paired test vs its best (Holm over the cells)."""
    f, h = protocols["focused"], protocols["highrecall"]
    fm, hm = next(iter(f["measures"])), next(iter(h["measures"]))
    fb, hb = f["measures"][fm]["best"]["params"], h["measures"][hm]["best"]["params"]
    if fb == hb:
        return {"disagree": False, "text": "both protocols' best cell is the same: "
                                           + ", ".join(f"{n}={value_label(fb[n])}" for n in names)}
    f_tied = f["measures"][fm]["indistinguishable_from_best"]["params"]
    h_tied = h["measures"][hm]["indistinguishable_from_best"]["params"]
    f_separates, h_separates = hb not in f_tied, fb not in h_tied
    cell = lambda p: ", ".join(f"{n}={value_label(p[n])}" for n in names)  # noqa: E731

    differ = [n for n in names if fb[n] != hb[n]]
    reason = "; ".join(PARAMETER_REASONS.get(n, f"{n}: the two tasks reward it differently") for n in differ)
    disagree = f_separates and h_separates
    both = [p for p in f_tied if p in h_tied]  # cells neither protocol tells apart from its best
    # the setting good for both: the other protocol's best, where this one cannot tell it from its own
    good = hb if not f_separates else fb if not h_separates else None
    if disagree:
        tail = ("each protocol tells its best cell apart from the other's (paired tests vs the best, Holm) — they "
                f"disagree significantly. Likely reason: {reason}")
    else:
        who = "high-recall's best, which the focused test" if not f_separates else "focused's best, which the high-recall test"
        tail = (f"but {who} cannot tell apart from its own best: a setting good for both is {cell(good)} "
                f"({len(both)} cell{'s' if len(both) != 1 else ''} cannot be told apart from the best under both protocols)")
    text = f"focused ({fm}) prefers {cell(fb)}, high-recall ({hm}) {cell(hb)}; " + tail
    return {"disagree": disagree, "focused_best": fb, "highrecall_best": hb, "focused_separates": f_separates,
            "highrecall_separates": h_separates, "good_for_both": good, "tied_under_both": both,
            "reason": reason if disagree else None, "text": text}


def human_agreement(protocols: dict[str, Any], params: list[dict[str, float]]) -> dict[str, Any]:
    """Would tuning with an NT protocol have picked a good cell for humans? The human score at the NT
    protocol's best cell (and its share of the human best), and how the two surfaces correlate."""
    human = protocols["human"]["measures"]
    out: dict[str, Any] = {}
    for name, p in protocols.items():
        if name == "human":
            continue
        m = next(iter(p["measures"]))
        x = p["measures"][m]["values"]
        i = x.index(max(x))
        per: dict[str, Any] = {"nt_measure": m, "nt_best": params[i]}
        for hm, hres in human.items():
            y = hres["values"]
            c = correlations(x, y)
            per[hm] = {"human_at_nt_best": y[i], "share_of_human_best": round(y[i] / max(y), 4) if max(y) > 0 else None,
                       "human_best": max(y), "spearman": c["spearman"]["value"], "kendall": c["kendall"]["value"],
                       "pearson": c["pearson"]["value"]}
        out[name] = per
    return out


def _score_references(where: Searched, j: Judgments, references: tuple[System, ...], depth: int, out: Path,
                      execution: Execution) -> dict[str, dict[str, float]]:
    """Each reference system's scores on protocol ``j``'s topics and qrels (runs cached under
    OUT/references/<protocol>/; held-out documents removed from the rankings as in the cells)."""
    topics, qrels = read_topics(j.dir / "topics.tsv"), read_qrels(j.dir / "qrels.txt")
    held = read_exclusions(j.dir / "holdout.tsv") if j.index_name.endswith("-holdout") else {}
    extra = max((len(v) for v in held.values()), default=0)
    runs: Mapping[str, Run]
    runs, _ = run_all(Searched(where.index_dir, j.index_name.removesuffix("-holdout"), where.fingerprint, label=j.name),
                      topics, list(references), out / "references" / j.name, depth + extra,
                      Ex(progress=execution.progress, scheduler=execution.scheduler))
    runs = {n: {q: canonical(r, depth) for q, r in drop_held(run, held).items()} for n, run in runs.items()}
    scores = evaluate_runs(runs, qrels, list(j.measures))
    return {n: {m: round(v, 6) for m, v in scores.means[n].items()} for n in runs}


def run_grid(index_dir: str | Path, out: str | Path, params: Any, grid: GridSpec | None = None,
             execution: Execution | None = None, **options: Any) -> dict[str, Any]:
    """Evaluate a system at every combination of its parameters under the NT protocols (and human
    judgments when given); write OUT/grid.tsv, OUT/grid.json and contour PNGs.

    ``params``: the axes (a list of :class:`~nteval.grid.spec.Axis`, or a :class:`GridSpec`).
    ``grid``: the rest of :class:`GridSpec` (system, protocol, topics, human judgments…);
    ``execution``: ``jobs`` local processes or a Dask ``scheduler`` whose workers compute the cells.
    ``options``: any of their fields as plain keywords (``protocol="focused", jobs=2``); a
    high-recall spec parameter (``sref``, ``k``, ``zt``…) goes to that protocol, a sampling filter
    (``language``, ``year_min``…) to every protocol that samples documents, ``queries``/``qrels``/
    ``field``/``human_index`` make the human judgments.

    The shared prologue holds for the whole run (:func:`nteval.session.session`): a second grid
    writing the same OUT gets a one-line error instead of mixing cells."""
    grid, execution = grid_options(params, grid, execution, options)
    task = check_task(grid.task)
    if task is not None and TASKS[task][0] not in protocol_list(grid.protocol):
        raise InputError(None, f"--task {task}: its verdict comes from the {TASKS[task][0]} protocol; add it to --protocol")
    with session(out, index_dir, execution.scheduler) as index_dir:
        result = _run_grid(index_dir, Path(out), grid, execution)
        if task is not None:
            result["task"], result["answer"] = task, grid_headline(task, result)
            write_text(Path(out) / "grid.json", json.dumps(result, indent=2) + "\n")
        return result


def grid_options(params: Any, grid: GridSpec | None, execution: Execution | None,
                 options: dict[str, Any]) -> tuple[GridSpec, Execution]:
    """:func:`run_grid`'s keywords routed to the objects that own them (one-line error for a
    keyword nobody takes)."""
    from dataclasses import fields, replace

    rest = dict(options)
    execution = take(Execution, execution, rest)
    human = HumanJudgments.given(rest.pop("queries", None), rest.pop("qrels", None), rest.pop("field", None),
                                 rest.pop("human_index", "all"))
    hr_fields = {f for f, *_ in registry.get("highrecall").Spec.describe()} - {"n_topics", "seed"}
    sample_fields = {f for f, *_ in registry.get("focused").Spec.describe()} - {"n_topics", "seed"}
    hr = {k: rest.pop(k) for k in list(rest) if k in hr_fields and k not in sample_fields}
    sample = {k: rest.pop(k) for k in list(rest) if k in sample_fields}
    if isinstance(params, GridSpec):
        grid = params
    else:
        grid = replace(grid, axes=tuple(params)) if grid is not None else GridSpec(tuple(params))
    mine = {k: rest.pop(k) for k in list(rest) if k in {f.name for f in fields(GridSpec)}}
    reject_unknown(rest, "run_grid", {f.name for f in fields(GridSpec)} | hr_fields | sample_fields)
    changes: dict[str, Any] = dict(mine)
    if human is not None:
        changes["human"] = human
    if hr:
        given = dict(changes.get("protocol_params", grid.protocol_params))
        changes["protocol_params"] = {**given, "highrecall": {**hr, **given.get("highrecall", {})}}
    if sample:
        changes["sample"] = {**grid.sample, **sample}
    return (replace(grid, **changes) if changes else grid), execution


def grid_headline(task: str, result: dict[str, Any]) -> dict[str, Any]:
    """The declared task's best setting, and how many cells cannot be told apart from it."""
    proto = TASKS[task][0]
    m, r = next(iter(result["protocols"][proto]["measures"].items()))
    best = ", ".join(f"{k}={value_label(v)}" for k, v in r["best"]["params"].items())
    tied = r["indistinguishable_from_best"]["cells"]
    text = (f"For {task} search on {result['index']}, the best {result['system']['name']} setting is {best} "
            f"({m} {r['best']['value']:.4f}); {tied - 1} other cell{'s' if tied != 2 else ''} cannot be told apart "
            "from it (paired tests vs the best, Holm)" + (" — the best is on the grid's edge: widen it there"
                                                          if r["best"].get("on_edge") else "") + ".")
    return {"protocol": proto, "measure": m, "best": r["best"], "tied_cells": tied, "text": text}


def _run_grid(index_dir: Path, out: Path, grid: GridSpec, execution: Execution) -> dict[str, Any]:
    """The grid of :func:`run_grid`, inside its prologue. ``grid.references``: systems scored on
    the same topics beside the grid (external runs of ``--runs``, a dense model, a callable): each
    is a line on the maps and a row of the summary."""
    t_start = time.perf_counter()
    params, depth, seed, references = list(grid.axes), grid.depth, grid.seed, grid.references
    jobs, progress, scheduler = execution.jobs, execution.progress, execution.scheduler
    protocols = protocol_list(grid.protocol)
    if not protocols and grid.human is None:
        raise InputError(None, "--protocol none needs human judgments (--queries and --qrels)")
    base = find_system(grid.system, grid.systems)
    params_by_protocol = _protocol_params(grid, protocols, base)
    manifest = read_manifest(index_dir)
    if grid.measures:
        from dataclasses import replace

        grid = replace(grid, measures=tuple(str(m) for m in parse_measures(list(grid.measures))))
    cells = grid_systems(base, params)
    systems_path = None
    if grid.systems:
        systems_path = resolve_systems(grid.systems)[0]
    judgments, info = prepare(index_dir, out, grid, params_by_protocol, systems_path, progress)

    plan = _plan(index_dir, out, grid, manifest["fingerprint"], judgments, cells)
    for stale in (out / "cells").glob("*/.*.json.*"):  # temp files of cells a killed run was writing
        stale.unlink(missing_ok=True)
    todo = [(task, key) for _, _, task, key in plan if read_cell(Path(task.path), key) is None]
    bar = tqdm(total=len(plan), initial=len(plan) - len(todo), unit=" cell", desc="grid", disable=not shown(progress),
               file=sys.stderr, mininterval=0.5)
    t0 = time.perf_counter()
    try:
        workers, passes = _parallel(todo, jobs, bar, scheduler, grid.one_pass) if todo else (0, 0)
    finally:
        bar.close()
    compute_s = time.perf_counter() - t0

    result: dict[str, Any] = {
        "index": str(index_dir.absolute()), "index_fingerprint": manifest["fingerprint"],
        "system": {"name": base.name, "algorithm": base.algorithm, "params": base.params},
        "axes": {a.name: list(a.values) for a in params}, "depth": depth, "seed": seed,
        "topics_requested": grid.n_topics,
        **info, "protocols": {},
        "cells": {"per_protocol": len(cells), "total": len(plan), "computed": len(todo), "reused": len(plan) - len(todo)},
        "timing": {"jobs": jobs, "scheduler": scheduler, "workers": workers, "compute_seconds": round(compute_s, 3),
                   "cells_per_minute": round(len(todo) / compute_s * 60, 2) if todo and compute_s > 0 else None,
                   "total_seconds": None, "one_pass": passes, "java_threads": max(2, jobs) if passes else None},
    }
    names = [a.name for a in params]
    rows = ["protocol\t" + "\t".join(names) + "\tmeasure\tvalue\ttopics" + ("\treference" if references else "")]
    for j in judgments:
        stored = [(p, read_cell(Path(t.path), key)) for jj, p, t, key in plan if jj is j]
        pres, lines = _protocol_result(j, stored, params, seed)
        rows += lines
        if references:
            pres["references"] = _score_references(Searched(index_dir, j.index_name, manifest["fingerprint"]), j,
                                                   references, depth, out, execution)
            for m, r in pres["measures"].items():
                r["references"] = {n: v[m] for n, v in pres["references"].items()}
                rows += [f"{j.name}\t" + "\t".join("" for _ in names) + f"\t{m}\t{v[m]:.6f}\t{j.n_topics}\t{n}"
                         for n, v in pres["references"].items()]
        result["protocols"][j.name] = pres
    write_text(out / "grid.tsv", "\n".join(rows) + "\n")
    if "focused" in result["protocols"] and "highrecall" in result["protocols"]:
        result["disagreement"] = best_cells_disagreement(result["protocols"], names)
    if "human" in result["protocols"]:
        result["human_agreement"] = human_agreement(result["protocols"], [p for p, _ in cells])
    if grid.plots:
        result["plots"] = [str(p.relative_to(out)) for p in grid_plots(result, params, out)]
    result["timing"]["total_seconds"] = round(time.perf_counter() - t_start, 3)
    write_text(out / "grid.json", json.dumps(result, indent=2) + "\n")
    return result


def _protocol_params(grid: GridSpec, protocols: list[str], base: System) -> dict[str, dict[str, Any]]:
    """Each protocol's spec parameters beyond topics, seed and filters; a high-recall grid that
    holds sources out refuses a feedback system (RM3, Rocchio)."""
    params_by_protocol = {name: dict(v) for name, v in grid.protocol_params.items()}
    if "highrecall" in protocols:
        params_by_protocol["highrecall"] = dict(params_by_protocol.get("highrecall", {}))

        # the spec applies a preset: it says whether sources are held out
        hr_spec = registry.get("highrecall").Spec(**params_by_protocol["highrecall"])
        assert isinstance(hr_spec, HighRecallSpec)  # (the built-in protocol: built-in names win over entry points)
        if hr_spec.holdout and base.kind.feedback:
            raise InputError(None, "--holdout with a feedback system (RM3, Rocchio) is not supported by nteval grid "
                                   "yet: grid it with --no-holdout, and check the chosen cell with "
                                   "`nteval highrecall --holdout`")
    return params_by_protocol


def _plan(index_dir: Path, out: Path, grid: GridSpec, fingerprint: str, judgments: list[Judgments],
          cells: list[tuple[dict[str, float], System]]) -> list[tuple[Judgments, dict[str, float], Task, str]]:
    """Every (protocol, cell): its judgments, parameters, task and cache key, the cell stored under
    OUT/cells/<protocol>/. Cell-major order: an interrupted grid has covered every protocol evenly."""
    digests = {j.name: (file_digest(j.dir / "topics.tsv"), file_digest(j.dir / "qrels.txt")) for j in judgments}
    plan: list[tuple[Judgments, dict[str, float], Task, str]] = []
    for cell_params, s in cells:
        for j in judgments:
            key = cell_key(fingerprint, j.index_name, *digests[j.name], s, grid.depth, j.measures)
            path = out / "cells" / j.name / f"{key[:32]}.json"
            held = j.index_name.endswith("-holdout")
            task = Task(j.name, str(index_dir / j.index_name.removesuffix("-holdout")), str(j.dir / "topics.tsv"),
                        str(j.dir / "qrels.txt"), s, cell_params, grid.depth, j.measures, str(path),
                        exclude=str(j.dir / "holdout.tsv") if held else None)
            plan.append((j, cell_params, task, key))
    return plan


def _protocol_result(j: Judgments, stored: list, axes: list[Axis], seed: int) -> tuple[dict[str, Any], list[str]]:
    """Protocol ``j``'s entry of grid.json from its stored cells ((params, cell) in grid order):
    each measure's best cell, the region near it and the cells tied with it; and its lines of
    grid.tsv."""
    names = [a.name for a in axes]
    missing = [p for p, c in stored if c is None]
    if missing:
        raise RuntimeError(f"{len(missing)} cells of {j.name} are missing after the run")
    pres: dict[str, Any] = {"index": j.index_name, "topics": j.n_topics, "measures": {}}
    rows: list[str] = []
    for m in j.measures:
        vals = [(p, float(c["measures"][m])) for p, c in stored]
        pres["measures"][m] = {**_near_best(vals, axes), "values": [v for _, v in vals],
                               "indistinguishable_from_best": _tied_with_best(stored, m, names, seed)}
        rows += [f"{j.name}\t" + "\t".join(value_label(p[n]) for n in names) + f"\t{m}\t{v:.6f}\t{j.n_topics}" for p, v in vals]
    pres["empty_queries_max"] = max(int(c["empty_queries"]) for _, c in stored)
    return pres, rows
