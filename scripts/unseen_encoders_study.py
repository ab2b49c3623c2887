"""Encoders the references do not contain (issue 48): how the high-recall verdict judges a neural
model that is not its reference's, by mechanism, on the judged collections, with the same runs.

    python scripts/unseen_encoders_study.py --work WORK [--write]

WORK is the validation study's (``{c}_idx``, ``{c}_corr``: ``nteval correlate --systems wide_dense
--topics 1000 --seed 42``, whose set holds all-MiniLM-L6-v2 and multilingual-e5-small with their
RRF hybrids). The e5 reference's title runs over ``all`` are made here (cached by nteval's run cache
in ``{c}_fairness/``).

**Leave-model-out** (Zobel 1998's leave-one-run-out test of pooling bias, applied to references):
each neural model is judged by references that do not contain it. For a mechanism M and an encoder
e, ``M[e]`` is the lexical vote with e's equal share beside it. The model's *unseen* bias under M is
its bias judged by ``M[the other encoder]``, its *seen* bias the one judged by ``M[itself]``; a bias
is NT's relative advantage over BM25 minus the humans' (AP), in points, with a 95 % interval (topic
bootstrap, NT and human topics resampled independently, 2,000 replicates, seed 0).

Mechanisms (each encoder's share made from the same cosine scores):

- ``full``: the encoder searches ``all`` (every record encoded) with the title: the shipped default;
- ``pool P`` (P = 30, 100, 300, fixed before any number was seen): the encoder re-ranks the union of
  the lexical references' top P for the title: it encodes topics × P documents at most, never the
  corpus (issue 49);
- ``+ MeSH`` (CF only: CISI and SciFact carry no headings): a third equal share, NLM's indexers
  (documents ranked by the idf-weighted share of the source's major headings they carry).

**The choice rule, written before any e5 or pool number was computed** (2026-11-29): eligible are the
mechanisms whose lexical τ under ``M[minilm]`` is at least the lexical references' minus 0.02 on CISI
and on CF. U(M) is the largest |unseen bias| over CISI and CF and both encoders (their own systems).
Chosen: the smallest U; mechanisms within 3 points of it are tied, and the tie goes to the cheaper
(a smaller pool; ``full`` costs the collection), then to the higher minimum τ over CISI and CF under
``M[minilm]``. The shipped references then contain MiniLM alone under the chosen mechanism when e5
encodes more than 3 times slower per document (issue 49's cost rule), else both, fused by RRF in one
share. ``+ MeSH`` is shown, never eligible as the default (two of the three collections lack it).

``--write`` writes nteval/data/unseen_encoders.json and the generated block of docs/verdicts.md
(``<!-- unseen:designs -->``).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fairness_study as fs  # noqa: E402  (the collections' runs, references and AP are the fairness study's)

ROOT = Path(__file__).resolve().parents[1]
OUT_JSON = ROOT / "nteval" / "data" / "unseen_encoders.json"   # shipped: the evidence lines read it
DOC = ROOT / "docs" / "verdicts.md"
MARK = "unseen:designs"
ENCODERS = {"minilm": ("minilm", "minilm_bm25_rrf"), "e5": ("e5", "e5_bm25_rrf")}
POOLS = (30, 100, 300)
#: Added after the CISI numbers of the pools above were seen (before any CF number): the pool also
#: holds the top P of wordllama's search of the whole collection (static embeddings: 776 documents/s
#: on 2 cores, so encoding every record is cheap), the transformer re-ranking both.
STATIC_POOLS = (30, 100)
BOOT, SEED = 2000, 0


def e5_refs(c: fs.Collection) -> None:
    c.refs["e5"] = c._title_runs("e5", "dense", {"model": "e5"})


def lexical_pool(d: fs.Designs, q: str, depth: int, static: bool = False) -> set[str]:
    """The union of the lexical references' top ``depth`` for topic q's title (and wordllama's, a
    static-embedding search of the whole collection, when ``static``)."""
    return set().union(*(d.top(n, q, depth) for n in (*fs.LEXICAL, *(("wordllama",) if static else ()))))


def share(d: fs.Designs, encoders: tuple[str, ...], pool: int | None, static: bool = False) -> dict[str, set[str]]:
    """Each topic's lexical vote with the encoders' equal share (RRF of their rankings, restricted to
    the lexical pool of depth ``pool`` when given)."""
    from nteval.topics.highrecall import _rrf_top

    rel = {}
    for q, r in d.rel.items():
        ranks = []
        for e in encoders:
            top = d.top(e, q)
            if pool is not None:
                allowed = lexical_pool(d, q, pool, static)
                top = [x for x in top if x in allowed]
            ranks.append(top)
        rel[q] = r | set(_rrf_top(ranks, len(r)))
    return rel


def mechanisms(d: fs.Designs) -> dict[str, Any]:
    """name → function(encoders) → qrels."""
    out: dict[str, Any] = {"full": lambda e: d.qrels(share(d, e, None), e)}
    for p in POOLS:
        out[f"pool {p}"] = (lambda p: lambda e: d.qrels(share(d, e, p), ()))(p)
    for p in STATIC_POOLS:
        out[f"pool {p}+wl"] = (lambda p: lambda e: d.qrels(share(d, e, p, True), ()))(p)
    return out


def advantage_boot(nt: dict[str, np.ndarray], human: dict[str, np.ndarray], name: str, rng: np.random.Generator
                   ) -> tuple[float, float, float]:
    """Bias of ``name`` (NT relative advantage over BM25 minus the humans'), points, and its 95 % interval."""
    a, b = nt[name], nt["bm25"]
    ha, hb = human[name], human["bm25"]
    point = (a.mean() / b.mean() - ha.mean() / hb.mean()) * 100
    i = rng.integers(0, len(a), size=(BOOT, len(a)))
    j = rng.integers(0, len(ha), size=(BOOT, len(ha)))
    reps = (a[i].mean(1) / b[i].mean(1) - ha[j].mean(1) / hb[j].mean(1)) * 100
    lo, hi = np.percentile(reps, [2.5, 97.5])
    return round(float(point), 1), round(float(lo), 1), round(float(hi), 1)


def judged(c: fs.Collection, qrels: dict) -> dict[str, Any]:
    nt = fs._ap(c.runs, qrels, c.names)
    fig = fs.figures(c, nt)
    ntm = {n: nt[n].mean() for n in c.names}
    hm = {n: c.human[n].mean() for n in c.names}
    rank_nt = {n: r for r, n in enumerate(sorted(c.names, key=lambda x: -ntm[x]), 1)}
    rank_h = {n: r for r, n in enumerate(sorted(c.names, key=lambda x: -hm[x]), 1)}
    rng = np.random.default_rng(SEED)
    models = {}
    for sysname in [s for pair in ENCODERS.values() for s in pair] + ["dense", "bm25_rm3"]:
        if sysname in c.names:
            models[sysname] = {"nt_rank": rank_nt[sysname], "human_rank": rank_h[sysname],
                               "bias": advantage_boot(nt, c.human, sysname, rng)}
    fams = {}
    for f in ("neural", "hybrid", "dense", "static_hybrid", "expansion", "proximity", "reduction"):
        mem = [n for n in c.names if c.family[n] == f]
        if mem:
            fams[f] = round(float(np.mean([(ntm[n] / ntm["bm25"] - hm[n] / hm["bm25"]) * 100 for n in mem])), 1)
    return {"tau": fig["tau"], "tau_lexical": fig["tau_lexical"], "systems": models, "families": fams,
            "topics": len(qrels)}


def study(work: Path, names: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {"collections": {}}
    for name in names:
        c = fs.Collection(work, name)
        e5_refs(c)
        d = fs.Designs(c)
        per: dict[str, Any] = {"lexical": judged(c, d.qrels(d.rel, ()))}
        for mech, make in mechanisms(d).items():
            for enc in (("minilm",), ("e5",), ("minilm", "e5")):
                label = f"{mech}[{'+'.join(enc)}]"
                per[label] = judged(c, make(enc))
                x = per[label]
                print(f"{name:8s} {label:22s} τ {x['tau']:.3f} lex {x['tau_lexical']:.3f} "
                      + " ".join(f"{s} #{v['nt_rank']}/#{v['human_rank']} {v['bias'][0]:+.0f}"
                                 for s, v in x["systems"].items() if s in ("minilm", "e5")), file=sys.stderr, flush=True)
        if name == "cf":
            mesh = d.mesh_share()
            if mesh is not None:
                per["full[minilm] + MeSH"] = judged(c, mesh)
        out["collections"][name] = per
    out["choice"] = choose(out)
    return out


def unseen(per: dict[str, Any], mech: str) -> dict[str, tuple[float, float, float]]:
    """Each encoder's own system judged by the mechanism built on the other encoder."""
    return {"minilm": per[f"{mech}[e5]"]["systems"]["minilm"]["bias"],
            "e5": per[f"{mech}[minilm]"]["systems"]["e5"]["bias"]}


def choose(s: dict[str, Any]) -> dict[str, Any]:
    """The rule of the module docstring, applied (CISI and CF where present)."""
    cols = {c: v for c, v in s["collections"].items() if c in fs.TOPICAL}
    mechs = ["full", *(f"pool {p}" for p in POOLS), *(f"pool {p}+wl" for p in STATIC_POOLS)]
    ok = [m for m in mechs if all(v[f"{m}[minilm]"]["tau_lexical"] >= v["lexical"]["tau_lexical"] - 0.02
                                  for v in cols.values())]
    u = {m: max(abs(b[0]) for v in cols.values() for b in unseen(v, m).values()) for m in mechs}
    best = min((u[m] for m in ok), default=None)
    tied = [m for m in ok if best is not None and u[m] - best <= 3.0]
    cost = {m: (10**9 if m == "full" else int(m.split()[1].split("+")[0]) * (2 if "+wl" in m else 1)) for m in mechs}
    chosen = min(tied, key=lambda m: (cost[m], -min(v[f"{m}[minilm]"]["tau"] for v in cols.values()))) if tied else None
    return {"eligible": ok, "U": u, "tied_within_3": tied, "chosen": chosen}


def block(s: dict[str, Any]) -> str:
    rows = ["| collection | references | τ (lexical τ) | MiniLM NT/human rank, bias [95 % CI] | e5 NT/human rank, bias "
            "[95 % CI] | static emb. | expansion | proximity |", "|---|---|---|---|---|---|---|---|"]
    for c, per in s["collections"].items():
        for label, x in per.items():
            cells = []
            for m in ("minilm", "e5"):
                v = x["systems"].get(m)
                seen = m in label.split("[")[-1] if "[" in label else False
                cells.append("—" if v is None else f"#{v['nt_rank']}/#{v['human_rank']}, {v['bias'][0]:+.0f} "
                                                   f"[{v['bias'][1]:+.0f}, {v['bias'][2]:+.0f}]" + (" (seen)" if seen else ""))
            f = x["families"]
            rows.append(f"| {fs.COLLECTIONS[c]} | {label} | {x['tau']:.3f} ({x['tau_lexical']:.3f}) | {cells[0]} | "
                        f"{cells[1]} | {f.get('dense', float('nan')):+.0f} | {f.get('expansion', float('nan')):+.0f} | "
                        f"{f.get('proximity', float('nan')):+.0f} |")
    ch = s["choice"]
    u = ", ".join(f"{m}: {v:.0f}" for m, v in ch["U"].items())
    return ("\n".join(rows) + f"\n\nU (largest |unseen bias| over CISI and CF, points): {u}. Eligible: "
            f"{', '.join(ch['eligible']) or 'none'}; chosen: **{ch['chosen']}**.")


def main() -> None:
    fs.study_cli(__doc__, study, block, OUT_JSON, MARK, "cisi,cf")


if __name__ == "__main__":
    main()
