"""Alert rules over a history, checked each time records are appended.

**The release line**: the records of one task on one pin, in the order they were written. A
*release* is what went live: a candidate that passed its gate and every other gate of the same label
on the pin (a release that fails the known-item gate does not ship for its topical gain either), a
system recorded by ``nteval check`` (what is live, measured), and a gate's baseline (what was live
when the gate ran). A candidate *fails* a gate when its decision on the pinned topics is not better
or non-inferior, or when its fresh topics were decided on and showed it worse (fresh topics can fail
a release, never pass one: fresh topics too few to decide on, or inconclusive, fail nothing).
Candidates that failed are shown in the history but are not releases: nothing is compared with
them, and they raise no alert (their gate already said so). Every check is a new observation (a
live engine may change while nteval's index does not); a gate's baseline recorded again with the
same label, system and per-topic scores as an earlier point adds nothing and is left out.

1. **Below the best** (on the pinned topics). A new release alerts when it is shown to score below
   the best earlier release by more than the margin: on the topics both were scored on, paired,
   the upper betting bound of E[new − (1 − r)·best] is below 0 (for an absolute margin δ:
   E[new − best + δ]). The best earlier release is chosen *after* seeing every earlier mean, so
   the bound is at α_alert / (number of earlier releases) (Bonferroni over the releases the best
   was picked from): picking the luckiest earlier release cannot make alarms more frequent than
   α_alert. (Earlier releases were scored on the index as it was then; the comparison is of
   quality as users saw it, growth of the corpus included.)
2. **Fresh drift** (on fresh topics). Over the last N records of fresh topics (N = ``window``,
   default 5), the weighted least-squares slope of their means (weights: 1 / each mean's variance)
   is tested one-sided against 0 (normal); the rule alerts when p < α_alert *and* the fitted loss
   over the window is at least the margin of the first fitted value. The means of different checks
   are treated as independent; fresh topic sets of consecutive checks can share topics, which
   makes that optimistic, so the rule also needs the loss to matter (the margin).

**Notes** (no alert, exit status unchanged): a new release shown below the best earlier one (the
upper bound of E[new − best] below 0, same α) but not by more than the margin, a rollback say; and
a label recorded before for another system (``--baseline-label v1`` given to another release).

**Repeated checks.** Every append looks again, so over many releases false alarms add up: with
α_alert = 0.01 (the default, five times stricter than a gate's 0.05) the chance of a false alarm
is at most 0.01 per rule and release, ≤ 0.5 expected over 50 releases in the worst case (a release
exactly at the margin each time); the simulation in docs/gate.md measures the rate when every
release is truly as good as the best.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..effects import MMD
from .decide import MIN_FRESH, PASSING, betting_lower, topic_order

#: the alert rules' error rate per rule and release
ALERT_ALPHA = 0.01
#: fresh-drift window (records)
WINDOW = 5


def timeline(records: list, topics_kind: str = "pinned") -> list:
    """Every record of a task and pin on ``topics_kind`` topics, oldest first, less a gate's
    baseline that repeats an earlier point (:func:`_dedupe`)."""
    return _dedupe([r for r in records if r.topics_kind == topics_kind])


def fails(r) -> bool:
    """Whether record ``r`` is a candidate's that did not pass: on the pinned topics, a decision
    other than better or non-inferior; on fresh topics, a decided *worse* (the only fresh decision
    that fails a gate: fresh topics can fail a release, never pass one). Fresh topics shown but not
    decided on (fewer than :data:`~nteval.gate.decide.MIN_FRESH`: no decision recorded, or, in an
    older history, a decision on fewer topics) and fresh inconclusive or non-inferior ones fail
    nothing."""
    if r.role != "candidate":
        return False
    if r.topics_kind == "fresh":
        n = r.details.get("_n", len(r.scores))
        return r.decision == "worse" and r.details.get("decided", True) is not False and n >= MIN_FRESH
    return r.decision not in PASSING


def failed_labels(records: list) -> set[str]:
    """The labels of candidates that failed any of their gates in ``records`` (:func:`fails`)."""
    return {r.label for r in records if fails(r)}


def released(r, failed: set[str] = frozenset()) -> bool:  # type: ignore[assignment]
    """A record of something that went live (see the module); ``failed``: :func:`failed_labels` of
    every record of the pin, all tasks."""
    return r.role != "candidate" or (not fails(r) and r.label not in failed)


def release_line(records: list, topics_kind: str = "pinned", failed: set[str] = frozenset()) -> list:  # type: ignore[assignment]
    """The releases of a task and pin, oldest first (see the module)."""
    return [r for r in timeline(records, topics_kind) if released(r, failed)]


def earlier_releases(rec, before: list) -> list:
    """The releases ``rec`` is compared with: those recorded before it, less the other candidates of
    its own gate (alternatives to one another, not a sequence: which of them passes first must not
    depend on the order they were given in)."""
    return [x for x in before if not (rec.gate_id and x.gate_id == rec.gate_id and x.role == "candidate")]


def _dedupe(line: list) -> list:
    """The line without a gate's baseline that adds nothing: the same label and system with the
    same per-topic scores as an earlier point (the release a later gate compares with, recorded
    again). Everything else is a new observation: a check (the live search measured again, which
    may have changed while nteval's index did not), a baseline whose scores changed, a candidate."""
    seen, out = set(), []
    for r in line:
        key = (r.label, r.system, _digest(r))
        if r.role == "baseline" and key in seen:
            continue
        seen.add(key)
        out.append(r)
    return out


def _digest(r) -> str:
    """A record's per-topic scores (or, read without them, its mean and size) as a short digest."""
    import hashlib
    import json

    what = sorted(r.scores.items()) if r.scores else [r.details.get("_mean"), r.details.get("_n")]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]


def walk(line: list, failed: set[str], mmd: MMD, alpha: float = ALERT_ALPHA):
    """Each point of a pinned release line with the releases before it and rule 1 on it: yields
    (record, released, earlier releases, below-best result or None). A record that is not a
    release (a failed or undecided candidate) is not tested; a starting baseline has nothing
    before it. Runs cut to another depth are another measure: only releases of the same depth are
    compared (a nightly check at depth 50 beside releases at 1,000)."""
    for i, r in enumerate(line):
        is_release = released(r, failed)
        earlier = earlier_releases(r, [x for x in line[:i] if released(x, failed) and x.depth == r.depth])
        yield r, is_release, earlier, below_best(r, earlier, mmd, alpha) if earlier and is_release else None


def below_best(new, earlier: list, mmd: MMD, alpha: float = ALERT_ALPHA) -> dict[str, Any] | None:
    """Rule 1 for record ``new`` against the best of ``earlier`` records (with per-topic scores)."""
    earlier = [r for r in earlier if r.scores and r.id != new.id]
    if not earlier or not new.scores:
        return None
    best = max(earlier, key=lambda r: r.mean)
    qids = sorted(set(best.scores) & set(new.scores))
    if len(qids) < 2:
        return None
    order = topic_order(qids)
    x = np.array([new.scores[q] for q in qids])[order]
    y = np.array([best.scores[q] for q in qids])[order]
    a = alpha / len(earlier)
    if mmd.relative:
        z, lo, hi = x - (1 - mmd.value) * y, -(1 - mmd.value), 1.0
    else:
        z, lo, hi = x - y + mmd.value, -1 + mmd.value, 1 + mmd.value
    upper = -betting_lower(-z, -hi, -lo, a)
    margin = mmd.value * float(y.mean()) if mmd.relative else mmd.value
    # shown below the best at all (E[new − best] < 0, same bound): a note when not by the margin
    below = bool(-betting_lower(-(x - y), -1.0, 1.0, a) < 0)
    out = {"rule": "below-best", "record": new.id, "label": new.label, "best": best.label, "best_record": best.id,
           "mean": round(float(x.mean()), 6), "best_mean": round(float(y.mean()), 6), "margin": round(margin, 6),
           "topics": len(qids), "upper_bound": round(upper, 6), "alpha": alpha, "looks": len(earlier),
           "fired": bool(upper < 0), "below": below}
    out["text"] = (f"release {new.label} ({new.measure} {x.mean():.4f}) is below the best earlier release {best.label} "
                   f"({y.mean():.4f}) by more than the margin ({margin:.4f}) on {len(qids):,} pinned topics (paired "
                   f"betting bound at {alpha:g}/{len(earlier)}, Bonferroni over the earlier releases)")
    if below and not out["fired"]:
        out["note"] = (f"release {new.label} ({new.measure} {x.mean():.4f}) scores below the best earlier release "
                       f"{best.label} ({y.mean():.4f}, {x.mean() - y.mean():+.4f}, shown on {len(qids):,} pinned topics), "
                       f"by less than the margin ({margin:.4f}) or not shown to be more: no alert")
    return out


def fresh_drift(line: list, mmd: MMD, alpha: float = ALERT_ALPHA, window: int = WINDOW) -> dict[str, Any] | None:
    """Rule 2 over the last ``window`` fresh-topic records of the release line."""
    from scipy.stats import norm

    pts = [r for r in line if r.scores][-window:]
    if len(pts) < max(3, window):
        return None
    means = np.array([r.mean for r in pts])
    var = np.array([np.var(list(r.scores.values()), ddof=1) / len(r.scores) if len(r.scores) > 1 else np.nan
                    for r in pts])
    if not np.all(np.isfinite(var)) or np.any(var <= 0):
        return None
    t = np.arange(len(pts), dtype=float)
    w = 1 / var
    tbar = (w * t).sum() / w.sum()
    slope = float((w * (t - tbar) * (means - (w * means).sum() / w.sum())).sum() / (w * (t - tbar) ** 2).sum())
    se = math.sqrt(1 / float((w * (t - tbar) ** 2).sum()))
    p = float(norm.cdf(slope / se))
    start = float((w * means).sum() / w.sum() - slope * tbar)
    loss = -slope * (len(pts) - 1)
    margin = mmd.value * abs(start) if mmd.relative else mmd.value
    fired = bool(p < alpha and loss >= margin)
    return {"rule": "fresh-drift", "records": [r.id for r in pts], "labels": [r.label for r in pts],
            "means": [round(float(m), 6) for m in means], "slope": round(slope, 6), "p": round(p, 6),
            "loss_over_window": round(loss, 6), "margin": round(margin, 6), "alpha": alpha, "fired": fired,
            "text": f"quality on fresh topics drifts down over the last {len(pts)} checks ({', '.join(r.label for r in pts)}"
                    f"): {pts[0].measure} from {start:.4f} by {loss:.4f} (weighted least-squares slope {slope:+.4f} per "
                    f"check, one-sided p = {p:.3g} < {alpha:g}), at least the margin of {margin:.4f}"}


def check_alerts(history, new_records: list, result: dict[str, Any], alpha: float = ALERT_ALPHA,
                 window: int = WINDOW) -> tuple[list[dict[str, Any]], list[str]]:
    """The alerts the records just appended raise (only those that fired), and notes: a new release
    shown below the best earlier one by less than the margin (a rollback, say), a label recorded
    before for another system, a history with no earlier record of the pin (a CI job whose history
    does not outlive it: its alerts can never fire)."""
    mmd = MMD.parse(result.get("spec", {}).get("mmd"))
    task, pin_id = result["task"], result["pin"]["id"]
    on_pin = history.records(pin_id=pin_id, scores=True)
    every = [r for r in on_pin if r.task == task]
    failed = failed_labels(on_pin)
    fired, notes = [], relabelled(on_pin, new_records)
    new_ids = {r.id for r in new_records}
    if all(r.id in new_ids for r in on_pin):
        notes.append(f"{history.where} held no earlier record of pin {pin_id}: nothing to compare this with, and no "
                     "alert can fire yet; a history must outlive the CI job (a shared PostgreSQL database, a cached or "
                     "persistent file: docs/gate.md, In CI)")
    for rec, _, _, a in walk(timeline(every, "pinned"), failed, mmd, alpha):
        if rec.id in new_ids and a is not None:
            if a["fired"]:
                fired.append(a)
            elif a.get("note"):
                notes.append(a["note"])
    if any(r.topics_kind == "fresh" for r in new_records):
        depth = next(r.depth for r in new_records if r.topics_kind == "fresh")
        d = fresh_drift([r for r in release_line(every, "fresh", failed) if r.depth == depth], mmd, alpha, window)
        if d and d["fired"]:
            fired.append(d)
    return fired, notes


def relabelled(records: list, new_records: list) -> list[str]:
    """A note per label of ``new_records`` that earlier records of the pin gave to another system
    (``--baseline-label v1`` reused for another release, say): the history shows both as that label."""
    new_ids = {r.id for r in new_records}
    notes = []
    for label in dict.fromkeys(r.label for r in new_records):
        now = {r.system for r in new_records if r.label == label}
        before = sorted({r.system for r in records if r.label == label and r.id not in new_ids} - now)
        if before:
            notes.append(f"label {label} was recorded before for {', '.join(before)}, now for {', '.join(sorted(now))}: "
                         "the history shows both as release " + label + " (give each release its own label)")
    return notes
