"""One grid cell = one system run over one protocol's topics, evaluated, stored as a small JSON.

Cells are written atomically the moment they finish, under a key of everything that decides
their value, so a killed grid resumes where it stopped and a changed input never reuses a stale
cell. Runs are not kept (100 cells × 1,000 queries × 1,000 hits would be gigabytes).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import write_text
from ..formats.trec import canonical, read_qrels, read_topics
from ..formats.versions import CELL_FORMAT
from ..runs import RUN_FORMAT, drop_held
from ..scores import evaluate_runs
from ..systems.base import System
from ..systems.execute import close_targets, open_target, run_system  # noqa: F401  (their home before 0.2)


@dataclass(frozen=True)
class Task:
    """What a worker needs for one cell (paths, not data: workers cache topics, qrels, indexes)."""
    protocol: str
    index: str          # Lucene index directory searched
    topics: str         # topics.tsv of the protocol
    qrels: str          # qrels.txt of the protocol
    system: System
    params: dict[str, float]
    depth: int
    measures: tuple[str, ...]
    path: str           # where the cell's JSON goes
    exclude: str | None = None  # TSV qid → held-out docids (high-recall --holdout), removed from the rankings


def file_digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def cell_key(fingerprint: str, index_name: str, topics_digest: str, qrels_digest: str, system: System, depth: int,
             measures: tuple[str, ...]) -> str:
    blob = json.dumps([CELL_FORMAT, RUN_FORMAT, fingerprint, index_name, topics_digest, qrels_digest, system.key(),
                       depth, sorted(measures)])
    return hashlib.sha256(blob.encode()).hexdigest()


def read_cell(path: Path, key: str) -> dict[str, Any] | None:
    """A finished cell with this key, or None (missing, from other inputs, or unreadable)."""
    try:
        cell = json.loads(Path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return cell if isinstance(cell, dict) and cell.get("key") == key else None


# per worker process: open indexes and parsed topics/qrels, reused by all the cells it computes
_FILES: dict[str, Any] = {}


def read_exclusions(path: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        qid, docs = line.split("\t")
        out[qid] = set(docs.split(","))
    return out


def _cached(path: str, reader):
    if path not in _FILES:
        _FILES[path] = reader(Path(path))
    return _FILES[path]


def compute_cell(task: Task, key: str) -> dict[str, Any]:
    """Run, evaluate and store one cell (called in a worker process, or in-process for --jobs 1)."""
    held = _cached(task.exclude, read_exclusions) if task.exclude else None
    cell = evaluate_cell(task, key, _cached(task.topics, read_topics), _cached(task.qrels, read_qrels), held)
    store_cell(task, cell)
    return cell


def store_cell(task: Task, cell: dict[str, Any]) -> None:
    write_text(Path(task.path), json.dumps(cell, separators=(",", ":")) + "\n")


def one_pass_model(system: System) -> str | None:
    """The similarity a grid of ``system``'s kind is scored with in one pass over the postings
    (:attr:`~nteval.systems.kind.SystemKind.one_pass`, declared by the kind's own class: a subclass
    that runs otherwise does not inherit it), or None: the cells are computed one by one."""
    kind = system.kind
    return type(kind).__dict__.get("one_pass")


def one_pass_groups(todo: list[tuple[Task, str]]) -> tuple[list[list[tuple[Task, str]]], list[tuple[Task, str]]]:
    """The cells to compute as groups of one pass each (same protocol, topics, index, depth and
    similarity), and the rest (computed one by one)."""
    groups: dict[tuple, list[tuple[Task, str]]] = {}
    rest: list[tuple[Task, str]] = []
    for task, key in todo:
        model = one_pass_model(task.system)
        if model is None:
            rest.append((task, key))
        else:
            groups.setdefault((task.protocol, task.index, task.topics, task.qrels, task.exclude, task.depth,
                               task.measures, model), []).append((task, key))
    return list(groups.values()), rest


#: measures the one-pass routine computes itself, as trec_eval does (others: through the runs)
_JAVA_MEASURES = re.compile(r"^(RR|AP|Bpref|(P|R|Success)@[1-9][0-9]*)$")
#: topics whose rankings are held in Python at once when a measure needs the runs (memory ∝ this)
CHUNK = 100
#: topics per call of a one-pass grid whose measures are computed in Java (the bar moves between)
PASS_CHUNK = 200


def compute_cells_one_pass(group: list[tuple[Task, str]], threads: int,
                           tick: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Every cell of ``group`` from one pass over the postings (``nteval.GridSearch``), each
    evaluated and stored as :func:`compute_cell` does: the same runs, so the same cells. The
    measures RR, AP, Bpref, P@k, R@k and Success@k are computed in the pass itself (no ranking
    crosses into Python); any other measure takes the rankings, ``CHUNK`` topics at a time.
    ``tick(done, total)``: the topics scored so far (every ``CHUNK``), for a progress bar."""
    t0 = time.perf_counter()
    first = group[0][0]
    model = one_pass_model(first.system)
    topics, qrels = _cached(first.topics, read_topics), _cached(first.qrels, read_qrels)
    held = _cached(first.exclude, read_exclusions) if first.exclude else None
    index = open_target(first.index, first.protocol).lucene
    sims = [index.similarity(str(model), **task.system.params) for task, _ in group]
    measures = list(first.measures)
    results: list[tuple[dict[str, dict[str, float]], int]]
    say = tick or (lambda done, total: None)
    if all(_JAVA_MEASURES.match(m) for m in measures):
        # PASS_CHUNK topics per call (a topic's values do not depend on the others): the bar moves
        qids = list(topics)
        got: list[dict[str, dict[str, float]]] = [{} for _ in group]
        empties = [0] * len(group)
        for i in range(0, len(qids), PASS_CHUNK):
            part = {q: topics[q] for q in qids[i:i + PASS_CHUNK]}
            sub = {q: qrels[q] for q in part if q in qrels}
            for c, (vals, e) in enumerate(index.grid_evaluate(part, first.depth, sims, sub, measures, held, threads)):
                got[c].update(vals)
                empties[c] += e
            say(min(i + PASS_CHUNK, len(qids)), len(qids))
        zero = dict.fromkeys(measures, 0.0)
        results = [({q: g.get(q, zero) for q in qrels}, e) for g, e in zip(got, empties)]
    else:
        per: list[dict[str, dict[str, float]]] = [{} for _ in group]
        empty = [0] * len(group)
        extra = max((len(v) for v in held.values()), default=0) if held else 0
        qids = list(topics)
        for i in range(0, len(qids), CHUNK):
            part = {q: topics[q] for q in qids[i:i + CHUNK]}
            sub = {q: qrels[q] for q in part if q in qrels}
            for c, raw in enumerate(index.grid_search(part, first.depth + extra, sims, threads)):
                raw = drop_held(raw, held) if held else raw
                run = {q: canonical(raw.get(q, []), first.depth) for q in part}
                empty[c] += sum(1 for q in part if not run[q])
                if sub:
                    per[c].update(evaluate_runs({"cell": run}, sub, measures).per_topic["cell"])
            say(min(i + CHUNK, len(qids)), len(qids))
        results = [({q: p.get(q, dict.fromkeys(measures, 0.0)) for q in qrels}, e) for p, e in zip(per, empty)]
    seconds = (time.perf_counter() - t0) / len(group)
    cells = []
    for (task, key), (per_topic, n_empty) in zip(group, results):
        cell = cell_record(task, key, per_topic, n_empty, len(topics), seconds)
        cell["one_pass"] = len(group)
        store_cell(task, cell)
        cells.append(cell)
    return cells


def cell_record(task: Task, key: str, per_topic: dict[str, dict[str, float]], empty: int, n_topics: int,
                seconds: float) -> dict[str, Any]:
    """A cell as stored: means over the judged topics (in their order), per-topic values, counts."""
    n = len(per_topic)
    means = {m: (sum(v[m] for v in per_topic.values()) / n if n else 0.0) for m in task.measures}
    return {
        "key": key, "protocol": task.protocol, "params": task.params,
        "system": {"algorithm": task.system.algorithm, "params": task.system.params},
        "measures": {m: round(v, 6) for m, v in means.items()},
        "per_topic": {m: {q: round(v[m], 6) for q, v in per_topic.items()} for m in task.measures},
        "topics": n_topics, "empty_queries": empty, "seconds": round(seconds, 3), "pid": os.getpid(),
    }


def evaluate_cell(task: Task, key: str, topics: dict[str, str], qrels: dict[str, dict[str, int]],
                  held: dict[str, set[str]] | None, raw: dict | None = None) -> dict[str, Any]:
    """One cell's value: run ``task.system`` over ``topics``, evaluate against ``qrels`` (nothing is
    written: :func:`compute_cell` stores it, or the client of a Dask cluster does)."""
    t0 = time.perf_counter()
    extra = max(len(v) for v in held.values()) if held else 0
    if raw is None:  # (given: the one-pass rankings of this cell, searched at depth + extra)
        raw = run_system(open_target(task.index, task.protocol), task.system, topics, task.depth + extra)
    if held:
        # held-out source documents: for a system without feedback, removing them from its ranking
        # is exactly searching an index they are deleted from (deletions leave every other score
        # as it is); feedback systems are refused before the grid starts
        raw = drop_held(raw, held)
    run = {q: canonical(raw.get(q, []), task.depth) for q in topics}
    scores = evaluate_runs({task.system.name: run}, qrels, list(task.measures))
    return cell_record(task, key, scores.per_topic[task.system.name], sum(1 for q in topics if not run[q]), len(topics),
                       time.perf_counter() - t0)
