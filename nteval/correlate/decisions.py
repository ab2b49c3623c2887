"""Fidelity where decisions are made: do the significance decisions of a judgment-free ranking
(an NT verdict, a run-based baseline) match the ones human judgments make?

A rank correlation weighs every pair of systems alike, including pairs no test can tell apart. A
user acts on the *decisions*: "A is better than B" (the paired test separates them) and "the best
group". So, beside τ, for each judgment-free ranking:

- **same direction**: of the pairs of systems the human judgments separate (the paired test and
  correction of nteval's verdict, :mod:`nteval.significance`, on the human per-topic scores), the
  share the judgment-free ranking separates in the same direction;
- **reversed**: the pairs both separate, in opposite directions (named);
- **missed**: pairs the humans separate and it does not;
- **only it separates**: pairs it separates and these human judgments do not. Whether they are
  errors or power the human topics lack cannot be known from these judgments; what can be
  estimated is how many of them a human test with as many judged topics as the ranking's topics
  would separate, and in which direction (:func:`likely_separated`);
- **top-k τ**: Kendall τ-b among the k systems the humans rank best (k = 5, 10);
- **the human-best system in the best group**: the system with the highest human mean is in the
  ranking's group 1 (the verdict's first group: the systems from its best down that no paired
  test separates from one another — the rule of the headline, :data:`nteval.answer.BEST_GROUP_RULE`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..significance import adjust, compare_systems
from ..stats import correlations, pair_posteriors

#: The top-k τ the reports give.
TOP_K = (5, 10)
#: Draws of the simulation behind :func:`likely_separated`.
DRAWS = 1000

ONLY_NOTE = ("Known: these judged topics do not separate these pairs. Not known: whether that is an error of the "
             "judgment-free ranking or power the judged topics lack — the human test would need more topics to tell. "
             "Estimated: how many of them a human test with as many judged topics as the ranking's topics would "
             "separate, and in which direction (an empirical-Bayes estimate from every pair's human paired "
             "difference, assuming new judged topics like these; it cannot say which pairs)")

LIKELY_METHOD = ("each pair's true human difference (in per-topic standard deviations) drawn from its empirical-Bayes "
                 "posterior (the prior of nteval's many-topic τ, fitted to every pair's paired human t statistic); "
                 "a fresh set of N judged topics gives the pair a z statistic of that difference × √N plus standard "
                 "normal noise; two-sided p-values, the same correction over every pair as the verdict; {draws} draws, "
                 "mean and 5-95 % range")


@dataclass(frozen=True)
class Decisions:
    """One ranking's decisions: per-topic scores (systems × topics, rows in the order of the
    names they are compared under) and the paired tests' result (:func:`significance`)."""

    scores: np.ndarray
    significance: dict[str, Any]


def significance(names: list[str], scores: np.ndarray, correction: str = "holm", alpha: float = 0.05,
                 seed: int = 0) -> dict[str, Any]:
    """:func:`nteval.significance.compare_systems` on a systems × topics matrix."""
    per = {n: {f"{q:06d}": float(v) for q, v in enumerate(row)} for n, row in zip(names, np.asarray(scores, float))}
    return compare_systems(per, "", correction=correction, alpha=alpha, seed=seed)


def _winners(sig: dict[str, Any]) -> dict[frozenset, str]:
    """{pair: the better system} for the pairs the paired test separates."""
    return {frozenset((p["a"], p["b"])): (p["a"] if p["diff"] > 0 else p["b"])
            for p in sig["pairs"] if p["significant"] and p["diff"] != 0}


def _holm_rows(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values of each row (draws × pairs), vectorised."""
    m = p.shape[1]
    order = np.argsort(p, axis=1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=1) * (m - np.arange(m))[None, :]
    adj = np.minimum(np.maximum.accumulate(ranked, axis=1), 1.0)
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=1)
    return out


def likely_separated(names: list[str], judged: Decisions, human: Decisions, which: list[frozenset],
                     draws: int = DRAWS, seed: int = 0) -> dict[str, Any] | None:
    """Of the pairs ``which`` (say, those only the judgment-free ranking separates), how many a human
    paired test with as many judged topics as ``judged`` has would separate, in the ranking's
    direction and in the other (:data:`LIKELY_METHOD`). None when the human judgments give nothing
    to fit (fewer than 5 topics, every pair tied)."""
    from scipy.stats import norm

    post = pair_posteriors(judged.scores, human.scores)
    if post is None or not which:
        return None
    n_target = int(judged.scores.shape[1])
    sig = human.significance
    correction = "bh" if sig["correction"].startswith("Benjamini") else "holm"
    grid, rows = post["grid"], post["posterior"]
    rng = np.random.default_rng(seed)
    delta = np.zeros((draws, len(post["pairs"])))
    for k, row in enumerate(rows):
        if np.isnan(row).any():
            continue  # NT ties the pair, or the humans score it alike on every topic: no difference to find
        cum = np.cumsum(row)
        delta[:, k] = grid[np.minimum(np.searchsorted(cum / cum[-1], rng.random(draws)), grid.size - 1)]
    z = delta * np.sqrt(n_target) + rng.standard_normal(delta.shape)
    p = 2 * norm.sf(np.abs(z))
    p_adj = _holm_rows(p) if correction == "holm" else np.stack([adjust(r, "bh") for r in p])
    index = {frozenset((names[i], names[j])): k for k, (i, j) in enumerate(post["pairs"])}
    cols = [index[pair] for pair in which]
    separated = p_adj[:, cols] <= sig["alpha"]
    same = (separated & (z[:, cols] > 0)).sum(axis=1)  # z is oriented by the judged ranking's order
    other = (separated & (z[:, cols] < 0)).sum(axis=1)
    q = lambda v: [int(np.percentile(v, 5)), int(np.percentile(v, 95))]  # noqa: E731
    return {"topics": n_target, "pairs": len(which),
            "same_direction": {"mean": round(float(same.mean()), 1), "range90": q(same)},
            "other_direction": {"mean": round(float(other.mean()), 1), "range90": q(other)},
            "method": LIKELY_METHOD.format(draws=draws)}


def top_k_tau(names: list[str], judged: np.ndarray, human: np.ndarray, k: int) -> float | None:
    """Kendall τ-b between the judged and the human mean scores of the k systems the humans rank
    best (ties by name); None with fewer than k systems."""
    if len(names) < k:
        return None
    order = sorted(range(len(names)), key=lambda i: (-human[i], names[i]))[:k]
    return correlations([float(judged[i]) for i in order], [float(human[i]) for i in order])["kendall"]["value"]


def compare_decisions(names: list[str], judged: Decisions, human: Decisions, seed: int = 0) -> dict[str, Any]:
    """The decision-level agreement of one judgment-free ranking with the human one (the module
    says what each figure is)."""
    jw, hw = _winners(judged.significance), _winners(human.significance)
    both = set(jw) & set(hw)
    same = sorted((p for p in both if jw[p] == hw[p]), key=sorted)
    reversed_ = sorted((p for p in both if jw[p] != hw[p]), key=sorted)
    only = sorted((p for p in jw if p not in hw), key=sorted)
    jm, hm = judged.scores.mean(axis=1), human.scores.mean(axis=1)
    top = max(hm) if len(hm) else 0.0
    human_best = [n for n, v in zip(names, hm) if v == top]
    best_group = list(judged.significance["groups"][0]) if judged.significance["groups"] else []
    return {
        "pairs": len(judged.significance["pairs"]), "judged_topics": int(judged.scores.shape[1]),
        "human_topics": int(human.scores.shape[1]),
        "human_separated": len(hw), "separated": len(jw),
        "same_direction": len(same), "share_same_direction": round(len(same) / len(hw), 4) if hw else None,
        "reversed": [{"judgment_free_prefers": jw[p], "humans_prefer": hw[p]} for p in reversed_],
        "missed": len(hw) - len(same) - len(reversed_),
        "only_judgment_free": {"count": len(only), "note": ONLY_NOTE,
                               "likely": likely_separated(names, judged, human, only, seed=seed)},
        "top_k_tau": {str(k): top_k_tau(names, jm, hm, k) for k in TOP_K},
        "human_best": human_best, "best_group": best_group,
        "human_best_in_best_group": bool(set(human_best) & set(best_group)),
        "separated_pairs": separated_pairs(judged.significance),
    }


def separated_pairs(sig: dict[str, Any]) -> list[list[str]]:
    """[better, worse] for every pair the paired test separates (sorted): the decisions themselves."""
    return sorted([w, next(iter(p - {w}))] for p, w in _winners(sig).items())


def from_separated(names: list[str], scores: np.ndarray, separated: list[list[str]], groups: list[list[str]],
                   correction: str, alpha: float = 0.05) -> Decisions:
    """The :class:`Decisions` of stored decisions ([better, worse] pairs, groups): what
    :func:`compare_decisions` reads of a paired test's result, rebuilt without running it."""
    means = dict(zip(names, np.asarray(scores, float).mean(axis=1)))
    won = {frozenset(p): p[0] for p in separated}
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            w = won.get(frozenset((a, b)))
            diff = means[a] - means[b]
            if w is not None and (diff > 0) != (w == a):  # (a stored decision keeps its direction)
                diff = -diff
            pairs.append({"a": a, "b": b, "diff": float(diff), "significant": w is not None})
    return Decisions(np.asarray(scores, float), {"pairs": pairs, "groups": groups, "correction": correction,
                                                 "alpha": alpha})
