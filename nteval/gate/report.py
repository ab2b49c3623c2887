"""A gate as people read it: the one sentence a release manager acts on, the terminal report, and
the Markdown summary a pull-request comment carries."""
from __future__ import annotations

from typing import Any

from ..evidence import coverage_lines
from ..report.document import _md_escape

VERB = {"better": "is better than", "non-inferior": "is non-inferior to", "worse": "is worse than",
        "inconclusive": "cannot yet be told non-inferior to (or worse than)"}
#: a decision the cross-family rules changed (:mod:`nteval.gate.families`): what NT found, and that it is within
#: the family's measured bias (more topics would not decide it)
ACROSS = {"worse": "is worse under NT than", "better": "is better under NT than", "non-inferior": "is non-inferior under NT to"}
ACTION = {"pass": "PASS — release", "regression": "FAIL — do not release", "inconclusive": "INCONCLUSIVE — not decided"}


def _f(v: float) -> str:
    return f"{v:.4f}" if abs(v) < 0.0995 else f"{v:.3f}"


def _s(v: float) -> str:
    return f"{v:+.4f}"


def _who(result: dict[str, Any], name: str) -> str:
    label = result["labels"].get(name, name)
    return name if label == name else f"{label} ({name})"


def candidate_clause(result: dict[str, Any], name: str) -> str:
    """"v2 (bm25_x) is non-inferior to the live v1 (bm25) for known-item search: RR 0.916 vs 0.919
    (−0.0029, 90 % CI [−0.0080, +0.0021]; margin −0.0460, 5 % of the baseline's score)"."""
    c = result["candidates"][name]
    d = c["pinned"]
    m = result["measure"]
    size = ""
    if c["decision"] == "better" and d["ci"][0] >= d["margin"]:
        size = ", by at least the margin"
    elif c["decision"] == "better" and d["ci"][1] < d["margin"]:
        size = ", by less than the margin"
    elif c["decision"] == "better":  # (say only what the bounds show: the margin lies inside the interval)
        size = f" (by the margin or not: the interval, {_s(d['ci'][0])} to {_s(d['ci'][1])}, holds it)"
    elif c["decision"] == "non-inferior" and d["ci"][1] < 0:
        size = " (it scores lower, but by less than the margin)"
    verb = VERB[c["decision"]]
    fresh = c.get("fresh") or {}
    if c["decision"] == "inconclusive" and d.get("nt_decision") in ACROSS:
        verb, size = ACROSS[d["nt_decision"]], ""  # (the rule's text follows: within the family's measured bias)
    elif c["decision"] == "inconclusive" and fresh.get("across_families"):
        verb = f"{VERB[d['decision']].replace('is ', 'is, on the pinned topics, ', 1)}"
    text = (f"{_who(result, name)} {verb} the live {_who(result, result['baseline'])} for "
            f"{result['task']} search{size}: {m} {_f(d['candidate_mean'])} vs {_f(d['baseline_mean'])} "
            f"({_s(d['diff'])}, {d['ci_level'] * 100:.0f} % CI [{_s(d['ci'][0])}, {_s(d['ci'][1])}]; margin "
            f"{d['margin']:.4f}, {d['margin_rule']}) on {d['topics']:,} pinned topics")
    if (d.get("title_gain") or {}).get("changed"):
        text += f" ({d['title_gain']['changed']})"
    if c["decided"].startswith("across families, on the fresh"):
        text += (f", but worse under NT on {fresh['topics']:,} fresh topics ({_s(fresh['diff'])}, "
                 f"{fresh['ci_level'] * 100:.0f} % CI [{_s(fresh['ci'][0])}, {_s(fresh['ci'][1])}]), within the family's "
                 "measured bias: only judgments decide it")
    if c["decided"].startswith("on the fresh"):
        f = c["fresh"]
        text += (f", and worse on {f['topics']:,} fresh topics ({_s(f['diff'])}, {f['ci_level'] * 100:.0f} % CI "
                 f"[{_s(f['ci'][0])}, {_s(f['ci'][1])}])")
    return text


def headline(result: dict[str, Any]) -> dict[str, Any]:
    """One sentence a release manager can act on, and its parts."""
    cands = result["candidates"]
    outcome = result["outcome"]
    head = ACTION[outcome]
    if len(cands) == 1:
        name = next(iter(cands))
        text = f"{head}: {candidate_clause(result, name)}."
        fam = cands[name].get("family") or {}
        for extra in (fam.get("rule"), fam.get("caution"), _title_evidence(cands[name])):
            if extra:
                text = text[:-1] + f"; {extra}."
        more = cands[name]["pinned"].get("more_topics") if cands[name]["decision"] == "inconclusive" else None
        if more and more.get("topics"):
            eligible = result["pin"].get("eligible")
            text += (f" About {more['topics']:,} topics would likely decide it (see below)."
                     if eligible is None or more["topics"] <= eligible else
                     f" About {more['topics']:,} topics would likely decide it, more than this index can give "
                     f"({eligible:,}).")
    else:
        by: dict[str, list[str]] = {}
        for n, c in cands.items():
            by.setdefault(c["decision"], []).append(n)
        worst = "worse" if outcome == "regression" else ("inconclusive" if outcome == "inconclusive" else None)
        if worst:
            lead = by[worst]
            text = (f"{head}: {len(lead)} of {len(cands)} candidates {'is' if len(lead) == 1 else 'are'} "
                    f"{'worse than' if worst == 'worse' else 'not decided against'} the live "
                    f"{_who(result, result['baseline'])} for {result['task']} search ("
                    + "; ".join(f"{n}: {result['measure']} {_s(cands[n]['pinned']['diff'])}" for n in lead) + ")")
        else:
            text = (f"{head}: all {len(cands)} candidates are better than or non-inferior to the live "
                    f"{_who(result, result['baseline'])} for {result['task']} search")
        rest = [f"{n} {c['decision']}" for n, c in cands.items() if not worst or c["decision"] != worst]
        text += (f"; the others: {', '.join(rest)}" if worst and rest else (f" ({', '.join(rest)})" if rest else "")) + "."
        across = [f"{n}: {f.get('rule') or f['caution']}" for n, c in cands.items()
                  if (f := c.get("family") or {}) and (f.get("rule") or f.get("caution"))]
        if across:
            text = text[:-1] + "; across families — " + "; ".join(across) + "."
        leaks = [f"{n}: {t}" for n, c in cands.items() if (t := _title_evidence(c))]
        if leaks:
            text = text[:-1] + "; title leak — " + "; ".join(leaks) + "."
    return {"outcome": outcome, "text": text}


def _title_evidence(c: dict[str, Any]) -> str | None:
    """The title-leak guard's evidence on a candidate, when the headline does not already say it
    (a decision it changed names it in the candidate's clause)."""
    tg = c["pinned"].get("title_gain") or {}
    return tg.get("evidence") if tg.get("evidence") and not tg.get("changed") else None


def extend_command(result: dict[str, Any], needed: int, used: int) -> str:
    """The `pin --extend` command that would likely give ``needed`` topics where ``used`` of the
    pin's sampled documents gave topics (not every sampled document makes a topic of each task)."""
    import math

    sampled = int(result["pin"].get("sampled") or used)
    n = max(sampled + 1, math.ceil(needed * sampled / max(used, 1)))
    eligible = result["pin"].get("eligible")
    if eligible is not None and sampled >= eligible:
        # (new user, turn 7, F8: a 399-record index was asked for 1,775 topics)
        return (f"more topics than this index can give (the pin holds all {eligible:,} of its documents that can be "
                "topics): a bigger collection, or judgments, would decide it")
    if eligible is not None and n > eligible:
        return (f"more topics than this index can give ({eligible:,} of its documents can be topics): nteval pin "
                f"--extend {result['pin']['path']} --index {result['index']} --topics {eligible} --out PIN2 takes them "
                "all (it may still not decide; a bigger collection, or judgments, would)")
    return (f"nteval pin --extend {result['pin']['path']} --index {result['index']} --topics {n} --out PIN2")


def _line_for(result: dict[str, Any], name: str, kind: str) -> list[str]:
    s = result["sets"].get(kind) or {}
    d = (s.get("candidates") or {}).get(name)
    if d is None:
        return []
    m = result["measure"]
    lines = [f"    {kind:<7} {d['topics']:>6,} topics  {m} {_f(d['candidate_mean'])} vs {_f(d['baseline_mean'])}  diff "
             f"{_s(d['diff'])} [{_s(d['ci'][0])}, {_s(d['ci'][1])}]  margin {d['margin']:.4f}  → {d['decision']}"
             + ("" if s.get("decided", True) else "  (shown, not decided on)")]
    more = d.get("more_topics")
    if more and more.get("topics") and kind == "fresh":
        lines.append(f"            inconclusive: {more['note']}: this gate with --fresh {more['topics']} (fresh topics "
                     "come from the documents added since the pin: more appear with each update)")
    elif more and more.get("topics"):
        command = extend_command(result, more["topics"], d["topics"])
        lines.append(f"            inconclusive: {more['note']}: {command}"
                     + (", then this gate with --pin PIN2" if "--out PIN2" in command else ""))
    elif more:
        lines.append(f"            inconclusive: {more['note']}")
    return lines


def gate_lines(result: dict[str, Any]) -> list[str]:
    """The terminal report: the headline first, then per candidate its decisions on pinned and
    fresh topics, the gap between them, churn, the topics that moved most; then the method."""
    lines = [result["headline"]["text"], ""]
    pinned = result["sets"]["pinned"]
    lines.append(f"GATE ({result['task']} search, {result['measure']}; pin {result['pin']['id']}, topic set "
                 f"{result['pin']['topic_set']}) — baseline {_who(result, result['baseline'])}"
                 + (f" [{result['engines'].get(result['baseline'])}]" if result["engines"].get(result["baseline"]) else ""))
    if result.get("judged_by"):
        lines.append(f"  judged by: {result['judged_by']}")
    if result.get("ceiling"):
        lines.append(f"  ceiling: {result['ceiling']['note']}")
    lines += coverage_lines(result.get("coverage"))
    lines.append(f"  pinned topics: {pinned['status']['note']}; {pinned['topics']:,} used"
                 + ("" if not pinned.get("condensed") else
                    f" (the index holds {result['pin']['documents_added_since']:,} documents added since the pin: "
                    + pinned["condensed"] + ")"))
    short_runs = {n: a for n, a in pinned["status"].get("answered", {}).items() if a < pinned["topics"]}
    if short_runs:
        lines.append("  not every topic answered: " + ", ".join(f"{n} {a:,} of {pinned['topics']:,}" for n, a in short_runs.items())
                     + " (a topic a system does not answer scores 0)")
    fresh = result["sets"].get("fresh")
    if fresh:
        st = fresh["status"]
        made = (f"{fresh['topics']:,} made from {st['eligible_new_documents']:,} documents added since the pin (asked "
                f"{st['asked']:,})" if "eligible_new_documents" in st else f"none made (asked {st['asked']:,})")
        lines.append(f"  fresh topics: {made}" + (f"; {fresh['why_not']}" if fresh.get("why_not") else ""))
    for name, c in result["candidates"].items():
        eng = result["engines"].get(name)
        lines.append(f"  candidate {_who(result, name)}" + (f" [{eng}]" if eng else "") + f": {c['decision'].upper()} "
                     f"({c['decided']})")
        lines += _line_for(result, name, "pinned") + _line_for(result, name, "fresh")
        if c.get("gap"):
            lines.append(f"    gap: {c['gap']['note']}")
        d = c["pinned"]
        ch = d["churn"]
        lines.append(f"    churn: RBO {ch['rbo']:.3f}, overlap@10 {ch['overlap@10']:.3f} ({ch['identical_top10']:,} of "
                     f"{ch['topics']:,} topics keep the same top 10)")
        lines += _family_lines(c.get("family"))
        leak = (pinned["status"].get("title_leak") or {}).get(name) or {}
        if leak.get("undecided"):
            lines.append(f"    title leak: {leak['undecided']} (docs/bring-your-own.md)")
        uj = d.get("unjudged_top10")
        if uj and uj["added_after_pin"]:
            lines.append(f"    unjudged: {uj['added_after_pin']:,} of its {uj['hits']:,} top-10 hits on pinned topics "
                         f"({uj['share']:.1%}) are documents added after the pin (left out of the condensed rankings "
                         "the pinned topics are scored on; the fresh topics score them)")
        lines += _moved(result, d)
    rule = result["rule"]
    lines.append(f"  method: {result['candidates'][next(iter(result['candidates']))]['pinned']['method']}; margin "
                 f"{rule['margin']}; {rule['multiplicity']}. Decisions: better (lower bound > 0), non-inferior (the loss "
                 "is shown smaller than the margin), worse (upper bound < 0, non-inferiority not shown), inconclusive "
                 "(neither). Exit status: 0 pass, 3 regression, 4 inconclusive, 5 pass with a history alert, 2 bad input.")
    hist = result.get("history")
    if hist:
        lines.append(f"  history: recorded in {hist['where']} (records {', '.join(map(str, hist['records']))})")
        lines += [f"  ALERT: {a['text']}" for a in hist.get("alerts", [])]
        lines += [f"  note: {n}" for n in hist.get("notes", [])]
    return lines


def family_line(fam: dict[str, Any] | None) -> str | None:
    """What the gate knows of a candidate's family against the baseline's and what the rules allowed
    (new user, turn 7, F8: a hybrid's BETTER said nothing of its family on the terminal), or None."""
    if not fam:
        return None
    from .families import _name

    pair = fam.get("pair") or {}
    cf = pair.get("candidate_family", fam.get("candidate_family"))
    bf = pair.get("baseline_family", fam.get("baseline_family"))
    parts = [f"{_name(cf)} against {_name(bf)}"]
    if fam.get("overstatement") is not None:
        parts.append(f"the study allows up to {fam['overstatement'] * 100:.0f} points of overstatement and "
                     f"{fam['understatement'] * 100:.0f} of understatement")
    if fam.get("remains"):
        parts.append(fam["remains"])
    elif fam.get("rule"):
        parts.append(fam["rule"])
    return "; ".join(parts)


def _family_lines(fam: dict[str, Any] | None) -> list[str]:
    line = family_line(fam)
    return [f"    family: {line}"] if line else []


def _moved(result: dict[str, Any], d: dict[str, Any], n: int = 3) -> list[str]:
    m = result["measure"]
    out = []
    for way in ("worse", "better"):
        rows = d["changed"][way][:n]
        if not rows:
            continue
        out.append(f"    most {way} topics (of {len(d['changed'][way])} listed in gate.json):")
        for r in rows:
            if "rank" in r:
                b, c = r["rank"]
                what = f"rank of its document {_rank(b)} → {_rank(c)}"
            else:
                b, c = r["relevant_in_top10"]
                what = f"pseudo-relevant in the top 10: {b} → {c} of {r['relevant']}"
            out.append(f"      {r['qid']}: {m} {r[m][0]:.3f} → {r[m][1]:.3f}, {what}: {_clip(r['query'])}")
    return out


def _rank(r: int | None) -> str:
    return "not retrieved" if r is None else str(r)


def _clip(text: str, n: int = 90) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def md(text: Any) -> str:
    """Text (a name, a label, a query, a sentence holding them) safe in gate.md and check.md: ``<``,
    ``>`` and ``&`` as entities (a name ``next<!--`` would hide the rest of a pull-request
    comment), no live link, and ``|``, `````` ` `````` and ``*`` escaped (a table cell, a code span,
    emphasis)."""
    return _md_escape(str(text).replace("\\", "\\\\")).replace("|", "\\|").replace("`", "\\`").replace("*", "\\*")


def _engine(result: dict[str, Any], name: str) -> str:
    eng = result["engines"].get(name)
    return f" [{md(eng)}]" if eng else ""


def markdown(result: dict[str, Any]) -> str:
    """The gate as Markdown for a pull-request comment: the headline, a table per topic set, the
    topics that moved most, the method. Every name, label, query and sentence escaped (:func:`md`)."""
    m = result["measure"]
    icon = {"pass": "✅", "regression": "❌", "inconclusive": "⚠️"}[result["outcome"]]
    alerts = (result.get("history") or {}).get("alerts") or []
    title = result["outcome"]
    if alerts and result["outcome"] == "pass":
        icon, title = "⚠️", "pass, with a history alert"
    level = next(iter(result["candidates"].values()))["pinned"]["ci_level"]
    lines = [f"### {icon} nteval gate: {title}", "", md(result["headline"]["text"]), "", *_history_md(result),
             f"Task: **{result['task']}** search ({m}); pin `{result['pin']['id']}` (topic set "
             f"`{result['pin']['topic_set']}`); baseline **{md(_who(result, result['baseline']))}**"
             f"{_engine(result, result['baseline'])}.", "",
             *([f"ceiling: {md(result['ceiling']['note'])}", ""] if result.get("ceiling") else []),
             *([f"coverage: {md(result['coverage']['text'])}"
                + (f" — **CAVEAT:** {md(result['coverage']['caveat'])}" if result["coverage"].get("caveat") else ""), ""]
               if result.get("coverage") else []),
             f"| candidate | topics | {m} candidate | {m} baseline | difference [{level * 100:.0f} % CI] | margin | decision |",
             "|---|---|---|---|---|---|---|"]
    for name, c in result["candidates"].items():
        for kind in ("pinned", "fresh"):
            d = c.get(kind)
            if d:
                lines.append(f"| {md(_who(result, name))}{_engine(result, name)} ({kind}) | {d['topics']:,} | "
                             f"{_f(d['candidate_mean'])} | {_f(d['baseline_mean'])} | {_s(d['diff'])} [{_s(d['ci'][0])}, "
                             f"{_s(d['ci'][1])}] | {d['margin']:.4f} | **{d['decision']}**"
                             + (f" (across families; NT alone: {d['nt_decision']})" if d.get("across_families") else "")
                             + " |")
    for name, c in result["candidates"].items():
        d = c["pinned"]
        ch = d["churn"]
        fam = family_line(c.get("family"))
        leak = ((result["sets"]["pinned"]["status"].get("title_leak") or {}).get(name) or {}).get("undecided")
        lines += ["", f"**{md(_who(result, name))}** — churn: RBO {ch['rbo']:.3f}, overlap@10 {ch['overlap@10']:.3f}."
                  + (f" Gap: {md(c['gap']['note'])}." if c.get("gap") else "")
                  + (f" Family: {md(fam)}." if fam else "") + (f" Title leak: {md(leak)}." if leak else "")]
        lines += _moved_md(result, d)
    lines += ["", f"<sub>{md(result['candidates'][next(iter(result['candidates']))]['pinned']['method'])}; margin "
                  f"{md(result['rule']['margin'])}; {md(result['rule']['multiplicity'])}.</sub>"]
    return "\n".join(lines) + "\n"


def _history_md(result: dict[str, Any]) -> list[str]:
    """The history's alerts and notes as Markdown quotes (nothing without a history)."""
    hist = result.get("history") or {}
    alerts, notes = hist.get("alerts") or [], hist.get("notes") or []
    return ([*[f"> **ALERT** (exit status 5): {md(a['text'])}" for a in alerts], *([""] if alerts else []),
             *[f"> note: {md(n)}" for n in notes], *([""] if notes else [])])


def _moved_md(result: dict[str, Any], d: dict[str, Any]) -> list[str]:
    m = result["measure"]
    lines: list[str] = []
    for way in ("worse", "better"):
        rows = d["changed"][way]
        if not rows:
            continue
        lines += ["", f"<details><summary>{len(rows)} most {way} topics</summary>", "",
                  f"| topic | query | {m} | " + ("rank of the known item |" if result["task"] == "known-item"
                                               else "pseudo-relevant in top 10 |"), "|---|---|---|---|"]
        for r in rows:
            detail = (f"{_rank(r['rank'][0])} → {_rank(r['rank'][1])}" if "rank" in r else
                      f"{r['relevant_in_top10'][0]} → {r['relevant_in_top10'][1]} of {r['relevant']}")
            lines.append(f"| {md(r['qid'])} | {md(_clip(r['query'], 120))} | {r[m][0]:.3f} → {r[m][1]:.3f} | {detail} |")
        lines += ["", "</details>"]
    return lines


def check_markdown(result: dict[str, Any]) -> str:
    """A check as Markdown (check.md): what was measured, the alerts and notes, the history."""
    name = result["system"]
    hist = result["history"]
    icon, title = ("⚠️", "alert") if hist["alerts"] else ("✅", "recorded")
    lines = [f"### {icon} nteval check: {title}", "", md(check_line(result)), "", *_history_md(result),
             f"Task: **{result['task']}** search ({result['measure']}); pin `{result['pin']['id']}` (topic set "
             f"`{result['pin']['topic_set']}`); system **{md(_who(result, name))}**{_engine(result, name)}.", "",
             f"| topics | count | {result['measure']} [95 % interval] |", "|---|---|---|"]
    for kind, st in result["sets"].items():
        if "mean" in st:
            lines.append(f"| {kind} | {st['topics']:,} | {st['mean']:.4f} [{st['ci95'][0]:.4f}, {st['ci95'][1]:.4f}] |")
    lines += ["", f"Recorded in {md(hist['where'])} (records {', '.join(map(str, hist['records']))})."]
    return "\n".join(lines) + "\n"


def check_line(result: dict[str, Any]) -> str:
    """A check's first line: the system, its score on each topic set, and whether it alerts."""
    name = result["system"]
    scored = [f"{result['measure']} {st['mean']:.4f} [{st['ci95'][0]:.4f}, {st['ci95'][1]:.4f}] on {st['topics']:,} "
              f"{kind} topics" for kind, st in result["sets"].items() if "mean" in st]
    alerts = result["history"]["alerts"]
    return (f"{'ALERT' if alerts else 'RECORDED'} — {_who(result, name)}: {'; '.join(scored)}"
            + (f"; {alerts[0]['text']}" if alerts else "; no alert")
            + (f"; {result['encoder_note']}" if result.get("encoder_note") else "") + ".")
