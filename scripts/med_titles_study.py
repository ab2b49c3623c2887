"""MED's NT topics come only from its 318 records with a separable title (issue 57): is that why
the verdict understates neural retrieval there?

    python scripts/med_titles_study.py --work WORK [--write]

WORK holds ``med_idx`` and ``med_corr`` (``nteval correlate --systems wide_dense --topics 1000 --seed
42 --min-human-topics 15``). MED has no title field; 318 of its 1,033 records have a title that could
be separated (../shared/data/README.md), so every NT topic, its title and its query sentence, comes
from those, while the judges' questions cover the whole collection.

**Subcollections.** The same runs are scored twice more, each time on one part of the collection:
the titled 318 or the untitled 715 (the other part's documents leave every ranking and every qrels,
NT's and the judges'; topics with nothing relevant left are not scored). If the understatement came
from drawing topics from the titled part only, it would be confined to where the topics come from and
vanish among the untitled documents; if it is the same on both parts, the topics' origin is not its
cause. Beside it: the share of titled documents among NT's pseudo-relevant ones and the judges'
relevant ones (against 318 of 1,033 in the collection).

Bias: NT's relative advantage over BM25 minus the judges' (AP), points, with a 95 % topic bootstrap
(NT and judged topics resampled independently, 2,000 replicates, seed 0); the shipped design's
pseudo-qrels. (Written 2026-12-02 22:10, after a first look the same evening; it chooses nothing.)

``--write`` writes nteval/data/med_titles.json and the generated block of docs/verdicts.md
(``<!-- med-titles -->``).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fairness_study as fs  # noqa: E402
import loco_fairness_study as loco  # noqa: E402
import residual_study as rs  # noqa: E402  (trec_eval's AP with documents left out)

ROOT = Path(__file__).resolve().parents[1]
OUT_JSON = ROOT / "nteval" / "data" / "med_titles.json"
DOC = ROOT / "docs" / "verdicts.md"
MARK = "med-titles"
PARTS = ("whole collection", "titled", "untitled")
SHOWN = ("e5", "minilm")


def titled_records(idx: Path) -> tuple[set[str], set[str]]:
    """The ids of the index's records with a title (as its document store keeps them), and the ids
    of all its records."""
    from nteval.corpus.store import FILENAME, DocStore

    store = DocStore(idx / FILENAME)
    try:
        rows = [(d, (t or "").strip()) for d, t, _ in store.iter_texts("all")]
    finally:
        store.close()
    return {d for d, t in rows if t}, {d for d, _ in rows}


def part_scores(order: dict[str, dict[str, list[str]]], qrels: dict, outside: set[str]) -> dict[str, np.ndarray]:
    """Per system, per-topic AP with the documents of ``outside`` left out of rankings and qrels
    (the topics with something relevant left)."""
    qids = [q for q in sorted(qrels) if {d for d, r in qrels[q].items() if r > 0} - outside]
    return {n: np.array([rs.residual_ap(o.get(q, []), {d for d, r in qrels[q].items() if r > 0}, outside) for q in qids])
            for n, o in order.items()}


def study(work: Path, names: tuple[str, ...] = ("med",)) -> dict[str, Any]:
    from nteval.formats.trec import read_qrels, read_run

    c = loco.Collection(work, "med")
    titled, records = titled_records(c.idx)   # (a part leaves out every record of the other: all of them)
    pseudo = loco.Judge(c).qrels_for("shipped")("bm25")
    judged = read_qrels(c.corr / "human" / "qrels.txt")
    human = {n: read_run(c.corr / "human" / "runs" / f"{n}.run") for n in c.names}
    order = {"nt": fs._ordered(c.runs, c.names), "judges": fs._ordered(human, c.names)}
    out: dict[str, Any] = {"titled_records": len(titled), "records": len(records)}
    for label, q in (("nt", pseudo), ("judges", judged)):
        rel = [d for x in q.values() for d, r in x.items() if r > 0]
        out[f"titled_share_{label}"] = round(float(np.mean([d in titled for d in rel])), 3)
    parts: dict[str, Any] = {}
    for part in PARTS:
        outside = set() if part == "whole collection" else (records - titled if part == "titled" else titled)
        nt, hu = part_scores(order["nt"], pseudo, outside), part_scores(order["judges"], judged, outside)
        both = {n: (nt[n], nt["bm25"]) for n in c.names}   # (rs.bias: per system, its scores and BM25's)
        both_h = {n: (hu[n], hu["bm25"]) for n in c.names}
        rng = np.random.default_rng(rs.SEED)
        parts[part] = {"topics": {"nt": len(nt["bm25"]), "judges": len(hu["bm25"])},
                       "systems": {n: rs.bias(both, both_h, [n], rng) for n in SHOWN},
                       "families": {f: rs.bias(both, both_h, [n for n in c.names if c.family[n] == f], rng)
                                    for f in loco.FAMILIES if any(c.family[n] == f for n in c.names)}}
        print(f"MED {part:16s} e5 {loco._b(parts[part]['systems']['e5'])} neural {loco._b(parts[part]['families']['neural'])}",
              file=sys.stderr, flush=True)
    out["parts"] = parts
    out["method"] = {"boot": rs.BOOT, "seed": rs.SEED, "design": "shipped (lexical vote + MiniLM int8-128 equal share)"}
    return out


def block(s: dict[str, Any]) -> str:
    lines = ["| part of MED | topics (NT / judged) | e5 (unseen) | MiniLM | " + " | ".join(loco.LABEL[f] for f in loco.FAMILIES)
             + " |", "|---|---|---|---|" + "---|" * len(loco.FAMILIES)]
    for part, x in s["parts"].items():
        lines.append(f"| {part} | {x['topics']['nt']} / {x['topics']['judges']} | {loco._b(x['systems']['e5'])} | "
                     f"{loco._b(x['systems']['minilm'])} | " + " | ".join(loco._b(x["families"].get(f)) for f in loco.FAMILIES) + " |")
    lines += ["", f"Titled records: {s['titled_records']} of {s['records']} "
                  f"({s['titled_records'] / s['records'] * 100:.0f} %); among NT's pseudo-relevant documents "
                  f"{s['titled_share_nt'] * 100:.0f} %, among the judges' relevant ones {s['titled_share_judges'] * 100:.0f} %. "
                  "Bias: NT's relative advantage over BM25 minus the judges' (AP), points, [95 % topic bootstrap, 2,000 "
                  "replicates], the runs scored on the part alone (the other part's documents out of rankings and qrels)."]
    return "\n".join(lines)


def main() -> None:
    fs.study_cli(__doc__, study, block, OUT_JSON, MARK, "med")


if __name__ == "__main__":
    main()
