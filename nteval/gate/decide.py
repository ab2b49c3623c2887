"""The gate's decision for one candidate against the baseline, on paired per-topic scores.

**Hypotheses.** With per-topic scores ``b`` (baseline) and ``c`` (candidate) on the same topics
and the non-inferiority margin δ (the minimum meaningful difference, :class:`nteval.effects.MMD`;
by default 5 % of the baseline's score):

- *non-inferior*: the candidate loses less than the margin, ``μ_c > μ_b − δ``. For a relative
  margin (δ = r·μ_b) this is ``E[c − (1 − r)·b] > 0``: the test runs on ``d′ = c − (1 − r)·b``
  per topic, so the uncertainty of the baseline's own mean (which sets δ) is in the test, not
  ignored. An absolute margin tests ``E[c − b + δ] > 0``.
- *better*: ``μ_c > μ_b``; *worse*: ``μ_c < μ_b`` (on ``d = c − b``).

**Bounds.** One-sided (1 − α′) confidence bounds of a mean by *betting* (Waudby-Smith & Ramdas,
"Estimating means of bounded random variables by betting", JRSS-B 2023: the fixed-n predictable
plug-in bets, truncated at 1/2): valid at every number of topics for scores bounded in [0, 1],
whatever their distribution, where Student's t and the bootstrap are only asymptotically so. Per-
topic differences of RR are far from normal (most are 0, a few are ±1): measured on real PubMed
scores, a t bound declared a candidate that truly loses the margin "non-inferior" 8–13 % of the
time at 50–300 topics instead of 5 % (``scripts/gate_error_rates.py``, docs/gate.md); the betting
bound stays under α. α′ = α / (number of looks): Bonferroni over the candidates of one gate (and,
for the "worse" side, over the pinned and fresh topic sets). The bets see the topics in a fixed
order (sha256 of the topic id), so the same scores give the same bounds.

**Decisions** (a partition: exactly one holds)

| decision | rule | exit |
|---|---|---|
| better | lower bound of ``μ_d`` > 0 | pass |
| non-inferior | lower bound of ``μ_d′`` > 0 (and not better) | pass |
| worse | upper bound of ``μ_d`` < 0, and non-inferiority not shown | regression |
| inconclusive | neither: the loss may be larger than the margin, or nothing | inconclusive |

Error rates, by construction (and measured): when the candidate truly loses exactly the margin,
"non-inferior or better" is declared at most α′ of the time; when it is truly as good as the
baseline, "worse" is declared at most α′ of the time.

**How many more topics** would likely decide an inconclusive gate: for each way it could end
(non-inferior, worse), the number of topics at which the bound would clear its threshold with
80 % probability if the observed mean and spread were the true ones; the smaller is reported.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..effects import MMD
from ..errors import InputError

DECISIONS = ("better", "non-inferior", "worse", "inconclusive")
#: which decisions let a release through
PASSING = ("better", "non-inferior")
#: fewer fresh topics than this and the fresh topics are shown, not decided on
MIN_FRESH = 30
#: power at which "how many more topics" is computed
POWER = 0.8
#: the method, as every output states it
METHOD = ("one-sided betting confidence bounds (Waudby-Smith & Ramdas 2023) of the mean per-topic difference, "
          "valid at any number of topics for scores in [0, 1]; non-inferiority tested on c − (1 − r)·b for a relative "
          "margin r; Bonferroni over the looks")


@dataclass(frozen=True)
class Bound:
    """One-sided confidence bounds of a paired mean at level 1 − alpha (each side)."""

    mean: float
    sd: float
    n: int
    lower: float
    upper: float


#: the bets' truncation (Waudby-Smith & Ramdas use 1/2 or 3/4)
TRUNCATION = 0.5
#: grid points over the range before the bound is refined by bisection
_GRID = 2048


def _log_capital(y: np.ndarray, lam: np.ndarray, m: np.ndarray) -> np.ndarray:
    """log K_n(m) = Σ log(1 + min(λ_i, c/m)·(y_i − m)) for every m (y in [0, 1])."""
    bets = np.minimum(lam[None, :], TRUNCATION / np.maximum(m, 1e-12)[:, None])
    return np.log1p(bets * (y[None, :] - m[:, None])).sum(axis=1)


def betting_lower(x: np.ndarray, lo: float, hi: float, alpha: float) -> float:
    """A lower (1 − ``alpha``) confidence bound of the mean of ``x`` (each value in [lo, hi]),
    by betting: m is rejected when the capital of bets that the mean exceeds m reaches 1/alpha.
    The bound is the largest rejected m (refined to 1e-9 of the range), so it never lies above a
    value the test could not reject. ``x`` in the order the bets see it."""
    x = np.asarray(x, float)
    n = x.size
    if n == 0:
        return lo
    width = hi - lo
    y = np.clip((x - lo) / width, 0.0, 1.0)
    i = np.arange(1, n + 1, dtype=float)
    mu = (0.5 + np.cumsum(y)) / (i + 1)                      # μ̂_t after t values
    var = (0.25 + np.cumsum((y - mu) ** 2)) / (i + 1)         # σ̂²_t after t values
    var_before = np.concatenate([[0.25], var[:-1]])           # predictable: what was known before value t
    lam = np.sqrt(2 * math.log(1 / alpha) / (n * var_before))
    threshold = math.log(1 / alpha)
    grid = np.linspace(0.0, 1.0, _GRID + 1)
    rejected = _log_capital(y, lam, grid) >= threshold
    if rejected.all():
        return hi
    first_kept = int(np.argmax(~rejected))
    if first_kept == 0:
        return lo
    low, high = float(grid[first_kept - 1]), float(grid[first_kept])   # rejected, kept
    for _ in range(40):
        mid = (low + high) / 2
        if _log_capital(y, lam, np.array([mid]))[0] >= threshold:
            low = mid
        else:
            high = mid
    return lo + low * width


def topic_order(qids: list[str]) -> np.ndarray:
    """The order the bets see the topics in: by sha256 of the topic id (fixed, and unrelated to
    the scores or to which system is which)."""
    import hashlib

    keys = [hashlib.sha256(q.encode("utf-8")).digest() for q in qids]
    return np.array(sorted(range(len(qids)), key=lambda k: keys[k]), dtype=np.intp)


def bounds(x: np.ndarray, lo: float, hi: float, alpha: float) -> Bound:
    """Lower and upper one-sided (1 − ``alpha``) betting bounds of the mean of ``x`` in [lo, hi]
    (``x`` in the bets' order)."""
    x = np.asarray(x, float)
    n = x.size
    mean = float(x.mean()) if n else 0.0
    sd = float(x.std(ddof=1)) if n > 1 else 0.0
    lower = betting_lower(x, lo, hi, alpha)
    upper = -betting_lower(-x, -hi, -lo, alpha)
    return Bound(mean, sd, n, min(lower, mean), max(upper, mean))


def margin_of(mmd: MMD, baseline_mean: float) -> float:
    """δ in the measure's units: r·μ_b for a relative MMD (of the baseline's score), else the value."""
    return mmd.value * abs(baseline_mean) if mmd.relative else mmd.value


@dataclass(frozen=True)
class DecisionRule:
    """How a gate decides: the margin (the minimum meaningful difference, of the baseline's score
    when relative) and α (each decision's error rate, before the Bonferroni split over looks)."""

    mmd: MMD = MMD(0.05, True)
    alpha: float = 0.05

    @classmethod
    def of(cls, mmd: MMD | str | None = None, alpha: float = 0.05) -> DecisionRule:
        if not (isinstance(alpha, (int, float)) and 0 < alpha < 0.5):
            raise InputError(None, f"--alpha must be within (0, 0.5), got {alpha!r}")
        return cls(MMD.parse(mmd), float(alpha))


def decide(base: np.ndarray, cand: np.ndarray, qids: list[str], rule: DecisionRule | None = None, looks: int = 1,
           worse_looks: int | None = None) -> dict[str, Any]:
    """The decision for paired per-topic scores ``base`` and ``cand`` (each in [0, 1]) on the topics
    ``qids`` (same order). ``looks``: the candidates of the gate (Bonferroni for every bound);
    ``worse_looks``: the looks for the "worse" side (default ``looks``; twice that when fresh topics
    are a second look at each candidate)."""
    rule = rule or DecisionRule()
    mmd = rule.mmd
    order = topic_order(list(qids))
    b, c = np.asarray(base, float)[order], np.asarray(cand, float)[order]
    if b.shape != c.shape or b.size != len(qids):
        raise ValueError("baseline and candidate must be scored on the same topics")
    if b.size and (min(b.min(), c.min()) < -1e-9 or max(b.max(), c.max()) > 1 + 1e-9):
        raise ValueError("the gate's bounds need per-topic scores within [0, 1]")
    a_pass = rule.alpha / max(1, looks)
    a_worse = rule.alpha / max(1, worse_looks if worse_looks is not None else looks)
    d = c - b
    if mmd.relative:
        shifted, lo_ni, hi_ni = c - (1 - mmd.value) * b, -(1 - mmd.value), 1.0
    else:
        shifted, lo_ni, hi_ni = d + mmd.value, -1 + mmd.value, 1 + mmd.value
    sup, ni = bounds(d, -1.0, 1.0, a_pass), bounds(shifted, lo_ni, hi_ni, a_pass)
    worse_side = sup if a_worse == a_pass else bounds(d, -1.0, 1.0, a_worse)
    delta = margin_of(mmd, float(b.mean()) if b.size else 0.0)
    if sup.lower > 0:
        decision = "better"
    elif ni.lower > 0:
        decision = "non-inferior"
    elif worse_side.upper < 0:
        decision = "worse"
    else:
        decision = "inconclusive"
    base_mean = float(b.mean()) if b.size else 0.0
    out: dict[str, Any] = {
        "decision": decision, "topics": int(b.size),
        "baseline_mean": round(base_mean, 6), "candidate_mean": round(float(c.mean()) if c.size else 0.0, 6),
        "diff": round(sup.mean, 6), "relative": round(sup.mean / abs(base_mean), 4) if base_mean else None,
        "margin": round(delta, 6), "margin_rule": mmd.describe().replace("the better system's", "the baseline's"),
        # the (1 − 2α′) two-sided interval of the difference: its ends are the one-sided bounds
        "ci": [round(sup.lower, 6), round(sup.upper, 6)], "ci_level": round(1 - 2 * a_pass, 6),
        "worse_upper": round(worse_side.upper, 6), "noninferiority_lower": round(ni.lower, 6),
        "alpha": rule.alpha, "alpha_pass": a_pass, "alpha_worse": a_worse,
        # what the interval shows of the size of the difference against the margin (not the point estimate)
        "smaller_than_margin": bool(-delta < sup.lower and sup.upper < delta),
        "margin_shown": bool(sup.lower >= delta or sup.upper <= -delta),
        "method": METHOD,
    }
    if decision == "inconclusive":
        out["more_topics"] = topics_to_decide(sup, ni, a_pass, a_worse, worse_side)
    return out


def topics_to_decide(sup: Bound, ni: Bound, a_pass: float, a_worse: float, worse_side: Bound) -> dict[str, Any]:
    """Topics at which an inconclusive gate would likely (:data:`POWER`) end if the observed means
    and spreads were the truth: toward non-inferior (μ_d′ > 0) or worse (μ_d < 0). The normal
    approximation's count, widened by how much wider the betting bound is than the normal one on
    these scores."""
    from scipy.stats import norm

    zp = float(norm.ppf(POWER))
    ways: dict[str, int] = {}
    for way, bnd, side, a in (("non-inferior", ni, ni.mean - ni.lower, a_pass),
                              ("worse", worse_side, worse_side.upper - worse_side.mean, a_worse)):
        effect = bnd.mean if way == "non-inferior" else -bnd.mean
        if effect <= 0 or bnd.sd <= 0 or bnd.n < 2:
            continue
        z = float(norm.ppf(1 - a))
        widen = max(1.0, side / (z * bnd.sd / math.sqrt(bnd.n)))
        ways[way] = math.ceil(((z * widen + zp) * bnd.sd / effect) ** 2)
    n = sup.n
    if not ways:
        return {"topics": None, "more": None, "toward": None,
                "note": "the observed difference sits at the margin: no number of topics is likely to decide it"}
    toward = min(ways, key=lambda k: ways[k])
    total = max(ways[toward], n + 1)
    return {"topics": int(total), "more": int(total - n), "toward": toward, "power": POWER,
            "note": f"about {total:,} topics in all ({total - n:,} more) would likely ({POWER:.0%} power, if the observed "
                    f"difference and spread are the true ones) show it {toward}"}
