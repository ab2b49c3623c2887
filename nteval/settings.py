"""The spec objects the pipelines take instead of long parameter lists.

* :class:`Execution` — how the work runs: progress bars, local worker processes, Lucene threads,
  a Dask scheduler. Nothing in it changes a number in the results.
* :class:`RunSettings` — what a protocol run measures and how strictly it judges: depth,
  measures, the topic floor, the multiple-comparison correction, the minimum meaningful
  difference, the declared task, ``--topics auto``'s budget and batch, where runs are cached.
* :class:`SystemSet` — the systems to run: a YAML path, a shipped set's name or a list of
  Systems, plus the external runs of ``--runs`` and the file S_ref names are looked up in.
* :class:`HumanJudgments` — human topics and qrels (grid, correlate).

The public verbs (:func:`nteval.run_protocol`, :func:`nteval.run_grid`,
:func:`nteval.run_correlate`…) take these objects, and for a notebook also accept their fields
as plain keywords (``run_focused(index, out, depth=100, progress=False)``): :func:`split_options`
routes each keyword to the object that owns it, and an unknown keyword is a one-line error.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from .errors import InputError, suggest
from .params import check_declared, param

#: Fewer usable topics than this and a protocol refuses to rank systems (``--min-topics``).
MIN_TOPICS = 50
#: ``--topics auto``: topics are drawn in batches of this many documents of the seeded sample order
#: (prefix-stable: batch k is the same documents whatever comes after it, so its runs stay cached).
AUTO_BATCH = 250
#: ``--topics auto`` stops at this many sampled documents at most (``topics_budget`` overrides).
AUTO_BUDGET = 5000
#: The deepest ranking a system is asked for (a bigger depth crashed Lucene after the first runs).
MAX_DEPTH = 100_000


#: what a live engine's earlier answers are (:attr:`Execution.answers`): ``replay``: reused, as any
#: cached run; ``ask``: not reused, the engine is asked now (the answers of a run that did not
#: finish are resumed); ``reuse``: reused, never through a cached run file, so each answer replayed
#: is counted and dated in the run's notes
ANSWERS = ("replay", "ask", "reuse")


@dataclass(frozen=True)
class Execution:
    """How the work runs (never what it computes). ``progress``: bars on stderr (None: only on a
    terminal); ``jobs``: local worker processes (grid cells); ``threads``: Lucene search threads
    per run; ``scheduler``: a Dask scheduler's address (``tcp://HOST:PORT``) whose workers compute
    the runs or cells instead (:mod:`nteval.cluster`)."""

    progress: bool | None = param(None, "progress bars on stderr (none: only on a terminal)", flag="")
    jobs: int = param(1, "worker processes (each starts its JVM once)", min=1)
    threads: int | None = param(None, "Lucene search threads per run (none: nteval's choice)", min=1, flag="")
    scheduler: str | None = param(
        None, "a Dask scheduler: its workers compute the runs (grid: the cells) instead of this machine; the index "
              "must be at the same path on every worker (docs/dask.md)", metavar="tcp://HOST:PORT")
    answers: str = param(
        "replay", "a live engine's (http, postgres) runs and answers kept by earlier runs: replay (reuse them: an "
                  "experiment repeated asks nothing), ask (ask the engine now; only the answers of a run that did not "
                  "finish are resumed: what a gate and a check do) or reuse (replay them, and count them in the notes)",
        choices=ANSWERS, flag="")

    def __post_init__(self) -> None:
        check_declared(self, as_options=True)


def check_depth(depth: Any) -> int:
    """``--depth``: a whole number within [1, :data:`MAX_DEPTH`], or a one-line error."""
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise InputError(None, f"--depth must be a whole number within [1, {MAX_DEPTH:,}], got {depth!r}")
    return depth


@dataclass(frozen=True)
class RunSettings:
    """What a protocol run measures and how it judges. ``measures``: ir_measures names (None: the
    protocol's own); ``min_topics``: fewer usable topics is a one-line error; ``correction``: of
    the paired tests (``holm`` or ``bh``); ``mmd``: the minimum meaningful difference ("5%" or an
    absolute difference; None: 5 %); ``task``: the declared search task (``known-item`` or
    ``topical``); ``topics_budget``/``topics_batch``: ``--topics auto``'s limits; ``runs_dir``:
    where runs are cached (None: OUT/runs)."""

    depth: int = param(1000, "hits kept per query", min=1, max=MAX_DEPTH)
    measures: tuple[str, ...] | None = param(None, 'ir_measures names, e.g. "RR AP nDCG@10" (none: the protocol\'s)')
    min_topics: int = param(MIN_TOPICS, "fail when fewer topics are usable: below it a system ranking is mostly noise",
                            min=1)
    correction: str = param("holm", "multiple-comparison correction of the paired tests between systems (Holm: FWER; "
                                    "BH: FDR)", choices=("holm", "bh"))
    mmd: Any = param("5%", "minimum meaningful difference between two systems: a share of the better score (5%: "
                           "Sparck Jones 1974's 'noticeable') or an absolute difference in the measure's units (0.01)",
                     metavar="SHARE%|DIFF")
    task: str | None = param(None, "the search task your users do: known-item (find the one document a description "
                                   "points to: the focused verdict) or topical (find everything on a topic: the "
                                   "high-recall verdict). Its headline answer leads", choices=("known-item", "topical"))
    topics_budget: int = param(AUTO_BUDGET, "with --topics auto: sample at most this many documents", min=1)
    topics_batch: int = param(AUTO_BATCH, "with --topics auto: documents per batch", min=1, flag="")
    runs_dir: Path | None = param(None, "where runs are cached (none: OUT/runs)", flag="")

    def __post_init__(self) -> None:
        check_depth(self.depth)
        if self.measures is not None and not isinstance(self.measures, tuple):
            object.__setattr__(self, "measures", tuple(self.measures))
        check_declared(self, as_options=True)
        if self.runs_dir is not None and not isinstance(self.runs_dir, Path):
            object.__setattr__(self, "runs_dir", Path(self.runs_dir))


#: the shipped systems sets (``nteval/configs/systems/*.yaml``), named in ``--systems``' help
SHIPPED_SETS = tuple(sorted(p.stem for p in (Path(__file__).parent / "configs" / "systems").glob("*.yaml")))


@dataclass(frozen=True)
class SystemSet:
    """The systems to run. ``source``: a systems YAML, a shipped set's name (:data:`SHIPPED_SETS`:
    ``default``, ``table1``, ``wide``…) or a list of Systems (None: ``default``); ``extra``: systems added after
    them (the external runs of ``--runs DIR``); ``file``: where S_ref names are looked up when
    ``source`` is a list."""

    source: Any = param(None, f"systems YAML, or a shipped set: {', '.join(SHIPPED_SETS)}  [default: default]",
                        flag="--systems")
    extra: tuple = ()
    file: Path | None = None

    @classmethod
    def of(cls, systems: Any) -> SystemSet:
        return systems if isinstance(systems, SystemSet) else cls(systems)

    @classmethod
    def take(cls, systems: Any, options: dict[str, Any]) -> SystemSet:
        """``systems`` as a SystemSet, with the keywords ``extra_systems`` (the external runs of
        ``--runs``) and ``systems_file`` moved out of ``options`` into it."""
        chosen = cls.of(systems)
        extra, file = tuple(options.pop("extra_systems", None) or ()), options.pop("systems_file", None)
        if extra:
            chosen = replace(chosen, extra=chosen.extra + extra)
        if file is not None:
            chosen = replace(chosen, file=Path(file))
        return chosen


@dataclass(frozen=True)
class HumanJudgments:
    """Human topics and qrels: ``queries`` (TSV, BEIR queries.jsonl, TREC XML), ``qrels`` (TREC or
    BEIR layout), ``field`` (XML topic fields, e.g. ``query+question``), ``index``: the index the
    human queries search (``all``: real users' documents have titles)."""

    queries: Path = param(None, "human topics: TSV, BEIR queries.jsonl, TREC XML (TREC-COVID, Genomics 2004/2005)")
    qrels: Path = param(None, "human qrels (TREC or BEIR layout)")
    field: str | None = param(None, "topic field(s) for XML topics, e.g. query, question, query+question")
    index: str = param("all", "index the human queries search (all: real users' documents have titles)",
                       choices=("all", "nt"), flag="--human-index")

    def __post_init__(self) -> None:
        if self.queries is None or self.qrels is None:
            raise InputError(None, "human judgments need both --queries and --qrels")
        for name in ("queries", "qrels"):
            if not isinstance(getattr(self, name), Path):
                object.__setattr__(self, name, Path(getattr(self, name)))
        check_declared(self, as_options=True)

    @classmethod
    def given(cls, queries: Any, qrels: Any, field: str | None = None, index: str = "all") -> HumanJudgments | None:
        """None when neither is given; a one-line error when only one is."""
        if queries is None and qrels is None:
            return None
        return cls(queries, qrels, field, index)


T = TypeVar("T")


def _names(cls: type) -> set[str]:
    return {f.name for f in fields(cls)}


def take(cls: type[T], given: T | None, options: dict[str, Any]) -> T:
    """``given`` (or the defaults) with the keywords of ``options`` that are ``cls`` fields moved
    into it (they are removed from ``options``)."""
    mine = {k: options.pop(k) for k in list(options) if k in _names(cls)}
    base = given if given is not None else cls()
    return replace(base, **mine) if mine else base  # type: ignore[type-var]


def split_options(options: dict[str, Any], settings: RunSettings | None = None,
                  execution: Execution | None = None) -> tuple[RunSettings, Execution, dict[str, Any]]:
    """Flat keywords → (:class:`RunSettings`, :class:`Execution`, the rest: the protocol's own
    parameters). Keywords win over the fields of the objects given."""
    rest = dict(options)
    if isinstance(rest.get("measures"), (list, tuple)):
        rest["measures"] = tuple(str(m) for m in rest["measures"])
    return take(RunSettings, settings, rest), take(Execution, execution, rest), rest


def reject_unknown(rest: dict[str, Any], what: str, known: set[str] | None = None) -> None:
    """One line naming the first keyword nobody took (with the nearest known name)."""
    if rest:
        key = next(iter(rest))
        pool = (known or set()) | _names(RunSettings) | _names(Execution)
        raise InputError(None, f"{what}: unknown parameter {key!r}{suggest(key, sorted(pool))}")


__all__ = ["AUTO_BATCH", "AUTO_BUDGET", "Execution", "HumanJudgments", "MAX_DEPTH", "MIN_TOPICS", "RunSettings",
           "SystemSet", "check_depth", "reject_unknown", "split_options", "take"]
