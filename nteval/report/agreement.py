"""Reports for ``nteval correlate``: scatter PNGs (paper's Figure 2), report.md, and a
self-contained report.html (images inlined)."""
from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from ..atomic import write_text
from .plots import scatter


def _fmt(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def _ci(ci: Any) -> str:
    return "n/a" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def pair_label(p: dict[str, Any]) -> str:
    return f"NT {p['nt']} {p['nt_measure']} vs human {p['human_measure']}"


def write_reports(report: dict[str, Any], out: Path) -> None:
    out = Path(out)
    images = []
    for p in report["pairs"]:
        names = report["systems"]
        s = p["stats"]
        fname = f"scatter_{p['nt']}_{p['nt_measure']}_vs_human_{p['human_measure']}.png".replace("@", "_at_")
        scatter([p["nt_scores"][n] for n in names], [p["human_scores"][n] for n in names], names,
                f"NT {p['nt']} {p['nt_measure']}", f"human {p['human_measure']}",
                f"{pair_label(p)}\nPearson {_fmt(s['pearson']['value'])}, Spearman {_fmt(s['spearman']['value'])}",
                out / fname, diagonal=False)
        images.append((pair_label(p), fname))
    md = summary_markdown(report)
    md += "\n" + "\n".join(f"![{label}]({f})" for label, f in images) + "\n"
    write_text(out / "report.md", md)
    body = [f"<h1>nteval correlate</h1><p>{html.escape(report['index'])} — {len(report['systems'])} systems, "
            f"{report['human']['topics']} human topics</p>"]
    body.append(_md_tables_to_html(summary_markdown(report)))
    for label, f in images:
        data = base64.b64encode((out / f).read_bytes()).decode()
        body.append(f"<figure><img alt='{html.escape(label)}' src='data:image/png;base64,{data}'/>"
                    f"<figcaption>{html.escape(label)}</figcaption></figure>")
    write_text(out / "report.html", "<!doctype html><html><head><meta charset='utf-8'><title>nteval correlate</title>"
               "<style>body{font-family:sans-serif;max-width:70em;margin:auto}table{border-collapse:collapse}"
               "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}img{max-width:32em}</style></head><body>"
               + "\n".join(body) + "</body></html>\n")


def verdict_markdown(r: dict[str, Any]) -> list[str]:
    """The verdicts first: per protocol, its task, its ranking's agreement with the humans'."""
    lines = ["## Verdicts: which NT protocol to believe for which task", ""]
    for side, v in (r.get("verdict") or {}).items():
        a = v.get("agreement_with_human")
        tc = r["nt"][side].get("topic_counts") or {}
        lines.append(f"- **{side}** ({v['measure']}) — {v['task']}. Topics: {tc.get('used', r['nt'][side]['n_topics'])} used "
                     f"of {tc.get('requested', '?')} asked for ({tc.get('eligible', '?')} eligible documents).")
        if a:
            k = a["stats"]["kendall"]["value"]
            top = a.get("stats_top_half")
            kt = _fmt(top["kendall"]["value"]) if top else "not computed (too few systems)"
            lines.append(f"  Agreement with human {a['human_measure']}: Kendall τ-b {_fmt(k)} {_ci(a['ci95']['kendall'])}, "
                         f"among the better half {kt}. {_plain_tau(k)}")
        rel = v.get("reliability") or {}
        h = rel.get("split_half")
        if h:
            stable = rel.get("stable_from_topics")
            lines.append(f"  Split-half reliability: τ {h['tau_mean']:.3f} between two disjoint sets of {h['topics']} topics"
                         + (f"; stable (τ ≥ 0.9) from ~{stable} topics." if stable else "; never reaches τ 0.9 here."))
        lines.append("  Groups that cannot be told apart: " + " > ".join("{" + ", ".join(g) + "}" for g in v["groups"][:4])
                     + (" > …" if len(v["groups"]) > 4 else ""))
    return lines + [""]


def _plain_tau(k: float | None) -> str:
    """Kendall τ in plain words: the share of system pairs both rankings order the same way."""
    if k is None:
        return ""
    return f"In plain words: for a random pair of systems, the two rankings agree on which is better {100 * (1 + k) / 2:.0f} % of the time (ties aside)."


def summary_markdown(r: dict[str, Any]) -> str:
    from ..correlate.caveats import caveats_markdown

    lines = verdict_markdown(r) + caveats_markdown(r.get("caveats") or []) + ["## Agreement of NT rankings with human judgments", "",
             "| pair | Pearson [95% CI] | Spearman [95% CI] | Kendall τ-b (p) [95% CI] | τ_AP [95% CI] |",
             "|---|---|---|---|---|"]
    for p in r["pairs"]:
        s, ci = p["stats"], p["ci95"]
        lines.append(f"| {pair_label(p)} | {_fmt(s['pearson']['value'])} {_ci(ci['pearson'])} | "
                     f"{_fmt(s['spearman']['value'])} {_ci(ci['spearman'])} | "
                     f"{_fmt(s['kendall']['value'])} (p={_fmt(s['kendall']['p'], 4)}) {_ci(ci['kendall'])} | "
                     f"{_fmt(s['tau_ap']['value'])} {_ci(ci['tau_ap'])} |")
    if r["pairs"] and r["pairs"][0].get("ci_method"):
        cm = r["pairs"][0]["ci_method"]
        lines += ["", f"CIs: {cm['name']}, {cm['replicates']} replicates, level {cm['level']}."]
    lines += ["", "## The same among the better half of the systems (by human score)", "",
              "| pair | systems | Pearson | Spearman | Kendall τ-b (p) | τ_AP |", "|---|---|---|---|---|---|"]
    if r["pairs"] and not any(p.get("stats_top_half") for p in r["pairs"]):
        lines.append(f"| not computed: {len(r['pairs'][0]['top_half_systems'])} systems | | | | | |")
    for p in r["pairs"]:
        s = p.get("stats_top_half")
        if s:
            lines.append(f"| {pair_label(p)} | {len(p['top_half_systems'])} | {_fmt(s['pearson']['value'])} | "
                         f"{_fmt(s['spearman']['value'])} | {_fmt(s['kendall']['value'])} (p={_fmt(s['kendall']['p'], 4)}) | "
                         f"{_fmt(s['tau_ap']['value'])} |")
    for p in r["pairs"]:
        adv = p.get("advantage_vs_bm25")
        if not adv:
            continue
        over = [n for n, a in adv.items() if a["nt_overstates"]]
        lines += ["", f"## Does NT {p['nt']} reward systems over bm25 more than humans do? ({p['nt_measure']} vs human {p['human_measure']})", "",
                  "Relative advantage mean(system)/mean(bm25) − 1, 95 % paired topic-bootstrap CIs; "
                  + (f"NT overstates (its CI wholly above the human one): {', '.join(over)}." if over else "NT overstates no system."),
                  "", "| system | NT advantage [95% CI] | human advantage [95% CI] |", "|---|---|---|"]
        for n, a in sorted(adv.items(), key=lambda kv: -(kv[1]["nt"]["value"] or 0))[:8]:
            cell = lambda x: "n/a" if x["value"] is None else f"{x['value']:+.3f} [{x['ci95'][0]:+.3f}, {x['ci95'][1]:+.3f}]"  # noqa: E731
            lines.append(f"| {n} | {cell(a['nt'])} | {cell(a['human'])} |")
    lines += ["", "## Human-vs-human ceiling (random halves of the human topics)", "",
              "| human measure | Pearson | Spearman | Kendall | τ_AP |", "|---|---|---|---|---|"]
    for m, c in r["human_ceiling"].items():
        cell = lambda k: "n/a" if not c.get(k) else f"{c[k]['mean']:.3f} {_ci(c[k]['ci95'])}"  # noqa: E731
        lines.append(f"| {m} | {cell('pearson')} | {cell('spearman')} | {cell('kendall')} | {cell('tau_ap')} |")
    lines += ["", "## Run-based judgment-free baselines vs human (same runs, human topics)", "",
              "| baseline | human measure | Pearson | Spearman | Kendall | τ_AP |", "|---|---|---|---|---|---|"]
    for b, d in r["baselines"].items():
        for m, s in d["correlations"].items():
            lines.append(f"| {b} | {m} | {_fmt(s['pearson']['value'])} | {_fmt(s['spearman']['value'])} | "
                         f"{_fmt(s['kendall']['value'])} | {_fmt(s['tau_ap']['value'])} |")
    lines += ["", "## System scores", ""]
    ms = [(f"NT {p['nt']} {p['nt_measure']}", p["nt_scores"]) for p in r["pairs"]]
    hs = sorted({p["human_measure"] for p in r["pairs"]})
    header = ["system"] + [m for m, _ in dict(ms).items()] + [f"human {m}" for m in hs]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    order = sorted(r["systems"], key=lambda n: -r["human"]["scores"][n][hs[0]])
    for n in order:
        row = [n] + [f"{v[n]:.4f}" for _, v in dict(ms).items()] + [f"{r['human']['scores'][n][m]:.4f}" for m in hs]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def _md_tables_to_html(md: str) -> str:
    out, in_table = [], False
    for line in md.splitlines():
        if line.startswith("## "):
            out.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("|") and set(line) <= set("|-"):
            continue
        elif line.startswith("|"):
            cells = [html.escape(c.strip()) for c in line.strip("|").split("|")]
            tag = "th" if not in_table else "td"
            if not in_table:
                out.append("<table>")
                in_table = True
            out.append("<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>")
            continue
        if in_table and not line.startswith("|"):
            out.append("</table>")
            in_table = False
    if in_table:
        out.append("</table>")
    return "\n".join(out)
