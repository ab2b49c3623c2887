"""The release gate's error rates, measured by simulation on real per-topic scores
(:mod:`nteval.gate.simulate`): the false-pass rate at the non-inferiority margin and the false-
regression rate when the candidate is truly equal, for the gate's betting bounds and, for
comparison, Student's t bounds, at several numbers of topics.

    python scripts/gate_error_rates.py OUT/focused/per_topic.tsv:RR OUT/highrecall/per_topic.tsv:AP:bm25_k1.2_b0.75 \
        --alarm-input OUT/focused/per_topic.tsv:RR:bm25_k1.2_b0.75:qld_mu100 --reps 1000 --out docs/gate_error_rates.json

The per-topic scores in docs/gate.md come from `nteval compare --index ref2 --topics 1000
--systems table1` on the PubMed index of both shared files (pubmed20n0014 + pubmed21n1298).
Writes JSON (every cell, with its binomial standard error) and prints a table.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from nteval.atomic import write_text as atomic_write

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nteval._version import __version__  # noqa: E402
from nteval.gate.decide import DecisionRule  # noqa: E402
from nteval.gate.simulate import alert_false_alarms, equal_population, error_rates, margin_population  # noqa: E402


def read_per_topic(path: Path, measure: str) -> dict[str, np.ndarray]:
    per: dict[str, dict[str, float]] = defaultdict(dict)
    with open(path, encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["measure"] == measure:
                per[row["system"]][row["qid"]] = float(row["value"])
    qids = sorted(next(iter(per.values())))
    return {s: np.array([v[q] for q in qids]) for s, v in per.items()}


def populations(scores: dict[str, np.ndarray], label: str, r: float, worse_count: int, base: str | None = None):
    """The best system as the baseline; the system closest to it in mean for the equal population;
    the systems that lose more than the margin (the nearest ``worse_count`` of them) for the margin
    ones."""
    order = sorted(scores, key=lambda s: -scores[s].mean())
    base = base or order[0]
    near = min((s for s in order if s != base), key=lambda s: abs(scores[s].mean() - scores[base].mean()))
    out = [equal_population(f"{label}: {base} vs {near}", scores[base], scores[near])]
    worse = [s for s in order if scores[s].mean() < (1 - r) * scores[base].mean()][:worse_count]
    for w in worse:
        pop = margin_population(f"{label}: {base} vs {w} (mixed to the margin)", scores[base], scores[w], scores[near], r)
        if pop is not None:
            out.append(pop)
    return out


def t_rate(pop, n: int, reps: int, alpha: float, r: float, seed: int) -> float:
    """The same error for Student's t one-sided bounds (for comparison)."""
    from scipy.stats import t

    rng = np.random.default_rng(seed)
    q = float(t.ppf(1 - alpha, n - 1))
    wrong = 0
    for _ in range(reps):
        b, c = pop.sample(n, rng)
        if pop.truth == "equal":
            d = c - b
            sd = d.std(ddof=1)
            wrong += bool(sd > 0 and d.mean() + q * sd / math.sqrt(n) < 0)
        else:
            d, dn = c - (1 - r) * b, c - b
            lo = lambda x: x.mean() - q * x.std(ddof=1) / math.sqrt(n)  # noqa: E731
            wrong += bool(lo(dn) > 0 or lo(d) > 0)
    return wrong / reps


def tables(result: dict) -> dict[str, str]:
    """The Markdown tables docs/gate.md shows, made from the JSON the simulation wrote."""
    rows: dict[tuple[str, str], dict[int, dict]] = {}
    for c in result["cells"]:
        rows.setdefault((c["measure"], c["population"]), {})[c["n"]] = c
    sizes = sorted({c["n"] for c in result["cells"]})
    head = ("| measure | population (truth) | error | " + " | ".join(f"n = {n:,}" for n in sizes)
            + " | Student's t at the same n |\n|---|---|---|" + "---|" * len(sizes) + "---|")
    lines = [head]
    for (measure, pop), cells in rows.items():
        first = next(iter(cells.values()))
        what = "false pass" if first["truth"] == "at the margin" else "false regression"
        label = pop.split(": ", 1)[1].replace(" (mixed to the margin)", "")
        lines.append(f"| {measure} | {label} ({first['truth']}) | {what} | "
                     + " | ".join(f"{cells[n]['rate']:.3f} ± {cells[n]['se']:.3f}" for n in sizes) + " | "
                     + " / ".join(f"{cells[n]['t_rate']:.3f}" for n in sizes) + " |")
    power = [(m, p.split(": ", 1)[1], cells) for (m, p), cells in rows.items()
             if next(iter(cells.values()))["truth"] == "equal"]
    if power:
        lines += ["", "Power: how often a truly equal candidate passes (non-inferior or better):", "",
                  "| measure | population | " + " | ".join(f"n = {n:,}" for n in sizes) + " |",
                  "|---|---|" + "---|" * len(sizes)]
        lines += [f"| {m} | {p} | " + " | ".join(
            f"{cells[n]['decisions']['non-inferior'] + cells[n]['decisions']['better']:.3f}" for n in sizes) + " |"
            for m, p, cells in power]
    lines.append(f"\n{result['reps']:,} samples per cell (± one binomial standard error); α = {result['alpha']}; "
                 f"margin {result['margin'].replace('the better system', 'the baseline')}; nteval {result['nteval_version']}, "
                 f"{result['date']}, {result['seconds']:.0f} s.")
    alarms = []
    for a in result.get("alarms", []):
        _, measure, sa, sb = a["input"].split(":")
        alarms.append(f"{a['histories']} histories of {a['releases']} releases, each release scoring {sa}'s or "
                      f"{sb}'s real {measure} per topic at random (equal in expectation): {a['alarms']} false alarms "
                      f"in {a['checks']:,} checks ({a['alarms_per_check']:.4f} per check, α_alert = {a['alpha']}); "
                      f"{a['histories_with_an_alarm']:.0%} of the histories had any.")
    return {"gate-error-rates": "\n".join(lines), "gate-alarms": "\n".join(alarms) or "(not run)"}


def render(doc: Path, result: dict) -> None:
    """Write the tables into ``doc`` between its ``<!-- NAME -->`` and ``<!-- /NAME -->`` marks."""
    import re

    text = doc.read_text(encoding="utf-8")
    for name, table in tables(result).items():
        text, n = re.subn(rf"(<!-- {name} -->\n).*?(\n<!-- /{name} -->)", lambda m: m.group(1) + table + m.group(2),
                          text, flags=re.S)
        if n != 1:
            raise SystemExit(f"{doc}: no <!-- {name} --> ... <!-- /{name} --> block")
    atomic_write(doc, text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="*", help="per_topic.tsv:MEASURE[:BASELINE] (default baseline: the best system)")
    ap.add_argument("--sizes", default="50,100,300,1000")
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--worse", type=int, default=2, help="margin populations per input (the nearest worse systems)")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--alarm-input", help="per_topic.tsv:MEASURE:SYSTEM_A:SYSTEM_B for the alert false-alarm simulation")
    ap.add_argument("--releases", type=int, default=50)
    ap.add_argument("--histories", type=int, default=100)
    ap.add_argument("--doc", type=Path, help="write the tables into this page (docs/gate.md) between its marks")
    ap.add_argument("--render", type=Path, help="only render the tables of this JSON (a finished run) into --doc")
    args = ap.parse_args()
    if args.render:
        render(args.doc, json.loads(args.render.read_text(encoding="utf-8")))
        return
    rule = DecisionRule.of("5%", args.alpha)
    sizes = [int(s) for s in args.sizes.split(",")]
    cells = []
    t0 = time.time()
    for spec in args.inputs:
        path, measure, *base = spec.split(":")
        pops = populations(read_per_topic(Path(path), measure), measure, rule.mmd.value, args.worse, base[0] if base else None)
        for k, pop in enumerate(pops):
            for n in sizes:
                cell = error_rates(pop, n, args.reps, rule, seed=1000 * k + n)
                cell["t_rate"] = round(t_rate(pop, n, args.reps, args.alpha, rule.mmd.value, seed=1000 * k + n), 4)
                cell["measure"] = measure
                cell["true_diff"] = round(pop.true_diff(), 6)
                cells.append(cell)
                print(f"{pop.name:<70} n={n:>5}  {cell['error'].split(':')[0]:<16} betting {cell['rate']:.3f} "
                      f"(± {cell['se']:.3f})  t {cell['t_rate']:.3f}  decisions {cell['decisions']}", flush=True)
    alarms = []
    if args.alarm_input:
        path, measure, sa, sb = args.alarm_input.split(":")
        real = read_per_topic(Path(path), measure)
        alarms.append({"input": args.alarm_input, **alert_false_alarms(real[sa], real[sb], args.releases,
                                                                         args.histories, seed=7)})
        print(f"alerts, {args.histories} histories of {args.releases} equal releases ({sa} / {sb} per topic): "
              f"{alarms[-1]}", flush=True)
    result = {"nteval_version": __version__, "alarms": alarms, "date": time.strftime("%Y-%m-%d"), "alpha": args.alpha,
              "margin": rule.mmd.describe(), "reps": args.reps, "seconds": round(time.time() - t0, 1),
              "inputs": args.inputs, "cells": cells}
    if args.out:
        atomic_write(args.out, json.dumps(result, indent=1) + "\n")
    if args.doc:
        render(args.doc, result)


if __name__ == "__main__":
    main()
