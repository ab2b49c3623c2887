"""The title-leak rules (:mod:`nteval.leak`) on real runs: every run of a protocol's output
directory (title-blind by construction: nteval's systems search ``nt``), plus an outside BM25
(bm25s, its own tokenizer) run twice over the same documents: once with the titles joined to the
abstracts (what a production engine's own index holds) and once over the abstracts only (the
exported, title-stripped collection).

    python scripts/title_leak_study.py INDEX OUT/focused OUT/highrecall --out docs/title_leak.json

Prints, per run, the statistic of its protocol's rule and whether it is flagged.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nteval._version import __version__  # noqa: E402


def bm25s_runs(index_dir: Path, topics: dict[str, str], depth: int = 1000) -> dict[str, dict[str, list]]:
    """bm25s (k1 0.9, b 0.4, Lucene variant) over the ``nt`` documents, with and without titles."""
    import bm25s

    from nteval.corpus.store import FILENAME, DocStore

    store = DocStore(index_dir / FILENAME)
    try:
        docs = [(d, t, a) for d, t, a in store.iter_texts("nt")]
    finally:
        store.close()
    qids = list(topics)
    out = {}
    for name, texts in (("bm25s_title_and_abstract", [f"{t} {a}" for _, t, a in docs]),
                        ("bm25s_abstract_only", [a for _, _, a in docs])):
        tok = bm25s.tokenization.Tokenizer(stopwords="en")
        corpus = tok.tokenize(texts, update_vocab=True, return_as="ids", show_progress=False)
        queries = tok.tokenize([topics[q] for q in qids], update_vocab=False, return_as="ids", show_progress=False)
        model = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
        model.index(corpus, show_progress=False)
        hits, scores = model.retrieve(queries, k=min(depth, len(docs)), show_progress=False)
        out[name] = {q: [(docs[int(i)][0], float(s)) for i, s in zip(row, srow) if s > 0]
                     for q, row, srow in zip(qids, hits, scores)}
    return out


def study(index_dir: Path, proto_out: Path) -> dict:
    from nteval.evaluate import evaluate_run
    from nteval.formats.trec import read_qrels, read_run, read_topics
    from nteval.leak import check_runs

    res = json.loads((proto_out / "results.json").read_text())
    protocol = res["protocol"]
    topics = read_topics(proto_out / "topics.tsv")
    qrels = read_qrels(proto_out / "qrels.txt")
    sources = {q: (q.rsplit("-s", 1)[0] if protocol == "highrecall" else q) for q in topics}
    runs = {p.stem: read_run(p) for p in sorted((proto_out / "runs").glob("*.run"))}
    runs.update(bm25s_runs(index_dir, topics))
    t = time.perf_counter()
    checked = check_runs(index_dir, protocol, runs, topics, sources, list(runs))
    secs = time.perf_counter() - t
    measure = "RR" if protocol == "focused" else "AP"
    for name, r in checked.items():
        r[measure] = round(evaluate_run(qrels, runs[name], [measure])[0][measure], 4)
    return {"protocol": protocol, "topics": len(topics), "seconds_to_check_all": round(secs, 1), "runs": checked}


def table(results: dict[str, dict]) -> str:
    """The Markdown table docs/any-system.md shows: per collection and protocol, the title-seeing
    run, the title-blind maximum (which system) and the threshold."""
    lines = ["| collection | protocol | bm25s over title + abstract | bm25s over abstracts | highest title-blind "
             "nteval system | flagged |", "|---|---|---|---|---|---|"]
    for label, res in results.items():
        for st in res["studies"]:
            runs = st["runs"]
            m = "RR" if st["protocol"] == "focused" else "AP"

            def stat(r: dict) -> str:
                if r["rule"] == "low-overlap topics":
                    return f"{r['hits']}/{r['topics']} first ({r['share']:.2f})"
                return f"{r['share']:.3f} per hit (bound {r['lower']:.3f})"

            blind = {n: r for n, r in runs.items() if not n.startswith("bm25s")}
            top = max(blind, key=lambda n: blind[n]["share"] or 0)
            leak, honest = runs["bm25s_title_and_abstract"], runs["bm25s_abstract_only"]
            flagged = sorted(n for n, r in runs.items() if r["flagged"])
            lines.append(f"| {label} | {st['protocol']} ({st['topics']:,} topics) | {stat(leak)}; {m} {leak[m]:.3f} | "
                         f"{stat(honest)}; {m} {honest[m]:.3f} | {top}: {stat(blind[top])} | {', '.join(flagged) or 'none'} |")
    first = next(iter(results.values()))
    lines.append(f"\nnteval {first['nteval_version']}, {first['date']}.")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", type=Path, nargs="?")
    ap.add_argument("outs", nargs="*", type=Path, help="protocol output directories (results.json, topics, runs/)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--render", nargs="+", metavar="LABEL=JSON", help="only write the table of finished studies")
    ap.add_argument("--doc", type=Path, help="with --render: the page whose <!-- title-leak --> block gets the table")
    a = ap.parse_args()
    if a.render:
        import re

        results = {lab: json.loads(Path(p).read_text()) for lab, p in (x.split("=", 1) for x in a.render)}
        text = a.doc.read_text(encoding="utf-8")
        new, n = re.subn(r"(<!-- title-leak -->\n).*?(\n<!-- /title-leak -->)", lambda m: m.group(1) + table(results)
                         + m.group(2), text, flags=re.S)
        if n != 1:
            raise SystemExit(f"{a.doc}: no <!-- title-leak --> block")
        a.doc.write_text(new, encoding="utf-8")
        return
    result = {"nteval_version": __version__, "date": time.strftime("%Y-%m-%d"), "index": str(a.index),
              "studies": [study(a.index, o) for o in a.outs]}
    for s in result["studies"]:
        print(f"{s['protocol']}: {s['topics']} topics, checked {len(s['runs'])} runs in {s['seconds_to_check_all']} s")
        for name, r in sorted(s["runs"].items(), key=lambda kv: -(kv[1]["share"] or 0)):
            stat = (f"source first on {r['hits']}/{r['topics']} low-overlap topics" if r["rule"] == "low-overlap topics"
                    else f"title-only evidence per hit (lower bound {r['lower']})")
            print(f"  {name:<28} {stat:<40} share {r['share']}  {'FLAGGED' if r['flagged'] else ''}")
    if a.out:
        a.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
