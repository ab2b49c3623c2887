"""What a judged collection can decide (issue 57): how wide a family's bias interval is because of
the judged queries alone, and how many judged queries a claim "within 5 points of the judges" needs.

    python scripts/resolution_study.py [--shared ../shared/data --work WORK] [--write]

A family's bias (the LOCO study's, scripts/loco_fairness_study.py) is NT's relative advantage over
BM25 minus the judges': two independent samples of topics, NT's (about 1,000) and the judges' (15
to 300). Its interval has a part from each. The judges' part is the same for every design of NT's
pseudo-qrels on that collection — no design can narrow it — and it is what the acceptance "every
family within 5 points" runs into: a bias can be *shown* within 5 points only when its whole 95 %
interval is, so at least when the judges' part alone is.

Per collection and family (the LOCO study's families, e5 alone, MiniLM alone): the judges' relative
advantage over BM25 (AP, points: the family's mean over its systems of mean AP / BM25's mean AP −
1) and its 95 % topic-bootstrap interval (the judges' topics resampled, 2,000 replicates, seed 0,
percentile); the interval's half width h; and the fewest judged queries for which h would be 5
points or less, ``ceil(n · (h / 5)²)``, assuming h shrinks as 1/√n with more topics like these (a
lower bound for the bias's interval: NT's part only adds to it).

The inputs: the judges' per-topic AP of the validation snapshot's 30 systems
(tests/data/validation/snapshot.json.gz; the same judgments and systems as the LOCO study's
correlate runs: on MED's odd half the snapshot's figures and a fresh correlate run's are the same to the
last digit) and, for the two e5 systems the snapshot lacks, their per-topic AP computed here as
``nteval correlate``'s human side does (``--work WORK``; ``--e5``: which collections), kept in the
JSON (``inputs``) so the figures are recomputed without WORK (tests/evidence). Two designs compared on
one collection share the judges' topics, so this part cancels in their difference: the LOCO
study's choice between designs is not limited by it; its absolute claims are.

``--write`` writes nteval/data/resolution.json and the ``<!-- resolution:table -->`` block of
docs/verdicts.md; without it the table is printed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "tests" / "data" / "validation" / "snapshot.json.gz"
OUT_JSON = ROOT / "nteval" / "data" / "resolution.json"
DOC = ROOT / "docs" / "verdicts.md"
MARK = "resolution:table"
COLLECTIONS = {"cisi": "CISI", "cf": "CF (odd half)", "med": "MED (odd half)", "scifact": "SciFact"}
FAMILIES = ("neural", "hybrid", "dense", "static_hybrid", "expansion", "proximity", "reduction")
LABEL = {"neural": "neural", "hybrid": "hybrid", "dense": "static", "static_hybrid": "static hybrid",
         "expansion": "expansion", "proximity": "proximity", "reduction": "reduction", "e5": "e5", "minilm": "MiniLM"}
E5 = ("e5", "e5_bm25_rrf")          # the LOCO study's systems the snapshot lacks
BOOT, SEED, WITHIN = 2000, 0, 5.0


def human_scores(snapshot: dict[str, Any], inputs: dict[str, Any], name: str) -> dict[str, np.ndarray]:
    """The judges' per-topic AP of every system on collection ``name``: the snapshot's, and the e5
    systems' from ``inputs`` (same topics, checked)."""
    c = snapshot["collections"][name]
    h = c["scores"]["human"]
    out = {n: np.asarray(v, dtype=float) for n, v in zip(c["systems"], h["values"])}
    extra = inputs.get(name)
    if extra:
        if extra["qids"] != h["qids"]:
            raise SystemExit(f"{name}: the e5 systems' judged topics are not the snapshot's")
        if "bm25" in extra["values"] and not np.allclose(extra["values"]["bm25"], out["bm25"], rtol=0, atol=1e-6):
            raise SystemExit(f"{name}: BM25's judged AP here is not the snapshot's (another corpus or qrels?)")
        out.update({n: np.asarray(v, dtype=float) for n, v in extra["values"].items() if n != "bm25"})
    return out


def resamples(n: int, rng: np.random.Generator, boot: int = BOOT) -> np.ndarray:
    """``boot`` resamples of a collection's ``n`` judged topics (with replacement), shared by every
    figure of the collection."""
    return rng.integers(0, n, size=(boot, n))


def advantage(members: np.ndarray, bm25: np.ndarray, j: np.ndarray) -> dict[str, Any]:
    """The members' mean relative advantage over BM25 in points (mean AP / BM25's mean AP − 1,
    averaged over the members), its 95 % percentile topic-bootstrap interval over the resamples
    ``j`` (boot × topics), the interval's half width, and the judged queries a half width of
    :data:`WITHIN` points needs (:func:`queries_for`)."""
    n = bm25.size
    point = float(np.mean(members.mean(1) / bm25.mean() - 1)) * 100
    reps = (members[:, j].mean(2) / bm25[j].mean(1) - 1).mean(0) * 100
    lo, hi = (float(x) for x in np.percentile(reps, [2.5, 97.5]))
    half = (hi - lo) / 2
    return {"advantage": round(point, 1), "interval": [round(lo, 1), round(hi, 1)], "half_width": round(half, 1),
            "queries_for_5": queries_for(n, half)}


def queries_for(n: int, half: float, within: float = WITHIN) -> int:
    """The fewest judged queries for which a half width ``half`` measured on ``n`` would be ``within``
    or less, if it shrinks as 1/√n; ``n`` itself when it already is."""
    return max(n, math.ceil(n * (half / within) ** 2))


def judges_rank(human: dict[str, np.ndarray], target: str, j: np.ndarray) -> dict[str, Any]:
    """``target``'s rank among all the systems by the judges' mean AP (1 + the systems strictly above
    it: a tie shares the better rank), and its 95 % percentile interval over the resamples ``j`` of
    the judges' topics (every system on the same resample)."""
    names = sorted(human)
    h = np.stack([human[n] for n in names])
    i = names.index(target)
    rank = int(1 + (h.mean(1) > h[i].mean()).sum())
    m = h[:, j].mean(2)                                  # systems × boot
    reps = 1 + (m > m[i]).sum(0)
    lo, hi = (int(x) for x in np.percentile(reps, [2.5, 97.5], method="inverted_cdf"))
    return {"rank": rank, "interval": [lo, hi]}


def study(snapshot: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    from nteval.systems.base import load_systems
    from nteval.systems.families import families
    from nteval.systems.sets import builtin_systems

    configs = dict(snapshot["configs"])
    configs.update({s.name: {"algorithm": s.algorithm, "params": s.params}
                    for s in load_systems(builtin_systems("wide_dense")) if s.name in E5})
    family = families(configs)
    out: dict[str, Any] = {}
    for name in COLLECTIONS:
        human = human_scores(snapshot, inputs, name)
        j = resamples(human["bm25"].size, np.random.default_rng(SEED))   # (the same for every row and rank)
        rows: dict[str, Any] = {}
        groups = {f: [n for n in human if family.get(n) == f] for f in FAMILIES}
        groups.update({"e5": ["e5"] if "e5" in human else [], "minilm": ["minilm"]})
        for f, members in groups.items():
            if members:
                rows[f] = {**advantage(np.stack([human[n] for n in members]), human["bm25"], j),
                           "systems": len(members)}
        ranks = {t: judges_rank(human, t, j) for t in ("minilm", "e5") if t in human}
        out[name] = {"judged_queries": int(human["bm25"].size), "systems": len(human),
                     "families": rows, "judges_rank": ranks}
    return {"collections": out, "rule": {"boot": BOOT, "seed": SEED, "within": WITHIN}, "inputs": inputs}


#: where the judged collections are in ../shared/data (the LOCO study's)
SOURCES = {"cisi": ("cisi/beir/corpus.jsonl", "cisi/beir/queries.jsonl", "cisi/beir/qrels/test.tsv"),
           "cf": ("cf/corpus.jsonl", "cf/queries.jsonl", "cf/qrels/dev.tsv"),
           "med": ("med/corpus.jsonl", "med/queries.jsonl", "med/qrels/dev.tsv"),
           "scifact": ("scifact/beir/corpus.jsonl.gz", "scifact/beir/queries.jsonl", "scifact/beir/qrels/test.tsv")}


def e5_judged(shared: Path, work: Path, name: str) -> dict[str, Any]:
    """The e5 systems' judged per-topic AP on collection ``name``, as ``nteval correlate``'s human side
    computes it (the judged topics searching ``all``, depth 1,000, AP): ``WORK/{name}_idx`` (made if
    missing) and the runs cached in ``WORK/{name}_e5_judged``. (On MED's odd half it gives the LOCO
    study's correlate run's figures to the last digit.)"""
    from nteval.evaluate import evaluate_run
    from nteval.formats.topics import load_judged_topics
    from nteval.index import build_index, read_manifest
    from nteval.runs import Searched, run_all
    from nteval.settings import Execution
    from nteval.systems.base import load_systems
    from nteval.systems.sets import builtin_systems

    corpus, queries, qrels_path = (shared / x for x in SOURCES[name])
    idx = work / f"{name}_idx"
    if not (idx / "manifest.json").is_file():
        build_index([corpus], idx)
    topics, qrels = load_judged_topics(queries, qrels_path)
    systems = [s for s in load_systems(builtin_systems("wide_dense")) if s.name in (*E5, "bm25")]   # (the fusion's input)
    runs, _ = run_all(Searched(idx, "all", read_manifest(idx)["fingerprint"], label="human"), topics, systems,
                      work / f"{name}_e5_judged", 1000, Execution(progress=sys.stderr.isatty()))
    per = {s.name: evaluate_run(qrels, runs[s.name], ["AP"])[1] for s in systems}   # (BM25's: checked against the snapshot's)
    qids = sorted(per["e5"])
    return {"qids": qids, "values": {n: [round(per[n][q]["AP"], 6) for q in qids] for n in (*E5, "bm25")}}


def block(s: dict[str, Any]) -> str:
    cols = [*FAMILIES, "e5", "minilm"]
    lines = ["| collection | judged queries | " + " | ".join(LABEL[f] for f in cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for name, c in s["collections"].items():
        cells = []
        for f in cols:
            r = c["families"].get(f)
            cells.append("—" if r is None else f"{r['advantage']:+.0f} ±{r['half_width']:.0f} ({r['queries_for_5']:,})")
        lines.append(f"| {COLLECTIONS[name]} | {c['judged_queries']} | " + " | ".join(cells) + " |")
    worst = {name: max(c["families"].items(), key=lambda kv: kv[1]["half_width"]) for name, c in s["collections"].items()}
    lines += ["", "Each cell: the judges' relative advantage of the family over BM25 (AP, points), ± the half width of "
                  "its 95 % topic-bootstrap interval (the judges' topics resampled, 2,000 replicates, seed 0, the same "
                  "resamples for every cell of a row), and in brackets about how many judged queries a half width of 5 "
                  "points would take (assuming it shrinks as 1/√n; the collection's own count when it is already within). A family's bias is NT's advantage minus this one, so its interval is at least this "
                  "wide whatever NT's design: the widest per collection is "
              + "; ".join(f"{COLLECTIONS[n]} {LABEL[f]} ±{r['half_width']:.0f}" for n, (f, r) in worst.items())
              + ". Neural: MiniLM" + (" and e5" if s["inputs"] else "") + " (e5 "
              + ("not computed on " + ", ".join(COLLECTIONS[n] for n in COLLECTIONS if n not in s["inputs"])
                 + ": `--e5` names the collections whose runs are made" if set(COLLECTIONS) - set(s["inputs"]) else "everywhere")
              + "); static: wordllama at two sizes.",
              "", "The judges' own rank of an encoder (among the collection's systems by the judges' mean AP; a tie "
                  "shares the better rank) and its 95 % interval over the same resamples: "
              + "; ".join(f"{COLLECTIONS[n]} ({c['systems']} systems): "
                          + ", ".join(f"{LABEL[t]} #{r['rank']} [{r['interval'][0]}, {r['interval'][1]}]"
                                      for t, r in c["judges_rank"].items())
                          for n, c in s["collections"].items()) + "."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--shared", type=Path, help="the judged collections (default: ../shared/data)")
    ap.add_argument("--work", type=Path, help="where e5's judged runs are made and cached; without it, the shipped "
                                              "JSON's inputs")
    ap.add_argument("--e5", help="the collections whose e5 runs are made (default cisi,cf,med; SciFact's 5,183 "
                                 "abstracts: about 50 min on 2 cores); the others keep the shipped JSON's")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    wanted = [c for c in (a.e5 or "cisi,cf,med").split(",") if c]
    if unknown := [c for c in wanted if c not in COLLECTIONS]:
        ap.error(f"--e5: unknown collection(s) {', '.join(unknown)}; known: {', '.join(COLLECTIONS)}")
    if a.work is None and (a.e5 is not None or a.shared is not None):
        ap.error(f"{'--e5' if a.e5 is not None else '--shared'}: only with --work (where e5's runs are made)")
    snapshot = json.loads(gzip.decompress(SNAPSHOT.read_bytes()))
    inputs = json.loads(OUT_JSON.read_text(encoding="utf-8"))["inputs"] if OUT_JSON.is_file() else {}
    if a.work is not None:
        shared = a.shared or ROOT.parent / "shared" / "data"
        if missing := [str(shared / f) for c in wanted for f in SOURCES[c] if not (shared / f).is_file()]:
            ap.error(f"--shared {shared}: {missing[0]} not found")
        a.work.mkdir(parents=True, exist_ok=True)
        # (the collections not in --e5 keep the shipped JSON's inputs)
        inputs = {**inputs, **{c: e5_judged(shared, a.work, c) for c in wanted}}
    s = study(snapshot, inputs)
    text = block(s)
    if a.write:
        sys.path.insert(0, str(ROOT / "scripts"))
        import fairness_study

        fairness_study.write_study(s, text, OUT_JSON, MARK, DOC)
    else:
        print(text)


if __name__ == "__main__":
    main()
