"""What each NT protocol's ranking means, and the verdict a run of it gives.

A protocol measures one search task. Its verdict is one measure's ranking of the systems, with
the groups of systems a paired test cannot tell apart (ties are shown as shared groups, never
broken by decimals) and the ranking's own reliability (split-half τ, topics needed). The
evidence behind the task statements is in the README ("Which protocol answers which question").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import InputError

#: Fewer topics than this and a system ranking is mostly noise (the split-half curves in the
#: README: at 50 NT topics τ between two disjoint topic sets is ≈ 0.6-0.8 for 17-24 systems);
#: 50 is also TREC's customary minimum. ``--min-topics`` lowers it on purpose.
MIN_TOPICS = 50


@dataclass(frozen=True)
class VerdictSpec:
    protocol: str
    measure: str
    task: str
    agrees_with: str


def check_topic_floor(protocol: str, used: int, requested: int, eligible: int, min_topics: int, where: Any = None) -> None:
    """One-line error when too few topics are left for a ranking to mean anything."""
    if used < min_topics:
        raise InputError(where, f"{protocol}: only {used} usable topics (asked for {requested}, {eligible} eligible as topics) "
                                f"— below the floor of {min_topics} topics for a meaningful system ranking; "
                                f"use a larger corpus or relax the topic filters, or lower the floor with --min-topics")


def make_verdict(protocol: str, per_topic: dict[str, dict[str, dict[str, float]]], correction: str = "holm",
                 alpha: float = 0.05, seed: int = 0, reliability_draws: int = 200) -> dict[str, Any]:
    """The verdict of one protocol run: ``per_topic`` is {system: {qid: {measure: value}}}."""
    from .reliability import reliability
    from .significance import compare_systems

    from .protocols import get

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
        "reliability": reliability(scores, m, draws=reliability_draws, seed=seed) if len(scores) >= 2 else None,
    }


def verdict_text(protocol: str, v: dict[str, Any], top: int | None = None, counts: dict[str, Any] | None = None) -> str:
    """The verdict as a person reads it, printed before the full table."""
    from .reliability import reliability_sentence

    lines = [f"VERDICT ({protocol} protocol, {v['measure']}) — task: {v['task']}",
             f"  agrees with: {v['agrees_with']}"]
    if counts:
        lines.append(f"  topics: {counts['used']} used of {counts['requested']} asked for "
                     f"({counts['eligible']} eligible as topics)")
    sig = v.get("significance")
    if sig:
        lines.append(f"  groups that cannot be told apart ({sig['test']}; {sig['correction']}, alpha {sig['alpha']}):")
        for i, g in enumerate(v["groups"][:top] if top else v["groups"], 1):
            lines.append(f"    {i}. " + ", ".join(f"{s} {v['scores'][s]:.4f}" for s in g))
    if v.get("reliability"):
        lines.append("  " + reliability_sentence(v["reliability"]))
    return "\n".join(lines)
