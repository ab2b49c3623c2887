"""The title-leak guard (:mod:`nteval.leak`) on real runs: every shipped system searching the
title-stripped collection (title-blind: lexical, expansion, proximity, query reduction, static
embeddings, all-MiniLM-L6-v2 on torch and ONNX int8, multilingual-e5-small, the hybrids; plus bm25s,
an outside BM25 with its own tokenizer), the same systems searching titles and abstracts (the
``all`` index: what a production engine's own index holds), and mixes of the two: the titles searched
on a share of the topics (50, 30, 20 %, the first of their sha256 order), and both fields fused (RRF
of the two runs). For each run: its class (:meth:`nteval.traits.Matches.ranking_class`), the
guard's statistics and whether it is refused; per collection, protocol and class, the most any
title-blind system reached (what the thresholds must stay above), the false positives (title-blind
runs refused: the rule is that there are none) and the share of title-searching runs caught.

    python scripts/title_leak_study.py --work WORK --collection sample=IDX:PIN --collection pubmed=IDX:PIN \\
        [--torch sample,cisi] [--e5 cisi,cf] [--write]

Each ``--collection LABEL=INDEX:PIN``: an index made by ``nteval index`` and a pin of it (``nteval pin
--topics 1000``; its focused and high-recall topics are the study's). Runs are cached by nteval's run
cache in ``WORK/runs-LABEL/PROTOCOL/{nt,all}``, each collection's statistics saved in
``WORK/title-leak-LABEL.json`` (``--collection LABEL=saved`` reads them back instead). ``--torch`` / ``--e5``: the collections where
all-MiniLM-L6-v2 on torch (256 word pieces) and e5 also run (e5 encodes 2 to 4 documents a second
here: not at PubMed scale). ``--write`` writes docs/title_leak.json and the generated blocks of
docs/bring-your-own.md; ``--render`` rewrites the blocks from the JSON.

**The thresholds' rule, written before the numbers of CISI, CF, SciFact and MED were seen**
(2026-12-02, after the sample's and PubMed's): for each protocol and class, the *blind* level is the
largest statistic any title-blind run of that class reached on any collection; ``RESCUE_BLIND`` is it
rounded up to 0.05, ``RESCUE_CEILING`` that plus 0.10, ``RESCUE_FLAG`` the ceiling plus 0.15 (at most
0.95); ``HIGHRECALL_CEILING`` the blind level's lower bound rounded up to 0.01 plus 0.02, and
``HIGHRECALL_FLAG`` the blind mean rounded up to 0.01 plus 0.03. No title-blind run may be refused.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Any

from nteval.atomic import write_text as atomic_write

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUT_JSON = ROOT / "docs" / "title_leak.json"
DOC = ROOT / "docs" / "bring-your-own.md"

SYSTEMS = """
- {name: bm25, algorithm: bm25}
- {name: bm25_k1.2_b0.75, algorithm: bm25, params: {k1: 1.2, b: 0.75}}
- {name: bm25_k0.4_b0.2, algorithm: bm25, params: {k1: 0.4, b: 0.2}}
- {name: qld_mu1000, algorithm: qld, params: {mu: 1000}}
- {name: qld_mu100, algorithm: qld, params: {mu: 100}}
- {name: bm25_rm3, algorithm: bm25_rm3, params: {fb_docs: 10, fb_terms: 10, original_query_weight: 0.5}}
- {name: bm25_rocchio, algorithm: bm25_rocchio, params: {fb_docs: 10, fb_terms: 10}}
- {name: disjunctive_5, algorithm: disjunctive, params: {max_words: 5}}
- {name: disjunctive_2, algorithm: disjunctive, params: {max_words: 2}}
- {name: disjunctive_1, algorithm: disjunctive, params: {max_words: 1}}
- {name: conj_disj_6, algorithm: conj_disj, params: {max_words: 6}}
- {name: and_then_5, algorithm: and_then, params: {max_words: 5}}
- {name: proximity_only, algorithm: proximity, params: {depth: 100}}
- {name: bm25x2_proximity, algorithm: bm25_proximity, params: {depth: 100, bm25_weight: 2.0, proximity_weight: 1.0}}
- {name: rrf_bm25_qld_rm3, algorithm: rrf, params: {systems: [bm25, qld_mu1000, bm25_rm3], k: 60}}
- {name: dense, algorithm: dense}
- {name: dense_d64, algorithm: dense, params: {dim: 64}}
- {name: hybrid_rrf, algorithm: rrf, params: {systems: [bm25, dense], k: 60}}
- {name: hybrid_linear, algorithm: linear, params: {systems: [bm25, dense]}}
- {name: minilm_int8, algorithm: dense, params: {model: minilm, backend: onnx-int8, max_tokens: 128}}
- {name: minilm_int8_bm25_rrf, algorithm: rrf, params: {systems: [bm25, minilm_int8], k: 60}}
"""
TORCH = """
- {name: minilm, algorithm: dense, params: {model: minilm}}
- {name: minilm_bm25_rrf, algorithm: rrf, params: {systems: [bm25, minilm], k: 60}}
"""
E5 = """
- {name: e5, algorithm: dense, params: {model: e5}}
- {name: e5_bm25_rrf, algorithm: rrf, params: {systems: [bm25, e5], k: 60}}
"""
#: the shares of the topics the mixes search with the titles
SHARES = (0.5, 0.3, 0.2)
DEPTH = 1000


def _systems(work: Path, torch: bool, e5: bool) -> list:
    from nteval.systems.base import load_systems

    p = work / f"systems{'-torch' if torch else ''}{'-e5' if e5 else ''}.yaml"
    p.write_text(SYSTEMS + (TORCH if torch else "") + (E5 if e5 else ""), encoding="utf-8")
    return load_systems(p)


def computed_runs(index: Path, pin: Path, runs_dir: Path, torch: bool, e5: bool) -> None:
    """Every system over ``nt`` and over ``all`` on the pin's topics of both protocols (cached)."""
    from nteval.formats.trec import read_topics
    from nteval.runs import Searched, run_all
    from nteval.settings import Execution

    systems = _systems(runs_dir.parent, torch, e5)
    for proto in ("focused", "highrecall"):
        topics = read_topics(pin / proto / "topics.tsv")
        for where in ("nt", "all"):
            t = time.perf_counter()
            run_all(Searched.of(index, where), topics, systems, runs_dir / proto / where, DEPTH, Execution(progress=False))
            print(f"  {proto} over {where}: {len(systems)} systems, {time.perf_counter() - t:.0f} s", flush=True)


def bm25s_runs(index_dir: Path, topics: dict[str, str], depth: int = DEPTH) -> dict[str, dict[str, list]]:
    """bm25s (k1 0.9, b 0.4, Lucene variant, its own tokenizer) over the ``nt`` documents, with and
    without their titles (``all`` / ``nt``)."""
    import bm25s

    from nteval.corpus.store import FILENAME, DocStore

    store = DocStore(index_dir / FILENAME)
    try:
        docs = [(d, t, a) for d, t, a in store.iter_texts("nt")]
    finally:
        store.close()
    qids = list(topics)
    out = {}
    for where, texts in (("all", [f"{t} {a}" for _, t, a in docs]), ("nt", [a for _, _, a in docs])):
        tok = bm25s.tokenization.Tokenizer(stopwords="en")
        corpus = tok.tokenize(texts, update_vocab=True, return_as="ids", show_progress=False)
        queries = tok.tokenize([topics[q] for q in qids], update_vocab=False, return_as="ids", show_progress=False)
        model = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
        model.index(corpus, show_progress=False)
        hits, scores = model.retrieve(queries, k=min(depth, len(docs)), show_progress=False)
        out[where] = {q: [(docs[int(i)][0], float(s)) for i, s in zip(row, srow) if s > 0]
                      for q, row, srow in zip(qids, hits, scores)}
    return out


def mixes(blind: dict[str, list], seeing: dict[str, list], qids: list[str], depth: int = DEPTH) -> dict[str, dict[str, list]]:
    """The titles searched on a share of the topics (the first of their sha256 order), the
    abstracts on the rest; and both fields fused (RRF, k 60, of the two runs)."""
    order = sorted(qids, key=lambda q: hashlib.sha256(q.encode()).digest())
    out = {}
    for share in SHARES:
        leaked = set(order[: round(share * len(order))])
        out[f"titles_{round(share * 100)}"] = {q: (seeing if q in leaked else blind).get(q, []) for q in qids}
    fused = {}
    for q in qids:
        sc: dict[str, float] = {}
        for r in (blind.get(q, []), seeing.get(q, [])):
            for i, (d, _) in enumerate(r[:depth]):
                sc[d] = sc.get(d, 0.0) + 1.0 / (60 + i + 1)
        fused[q] = sorted(sc.items(), key=lambda kv: (-kv[1], kv[0]))[:depth]
    out["both_fields"] = fused
    return out


def _families() -> dict[str, str | None]:
    """Each study system's family (bm25s: BM25)."""
    import tempfile

    from nteval.systems.base import load_systems
    from nteval.systems.families import families

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "systems.yaml"
        f.write_text(SYSTEMS + TORCH + E5, encoding="utf-8")
        systems = load_systems(f, listing=True)
    return {**families({s.name: {"algorithm": s.algorithm, "params": s.params} for s in systems}), "bm25s": "bm25"}


def collection_study(label: str, index: Path, pin: Path, runs_dir: Path) -> dict[str, Any]:
    """The guard's statistics and decisions for every run of one collection."""
    from nteval.formats.trec import read_run_top, read_topics
    from nteval.index import read_manifest
    from nteval.leak import OUTSIDE_TOP, check_runs
    from nteval.traits import CLASS_TOP

    top = max(OUTSIDE_TOP, CLASS_TOP)  # (what the rules read of a run: its top 100)

    manifest = read_manifest(index)
    out: dict[str, Any] = {"label": label, "documents": manifest["indexes"]["all"]["documents"],
                           "nt_documents": manifest["indexes"]["nt"]["documents"], "protocols": {}}
    for proto in ("focused", "highrecall"):
        topics = read_topics(pin / proto / "topics.tsv")
        qids = list(topics)
        sources = {q: (q.rsplit("-s", 1)[0] if proto == "highrecall" else q) for q in topics}
        runs: dict[str, dict[str, list]] = {}
        for where in ("nt", "all"):
            for p in sorted((runs_dir / proto / where).glob("*.run")):
                runs[f"{p.stem}@{where}"] = read_run_top(p, top)
        for where, run in bm25s_runs(index, topics, top).items():
            runs[f"bm25s@{where}"] = run
        for name in [n for n in list(runs) if n.endswith("@nt")]:
            base = name[: -len("@nt")]
            if f"{base}@all" in runs:
                for k, v in mixes(runs[name], runs[f"{base}@all"], qids, top).items():
                    runs[f"{base}@{k}"] = v
        t = time.perf_counter()
        checked = check_runs(index, proto, runs, topics, sources, list(runs))
        rows = {}
        fam = _families()
        for name, r in checked.items():
            system, where = name.split("@")
            row = {k: v for k, v in r.items() if k not in ("rescued", "text")}
            row.update(system=system, family=fam.get(system), searched=where, title_blind=where == "nt",
                       refused=bool(r["flagged"]))
            if r["rule"] == "outside":  # (the protocol's own statistic too: the table of levels, and if the
                row["protocol_rule"] = _protocol_rule(index, proto, runs[name], topics, sources, r["class"], qids)
            rows[name] = row
        out["protocols"][proto] = {"topics": len(topics), "seconds_to_check_all": round(time.perf_counter() - t, 1),
                                   "runs": rows}
        print(f"  {label} {proto}: checked {len(rows)} runs", flush=True)
    return out


def refused(row: dict[str, Any]) -> bool:
    """Whether the guard refuses a run, from the statistics the study stored, at the thresholds in
    force (:mod:`nteval.leak`): a change of a threshold changes the published table only through here."""
    from nteval import leak

    cls = row["class"]
    if row["rule"] == "outside":
        return bool(row["outside_topics"] >= leak.OUTSIDE_TOPICS)
    if row["rule"] == "rescues":
        p = leak._binomial_p(row["hits"], row["misses"], leak.RESCUE_CEILING[cls])
        return bool(row["misses"] > 0 and row["hits"] / row["misses"] >= leak.RESCUE_FLAG[cls] and p < leak.P_LEAK)
    return bool(row["share"] >= leak.HIGHRECALL_FLAG[cls] and row["lower"] > leak.HIGHRECALL_CEILING[cls])


def undecided(row: dict[str, Any]) -> bool:
    """Whether the guard says of a run it does not refuse that it cannot tell (an encoder's evidence
    beyond what a lexical system reaches without the titles)."""
    from nteval import leak

    if refused(row) or row["class"] != leak.NONLEXICAL or row["rule"] == "outside":
        return False
    lexical = {**row, "class": leak.LEXICAL}
    if row["rule"] == "rescues":
        return bool(row["misses"] and (refused(lexical) or row["hits"] / row["misses"] > leak.RESCUE_BLIND[leak.LEXICAL]))
    return refused(lexical)


_RANKS: dict[str, dict] = {}


def _protocol_rule(index: Path, proto: str, run: dict, topics: dict, sources: dict, cls: str, qids: list) -> dict:
    """The protocol's own rule on a run the outside rule refused (what it alone would have shown)."""
    from nteval.leak import MAX_TOPICS, focused_leak, highrecall_leak, reference_ranks
    from nteval.traits import Terms, titles_of

    if proto == "focused":
        key = f"{index}:{len(topics)}"
        if key not in _RANKS:
            _RANKS[key] = reference_ranks(index, topics, sources)
        r = focused_leak(run, _RANKS[key], sources, cls)
        r.pop("rescued", None)
        return r
    q = sorted(topics)[:MAX_TOPICS]
    terms = Terms(index)
    try:
        return highrecall_leak(terms, run, topics, titles_of(index, (d for x in q for d, _ in run.get(x, [])[:10])), q, cls)
    finally:
        terms.close()


def _up(v: float, step: float) -> float:
    return round(math.ceil(v / step - 1e-9) * step, 4)


def blind_levels(collections: dict[str, Any]) -> dict[str, Any]:
    """Per protocol and class, the most any title-blind run reached on any collection (and which)."""
    levels: dict[str, Any] = {}
    for label, col in collections.items():
        for proto, st in col["protocols"].items():
            for name, r in st["runs"].items():
                if not r["title_blind"]:
                    continue
                key = f"{proto}/{r['class']}"
                v = r.get("share") or 0.0
                lv = levels.setdefault(key, {"value": 0.0, "lower": -1.0})
                if r["rule"] == "outside":
                    continue
                if v > lv["value"]:
                    lv.update(value=v, run=name, collection=label)
                if proto == "highrecall" and r["lower"] > lv["lower"]:
                    lv.update(lower=r["lower"], lower_run=name, lower_collection=label)
    return levels


def thresholds(levels: dict[str, Any]) -> dict[str, Any]:
    """The thresholds the rule (module docstring) gives from the blind levels."""
    out: dict[str, Any] = {}
    for cls in ("lexical", "non-lexical"):
        f = levels.get(f"focused/{cls}", {"value": 0.0})
        blind = _up(f["value"], 0.05)
        out[f"RESCUE_BLIND[{cls}]"] = blind
        out[f"RESCUE_CEILING[{cls}]"] = round(blind + 0.10, 4)
        out[f"RESCUE_FLAG[{cls}]"] = round(min(0.95, blind + 0.25), 4)
        h = levels.get(f"highrecall/{cls}", {"value": 0.0, "lower": 0.0})
        out[f"HIGHRECALL_CEILING[{cls}]"] = round(_up(max(h["lower"], 0.0), 0.01) + 0.02, 4)
        out[f"HIGHRECALL_FLAG[{cls}]"] = round(_up(h["value"], 0.01) + 0.03, 4)
    return out


def group(name: str) -> str:
    where = name.split("@")[1]
    return {"nt": "title-blind", "all": "titles and abstracts", "both_fields": "both fields fused"}.get(
        where, f"titles on {where.split('_')[1]} % of the topics" if where.startswith("titles_") else where)


def summary(collections: dict[str, Any]) -> list[dict[str, Any]]:
    """Per collection and protocol and group of runs: how many, how many refused."""
    rows = []
    for label, col in collections.items():
        for proto, st in col["protocols"].items():
            groups: dict[str, list] = {}
            for name, r in st["runs"].items():
                groups.setdefault(group(name), []).append((name, r))
            for g, members in groups.items():
                out = [n for n, r in members if refused(r)]
                rows.append({"collection": label, "protocol": proto, "group": g, "runs": len(members),
                             "refused": len(out), "undecided": sum(1 for _, r in members if undecided(r)),
                             "by_outside": sum(1 for n, r in members if refused(r) and r["rule"] == "outside"),
                             "missed": sorted(n.split("@")[0] for n, r in members if not refused(r))
                             if g != "title-blind" else [],
                             "false_positives": sorted(out) if g == "title-blind" else []})
    return rows


GROUPS = ("title-blind", "titles and abstracts", "titles on 50 % of the topics", "titles on 30 % of the topics",
          "titles on 20 % of the topics", "both fields fused")


def table(study: dict[str, Any]) -> str:
    """docs/bring-your-own.md's table: per collection and protocol, the title-blind runs refused (false
    positives) and the title-searching runs caught, by group."""
    head = "| collection (records; with an abstract) | protocol | " + " | ".join(GROUPS) + " |"
    lines = [head, "|" + "---|" * (len(GROUPS) + 2)]
    by = {(r["collection"], r["protocol"], r["group"]): r for r in study["summary"]}
    for label, col in study["collections"].items():
        for proto in ("focused", "highrecall"):
            cells = []
            for g in GROUPS:
                r = by.get((label, proto, g))
                if r is None:
                    cells.append("—")
                elif g == "title-blind":
                    cells.append(f"**{r['refused']} of {r['runs']} refused**")
                else:
                    cells.append(f"{r['refused']} of {r['runs']} caught" + (f" ({r['by_outside']} by outside hits)"
                                                                           if r["by_outside"] else ""))
            lines.append(f"| {label} ({col['documents']:,}; {col['nt_documents']:,}) | "
                         f"{'known-item' if proto == 'focused' else 'topical'} ({col['protocols'][proto]['topics']:,} "
                         f"topics) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def levels_table(study: dict[str, Any]) -> str:
    """The most title-blind runs reached, per protocol and class, and the thresholds in force."""
    from nteval import leak

    lines = ["| protocol | class | most a title-blind run reached (run, collection) | nteval's thresholds |",
             "|---|---|---|---|"]
    for key, lv in sorted(study["blind_levels"].items()):
        proto, cls = key.split("/")
        if proto == "focused":
            what = f"{lv['value']:.0%} of BM25's misses ranked first ({lv.get('run', '—')}, {lv.get('collection', '—')})"
            rule = (f"refused from {leak.RESCUE_FLAG[cls]:.0%} (binomial p < {leak.P_LEAK} against "
                    f"{leak.RESCUE_CEILING[cls]:.0%}); gains discounted above {leak.RESCUE_BLIND[cls]:.0%}")
        else:
            what = (f"{lv['value']:.3f} per hit ({lv.get('run', '—')}, {lv.get('collection', '—')}); lower bound "
                    f"{lv['lower']:.3f} ({lv.get('lower_run', '—')}, {lv.get('lower_collection', '—')})")
            rule = f"refused from {leak.HIGHRECALL_FLAG[cls]:.2f} per hit with a lower bound above {leak.HIGHRECALL_CEILING[cls]:.2f}"
        lines.append(f"| {'known-item' if proto == 'focused' else 'topical'} | {cls} | {what} | {rule} |")
    return "\n".join(lines)


def render(study: dict[str, Any], doc: Path = DOC) -> None:
    text = doc.read_text(encoding="utf-8")
    for block, made in (("title-leak", table(study)), ("title-leak-levels", levels_table(study))):
        text, n = re.subn(rf"(<!-- {block} -->\n)(?:.*?\n)?(<!-- /{block} -->)",
                          lambda m: m.group(1) + made + "\n" + m.group(2), text, flags=re.S)
        if n != 1:
            raise SystemExit(f"{doc}: no <!-- {block} --> block")
    atomic_write(doc, text)


def main() -> None:
    from nteval._version import __version__

    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--work", type=Path)
    ap.add_argument("--collection", action="append", default=[], metavar="LABEL=INDEX:PIN")
    ap.add_argument("--torch", default="", help="collections where torch's all-MiniLM-L6-v2 runs too")
    ap.add_argument("--e5", default="", help="collections where multilingual-e5-small runs too")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--render", action="store_true", help="only rewrite the page's blocks from docs/title_leak.json")
    a = ap.parse_args()
    if a.render:
        render(json.loads(OUT_JSON.read_text(encoding="utf-8")))
        return
    collections = {}
    for spec in a.collection:
        label, rest = spec.split("=", 1)
        saved = a.work / f"title-leak-{label}.json"
        if rest == "saved":  # (a collection studied before, its statistics saved in WORK)
            collections[label] = json.loads(saved.read_text(encoding="utf-8"))
            continue
        index, pin = (Path(x) for x in rest.split(":", 1))
        runs_dir = a.work / f"runs-{label}"
        print(f"{label}: runs", flush=True)
        computed_runs(index, pin, runs_dir, label in a.torch.split(","), label in a.e5.split(","))
        collections[label] = collection_study(label, index, pin, runs_dir)
        atomic_write(saved, json.dumps(collections[label]) + "\n")
    for col in collections.values():  # (the decisions at the thresholds in force, from the statistics stored)
        for st in col["protocols"].values():
            for row in st["runs"].values():
                row["refused"] = refused(row)
    study = {"nteval_version": __version__, "date": time.strftime("%Y-%m-%d"), "collections": collections}
    study["blind_levels"] = blind_levels(collections)
    study["rule_gives"] = thresholds(study["blind_levels"])
    study["summary"] = summary(collections)
    print(table(study))
    print(json.dumps(study["blind_levels"], indent=1))
    print(json.dumps(study["rule_gives"], indent=1))
    if a.write:
        atomic_write(OUT_JSON, json.dumps(study, indent=1) + "\n")
        render(study)


if __name__ == "__main__":
    main()
