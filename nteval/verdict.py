"""What each NT protocol's ranking means, and the verdict a run of it gives.

A protocol measures one search task. Its verdict is one measure's ranking of the systems, with
the groups of systems a paired test cannot tell apart (ties are shown as shared groups, never
broken by decimals) and the ranking's own reliability (split-half τ, topics needed). The
evidence behind the task statements is nteval's validation study (docs/validation.md, nteval.evidence).
"""
from __future__ import annotations

from typing import Any

from .effects import effects, group_changes
from .errors import InputError
from .protocols import get
from .protocols.base import VerdictSpec  # noqa: F401  (its home before 0.2)
from .reliability import reliability, reliability_sentence
from .settings import MIN_TOPICS as _MIN_TOPICS
from .significance import compare_systems

#: Fewer topics than this and a system ranking is mostly noise (the split-half curves in the
#: docs/verdicts.md: at 50 NT topics τ between two disjoint topic sets is ≈ 0.6-0.8 for 17-24 systems);
#: 50 is also TREC's customary minimum. ``--min-topics`` lowers it on purpose. (Defined with the
#: other run settings in :mod:`nteval.settings`.)
MIN_TOPICS = _MIN_TOPICS


def check_topic_floor(protocol: str, used: int, requested: int, eligible: int, min_topics: int, where: Any = None) -> None:
    """One-line error when too few topics are left for a ranking to mean anything (never fewer than
    2, whatever the floor: a verdict's paired tests and bootstrap intervals are over topics)."""
    if min_topics <= used < 2:
        fix = "ask for more (--topics 2 or more)" if requested < 2 <= eligible else "use a larger corpus"
        raise InputError(where, f"{protocol}: only {used} usable topic{'s' if used != 1 else ''} (asked for {requested}, "
                                f"{eligible} eligible as topics) — a verdict needs at least 2, whatever --min-topics "
                                f"says: its paired tests and bootstrap intervals are over topics; {fix}")
    if used < min_topics:
        if requested < min_topics and eligible >= min_topics:  # the corpus has enough: the request was small
            fix = f"ask for more (--topics {min_topics} or more), or lower the floor with --min-topics"
        else:
            fix = "use a larger corpus or relax the topic filters, or lower the floor with --min-topics"
        raise InputError(where, f"{protocol}: only {used} usable topic{'s' if used != 1 else ''} (asked for {requested}, {eligible} eligible as topics) "
                                f"— below the floor of {min_topics} topics for a meaningful system ranking; {fix}")


def make_verdict(protocol: str, per_topic: dict[str, dict[str, dict[str, float]]], correction: str = "holm",
                 alpha: float = 0.05, seed: int = 0, reliability_draws: int = 200, mmd: Any = None,
                 previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """The verdict of one protocol run: ``per_topic`` is {system: {qid: {measure: value}}}.
    ``mmd``: the minimum meaningful difference (:class:`nteval.effects.MMD`, default 5 %);
    ``previous``: an earlier verdict on the same topics (its groups are compared with these)."""
    spec = get(protocol).verdict
    m = spec.measure
    scores = {s: {q: v[m] for q, v in per.items()} for s, per in per_topic.items()}
    means = {s: round(sum(v.values()) / len(v), 6) if v else 0.0 for s, v in scores.items()}
    sig = compare_systems(scores, m, correction=correction, alpha=alpha, seed=seed) if len(scores) >= 2 else None
    return {
        "measure": m, "task": spec.task, "agrees_with": spec.agrees_with,
        "scores": dict(sorted(means.items(), key=lambda kv: (-kv[1], kv[0]))),
        "groups": sig["groups"] if sig else [list(scores)],
        "ties": "systems in one group cannot be told apart (paired test, corrected); groups may overlap",
        "significance": sig,
        "effects": effects(scores, sig, mmd, seed=seed) if scores else None,
        "group_changes": group_changes((previous or {}).get("significance"), sig),
        "reliability": reliability(scores, m, draws=reliability_draws, seed=seed) if len(scores) >= 2 else None,
    }


def _ci(v: dict[str, Any], s: str) -> str:
    e = (v.get("effects") or {}).get("systems", {}).get(s)
    return f" [{e['ci95'][0]:.3f}, {e['ci95'][1]:.3f}]" if e else ""


def verdict_text(protocol: str, v: dict[str, Any], top: int | None = None, counts: dict[str, Any] | None = None) -> str:
    """The verdict as a person reads it, printed before the full table: every number says what it is."""
    lines = [f"VERDICT ({protocol} protocol, {v['measure']}) — task: {v['task']}"]
    if counts:
        if counts.get("requested") == "auto":
            lines.append(f"  topics: {counts['used']:,} used (--topics auto: {counts['sampled']:,} documents sampled in "
                         f"{counts['batches']} batch{'es' if counts['batches'] != 1 else ''} of the seeded order, {counts['eligible']:,} eligible as topics); "
                         f"stopped because {counts['stopped']}. Your own runs on exactly these topics: the same "
                         f"command with --topics {counts['sampled']} and --runs (the systems' runs are put together "
                         "from the batches, not searched again)")
        else:
            lines.append(f"  topics: {counts['used']:,} used of {counts['requested']:,} asked for "
                         f"({counts['eligible']:,} eligible as topics)")
    sig = v.get("significance")
    eff = v.get("effects")
    if sig:
        lines.append(f"  groups that cannot be told apart ({sig['test']}; {sig['correction']}, alpha {sig['alpha']}); "
                     f"each system's mean {v['measure']}" + (" [95 % CI: topic bootstrap]" if eff else "") + ":")
        for i, g in enumerate(v["groups"][:top] if top else v["groups"], 1):
            lines.append(f"    {i}. " + ", ".join(f"{s} {v['scores'][s]:.4f}{_ci(v, s)}" for s in g))
    if eff and eff["pairs"]:
        c = eff["counts"]
        lines.append(f"  sizes, minimum meaningful difference (MMD) = {eff['mmd']['rule']}"
                     + (f" ({eff['mmd']['principle']})" if eff["mmd"]["principle"] != "set by the user" else "")
                     + f": of {len(eff['pairs']):,} pairs, {c['different']:,} different, "
                     f"{c['different, but smaller than the MMD']:,} different but smaller than the MMD, "
                     f"{c['cannot be told apart']:,} cannot be told apart ({c['equivalent']:,} of them equivalent: "
                     "the whole 95 % CI of the difference within ± the MMD)")
        small = sorted((p for p in eff["pairs"] if p["class"] == "different, but smaller than the MMD"),
                       key=lambda p: abs(p["diff"]))[:3]
        for p in small:
            lines.append(f"    e.g. {p['a']} vs {p['b']}: {p['diff']:+.4f} (95 % CI [{p['ci95'][0]:+.4f}, {p['ci95'][1]:+.4f}]) "
                         f"({p['relative'] * 100:.1f} % of the better score): real, but below the MMD")
        if eff.get("ceiling"):
            lines.append(f"  ceiling: {eff['ceiling']['note']}")
        fam = eff.get("family")
        if fam and fam["separated_only_before_correction"]:
            n = fam["separated_only_before_correction"]
            lines.append(f"  correction: {n:,} pair{'s are' if n != 1 else ' is'} separated before the "
                         f"correction over all {fam['pairs_in_family']:,} pairs but not after it; compare fewer systems "
                         "(the ones you choose between) to give each pair more power")
    gc = v.get("group_changes")
    if gc and gc["changed"]:
        ex = "; ".join(f"{a} vs {b} {'separated' if new else 'no longer separated'}" for a, b, _old, new in gc["changed"][:3])
        lines.append(f"  the groups moved since the last run in this OUT: the correction's family went from "
                     f"{gc['pairs_before']:,} to {gc['pairs_now']:,} pairs, and {len(gc['changed'])} pairs of the same "
                     f"systems changed ({ex})")
    if v.get("reliability"):
        lines.append("  " + reliability_sentence(v["reliability"], counts.get("eligible") if counts else None))
    return "\n".join(lines)
