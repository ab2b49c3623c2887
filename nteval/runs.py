"""Run systems over topics into TREC run files, reusing runs computed before for the same inputs.

One JVM per process, one open index for all systems. A run is reused when its sidecar
``NAME.meta.json`` carries the same key: index fingerprint + topics + system (algorithm, params,
and for fusion the keys of its inputs) + depth + :data:`RUN_FORMAT`.
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .atomic import write_text
from .corpus.store import known_docids
from .errors import env_int
from .formats.trec import Run, canonical, format_run, read_run
from .formats.versions import RUN_FORMAT
from .index import read_manifest
from .lucene.holdout import holdout_copy
from .progress import pending, pending_note, shown, talking, tqdm
from .settings import Execution, check_depth
from .systems.execute import Target, run_system
from .systems.external import precheck_runs
from .systems.system import System


def topics_key(topics: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(topics, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass
class RunInfo:
    system: System
    path: Path
    key: str
    reused: bool
    seconds: float
    empty_queries: int
    queries_per_s: float | None
    notes: dict | None = None  # what a dense or external system reported (see systems.execute.Target)


def _file_stamp(data: bytes) -> dict:
    return {"bytes": len(data), "lines": data.count(b"\n"), "sha256": hashlib.sha256(data).hexdigest()}


def _cached_meta(path: Path, meta_path: Path, key: str) -> dict | None:
    """The sidecar of a reusable cached run, or None: the key must match AND the run file must be
    exactly the one written (line count + sha256), so a run truncated at a line boundary, edited, or
    half-copied is recomputed instead of silently scoring fewer hits. (A sidecar from before the
    stamp existed is trusted by its key, as it was then.)"""
    if not (path.is_file() and meta_path.is_file()):
        return None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return None  # a corrupt sidecar: recompute
    if not isinstance(meta, dict) or meta.get("key") != key:
        return None
    if "file" not in meta:
        return meta
    if not isinstance(meta.get("file"), dict):
        return None
    try:
        stamp = _file_stamp(path.read_bytes())
    except OSError:
        return None
    return meta if stamp == meta["file"] else None


def _ask_again(system: System, answers: str, asked_now: set[str]) -> bool:
    """Whether ``system``'s cached run must not be reused: it is a live engine that is to be asked
    now (``answers`` not ``replay``: its cached run would hide a change, and a reused run's answers
    could not be counted), or it is made from one that was (a fusion). Adds it to ``asked_now``."""
    if (system.kind.live and answers != "replay") or any(d in asked_now for d in system.kind.inputs(system)):
        asked_now.add(system.name)
        return True
    return False


def _run_keys(systems: list[System], fingerprint: str, index_name: str, tkey: str, depth: int) -> dict[str, str]:
    keys: dict[str, str] = {}
    for s in systems:
        deps = [keys[d] for d in s.kind.inputs(s)]
        blob = json.dumps([fingerprint, index_name, tkey, s.key(), deps, depth, RUN_FORMAT])
        keys[s.name] = hashlib.sha256(blob.encode()).hexdigest()
    return keys


#: How many hits (topic × rank) of one call's runs stay in memory (≈ 145 bytes each as Python
#: tuples): the runs beyond it are read back from their files when asked for (≈ 2 s per million
#: hits). 1,000 topics × 1,000 hits × 17 systems held at once took 2.5 GB; this keeps ≈ 0.3 GB, a
#: fusion's inputs at 1,000 topics. NTEVAL_RUN_MEMORY_HITS overrides.
RUN_MEMORY_HITS = 2_000_000


def run_memory_budget() -> int:
    """:data:`RUN_MEMORY_HITS`, or NTEVAL_RUN_MEMORY_HITS (a one-line error if it is not a number)."""
    return env_int("NTEVAL_RUN_MEMORY_HITS", RUN_MEMORY_HITS)


class RunSet(Mapping):
    """The runs of one :func:`run_all` call by system name, in system order, with bounded memory.

    Each run is written to its file before it is added; the most recently used ones stay in memory
    up to ``budget`` hits in all, any other is read back from its file when asked for. A run read
    back is the run that was in memory (:func:`~nteval.formats.trec.canonical` made it so), so
    nothing downstream can tell the difference but the memory it takes."""

    def __init__(self, topics: Mapping[str, str], budget: int | None = None):
        self._topics = list(topics)
        self._paths: dict[str, Path] = {}
        self._held: OrderedDict[str, Run] = OrderedDict()
        self._hits: dict[str, int] = {}
        self.budget = budget if budget is not None else run_memory_budget()
        self.reads = 0  # runs read back from their files (what a tight budget costs)

    def add(self, name: str, path: Path, run: Run | None = None) -> None:
        """``run`` (restricted to the topics) is the content of ``path``; without it, the file is read."""
        self._paths[name] = path
        self._hold(name, self._read(path) if run is None else run)

    def _read(self, path: Path) -> Run:
        run = read_run(path)
        return {q: run.get(q, []) for q in self._topics}

    def _hold(self, name: str, run: Run) -> None:
        self._held.pop(name, None)
        self._held[name] = run
        self._hits[name] = sum(len(r) for r in run.values())
        while len(self._held) > 1 and sum(self._hits[n] for n in self._held) > self.budget:
            self._held.popitem(last=False)  # the least recently used goes (it is on disk)

    def __getitem__(self, name: str) -> Run:
        if name in self._held:
            self._held.move_to_end(name)
            return self._held[name]
        run = self._read(self._paths[name])  # KeyError for a system this call did not run
        self.reads += 1
        self._hold(name, run)
        return run

    def several(self, names: Sequence[str]) -> list[Run]:
        """The runs ``names`` all at once, in that order (a fusion's inputs). The ones in memory are
        taken first, then the others read back: asked for in order, runs that do not all fit would
        each be evicted just before its turn and every one read back."""
        got: dict[str, Run] = {}
        for n in [*(h for h in self.held() if h in names), *names]:
            if n not in got:
                got[n] = self[n]
        return [got[n] for n in names]

    def held(self) -> list[str]:
        """The names of the runs in memory, most recently used first (evaluate these first)."""
        return list(reversed(self._held))

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, name: object) -> bool:
        return name in self._paths


@dataclass(frozen=True)
class Searched:
    """The index a call's systems search: ``index_dir/index_name`` at ``fingerprint``.
    ``key_name`` names the index in the cache key when the directory name is not stable (a
    held-out copy); ``label`` names the topic set for external systems with one run per topic set
    (default: the index name)."""

    index_dir: Path
    index_name: str
    fingerprint: str
    key_name: str | None = None
    label: str | None = None

    @classmethod
    def of(cls, index_dir: str | Path, index_name: str, label: str | None = None) -> Searched:
        """The index as its manifest describes it now (its fingerprint read from the manifest)."""
        return cls(Path(index_dir), index_name, read_manifest(Path(index_dir))["fingerprint"], label=label)


def run_all(where: Searched, topics: dict[str, str], systems: list[System], runs_dir: Path, depth: int = 1000,
            execution: Execution | None = None) -> tuple[RunSet, list[RunInfo]]:
    """Compute (or reuse) every system's run over ``where``; returns runs in trec order (a
    :class:`RunSet`: memory bounded, the runs it does not hold are read back from their files).
    A system that fails stops the call with its error; the runs finished before it stay cached.
    ``execution.threads``: Lucene search threads per run; ``execution.scheduler``: a Dask
    scheduler's address; the Lucene systems not cached yet run there, one task each, all at once;
    fusions, dense and external systems run here once their inputs are in; every run is written
    here under the same names and keys (:mod:`nteval.cluster`)."""
    check_depth(depth)
    ex = execution or Execution()
    index_dir, index_name, fingerprint, label = where.index_dir, where.index_name, where.fingerprint, where.label
    progress, threads, scheduler = ex.progress, ex.threads, ex.scheduler
    precheck_runs(systems, topics, label or index_name)
    runs_dir.mkdir(parents=True, exist_ok=True)
    tkey = topics_key(topics)
    runs = RunSet(topics)
    infos: list[RunInfo] = []
    asked_now: set[str] = set()
    keys = _run_keys(systems, fingerprint, where.key_name or index_name, tkey, depth)
    target = Target(index_dir, index_name, fingerprint, label=label, progress=progress, answers=ex.answers)
    remote = None
    if scheduler:
        todo = [(s, keys[s.name]) for s in systems if s.kind.needs_lucene
                and _cached_meta(runs_dir / f"{s.name}.run", runs_dir / f"{s.name}.meta.json", keys[s.name]) is None]
        if todo:
            from .cluster import RemoteRuns

            remote = RemoteRuns(scheduler, Path(index_dir) / index_name, label or index_name, topics, todo, depth, threads)
    plans = _say_encodings(systems, keys, runs_dir, target, ex, asked_now)
    bar = tqdm(total=len(systems) * len(topics), unit=" q", desc="systems", disable=not shown(progress), file=sys.stderr,
               leave=False, mininterval=0.5)
    try:
        for s in systems:
            path = runs_dir / f"{s.name}.run"
            meta_path = runs_dir / f"{s.name}.meta.json"
            key = keys[s.name]
            bar.set_postfix_str(s.name + pending_note())
            meta = None if _ask_again(s, ex.answers, asked_now) else _cached_meta(path, meta_path, key)
            if meta is not None:
                runs.add(s.name, path)
                infos.append(RunInfo(s, path, key, True, meta.get("seconds", 0.0), meta.get("empty_queries", 0),
                                     meta.get("queries_per_s"), meta.get("notes")))
                bar.update(len(topics))
                continue
            if remote is not None and s.name in remote:
                got = remote.get(s.name)
                run, secs, long_queries = got["run"], got["seconds"], got["long_queries"]
                bar.update(len(topics))
            else:
                t0 = time.perf_counter()
                long_before = target.lucene.long_queries if target.opened else 0
                raw = run_system(target, s, topics, depth, done=runs, threads=threads, tick=bar.update)
                secs = time.perf_counter() - t0
                run = {q: canonical(raw.get(q, []), depth) for q in topics}
                long_queries = (target.lucene.long_queries - long_before) if target.opened else 0
            notes = target.notes.get(s.name)
            _say_foreign(s.name, notes, Path(index_dir), index_name)
            meta = _store_run(path, meta_path, run, s, key, depth, _Took(secs, long_queries, notes))
            runs.add(s.name, path, run)
            infos.append(RunInfo(s, path, key, False, secs, meta["empty_queries"], meta["queries_per_s"], notes))
    finally:
        bar.close()
        target.close()
        if remote is not None:
            remote.close()
        for plan in plans:
            pending(plan["key"], done=True)
    return runs, infos


def _say_encodings(systems: list[System], keys: dict[str, str], runs_dir: Path, target: Any, ex: Execution,
                   asked_now: set[str]) -> list[dict[str, Any]]:
    """Before any system runs: the ones that must encode the collection first (a dense system whose
    vectors this index does not hold yet), said in one line with what each encodes and how long it
    took here before (each says its rate again on its first batch); their time goes into the systems
    bar's time left (:func:`nteval.progress.pending`). Returns the plans."""
    plans: list[dict[str, Any]] = []
    if not talking(ex.progress):
        return plans
    for s in systems:
        if _cached_meta(runs_dir / f"{s.name}.run", runs_dir / f"{s.name}.meta.json", keys[s.name]) is not None \
                and not _ask_again(s, ex.answers, set(asked_now)):
            continue
        plan = s.kind.encodes(s, target)
        if plan is not None and plan["documents"] and plan["key"] not in {p["key"] for p in plans}:
            plans.append({**plan, "system": s.name})
    if not plans:
        return []
    from tqdm import tqdm as fmt

    parts = []
    for p in plans:
        pending(p["key"], p["seconds"])
        when = (f"about {fmt.format_interval(p['seconds'])} at the {p['rate']:.3g} documents/s it took on this machine "
                "before" if p["seconds"] else "timed on its first batch")
        parts.append(f"{p['system']}: {'up to ' if p['carried'] else ''}{p['documents']:,} documents of {p['index']} with "
                     f"{p['encoder']}, {when}")
    print(f"note: {'these systems encode' if len(plans) > 1 else 'this system encodes'} the collection before "
          f"searching it (once per index; cached beside it): " + "; ".join(parts), file=sys.stderr, flush=True)
    return plans


def reuse_pieces(where: Searched, topics: dict[str, str], systems: list[System], runs_dir: Path, depth: int,
                 pieces: list[tuple[dict[str, str], Path]]) -> list[str]:
    """Write into ``runs_dir`` the run of each system over ``topics`` assembled from its cached
    runs over ``pieces`` ((queries, runs directory) of earlier calls: ``--topics auto``'s batches),
    where some of the pieces' queries are disjoint and cover ``topics`` exactly and every one of
    them holds that system's run under its key (the same index, queries, system, inputs and depth).
    Only systems nteval computes (not user code, whose output might depend on the set): each answers
    a query on its own, so the assembled run is the file :func:`run_all` would write, byte for byte,
    and run_all then finds it cached. Returns the names written."""
    key_name = where.key_name or where.index_name
    chosen = [(q, d) for q, d in pieces if q and all(topics.get(k) == v for k, v in q.items())]
    covered: set[str] = set()
    for q, _ in chosen:
        if covered & set(q):
            return []
        covered |= set(q)
    if covered != set(topics):
        return []
    eligible: set[str] = set()
    for s in systems:  # (in order: a fusion's inputs come first)
        if s.kind.computed and not s.kind.runs_code and not s.kind.fixed_topics and \
                all(d in eligible for d in s.kind.inputs(s)):
            eligible.add(s.name)
    want = [s for s in systems if s.name in eligible]
    full = _run_keys(want, where.fingerprint, key_name, topics_key(topics), depth)
    part_keys = [_run_keys(want, where.fingerprint, key_name, topics_key(q), depth) for q, _ in chosen]
    written = []
    for s in want:
        path, meta_path = runs_dir / f"{s.name}.run", runs_dir / f"{s.name}.meta.json"
        if _cached_meta(path, meta_path, full[s.name]) is not None:
            continue
        metas = [_cached_meta(d / f"{s.name}.run", d / f"{s.name}.meta.json", k[s.name])
                 for (_, d), k in zip(chosen, part_keys)]
        if any(m is None for m in metas):
            continue
        merged: Run = {}
        for _, d in chosen:
            merged.update(read_run(d / f"{s.name}.run"))
        run = {q: merged.get(q, []) for q in topics}
        text = format_run(run, s.name)
        runs_dir.mkdir(parents=True, exist_ok=True)
        write_text(path, text)
        secs = sum(float(m.get("seconds", 0.0)) for m in metas if m)
        meta = {"key": full[s.name], "file": _file_stamp(text.encode("utf-8")),
                "system": {"name": s.name, "algorithm": s.algorithm, "params": s.params}, "depth": depth,
                "topics": len(topics), "empty_queries": sum(1 for q in topics if not run[q]),
                "long_queries": sum(int(m.get("long_queries", 0)) for m in metas if m), "seconds": round(secs, 3),
                "queries_per_s": round(len(topics) / secs, 1) if secs > 0 else None,
                "assembled_from": [str(d) for _, d in chosen]}
        notes = next((m.get("notes") for m in metas if m and m.get("notes")), None)
        if notes:
            meta["notes"] = notes
        write_text(meta_path, json.dumps(meta, indent=2) + "\n")
        written.append(s.name)
    return written


def cluster_session(scheduler: str | None, paths: list[Path]):
    """Connected to Dask scheduler ``scheduler`` for the block, ``paths`` checked on its workers
    (:func:`nteval.cluster.session`; the runs and cells inside share the connection); nothing when
    ``scheduler`` is None. Connecting first makes an unreachable scheduler fail before any work."""
    if not scheduler:
        import contextlib

        return contextlib.nullcontext()
    from .cluster import session

    return session(scheduler, [str(p) for p in paths])


@dataclass(frozen=True)
class _Took:
    """What computing a run took: its seconds, its queries of more distinct terms than Lucene's
    default clause limit, and the notes its kind made (hits outside the collection, …)."""
    secs: float
    long_queries: int
    notes: dict | None


def _store_run(path: Path, meta_path: Path, run: Run, s: System, key: str, depth: int, took: _Took) -> dict[str, Any]:
    """A computed run written to ``path`` (TREC) and its meta.json (the cache key and what the run
    took); returns the meta."""
    secs, long_queries, notes = took.secs, took.long_queries, took.notes
    text = format_run(run, s.name)
    write_text(path, text)
    meta: dict[str, Any] = {"key": key, "file": _file_stamp(text.encode("utf-8")),
                            "system": {"name": s.name, "algorithm": s.algorithm, "params": s.params},
                            "depth": depth, "topics": len(run), "empty_queries": sum(1 for r in run.values() if not r),
                            "long_queries": long_queries, "seconds": round(secs, 3),
                            "queries_per_s": round(len(run) / secs, 1) if secs > 0 else None}
    if notes:
        meta["notes"] = notes
    write_text(meta_path, json.dumps(meta, indent=2) + "\n")
    return meta


def _say_foreign(name: str, notes: dict | None, index_dir: Path | None = None, index_name: str = "nt") -> None:
    """A system's hits outside the documents searched, said once: records of the collection
    without an abstract (an engine that found them matched their titles) or not in it at all."""
    if not (notes and notes.get("foreign_hits")):
        return
    what = "are not in the collection"
    if index_dir is not None and index_name == "nt":
        if known_docids(index_dir, [notes["foreign_example"]], "all"):
            if notes.get("not_in_collection_hits") == 0:
                return   # (records without an abstract only: the title-leak guard says what they mean, nteval.leak)
            what = ("are not among the documents NT searches (records of the collection without an abstract: an engine "
                    "that matched them searched their titles)")
    print(f"note: system {name}: {notes['foreign_hits']:,} of its {notes['hits']:,} hits "
          f"({notes['foreign_documents']:,} documents, e.g. {notes['foreign_example']}) {what}; "
          "they count as non-relevant", file=sys.stderr)


def drop_held(run: Run, held: dict) -> Run:
    """Each topic's ranking without its held-out documents (``held``: qid → docids). For a system
    without feedback this is exactly searching an index they are deleted from: Lucene deletions
    leave every other document's score as it was."""
    return {q: [h for h in r if h[0] not in held.get(q, ())] for q, r in run.items()}


def holdout_folds(topic_ids: list[str], num_docs: int, max_share: float = 0.02, max_fold: int = 100) -> list[list[str]]:
    """Topics (in sample order) cut into folds whose source documents are held out together: at
    most ``max_share`` of the collection and ``max_fold`` documents per fold, so holding them out
    changes what other topics can find by little (a topic's own fold-mates leave its qrels)."""
    size = max(1, min(max_fold, int(num_docs * max_share)))
    return [topic_ids[i:i + size] for i in range(0, len(topic_ids), size)]


def index_folds(index_dir: Path, index_name: str, topic_ids: list[str]) -> list[list[str]]:
    """:func:`holdout_folds` sized by the index's document count as its manifest records it (one
    source for every caller: the protocol's qrels, its runs and the grid must cut the same folds)."""
    return holdout_folds(topic_ids, int(read_manifest(index_dir)["indexes"][index_name]["documents"]))


def run_all_holdout(where: Searched, topics: dict[str, str], systems: list[System], runs_dir: Path,
                    depth: int = 1000, execution: Execution | None = None, sources: dict[str, str] | None = None
                    ) -> tuple[dict[str, Run], list[RunInfo], dict[str, list[str]]]:
    """Like :func:`run_all`, but each topic (qid = its source docid) searches a copy of the index
    in which its source document and its fold-mates are held out (see :mod:`nteval.lucene.holdout`).
    ``sources``: each topic's source docid where the topic id is not the docid (high-recall's
    ``DOCID-sN``, :mod:`nteval.topics.ids`).

    Returns the merged runs, one summed RunInfo per system, and each topic's held-out documents
    (to drop from its qrels). Fold runs are cached in ``runs_dir/folds/fold-NNN/``; the index
    copies live in ``runs_dir/folds/`` only while their fold runs.

    Systems that search no Lucene index (dense, external runs, callables, commands) run once over
    all topics (cached in ``runs_dir/whole/``) and lose each topic's held-out documents from their
    rankings instead: Lucene deletions leave every other document's score as it was, so for a
    system without feedback the two are the same. Fusions with such an input are made last."""
    ex = execution or Execution()
    local = Execution(progress=ex.progress, threads=ex.threads)  # (held-out copies live here, not on a cluster)
    in_folds: list[System] = []
    for s in systems:
        if s.kind.needs_lucene or (s.kind.fusion and all(d in {f.name for f in in_folds} for d in s.kind.inputs(s))):
            in_folds.append(s)
    whole = [s for s in systems if not s.kind.needs_lucene and not s.kind.fusion]
    folds = index_folds(where.index_dir, where.index_name, list(topics))
    docs_of = [[(sources or {}).get(q, q) for q in fold] for fold in folds]  # the documents each fold holds out
    held = {q: docs for fold, docs in zip(folds, docs_of) for q in fold}
    merged = _Merged.of(systems)
    for i, (fold, docs) in enumerate(zip(folds, docs_of) if in_folds else ()):
        runs, infos = _fold_runs(where, {q: topics[q] for q in fold}, docs, in_folds, runs_dir / "folds" / f"fold-{i:03d}",
                                 depth, local)
        for info in infos:
            merged.add_piece(info, runs[info.system.name])
    if whole:
        extra = max(len(f) for f in folds) if folds else 0
        runs, infos = run_all(Searched(where.index_dir, where.index_name, where.fingerprint, label=where.label), topics,
                              whole, runs_dir / "whole", depth + extra, local)
        drop = {q: set(docs) for q, docs in held.items()}
        for info in infos:
            merged.set_whole(info, {q: r[:depth] for q, r in drop_held(runs[info.system.name], drop).items()})
    target = Target(where.index_dir, where.index_name, where.fingerprint, label=where.label)
    for s in systems:
        if s.kind.fusion and s not in in_folds:
            fused = run_system(target, s, topics, depth, done=merged.runs)
            merged.set_fused(s, {q: canonical(fused.get(q, []), depth) for q in topics})
    return merged.runs, merged.write(systems, topics, runs_dir), held


def _fold_runs(where: Searched, topics: dict[str, str], docs: list[str], systems: list[System], runs_dir: Path,
               depth: int, execution: Execution) -> tuple[RunSet, list[RunInfo]]:
    """One fold's runs of :func:`run_all_holdout` (cached in ``runs_dir``), over a copy of the
    index without the fold's documents ``docs``: the copy is keyed by them, made beside
    ``runs_dir`` only when a run is not cached, and removed once the runs are in."""
    import shutil

    fkey = hashlib.sha256(json.dumps([where.fingerprint, where.index_name, sorted(docs)]).encode()).hexdigest()[:16]
    key_name = f"{where.index_name}-holdout-{fkey}"
    copy_dir = runs_dir.parent / f"index-{fkey}"
    if not _all_cached(runs_dir, topics, systems, where.fingerprint, key_name, depth) and not copy_dir.exists():
        holdout_copy(where.index_dir / where.index_name, copy_dir, docs)
    runs, infos = run_all(Searched(runs_dir.parent, copy_dir.name, where.fingerprint, key_name=key_name,
                                   label=where.label), topics, systems, runs_dir, depth, execution)
    if copy_dir.exists():
        shutil.rmtree(copy_dir)
    return runs, infos


@dataclass
class _Merged:
    """:func:`run_all_holdout`'s runs as they come in, per system: its run over every topic so far,
    the seconds it took, its empty queries, whether every piece was reused, and its notes."""
    runs: dict[str, Run]
    seconds: dict[str, float]
    empty: dict[str, int]
    reused: dict[str, bool]
    notes: dict[str, dict]

    @classmethod
    def of(cls, systems: list[System]) -> _Merged:
        return cls({s.name: {} for s in systems}, {s.name: 0.0 for s in systems}, {s.name: 0 for s in systems},
                   {s.name: True for s in systems}, {})

    def add_piece(self, info: RunInfo, run: Run) -> None:
        """A fold's run of a system, added to what its other folds gave."""
        n = info.system.name
        self.runs[n].update(run)
        self.seconds[n] += info.seconds
        self.empty[n] += info.empty_queries
        self.reused[n] &= info.reused

    def set_whole(self, info: RunInfo, run: Run) -> None:
        """The run of a system searched once over all topics (its held-out documents dropped)."""
        n = info.system.name
        self.runs[n] = run
        self.seconds[n], self.reused[n] = info.seconds, info.reused
        self.empty[n] = sum(1 for r in run.values() if not r)
        self.notes[n] = info.notes or {}

    def set_fused(self, s: System, run: Run) -> None:
        """A fusion of the merged runs, made here."""
        self.runs[s.name] = run
        self.empty[s.name] = sum(1 for r in run.values() if not r)
        self.reused[s.name] = False

    def write(self, systems: list[System], topics: dict[str, str], runs_dir: Path) -> list[RunInfo]:
        """Each system's merged run written to ``runs_dir`` (TREC, topics in order); one RunInfo each."""
        out = []
        for s in systems:
            run = {q: self.runs[s.name].get(q, []) for q in topics}
            path = runs_dir / f"{s.name}.run"
            write_text(path, format_run(run, s.name))
            secs = self.seconds[s.name]
            out.append(RunInfo(s, path, "holdout", self.reused[s.name], secs, self.empty[s.name],
                               round(len(topics) / secs, 1) if secs > 0 else None, self.notes.get(s.name)))
        return out


def _all_cached(runs_dir: Path, topics: dict[str, str], systems: list[System], fingerprint: str, key_name: str,
                depth: int) -> bool:
    keys = _run_keys(systems, fingerprint, key_name, topics_key(topics), depth)
    return all(_cached_meta(runs_dir / f"{s.name}.run", runs_dir / f"{s.name}.meta.json", keys[s.name]) is not None
               for s in systems)
