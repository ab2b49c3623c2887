"""How large the differences between systems are, and which ones matter.

A paired test says whether two systems *can be told apart* with these topics; with 1,000 topics
it tells apart differences no user would notice. So every verdict also gives sizes:

- **Per-system means with 95 % intervals**, and **every pairwise difference with a 95 %
  interval**: BCa bootstrap (``scipy.stats.bootstrap``) over topics, paired (one resample of
  the topics serves every system), 2,000 resamples, seeded. The intervals are not adjusted for
  multiplicity; the groups come from the corrected paired test (:mod:`nteval.significance`).
- **A minimum meaningful difference** (MMD): by default **5 % of the better system's score**.
  The principle, stated before any agreement number was looked at: Sparck Jones (1974) called
  differences under 5 % "not noticeable" to users, 5-10 % "noticeable" and over 10 % "material";
  Voorhees & Buckley (2002) measured swap rates for the same relative bands. A relative MMD is
  the same whatever the measure's scale (RR near 1, AP near 0.1). ``--mmd 3%`` sets another
  relative one, ``--mmd 0.01`` an absolute one (in the measure's units).
- Each pair is then **"cannot be told apart"** (the corrected test does not separate it; if its
  whole interval also lies within ± MMD it is **equivalent**: any difference is too small to
  matter), **"different, but smaller than the MMD"** (separated, but the difference is under the
  MMD), or **"different"** (separated, and at least the MMD).
- **Ceiling**: a measure bounded by 1 on which most systems score ≥ :data:`CEILING` compresses
  their differences: said so, with the systems concerned.
- **The family grew**: Holm's correction is over every pair of the systems compared; adding
  systems can un-separate a pair two systems alone would separate. The pairs significant before
  the correction but not after are counted, and when OUT held an earlier verdict on the same
  topics with other systems, the pairs whose status changed are named.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InputError
from .significance import topic_matrix

#: The default minimum meaningful difference: 5 % of the better system's score (see the module).
DEFAULT_MMD = "5%"
#: Topic-bootstrap resamples behind every interval here.
RESAMPLES = 2000
#: A score at least this high (on a measure bounded by 1) sits near the ceiling.
CEILING = 0.95

CLASSES = ("cannot be told apart", "different, but smaller than the MMD", "different")


@dataclass(frozen=True)
class MMD:
    """A minimum meaningful difference: ``relative`` (a share of the better system's score) or absolute."""

    value: float
    relative: bool

    @classmethod
    def parse(cls, text: str | float | MMD | None) -> MMD:
        """``"5%"`` (relative) or ``"0.01"`` (absolute, in the measure's units); None = the default."""
        if isinstance(text, MMD):
            return text
        raw = DEFAULT_MMD if text is None else str(text).strip()
        relative = raw.endswith("%")
        try:
            v = float(raw[:-1] if relative else raw)
        except ValueError:
            raise InputError(None, f"--mmd {raw!r}: give a share like 5% or an absolute difference like 0.01") from None
        if v != v or v in (float("inf"), float("-inf")):
            raise InputError(None, f"--mmd {raw!r}: must be a finite number")
        if v < 0:
            raise InputError(None, f"--mmd {raw!r}: must be ≥ 0")
        if relative and v >= 100:
            raise InputError(None, f"--mmd {raw!r}: must be below 100 %")
        if not relative and v >= 1:
            # (every measure nteval decides on lies in [0, 1]: a difference of 1 or more would make any
            # two systems equivalent, and a forgotten % sign would pass any release)
            raise InputError(None, f"--mmd {raw!r}: must be below 1 as an absolute difference (scores lie in [0, 1]); "
                                   f"for a share of the score write {raw}%")
        return cls(v / 100 if relative else v, relative)

    def threshold(self, a: float, b: float) -> float:
        """The MMD for a pair with means ``a`` and ``b`` in the measure's units."""
        return self.value * max(abs(a), abs(b)) if self.relative else self.value

    def describe(self) -> str:
        return f"{self.value * 100:g} % of the better system's score" if self.relative else f"{self.value:g} (absolute)"


def _bootstrap(m: np.ndarray, pairs: list[tuple[int, int]], seed: int, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """BCa 95 % intervals of each row mean of ``m`` (systems × topics) and of each pair's mean
    difference: (low, high) arrays over [systems..., pairs...]."""
    from scipy.stats import bootstrap

    a = np.array([i for i, _ in pairs], dtype=np.intp)
    b = np.array([j for _, j in pairs], dtype=np.intp)

    def stat(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        means = m[:, idx.astype(np.intp)].mean(axis=-1)  # systems × ...
        return np.concatenate([means, means[a] - means[b]], axis=0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (degenerate: a constant system; BCa undefined there, handled below)
        batch = max(10, min(200, int(2e7 // max(1, m.shape[0] * m.shape[1]))))  # ≈ 160 MB of work arrays at most
        res = bootstrap((np.arange(m.shape[1], dtype=float),), stat, n_resamples=resamples, batch=batch,
                        vectorized=True, method="BCa", confidence_level=0.95, rng=np.random.default_rng(seed))
    lo, hi = np.asarray(res.confidence_interval.low, float), np.asarray(res.confidence_interval.high, float)
    dist = np.asarray(res.bootstrap_distribution)
    point = stat(np.arange(m.shape[1])[None, :])[:, 0]
    bad = ~(np.isfinite(lo) & np.isfinite(hi))  # BCa undefined (every replicate equal): the percentile range
    if bad.any():
        lo[bad] = np.percentile(dist[bad], 2.5, axis=-1)
        hi[bad] = np.percentile(dist[bad], 97.5, axis=-1)
    return np.minimum(lo, point), np.maximum(hi, point)


def effects(per_topic: dict[str, dict[str, float]], significance: dict[str, Any] | None, mmd: MMD | str | None = None,
            seed: int = 0, resamples: int = RESAMPLES) -> dict[str, Any]:
    """Means with intervals, every pair's difference with its interval and its class, the ceiling
    and family notes. ``per_topic``: {system: {qid: value}} of the verdict measure;
    ``significance``: :func:`nteval.significance.compare_systems` on it (its corrected p-values
    decide "cannot be told apart")."""
    mmd = MMD.parse(mmd)
    names, qids, m = topic_matrix(per_topic)
    means = m.mean(axis=1) if qids else np.zeros(len(names))
    pairs = [(i, j) for i in range(len(names)) for j in range(i + 1, len(names))]
    if qids and names:
        lo, hi = _bootstrap(m, pairs, seed, resamples)
    else:
        lo = hi = np.zeros(len(names) + len(pairs))
    tested = {(p["a"], p["b"]): p for p in (significance or {}).get("pairs", [])}
    alpha = (significance or {}).get("alpha", 0.05)
    out_pairs = []
    for k, (i, j) in enumerate(pairs):
        a, b = names[i], names[j]
        t = tested.get((a, b)) or tested.get((b, a))
        diff = float(means[i] - means[j])
        dlo, dhi = float(lo[len(names) + k]), float(hi[len(names) + k])
        thr = float(mmd.threshold(float(means[i]), float(means[j])))
        separated = bool(t and t["p_adjusted"] <= alpha)
        if not separated:
            cls = CLASSES[0]
        else:
            cls = CLASSES[1] if abs(diff) < thr else CLASSES[2]
        better = float(max(abs(means[i]), abs(means[j])))
        out_pairs.append({"a": a, "b": b, "diff": round(diff, 6), "ci95": [round(dlo, 6), round(dhi, 6)],
                          "relative": round(abs(diff) / better, 4) if better > 0 else None,
                          "mmd": round(thr, 6), "class": cls,
                          "equivalent": bool(not separated and -thr < dlo and dhi < thr),
                          "p_adjusted": t["p_adjusted"] if t else None})
    systems = {n: {"mean": round(float(means[i]), 6), "ci95": [round(float(lo[i]), 6), round(float(hi[i]), 6)]}
               for i, n in enumerate(names)}
    return {
        "method": f"BCa bootstrap (scipy.stats.bootstrap) over the {len(qids)} topics, paired, {resamples} resamples, "
                  f"seed {seed}; 95 % intervals, not adjusted for multiplicity (the groups use the corrected test)",
        "mmd": {"value": mmd.value, "relative": mmd.relative, "rule": mmd.describe(),
                "principle": "Sparck Jones (1974): differences under 5 % are not noticeable to users"
                             if (mmd.relative and mmd.value == 0.05) else "set by the user"},
        "systems": systems, "pairs": out_pairs,
        "counts": {c: sum(1 for p in out_pairs if p["class"] == c) for c in CLASSES}
        | {"equivalent": sum(1 for p in out_pairs if p["equivalent"])},
        "ceiling": ceiling(systems),
        "family": family_note(significance),
    }


def ceiling(systems: dict[str, dict[str, Any]], at: float = CEILING) -> dict[str, Any] | None:
    """Most systems at or above ``at`` on a measure bounded by 1: their differences are compressed."""
    high = sorted((n for n, v in systems.items() if v["mean"] >= at), key=lambda n: -systems[n]["mean"])
    if len(systems) < 2 or len(high) * 2 <= len(systems):
        return None
    vals = [systems[n]["mean"] for n in high]
    return {"at": at, "systems": high, "range": [min(vals), max(vals)],
            "note": f"{len(high)} of {len(systems)} systems score ≥ {at} ({min(vals):.3f}–{max(vals):.3f}): the measure "
                    "is near its ceiling here (few documents compete for each query), so their differences are "
                    "compressed; a larger collection would separate them"}


def family_note(significance: dict[str, Any] | None) -> dict[str, Any] | None:
    """Pairs the test separates before the correction but not after it (the family's size costs them)."""
    if not significance or not significance.get("pairs"):
        return None
    alpha = significance["alpha"]
    lost = [(p["a"], p["b"]) for p in significance["pairs"] if p["p"] <= alpha < p["p_adjusted"]]
    return {"pairs_in_family": len(significance["pairs"]), "separated_only_before_correction": len(lost),
            "examples": [list(x) for x in lost[:5]]}


def group_changes(previous: dict[str, Any] | None, current: dict[str, Any] | None) -> dict[str, Any] | None:
    """When OUT held an earlier verdict on the same topics with other systems: the pairs of systems
    in both whose separation changed, and the family sizes (the correction's family grew or shrank)."""
    if not previous or not current:
        return None
    old = {frozenset((p["a"], p["b"])): p["significant"] for p in previous.get("pairs", [])}
    new = {frozenset((p["a"], p["b"])): p["significant"] for p in current.get("pairs", [])}
    if set(old) == set(new):
        return None
    changed = sorted([sorted(k) + [bool(old[k]), bool(new[k])] for k in set(old) & set(new) if old[k] != new[k]])
    return {"pairs_before": len(old), "pairs_now": len(new), "changed": changed}
