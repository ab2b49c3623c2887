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

from ..errors import InputError
from ..evidence import BIAS_CAUTION, ENCODER_LABELS, FAMILIES, _collections, families, measured_bias
from ..systems.families import EMBEDDING_FAMILIES, UNSEEN_FAMILIES, against_references, declared, weighted_inputs
from ..systems.registry import get as kind_of
from ..systems.registry import known as is_kind
from ..traits import ENCODER_NOWHERE

#: a fusion's embedding inputs earn it their family when they change its top 10 on at least this share of topics
MIN_CHANGED = 0.25
#: a topic the candidate "fails": it keeps at most this share of the other side's score
COLLAPSE = 0.1
#: the failed topics must carry at least this share of the loss for the loss to look like failures
FAILURE_SHARE = 0.5


def _name(family: str | None) -> str:
    if family in UNSEEN_FAMILIES:
        return UNSEEN_FAMILIES[family]
    return FAMILIES[family].split(" (")[0] if family in FAMILIES else "an unknown family"


def _names(fams: list[str | None]) -> str:
    names = [_name(f) for f in fams]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


#: The families whose systems score a document by the query words it holds: over the abstracts,
#: every hit of theirs holds one (:mod:`nteval.traits`). The others may rank a document that holds
#: none (an encoder, query expansion).
LEXICAL_CLASS = ("bm25", "qld", "proximity", "reduction", "fusion")
NONLEXICAL_CLASS = ("expansion", "neural", "hybrid", "dense", "static_hybrid")
def _checked_encoder(f: str | None, check: dict[str, Any] | None) -> str | None:
    """``neural_unknown`` made ``neural`` (the ranking orders its hits as the references' own model
    does) or ``neural_unseen`` (it does not) by :func:`nteval.traits.same_encoder`; anything else as it is."""
    if f != "neural_unknown" or not check or check.get("tau") is None:
        return f
    return "neural" if check["same"] else "neural_unseen"


def possible_families(name: str, fam: dict[str, str | None], configs: dict[str, dict[str, Any]],
                      traits: dict[str, Any] | None, balanced: bool = False,
                      encoder: dict[str, Any] | None = None) -> tuple[list[str | None], str, str | None]:
    """The families ``name`` may be of, how that is known (``computed``, ``declared``, ``ranking``,
    ``unknown``) and what its ranking showed: a system nteval computes has its family; a declared
    one has its declaration, checked against its ranking where the ranking can refute it (a
    lexical family whose hits do not hold the query's words, an embedding family whose hits all do:
    one line, :class:`InputError`); an undeclared one that nteval does not compute, any family its
    ranking allows, but the references' own model's (``neural``) when it orders its top hits as that
    model does (``traits``: :func:`nteval.traits.read_matches`; ``balanced``: the references
    hold a neural model, so an encoder nteval cannot name is ``neural_unknown``, unless ``encoder``,
    :func:`nteval.traits.same_encoder` of its ranking, tells whether it is the references' own)."""
    f = fam.get(name)
    m = (traits or {}).get(name)
    cls = m.ranking_class() if m is not None else None
    if f is not None and not declared(name, configs):
        return [f], "computed", cls
    if f is not None:
        base = f.split("_")[0] if f in UNSEEN_FAMILIES else f
        if m is not None and cls == "non-lexical" and base in LEXICAL_CLASS:
            raise InputError(None, f"system {name}: declared {base} ({_name(base)}), but it ranks like no lexical system: "
                                   f"{m.class_text()}; declare what it is (params: {{family: …}}: neural, hybrid, "
                                   "expansion, dense …) or leave the family out")
        if m is not None and cls == "lexical" and base in EMBEDDING_FAMILIES:
            raise InputError(None, f"system {name}: declared {base} ({_name(base)}), but it ranks like a lexical system: "
                                   f"{m.class_text()}, as no encoder's ranking does; declare what it is (params: "
                                   "{family: bm25, qld …}) or leave the family out")
        if base in EMBEDDING_FAMILIES and base != "neural" and encoder and encoder.get("same"):
            # (declared a hybrid or static embeddings, yet ordered as the references' own model orders its hits:
            # it may be that model's ranking, so judged as the more cautious of the two; a declaration buys nothing)
            return [_checked_encoder(f, encoder), "neural"], "declared", cls
        return [_checked_encoder(f, encoder)], "declared", cls
    if cls == "non-lexical" and encoder and encoder.get("same"):
        # (its top hits ordered as the references' own model orders them: that model's ranking, the family it has)
        return ["neural"], "ranking", cls
    unknown = {"neural": _checked_encoder("neural_unknown", encoder), "hybrid": "hybrid_unknown"} if balanced else {}
    if cls == "lexical":
        return list(LEXICAL_CLASS), "ranking", cls
    if cls == "non-lexical" and m is not None and m.may_be_lexical():
        # (a few hits without the query's words: a lexical engine with strays, expansion or a hybrid)
        return [*LEXICAL_CLASS, *(unknown.get(x, x) for x in NONLEXICAL_CLASS)], "ranking", cls
    if cls == "non-lexical":
        return [unknown.get(x, x) for x in NONLEXICAL_CLASS], "ranking", cls
    return [*LEXICAL_CLASS, *(unknown.get(x, x) for x in NONLEXICAL_CLASS)], "unknown", cls


def pair_bias(side: str, cand_family: str | None, base_family: str | None,
              references: frozenset[str] | None = None) -> dict[str, Any] | None:
    """The pair's measured bias on each own-kind collection (``{collection: {bias, ci95}}``), or
    None when either family is unmeasured under ``side``."""
    bc = measured_bias(side, cand_family, references)
    bb = ({} if base_family == "bm25" and measured_bias(side, base_family) is None
          else measured_bias(side, base_family, references))
    if bc is None or bb is None:
        return None
    out = {}
    for col, v in bc.items():
        shift = (bb.get(col) or {}).get("bias", 0.0)
        out[col] = {"bias": round(v["bias"] - shift, 4), "ci95": [round(v["ci95"][0] - shift, 4), round(v["ci95"][1] - shift, 4)]}
    return out


def _sizes(bias: dict[str, Any]) -> str:
    """Each collection's measured bias with its 95 % interval, and whether any interval excludes 0."""
    sizes = ", ".join(f"{v['bias'] * 100:+.0f} [{v['ci95'][0] * 100:+.0f}, {v['ci95'][1] * 100:+.0f}] points on "
                      f"{_collections()[c]['label']}" for c, v in bias.items())
    shown = any(v["ci95"][0] > 0 or v["ci95"][1] < 0 for v in bias.values())
    return sizes + ", 95 % intervals" + ("" if shown else f"; {'neither' if len(bias) == 2 else 'none'} excludes 0")


def family_check(side: str, configs: dict[str, dict[str, Any]], base: str, cand: str,
                 references: frozenset[str] | None = None, traits: dict[str, Any] | None = None,
                 encoders: dict[str, dict[str, Any]] | None = None,
                 alike: dict[str, float] | None = None) -> dict[str, Any] | None:
    """What the study says of this candidate against this baseline (None: the same known family).
    ``references``: the encoders of the references that judged the topics (a neural system whose
    encoder they do not contain has the leave-model-out study's bias: :func:`nteval.evidence.measured_bias`);
    ``traits``: what the rankings of the systems nteval does not compute show (their families are
    then every family the ranking allows, and the rules take the most cautious: the largest
    overstatement any of them allows, the smallest understatement); ``encoders``: whether the rankings
    of external encoders order their hits as the references' own model (:func:`nteval.traits.same_encoder`);
    ``alike``: for a side read from its ranking, the share of topics whose top 10 it shares with the
    other side's: at least 1 − :data:`MIN_CHANGED`, it ranks as that does and has its family (as an
    idle fusion input, :func:`effective_configs`: a run file of the baseline's own ranking is no
    other family)."""
    balanced = bool(side == "highrecall" and references)
    fam = against_references(families(configs), configs, references if balanced else None)
    cands, how_c, cls_c = possible_families(cand, fam, configs, traits, balanced, (encoders or {}).get(cand))
    bases, how_b, cls_b = possible_families(base, fam, configs, traits, balanced, (encoders or {}).get(base))
    same = (alike or {}).get(cand, 0.0) if len(cands) > 1 else (alike or {}).get(base, 0.0) if len(bases) > 1 else 0.0
    if same >= 1 - MIN_CHANGED and (len(cands) == 1) != (len(bases) == 1):
        if len(cands) > 1:
            cands, how_c = list(bases), f"ranking: its top 10 is {base}'s on {same:.0%} of the topics"
        else:
            bases, how_b = list(cands), f"ranking: its top 10 is {cand}'s on {same:.0%} of the topics"
    if len(cands) == 1 and cands == bases and cands[0] is not None:
        return None
    pairs = [(fc, fb, None if fc == fb else pair_bias(side, fc, fb, references)) for fc in cands for fb in bases]
    fc, fb = (cands[0] if len(cands) == 1 else None), (bases[0] if len(bases) == 1 else None)
    out: dict[str, Any] = {"candidate_family": fc, "baseline_family": fb, "side": side,
                           "declared": declared(cand, configs) or declared(base, configs)}
    if len(cands) > 1 or len(bases) > 1:
        out["read_from_ranking"] = {n: {"families": list(fs), "how": how, "class": cls,
                                        "matches": (traits or {})[n].as_dict() if (traits or {}).get(n) else None}
                                    for n, fs, how, cls in ((cand, cands, how_c, cls_c), (base, bases, how_b, cls_b))
                                    if len(fs) > 1}
    if references and side == "highrecall":
        out["references"] = sorted(references)
    checked = {n: c for n, c in (encoders or {}).items() if n in (cand, base)}
    if checked:
        out["encoder_checked"] = checked
    measured = [(a, b, bias) for a, b, bias in pairs if bias is not None or a == b]
    if len(measured) < len(pairs):
        which = sorted({f"{_name(f)} ({n})" for a, b, bias in pairs if bias is None and a != b
                        for f, n in ((a, cand), (b, base)) if measured_bias(side, f, references) is None and f != "bm25"})
        out["bias"] = None
        out["unmeasured"] = True
        out["caution"] = (f"caution: nteval has not measured how this verdict judges {' or '.join(which) or _name(fc)} "
                          f"against {_name(fb)}: a difference across families may be NT's, not the users' (declare an "
                          "external system's family with params: {family: …}, or confirm with judgments)")
        out["understatement"] = out["overstatement"] = None
        return out
    out["unmeasured"] = False

    def over(bias: dict | None) -> float:
        return max(0.0, *(v["ci95"][1] for v in bias.values())) if bias else 0.0

    def under(bias: dict | None) -> float:
        return max(0.0, *(-v["ci95"][0] for v in bias.values())) if bias else 0.0

    most = max(pairs, key=lambda p: over(p[2]))
    least = min(pairs, key=lambda p: under(p[2]))
    out["bias"] = most[2]
    out["pair"] = {"candidate_family": most[0], "baseline_family": most[1]}
    out["worse_pair"] = {"candidate_family": least[0], "baseline_family": least[1]}
    out["understatement"] = round(under(least[2]), 4)
    out["overstatement"] = round(over(most[2]), 4)
    out["largest_overstatement"] = round(max(max(0.0, *(v["bias"] for v in b.values())) if b else 0.0
                                             for _, _, b in pairs), 4)
    sides = ((cand, cands, cls_c), (base, bases, cls_b))
    cautions = _cautions(sides, most, references, traits, encoders, configs)
    if cautions:
        out["caution"] = "caution: " + "; ".join(cautions)
    return out


def _cautions(sides: tuple, most: tuple, references: frozenset[str] | None, traits: dict[str, Any] | None,
              encoders: dict[str, dict[str, Any]] | None, configs: dict[str, dict[str, Any]]) -> list[str]:
    """What the first line says of a pair (``sides``: each side's name, possible families and class;
    ``most``: the pair whose bias sets the pass rule's allowance): an encoder the references lack, a
    family read from a ranking, a bias over :data:`BIAS_CAUTION`."""
    out = [x for n, fs, _ in sides if len(fs) == 1 and references
           for x in [_encoder_note(n, fs, references, (encoders or {}).get(n))] if x]
    for n, fs, cls in sides:
        m = (traits or {}).get(n)
        if len(fs) > 1 and declared(n, configs):
            out.append(f"{n} is declared {_name(fs[0])}, but its ranking orders its top hits as the references' own "
                       f"model does ({_encoder_tau(encoders, n)}): judged as the more cautious of {_names(fs)}")
        elif len(fs) > 1:
            seen = ({"lexical": "its hits hold the query's words, as a lexical system's do",
                     "non-lexical": (f"a lexical engine with a few hits through, or not ({m.class_text()}; an encoder's: "
                                     f"{ENCODER_NOWHERE:.0%} or more)" if m is not None and m.may_be_lexical() else
                                     f"it is no lexical system ({m.class_text() if m is not None else ''})")}.get(cls or "")
                    if cls else "too few of its hits to tell")
            out.append(f"nteval reads {n}'s family from its ranking only ({seen}): judged as the most cautious "
                       f"of {_names(fs)}; declare it (params: {{family: …}}) to be judged as what it is")
    if most[2] is not None:
        big = max(most[2].items(), key=lambda kv: abs(kv[1]["bias"]))
        if abs(big[1]["bias"]) > BIAS_CAUTION:
            verb = "overstating" if big[1]["bias"] > 0 else "understating"
            kind = _collections()[big[0]]["kind"]
            many = len(most[2]) > 1
            out.append(f"nteval's validation study measured this verdict {verb} {_name(most[0])} against "
                       f"{_name(most[1])} by more than {BIAS_CAUTION * 100:.0f} points on {'one of ' if many else ''}the "
                       f"{kind} collection{'s' if many else ''} ({_sizes(most[2])}): {NOT_THE_USERS}")
    return out


def _encoder_tau(encoders: dict[str, dict[str, Any]] | None, name: str) -> str:
    check = (encoders or {}).get(name) or {}
    return f"Kendall τ {check['tau']:.2f} on {check['topics']} topics" if check.get("tau") is not None else "its τ"


#: the caution's last words until the decision is known (:func:`for_the_decision` makes them say which way)
NOT_THE_USERS = "part of this difference may not be the users'"


def for_the_decision(check: dict[str, Any], decision: str) -> None:
    """The caution's last words for what NT found (new user, turn 7: "part of this difference may not
    be the users'" on a FAIL whose family NT overstates read backwards): a gain of a family NT
    overstates, or a loss of one it understates, may be partly NT's; a loss of a family NT
    overstates, or a gain of one it understates, the users would likely see larger still."""
    if not check.get("caution") or NOT_THE_USERS not in check["caution"] or not check.get("bias"):
        return
    bias = max(check["bias"].values(), key=lambda v: abs(v["bias"]))["bias"]
    gain = decision in ("better", "non-inferior")
    if decision not in ("better", "non-inferior", "worse"):
        return
    said = (("part of this gain may be NT's, not the users'" if gain else "the users would likely find it worse still")
            if bias > 0 else ("the users would likely find it better still" if gain
                              else "part of this loss may be NT's, not the users'"))
    check["caution"] = check["caution"].replace(NOT_THE_USERS, said)


def _encoder_note(name: str, fams: list[str | None], references: frozenset[str] | None,
                  check: dict[str, Any] | None = None) -> str | None:
    """The first line's word on a neural system the references do not contain (or nteval cannot
    name), and on one whose encoder nteval read from its ranking (``check``: :func:`nteval.traits.same_encoder`)."""
    f = fams[0]
    held = ", ".join(ENCODER_LABELS.get(r, r) for r in sorted(references or ()))
    read = (f" (its ranking orders its top hits {'as' if check['same'] else 'unlike'} {held} does: Kendall τ "
            f"{check['tau']:.2f} on {check['topics']} topics, {check['threshold']:.2f} or more for the same model)"
            if check and check.get("tau") is not None else "")
    if f in ("neural_unseen", "hybrid_unseen"):
        return (f"{name}'s encoder is not among the references that judged these topics ({held}){read}: it is judged "
                "with nteval's leave-model-out evidence (docs/verdicts.md, encoders the references do not contain)")
    if f in ("neural_unknown", "hybrid_unknown"):
        return (f"nteval cannot tell whether {name}'s encoder is among the references that judged these topics "
                f"({held}): it is judged with the larger of the two allowances (its own model's, and the leave-model-out "
                "study's for an encoder they do not contain)")
    if f == "neural" and read:
        return f"{name} is judged as the references' own model{read}"
    return None


def _pair_text(check: dict[str, Any], key: str) -> str:
    """"neural retrieval against BM25": the pair of families a rule's allowance is measured for."""
    pair = check.get(key) or {}
    return (f"{_name(pair.get('candidate_family', check['candidate_family']))} against "
            f"{_name(pair.get('baseline_family', check['baseline_family']))}")


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
            f"{_pair_text(check, 'worse_pair')} by up to {u * 100:.0f} "
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
           f"{_pair_text(check, 'pair')} by up to {o * 100:.0f} "
           f"points; {'only non-inferiority is claimed' if after == 'non-inferior' else 'only judgments decide it'} "
           "(docs/gate.md, across families)")
    return after, why


def apply_rules(check: dict[str, Any] | None, dec: dict[str, Any], base: dict[str, float], cand: dict[str, float],
                passes: bool = True) -> dict[str, Any]:
    """The cross-family rules on one decision (:func:`nteval.gate.decide.decide`'s), changed in place:
    a "worse" NT's measured understatement of the pair could explain, unless it looks like failures
    (:func:`failures` of the per-topic scores ``base``, ``cand``), and, when ``passes``, a "better" or
    "non-inferior" its measured overstatement could (the gate applies that to pinned topics only:
    fresh topics can fail a release, never pass one). Returns ``dec``."""
    if check is None:
        return dec
    if dec["decision"] == "worse":
        failed = failures(base, cand, dec["alpha_worse"])
        dec["failures"] = failed
        why = cross_family_worse(check, dec, failed)
        if why:
            dec.update(nt_decision="worse", decision="inconclusive", across_families=why)
    elif passes:
        changed = cross_family_pass(check, dec)
        if changed:
            dec.update(nt_decision=dec["decision"], decision=changed[0], across_families=changed[1])
    return dec


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


def _reduced(params: dict[str, Any], keep: list[str]) -> dict[str, Any]:
    """A fusion's parameters with only the inputs ``keep`` (their weights kept with them)."""
    weights = params.get("weights") or []
    out = {**params, "systems": keep}
    if len(weights) == len(params.get("systems") or []):
        out["weights"] = [w for x, w in zip(params["systems"], weights) if x in keep]
    return out


def effective_configs(configs: dict[str, dict[str, Any]], name: str, runs: Any,
                      depth: int = 10) -> tuple[dict[str, dict[str, Any]], dict[str, Any] | None]:
    """``configs`` with ``name``'s fusion reduced to the inputs that earned its family (module
    docstring): its embedding inputs first, together; then each other input, while two or more
    are left, is dropped when the fusion without it has the same top 10 on all but fewer than
    :data:`MIN_CHANGED` of the topics (a fusion of what is left, or of one input, ranks as that
    does: hostile K3). Returns what was measured (None: nothing to measure)."""
    c = configs.get(name) or {}
    algorithm = c.get("algorithm")
    if not (isinstance(algorithm, str) and is_kind(algorithm)) or not kind_of(algorithm).fusion:
        return configs, None
    if (c.get("params") or {}).get("family") in FAMILIES:
        return configs, None
    fam = families(configs)
    inputs = list(dict.fromkeys(weighted_inputs(c)))
    emb = [x for x in inputs if fam.get(x) in EMBEDDING_FAMILIES]
    rest = [x for x in inputs if x not in emb]
    params = dict(c.get("params") or {})
    kind = kind_of(algorithm)
    info: dict[str, Any] | None = None
    keep = inputs
    if emb and rest:
        shown = _changed_share(kind, runs, name, rest, _reduced(params, rest), depth)
        info = {"embedding_inputs": emb, "other_inputs": rest, **shown, "min_changed": MIN_CHANGED}
        info["earned"] = bool(shown["changed_top10"] is not None and shown["changed_top10"] >= MIN_CHANGED)
        if not info["earned"]:
            keep = rest
            info["note"] = (f"{name} is judged as a fusion of {', '.join(rest)}: its embedding input"
                            f"{'s' if len(emb) > 1 else ''} ({', '.join(emb)}) change{'' if len(emb) > 1 else 's'} its "
                            "top 10 on " + (f"{shown['changed_top10']:.0%} of the topics (fewer than {MIN_CHANGED:.0%})"
                                            if shown["changed_top10"] is not None else "no topic nteval could compare")
                            + ", so the fusion has not earned their family")
    idle = []
    for x in [y for y in keep if y not in emb]:
        if len(keep) < 2:
            break
        left = [y for y in keep if y != x]
        shown = _changed_share(kind, runs, name, left, _reduced(params, left), depth)
        if shown["changed_top10"] is not None and shown["changed_top10"] < MIN_CHANGED:
            keep = left
            idle.append({"input": x, **shown})
    if idle:
        info = {**(info or {}), "idle_inputs": idle, "kept_inputs": keep, "min_changed": MIN_CHANGED}
        info["note"] = ((info.get("note", "") + "; ") if info.get("note") else "") + (
            f"{name} ranks as {'a fusion of ' if len(keep) > 1 else ''}{', '.join(keep)}: "
            + ", ".join(f"{i['input']} changes its top 10 on {i['changed_top10']:.0%} of the topics" for i in idle)
            + f" (fewer than {MIN_CHANGED:.0%})")
    if keep == inputs:
        return configs, info
    return {**configs, name: {**c, "params": _reduced(params, keep)}}, info


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
