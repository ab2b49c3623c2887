"""A gate across families of systems: what nteval's validation study measured of how the verdict
judges the candidate's family against the baseline's, a caution in the headline when that is
unknown or large, and the rule that keeps a cross-family "worse" from being a silent exit 3.

**Bias of a pair.** The study measures, per family, NT's relative advantage over BM25 minus the
humans' (points of BM25's score), on collections of each kind (:func:`nteval.evidence.measured_bias`).
For a candidate of family F against a baseline of family G the pair's bias is bias(F) − bias(G),
on each collection of the verdict's own kind (topical for the high-recall verdict, precise for the
focused one), with the interval of bias(F) shifted by bias(G)'s estimate.

**Caution** (in the gate's first line) when the families differ and either family is unmeasured
(an external run that declares none, a verdict the study does not cover), or the pair's bias is
larger than :data:`nteval.evidence.BIAS_CAUTION` (5 points) on any of those collections.

**The cross-family "worse" rule.** A candidate of another family found worse is failed (exit 3)
only when the loss survives the largest *understatement* of its family that the study's
intervals allow: with u the largest ``−(lower end of the pair's bias interval)`` over the own-kind
collections (0 when every interval lies above 0), the gate's upper bound of the relative difference
plus u must still be below 0. Otherwise the decision is *inconclusive* (exit 4): NT cannot tell
this loss from its own measured understatement of the family. An unmeasured pair keeps the "worse"
(exit 3), with the caution that says the family's bias is unknown. Within a family (both the
same, known) nothing changes: a bias shared by both sides cancels.
"""
from __future__ import annotations

from typing import Any

from ..evidence import BIAS_CAUTION, FAMILIES, _collections, families, measured_bias


def _name(family: str | None) -> str:
    return FAMILIES[family].split(" (")[0] if family in FAMILIES else "an unknown family"


def pair_bias(side: str, cand_family: str | None, base_family: str | None) -> dict[str, Any] | None:
    """The pair's measured bias on each own-kind collection (``{collection: {bias, ci95}}``), or
    None when either family is unmeasured under ``side``."""
    bc = measured_bias(side, cand_family)
    bb = {} if base_family == "bm25" and measured_bias(side, base_family) is None else measured_bias(side, base_family)
    if bc is None or bb is None:
        return None
    out = {}
    for col, v in bc.items():
        shift = (bb.get(col) or {}).get("bias", 0.0)
        out[col] = {"bias": round(v["bias"] - shift, 4), "ci95": [round(v["ci95"][0] - shift, 4), round(v["ci95"][1] - shift, 4)]}
    return out


def _declares(name: str, configs: dict[str, dict[str, Any]], seen: frozenset = frozenset()) -> bool:
    """Whether ``name``'s family comes from a declaration (``params.family``), on it or on what it fuses."""
    params = (configs.get(name) or {}).get("params") or {}
    if name in seen or not configs.get(name):
        return False
    return "family" in params or any(_declares(x, configs, seen | {name}) for x in params.get("systems") or [])


def family_check(side: str, configs: dict[str, dict[str, Any]], base: str, cand: str) -> dict[str, Any] | None:
    """What the study says of this candidate against this baseline (None: the same known family)."""
    fam = families(configs)
    fc, fb = fam.get(cand), fam.get(base)
    if fc is not None and fc == fb:
        return None
    bias = pair_bias(side, fc, fb)
    out: dict[str, Any] = {"candidate_family": fc, "baseline_family": fb, "side": side, "bias": bias,
                           "unmeasured": bias is None, "declared": _declares(cand, configs) or _declares(base, configs)}
    if bias is None:
        which = [f"{_name(f)} ({n})" for f, n in ((fc, cand), (fb, base)) if measured_bias(side, f) is None
                 and not (f == "bm25")]
        out["caution"] = (f"caution: nteval has not measured how this verdict judges {' or '.join(which) or _name(fc)} "
                          f"against {_name(fb)}: a difference across families may be NT's, not the users' (declare an "
                          "external system's family with params: {family: …}, or confirm with judgments)")
        out["understatement"] = None
        return out
    worst = max(bias.items(), key=lambda kv: abs(kv[1]["bias"]))
    out["understatement"] = round(max(0.0, *(-v["ci95"][0] for v in bias.values())), 4)
    if abs(worst[1]["bias"]) > BIAS_CAUTION:
        verb = "overstating" if worst[1]["bias"] > 0 else "understating"
        sizes = ", ".join(f"{v['bias'] * 100:+.0f} points on {_collections()[c]['label']}" for c, v in bias.items())
        kind = _collections()[worst[0]]["kind"]
        out["caution"] = (f"caution: nteval's validation study measured this verdict {verb} {_name(fc)} against "
                          f"{_name(fb)} by more than {BIAS_CAUTION * 100:.0f} points ({sizes}: the {kind} "
                          f"collection{'s' if len(bias) > 1 else ''}): part of this difference may not be the users'")
    return out


def cross_family_worse(check: dict[str, Any] | None, decided: dict[str, Any]) -> str | None:
    """The reason a cross-family "worse" is not decided by NT (the loss lies within the family's
    measured understatement), or None when the "worse" stands (module docstring)."""
    if check is None or decided["decision"] != "worse" or check["understatement"] is None or check.get("declared"):
        return None  # (a declared family, params.family, never buys a quieter exit than a lexical system gets)
    base = decided["baseline_mean"]
    if not base:
        return None
    upper = decided["worse_upper"] / base  # the gate's upper bound of the relative difference
    u = check["understatement"]
    if upper + u < 0:
        return None
    return (f"worse under NT ({decided['relative'] * 100:+.1f} %, upper bound {upper * 100:+.1f} %), but nteval's "
            f"validation study allows this verdict to understate {_name(check['candidate_family'])} against "
            f"{_name(check['baseline_family'])} by up to {u * 100:.0f} points: NT cannot tell this loss from its own "
            "bias; decide it with judgments (docs/gate.md, across families)")
