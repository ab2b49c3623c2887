"""The high-recall de-biasing study (docs/verdicts.md, "The high-recall study").

Run after ``nteval correlate --systems wide --topics 1000 --out C`` on a judged collection:

    python scripts/highrecall_study.py --index IDX --correlate C --out STUDY

It reuses C's sample, S_ref run, system runs and human per-topic scores, adds the held-out runs
(source documents held out of the searched index) and two more reference systems, then scores
every candidate high-recall setting and its Kendall τ-b with human AP (all systems and the better
half by human AP). The choice rule was fixed before any number was seen (docs/verdicts.md).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from nteval.atomic import write_text as atomic_write
from nteval.corpus.store import FILENAME as STORE
from nteval.corpus.store import DocStore
from nteval.evaluate import evaluate_run
from nteval.experiment import resolve_systems
from nteval.formats.trec import read_run
from nteval.index import read_manifest
from nteval.runs import run_all, run_all_holdout
from nteval.stats import correlations
from nteval.systems.base import make_system
from nteval.topics.focused import focused_topics
from nteval.topics.highrecall import fused_pseudo_qrels, sentence_query
from nteval.topics.sample import SampleSpec, sample_ids

REFS = {"bm25": ("bm25", {}), "bm25_k1.2_b0.75": ("bm25", {"k1": 1.2, "b": 0.75}), "qld_mu1000": ("qld", {"mu": 1000})}


def human_ap(per_topic: Path) -> dict[str, float]:
    vals: dict[str, list[float]] = {}
    for line in per_topic.read_text().splitlines()[1:]:
        s, _q, m, v = line.split("\t")
        if m == "AP":
            vals.setdefault(s, []).append(float(v))
    return {s: float(np.mean(v)) for s, v in vals.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", required=True, type=Path)
    ap.add_argument("--correlate", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--systems", default="wide")
    ap.add_argument("--sentence", type=int, default=3)
    a = ap.parse_args()
    idx, out = a.index, a.out
    out.mkdir(parents=True, exist_ok=True)
    fp = read_manifest(idx)["fingerprint"]
    ids, _ = sample_ids(idx, SampleSpec(n=a.topics, seed=a.seed))
    store = DocStore(idx / STORE)
    titles, _ = focused_topics(store, ids)
    sentences = {}
    for d in ids:
        q = sentence_query(store.get(d)["sentences"], a.sentence, "skip")
        if q is not None:
            sentences[d] = q
    store.close()
    _, systems = resolve_systems(a.systems)
    names = [s.name for s in systems]

    # system runs: source kept (the correlate run) and source held out
    kept_dir = a.correlate / "highrecall" / "runs"
    held_runs, _, held = run_all_holdout(idx, "nt", fp, sentences, systems, out / "runs_holdout", progress=False)
    # reference systems over `all` with the titles
    refs = [make_system(n, alg, params) for n, (alg, params) in REFS.items()]
    sref_runs, _ = run_all(idx, "all", fp, titles, refs, out / "sref", depth=1000, progress=False)
    while not (a.correlate / "report.json").is_file():  # the correlate run may still be going
        time.sleep(20)
    human = human_ap(a.correlate / "human" / "per_topic.tsv")
    kept = {n: read_run(kept_dir / f"{n}.run") for n in names}

    rows = []
    for sref_label, ref_names, combine in (("bm25", ["bm25"], "vote"), ("vote of 3", list(REFS), "vote"),
                                           ("mean z of 3", list(REFS), "mean")):
        for graded in (False, True):
            base_qrels = fused_pseudo_qrels([sref_runs[r] for r in ref_names], judged="topk-nonrelevant",
                                            combine=combine, graded=graded)
            base_qrels = {q: v for q, v in base_qrels.items() if q in sentences}
            for leak in ("source kept, in qrels", "source kept, out of qrels", "source held out"):
                if leak == "source kept, in qrels":
                    qrels, runs = base_qrels, kept
                elif leak == "source kept, out of qrels":
                    qrels = {q: {d: r for d, r in v.items() if d != q} for q, v in base_qrels.items()}
                    runs = {n: {q: [h for h in rk if h[0] != q] for q, rk in r.items()} for n, r in kept.items()}
                else:
                    qrels = {q: {d: r for d, r in v.items() if d not in held[q]} for q, v in base_qrels.items()}
                    runs = held_runs
                qrels = {q: v for q, v in qrels.items() if any(r > 0 for r in v.values())}
                measure = "nDCG" if graded else "AP"
                nt = {n: evaluate_run(qrels, runs[n], [measure])[0][measure] for n in names}
                x, y = [nt[n] for n in names], [human[n] for n in names]
                top = sorted(range(len(names)), key=lambda i: -y[i])[: len(names) // 2]
                c = correlations(x, y)
                ct = correlations([x[i] for i in top], [y[i] for i in top])
                rank_nt = sorted(names, key=lambda n: -nt[n])
                rank_h = sorted(names, key=lambda n: -human[n])
                row = {"sref": sref_label, "graded": graded, "leak": leak, "measure": measure, "topics": len(qrels),
                       "pseudo_relevant_mean": round(float(np.mean([sum(r > 0 for r in v.values()) for v in qrels.values()])), 1),
                       "kendall": c["kendall"]["value"], "kendall_top_half": ct["kendall"]["value"],
                       "spearman": c["spearman"]["value"],
                       "rm3_rank_nt": rank_nt.index("bm25_rm3") + 1, "rm3_rank_human": rank_h.index("bm25_rm3") + 1,
                       "scores": nt}
                rows.append(row)
                print(f"{sref_label:12} graded={graded!s:5} {leak:27} {measure:4} topics {len(qrels):4}  "
                      f"tau {row['kendall']:.3f}  top-half {row['kendall_top_half']:.3f}  "
                      f"RM3 {row['rm3_rank_nt']} (human {row['rm3_rank_human']})", flush=True)
    atomic_write((out / "study.json"), json.dumps({"human_ap": human, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
