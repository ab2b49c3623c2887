"""Fusion of runs: reciprocal ranks (RRF, Cormack et al. 2009) and a linear combination of
normalised scores (the usual way to build a sparse + dense hybrid)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError, short
from ..formats.trec import Run, trec_order
from ..params import Param
from .kind import RunContext, SystemKind

if TYPE_CHECKING:
    from .system import System


def rrf(runs: list[Run], k: int = 60, depth: int = 1000) -> Run:
    """score(d) = Σ_runs 1 / (k + rank_run(d))."""
    out: Run = {}
    qids = sorted({q for r in runs for q in r})
    for qid in qids:
        scores: dict[str, float] = {}
        for run in runs:
            for rank, (docid, _s) in enumerate(trec_order(run.get(qid, [])), 1):
                scores[docid] = scores.get(docid, 0.0) + 1.0 / (k + rank)
        out[qid] = trec_order(scores.items())[:depth]
    return out


def _normalise(scores: np.ndarray, how: str) -> np.ndarray:
    if how == "minmax":
        lo, hi = float(scores.min()), float(scores.max())
        return (scores - lo) / (hi - lo) if hi > lo else np.ones_like(scores)
    if how == "zscore":
        sd = float(scores.std())
        return (scores - scores.mean()) / sd if sd > 0 else np.zeros_like(scores)
    return scores


def linear(runs: list[Run], weights: list[float] | None = None, norm: str = "minmax", depth: int = 1000) -> Run:
    """score(d) = Σ_i w_i · norm_i(d), each run's scores normalised per topic (``minmax`` to [0, 1],
    ``zscore``, or ``none``). A document a run did not retrieve gets that run's lowest normalised
    score for the topic (0 under min-max): absent means "no better than its last hit". A run of
    weight 0 is no part of the fusion: its documents are not added (hostile K3: they were, at the
    other runs' floor, and changed the ranking's tail)."""
    w = np.asarray(weights if weights else [1.0] * len(runs), dtype=float)
    runs = [r for r, wi in zip(runs, w) if wi != 0]
    w = w[w != 0]
    w = w / w.sum()
    out: Run = {}
    for qid in sorted({q for r in runs for q in r}):
        total: dict[str, float] = {}
        parts: list[tuple[dict[str, float], float]] = []
        for run in runs:
            ranking = run.get(qid, [])
            if not ranking:
                parts.append(({}, 0.0))
                continue
            vals = _normalise(np.asarray([s for _, s in ranking], dtype=float), norm)
            parts.append((dict(zip((d for d, _ in ranking), vals.tolist())), float(vals.min())))
        floors = float(sum(wi * floor for wi, (_s, floor) in zip(w, parts)))
        for wi, (scores, floor) in zip(w, parts):
            for docid, v in scores.items():
                total[docid] = total.get(docid, floors) + wi * (v - floor)
        out[qid] = trec_order(total.items())[:depth]
    return out


_SYSTEMS = Param("systems", [], "the systems fused (declared before this one)", items="names")


class Fusion(SystemKind):
    """A run made from other systems' runs (they run first, in the same call)."""

    family = "fusion"
    needs_lucene = False
    fusion = True

    def check(self, name: str, params: dict[str, Any], where: str | Path | None) -> None:
        if not params["systems"]:
            raise InputError(where, f"system {short(name)}: {self.name} needs params.systems (names to fuse)",
                             place="params.systems")

    def fuse(self, inputs: list[Run], params: dict[str, Any], depth: int) -> Run:
        raise NotImplementedError

    def run(self, target: Any, system: System, topics: dict[str, str], depth: int, ctx: RunContext) -> Run:
        run = self.fuse(ctx.inputs(system.params["systems"]), system.params, depth)
        ctx.tick(len(topics))
        return {q: run.get(q, []) for q in topics}


class RRF(Fusion):
    name = "rrf"
    params = (_SYSTEMS, Param("k", 60, "rank offset: score = Σ 1 / (k + rank)", positive=True))
    summary = "reciprocal rank fusion (Cormack et al. 2009)"

    def fuse(self, inputs: list[Run], params: dict[str, Any], depth: int) -> Run:
        return rrf(inputs, k=params["k"], depth=depth)


class Linear(Fusion):
    name = "linear"
    params = (_SYSTEMS, Param("weights", [], "one weight per fused system (empty: equal)", items="numbers"),
              Param("norm", "minmax", "score normalisation per topic", choices=("minmax", "zscore", "none")))
    summary = "weighted sum of normalised scores (a sparse + dense hybrid)"

    def check(self, name: str, params: dict[str, Any], where: str | Path | None) -> None:
        super().check(name, params, where)
        if params["weights"] and len(params["weights"]) != len(params["systems"]):
            raise InputError(where, f"system {short(name)}: {len(params['weights'])} weights for "
                                    f"{len(params['systems'])} systems", place="params.weights")
        if params["weights"] and not sum(params["weights"]) > 0:
            raise InputError(where, f"system {short(name)}: the weights sum to 0", place="params.weights")

    def identity(self, system: System) -> dict[str, Any]:
        """A fusion with an input of weight 0 is keyed apart from the runs made before such an input
        was dropped from it (its documents were added at the floor)."""
        ident = super().identity(system)
        if any(w == 0 for w in system.params.get("weights") or []):
            ident = {**ident, "zero_weights": "dropped"}
        return ident

    def fuse(self, inputs: list[Run], params: dict[str, Any], depth: int) -> Run:
        return linear(inputs, params["weights"], params["norm"], depth)
