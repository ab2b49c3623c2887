"""The gate's error rates, measured by simulation on real per-topic scores.

A population of paired (baseline, candidate) per-topic scores is made from real runs with a known
true difference, then topic samples of size n are drawn from it and decided by
:func:`nteval.gate.decide.decide`. Every score in a population is a real system's real score on a
real topic:

- **equal** (true μ_c = μ_b): the pairs (b_i, c_i) of two real systems and the same pairs swapped,
  (c_i, b_i): the difference of the population is exactly 0, its per-topic spread is real. The
  gate must declare "worse" (a false regression) at most α′ of the time.
- **at the margin** (true μ_c = (1 − r)·μ_b, the non-inferiority null's boundary): a mixture of
  the pairs (b_i, w_i) of the baseline and a system *worse* than the margin, and of the "equal"
  population, in the one proportion that puts the population's E[c − (1 − r)·b] at exactly 0. The
  gate must declare "non-inferior" or "better" (a false pass) at most α′ of the time.

``scripts/gate_error_rates.py`` runs it on the PubMed index of both shared files (docs/gate.md);
the test suite runs a small version on a slice of the same scores.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..effects import MMD
from .alerts import below_best
from .decide import DecisionRule, decide
from .history import Record


@dataclass(frozen=True)
class Population:
    """Paired per-topic scores (b, c) a sample of topics is drawn from, with its true difference."""

    name: str
    base: np.ndarray
    cand: np.ndarray
    truth: str            # "equal" or "at the margin"
    weights: np.ndarray | None = None   # sampling weights of the pairs (None: uniform)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        i = rng.choice(self.base.size, size=n, replace=True, p=self.weights)
        return self.base[i], self.cand[i]

    def true_shifted_mean(self, r: float) -> float:
        """E[c − (1 − r)·b] of the population (0 at the margin)."""
        w = self.weights if self.weights is not None else np.full(self.base.size, 1 / self.base.size)
        return float((w * (self.cand - (1 - r) * self.base)).sum())

    def true_diff(self) -> float:
        w = self.weights if self.weights is not None else np.full(self.base.size, 1 / self.base.size)
        return float((w * (self.cand - self.base)).sum())


def equal_population(name: str, a: np.ndarray, b: np.ndarray) -> Population:
    """The pairs (a_i, b_i) and (b_i, a_i): true difference exactly 0."""
    return Population(name, np.concatenate([a, b]), np.concatenate([b, a]), "equal")


def margin_population(name: str, base: np.ndarray, worse: np.ndarray, near: np.ndarray, r: float) -> Population | None:
    """A mixture of (base_i, worse_i) and the equal population of ``base`` and ``near`` whose
    E[c − (1 − r)·b] is exactly 0 (None when ``worse`` does not lose more than the margin)."""
    eq = equal_population(name, base, near)
    e1 = float((worse - (1 - r) * base).mean())
    e2 = float((eq.cand - (1 - r) * eq.base).mean())
    if not e1 < 0 < e2:
        return None
    pi = e2 / (e2 - e1)  # share of the (base, worse) pairs
    b = np.concatenate([base, eq.base])
    c = np.concatenate([worse, eq.cand])
    w = np.concatenate([np.full(base.size, pi / base.size), np.full(eq.base.size, (1 - pi) / eq.base.size)])
    return Population(name, b, c, "at the margin", w / w.sum())


def error_rates(pop: Population, n: int, reps: int, rule: DecisionRule, seed: int = 0) -> dict[str, Any]:
    """How often each decision is made over ``reps`` samples of ``n`` topics, with the binomial
    standard error of the rate that matters (false pass at the margin, false "worse" when equal)."""
    rng = np.random.default_rng(seed)
    qids = [f"t{i}" for i in range(n)]
    counts = dict.fromkeys(("better", "non-inferior", "worse", "inconclusive"), 0)
    for _ in range(reps):
        b, c = pop.sample(n, rng)
        counts[decide(b, c, qids, rule)["decision"]] += 1
    if pop.truth == "equal":
        wrong = counts["worse"]
        what = "false regression: worse declared, the candidate truly equal"
    else:
        wrong = counts["better"] + counts["non-inferior"]
        what = "false pass: non-inferior or better declared, the candidate truly losing the margin"
    rate = wrong / reps
    return {"population": pop.name, "truth": pop.truth, "n": n, "reps": reps, "alpha": rule.alpha,
            "error": what, "rate": round(rate, 4), "se": round(math.sqrt(max(rate * (1 - rate), 1e-12) / reps), 4),
            "decisions": {k: round(v / reps, 4) for k, v in counts.items()}}


def alert_false_alarms(a: np.ndarray, b: np.ndarray, releases: int, histories: int, mmd: str = "5%",
                       alpha: float = 0.01, seed: int = 0) -> dict[str, Any]:
    """How often the below-best rule (:func:`nteval.gate.alerts.below_best`) fires when no release is
    truly worse: each release of a history scores, on every topic, one of two real systems' real
    scores (``a`` or ``b``, chosen at random per topic and release: releases equal in expectation,
    with real per-topic churn), and every release is checked against the best earlier one, as
    ``nteval history`` does. Returns the alarms per history and the share of histories with any."""
    rng = np.random.default_rng(seed)
    qids = [f"q{i}" for i in range(a.size)]
    m = MMD.parse(mmd)
    per_history = []
    for _ in range(histories):
        line: list = []
        alarms = 0
        for k in range(releases):
            pick = np.where(rng.random(a.size) < 0.5, a, b)
            rec = Record("s", f"v{k}", "candidate", "known-item", "RR", "p", "t", "pinned", "f", dict(zip(qids, pick)),
                         decision="non-inferior", id=k)
            found = below_best(rec, line, m, alpha) if line else None
            alarms += bool(found and found["fired"])
            line.append(rec)
        per_history.append(alarms)
    arr = np.array(per_history)
    return {"releases": releases, "histories": histories, "alpha": alpha, "checks": histories * (releases - 1),
            "alarms": int(arr.sum()), "alarms_per_check": round(float(arr.sum()) / (histories * (releases - 1)), 5),
            "histories_with_an_alarm": round(float((arr > 0).mean()), 4)}
