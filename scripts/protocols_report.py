#!/usr/bin/env python3
"""docs/pubmed_protocols.md from the outputs of the runs it names (issue 13's acceptance):

    nteval run --protocol mesh --index IDX --systems table1 --param n_topics=1000 --out A/mesh
    nteval correlate --index IDX --queries A/mesh/topics.tsv --qrels A/mesh/qrels.txt \
        --systems table1 --topics 500 --out A/corr          # MeSH judgments as the yardstick
    nteval run --protocol crosslingual --index IDX --systems table1 \
        --param n_topics=500 --param languages=ger,fre,rus --out A/cl
    nteval grid --protocol mesh --index IDX --param k1=0.6,1.2,2.0 --param b=0.3,0.6,0.9 --topics 1000 --out A/grid

Usage: protocols_report.py A OUT.md
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from nteval.atomic import write_text as atomic_write


def _load(p: Path) -> dict:
    return json.loads(p.read_text(encoding="utf-8"))


def mesh_section(a: Path) -> list[str]:
    r = _load(a / "mesh" / "results.json")
    v = r["verdict"]
    rel = v["reliability"]["split_half"]
    lines = ["## MeSH protocol (NLM's indexers as judges)", "",
             f"{r['n_topics']:,} topics of {r['eligible_descriptors']:,} descriptors that are a major topic of "
             f"{r['mesh']['min_docs']}–{r['mesh']['max_docs']} documents; relevant per topic: median "
             f"{r['relevant_per_topic']['median']}, max {r['relevant_per_topic']['max']}. "
             f"{r['documents']['without_mesh']:,} of {r['documents']['total']:,} documents carry no MeSH "
             f"(in-process citations of the update file) and cannot be judged. Split-half τ {rel['tau_mean']:.3f} "
             f"over two sets of {rel['topics']} topics.", "",
             "| system | AP | groups | nDCG@10 | R@1000 | empty queries |", "|---|---|---|---|---|---|"]
    for s in v["scores"]:
        m = r["systems"][s]
        groups = ", ".join(str(i) for i, g in enumerate(v["groups"], 1) if s in g)
        lines.append(f"| {s} | {m['AP']:.4f} | {groups} | {m['nDCG@10']:.4f} | {m['R@1000']:.4f} | {r['empty_queries'][s]} |")
    return lines + ["", "Groups: systems a paired randomization test (Holm, α 0.05) cannot tell apart; a system may "
                        "sit in two overlapping groups.", ""]


def agreement_section(a: Path) -> list[str]:
    r = _load(a / "corr" / "report.json")
    lines = ["## Do the NT rankings agree with the MeSH ranking?", "",
             f"`nteval correlate` with the MeSH topics and qrels as the judged side ({r['human']['judged_topics']:,} "
             f"topics, systems searching `all`), NT focused and high-recall on "
             f"{r['nt']['focused']['n_topics']} topics each, {len(r['systems'])} systems (table1). "
             "Kendall τ-b with BCa 95 % CIs (topics resampled on both sides, 1,000 replicates).", "",
             "| pair | Kendall τ-b [95% CI] | Spearman | better half (8 systems) τ |", "|---|---|---|---|"]
    for p in r["pairs"]:
        s, ci, top = p["stats"], p["ci95"]["kendall"], p.get("stats_top_half")
        lines.append(f"| NT {p['nt']} {p['nt_measure']} vs MeSH {p['human_measure']} | {s['kendall']['value']:.3f} "
                     f"[{ci[0]:.3f}, {ci[1]:.3f}] | {s['spearman']['value']:.3f} | "
                     + (f"{top['kendall']['value']:.3f}" if top else "n/a") + " |")
    ceil = r["human_ceiling"]["AP"]["kendall"]
    return lines + ["", f"MeSH-vs-MeSH ceiling (two random halves of the MeSH topics), AP: Kendall {ceil['mean']:.3f} "
                        f"[{ceil['ci95'][0]:.3f}, {ceil['ci95'][1]:.3f}]. MeSH qrels hold relevant documents only, so "
                        "Bpref equals R@1000 there.", ""]


def crosslingual_section(a: Path) -> list[str]:
    r = _load(a / "cl" / "results.json")
    strata = r["strata"]["language"]
    langs = list(strata)
    systems = sorted(r["systems"], key=lambda s: -r["systems"][s]["RR"])
    lines = ["## Cross-lingual focused protocol, per language", "",
             "Query: the original-language title (`<VernacularTitle>`); relevant: the record's English abstract in `nt`. "
             "Usable topics per language before sampling: "
             + ", ".join(f"{k} {v['eligible']}" for k, v in r["languages"].items()) + ".", "",
             "| system | all RR | " + " | ".join(f"{g} RR ({strata[g]['topics']})" for g in langs)
             + " | " + " | ".join(f"{g} R@1000" for g in langs) + " |",
             "|---|---|" + "---|" * (2 * len(langs))]
    for s in systems:
        lines.append(f"| {s} | {r['systems'][s]['RR']:.4f} | "
                     + " | ".join(f"{strata[g]['systems'][s]['RR']:.4f}" for g in langs) + " | "
                     + " | ".join(f"{strata[g]['systems'][s]['R@1000']:.4f}" for g in langs) + " |")
    return lines + [""]


def grid_section(a: Path) -> list[str]:
    g = _load(a / "grid" / "grid.json")
    m = g["protocols"]["mesh"]["measures"]["AP"]
    axes = g["axes"]
    lines = ["## A 3 × 3 BM25 grid under the MeSH protocol", "",
             f"{g['protocols']['mesh']['topics']:,} topics; AP per cell (rows k1, columns b); best "
             f"{m['best']['value']:.4f} at k1 {m['best']['params']['k1']:g}, b {m['best']['params']['b']:g}; "
             f"{m['indistinguishable_from_best']['cells']} cell(s) a paired test cannot tell from the best.", "",
             "| k1 \\ b | " + " | ".join(f"{b:g}" for b in axes["b"]) + " |", "|---|" + "---|" * len(axes["b"])]
    vals = iter(m["values"])
    for k1 in axes["k1"]:
        lines.append(f"| {k1:g} | " + " | ".join(f"{next(vals):.4f}" for _ in axes["b"]) + " |")
    return lines + [""]


def main() -> None:
    a, out = Path(sys.argv[1]), Path(sys.argv[2])
    idx = _load(a / "mesh" / "results.json")["index"]
    parts = ["# The added protocols on real PubMed (both shared files, 33,272 documents)", "",
             f"Generated by `scripts/protocols_report.py` from the runs in its docstring (index `{Path(idx).name}`, "
             "seed 42, depth 1,000).", ""]
    for section in (mesh_section, agreement_section, crosslingual_section, grid_section):
        try:
            parts += section(a)
        except FileNotFoundError as err:
            parts += [f"(missing: {err.filename})", ""]
    atomic_write(out, "\n".join(parts))


if __name__ == "__main__":
    main()
