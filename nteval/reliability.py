"""How many topics are enough: NT's own reliability, without any human judgment.

Split-half agreement (Voorhees & Buckley 2002; Sakai 2007): draw two *disjoint* random sets of N
topics, rank the systems on each, and compare the two rankings with Kendall τ-b. Repeated over
random draws, it says how much a ranking from N topics depends on which topics were drawn. The
curve over growing N shows where the ranking settles: "stable from ~N topics" is the smallest N
whose mean τ reaches :data:`STABLE_TAU` (0.9, the value Voorhees 2000 used for "equivalent
rankings"). With all n topics the largest N is n/2, so the ranking from n topics is at least as
stable as the last point shows.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .significance import topic_matrix
from .stats import _kendall_b_rows

STABLE_TAU = 0.9
DRAWS = 200


def _ladder(half: int) -> list[int]:
    sizes = [n for n in (5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000)
             if n < half]
    return sizes + [half] if half >= 2 else []


def split_half_curve(matrix: np.ndarray, draws: int = DRAWS, seed: int = 0, sizes: list[int] | None = None
                     ) -> list[dict[str, Any]]:
    """For each size N: mean τ-b between the system rankings of two disjoint random N-topic sets,
    and the 2.5–97.5 % range over ``draws`` draws. ``matrix``: systems × topics."""
    m = np.asarray(matrix, float)
    n = m.shape[1]
    rng = np.random.default_rng(seed)
    out = []
    for size in sizes or _ladder(n // 2):
        taus = np.empty(draws)
        for d in range(draws):
            perm = rng.permutation(n)
            a, b = m[:, perm[:size]].mean(axis=1), m[:, perm[size:2 * size]].mean(axis=1)
            taus[d] = _kendall_b_rows(a[None], b[None])[0]
        taus = taus[~np.isnan(taus)]
        if taus.size:
            out.append({"topics": int(size), "tau_mean": round(float(taus.mean()), 4),
                        "tau_lo": round(float(np.percentile(taus, 2.5)), 4),
                        "tau_hi": round(float(np.percentile(taus, 97.5)), 4)})
    return out


#: How far beyond its largest topic count the split-half curve is extrapolated at most.
MAX_EXTRAPOLATION = 20


def predict_topics(curve: list[dict[str, Any]], target: float = STABLE_TAU) -> int | None:
    """Topics per half at which the split-half curve's mean τ would reach ``target``: a straight
    line through log(1 − τ) against log(topics) (1 − τ falls like a power of the topic count, as
    the split-half error rates of Voorhees & Buckley 2002 do), least squares over the curve's
    points from 10 topics on. None when the curve already reaches it, or cannot be extrapolated
    (fewer than 3 usable points, 1 − τ not falling, or a prediction beyond :data:`MAX_EXTRAPOLATION`
    times the curve's largest topic count: a line fitted over one decade says nothing about six)."""
    if any(p["tau_mean"] >= target for p in curve):
        return None
    pts = [(np.log(p["topics"]), np.log(1 - p["tau_mean"])) for p in curve if p["topics"] >= 10 and p["tau_mean"] < 1]
    if len(pts) < 3:
        return None
    x, y = np.array(pts).T
    slope, intercept = np.polyfit(x, y, 1)
    if slope >= -0.05:  # flat or rising: more topics would not help by this model
        return None
    n = float(np.exp((np.log(1 - target) - intercept) / slope))
    if n > MAX_EXTRAPOLATION * max(p["topics"] for p in curve):
        return None
    return int(n // 10 * 10 + 10)


def reliability(per_topic: dict[str, dict[str, float]], measure: str, draws: int = DRAWS, seed: int = 0,
                stable_tau: float = STABLE_TAU) -> dict[str, Any]:
    """Split-half τ at half the topics (with its range over draws), the curve, the smallest topic
    count from which the ranking is stable (None when no point of the curve reaches it) and, when
    none does, the count the curve predicts (:func:`predict_topics`)."""
    names, qids, m = topic_matrix(per_topic)
    curve = split_half_curve(m, draws, seed) if len(names) >= 2 else []
    stable = next((p["topics"] for p in curve if p["tau_mean"] >= stable_tau), None)
    half = curve[-1] if curve else None
    return {
        "measure": measure, "topics": len(qids), "systems": len(names), "draws": draws,
        "method": f"Kendall tau-b between the rankings of two disjoint random topic sets of each size, "
                  f"{draws} draws per size; range = 2.5-97.5 percentiles over draws",
        "split_half": half, "curve": curve, "stable_tau": stable_tau, "stable_from_topics": stable,
        "predicted_topics": predict_topics(curve, stable_tau) if stable is None else None,
    }


def reliability_sentence(rel: dict[str, Any], eligible: int | None = None) -> str:
    """What a person reads: the split-half τ with what its bracket is, and how many topics the
    ranking needs (with the command to get them when it has too few)."""
    h = rel["split_half"]
    if h is None:
        return "reliability: too few topics or systems for a split-half estimate"
    head = (f"split-half reliability ({rel['measure']}): two disjoint random sets of {h['topics']} topics rank the "
            f"systems alike at Kendall tau {h['tau_mean']:.3f} on average ({rel.get('draws', DRAWS)} draws; 95 % of "
            f"them between {h['tau_lo']:.3f} and {h['tau_hi']:.3f})")
    if rel["stable_from_topics"] is not None:
        return head + f"; the ranking is stable (tau >= {rel['stable_tau']}) from ~{rel['stable_from_topics']} topics"
    n = rel.get("predicted_topics")
    if n is None:
        return head + (f"; not stable (tau {rel['stable_tau']}) with these topics, and the curve rises too slowly "
                       f"to predict how many would make it (not within {MAX_EXTRAPOLATION} × these): expect rank swaps "
                       "among close systems; fewer, more different systems or a larger collection separate them better")
    need = 2 * n  # a ranking from n topics; 2n to see it by splitting in halves
    have = f"; {eligible:,} documents are eligible as topics" if eligible is not None else ""
    more = (f"run again with --topics {need} (or --topics auto, which draws batches until the ranking is stable)"
            if eligible is None or need <= eligible else
            f"more than the {eligible:,} eligible documents: expect rank swaps among close systems")
    return (head + f"; not yet stable (tau {rel['stable_tau']}): the curve predicts it at ~{n:,} topics per half"
            f"{have if need <= (eligible or need) else ''} — {more}")
