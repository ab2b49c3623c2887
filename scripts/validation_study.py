"""nteval's validation study: how far each NT verdict agrees with human judgments, per kind of
collection — by rank correlation and by the significance decisions a user acts on — which
families of systems NT over- or understates, and what a verdict cannot see. Its output ships with
the package (nteval/data/validation.json) and every protocol run prints it as evidence, labelled
as the study's, not the run's.

    python scripts/validation_study.py --shared ../shared/data --work WORK --write
    python scripts/validation_study.py --from-snapshot            # the statistics only, from the snapshot

1. **Runs** (hours on 2 cores; reused from WORK by nteval's run cache). Indexes SciFact (BEIR;
   5,183 abstracts, 300 judged claims, ~1.1 relevant per claim: a precise, known-item-like task),
   CISI (1,460 library-science abstracts, 76 judged queries, ~41 relevant per query: a topical
   task) and CISI with half its abstracts dropped (``scripts/drop_abstracts.py --share 0.5 --seed
   1``: what a verdict cannot see), and runs ``nteval correlate --systems wide_dense --topics 1000
   --seed 42`` on each (28 systems: BM25 and QLD settings, RM3/Rocchio expansion, query
   reductions, proximity, an RRF of lexical systems, a static-embedding dense model at two sizes
   and two sparse+dense hybrids).
2. **Snapshot** (``tests/data/validation/snapshot.json.gz``): what the statistics need of those
   runs — every system's per-topic scores (NT focused RR, NT high-recall AP, human AP, the run-based
   baselines' AP) and every ranking's significance decisions (the paired randomization test and
   Holm correction of nteval's verdict). Computing the decisions is the costly part of the
   statistics; they are kept, not recomputed, by ``--from-snapshot``.
3. **Statistics** (seconds; deterministic): per protocol and collection, Kendall τ-b with human AP
   (BCa CI, 1,000 replicates, seed 42: what ``correlate`` reports), among the better half, the
   human-vs-human ceiling, τ with as many judged topics as NT topics; the decision-level figures
   of each verdict and run-based baseline (:mod:`nteval.correlate.decisions`); per family of
   systems the bias: the family's relative advantage over BM25 under the NT verdict measure minus
   the one the humans give it (AP), with a 95 % topic-bootstrap interval (NT and human topics
   resampled independently, 2,000 replicates, seed 0); and the coverage study.

``--write`` replaces nteval/data/validation.json, the snapshot, docs/validation.md and the
generated blocks of docs/verdicts.md and README.md (between ``<!-- validation:NAME -->`` and
``<!-- /validation:NAME -->``); without it the study prints what it would write. The same
snapshot gives the same file, date and version aside: tests/evidence/test_shipped_evidence.py
fails when the shipped file is not what this script computes from the shipped snapshot now.
"""
from __future__ import annotations

import argparse
import datetime
import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from nteval.atomic import write_text as atomic_write

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = "wide_dense"
TOPICS, SEED, BOOT, CORRELATE_BOOT = 1000, 42, 2000, 1000
SNAPSHOT = ROOT / "tests" / "data" / "validation" / "snapshot.json.gz"
STUDY = ROOT / "nteval" / "data" / "validation.json"
DOC = ROOT / "docs" / "validation.md"
COMMAND = "python scripts/validation_study.py --shared ../shared/data --work WORK --write"

#: The two judged collections and what kind of task each stands for.
COLLECTIONS = {
    "scifact": {"label": "SciFact", "kind": "precise", "corpus": "scifact/beir/corpus.jsonl.gz",
                "queries": "scifact/beir/queries.jsonl", "qrels": "scifact/beir/qrels/test.tsv",
                "description": "biomedical claims; the abstracts that support or refute each claim"},
    "cisi": {"label": "CISI", "kind": "topical", "corpus": "cisi/beir/corpus.jsonl",
             "queries": "cisi/beir/queries.jsonl", "qrels": "cisi/beir/qrels/test.tsv",
             "description": "library-science information needs; every abstract on the topic"},
    "cf": {"label": "CF", "kind": "topical", "corpus": "cf/corpus.jsonl", "queries": "cf/queries.jsonl",
           "qrels": "cf/qrels/dev.tsv",
           "description": "cystic fibrosis, MEDLINE records with MeSH; the odd-numbered half of the queries, four "
                          "judges (relevant: any judge's grade > 0)"},
    # (added by issue 57 with --only med: its NT topics come from its 318 records with a separable title,
    # and 15 judged queries need --min-human-topics 15: read its biases with their intervals)
    "med": {"label": "MED", "kind": "topical", "corpus": "med/corpus.jsonl", "queries": "med/queries.jsonl",
            "qrels": "med/qrels/dev.tsv",
            "description": "1960s MEDLINE records, long topical questions; the odd-numbered half of the queries (15); NT "
                           "topics only from its 318 records with a separable title"},
}
#: the fewest judged queries a collection may have (MED's odd half: 15)
MIN_HUMAN_TOPICS = 15
#: What a verdict cannot see: a collection of the study with a seeded share of its abstracts
#: dropped (scripts/drop_abstracts.py), set against the untouched one.
COVERAGE = {"name": "cisi_half_abstracts", "of": "cisi", "share": 0.5, "seed": 1,
            "label": "CISI, half its abstracts dropped"}

#: Which measured biases a run's notes report (the rule was chosen after a first look at the bias
#: table, where many families showed opposite-signed biases on the two collections): a family's
#: bias under a verdict is *flagged* when its interval excludes 0 on the collection of the verdict's
#: own kind (focused: the precise SciFact; high-recall: the topical CISI), where the verdict claims to
#: hold, or excludes 0 with the same sign on both collections. A bias only on the other kind of
#: collection is the verdict answering another task, which the task statement already says.
FLAG_RULE = ("flagged: the bias is larger than 5 points (either way) on a collection of the verdict's own kind, where "
             "the verdict claims to hold")

#: What to do about a measured bias, per (protocol, family).
#: The high-recall verdict as it was judged before the neural reference (the lexical vote alone, the
#: ``--preset lexical`` of today): recomputed from the same runs, for the before/after figures.
BEFORE = "highrecall_lexical"
ADVICE = {
    ("highrecall", "expansion"): "If your users look for specific documents (known-item), act on the focused verdict "
                                 "for expansion systems, not the high-recall one.",
    ("highrecall", "reduction"): "Short queries of a few rare words: the high-recall verdict's ordering of them is not "
                                 "the humans'; compare them with care.",
    ("highrecall", "proximity"): "Proximity scoring: the high-recall verdict's ordering of it is not the humans'.",
    ("focused", "proximity"): "Proximity scoring: the focused verdict rates it higher than humans do.",
    ("highrecall", "neural"): "Judged by lexical and neural references in equal shares (the default with the neural "
                              "extra), and all-MiniLM-L6-v2 is one of them: a MiniLM system is partly judged by its own "
                              "model (the bias above includes that). On CISI and CF the verdict ranks a neural "
                              "retriever near the humans' rank; on MED (MEDLINE) it understates it (and an encoder "
                              "the references do not contain more: the leave-model-out evidence): on a MEDLINE-like "
                              "collection, read an inconclusive or worse high-recall verdict for a neural system as "
                              "possibly NT's, and check it on the focused verdict.",
    ("highrecall", "dense"): "Static embeddings are judged by lexical and neural references, neither of their kind: "
                             "compare a static-embedding system's recall with care.",
    ("highrecall", "static_hybrid"): "Judged by lexical and neural references, neither of the static part's kind: "
                                     "compare such hybrids with care.",
    ("focused", "dense"): "The focused verdict orders dense systems much as humans do, but rates them closer to BM25 "
                          "than humans do.",
    (BEFORE, "neural"): "These pseudo-qrels come from lexical references alone (no neural extra, or a pin made "
                             "without it), which understate neural retrieval: pip install 'nteval[neural]' and pin again.",
    (BEFORE, "hybrid"): "These pseudo-qrels come from lexical references alone, which understate what a neural "
                             "part adds: pip install 'nteval[neural]' and pin again.",
    (BEFORE, "dense"): "These pseudo-qrels come from lexical references alone: judge a static-embedding system's "
                            "recall with care, and prefer the focused verdict for it.",
    (BEFORE, "static_hybrid"): "These pseudo-qrels come from lexical references alone: compare such hybrids with care.",
    (BEFORE, "expansion"): "If your users look for specific documents (known-item), act on the focused verdict "
                                "for expansion systems, not the high-recall one.",
    (BEFORE, "reduction"): "Short queries of a few rare words: the high-recall verdict's ordering of them is not "
                                "the humans'; compare them with care.",
    (BEFORE, "proximity"): "Proximity scoring: the high-recall verdict's ordering of it is not the humans'.",
}
PROTOCOLS = (("focused", "RR"), ("highrecall", "AP"))
#: Every NT side the agreement and bias figures are given for (decisions: PROTOCOLS only).
SIDES = PROTOCOLS + ((BEFORE, "AP"),)
#: The systems the neural figures follow, and the baseline of the gate decisions shown for them.
NEURAL = ("minilm", "minilm_bm25_rrf")
GATE_BASELINE = "bm25"
DECISION_CODE = {"better": "B", "non-inferior": "N", "worse": "W", "inconclusive": "I"}
#: reversed pairs named per ranking and collection in docs/validation.md
REVERSED_SHOWN = 8
BASELINES = ("reference_count", "soboroff")
OWN_KIND = {"focused": "precise", "highrecall": "topical", BEFORE: "topical"}


# -- 1. runs ---------------------------------------------------------------------------------------

def collect(shared: Path, work: Path, only: list[str] | None = None) -> dict[str, Any]:
    """Index and correlate every collection of the study (nteval reuses the runs already in WORK)
    and return the snapshot of what the statistics need; ``only``: these collections, the others
    (and the coverage study unless CISI is one of them) kept as the shipped snapshot has them."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import blank_titles

    from nteval.correlate.agreement import run_correlate
    from nteval.formats.topics import load_qrels
    from nteval.index import build_index
    from nteval.systems.base import load_systems
    from nteval.systems.sets import builtin_systems

    configs = {s.name: {"algorithm": s.algorithm, "params": s.params} for s in load_systems(builtin_systems(SYSTEMS))}
    runs = {name: (shared / c["corpus"], shared / c["queries"], shared / c["qrels"], c) for name, c in COLLECTIONS.items()
            if only is None or name in only}
    of = COLLECTIONS[COVERAGE["of"]]
    if only is None or COVERAGE["of"] in only:
        dropped = work / f"{COVERAGE['name']}_beir"
        blank_titles.blank((shared / of["corpus"]).parent, dropped, COVERAGE["share"], COVERAGE["seed"], "text")
        runs[COVERAGE["name"]] = (dropped / "corpus.jsonl", dropped / "queries.jsonl", dropped / "qrels" / "test.tsv",
                                  {**of, "label": COVERAGE["label"]})
    systems: Any = SYSTEMS
    snap: dict[str, Any] = {"systems": SYSTEMS, "configs": configs, "collections": {}}
    if only is not None:   # (the shipped snapshot's systems: a set that grew since is not re-run on the others)
        kept = read_snapshot()
        changed = sorted(n for n, c in kept["configs"].items() if not _same_config(c, configs.get(n)))
        if changed:
            raise SystemExit(f"--only {','.join(only)}: the shipped snapshot's systems {', '.join(changed)} are not "
                             f"{SYSTEMS}'s now; run the whole study")
        systems = [s for s in load_systems(builtin_systems(SYSTEMS)) if s.name in kept["configs"]]
        snap["configs"] = kept["configs"]
        snap["collections"] = {n: c for n, c in kept["collections"].items() if n not in runs}
    for name, (corpus, queries, qrels_path, c) in runs.items():
        idx, out = work / f"{name}_idx", work / f"{name}_corr"
        if not (idx / "manifest.json").is_file():
            build_index([corpus], idx)
        run_correlate(idx, queries, qrels_path, out, systems=systems, n_topics=TOPICS, seed=SEED, n_boot=CORRELATE_BOOT,
                      min_human_topics=MIN_HUMAN_TOPICS, progress=sys.stderr.isatty())
        qrels = load_qrels(qrels_path)
        rel = [sum(1 for r in v.values() if r > 0) for v in qrels.values()]
        meta = {"label": c["label"], "kind": c["kind"], "description": c["description"], "judged_queries": len(qrels),
                "relevant_per_query": round(float(np.mean(rel)), 2),
                "documents": json.loads((idx / "manifest.json").read_text())["indexes"]["all"]["documents"]}
        snap["collections"][name] = {**meta, **snapshot_of(out)}
    return snap


def _same_config(then: dict[str, Any], now: dict[str, Any] | None) -> bool:
    """Whether a system of the shipped snapshot is the same system now: the same algorithm and
    parameters, a parameter added since at its neutral default (``backend: auto``, ``max_tokens: 0``)."""
    if now is None or now["algorithm"] != then["algorithm"]:
        return False
    added = {k: v for k, v in now["params"].items() if k not in then["params"]}
    return all(now["params"].get(k) == v for k, v in then["params"].items()) and all(
        v in ("auto", 0, None, "") for v in added.values())


# -- 2. snapshot -----------------------------------------------------------------------------------

def _per_topic(path: Path, measure: str, names: list[str], key: str = "system") -> dict[str, Any]:
    import csv
    from collections import defaultdict

    s: dict[str, dict[str, float]] = defaultdict(dict)
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row.get("measure", measure) == measure:
                s[row[key]][row["qid"]] = float(row["value" if "value" in row else measure])
    qids = sorted(s[names[0]])
    return {"qids": qids, "values": [[s[n][q] for q in qids] for n in names]}


def snapshot_of(out: Path) -> dict[str, Any]:
    """What the statistics need of one ``nteval correlate`` output directory."""
    report = json.loads((out / "report.json").read_text())
    names = report["systems"]
    scores = {p: _per_topic(out / p / "per_topic.tsv", m, names) for p, m in PROTOCOLS}
    scores["human"] = _per_topic(out / "human" / "per_topic.tsv", "AP", names)
    import csv

    base: dict[str, dict[str, dict[str, float]]] = {}
    with open(out / "human" / "baselines_per_topic.tsv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            base.setdefault(row["baseline"], {}).setdefault(row["system"], {})[row["qid"]] = float(row["AP"])
    for b in BASELINES:
        qids = sorted(base[b][names[0]])
        scores[b] = {"qids": qids, "values": [[base[b][n][q] for q in qids] for n in names]}
    scores[BEFORE] = lexical_side(out, names)
    d = report["decisions"]
    decisions = {p: {"separated": d["verdicts"][p]["separated_pairs"], "groups": report["verdict"][p]["groups"]}
                 for p, _ in PROTOCOLS}
    decisions["human"] = {"separated": d["human"]["separated_pairs"], "groups": d["human"]["groups"]}
    for b in BASELINES:
        decisions[b] = {"separated": d["baselines"][b]["separated_pairs"], "groups": d["baselines"][b]["groups"]}
    index = {n: i for i, n in enumerate(names)}
    gate = {side: {"test": g["method"], "rows": [[index[r["baseline"]], index[r["candidate"]],
                                                  DECISION_CODE[r["gate"]], DECISION_CODE[r["human"]],
                                                  int(r["human_beyond_margin"])] for r in g["rows"]]}
            for side, g in report["gate"].items()}
    return {"systems": names, "nt_topics": {p: report["nt"][p]["n_topics"] for p, _ in PROTOCOLS}, "gate": gate,
            "correction": d["human"]["correction"], "alpha": d["human"]["alpha"], "test": d["human"]["test"],
            "scores": scores, "decisions": decisions, "coverage": report["coverage"],
            "run": {"nteval": report["provenance"]["nteval"], "generated": report["provenance"]["generated"]}}


def lexical_side(out: Path, names: list[str]) -> dict[str, Any]:
    """Per-topic AP of every system on the high-recall topics judged by the lexical references alone
    (their z ≥ ZT vote, as ``--preset lexical`` judges): the same runs, the qrels recomputed from
    the lexical references' runs in OUT/highrecall/sref/ (the high-recall verdict before the
    neural reference)."""
    from nteval.evaluate import evaluate_run
    from nteval.formats.trec import read_run, read_topics
    from nteval.index import read_manifest
    from nteval.protocols.highrecall import LEXICAL_SREFS, judgeable
    from nteval.topics.highrecall import fused_pseudo_qrels
    from nteval.topics.ids import highrecall_id

    hr = out / "highrecall"
    res = json.loads((hr / "results.json").read_text())
    index_dir = Path(json.loads((out / "report.json").read_text())["index"])
    refs = [read_run(hr / "sref" / f"{n}.run") for n in LEXICAL_SREFS]
    by_doc = fused_pseudo_qrels(refs, k=res["k"], zt=res["zt"], std=res["std"], judged=res["judged"], combine="vote")
    by_doc, _ = judgeable(index_dir, read_manifest(index_dir), by_doc)
    topics = read_topics(hr / "topics.tsv")
    qrels = {q: by_doc[d] for d in by_doc for q in [highrecall_id(d, res["sentence"])] if q in topics}
    qids = sorted(qrels)
    values = []
    for n in names:
        _, per = evaluate_run(qrels, read_run(hr / "runs" / f"{n}.run"), ["AP"])
        values.append([round(per[q]["AP"], 6) for q in qids])
    return {"qids": qids, "values": values}


def read_snapshot(path: Path = SNAPSHOT) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))


def write_snapshot(snap: dict[str, Any], path: Path = SNAPSHOT) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(snap, separators=(",", ":"), sort_keys=True).encode("utf-8")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    tmp.replace(path)


# -- 3. statistics ---------------------------------------------------------------------------------

def _m(c: dict[str, Any], side: str) -> np.ndarray:
    return np.asarray(c["scores"][side]["values"], float)


def _human_ceiling(human: np.ndarray, splits: int = 20, seed: int = SEED) -> float | None:
    """The human-vs-human ceiling of correlate (random halves of the human topics, mean Kendall τ)."""
    from nteval.stats import correlations

    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(splits):
        perm = rng.permutation(human.shape[1])
        a, b = perm[: human.shape[1] // 2], perm[human.shape[1] // 2:]
        k = correlations(list(human[:, a].mean(1)), list(human[:, b].mean(1)))["kendall"]["value"]
        if k is not None:
            taus.append(k)
    return round(float(np.mean(taus)), 4) if taus else None


def agreement(c: dict[str, Any], protocol: str, measure: str) -> dict[str, Any]:
    """One verdict's agreement with human AP on one collection, as ``correlate`` reports it."""
    from nteval.stats import bootstrap_ci, correlations, many_topic_tau

    x, y = _m(c, protocol), _m(c, "human")
    mx, my = [float(v) for v in x.mean(axis=1)], [float(v) for v in y.mean(axis=1)]
    n = len(c["systems"])
    top = sorted(range(n), key=lambda i: -my[i])[: max(3, n // 2)]
    ci = bootstrap_ci(x, y, n_boot=CORRELATE_BOOT, seed=SEED)
    many = many_topic_tau(x, y, n_boot=1000, seed=0, target=max(x.shape[1], y.shape[1]))
    return {"nt_measure": measure, "human_measure": "AP",
            "kendall": round(correlations(mx, my)["kendall"]["value"], 4),
            "ci95": [round(v, 4) for v in ci["kendall"]], "ci_method": "BCa topic bootstrap",
            "better_half_kendall": round(correlations([mx[i] for i in top], [my[i] for i in top])["kendall"]["value"], 4),
            "human_ceiling_kendall": _human_ceiling(y),
            "many_topics": ({"kendall": round(many["value"], 4), "ci95": [round(float(v), 4) for v in many["ci95"]],
                             "judged_topics": many["target_topics"]} if many else None),
            "systems": n, "nt_topics": x.shape[1], "human_topics": y.shape[1]}


def decisions(c: dict[str, Any]) -> dict[str, Any]:
    """Every ranking's decision-level figures against the human decisions (stored, not re-tested)."""
    from nteval.correlate.decisions import compare_decisions, from_separated

    names, corr = c["systems"], ("bh" if c["correction"].startswith("Benjamini") else "holm")
    dec = {k: from_separated(names, _m(c, k), v["separated"], v["groups"], corr, c["alpha"])
           for k, v in c["decisions"].items()}
    out = {}
    for k in [p for p, _ in PROTOCOLS] + list(BASELINES):
        d = compare_decisions(names, dec[k], dec["human"], seed=SEED)
        d.pop("separated_pairs")
        only = d.pop("only_judgment_free")
        out[k] = {**d, "only_judgment_free": {"count": only["count"], "likely": _round_likely(only["likely"])}}
    return out


def _round_likely(likely: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if likely is None else {k: v for k, v in likely.items() if k != "method"}


def _advantage(m: np.ndarray, members: list[int], base: int) -> np.ndarray:
    """Mean relative advantage over the baseline of the members, per column set of ``m`` (… × S × T)."""
    means = m.mean(axis=-1)
    return (means[..., members] / means[..., [base]] - 1).mean(axis=-1)


def family_biases(c: dict[str, Any], configs: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    from nteval.evidence import families

    names = c["systems"]
    fam = families(configs)
    base = names.index("bm25")
    human = _m(c, "human")
    out: dict[str, Any] = {}
    for protocol, _ in SIDES:
        nt = _m(c, protocol)
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
            out.setdefault(protocol, {})[f] = {
                "systems": [names[i] for i in members], "nt_advantage": round(nt_adv, 4), "human_advantage": round(hu_adv, 4),
                "bias": round(nt_adv - hu_adv, 4), "ci95": [round(float(lo), 4), round(float(hi), 4)],
                "significant": bool(lo > 0 or hi < 0),
                "rank_shift": round(float(np.mean([hu_rank[names[i]] - nt_rank[names[i]] for i in members])), 2)}
    return out


def summarise(snap: dict[str, Any]) -> dict[str, Any]:
    """The study's figures (validation.json without its date and version) from a snapshot."""
    cols = snap["collections"]
    meta_keys = ("label", "kind", "description", "judged_queries", "relevant_per_query", "documents")
    collections = {n: {k: cols[n][k] for k in meta_keys} for n in COLLECTIONS}
    agree: dict[str, Any] = {p: {} for p, _ in SIDES}
    decided: dict[str, Any] = {p: {} for p, _ in PROTOCOLS} | {b: {} for b in BASELINES}
    for name in COLLECTIONS:
        for p, m in SIDES:
            agree[p][name] = agreement(cols[name], p, m)
        for k, v in decisions(cols[name]).items():
            decided[k][name] = v
    rng = np.random.default_rng(0)
    biases: dict[str, Any] = {}
    for name in COLLECTIONS:
        for protocol, per in family_biases(cols[name], snap["configs"], rng).items():
            for f, row in per.items():
                biases.setdefault(protocol, {}).setdefault(f, {"collections": {}})["collections"][name] = row
    for protocol, per in biases.items():
        for f, b in per.items():
            cs = b["collections"]
            from nteval.evidence import BIAS_CAUTION  # (the flag rule's threshold: one value for the study and the runs)

            own = [c for n, c in cs.items() if COLLECTIONS[n]["kind"] == OWN_KIND[protocol]]
            large = [c for c in own if abs(c["bias"]) > BIAS_CAUTION]
            # the rule (FLAG_RULE, nteval.evidence.BIAS_CAUTION): more than 5 points on the verdict's own kind
            b["flagged"] = bool(large)
            worst = max(large, key=lambda c: abs(c["bias"])) if large else None
            b["direction"] = int(np.sign(worst["bias"])) if worst else 0
            if (protocol, f) in ADVICE:
                b["advice"] = ADVICE[(protocol, f)]
    cov_name, of = COVERAGE["name"], COVERAGE["of"]
    coverage = {"collection": COVERAGE["label"], "of": of, "dropped_share": COVERAGE["share"], "seed": COVERAGE["seed"],
                "coverage": cols[cov_name]["coverage"],
                "agreement": {p: {"untouched": agree[p][of]["kendall"], "dropped": agreement(cols[cov_name], p, m)["kendall"]}
                              for p, m in PROTOCOLS},
                "decisions": {p: {"untouched": decided[p][of]["share_same_direction"],
                                  "dropped": decisions(cols[cov_name])[p]["share_same_direction"]} for p, _ in PROTOCOLS}}
    gate = {p: {name: gate_figures(cols[name], p, snap["configs"]) for name in COLLECTIONS} for p, _ in PROTOCOLS}
    neural = {name: neural_figures(cols[name]) for name in COLLECTIONS}
    labels = [c["label"] for c in COLLECTIONS.values()]
    return {"study": {"summary": f"{_and(labels)}, the {SYSTEMS} set of {len(snap['configs'])} "
                                 f"systems, {TOPICS} NT topics per protocol",
                      "command": COMMAND, "systems": SYSTEMS, "nt_topics": TOPICS, "seed": SEED, "bootstrap": BOOT,
                      "collections": collections,
                      "decision_test": f"{cols['scifact']['test'].split(',')[0]}, {cols['scifact']['correction']}, "
                                       f"alpha {cols['scifact']['alpha']}"},
            "agreement": agree, "decisions": decided, "biases": biases, "flag_rule": FLAG_RULE, "coverage": coverage,
            "gate": gate, "neural": neural}


def gate_figures(c: dict[str, Any], protocol: str, configs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The release gate's decisions on ``protocol``'s NT scores against the reference test's on human
    AP, over every ordered pair of systems (the pairs' decisions are stored in the snapshot, as
    ``nteval correlate`` made them; tests/evidence recompute a sample of them); with ``configs``, the
    false passes and false alarms per family of the candidate (issue 57: the gate's promise per family)."""
    from nteval.correlate.gate_agreement import tally
    from nteval.systems.families import families

    names, g = c["systems"], c["gate"][protocol]
    decision = {v: k for k, v in DECISION_CODE.items()}
    rows = [{"baseline": names[b], "candidate": names[x], "gate": decision[gd], "human": decision[hd],
             "human_beyond_margin": bool(m)} for b, x, gd, hd, m in g["rows"]]
    t = tally(rows)
    t.pop("rows")
    out = {**t, "method": g["test"]}
    if configs:
        fam = families({n: configs[n] for n in names if n in configs})
        per: dict[str, Any] = {}
        for f in sorted({fam.get(n) or "other" for n in names}):
            sub = tally([r for r in rows if (fam.get(r["candidate"]) or "other") == f])
            per[f] = {k: sub[k] for k in ("false_pass", "human_loss_beyond_margin", "false_pass_rate", "false_alarm",
                                          "human_pass", "false_alarm_rate")}
        out["per_family"] = per
    return out


def neural_figures(c: dict[str, Any]) -> dict[str, Any]:
    """For each neural system of the study: its rank and advantage over BM25 for the humans and under
    each verdict (the high-recall one before and after the neural reference), and the gate's decision
    on it against the live BM25 next to the reference test's on human AP."""
    from nteval.correlate.gate_agreement import human_decision
    from nteval.gate.decide import decide

    names = c["systems"]
    b = names.index(GATE_BASELINE)
    out: dict[str, Any] = {}

    def ranked(m: np.ndarray) -> dict[str, int]:
        means = m.mean(axis=1)
        return {names[i]: r for r, i in enumerate(np.argsort(-means, kind="stable"), 1)}

    human = _m(c, "human")
    hr = ranked(human)
    for n in [x for x in NEURAL if x in names]:
        i = names.index(n)
        row: dict[str, Any] = {"human": {"rank": hr[n], "advantage": round(float(human[i].mean() / human[b].mean() - 1), 4),
                                         "decision": human_decision(human[b], human[i])["decision"]}}
        for side, _ in SIDES:
            m = _m(c, side)
            row[side] = {"rank": ranked(m)[n], "advantage": round(float(m[i].mean() / m[b].mean() - 1), 4),
                         "decision": decide(m[b], m[i], c["scores"][side]["qids"])["decision"]}
        out[n] = row
    return out


def study_of(snap: dict[str, Any]) -> dict[str, Any]:
    """validation.json: the figures, with the date and the nteval version that computed them."""
    import nteval

    out = summarise(snap)
    out["study"].update(date=datetime.date.today().isoformat(), nteval=nteval.__version__,
                        runs={n: c["run"] for n, c in snap["collections"].items()})
    return out


# -- the docs ---------------------------------------------------------------------------------------

def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v * 100:.0f} %"


def _decision_row(label: str, col: str, d: dict[str, Any]) -> str:
    likely = (d["only_judgment_free"].get("likely") or {})
    same = likely.get("same_direction") or {}
    tk = {k: ("n/a" if v is None else f"{v:.2f}") for k, v in d["top_k_tau"].items()}
    return (f"| {label} | {col} | {d['same_direction']} of {d['human_separated']} ({_pct(d['share_same_direction'])}) | "
            f"{len(d['reversed'])} | {d['missed']} | {d['only_judgment_free']['count']}"
            + (f" (~{same['mean']:.0f}, {same['range90'][0]}–{same['range90'][1]})" if same else "")
            + f" | {tk['5']} | {tk['10']} | " + ("yes" if d["human_best_in_best_group"] else "**no**") + " |")


def markdown(study: dict[str, Any]) -> str:
    from nteval.evidence import FAMILIES

    s = study["study"]
    cols = s["collections"]
    n = study["agreement"]["focused"]["scifact"]["systems"]
    lines = ["# Validation: how far each NT verdict agrees with human judgments", "",
             f"Made by `{s['command']}` on {s['date']} (nteval {s['nteval']}): {s['summary']}. The same data ship as "
             "`nteval/data/validation.json`; every protocol run prints them as evidence (the study's, not the run's). "
             "A test (tests/evidence/test_shipped_evidence.py) fails when they are not what the script computes now "
             "from its snapshot of the runs.", "",
             "| collection | kind | documents | judged queries | relevant per query |", "|---|---|---|---|---|"]
    for c in cols.values():
        lines.append(f"| {c['label']} | {c['kind']} | {c['documents']:,} | {c['judged_queries']} | {c['relevant_per_query']} |")
    lines += ["", f"## Agreement with human AP (Kendall τ-b of the system rankings, {n} systems)", "",
              "| verdict | collection | τ-b [95 % BCa CI] | better half | human-vs-human ceiling | τ with as many judged as NT topics [95 %] |",
              "|---|---|---|---|---|---|"]
    for protocol, per in study["agreement"].items():
        for name, a in per.items():
            mt = a.get("many_topics")
            lines.append(f"| {SIDE_LABEL[protocol]} ({a['nt_measure']}) | {cols[name]['label']} | {a['kendall']:.3f} "
                         f"[{a['ci95'][0]:.3f}, {a['ci95'][1]:.3f}] | {a['better_half_kendall']:.3f} | "
                         f"{a['human_ceiling_kendall']:.3f} | "
                         + (f"{mt['kendall']:.3f} [{mt['ci95'][0]:.3f}, {mt['ci95'][1]:.3f}]" if mt else "n/a") + " |")
    lines += ["", "## Decisions: the pairs of systems the humans separate", "",
              f"A rank correlation weighs every pair of systems alike, including pairs no test can tell apart; a user "
              f"acts on decisions (\"A is better than B\", \"the best group\"). Human decisions: {s['decision_test']}, "
              "on human AP over the judged topics; each verdict's decisions are its own (the same test and correction "
              "on its 1,000 topics), each run-based baseline's the same test on its pseudo-qrels' AP over the human "
              "topics. Columns: the human-separated pairs it separates in the same direction; those it orders the other "
              "way round (both significantly); those it does not separate; the pairs only it separates, with (in "
              "brackets) how many of them a human test with as many judged topics as its topics would likely separate "
              "the same way (empirical-Bayes estimate, mean and 5–95 % range: which ones cannot be known); Kendall τ-b "
              "among the humans' best 5 and 10 systems; whether the human-best system is in its best group (group 1: "
              "the systems from its best down that no paired test separates).", "",
              "| ranking | collection | same direction | reversed | missed | only it separates (~likely human) | top-5 τ | top-10 τ | human-best in best group |",
              "|---|---|---|---|---|---|---|---|---|"]
    labels = {"focused": "focused verdict (RR)", "highrecall": "high-recall verdict (AP)",
              "reference_count": "reference-count baseline", "soboroff": "Soboroff baseline"}
    for k, per in study["decisions"].items():
        for name, d in per.items():
            lines.append(_decision_row(labels[k], f"{cols[name]['label']} ({cols[name]['kind']})", d))
    rev = [(f"{labels[k]} on {cols[name]['label']}", d["reversed"]) for k, per in study["decisions"].items()
           for name, d in per.items() if d["reversed"]]
    if rev:
        lines += ["", f"Reversed pairs (the ranking prefers the first, the humans the second; the first {REVERSED_SHOWN} "
                      "of each, all of them in validation.json):", ""]
        lines += [f"- {where} ({len(r)}): " + ", ".join(f"{x['judgment_free_prefers']} over {x['humans_prefer']}"
                                                       for x in r[:REVERSED_SHOWN]) + (", …" if len(r) > REVERSED_SHOWN else "")
                  for where, r in rev]
    lines += neural_section(study) + gate_section(study)
    cv = study["coverage"]
    c = cv["coverage"]
    lines += ["", "## What the verdict covers", "",
              f"{cv['collection']} (`scripts/drop_abstracts.py --share {cv['dropped_share']} --seed {cv['seed']}`): "
              f"{c['collection']['text']}; {c['human_relevant']['text']}. Every output of a run says so, with a caveat "
              f"above {c['collection']['threshold'] * 100:.0f} % (`nteval.evidence.COVERAGE_CAVEAT`).", "",
              "| verdict | τ-b with human AP, untouched | with the abstracts dropped | human-separated pairs separated the same way, untouched | dropped |",
              "|---|---|---|---|---|"]
    for p, a in cv["agreement"].items():
        d = cv["decisions"][p]
        lines.append(f"| {p} | {a['untouched']:.3f} | {a['dropped']:.3f} | {_pct(d['untouched'])} | {_pct(d['dropped'])} |")
    lines += ["", "## Biases by family of systems", "",
              "Bias = the family's relative advantage over BM25 (k1 0.9, b 0.4) under the NT verdict measure minus "
              "the one human AP gives it, averaged over the family's systems; 95 % topic-bootstrap interval "
              f"({s['bootstrap']:,} replicates). Rank shift: human rank − NT rank (positive: NT ranks the family higher). "
              f"A run's notes report the biases {study['flag_rule'].replace('flagged: ', 'where ')}.",
              "", "| verdict | family | collection | NT advantage | human advantage | bias [95 % CI] | rank shift | measured | flagged |",
              "|---|---|---|---|---|---|---|---|---|"]
    for protocol, per in study["biases"].items():
        for f, b in per.items():
            for name, x in b["collections"].items():
                lines.append(f"| {SIDE_LABEL[protocol]} | {FAMILIES.get(f, f)} | {cols[name]['label']} | "
                             f"{x['nt_advantage']:+.1%} | {x['human_advantage']:+.1%} | {x['bias'] * 100:+.1f} pts "
                             f"[{x['ci95'][0] * 100:+.1f}, {x['ci95'][1] * 100:+.1f}] | {x['rank_shift']:+.1f} | "
                             f"{'yes' if x['significant'] else 'no'} | {'**yes**' if b['flagged'] else 'no'} |")
    return "\n".join(lines) + "\n"


SIDE_LABEL = {"focused": "focused", "highrecall": "high-recall", BEFORE: "high-recall, lexical references (before)"}
DECISION_SHOWN = {"better": "better", "non-inferior": "non-inferior", "worse": "**worse**", "inconclusive": "inconclusive"}


def neural_section(study: dict[str, Any]) -> list[str]:
    """The neural systems' ranks, advantages and gate decisions, humans vs each verdict, before and
    after the neural reference, per collection."""
    cols = study["study"]["collections"]
    lines = ["", "## Neural retrieval: before and after the neural reference", "",
             "The high-recall verdict's pseudo-relevant documents came from lexical reference systems alone (before); "
             "now all-MiniLM-L6-v2, searching the titles over `all` like them, adds as many documents per topic as "
             "their vote chose (after: equal shares, docs/verdicts.md). Rank among the "
             f"{next(iter(study['agreement']['focused'].values()))['systems']}"
             " systems, relative advantage over BM25 (k1 0.9, b 0.4), and the release gate's decision for the system "
             f"as a candidate against BM25 as the live system (`decide()`: betting bounds, 5 % margin, alpha 0.05); the "
             "humans' decision is the reference test's on their judged topics (Student's paired t, the same rule).", "",
             "| collection | system | humans | high-recall before | high-recall after | focused |", "|---|---|---|---|---|---|"]
    for name, per in study["neural"].items():
        for n, r in per.items():
            cells = [f"#{r[k]['rank']}, {r[k]['advantage']:+.1%}, {DECISION_SHOWN[r[k]['decision']]}"
                     for k in ("human", BEFORE, "highrecall", "focused")]
            lines.append(f"| {cols[name]['label']} ({cols[name]['kind']}) | {n} | " + " | ".join(cells) + " |")
    return lines


def gate_section(study: dict[str, Any]) -> list[str]:
    """The release gate's decisions against the human ones, per verdict and collection."""
    from nteval.stats import rate_text

    cols = study["study"]["collections"]
    first = next(iter(next(iter(study["gate"].values())).values()))
    lines = ["", "## The release gate's decisions against the human ones", "",
             f"Every ordered pair of systems (baseline, candidate), decided twice: by the gate on the verdict's NT "
             f"topics ({first['method']['gate']}) and by a release manager with these judgments "
             f"({first['method']['reference_test']}). Pass = better or non-inferior, fail = worse.", "",
             "| verdict | collection | agree on pass/fail where both decide | false pass (humans: a loss beyond the "
             "margin) [exact 95 % interval, pairs taken as independent] | false alarm (humans pass) | decided: gate / humans |", "|---|---|---|---|---|---|"]
    for protocol, per in study["gate"].items():
        for name, g in per.items():
            lines.append(f"| {SIDE_LABEL[protocol]} | {cols[name]['label']} ({cols[name]['kind']}) | "
                         f"{_pct1(g['agreement'])} of {g['both_decide']:,} | {rate_text(g['false_pass_rate'], g.get('false_pass_ci'))} "
                         f"({g['false_pass']} of {g['human_loss_beyond_margin']}) | {_pct1(g['false_alarm_rate'])} "
                         f"({g['false_alarm']} of {g['human_pass']}) | {g['gate_decided']:,} / {g['human_decided']:,} |")
    return lines + gate_family_section(study)


def gate_family_section(study: dict[str, Any]) -> list[str]:
    """The gate's false passes per family of the candidate, per verdict and collection of its own kind."""
    from nteval.evidence import FAMILIES

    cols = study["study"]["collections"]
    fams = sorted({f for per in study["gate"].values() for g in per.values() for f in g.get("per_family", {})})
    if not fams:
        return []
    lines = ["", "Per family of the candidate, on the collections of each verdict's own kind: false passes (of the "
                 "human losses beyond the margin), the gate's promise per family.", "",
             "| verdict | collection | " + " | ".join(FAMILIES.get(f, f).split(" (")[0] for f in fams) + " |",
             "|---|---|" + "---|" * len(fams)]
    for protocol, per in study["gate"].items():
        for name, g in per.items():
            if cols[name]["kind"] != OWN_KIND[protocol] or "per_family" not in g:
                continue
            cells = [f"{x['false_pass']}/{x['human_loss_beyond_margin']}" if (x := g["per_family"].get(f)) else "—"
                     for f in fams]
            lines.append(f"| {SIDE_LABEL[protocol]} | {cols[name]['label']} | " + " | ".join(cells) + " |")
    return lines


def _pct1(v: float | None) -> str:
    return "n/a" if v is None else f"{v * 100:.1f} %"


def blocks(study: dict[str, Any]) -> dict[str, str]:
    """The generated blocks of docs/verdicts.md and README.md, by name."""
    a, d, cols = study["agreement"], study["decisions"], study["study"]["collections"]
    tau = lambda p, c: f"{a[p][c]['kendall']:.2f}"  # noqa: E731
    share = lambda p, c: _pct(d[p][c]["share_same_direction"])  # noqa: E731
    rev = lambda p, c: len(d[p][c]["reversed"])  # noqa: E731
    tasks = ("| task (`--task`) | the user | protocol | verdict measure | agrees with humans on |\n"
             "|---|---|---|---|---|\n"
             "| `known-item` | looks for the one document a short description points to (a citation, a claim's source, "
             "a fact) | focused | RR (MRR) | collections with about one relevant document per query (SciFact: Kendall τ "
             f"{tau('focused', 'scifact')}; {share('focused', 'scifact')} of the human-separated pairs separated the same "
             f"way, {rev('focused', 'scifact')} reversed) |\n"
             "| `topical` | wants everything on a topic (ad hoc search, a systematic review) | high-recall | AP | "
             f"collections with many relevant documents per query (CISI: Kendall τ {tau('highrecall', 'cisi')}; "
             f"{share('highrecall', 'cisi')} of the human-separated pairs separated the same way, "
             f"{rev('highrecall', 'cisi')} reversed) |\n\n"
             "The figures are nteval's validation study ([validation.md](validation.md)), not any one run. Each verdict "
             f"agrees much less on the other kind of collection (focused on CISI τ {tau('focused', 'cisi')}, high-recall "
             f"on SciFact {tau('highrecall', 'scifact')}): **the task decides which ranking to act on.**")
    readme = ("| verdict | " + " | ".join(f"{cols[c]['label']} ({cols[c]['kind']}: ~{cols[c]['relevant_per_query']:.0f} "
                                         "relevant per query)" for c in COLLECTIONS) + " |\n"
              "|---|" + "---|" * len(COLLECTIONS) + "\n")
    for p, label in (("focused", "focused RR (known-item)"), ("highrecall", "high-recall AP (topical)")):
        cells = []
        for c in COLLECTIONS:
            x = a[p][c]
            own = OWN_KIND[p] == cols[c]["kind"]
            t = f"{x['kendall']:.3f}"
            cells.append((f"**{t}**" if own else t) + f" [{x['ci95'][0]:.3f}, {x['ci95'][1]:.3f}]; "
                         f"{share(p, c)} of human-separated pairs, {rev(p, c)} reversed")
        readme += f"| {label} | " + " | ".join(cells) + " |\n"
    own = [(p, c) for p, _ in PROTOCOLS for c in COLLECTIONS if OWN_KIND[p] == cols[c]["kind"]]
    readme += ("\nKendall τ-b of the system rankings with human AP [95 % BCa CI], and the share of the pairs of systems "
               "the human judgments separate (paired test, Holm) that the verdict separates the same way "
               "([docs/validation.md](docs/validation.md); human-vs-human ceiling: "
               + ", ".join(f"{cols[c]['label']} {a['focused'][c]['human_ceiling_kendall']:.2f}" for c in COLLECTIONS) + "). "
               "On the kind of collection it stands for, each verdict separates the pairs the humans separate the "
               "same way: " + "; ".join(f"{d[p][c]['same_direction']} of {d[p][c]['human_separated']} "
                                        f"({cols[c]['label']}, {p}; {rev(p, c)} reversed)" for p, c in own) + ".")
    gate = "\n".join(gate_section(study)[5:])  # the tables of validation.md's section
    return {"tasks": tasks, "readme": readme.rstrip("\n"), "biases": _bias_block(study), "gate": gate}


def _bias_block(study: dict[str, Any]) -> str:
    """The flagged biases, one bullet per verdict and family, with their sizes on each collection."""
    from nteval.evidence import BIAS_CAUTION, FAMILIES

    cols = study["study"]["collections"]
    out = []
    for protocol, per in study["biases"].items():
        name = "high-recall" if protocol == "highrecall" else protocol
        for f, b in per.items():
            if not b["flagged"]:
                continue
            verb = {1: "overstates", -1: "understates"}.get(b["direction"], "misjudges")
            own = [(cols[c]["label"], x) for c, x in b["collections"].items()
                   if cols[c]["kind"] == OWN_KIND[protocol] and abs(x["bias"]) > BIAS_CAUTION]
            over, under = ([lab for lab, x in own if (x["bias"] > 0) == up] for up in (True, False))
            kind = f"the kind of collection{'s' if len(own) > 1 else ''} it is for"
            if over and under:   # (opposite ways on collections of its own kind: both said, not hidden under one)
                verb, where = "misjudges", f" on {kind} (overstates it on {_and(over)}, understates it on {_and(under)})"
            else:
                quiet = not any(x["significant"] for _, x in own)
                where = f" on {_and(over or under)}, {kind}" + (" (by more than 5 points, not significant)" if quiet else "")
            sizes = "; ".join(f"{x['bias'] * 100:+.0f} points on {cols[c]['label']} (NT {x['nt_advantage']:+.0%} over "
                              f"BM25, humans {x['human_advantage']:+.0%}" + ("" if x["significant"] else ", not significant")
                              + ")" for c, x in b["collections"].items())
            out.append(f"- **{name} {verb} {FAMILIES[f].split(' (')[0]}**{where}: {sizes}."
                       + (f" {b['advice']}" if b.get("advice") else ""))
    return "\n".join(out)


def _and(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


MARK = re.compile(r"(<!-- validation:(\w+) -->\n)(.*?)\n?(<!-- /validation:\2 -->)", re.S)  # (an empty block too)


def fill(text: str, generated: dict[str, str]) -> str:
    """``text`` with every generated block replaced by its current content."""
    return MARK.sub(lambda m: m.group(1) + generated[m.group(2)] + "\n" + m.group(4), text)


DOCS_WITH_BLOCKS = (ROOT / "docs" / "verdicts.md", ROOT / "README.md", ROOT / "docs" / "gate.md")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--work", type=Path, help="where the indexes and correlate runs go (reused)")
    ap.add_argument("--from-snapshot", action="store_true", help="the statistics only, from the shipped snapshot")
    ap.add_argument("--write", action="store_true", help="write validation.json, the snapshot and the docs")
    ap.add_argument("--only", help="comma-separated collections to (re)compute; the others as the shipped snapshot has them")
    a = ap.parse_args()
    only = [c for c in (a.only or "").split(",") if c] or None
    unknown = sorted(set(only or ()) - set(COLLECTIONS))
    if unknown:
        ap.error(f"--only: no collection {', '.join(unknown)} (the study's: {', '.join(COLLECTIONS)})")
    if a.from_snapshot:
        snap = read_snapshot()
    elif a.work is None:
        ap.error("give --work (or --from-snapshot)")
    else:
        snap = collect(a.shared, a.work, only)
    study = study_of(snap)
    if a.write:
        if not a.from_snapshot:
            write_snapshot(snap)
        atomic_write(STUDY, json.dumps(study, indent=1, ensure_ascii=False) + "\n")
        atomic_write(DOC, markdown(study))
        generated = blocks(study)
        for doc in DOCS_WITH_BLOCKS:
            atomic_write(doc, fill(doc.read_text(encoding="utf-8"), generated))
        print(f"wrote {STUDY.relative_to(ROOT)}, {DOC.relative_to(ROOT)}, the generated blocks of "
              + ", ".join(str(d.relative_to(ROOT)) for d in DOCS_WITH_BLOCKS)
              + ("" if a.from_snapshot else f" and {SNAPSHOT.relative_to(ROOT)}"))
    else:
        print(markdown(study))


if __name__ == "__main__":
    main()
