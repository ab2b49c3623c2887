"""A gate as people read it: the one sentence a release manager acts on, the terminal report, and
the Markdown summary a pull-request comment carries."""
from __future__ import annotations

from typing import Any

VERB = {"better": "is better than", "non-inferior": "is non-inferior to", "worse": "is worse than",
        "inconclusive": "cannot yet be told non-inferior to (or worse than)"}
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
    if c["decision"] == "better" and d["smaller_than_margin"]:
        size = ", by less than the margin"
    elif c["decision"] == "better":
        size = ", by at least the margin"
    elif c["decision"] == "non-inferior" and d["ci"][1] < 0:
        size = " (it scores lower, but by less than the margin)"
    text = (f"{_who(result, name)} {VERB[c['decision']]} the live {_who(result, result['baseline'])} for "
            f"{result['task']} search{size}: {m} {_f(d['candidate_mean'])} vs {_f(d['baseline_mean'])} "
            f"({_s(d['diff'])}, {d['ci_level'] * 100:.0f} % CI [{_s(d['ci'][0])}, {_s(d['ci'][1])}]; margin "
            f"{_s(-d['margin'])}, {d['margin_rule']}) on {d['topics']:,} pinned topics")
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
        if cands[name].get("bias") and cands[name]["decision"] != "worse":
            text = text[:-1] + f"; {cands[name]['bias']['text']}."
        more = cands[name]["pinned"].get("more_topics") if cands[name]["decision"] == "inconclusive" else None
        if more and more.get("topics"):
            text += f" About {more['topics']:,} topics would likely decide it (see below)."
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
    return {"outcome": outcome, "text": text}


def extend_command(result: dict[str, Any], needed: int, used: int) -> str:
    """The `pin --extend` command that would likely give ``needed`` topics where ``used`` of the
    pin's sampled documents gave topics (not every sampled document makes a topic of each task)."""
    import math

    sampled = int(result["pin"].get("sampled") or used)
    n = max(sampled + 1, math.ceil(needed * sampled / max(used, 1)))
    return (f"nteval pin --extend {result['pin']['path']} --index {result['index']} --topics {n} --out PIN2")


def _line_for(result: dict[str, Any], name: str, kind: str) -> list[str]:
    s = result["sets"].get(kind) or {}
    d = (s.get("candidates") or {}).get(name)
    if d is None:
        return []
    m = result["measure"]
    lines = [f"    {kind:<7} {d['topics']:>6,} topics  {m} {_f(d['candidate_mean'])} vs {_f(d['baseline_mean'])}  diff "
             f"{_s(d['diff'])} [{_s(d['ci'][0])}, {_s(d['ci'][1])}]  margin {_s(-d['margin'])}  → {d['decision']}"
             + ("" if s.get("decided", True) else "  (shown, not decided on)")]
    more = d.get("more_topics")
    if more and more.get("topics") and kind == "fresh":
        lines.append(f"            inconclusive: {more['note']}: this gate with --fresh {more['topics']} (fresh topics "
                     "come from the documents added since the pin: more appear with each update)")
    elif more and more.get("topics"):
        lines.append(f"            inconclusive: {more['note']}: {extend_command(result, more['topics'], d['topics'])}, "
                     "then this gate with --pin PIN2")
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
    lines.append(f"  pinned topics: {pinned['status']['note']}; {pinned['topics']:,} used"
                 + ("" if not result["pin"]["index_changed"] else
                    " (the index changed since the pin: " + pinned.get("condensed", "") + ")"))
    short_runs = {n: a for n, a in pinned["status"].get("answered", {}).items() if a < pinned["topics"]}
    if short_runs:
        lines.append("  not every topic answered: " + ", ".join(f"{n} {a:,} of {pinned['topics']:,}" for n, a in short_runs.items())
                     + " (a topic a system does not answer scores 0)")
    fresh = result["sets"].get("fresh")
    if fresh:
        st = fresh["status"]
        lines.append(f"  fresh topics: {fresh['topics']:,} made from {st['eligible_new_documents']:,} documents added since "
                     f"the pin (asked {st['asked']:,})" + (f"; {fresh['why_not']}" if fresh.get("why_not") else ""))
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


def markdown(result: dict[str, Any]) -> str:
    """The gate as Markdown for a pull-request comment: the headline, a table per topic set, the
    topics that moved most, the method."""
    m = result["measure"]
    icon = {"pass": "✅", "regression": "❌", "inconclusive": "⚠️"}[result["outcome"]]
    alerts = (result.get("history") or {}).get("alerts") or []
    notes = (result.get("history") or {}).get("notes") or []
    title = result["outcome"]
    if alerts and result["outcome"] == "pass":
        icon, title = "⚠️", "pass, with a history alert"
    lines = [f"### {icon} nteval gate: {title}", "", result["headline"]["text"], "",
             *[f"> **ALERT** (exit status 5): {a['text']}" for a in alerts], *([""] if alerts else []),
             *[f"> note: {n}" for n in notes], *([""] if notes else []),
             f"Task: **{result['task']}** search ({m}); pin `{result['pin']['id']}` (topic set "
             f"`{result['pin']['topic_set']}`); baseline **{_who(result, result['baseline'])}**.", "",
             f"| candidate | topics | {m} candidate | {m} baseline | difference [CI] | margin | decision |",
             "|---|---|---|---|---|---|---|"]
    for name, c in result["candidates"].items():
        for kind in ("pinned", "fresh"):
            d = c.get(kind)
            if d:
                lines.append(f"| {_who(result, name)} ({kind}) | {d['topics']:,} | {_f(d['candidate_mean'])} | "
                             f"{_f(d['baseline_mean'])} | {_s(d['diff'])} [{_s(d['ci'][0])}, {_s(d['ci'][1])}] | "
                             f"{_s(-d['margin'])} | **{d['decision']}** |")
    for name, c in result["candidates"].items():
        d = c["pinned"]
        ch = d["churn"]
        lines += ["", f"**{_who(result, name)}** — churn: RBO {ch['rbo']:.3f}, overlap@10 {ch['overlap@10']:.3f}."
                  + (f" Gap: {c['gap']['note']}." if c.get("gap") else "")]
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
                q = _clip(r["query"], 120).replace("|", "\\|")
                lines.append(f"| {r['qid']} | {q} | {r[m][0]:.3f} → {r[m][1]:.3f} | {detail} |")
            lines += ["", "</details>"]
    lines += ["", f"<sub>{result['candidates'][next(iter(result['candidates']))]['pinned']['method']}; margin "
                  f"{result['rule']['margin']}; {result['rule']['multiplicity']}.</sub>"]
    return "\n".join(lines) + "\n"
