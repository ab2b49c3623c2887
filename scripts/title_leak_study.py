"""The title-leak rules (:mod:`nteval.leak`) on real runs: every run of a protocol's output
directory (title-blind by construction: nteval's systems search ``nt``), plus an outside BM25
(bm25s, its own tokenizer) run over the same documents with the titles joined to the abstracts
(what a production engine's own index holds), over the abstracts only (the exported,
title-stripped collection), and, for the focused protocol, mixes of the two: the titles searched
on a share of the topics (50, 30, 20 %), the abstracts only on the rest. For each mix: what the
titles added (its RR minus the abstracts-only run's), what a gate with the abstracts-only engine as
its baseline takes off its decision (:func:`nteval.leak.title_gain`), and how often the focused
rule refuses it on 300 topics drawn from the study's and on all of them; for the title-blind system
that rescues most, what a gate with nteval's BM25 as its baseline takes off (the cost to an honest
candidate).

    python scripts/title_leak_study.py INDEX OUT/focused OUT/highrecall --out docs/title_leak.json
    python scripts/title_leak_study.py INDEX OUT/focused --keep docs/title_leak.json --out docs/title_leak.json

``--keep OLD``: the studies of OLD for the protocols not given here are kept (a change of one rule
recomputes that rule's study only). Prints, per run, the statistic of its protocol's rule and
whether it is flagged.
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


#: the shares of the topics the mixes search with the titles
SHARES = (0.5, 0.3, 0.2)


def mixed_runs(runs: dict[str, dict[str, list]], topics: dict[str, str]) -> dict[str, dict[str, list]]:
    """bm25s over title + abstract on a share of the topics (the first of their sha256 order),
    over the abstracts on the others: an engine that searched the titles for part of its topics."""
    import hashlib

    order = sorted(topics, key=lambda q: hashlib.sha256(q.encode()).digest())
    out = {}
    for share in SHARES:
        leaked = set(order[: round(share * len(order))])
        out[f"bm25s_titles_{round(share * 100)}"] = {
            q: runs["bm25s_title_and_abstract" if q in leaked else "bm25s_abstract_only"].get(q, []) for q in topics}
    return out


def study(index_dir: Path, proto_out: Path) -> dict:
    from nteval.evaluate import evaluate_run
    from nteval.formats.trec import read_qrels, read_run, read_topics
    from nteval.leak import check_runs, reference_ranks

    res = json.loads((proto_out / "results.json").read_text())
    protocol = res["protocol"]
    topics = read_topics(proto_out / "topics.tsv")
    qrels = read_qrels(proto_out / "qrels.txt")
    sources = {q: (q.rsplit("-s", 1)[0] if protocol == "highrecall" else q) for q in topics}
    runs = {p.stem: read_run(p) for p in sorted((proto_out / "runs").glob("*.run"))}
    runs.update(bm25s_runs(index_dir, topics))
    if protocol == "focused":
        runs.update(mixed_runs(runs, topics))
    t = time.perf_counter()
    checked = check_runs(index_dir, protocol, runs, topics, sources, list(runs))
    secs = time.perf_counter() - t
    measure = "RR" if protocol == "focused" else "AP"
    per_topic = {}
    for name, r in checked.items():
        mean, per = evaluate_run(qrels, runs[name], [measure])
        r[measure] = round(mean[measure], 4)
        per_topic[name] = {q: v[measure] for q, v in per.items()}
    out = {"protocol": protocol, "topics": len(topics), "seconds_to_check_all": round(secs, 1), "runs": checked}
    if protocol == "focused":
        out["shares"] = shares(runs, per_topic, checked, reference_ranks(index_dir, topics, sources), sources)
        for r in checked.values():
            r.pop("rescued", None)
    return out


def shares(runs: dict, per_topic: dict, checked: dict, ranks: dict, sources: dict, draws: int = 200,
           seed: int = 7) -> list[dict]:
    """Per run that searched the titles (on all topics, or a share) and for the title-blind nteval
    system that rescues most: what the titles added to RR, what a gate takes off its decision
    (:func:`nteval.leak.title_gain`: against bm25s over the abstracts for the mixes, nteval's BM25
    for the title-blind system), and how often the focused rule refuses it on ``draws`` sets of 300
    topics (without replacement) and on all of them."""
    import numpy as np

    from nteval.leak import focused_leak, title_gain

    rng = np.random.default_rng(seed)
    qids = sorted(ranks)
    blind = [n for n in checked if not n.startswith("bm25s") and n != "bm25"]
    top_blind = max(blind, key=lambda n: checked[n]["share"] or 0)
    rows = []
    for name in ["bm25s_title_and_abstract", *[n for n in checked if n.startswith("bm25s_titles_")], top_blind]:
        base = "bm25" if name == top_blind else "bm25s_abstract_only"
        tg = title_gain(checked[name], per_topic[base], per_topic[name], len(qids))
        added = np.mean([per_topic[name][q] - per_topic[base][q] for q in qids])
        refused = 0
        for _ in range(draws):
            pick = rng.choice(qids, 300, replace=False) if len(qids) > 300 else qids
            refused += focused_leak(runs[name], {q: ranks[q] for q in pick}, sources)["flagged"]
        rows.append({"run": name, "baseline": base, "title_blind": name == top_blind, "gain": round(float(added), 4),
                     "taken_off": tg["gain"], "every_gain": tg["every_gain"], "refused_300": round(refused / draws, 3),
                     "refused_all": bool(checked[name]["flagged"])})
    return rows


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
                if r["rule"] == "rescues":
                    return f"{r['hits']}/{r['misses']} rescued ({r['share']:.2f})"
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


def shares_table(results: dict[str, dict]) -> str:
    """The Markdown table of the titles searched on a share of the topics: what the titles added,
    what a gate takes off its decision, and how often the focused rule refuses the run."""
    lines = ["| collection | run (baseline) | RR it gained over the baseline | taken off a gate's decision | refused on "
             "300 topics | refused on all |", "|---|---|---|---|---|---|"]
    for label, res in results.items():
        for st in res["studies"]:
            for r in st.get("shares", []):
                what = (f"{r['run']}, title-blind (nteval's bm25)" if r["title_blind"] else
                        f"{r['run']} (bm25s_abstract_only)")
                lines.append(f"| {label} | {what} | {r['gain']:+.4f} | {r['taken_off']:+.4f} | "
                             f"{r['refused_300']:.0%} of 200 draws | {'yes' if r['refused_all'] else 'no'} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", type=Path, nargs="?")
    ap.add_argument("outs", nargs="*", type=Path, help="protocol output directories (results.json, topics, runs/)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--keep", type=Path, help="a study JSON whose studies of the protocols not given are kept")
    ap.add_argument("--render", nargs="+", metavar="LABEL=JSON", help="only write the table of finished studies")
    ap.add_argument("--doc", type=Path, help="with --render: the page whose <!-- title-leak --> block gets the table")
    a = ap.parse_args()
    if a.render:
        import re

        results = {lab: json.loads(Path(p).read_text()) for lab, p in (x.split("=", 1) for x in a.render)}
        text = a.doc.read_text(encoding="utf-8")
        for block, made in (("title-leak", table(results)), ("title-leak-shares", shares_table(results))):
            text, n = re.subn(rf"(<!-- {block} -->\n).*?(\n<!-- /{block} -->)", lambda m: m.group(1) + made + m.group(2),
                              text, flags=re.S)
            if n != 1:
                raise SystemExit(f"{a.doc}: no <!-- {block} --> block")
        a.doc.write_text(text, encoding="utf-8")
        return
    studies = [study(a.index, o) for o in a.outs]
    if a.keep:  # the studies of the other protocols, as OLD holds them
        done = {st["protocol"] for st in studies}
        studies += [st for st in json.loads(a.keep.read_text())["studies"] if st["protocol"] not in done]
        studies.sort(key=lambda st: ("focused", "highrecall").index(st["protocol"]))
    result = {"nteval_version": __version__, "date": time.strftime("%Y-%m-%d"), "index": str(a.index),
              "studies": studies}
    for s in result["studies"]:
        print(f"{s['protocol']}: {s['topics']} topics, checked {len(s['runs'])} runs in {s['seconds_to_check_all']} s")
        for name, r in sorted(s["runs"].items(), key=lambda kv: -(kv[1]["share"] or 0)):
            stat = (f"rescues {r['hits']}/{r['misses']} of BM25's misses" if r["rule"] == "rescues"
                    else f"title-only evidence per hit (lower bound {r['lower']})")
            print(f"  {name:<28} {stat:<40} share {r['share']}  {'FLAGGED' if r['flagged'] else ''}")
    if a.out:
        a.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
