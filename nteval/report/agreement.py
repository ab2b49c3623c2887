"""Reports for ``nteval correlate``: scatter PNGs (paper's Figure 2), report.md, report.tex
(booktabs tables for a paper) and a self-contained report.html (images inlined) a person reads:
verdicts in plain words first, then figures, tables, settings and versions."""
from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from ..answer import bias_groups, disagreement_groups, disagreement_head
from ..atomic import write_text
from ..stats import rate_text
from .caveats import caveat_blocks
from .document import Block, html_page, inline_html, to_html, to_latex, to_markdown
from .plots import scatter


def _fmt(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def _ci(ci: Any) -> str:
    return "n/a" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def pair_label(p: dict[str, Any]) -> str:
    return f"NT {p['nt']} {p['nt_measure']} vs human {p['human_measure']}"


def _scatters(report: dict[str, Any], out: Path) -> list[tuple[dict[str, Any], str]]:
    """One scatter per (NT measure, human measure) pair: (pair, file name)."""
    images = []
    names = report["systems"]
    for p in report["pairs"]:
        s = p["stats"]
        fname = f"scatter_{p['nt']}_{p['nt_measure']}_vs_human_{p['human_measure']}.png".replace("@", "_at_")
        human = [p["human_scores"][n] for n in names]
        scatter([p["nt_scores"][n] for n in names], human, names,
                (f"NT {p['nt']} {p['nt_measure']}", f"human {p['human_measure']}",
                 f"{pair_label(p)}\nPearson {_fmt(s['pearson']['value'])}, Spearman {_fmt(s['spearman']['value'])}, "
                 f"Kendall τ-b {_fmt(s['kendall']['value'])}"), out / fname, diagonal=False,
                small=len({round(v, 6) for v in human}) <= 2)
        images.append((p, fname))
    return images


def write_reports(report: dict[str, Any], out: Path) -> None:
    out = Path(out)
    images = _scatters(report, out)
    blocks = summary_blocks(report)
    md = (to_markdown(blocks, escape_html=True) + "\n"
          + "\n".join(f"![{html.escape(pair_label(p), quote=False)}]({f})" for p, f in images) + "\n\n"
          + to_markdown(settings_blocks(report), escape_html=True))
    write_text(out / "report.md", md)
    write_text(out / "report.tex", to_latex(blocks, f"nteval correlate: {report['index']}"))
    write_text(out / "report.html", html_page("nteval correlate: " + Path(report["index"]).name,
                                              _html_body(report, blocks, [(p, out / f) for p, f in images])))


def _figure(p: dict[str, Any], png: Path) -> str:
    data = base64.b64encode(png.read_bytes()).decode()
    k = p["stats"]["kendall"]["value"]
    caption = f"{pair_label(p)}: one point per system. Kendall τ-b {_fmt(k)}. {_plain_tau(k)}"
    return (f"<figure><img alt='{html.escape(pair_label(p))}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{inline_html(caption)}</figcaption></figure>")


def _html_body(r: dict[str, Any], blocks: list[Block], images: list[tuple[dict[str, Any], Path]]) -> str:
    """Title and provenance line, the bottom line, the caveats, the verdicts, the figures (small
    multiples), the tables, then settings and versions."""
    prov = r.get("provenance") or {}
    split = len(_lead_blocks(r))  # what comes before the figures
    head = (f"<h1>Can NT rank these systems like human judges?</h1><p class='meta'>nteval correlate on "
            f"<code>{html.escape(r['index'])}</code>: {len(r['systems'])} systems, {r['human']['judged_topics']} "
            f"judged human topics. Generated <time>{html.escape(prov.get('generated', 'n/a'))}</time> by nteval "
            f"{html.escape(str(prov.get('nteval', '?')))}.</p>")
    # one figure per row, at the page's full width (60rem: the PNGs' own 960 px), its labels readable;
    # not a grid of thumbnails
    figures = "<h2>NT scores against human scores</h2>\n" + "\n".join(_figure(p, png) for p, png in images)
    return "\n".join([head, to_html(blocks[:split]), figures, to_html(blocks[split:] + settings_blocks(r))])


def settings_blocks(r: dict[str, Any]) -> list[Block]:
    """What was run, on what, with which tools: enough to run it again."""
    s, h, prov = r["settings"], r["human"], r.get("provenance") or {}
    kv = [["index", f"{r['index']} (fingerprint {r['index_fingerprint'][:12]})"],
          ["systems", f"{len(r['systems'])} from {r['systems_file']}: "
                      + ", ".join(n if c == n else f"{n} = {c}" for n, c in (r.get("system_configs") or {n: n for n in r["systems"]}).items())],
          ["human topics", f"{h['judged_topics']} judged of {h['topics']} queries ({h['queries']}; qrels {h['qrels']})"]]
    for side, nt in r["nt"].items():
        tc = nt.get("topic_counts") or {}
        extra = ", ".join(f"{k} {v}" for k, v in (nt.get("settings") or {}).items())
        kv.append([f"NT {side}", f"{tc.get('used', nt['n_topics'])} topics used of {tc.get('requested', '?')} asked for "
                                 f"({tc.get('eligible', '?')} eligible as topics)" + (f"; {extra}" if extra else "")])
    kv += [["seed", str(s["seed"])], ["parameters", ", ".join(f"{k} {v}" for k, v in s.items() if k != "seed")]]
    versions = [["generated", prov.get("generated", "n/a")], ["nteval", str(prov.get("nteval", "?"))],
                ["python", str(prov.get("python", "?"))]]
    versions += [[f"{k} (index built with)", str(v)] for k, v in (prov.get("index_versions") or {}).items()]
    return [("h2", "Settings"), ("kv", kv), ("h2", "Versions"), ("kv", versions)]


def verdict_blocks(r: dict[str, Any]) -> list[Block]:
    """The verdicts first: per protocol, its task, its ranking's agreement with the humans'."""
    items = []
    for side, v in (r.get("verdict") or {}).items():
        a = v.get("agreement_with_human")
        tc = r["nt"][side].get("topic_counts") or {}
        item = [f"**{side}** ({v['measure']}) — {v['task']}. Topics: {tc.get('used', r['nt'][side]['n_topics'])} used "
                f"of {tc.get('requested', '?')} asked for ({tc.get('eligible', '?')} eligible as topics)."]
        if a:
            k, top = a["stats"]["kendall"]["value"], a.get("stats_top_half")
            kt = _fmt(top["kendall"]["value"]) if top else "not computed (too few systems)"
            item.append(f"Agreement with human {a['human_measure']}: Kendall τ-b {_fmt(k)}, 95 % CI {_ci(a['ci95']['kendall'])}, "
                        f"with these {r['human']['judged_topics']} judged topics, among the better half {kt}. "
                        f"{_plain_tau(k)}")
            mt = a.get("many_topics")
            if mt:
                item.append(f"With {mt['target_topics']:,} judged topics (as many as NT's): Kendall τ {_fmt(mt['value'])}, "
                            f"95 % interval {_ci(mt['ci95'])} — an empirical-Bayes estimate from each pair's paired human "
                            f"difference; {attenuation(mt, k)}.")
        d = ((r.get("decisions") or {}).get("verdicts") or {}).get(side)
        if d:
            item.append("Decisions: " + decision_sentence(d) + ".")
        rel = v.get("reliability") or {}
        h = rel.get("split_half")
        if h:
            stable = rel.get("stable_from_topics")
            item.append(f"Split-half reliability: τ {h['tau_mean']:.3f} between two disjoint sets of {h['topics']} topics"
                        + (f"; stable (τ ≥ 0.9) from ~{stable} topics." if stable else "; never reaches τ 0.9 here."))
        item.append("Groups that cannot be told apart: " + " > ".join("{" + ", ".join(g) + "}" for g in v["groups"][:4])
                    + (" > …" if len(v["groups"]) > 4 else ""))
        items.append(item)
    blocks: list[Block] = [("h2", "Verdicts: which NT protocol to believe for which task"), ("ul", items)]

    groups = [(side, who, measured) for side, ns in (r.get("bias_notes") or {}).items()
              for who, measured in bias_groups(ns)]
    if groups:
        blocks += [("h2", "Known biases of these systems' families (nteval's validation study, not this run)"),
                   ("ul", [[f"**{side}**: {who}: {measured}"] for side, who, measured in groups])]
    if r.get("disagreements") is not None:
        blocks += [("h2", "Where the focused and the high-recall verdicts disagree"),
                   ("p", disagreement_head(r["disagreements"]))]
        found = disagreement_groups(r["disagreements"])
        if found:
            blocks.append(("ul", [[head, examples] for head, examples in found]))
    return blocks


def attenuation(many: dict[str, Any], observed: float | None) -> str:
    """What the many-topic estimate says of the observed τ: attenuated by the noise of few judged
    topics only where the estimate is above it."""
    value, (lo, hi) = many.get("value"), many.get("ci95") or (None, None)
    if value is None or observed is None:
        return "the observed τ cannot be compared with it"
    if value > observed + 0.0005:
        return "the observed τ is attenuated by the noise of few judged topics"
    inside = lo is not None and hi is not None and lo <= observed <= hi
    return (f"it is {'below' if value < observed - 0.0005 else 'equal to'} the observed τ {_fmt(observed)}, so nothing "
            "here says that few judged topics attenuate the observed τ"
            + (" (the observed τ lies within the estimate's 95 % interval)" if inside else ""))


def decision_sentence(d: dict[str, Any]) -> str:
    """One ranking's significance decisions against the humans' (:mod:`nteval.correlate.decisions`)."""
    share = d["share_same_direction"]
    rev = d["reversed"]
    text = (f"of the {d['human_separated']} pairs of systems the human judgments separate, "
            + (f"{d['same_direction']} ({share * 100:.0f} %) are separated in the same direction" if share is not None
               else "none")
            + f", {len(rev)} the other way round"
            + (" (" + "; ".join(f"{x['judgment_free_prefers']} over {x['humans_prefer']}" for x in rev[:4])
               + ("; …" if len(rev) > 4 else "") + ")" if rev else "")
            + f" and {d['missed']} not at all")
    only = d["only_judgment_free"]
    likely = only.get("likely")
    text += f"; {only['count']} pairs are separated here and not by these judged topics"
    if likely and only["count"]:
        same, other = likely["same_direction"], likely["other_direction"]
        text += (f" (with {likely['topics']:,} judged topics a human test would likely separate {same['mean']:.0f} of them "
                 f"the same way, 5-95 % {same['range90'][0]}-{same['range90'][1]}, and {other['mean']:.0f} the other way)")
    hb = ", ".join(d["human_best"])
    return text + (f"; the human-best system ({hb}) is {'' if d['human_best_in_best_group'] else 'not '}in its best group "
                   f"(group 1, {len(d['best_group'])} system{'s' if len(d['best_group']) != 1 else ''})")


#: How many reversed pairs of each ranking the report names.
REVERSED_SHOWN = 8


def _decision_blocks(r: dict[str, Any]) -> list[Block]:
    """The decision-level figures of every judgment-free ranking, in one table, with their method."""
    d = r.get("decisions")
    if not d:
        return []
    h = d["human"]
    rows = []
    tk = lambda x, k: _fmt((x["top_k_tau"] or {}).get(k))  # noqa: E731
    for label, x in [*((f"NT {s} ({v['measure']})", v) for s, v in d["verdicts"].items()),
                     *((f"{b} baseline (AP)", v) for b, v in d["baselines"].items())]:
        likely = x["only_judgment_free"].get("likely")
        rows.append([label, f"{x['same_direction']} of {x['human_separated']}"
                     + (f" ({x['share_same_direction'] * 100:.0f} %)" if x["share_same_direction"] is not None else ""),
                     str(len(x["reversed"])), str(x["missed"]),
                     str(x["only_judgment_free"]["count"]) + (
                         f" (~{likely['same_direction']['mean']:.0f} same way, ~{likely['other_direction']['mean']:.0f} "
                         f"other way with {likely['topics']:,} judged topics)" if likely else ""),
                     tk(x, "5"), tk(x, "10"), "yes" if x["human_best_in_best_group"] else "no"])
    blocks: list[Block] = [
        ("h2", "Decisions: do the judgment-free rankings separate the pairs humans separate?"),
        ("p", f"Human decisions: {h['test']}, {h['correction']}, alpha {h['alpha']}, on human {h['measure']} over "
              f"{h['topics']} judged topics: {h['separated']} of {h['pairs']} pairs of systems separated. Each NT verdict's "
              "decisions are its own (the same test and correction on its topics); each baseline's, the same test on "
              "its pseudo-qrels' AP over the human topics."),
        ("table", ["ranking", "human-separated pairs it separates the same way", "reversed", "missed",
                   "separated only by it", "top-5 τ", "top-10 τ", "human-best system in its best group"], rows)]
    reversed_ = [(label, x) for label, x in [*((f"NT {s}", v) for s, v in d["verdicts"].items()),
                                              *((b, v) for b, v in d["baselines"].items())] if x["reversed"]]
    if reversed_:
        blocks.append(("p", "Reversed pairs (the judgment-free ranking prefers the first, the humans the second; all of "
                       "them in report.json, decisions): "
                       + "; ".join(f"{label} ({len(x['reversed'])}): "
                                   + ", ".join(f"{y['judgment_free_prefers']} over {y['humans_prefer']}"
                                               for y in x["reversed"][:REVERSED_SHOWN])
                                   + (", …" if len(x["reversed"]) > REVERSED_SHOWN else "")
                                   for label, x in reversed_) + "."))
    first = next(iter([*d["verdicts"].values(), *d["baselines"].values()]), None)
    if first:
        blocks.append(("p", "Separated only by it: " + first["only_judgment_free"]["note"] + ". Method of the estimate: "
                       + ((first["only_judgment_free"].get("likely") or {}).get("method") or "n/a") + ". Top-k τ: "
                       "Kendall τ-b among the k systems with the best human scores. Best group: group 1 of the ranking's "
                       "groups, the systems from its best down that no paired test separates from one another."))
    return blocks


def gate_blocks(r: dict[str, Any]) -> list[Block]:
    """The release gate's decisions on each NT verdict against the human ones (report.json ``gate``)."""
    g = r.get("gate")
    if not g:
        return []

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x * 100:.1f} %"

    rows = [[f"NT {side} ({x['measure']})", f"{x['pairs']:,}", f"{pct(x['agreement'])} of {x['both_decide']:,}",
             f"{rate_text(x['false_pass_rate'], x.get('false_pass_ci'))} ({x['false_pass']} of {x['human_loss_beyond_margin']})",
             f"{pct(x['false_alarm_rate'])} ({x['false_alarm']} of {x['human_pass']})",
             f"{x['gate_decided']:,} / {x['human_decided']:,}"] for side, x in g.items()]
    first = next(iter(g.values()))
    return [("h2", "The release gate's decisions against the human ones"),
            ("table", ["verdict", "ordered pairs", "agree on pass/fail where both decide", "false pass (humans: a loss "
                       "beyond the margin) [exact 95 % interval]", "false alarm (humans pass)", "decided: gate / humans"], rows),
            ("p", f"For every ordered pair of systems (baseline, candidate): the gate: {first['method']['gate']}; the "
                  f"humans: {first['method']['reference_test']}. Pass = better or non-inferior, fail = worse. The "
                  "humans decide on their judged topics only (fewer pairs); their decisions are theirs on these topics, "
                  "not the truth. The false-pass interval is Clopper–Pearson's with the pairs taken as independent; they "
                  "share systems and topics, so the rate is at least that uncertain. Each pair's two decisions: report.json, "
                  "gate.")]


def _plain_tau(k: float | None) -> str:
    """Kendall τ in plain words: the share of system pairs both rankings order the same way."""
    if k is None:
        return ""
    return f"In plain words: for a random pair of systems, the two rankings agree on which is better {100 * (1 + k) / 2:.0f} % of the time (ties aside)."


def _advantage_blocks(p: dict[str, Any]) -> list[Block]:
    adv = p.get("advantage_vs_bm25")
    if not adv:
        return []
    over = [n for n, a in adv.items() if a["nt_overstates"]]
    cell = lambda x: "n/a" if x["value"] is None else f"{x['value']:+.3f} [{x['ci95'][0]:+.3f}, {x['ci95'][1]:+.3f}]"  # noqa: E731
    rows = [[n, cell(a["nt"]), cell(a["human"])] for n, a in sorted(adv.items(), key=lambda kv: -(kv[1]["nt"]["value"] or 0))[:8]]
    return [("h2", f"Does NT {p['nt']} reward systems over bm25 more than humans do? ({p['nt_measure']} vs human {p['human_measure']})"),
            ("p", "Relative advantage mean(system)/mean(bm25) − 1, 95 % paired topic-bootstrap CIs; "
             + (f"NT overstates (its CI wholly above the human one): {', '.join(over)}." if over else "NT overstates no system.")),
            ("table", ["system", "NT advantage [95% CI]", "human advantage [95% CI]"], rows)]


def bottom_line(r: dict[str, Any]) -> list[Block]:
    """One paragraph on top: the declared task's answer and how far humans agree with it, or else
    how far each protocol's ranking agrees with the humans'; and whether caveats follow."""
    ans = r.get("answer")
    if ans:
        a = ans.get("agreement_with_human") or {}
        mt = a.get("many_topics")
        text = (f"{ans['text']} On this judged collection the {ans['protocol']} verdict agrees with human "
                f"{a.get('human_measure', 'AP')} at Kendall τ {_fmt((a.get('stats') or {}).get('kendall', {}).get('value'))}"
                + (f" ({_fmt(mt['value'])}, 95 % interval {_ci(mt['ci95'])}, with {mt['target_topics']:,} judged topics)"
                   if mt else "") + ".")
    else:
        parts = []
        for side, v in (r.get("verdict") or {}).items():
            a = v.get("agreement_with_human")
            if not a:
                continue
            k = a["stats"]["kendall"]["value"]
            parts.append(f"NT {side} ({v['measure']}) orders the systems like human {a['human_measure']} at Kendall τ "
                         f"{_fmt(k)}" + ("" if k is None else f" ({100 * (1 + k) / 2:.0f} % of system pairs alike)"))
        if not parts:
            return []
        text = "; ".join(parts) + f", with {r['human']['judged_topics']} judged topics."
    n = len(r.get("caveats") or [])
    if n:
        text += f" Read the {n} caveat{'s' if n > 1 else ''} below before acting on a figure."
    return [("p", f"**Bottom line:** {text}")]


def _lead_blocks(r: dict[str, Any]) -> list[Block]:
    """The bottom line, the caveats, the verdicts: what a reader needs before any figure."""
    return bottom_line(r) + coverage_blocks(r) + caveat_blocks(r.get("caveats") or []) + verdict_blocks(r)


def coverage_blocks(r: dict[str, Any]) -> list[Block]:
    """What the NT verdicts cannot see: of the collection, and of the human-relevant documents."""
    cov = r.get("coverage")
    if not cov:
        return []
    c, h = cov["collection"], cov["human_relevant"]
    return [("p", f"**What the NT verdicts cover:** {c['text']}. {h['text'][0].upper() + h['text'][1:]}. (A caveat "
                  f"below when either share is above {c['threshold'] * 100:.0f} %.)")]


def summary_blocks(r: dict[str, Any]) -> list[Block]:
    blocks = _lead_blocks(r)
    rows = []
    for p in r["pairs"]:
        s, ci = p["stats"], p["ci95"]
        rows.append([pair_label(p), f"{_fmt(s['pearson']['value'])} {_ci(ci['pearson'])}",
                     f"{_fmt(s['spearman']['value'])} {_ci(ci['spearman'])}",
                     f"{_fmt(s['kendall']['value'])} (p={_fmt(s['kendall']['p'], 4)}) {_ci(ci['kendall'])}",
                     f"{_fmt(s['tau_ap']['value'])} {_ci(ci['tau_ap'])}"])
    blocks += [("h2", "Agreement of NT rankings with human judgments"),
               ("table", ["pair", "Pearson [95% CI]", "Spearman [95% CI]", "Kendall τ-b (p) [95% CI]", "τ_AP [95% CI]"], rows),
               ("p", "Each figure compares the NT ranking of the systems with the human one: Pearson on their mean "
                     "scores, Spearman and Kendall τ-b on their ranks (τ-b corrects for tied systems), τ_AP (Yilmaz, "
                     "Aslam & Robertson 2008) like Kendall's τ but a swap near the top of the human ranking counts "
                     "more than one near the bottom (the NT ranking is scored against the human one; pairs tied in "
                     "either are left out). 1: the same order; 0: no relation; −1: reversed.")]
    if r["pairs"] and r["pairs"][0].get("ci_method"):
        cm = r["pairs"][0]["ci_method"]
        blocks.append(("p", f"CIs: {cm['name']}, {cm['replicates']} replicates, level {cm['level']}. They are "
                            "topic-sampling noise around τ at these topic counts; τ from few judged topics is "
                            "attenuated (more topics would give a higher τ), so they hold the many-topic τ less often "
                            "than their level says. The agreement many judged topics would show is the next table."))
    rows = [[pair_label(p), _fmt(p["many_topics"]["observed"]), f"{p['many_topics']['target_topics']:,}",
             f"{_fmt(p['many_topics']['value'])} {_ci(p['many_topics']['ci95'])}"]
            for p in r["pairs"] if p.get("many_topics")]
    if rows:
        blocks += [("h2", "Kendall τ with as many judged topics as NT topics"),
                   ("table", ["pair", f"observed ({r['human']['judged_topics']} judged topics)", "judged topics N",
                              "τ with N judged topics [95% CI]"], rows),
                   ("p", "Method: " + r["pairs"][0]["many_topics"]["method"] + ". Measured coverage: docs, "
                         "\"How far the intervals hold\" (scripts/ci_coverage.py).")]
    blocks += _decision_blocks(r)
    blocks += gate_blocks(r)
    rows = [[pair_label(p), str(len(p["top_half_systems"])), _fmt(s["pearson"]["value"]), _fmt(s["spearman"]["value"]),
             f"{_fmt(s['kendall']['value'])} (p={_fmt(s['kendall']['p'], 4)})", _fmt(s["tau_ap"]["value"])]
            for p in r["pairs"] if (s := p.get("stats_top_half"))]
    blocks.append(("h2", "The same among the better half of the systems (by human score)"))
    if rows:
        blocks.append(("table", ["pair", "systems", "Pearson", "Spearman", "Kendall τ-b (p)", "τ_AP"], rows))
    elif r["pairs"]:
        blocks.append(("p", f"Not computed: the better half holds {len(r['pairs'][0]['top_half_systems'])} systems "
                            "(see Read with care)."))
    for p in r["pairs"]:
        blocks += _advantage_blocks(p)
    cell = lambda c, k: "n/a" if not c.get(k) else f"{c[k]['mean']:.3f} {_ci(c[k]['ci95'])}"  # noqa: E731
    blocks += [("h2", "Human-vs-human ceiling (random halves of the human topics)"),
               ("table", ["human measure", "Pearson", "Spearman", "Kendall", "τ_AP"],
                [[m] + [cell(c, k) for k in ("pearson", "spearman", "kendall", "tau_ap")] for m, c in r["human_ceiling"].items()])]
    rows = [[b, m] + [_fmt(s[k]["value"]) for k in ("pearson", "spearman", "kendall", "tau_ap")]
            for b, d in r["baselines"].items() for m, s in d["correlations"].items()]
    blocks += [("h2", "Run-based judgment-free baselines vs human (same runs, human topics)"),
               ("table", ["baseline", "human measure", "Pearson", "Spearman", "Kendall", "τ_AP"], rows)]
    return blocks + [("h2", "System scores"), _scores_table(r)]


def _scores_table(r: dict[str, Any]) -> Block:
    ms = dict((f"NT {p['nt']} {p['nt_measure']}", p["nt_scores"]) for p in r["pairs"])
    hs = sorted({p["human_measure"] for p in r["pairs"]})
    order = sorted(r["systems"], key=lambda n: -r["human"]["scores"][n][hs[0]])
    rows = [[n] + [f"{v[n]:.4f}" for v in ms.values()] + [f"{r['human']['scores'][n][m]:.4f}" for m in hs] for n in order]
    return ("table", ["system"] + list(ms) + [f"human {m}" for m in hs], rows)


def summary_markdown(r: dict[str, Any]) -> str:
    return to_markdown(summary_blocks(r))
