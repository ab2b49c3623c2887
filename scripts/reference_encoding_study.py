"""How cheaply the neural reference may encode (issue 49): the high-recall reference's all-MiniLM-L6-v2
search of ``all`` run by cheaper encodings, judged against the full one on the judged collections.

    python scripts/reference_encoding_study.py --work WORK [--collections cisi cf scifact] [--write]

WORK is the validation study's (``{c}_idx``, ``{c}_corr``: ``nteval correlate --systems wide_dense
--topics 1000 --seed 42``; SciFact's without e5, whose encoding of 5,183 abstracts twice is 1.5 h
here). Each variant's title runs over ``all`` are made here with nteval's own encoders
(``dense`` with ``backend`` and ``max_tokens``) and kept in ``{c}_fairness/encodings/``.

Variants: torch fp32 (the shipped reference until now, the baseline), ONNX Runtime with int8
weights (dynamic, per channel: ``backend: onnx-int8``), and each text cut to 128 or 64 word pieces
(``max_tokens``). A reference is the lexical vote with the variant's equal share (the shipped
design, :func:`scripts.unseen_encoders_study.share` with no pool), every system scored against it
with the same runs; τ is Kendall's tau-b of the systems' NT mean AP against their human mean AP,
a rank is the system's place of all the collection's systems (NT / human), the bias NT's relative
advantage over BM25 minus the humans', in points (95 % topic-bootstrap interval, 2,000 replicates).

**The choice rule, written before the int8 at 128 and any SciFact number were seen** (2026-11-29;
the torch cuts and int8 at 256 and 64 had been seen on CISI and CF): a variant is eligible when, on
every collection measured, its τ is within 0.01 of the baseline's and every neural model's NT rank
(minilm, minilm_bm25_rrf, and e5, e5_bm25_rrf where the collection has them) within one place of
the baseline's. Chosen: the eligible variant that encodes the most documents per CPU-second on
PubMed abstracts (``benchmarks/minilm_backends.py``, batch 32; a variant it did not time cannot be
chosen); the baseline when none is eligible.

``--write`` writes nteval/data/reference_encoding.json and the generated block of docs/verdicts.md
(``<!-- encoding:variants -->``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fairness_study as fs  # noqa: E402  (the collections' runs, references and AP)
import unseen_encoders_study as us  # noqa: E402  (the shipped share and the judged figures)

ROOT = Path(__file__).resolve().parents[1]
OUT_JSON = ROOT / "nteval" / "data" / "reference_encoding.json"
MARK = "encoding:variants"
BASELINE = "torch-256"
#: name → (backend, max_tokens)
VARIANTS: dict[str, tuple[str, int]] = {"torch-256": ("torch", 0), "int8-256": ("onnx-int8", 0),
                                        "torch-128": ("torch", 128), "int8-128": ("onnx-int8", 128),
                                        "torch-64": ("torch", 64), "int8-64": ("onnx-int8", 64)}
NEURAL = ("minilm", "minilm_bm25_rrf", "e5", "e5_bm25_rrf")


def variant_refs(c: fs.Collection, name: str) -> dict:
    """The variant's title runs over ``all`` (nteval's dense kind, cached)."""
    from nteval.index import read_manifest
    from nteval.runs import Searched, run_all
    from nteval.settings import Execution
    from nteval.systems.base import make_system

    backend, cut = VARIANTS[name]
    params = {"model": "minilm", "backend": backend, **({"max_tokens": cut} if cut else {})}
    system = make_system(f"ref_{name}", "dense", params)
    fp = read_manifest(c.idx)["fingerprint"]
    t = time.time()
    runs, _ = run_all(Searched(c.idx, "all", fp), c.titles, [system], c.work / f"{c.name}_fairness" / "encodings",
                      1000, Execution(progress=False))
    print(f"{c.name} {name}: {time.time() - t:.0f} s", file=sys.stderr, flush=True)
    return runs[system.name]


def study(work: Path, names: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {"collections": {}}
    for cname in names:
        c = fs.Collection(work, cname)
        d = fs.Designs(c)
        per: dict[str, Any] = {}
        full = us.share(d, ("minilm",), None)
        for v in VARIANTS:
            key = f"enc_{v}"
            c.refs[key] = variant_refs(c, v)
            mine = us.share(d, (key,), None)
            x = us.judged(c, d.qrels(mine, (key,)))
            x["qrels_overlap"] = round(sum(len(full[q] & mine[q]) for q in full) / sum(len(full[q]) for q in full), 3)
            per[v] = x
            print(f"{cname:8s} {v:10s} τ {x['tau']:.3f} (lexical {x['tau_lexical']:.3f}) overlap {x['qrels_overlap']:.3f} "
                  + " ".join(f"{s} #{r['nt_rank']}/#{r['human_rank']} {r['bias'][0]:+.0f}" for s, r in x["systems"].items()
                             if s in NEURAL), file=sys.stderr, flush=True)
        out["collections"][cname] = per
    out["choice"] = choose(out)
    return out


def eligible(s: dict[str, Any], v: str) -> bool:
    for per in s["collections"].values():
        base, x = per[BASELINE], per[v]
        if abs(x["tau"] - base["tau"]) > 0.01 + 1e-9:
            return False
        for m in NEURAL:
            if m in base["systems"] and abs(x["systems"][m]["nt_rank"] - base["systems"][m]["nt_rank"]) > 1:
                return False
    return True


def choose(s: dict[str, Any], speed: dict[str, float] | None = None) -> dict[str, Any]:
    """The rule of the module docstring; ``speed``: documents per CPU-second on PubMed by variant
    (benchmarks/minilm_backends.json, batch 32), read from there when not given."""
    if speed is None:
        speed = measured_speed()
    ok = [v for v in VARIANTS if eligible(s, v)]
    ranked = sorted(ok, key=lambda v: -speed.get(v, 0.0))
    return {"eligible": ok, "docs_per_cpu_second": speed, "chosen": ranked[0] if ranked and speed else BASELINE}


def measured_speed() -> dict[str, float]:
    """Documents per CPU-second of each variant benchmarks/minilm_backends.py timed (batch 32)."""
    bench = ROOT / "benchmarks" / "minilm_backends.json"
    rows = json.loads(bench.read_text())["full"] if bench.is_file() else []
    out = {}
    for v, (backend, cut) in VARIANTS.items():
        for r in rows:
            if r["backend"] == backend and r["max_seq_length"] == (cut or 256) and r["batch_size"] == 32:
                out[v] = r["docs_per_cpu_s"]
    return out


def block(s: dict[str, Any]) -> str:
    rows = ["| collection | encoding | τ | qrels overlap | " + " | ".join(NEURAL) + " |",
            "|---|---|---|---|" + "---|" * len(NEURAL)]
    for c, per in s["collections"].items():
        for v, x in per.items():
            cells = [f"#{x['systems'][m]['nt_rank']}/#{x['systems'][m]['human_rank']}, {x['systems'][m]['bias'][0]:+.0f}"
                     if m in x["systems"] else "—" for m in NEURAL]
            rows.append(f"| {fs.COLLECTIONS[c]} | {v} | {x['tau']:.3f} | {x['qrels_overlap']:.3f} | " + " | ".join(cells) + " |")
    ch = s["choice"]
    sp = ", ".join(f"{v} {r:.1f}" for v, r in sorted(ch["docs_per_cpu_second"].items(), key=lambda kv: -kv[1]))
    return ("\n".join(rows) + f"\n\nEligible (τ within 0.01, every neural model within one place of {BASELINE}, on every "
            f"collection): {', '.join(ch['eligible']) or 'none'}. PubMed abstracts per CPU-second: {sp}. Chosen: "
            f"**{ch['chosen']}**.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--collections", nargs="+", default=["cisi", "cf", "scifact"])
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    s = study(a.work, tuple(a.collections))
    text = block(s)
    print(text)
    if a.write:
        fs.write_study(s, text, OUT_JSON, MARK)


if __name__ == "__main__":
    main()
