"""nteval's validation study: how far each NT verdict agrees with human judgments, per kind of
collection, and which families of systems NT over- or understates. Its output ships with the
package (nteval/data/validation.json) and every protocol run prints it as evidence, labelled as
the study's, not the run's.

    python scripts/validation_study.py --shared ../shared/data --work WORK [--write]

1. Indexes SciFact (BEIR; 5,183 abstracts, 300 judged claims, ~1.1 relevant per claim: a precise,
   known-item-like task) and CISI (1,460 library-science abstracts, 76 judged queries, ~41
   relevant per query: a topical task) under WORK, unless already there.
2. Runs ``nteval correlate --systems wide_dense --topics 1000 --seed 42`` on each (28 systems: BM25
   and QLD settings, RM3/Rocchio expansion, query reductions, proximity, an RRF of lexical systems,
   a static-embedding dense model at two sizes and two sparse+dense hybrids), unless already there.
3. From the runs' per-topic scores: each protocol's agreement with human AP (Kendall tau-b with a
   BCa CI, among the better half, and the human-vs-human ceiling), and per family of systems the
   bias: the family's relative advantage over BM25 under the NT verdict measure minus the one the
   humans give it (AP), with a 95 % topic-bootstrap interval (NT and human topics resampled
   independently, 2,000 replicates, seed 0). A bias is *measured* where that interval excludes 0.

``--write`` replaces nteval/data/validation.json and docs/validation.md with the result; without
it the study prints what it would write. The same inputs give the same file (dates aside).
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = "wide_dense"
TOPICS, SEED, BOOT = 1000, 42, 2000

#: The two judged collections and what kind of task each stands for.
COLLECTIONS = {
    "scifact": {"label": "SciFact", "kind": "precise", "corpus": "scifact/beir/corpus.jsonl.gz",
                "queries": "scifact/beir/queries.jsonl", "qrels": "scifact/beir/qrels/test.tsv",
                "description": "biomedical claims; the abstracts that support or refute each claim"},
    "cisi": {"label": "CISI", "kind": "topical", "corpus": "cisi/beir/corpus.jsonl",
             "queries": "cisi/beir/queries.jsonl", "qrels": "cisi/beir/qrels/test.tsv",
             "description": "library-science information needs; every abstract on the topic"},
}

#: Which measured biases a run's notes report (the rule was chosen after a first look at the bias
#: table, where many families showed opposite-signed biases on the two collections): a family's
#: bias under a verdict is *flagged* when its interval excludes 0 on the collection of the verdict's
#: own kind (focused: the precise SciFact; high-recall: the topical CISI), where the verdict claims to
#: hold, or excludes 0 with the same sign on both collections. A bias only on the other kind of
#: collection is the verdict answering another task, which the task statement already says.
FLAG_RULE = ("flagged: the bias interval excludes 0 on the collection of the verdict's own kind, or excludes 0 with "
             "the same sign on both collections")

#: What to do about a measured bias, per (protocol, family).
ADVICE = {
    ("highrecall", "expansion"): "If your users look for specific documents (known-item), act on the focused verdict "
                                 "for expansion systems, not the high-recall one.",
    ("highrecall", "reduction"): "Short queries of a few rare words: the high-recall verdict's ordering of them is not "
                                 "the humans'; compare them with care.",
    ("highrecall", "proximity"): "Proximity scoring: the high-recall verdict's ordering of it is not the humans'.",
    ("focused", "proximity"): "Proximity scoring: the focused verdict rates it higher than humans do.",
    ("highrecall", "dense"): "The high-recall pseudo-qrels come from lexical reference systems: judge a dense "
                             "system's recall with care, and prefer the focused verdict for it.",
    ("highrecall", "hybrid"): "The high-recall pseudo-qrels come from lexical reference systems, which understates "
                              "what the dense part adds: prefer the focused verdict for hybrids.",
    ("focused", "dense"): "The focused verdict orders dense systems much as humans do, but rates them closer to BM25 "
                          "than humans do.",
}


def _matrix(per_topic: Path, measure: str, systems: list[str]) -> np.ndarray:
    import csv
    from collections import defaultdict

    s: dict[str, dict[str, float]] = defaultdict(dict)
    with open(per_topic, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["measure"] == measure:
                s[row["system"]][row["qid"]] = float(row["value"])
    qids = sorted(s[systems[0]])
    return np.array([[s[n][q] for q in qids] for n in systems])


def _advantage(m: np.ndarray, members: list[int], base: int) -> np.ndarray:
    """Mean relative advantage over the baseline of the members, per column set of ``m`` (… × S × T)."""
    means = m.mean(axis=-1)
    return (means[..., members] / means[..., [base]] - 1).mean(axis=-1)


def family_biases(work: Path, name: str, report: dict, rng: np.random.Generator) -> dict:
    from nteval.evidence import families

    names = report["systems"]
    # (a fusion's family needs its inputs, which report.json's system_configs text leaves out: read the set)
    from nteval.systems.base import load_systems
    from nteval.systems.sets import builtin_systems

    configs = {s.name: {"algorithm": s.algorithm, "params": s.params} for s in load_systems(builtin_systems(SYSTEMS))}
    fam = families(configs)
    base = names.index("bm25")
    human = _matrix(work / f"{name}_corr" / "human" / "per_topic.tsv", "AP", names)
    out: dict = {}
    for protocol, measure in (("focused", "RR"), ("highrecall", "AP")):
        nt = _matrix(work / f"{name}_corr" / protocol / "per_topic.tsv", measure, names)
        ix = rng.integers(0, nt.shape[1], (BOOT, nt.shape[1]))
        iy = rng.integers(0, human.shape[1], (BOOT, human.shape[1]))
        nt_b = np.stack([nt[:, i].mean(axis=1) for i in ix])          # BOOT × S
        hu_b = np.stack([human[:, i].mean(axis=1) for i in iy])
        nt_rank = {n: r for r, n in enumerate(sorted(names, key=lambda n: -nt[names.index(n)].mean()), 1)}
        hu_rank = {n: r for r, n in enumerate(sorted(names, key=lambda n: -human[names.index(n)].mean()), 1)}
        for f in sorted({v for v in fam.values() if v}):
            members = [i for i, n in enumerate(names) if fam.get(n) == f and n != "bm25"]
            if not members:
                continue
            nt_adv = float(_advantage(nt, members, base))
            hu_adv = float(_advantage(human, members, base))
            reps = (nt_b[:, members] / nt_b[:, [base]] - 1).mean(axis=1) - (hu_b[:, members] / hu_b[:, [base]] - 1).mean(axis=1)
            lo, hi = np.percentile(reps[np.isfinite(reps)], [2.5, 97.5])
            out.setdefault(protocol, {}).setdefault(f, {})[name] = {
                "systems": [names[i] for i in members], "nt_advantage": round(nt_adv, 4), "human_advantage": round(hu_adv, 4),
                "bias": round(nt_adv - hu_adv, 4), "ci95": [round(float(lo), 4), round(float(hi), 4)],
                "significant": bool(lo > 0 or hi < 0),
                "rank_shift": round(float(np.mean([hu_rank[names[i]] - nt_rank[names[i]] for i in members])), 2)}
    return out


def agreement(work: Path, name: str, report: dict, protocol: str, measure: str) -> dict:
    from nteval.stats import many_topic_tau

    p = next(x for x in report["pairs"] if x["nt"] == protocol and x["nt_measure"] == measure and x["human_measure"] == "AP")
    names = report["systems"]
    x = _matrix(work / f"{name}_corr" / protocol / "per_topic.tsv", measure, names)
    y = _matrix(work / f"{name}_corr" / "human" / "per_topic.tsv", "AP", names)
    many = many_topic_tau(x, y, n_boot=1000, seed=0, target=max(x.shape[1], y.shape[1]))
    top = p.get("stats_top_half") or {}
    ceiling = (report.get("human_ceiling") or {}).get("AP") or {}
    return {"nt_measure": measure, "human_measure": "AP", "kendall": round(p["stats"]["kendall"]["value"], 4),
            "ci95": [round(v, 4) for v in p["ci95"]["kendall"]], "ci_method": "BCa topic bootstrap",
            "better_half_kendall": round(top["kendall"]["value"], 4) if top.get("kendall") else None,
            "human_ceiling_kendall": round(ceiling["kendall"]["mean"], 4) if ceiling.get("kendall") else None,
            "many_topics": ({"kendall": round(many["value"], 4), "ci95": [round(float(v), 4) for v in many["ci95"]],
                             "judged_topics": many["target_topics"]} if many else None),
            "systems": len(report["systems"]), "nt_topics": report["nt"][protocol]["n_topics"],
            "human_topics": report["human"]["judged_topics"]}


def run(shared: Path, work: Path) -> dict:
    from nteval.correlate.agreement import run_correlate
    from nteval.formats.topics import load_qrels
    from nteval.index import build_index

    collections: dict = {}
    for name, c in COLLECTIONS.items():
        idx, out = work / f"{name}_idx", work / f"{name}_corr"
        if not idx.exists():
            build_index([shared / c["corpus"]], idx)
        if not (out / "report.json").is_file():
            run_correlate(idx, shared / c["queries"], shared / c["qrels"], out, systems=SYSTEMS, n_topics=TOPICS, seed=SEED,
                          progress=sys.stderr.isatty())
        qrels = load_qrels(shared / c["qrels"])
        rel = [sum(1 for r in v.values() if r > 0) for v in qrels.values()]
        collections[name] = {"label": c["label"], "kind": c["kind"], "description": c["description"],
                             "judged_queries": len(qrels), "relevant_per_query": round(float(np.mean(rel)), 2),
                             "documents": json.loads((idx / "manifest.json").read_text())["indexes"]["all"]["documents"]}
    rng = np.random.default_rng(0)
    agree: dict = {"focused": {}, "highrecall": {}}
    biases: dict = {}
    for name in COLLECTIONS:
        report = json.loads((work / f"{name}_corr" / "report.json").read_text())
        agree["focused"][name] = agreement(work, name, report, "focused", "RR")
        agree["highrecall"][name] = agreement(work, name, report, "highrecall", "AP")
        for protocol, per in family_biases(work, name, report, rng).items():
            for f, row in per.items():
                biases.setdefault(protocol, {}).setdefault(f, {"collections": {}})["collections"].update(row)
    own_kind = {"focused": "precise", "highrecall": "topical"}
    for protocol, per in biases.items():
        for f, b in per.items():
            cols = b["collections"]
            own = [c for n, c in cols.items() if COLLECTIONS[n]["kind"] == own_kind[protocol] and c["significant"]]
            signs = {np.sign(c["bias"]) for c in cols.values() if c["significant"]}
            consistent = len(cols) > 1 and all(c["significant"] for c in cols.values()) and len(signs) == 1
            # the rule (FLAG_RULE): a bias on the verdict's own kind of collection, or the same on both kinds
            b["flagged"] = bool(own) or consistent
            b["direction"] = int(np.sign(own[0]["bias"])) if own else (int(signs.pop()) if consistent else 0)
            if (protocol, f) in ADVICE:
                b["advice"] = ADVICE[(protocol, f)]
    import nteval

    return {"study": {"summary": f"SciFact and CISI, the {SYSTEMS} set of 28 systems, {TOPICS} NT topics per protocol",
                      "command": "python scripts/validation_study.py --shared ../shared/data --work WORK --write",
                      "systems": SYSTEMS, "nt_topics": TOPICS, "seed": SEED, "bootstrap": BOOT,
                      "date": datetime.date.today().isoformat(), "nteval": nteval.__version__,
                      "collections": collections},
            "agreement": agree, "biases": biases, "flag_rule": FLAG_RULE}


def markdown(study: dict) -> str:
    s = study["study"]
    lines = ["# Validation: how far each NT verdict agrees with human judgments", "",
             f"Made by `{s['command']}` on {s['date']} (nteval {s['nteval']}): {s['summary']}. The same data ship as "
             "`nteval/data/validation.json`; every protocol run prints them as evidence (the study's, not the run's).", "",
             "| collection | kind | documents | judged queries | relevant per query |", "|---|---|---|---|---|"]
    for c in s["collections"].values():
        lines.append(f"| {c['label']} | {c['kind']} | {c['documents']:,} | {c['judged_queries']} | {c['relevant_per_query']} |")
    lines += ["", "## Agreement with human AP (Kendall τ-b of the system rankings, 28 systems)", "",
              "| verdict | collection | τ-b [95 % BCa CI] | better half | human-vs-human ceiling | τ with as many judged as NT topics [95 %] |",
              "|---|---|---|---|---|---|"]
    for protocol, per in study["agreement"].items():
        for name, a in per.items():
            mt = a.get("many_topics")
            lines.append(f"| {protocol} ({a['nt_measure']}) | {s['collections'][name]['label']} | {a['kendall']:.3f} "
                         f"[{a['ci95'][0]:.3f}, {a['ci95'][1]:.3f}] | {a['better_half_kendall']} | {a['human_ceiling_kendall']} | "
                         + (f"{mt['kendall']:.3f} [{mt['ci95'][0]:.3f}, {mt['ci95'][1]:.3f}]" if mt else "n/a") + " |")
    lines += ["", "## Biases by family of systems", "",
              "Bias = the family's relative advantage over BM25 (k1 0.9, b 0.4) under the NT verdict measure minus "
              "the one human AP gives it, averaged over the family's systems; 95 % topic-bootstrap interval "
              f"({s['bootstrap']:,} replicates). Rank shift: human rank − NT rank (positive: NT ranks the family higher). "
              f"A run's notes report the biases {study['flag_rule'].replace('flagged: ', 'where ')}.",
              "", "| verdict | family | collection | NT advantage | human advantage | bias [95 % CI] | rank shift | measured | flagged |",
              "|---|---|---|---|---|---|---|---|---|"]
    from nteval.evidence import FAMILIES

    for protocol, per in study["biases"].items():
        for f, b in per.items():
            for name, c in b["collections"].items():
                lines.append(f"| {protocol} | {FAMILIES.get(f, f)} | {s['collections'][name]['label']} | "
                             f"{c['nt_advantage']:+.1%} | {c['human_advantage']:+.1%} | {c['bias'] * 100:+.1f} pts "
                             f"[{c['ci95'][0] * 100:+.1f}, {c['ci95'][1] * 100:+.1f}] | {c['rank_shift']:+.1f} | "
                             f"{'yes' if c['significant'] else 'no'} | {'**yes**' if b['flagged'] else 'no'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--work", type=Path, required=True, help="where the indexes and correlate runs go (reused)")
    ap.add_argument("--write", action="store_true", help="write nteval/data/validation.json and docs/validation.md")
    a = ap.parse_args()
    study = run(a.shared, a.work)
    text = json.dumps(study, indent=1, ensure_ascii=False) + "\n"
    if a.write:
        (ROOT / "nteval" / "data" / "validation.json").write_text(text, encoding="utf-8")
        (ROOT / "docs" / "validation.md").write_text(markdown(study), encoding="utf-8")
        print("wrote nteval/data/validation.json and docs/validation.md")
    else:
        print(markdown(study))


if __name__ == "__main__":
    main()
