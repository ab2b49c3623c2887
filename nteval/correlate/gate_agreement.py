"""Does the release gate decide as human judgments would? (``nteval correlate``'s ``gate`` section,
and the validation study's.)

For every ordered pair of systems (baseline b, candidate c) the gate's own rule
(:func:`nteval.gate.decide.decide`: betting bounds, the 5 % margin, α = 0.05) decides on the NT
per-topic scores of the verdict (better, non-inferior, worse, inconclusive). The human decision is
the same four-way rule on the human per-topic AP of the judged topics, with the **reference
test** a release manager with judgments would run: Student's paired t bounds (one-sided, α = 0.05)
on ``c − b`` (better, worse) and on ``c − (1 − r)·b`` (non-inferior, r the margin's share).

- *pass* = better or non-inferior; *fail* = worse.
- **agreement where both decide**: of the pairs where both the gate and the humans pass or fail,
  the share where they say the same;
- **false pass**: of the pairs where the humans show a loss beyond the margin (the t upper bound
  of ``c − (1 − r)·b`` below 0), the share the gate passes;
- **false alarm**: of the pairs the humans pass, the share the gate calls worse.

The human side has only the judged topics (tens), the gate's NT side a thousand: the human test
decides fewer pairs. Its decisions are the humans' on these topics, not the truth.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..gate.decide import DecisionRule, decide
from ..stats import rate_interval, rate_text

REFERENCE_TEST = ("Student's paired t bounds, one-sided, alpha 0.05, on the human per-topic AP: better if the lower "
                  "bound of c − b > 0, non-inferior if the lower bound of c − (1 − r)·b > 0 (r: the margin's share), "
                  "worse if the upper bound of c − b < 0 and not non-inferior")
PASS = ("better", "non-inferior")


def human_decision(base: np.ndarray, cand: np.ndarray, share: float = 0.05, alpha: float = 0.05) -> dict[str, Any]:
    """The reference test's decision on paired human scores: the gate's four-way rule with Student's t
    bounds; ``beyond_margin``: the upper bound of ``c − (1 − share)·b`` is below 0 (a loss larger
    than the margin is shown)."""
    from scipy.stats import t as student

    b, c = np.asarray(base, float), np.asarray(cand, float)
    n = b.size
    q = float(student.ppf(1 - alpha, n - 1)) if n > 1 else float("inf")

    def bounds(x: np.ndarray) -> tuple[float, float]:
        m = float(x.mean())
        se = float(x.std(ddof=1)) / np.sqrt(n) if n > 1 else float("inf")
        if se == 0:  # identical on every topic: the mean is exact
            return m, m
        return m - q * se, m + q * se

    lo_d, hi_d = bounds(c - b)
    lo_ni, hi_ni = bounds(c - (1 - share) * b)
    if lo_d > 0:
        d = "better"
    elif lo_ni > 0:
        d = "non-inferior"
    elif hi_d < 0:
        d = "worse"
    else:
        d = "inconclusive"
    return {"decision": d, "beyond_margin": bool(hi_ni < 0)}


def gate_agreement(names: list[str], nt: np.ndarray, nt_qids: list[str], human: np.ndarray,
                   share: float = 0.05, alpha: float = 0.05, pairs: list[tuple[str, str]] | None = None,
                   check_of: Callable[[str, str], dict[str, Any] | None] | None = None) -> dict[str, Any]:
    """The gate's decisions on NT scores (``nt``: systems × NT topics, rows in ``names`` order, topics
    ``nt_qids``) against the reference test's on human scores (``human``: systems × judged topics),
    over every ordered pair (or ``pairs``: (baseline, candidate) names). Scores are per topic, in
    [0, 1]. ``check_of(baseline, candidate)``: what the study says of the pair's families
    (:func:`nteval.gate.families.family_check`), whose rules the gate applies
    (:func:`nteval.gate.families.apply_rules`: an encoder the references do not contain judged with
    the leave-model-out evidence); None: NT's decision alone. Returns the counts, the three rates,
    each pair's two decisions, and the method."""
    from ..gate.families import apply_rules

    rule = DecisionRule.of(f"{share * 100:g}%", alpha)
    index = {n: i for i, n in enumerate(names)}
    todo = pairs if pairs is not None else [(b, c) for b in names for c in names if b != c]
    rows = []
    for b, c in todo:
        dec = decide(nt[index[b]], nt[index[c]], nt_qids, rule)
        nt_alone = dec["decision"]
        if check_of is not None:
            apply_rules(check_of(b, c), dec, dict(zip(nt_qids, nt[index[b]].tolist())),
                        dict(zip(nt_qids, nt[index[c]].tolist())))
        h = human_decision(human[index[b]], human[index[c]], share, alpha)
        rows.append({"baseline": b, "candidate": c, "gate": dec["decision"], "human": h["decision"],
                     "human_beyond_margin": h["beyond_margin"],
                     **({"nt_alone": nt_alone} if nt_alone != dec["decision"] else {})})
    rules = ("; the cross-family rules of the gate applied (its family's measured bias; an encoder the references do "
             "not contain: the leave-model-out study's)" if check_of is not None else "")
    return {**tally(rows), "method": {"gate": "nteval gate's decide() on the NT per-topic scores (betting bounds, "
                                          f"margin {share * 100:g} % of the baseline's score, alpha {alpha:g}){rules}",
                                  "reference_test": REFERENCE_TEST.replace("alpha 0.05", f"alpha {alpha:g}")}}


def tally(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts and rates of pairs' two decisions (rows: ``baseline``, ``candidate``, ``gate``,
    ``human``, ``human_beyond_margin``), and the rows."""
    both = [r for r in rows if r["gate"] != "inconclusive" and r["human"] != "inconclusive"]
    agree = [r for r in both if (r["gate"] in PASS) == (r["human"] in PASS)]
    beyond = [r for r in rows if r["human_beyond_margin"]]
    false_pass = [r for r in beyond if r["gate"] in PASS]
    human_pass = [r for r in rows if r["human"] in PASS]
    false_alarm = [r for r in human_pass if r["gate"] == "worse"]

    def rate(k: list, n: list) -> float | None:
        return round(len(k) / len(n), 4) if n else None

    return {"pairs": len(rows), "both_decide": len(both), "agree": len(agree), "agreement": rate(agree, both),
            "human_loss_beyond_margin": len(beyond), "false_pass": len(false_pass),
            "false_pass_rate": rate(false_pass, beyond), "false_pass_ci": rate_interval(len(false_pass), len(beyond)),
            "human_pass": len(human_pass), "false_alarm": len(false_alarm), "false_alarm_rate": rate(false_alarm, human_pass),
            "gate_decided": sum(r["gate"] != "inconclusive" for r in rows),
            "human_decided": sum(r["human"] != "inconclusive" for r in rows),
            "false_passes": [(r["baseline"], r["candidate"]) for r in false_pass],
            "false_alarms": [(r["baseline"], r["candidate"]) for r in false_alarm],
            "rows": rows}


def agreement_line(g: dict[str, Any], verdict: str) -> str:
    """One line for a person: agreement where both decide, false pass, false alarm."""
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x * 100:.1f} %"

    return (f"gate decisions on the {verdict} verdict vs the human ones ({g['pairs']:,} ordered pairs): agree on pass/fail "
            f"in {pct(g['agreement'])} of the {g['both_decide']:,} pairs both decide; false pass "
            f"{rate_text(g['false_pass_rate'], g.get('false_pass_ci'))} ({g['false_pass']} of the "
            f"{g['human_loss_beyond_margin']} pairs the humans show losing beyond the margin; exact 95 % interval, pairs "
            f"taken as independent); "
            f"false alarm {pct(g['false_alarm_rate'])} ({g['false_alarm']} of the {g['human_pass']} pairs the humans pass)")
