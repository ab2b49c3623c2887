"""Figures of a correlate report that cannot mean anything, found by rule and said in words.

A small judged collection makes statistics that look exact and are noise: a rank correlation over
three systems, a zero-width interval because the human scores tie, human judgments that disagree
with themselves. Each rule here names the figure, says why it cannot be read, and what would fix it.
"""
from __future__ import annotations

from typing import Any

#: Fewer systems than this and a rank correlation takes a handful of values (τ over 4 systems: 7).
MIN_SYSTEMS = 5
#: Below this human split-half τ the human ranking is too unstable to be the yardstick.
MIN_HUMAN_CEILING = 0.5
#: More than this share of the bootstrap replicates on one side of the estimate (|z0| ≥ 1 in BCa's
#: terms) and the interval is mostly a bias correction, not the replicates' spread.
MAX_SHARE_ONE_SIDE = 0.84


def _distinct(scores: dict[str, float]) -> int:
    return len({round(v, 4) for v in scores.values()})


def caveats(report: dict[str, Any]) -> list[dict[str, str]]:
    """``[{"figure", "why"}]`` for the report's figures that a reader must not take at face value."""
    out: list[dict[str, str]] = []
    cov = report.get("coverage") or {}
    for key, figure in (("collection", "every NT figure: the collection"),
                        ("human_relevant", "every agreement figure: the human-relevant documents"),
                        ("judged_not_in_index", "every human figure: the judged documents")):
        if (cov.get(key) or {}).get("caveat"):
            out.append({"figure": figure, "why": cov[key]["caveat"]})
    if (report.get("negative_grades") or {}).get("caveat"):
        out.append({"figure": "every human figure: the grades", "why": report["negative_grades"]["caveat"]})
    n = len(report["systems"])
    pairs = report["pairs"]
    if pairs:
        k = len(pairs[0]["top_half_systems"])
        if k < MIN_SYSTEMS:
            out.append({"figure": "the better half of the systems",
                        "why": f"it holds {k} systems; a rank correlation over fewer than {MIN_SYSTEMS} takes a handful "
                               "of values, so it is not computed (compare more systems)"})
    for m in sorted({p["human_measure"] for p in pairs}):
        scores = {s: v[m] for s, v in report["human"]["scores"].items() if m in v}
        d = _distinct(scores)
        if d <= n // 2:
            out.append({"figure": f"every figure on human {m}",
                        "why": f"the human {m} scores take {d} distinct values over {n} systems: the human judgments "
                               f"cannot rank these systems on {m}, so a correlation with them measures ties, not agreement"})
    for m, c in report.get("human_ceiling", {}).items():
        kc = (c or {}).get("kendall")
        if kc and kc["mean"] < MIN_HUMAN_CEILING:
            out.append({"figure": f"agreement with human {m}",
                        "why": f"two random halves of the human topics rank the systems alike only to Kendall τ "
                               f"{kc['mean']:.3f} (human-vs-human ceiling): the human ranking is itself unstable "
                               f"(more judged topics needed), so no NT ranking can be shown to agree with it"})
    for p in pairs:
        lo, hi = p["ci95"].get("kendall") or (None, None)  # None: undefined (e.g. human scores all equal)
        v = p["stats"]["kendall"]["value"]
        label = f"NT {p['nt']} {p['nt_measure']} vs human {p['human_measure']}"
        if lo is not None and hi is not None and hi - lo < 1e-9 and v is not None and abs(v) < 1:
            out.append({"figure": f"{label}: Kendall's CI",
                        "why": "zero width: every bootstrap replicate gives the same τ because of ties, not because "
                               "the estimate is precise"})
        elif lo is not None and hi is not None and lo < 0 < hi:
            out.append({"figure": f"{label}: Kendall τ {v:.3f}" if v is not None else f"{label}: Kendall τ",
                        "why": f"its 95 % CI [{lo:.3f}, {hi:.3f}] contains 0: agreement cannot be told from chance here"})
        sp = ((p.get("ci_method") or {}).get("spread") or {}).get("kendall")
        if sp and v is not None and lo is not None and max(sp["share_below_estimate"], 1 - sp["share_below_estimate"]) > MAX_SHARE_ONE_SIDE:
            plo, phi = sp["percentile"]
            out.append({"figure": f"{label}: Kendall's CI [{lo:.3f}, {hi:.3f}]",
                        "why": f"{sp['share_below_estimate'] * 100:.0f} % of the bootstrap replicates fall below τ {v:.3f} "
                               f"(their own 95 % range is [{plo:.3f}, {phi:.3f}]): resampling these topics attenuates τ "
                               "this much, so the BCa interval is mostly a bias correction and is narrower than the "
                               "replicates' spread. It is not calibrated: the agreement many topics would show can lie "
                               "on either side of it (docs/correlate.md, \"How far the intervals hold\", measures how often)"})
    return out


def caveat_blocks(items: list[dict[str, str]]) -> list[tuple]:
    """The caveats as report blocks (see :mod:`nteval.report.document`), right after the bottom line."""
    if not items:
        return []
    return [("h2", "Read with care: figures in this report that cannot mean anything here"),
            ("ul", [[f"**{c['figure']}**: {c['why']}."] for c in items])]
