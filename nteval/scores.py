"""The one evaluation core: runs → per-topic scores → aggregates, in memory.

Protocol runs, the verdict, the grid's cells and ``nteval correlate`` all read the same
:class:`Scores`; ``per_topic.tsv`` is its written form, not an interface between stages.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .evaluate import evaluate_run
from .formats.trec import Qrels, Run
from .progress import shown, tqdm


@dataclass
class Scores:
    """``per_topic[system][qid][measure]`` over every qrels topic (a topic a run misses scores 0,
    as ``trec_eval -c``); ``means[system][measure]`` their mean."""

    measures: list[str]
    per_topic: dict[str, dict[str, dict[str, float]]]
    means: dict[str, dict[str, float]]

    @property
    def systems(self) -> list[str]:
        return list(self.per_topic)

    @property
    def topics(self) -> list[str]:
        first = next(iter(self.per_topic.values()), {})
        return sorted(first)

    def matrix(self, measure: str, systems: list[str] | None = None) -> np.ndarray:
        """systems × topics (topics sorted), for tests and bootstraps."""
        systems = systems or self.systems
        topics = self.topics
        return np.array([[self.per_topic[s][q][measure] for q in topics] for s in systems])

    def of(self, measure: str) -> dict[str, dict[str, float]]:
        """{system: {qid: value}} of one measure."""
        return {s: {q: v[measure] for q, v in per.items()} for s, per in self.per_topic.items()}

    def subset(self, qids: Iterable[str]) -> Scores:
        """The same systems on some of the topics (a stratum), means recomputed over them."""
        keep = list(qids)
        return Scores.of_topics(self.measures, {s: {q: p[q] for q in keep if q in p} for s, p in self.per_topic.items()})

    @classmethod
    def of_topics(cls, measures: list[str], per_topic: dict[str, dict[str, dict[str, float]]]) -> Scores:
        """Scores with each system's means computed over its topics in ``per_topic``."""
        means = {s: {m: (sum(v[m] for v in p.values()) / len(p) if p else 0.0) for m in measures}
                 for s, p in per_topic.items()}
        return cls(measures, per_topic, means)

    def tsv(self, measures: list[str] | None = None) -> str:
        """``per_topic.tsv``: system, qid, measure, value (6 decimals), in system then qrels order."""
        keep = set(measures or self.measures)
        lines = ["system\tqid\tmeasure\tvalue"]
        for name, per in self.per_topic.items():
            for qid, vals in per.items():
                lines += [f"{name}\t{qid}\t{m}\t{v:.6f}" for m, v in vals.items() if m in keep]
        return "\n".join(lines) + "\n"


def evaluate_runs(runs: Mapping[str, Run], qrels: Qrels, measures: list[str], progress: bool | None = None,
                  desc: str = "evaluate", names: list[str] | None = None) -> Scores:
    """Every run (in the order given, or of ``names``) against ``qrels`` with ir_measures; one run
    is asked for at a time (a :class:`~nteval.runs.RunSet` holds only some in memory)."""
    order = list(runs) if names is None else list(names)
    held: list[str] = getattr(runs, "held", lambda: [])()  # a RunSet's runs in memory first: none is read twice
    todo = [n for n in held if n in order] + [n for n in order if n not in held]
    got: dict[str, tuple] = {}
    for name in tqdm(todo, desc=desc, unit=" run", disable=not shown(progress), file=sys.stderr, leave=False):
        got[name] = evaluate_run(qrels, runs[name], measures)
    return Scores(list(measures), {n: got[n][1] for n in order}, {n: got[n][0] for n in order})


def strata_means(scores: Scores, strata: dict[str, dict[str, list[str]]], measures: list[str]) -> dict[str, Any]:
    """Per-group results: {dimension: {group: {"topics": n, "systems": {name: {measure: mean}}}}}."""
    out: dict[str, Any] = {}
    for dim, groups in strata.items():
        out[dim] = {}
        for g, qids in groups.items():
            sub = scores.subset(qids)  # topics without qrels (none scored) are left out by subset
            n = len(sub.topics)
            out[dim][g] = {"topics": n, "systems": {s: {m: round(v[m], 6) for m in measures}
                                                    for s, v in sub.means.items()}}
    return out
