#!/usr/bin/env python3
"""docs/dense.md from the outputs of the runs it names (issue 14's acceptance: sparse vs dense vs
hybrid under NT and under human judgments):

    nteval correlate --index SCIFACT_IDX --queries scifact/beir/queries.jsonl \
        --qrels scifact/beir/qrels/test.tsv --systems wide_dense --topics 1000 --out A/scifact
    nteval focused    --index PUBMED_IDX --topics 1000 --systems dense --out A/pubmed_focused
    nteval highrecall --index PUBMED_IDX --topics 1000 --systems dense --out A/pubmed_highrecall

Usage: dense_report.py SCIFACT_CORRELATE_OUT PUBMED_FOCUSED_OUT PUBMED_HIGHRECALL_OUT OUT.md
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from nteval.atomic import write_text as atomic_write

SHOWN = ("bm25", "bm25_k1.2_b0.75", "dense", "dense_d64", "hybrid_rrf", "hybrid_linear")


def _load(p: Path) -> dict:
    return json.loads(p.read_text(encoding="utf-8"))


def _ranks(scores: dict[str, float]) -> dict[str, int]:
    order = sorted(scores, key=lambda n: -scores[n])
    return {n: i + 1 for i, n in enumerate(order)}


def scifact(c: Path) -> list[str]:
    rep = _load(c / "report.json")
    n = len(rep["pairs"][0]["nt_scores"])
    lines = ["## SciFact: does NT rank the dense system where humans do?", "",
             f"`nteval correlate` on the SciFact corpus (5,183 abstracts, 300 judged claims), {n} systems "
             "(`wide_dense`: the 24 of `wide` + wordllama at 256 and 64 dimensions + an RRF and a linear "
             "BM25 + dense hybrid), 1,000 NT topics per protocol, seed 42. Rank = position among the "
             f"{n} systems (1 = best).", ""]
    for p in rep["pairs"]:
        if (p["nt_measure"], p["human_measure"]) not in (("RR", "AP"), ("AP", "AP"), ("nDCG@10", "nDCG@10")):
            continue
        nt, hu = p["nt_scores"], p["human_scores"]
        rn, rh = _ranks(nt), _ranks(hu)
        k = p["stats"]["kendall"]["value"]
        ci = p["ci95"]["kendall"]
        lines += [f"**NT {p['nt']} {p['nt_measure']} vs human {p['human_measure']}** — Kendall τ-b over all "
                  f"{n} systems {k:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] (BCa, topics resampled)", "",
                  f"| system | NT {p['nt_measure']} | NT rank | human {p['human_measure']} | human rank |",
                  "|---|---|---|---|---|"]
        lines += [f"| {s} | {nt[s]:.4f} | {rn[s]} | {hu[s]:.4f} | {rh[s]} |" for s in SHOWN if s in nt]
        lines.append("")
    return lines


def pubmed(f: Path, h: Path) -> list[str]:
    lines = ["## PubMed (both shared files, 33,272 documents): the dense set under both NT protocols", ""]
    for path, label in ((f, "focused"), (h, "highrecall")):
        r = _load(path / "results.json")
        ms = r["measures"]
        groups = r["verdict"]["groups"] if r.get("verdict") else []
        lines += [f"**{label}**, {r['n_topics']:,} topics, seed {r['seed']}, verdict measure "
                  f"{r['verdict']['measure'] if r.get('verdict') else '?'}", "",
                  "| system | " + " | ".join(ms) + " | group | seconds |", "|---|" + "---|" * (len(ms) + 2)]
        key = ms[0] if label == "highrecall" else "RR"
        key = r["verdict"]["measure"] if r.get("verdict") else key
        for s in sorted(r["systems"], key=lambda s: -r["systems"][s][key]):
            g = ", ".join(str(i) for i, grp in enumerate(groups, 1) if s in grp)
            lines.append(f"| {s} | " + " | ".join(f"{r['systems'][s][m]:.4f}" for m in ms)
                         + f" | {g} | {r['timing'][s]['seconds']:.1f} |")
        notes = (r.get("system_notes") or {}).get("dense")
        if notes:
            lines += ["", f"Dense vectors for `{notes.get('cache', '').rsplit('/', 1)[-1]}`: {notes['documents']:,} "
                          f"abstracts × {notes['dim']} dims, encoded in {notes['encoding_seconds']:.1f} s "
                          f"({notes['encoding_docs_per_s']:,.0f} docs/s), cache {notes['cache_bytes'] / 1e6:.1f} MB."]
        lines.append("")
    return lines


def main(argv: list[str]) -> int:
    c, f, h, out = map(Path, argv[1:5])
    text = ["# Sparse vs dense vs hybrid under NT (made by scripts/dense_report.py)", "",
            "The dense encoder is wordllama `l2_supercat` (static token embeddings, average-pooled, shipped in "
            "its wheel; no torch, offline), exact inner-product search (FAISS flat). Machine: 2 cores, "
            "shared with other jobs while these ran.", ""]
    text += scifact(c) + pubmed(f, h)
    atomic_write(out, "\n".join(text) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
