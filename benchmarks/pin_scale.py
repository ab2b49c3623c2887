"""The fair verdict at PubMed scale (issue 49 item 6): a 1,000-topic pin of the two shared PubMed
files with the fair references (the default: the lexical vote + all-MiniLM-L6-v2's equal share,
its search of the whole collection encoded as :data:`nteval.protocols.highrecall.NEURAL_SREFS`
says: int8 weights, 128 word pieces) against the lexical references alone, each stage apart, and
a 1M-record projection.

    PYTHONPATH=. nice -n 15 python benchmarks/pin_scale.py [--index IDX] [--topics 1000] [--pool 0]
        [--fair-topics K] [--minilm-backend torch|onnx|onnx-int8] [--lexical-from EARLIER.json]

``--pool 0`` (the default, as the shipped references): the encoder searches the whole collection,
so it encodes every record of ``all`` once (stage ``encoding_all``) and T_fair(N) = T_lexical × N/n
+ N/r + t_load. ``--pool P``: the pooled reference below.

``nteval pin`` has no option choosing the references (it always takes the default, the fair ones),
so both sides run what a pin runs, the same code for both: the focused protocol's topics and the
high-recall protocol's topics and pseudo-qrels (``Protocol.build``, as :func:`nteval.gate.pin.pin_topics`
calls it) with the default high-recall spec (``--pool`` 100) and with ``preset: lexical`` (what
``nteval highrecall --preset lexical`` uses). No system is run. Each side runs in its own process
with an empty vector store (``$NTEVAL_DENSE_CACHE`` in a scratch directory: the ONNX export, the
model load and every pooled document's encoding are paid, as on a first pin).

Stages are timed by wrapping the real functions with a clock (nothing replaced): the lexical
references' runs (``run_all`` in the high-recall protocol), the encoder's load (with the one-time ONNX
export), the pool's texts, the pool's encoding (``encode_missing``), the titles' encoding
(``Encoder.queries``), the whole pooled reference (``pooled_run``: those plus the re-ranking).

With ``--fair-topics K`` (a busy machine: the fair side at 1,000 topics takes hours there), the
fair side runs end to end at K topics (the first K of the same seeded sample) beside a lexical
side at K, for a measured ratio; the fair cost at ``--topics`` is projected from the pool the
lexical side at ``--topics`` would hand the encoder (its distinct documents, counted from its own
runs) and the fair side's measured rates, as below with N = n.

Projection to N records (``--project``, 1M): the lexical side's whole time grows at most linearly
with the corpus (its searches walk posting lists; the sampling and the focused topics do not grow at
all), so T_lexical(N) = T_lexical × N / n. The pooled reference encodes each pooled document once:
min(N, topics × u) documents, u the mean size of one title's pool (the union of the lexical
references' top ``pool``), measured here (at 50k records the titles' pools overlap, at 1M far less,
so topics × u is the bound). T_fair(N) = T_lexical(N) + min(N, topics × u) / r + topics × t_rest + t_load,
r the measured documents/s of the pool's encoding, t_rest its other work per topic, t_load the encoder's load; both as
measured (wall) and for 2 idle cores (CPU seconds / 2: the rate the work reached without its
neighbours). Writes benchmarks/pin_scale.json.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("NTEVAL_SHARED_DATA", ROOT.parent / "shared" / "data")) / "medline" / "pubmed_baseline_update"
FILES = ("pubmed20n0014.xml.gz", "pubmed21n1298.xml.gz")

STAGES: dict[str, dict[str, float]] = {}


def _clock(owner, name: str, stage: str) -> None:
    """Wrap ``owner.name`` so its calls add their wall time to STAGES[stage] (the function itself runs)."""
    real = getattr(owner, name)

    def timed(*args, **kwargs):
        t, c = time.perf_counter(), time.process_time()
        try:
            return real(*args, **kwargs)
        finally:
            s = STAGES.setdefault(stage, {"seconds": 0.0, "cpu_seconds": 0.0, "calls": 0})
            s["seconds"] += time.perf_counter() - t
            s["cpu_seconds"] += time.process_time() - c
            s["calls"] += 1

    setattr(owner, name, timed)


def _pool_sizes(owner) -> None:
    """Record the mean size of one title's pool as ``lexical_pools`` returns it."""
    real = owner.lexical_pools

    def sized(*args, **kwargs):
        pools = real(*args, **kwargs)
        STAGES["pool_per_title"] = {"mean": sum(map(len, pools.values())) / max(1, len(pools)), "titles": len(pools)}
        return pools

    owner.lexical_pools = sized


def _lexical_pool_of(hr, depth: int) -> None:
    """On the lexical side: the pool a fair pin would encode, from the same lexical references' runs
    (the union of their top ``depth`` per title): its distinct documents and mean size per title."""
    from nteval.systems.pooled import lexical_pools

    real = hr.run_all

    def runs_and_pool(*args, **kwargs):
        got = real(*args, **kwargs)
        pools = lexical_pools(list(got[0].values()), depth)
        STAGES["pool_it_would_encode"] = {"documents": len({d for p in pools.values() for d in p}),
                                          "mean": sum(map(len, pools.values())) / max(1, len(pools)),
                                          "titles": len(pools)}
        return got

    hr.run_all = runs_and_pool


def child(variant: str, index: Path, topics: int, pool: int, cache: Path | None = None, seed: int = 42) -> dict:
    """One side, in this process: the focused and the high-recall topics of a pin (``cache``: the
    vectors' directory, kept, for a second pin on the same index; else a scratch one)."""
    import nteval.protocols.highrecall as hr
    import nteval.systems.dense as dense
    import nteval.systems.pooled as pooled
    from nteval.encoders import models
    from nteval.protocols import get

    if variant == "lexical" and pool:
        _lexical_pool_of(hr, pool)

    _clock(hr, "run_all", "lexical_reference_runs" if variant == "fair" else "reference_runs")
    _clock(pooled, "load_encoder", "encoder_load")
    _clock(pooled, "texts_of", "pool_texts")
    _clock(pooled, "encode_missing", "pool_encoding")
    _clock(models.Encoder, "queries", "query_encoding")
    _clock(pooled, "pooled_run", "pooled_reference")
    _clock(dense, "_encode", "encoding_all")
    _pool_sizes(pooled)
    work = Path(tempfile.mkdtemp(prefix=f"nteval-pin-{variant}-"))
    os.environ["NTEVAL_DENSE_CACHE"] = str(cache or work / "cache")
    t0, c0 = time.perf_counter(), time.process_time()
    common = dict(n_topics=topics, seed=seed, min_sentences=3, min_title_tokens=3)
    focused = get("focused")
    f = focused.build(index, focused.Spec.from_params(**common), work / "focused", progress=False)
    t_focused = time.perf_counter() - t0
    proto = get("highrecall")
    extra = {"pool": pool} if variant == "fair" else {"preset": "lexical"}
    h = proto.build(index, proto.Spec.from_params(**common, **extra), work / "highrecall", progress=False)
    total = time.perf_counter() - t0
    shutil.rmtree(work, ignore_errors=True)
    sref = h.stats["sref"]
    out = {"variant": variant, "seed": seed, "topics_sampled": topics, "seconds": round(total, 1),
           "cpu_seconds": round(time.process_time() - c0, 1), "focused_seconds": round(t_focused, 1),
           "focused_topics": len(f.topics), "highrecall_topics": len(h.topics), "references": sref["families"],
           "stages": {k: {kk: round(vv, 2) for kk, vv in v.items()} for k, v in STAGES.items()},
           "load_avg_at_end": round(os.getloadavg()[0], 1)}
    if variant == "fair" and not pool:
        enc = STAGES.get("encoding_all", {})
        n = json.loads((index / "manifest.json").read_text())["indexes"]["all"]["documents"]
        out["encoding_docs_s"] = round(n / enc["seconds"], 1) if enc.get("seconds") else None
        out["encoding_docs_per_cpu_s"] = round(n / enc["cpu_seconds"], 1) if enc.get("cpu_seconds") else None
        out["encoder"] = next((r for f, rs in sref["families"].items() if f != "lexical" for r in rs), None)
    if sref.get("pool"):
        out["pool"] = sref["pool"]
        enc = STAGES.get("pool_encoding", {}).get("seconds") or 0
        n = sum(sref["pool"].get("encoded_now", {}).values())
        out["encoding_docs_s"] = round(n / enc, 1) if enc else None
        cpu = STAGES.get("pool_encoding", {}).get("cpu_seconds") or 0
        out["encoding_docs_per_cpu_s"] = round(n / cpu, 1) if cpu else None
    return out


def project(lex: dict, fair: dict, n_records: int, to: int, topics: int, cores: int = 2) -> dict:
    """T_fair of ``topics`` topics on this corpus and on ``to`` records, from the measured rates: as
    measured (wall, on this shared machine) and on ``cores`` idle cores (CPU seconds / cores: the
    rates the work itself reached, without its neighbours)."""
    if not fair.get("pool"):
        return project_full(lex, fair, n_records, to, cores)
    would = lex["stages"]["pool_it_would_encode"]
    u, d_here = would["mean"], would["documents"]
    st = fair["stages"]
    load = st.get("encoder_load", {"seconds": 0.0, "cpu_seconds": 0.0})   # once per pin (with the first ONNX export)
    per_topic_rest = (st["pooled_reference"]["seconds"] - st["pool_encoding"]["seconds"] - load["seconds"]) \
        / fair["topics_sampled"]
    per_topic_rest_cpu = (st["pooled_reference"]["cpu_seconds"] - st["pool_encoding"]["cpu_seconds"]
                          - load["cpu_seconds"]) / fair["topics_sampled"]
    out: dict = {"formula": "T_fair(N) = T_lexical × N/n + min(N, topics × u)/r + topics × t_rest + t_load "
                            "(u: one title's pool, r: pool documents encoded per second, t_rest: the pooled "
                            "reference's other work per topic: texts, titles, re-ranking; t_load: the encoder's "
                            "load, with its one-time ONNX export)",
                 "n": n_records, "topics": topics, "u_pool_per_title": round(u, 1),
                 "pooled_documents_here": d_here}
    for how, t_lex, r, rest, once in (
            ("measured_wall", lex["seconds"], fair["encoding_docs_s"], per_topic_rest, load["seconds"]),
            (f"idle_{cores}_cores", lex["cpu_seconds"] / cores, fair["encoding_docs_per_cpu_s"] * cores,
             per_topic_rest_cpu / cores, load["cpu_seconds"] / cores)):
        here = t_lex + d_here / r + topics * rest + once
        big_lex = t_lex * to / n_records
        big = big_lex + min(to, topics * u) / r + topics * rest + once
        out[how] = {"r_docs_s": round(r, 1), "T_lexical_s": round(t_lex), "T_fair_here_s": round(here),
                    "ratio_here": round(here / t_lex, 2),
                    f"T_lexical_{to}_s": round(big_lex), f"pooled_documents_{to}": round(min(to, topics * u)),
                    f"T_fair_{to}_s": round(big), f"T_fair_{to}_h": round(big / 3600, 2)}
    return out


def project_full(lex: dict, fair: dict, n_records: int, to: int, cores: int = 2) -> dict:
    """T_fair when the encoder searches the whole collection: every record of ``all`` encoded once
    (rate r), the rest of the fair side (its lexical runs, the titles, the search) growing as the
    lexical side does."""
    st = fair["stages"]["encoding_all"]
    out: dict = {"formula": "T_fair(N) = (T_fair - T_encoding) × N/n + N/r (r: records of all encoded per second; "
                            "the rest of the fair side, its lexical runs, the titles' encoding and the flat search, "
                            "scaled with the corpus like the lexical side)", "n": n_records}
    for how, t_fair, t_enc, t_lex in (("measured_wall", fair["seconds"], st["seconds"], lex["seconds"]),
                                      (f"idle_{cores}_cores", fair["cpu_seconds"] / cores, st["cpu_seconds"] / cores,
                                       lex["cpu_seconds"] / cores)):
        r = n_records / t_enc
        big = (t_fair - t_enc) * to / n_records + to / r
        out[how] = {"r_docs_s": round(r, 1), "T_lexical_s": round(t_lex), "T_fair_here_s": round(t_fair),
                    "ratio_here": round(t_fair / t_lex, 2), f"T_lexical_{to}_s": round(t_lex * to / n_records),
                    f"T_fair_{to}_s": round(big), f"T_fair_{to}_h": round(big / 3600, 2)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, help="an index of the two shared PubMed files (else built in a scratch dir)")
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--pool", type=int, default=0)
    ap.add_argument("--fair-topics", type=int, help="run both sides end to end at this many topics too (on a busy "
                    "machine: the fair side at --topics would take hours); --topics' fair cost is then projected "
                    "from the lexical side's pool at --topics and the fair side's measured rates")
    ap.add_argument("--project", type=int, default=1_000_000)
    ap.add_argument("--lexical-from", type=Path, help="take the lexical sides from this earlier output (same index, "
                    "topics and pool) and run the fair side only")
    ap.add_argument("--minilm-backend", choices=("torch", "onnx", "onnx-int8"), help="the fair side's MiniLM runs "
                    "on this backend instead of the default (nteval.systems.dense.MINILM_CPU_BACKEND)")
    ap.add_argument("--child", choices=("lexical", "fair"), help=argparse.SUPPRESS)
    ap.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=42, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "pin_scale.json")
    a = ap.parse_args()
    if a.child:
        if a.minilm_backend:
            from nteval.encoders import models

            models.MINILM_CPU_BACKEND = a.minilm_backend
        print(json.dumps(child(a.child, a.index, a.topics, a.pool, a.cache, a.seed)))
        return
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    result: dict = {"machine": {"cores": os.cpu_count(), "shared": "a long study and other sessions' tests ran beside it; "
                                                                 "this benchmark ran under nice 15"}}
    index = a.index
    if index is None:
        index = Path(tempfile.mkdtemp(prefix="nteval-pin-idx-")) / "idx"
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "nteval", "index", *(str(SHARED / f) for f in FILES), "--out", str(index),
                        "--quiet"], check=True, env=env, stdout=subprocess.DEVNULL)
        result["index_seconds"] = round(time.perf_counter() - t, 1)
    manifest = json.loads((index / "manifest.json").read_text())
    n_records = manifest["indexes"]["all"]["documents"]
    result.update({"index": str(index), "records": n_records, "topics": a.topics, "pool": a.pool})
    small = a.fair_topics if a.fair_topics and a.fair_topics < a.topics else a.topics
    # the fair side twice on one vectors cache: the first pin of an index (every record encoded), then
    # a second pin of other topics (seed 43) on the same index, as a later pin or gate finds it
    sides = [("lexical", a.topics)] + ([("lexical", small)] if small < a.topics else []) + [("fair", small)] \
        + ([("fair_warm", small)] if not a.pool else [])
    cache = Path(tempfile.mkdtemp(prefix="nteval-pin-vectors-"))
    earlier = json.loads(a.lexical_from.read_text()) if a.lexical_from else {}
    for variant, n in sides:
        if variant == "lexical" and f"lexical_{n}" in earlier:
            result[f"lexical_{n}"] = earlier[f"lexical_{n}"]
            continue
        p = subprocess.run([sys.executable, __file__, "--child", variant.split("_")[0], "--index", str(index),
                            "--topics", str(n), "--pool", str(a.pool),
                            *(["--cache", str(cache), "--seed", "43" if variant == "fair_warm" else "42"]
                              if variant.startswith("fair") else []),
                            *(["--minilm-backend", a.minilm_backend] if a.minilm_backend else [])],
                           env=env, capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"pin_scale: the {variant} side failed:\n{p.stderr[-3000:]}")
        result[f"{variant}_{n}"] = json.loads(p.stdout.strip().splitlines()[-1])
        print(json.dumps(result[f"{variant}_{n}"]), flush=True)
    lex, fair = result[f"lexical_{a.topics}"], result[f"fair_{small}"]
    shutil.rmtree(cache, ignore_errors=True)
    result["ratio_measured"] = {"topics": small, "fair_over_lexical": round(fair["seconds"] / result[f"lexical_{small}"]["seconds"], 2)}
    if f"fair_warm_{small}" in result:
        result["ratio_measured"]["second_pin_fair_over_lexical"] = round(
            result[f"fair_warm_{small}"]["seconds"] / result[f"lexical_{small}"]["seconds"], 2)
    result["ratio_goal"] = 3.0
    result["projection"] = p = project(lex, fair, n_records, a.project, a.topics)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    for how in ("measured_wall", "idle_2_cores"):
        print(f"{how}: fair/lexical at {a.topics} topics {p[how]['ratio_here']}× (goal ≤ 3×); {a.project:,} records "
              f"{p[how][f'T_fair_{a.project}_h']} h (goal ≤ 1 h)")
    print(f"measured end to end at {small} topics: fair/lexical {result['ratio_measured']['fair_over_lexical']}× "
          f"(a second pin on the same index: {result['ratio_measured'].get('second_pin_fair_over_lexical')}×)")


if __name__ == "__main__":
    main()
