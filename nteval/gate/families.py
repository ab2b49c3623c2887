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
same, known) nothing changes: a bias shared by both sides cancels. The rule is tested on every
"worse" the gate found (pinned and fresh topics); a "worse" it does not explain stands.

**Not a family bias.** A "worse" stands whatever the study allows when it looks like failures, not
like a shift a family bias makes (:func:`failures`): the candidate loses nearly all of its score
(:data:`COLLAPSE`) on significantly more topics than the baseline does (a one-sided sign test at the
gate's α for "worse"), and those topics carry at least half of the loss. It also stands when either
side's family is declared (``params.family``): a declaration never buys a quieter exit.

**A family is earned by the ranking** (:func:`effective_configs`): a fusion is a hybrid only
through the inputs it fuses with a non-zero weight (:func:`nteval.systems.families.weighted_inputs`),
and only when its embedding inputs change its top 10 (against the same fusion without them) on at
least :data:`MIN_CHANGED` of the topics; otherwise it is judged as the fusion of its other inputs
(unknown when one of them is: a run file). Fusions of fusions, the inner ones first (:func:`earned_configs`).

**The symmetric rule.** A cross-family "better" or "non-inferior" passes only when it survives the
largest *overstatement* of the candidate's family the study's intervals allow: o, the largest upper
end of the pair's bias interval (0 when every interval lies below 0), taken off the gate's lower
bound of the relative difference (better) or of the relative difference plus the margin
(non-inferior). A "better" that only survives as non-inferior is non-inferior; otherwise the
decision is *inconclusive* (exit 4), in its own words: only judgments decide it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..evidence import BIAS_CAUTION, FAMILIES, _collections, families, measured_bias
from ..systems.families import EMBEDDING_FAMILIES, declared, weighted_inputs
from ..systems.registry import get as kind_of
from ..systems.registry import known as is_kind

#: a fusion's embedding inputs earn it their family when they change its top 10 on at least this share of topics
MIN_CHANGED = 0.25
#: a topic the candidate "fails": it keeps at most this share of the other side's score
COLLAPSE = 0.1
#: the failed topics must carry at least this share of the loss for the loss to look like failures
FAILURE_SHARE = 0.5


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


def family_check(side: str, configs: dict[str, dict[str, Any]], base: str, cand: str) -> dict[str, Any] | None:
    """What the study says of this candidate against this baseline (None: the same known family)."""
    fam = families(configs)
    fc, fb = fam.get(cand), fam.get(base)
    if fc is not None and fc == fb:
        return None
    bias = pair_bias(side, fc, fb)
    out: dict[str, Any] = {"candidate_family": fc, "baseline_family": fb, "side": side, "bias": bias,
                           "unmeasured": bias is None, "declared": declared(cand, configs) or declared(base, configs)}
    if bias is None:
        which = [f"{_name(f)} ({n})" for f, n in ((fc, cand), (fb, base)) if measured_bias(side, f) is None
                 and not (f == "bm25")]
        out["caution"] = (f"caution: nteval has not measured how this verdict judges {' or '.join(which) or _name(fc)} "
                          f"against {_name(fb)}: a difference across families may be NT's, not the users' (declare an "
                          "external system's family with params: {family: …}, or confirm with judgments)")
        out["understatement"] = out["overstatement"] = None
        return out
    worst = max(bias.items(), key=lambda kv: abs(kv[1]["bias"]))
    out["understatement"] = round(max(0.0, *(-v["ci95"][0] for v in bias.values())), 4)
    out["overstatement"] = round(max(0.0, *(v["ci95"][1] for v in bias.values())), 4)
    out["largest_overstatement"] = round(max(0.0, *(v["bias"] for v in bias.values())), 4)
    if abs(worst[1]["bias"]) > BIAS_CAUTION:
        verb = "overstating" if worst[1]["bias"] > 0 else "understating"
        sizes = ", ".join(f"{v['bias'] * 100:+.0f} points on {_collections()[c]['label']}" for c, v in bias.items())
        kind = _collections()[worst[0]]["kind"]
        out["caution"] = (f"caution: nteval's validation study measured this verdict {verb} {_name(fc)} against "
                          f"{_name(fb)} by more than {BIAS_CAUTION * 100:.0f} points ({sizes}: the {kind} "
                          f"collection{'s' if len(bias) > 1 else ''}): part of this difference may not be the users'")
    return out


def failures(base: dict[str, float], cand: dict[str, float], alpha: float) -> dict[str, Any]:
    """Whether a loss looks like failures rather than a family's shift (module docstring): the
    topics where the candidate keeps at most :data:`COLLAPSE` of the baseline's score (and the
    other way round), a one-sided sign test of the two counts, and the failed topics' share of
    the loss."""
    from scipy.stats import binomtest

    qids = sorted(base)
    b = np.array([base[q] for q in qids])
    c = np.array([cand.get(q, 0.0) for q in qids])
    lost = (b > 0) & (c <= COLLAPSE * b)
    won = (c > 0) & (b <= COLLAPSE * c)
    k, j = int(lost.sum()), int(won.sum())
    p = float(binomtest(k, k + j, 0.5, alternative="greater").pvalue) if k + j else 1.0
    loss = float((b - c).sum())
    net = float((b - c)[lost].sum() - (c - b)[won].sum())
    share = net / loss if loss > 0 else 0.0
    found = bool(p < alpha and share >= FAILURE_SHARE)
    return {"failed": k, "failed_baseline": j, "topics": len(qids), "p": round(p, 6), "loss_share": round(share, 4),
            "found": found,
            "method": f"topics where one side keeps at most {COLLAPSE:.0%} of the other's score; one-sided sign test "
                      f"of the candidate's against the baseline's (p < {alpha:g}) and their net share of the loss "
                      f"(at least {FAILURE_SHARE:.0%})"}


def cross_family_worse(check: dict[str, Any] | None, decided: dict[str, Any],
                       failed: dict[str, Any] | None = None) -> str | None:
    """The reason a cross-family "worse" is not decided by NT (the loss lies within the family's
    measured understatement), or None when the "worse" stands (module docstring): beyond the
    understatement, a declared family, or a loss that looks like failures (``failed``: :func:`failures`)."""
    if check is None or decided["decision"] != "worse" or check["understatement"] is None or check.get("declared"):
        return None
    if failed and failed.get("found"):
        return None
    base = decided["baseline_mean"]
    if not base:
        return None
    upper = decided["worse_upper"] / base  # the gate's upper bound of the relative difference
    u = check["understatement"]
    if upper + u < 0:
        return None
    return (f"worse under NT ({decided['relative'] * 100:+.1f} %, upper bound {upper * 100:+.1f} %), but within the "
            f"family's measured bias: nteval's validation study allows this verdict to understate "
            f"{_name(check['candidate_family'])} against {_name(check['baseline_family'])} by up to {u * 100:.0f} "
            "points; only judgments decide it (docs/gate.md, across families)")


def cross_family_pass(check: dict[str, Any] | None, decided: dict[str, Any]) -> tuple[str, str] | None:
    """The symmetric rule (module docstring): None when a cross-family "better" or "non-inferior"
    survives the largest overstatement of the family the study's intervals allow; else (the decision
    that does, "non-inferior" or "inconclusive", and why)."""
    if check is None or decided["decision"] not in ("better", "non-inferior") or not check.get("overstatement"):
        return None
    base = decided["baseline_mean"]
    if not base:
        return None
    o = check["overstatement"]
    better_lower = decided["ci"][0] / base
    ni_lower = decided["noninferiority_lower"] / base
    if decided["decision"] == "better" and better_lower - o > 0:
        return None
    if ni_lower - o > 0:
        if decided["decision"] == "non-inferior":
            return None
        after = "non-inferior"
    else:
        after = "inconclusive"
    why = (f"{decided['decision']} under NT ({decided['relative'] * 100:+.1f} %, lower bound {better_lower * 100:+.1f} %"
           + ("" if decided["decision"] == "better" else f", margin {-decided['margin'] / base * 100:+.1f} %")
           + f"), but within the family's measured bias: nteval's validation study allows this verdict to overstate "
           f"{_name(check['candidate_family'])} against {_name(check['baseline_family'])} by up to {o * 100:.0f} "
           f"points; {'only non-inferiority is claimed' if after == 'non-inferior' else 'only judgments decide it'} "
           "(docs/gate.md, across families)")
    return after, why


def after_overstatement(check: dict[str, Any] | None, decided: dict[str, Any]) -> str | None:
    """What remains of a cross-family gain after the family's largest measured overstatement (the
    study's estimate) and after the most its intervals allow: "+37.0 % under NT; +27.4 % after the
    largest measured overstatement (10 points), +12.7 % after the most the study's intervals allow
    (24 points): still better"."""
    if check is None or check.get("overstatement") is None or decided.get("relative") is None:
        return None
    if decided["decision"] not in ("better", "non-inferior") or not check["overstatement"]:
        return None
    rel, est, o = decided["relative"], check["largest_overstatement"], check["overstatement"]
    left = "still better" if decided["decision"] == "better" else "still non-inferior"
    return (f"{rel * 100:+.1f} % under NT; {(rel - est) * 100:+.1f} % after the largest measured overstatement "
            f"({est * 100:.0f} points), {(rel - o) * 100:+.1f} % after the most the study's intervals allow "
            f"({o * 100:.0f} points): {left}")


def effective_configs(configs: dict[str, dict[str, Any]], name: str, runs: Any,
                      depth: int = 10) -> tuple[dict[str, dict[str, Any]], dict[str, Any] | None]:
    """``configs`` with ``name``'s fusion reduced to the inputs that earned its family (module
    docstring), and what was measured (None: ``name`` is no fusion with an embedding input)."""
    c = configs.get(name) or {}
    algorithm = c.get("algorithm")
    if not (isinstance(algorithm, str) and is_kind(algorithm)) or not kind_of(algorithm).fusion:
        return configs, None
    if (c.get("params") or {}).get("family") in FAMILIES:
        return configs, None
    fam = families(configs)
    inputs = weighted_inputs(c)
    emb = [x for x in inputs if fam.get(x) in EMBEDDING_FAMILIES]
    rest = [x for x in inputs if x not in emb]
    if not emb or not rest:
        return configs, None
    params = dict(c.get("params") or {})
    weights = params.get("weights") or []
    reduced = {**params, "systems": rest}
    if len(weights) == len(params.get("systems") or []):
        reduced["weights"] = [w for x, w in zip(params["systems"], weights) if x in rest]
    shown = _changed_share(kind_of(algorithm), runs, name, rest, reduced, depth)
    info = {"embedding_inputs": emb, "other_inputs": rest, **shown, "min_changed": MIN_CHANGED}
    info["earned"] = bool(shown["changed_top10"] is not None and shown["changed_top10"] >= MIN_CHANGED)
    if info["earned"]:
        return configs, info
    info["note"] = (f"{name} is judged as a fusion of {', '.join(rest)}: its embedding input"
                    f"{'s' if len(emb) > 1 else ''} ({', '.join(emb)}) change{'' if len(emb) > 1 else 's'} its top 10 on "
                    + (f"{shown['changed_top10']:.0%} of the topics (fewer than {MIN_CHANGED:.0%})"
                       if shown["changed_top10"] is not None else "no topic nteval could compare")
                    + ", so the fusion has not earned their family")
    return {**configs, name: {**c, "params": reduced}}, info


def earned_configs(configs: dict[str, dict[str, Any]], names: list[str],
                   runs: Any) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """:func:`effective_configs` of every fusion ``names`` fuse, however deep, the inner ones first
    (a fusion's family is then earned by what its inputs earned: a weight-0.000001 hybrid fused
    again with BM25 is no hybrid), and what was measured of each."""
    infos: dict[str, dict[str, Any]] = {}
    done: set[str] = set()

    def visit(name: str, seen: frozenset) -> None:
        nonlocal configs
        c = configs.get(name)
        if c is None or name in seen or name in done:
            return
        algorithm = c.get("algorithm")
        if not (isinstance(algorithm, str) and is_kind(algorithm)) or not kind_of(algorithm).fusion:
            return
        for x in weighted_inputs(c):
            visit(x, seen | {name})
        configs, info = effective_configs(configs, name, runs)
        done.add(name)
        if info:
            infos[name] = info

    for n in names:
        visit(n, frozenset())
    return configs, infos


def _changed_share(kind: Any, runs: Any, name: str, rest: list[str], reduced: dict[str, Any],
                   depth: int) -> dict[str, Any]:
    """On how many topics the fused top ``depth`` differs (as a set) from the same fusion of
    ``rest`` alone."""
    try:
        fused = runs[name]
        without = kind.fuse([runs[x] for x in rest], reduced, depth)
    except (KeyError, FileNotFoundError):
        return {"changed_top10": None, "topics": 0}
    qids = [q for q in fused if fused[q]]
    changed = sum(1 for q in qids if {d for d, _ in fused[q][:depth]} != {d for d, _ in without.get(q, [])[:depth]})
    return {"changed_top10": round(changed / len(qids), 4) if qids else None, "topics": len(qids)}
