"""The references on the judges' own topics (issue 57): is a family's bias the references' or the
NT topics'? The shipped references build pseudo-qrels for the judges' questions themselves, and
the 32 systems, run on the same questions, are scored both by them and by the judges' qrels: same
topics, same runs; the only difference is who judges.

    python scripts/judged_topics_study.py --work WORK [--write]

WORK holds ``{c}_idx`` and ``{c}_corr`` for c in cisi, cf, med (``nteval correlate --systems
wide_dense --topics 1000 --seed 42 --min-human-topics 15``; ``human/topics.tsv`` and
``human/qrels.txt`` are the judged questions and their judgments).

**Split queries.** A reference that searches with the very query a system runs judges that system
by itself (BM25 is a reference: it would find BM25's ranking relevant), which is why NT gives the
references the title and the systems an abstract sentence. Here each judged question is split in
two halves by its words (the first ⌈w/2⌉ words, the rest): the references search ``all`` with one
half, the systems with the other, and then the other way round (both directions reported; their
mean is the figure). The systems' runs on the halves are scored by the judges' qrels too, so the
judges' figure is of the same runs.

**What it separates** (written 2026-12-02, before any number of this design was computed; a first
version that gave references and systems the whole question was computed and discarded: it judged
every reference's own ranking relevant, the self-judging above, and called every non-lexical family
understated by 14 to 41 points on all three collections alike): a family's bias in the high-recall verdict (NT's advantage over
BM25 minus the humans', the LOCO study's shipped design) is the sum of the **references' bias** on
the judges' topics (this figure) and the **topics' part** (the rest: NT's topics, a title's
neighbours with an abstract sentence as the query over ``nt``, against the judges' questions and
relevant documents). A family whose references' bias is within 5 points while its total is not is
misjudged by the NT topics, which no design of the references can fix.

**The learned judge** (added 2026-12-02 evening, with the leave-one-collection-out study's
``classifier`` design, whose figures on the NT topics came first): the same split and runs judged by
that design too, its references' part beside the shipped design's (no choice is made here: the LOCO
study's rule chooses).

``--write`` writes nteval/data/judged_topics.json and the generated block of docs/verdicts.md
(``<!-- judged-topics -->``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fairness_study as fs  # noqa: E402
import loco_fairness_study as loco  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT_JSON = ROOT / "nteval" / "data" / "judged_topics.json"
DOC = ROOT / "docs" / "verdicts.md"
MARK = "judged-topics"
BOOT, SEED = 2000, 0
SYSTEMS = ("minilm", "e5")
DESIGNS = ("shipped", "classifier")   # (the second: the LOCO study's learned judge, its references' part)
HALVES = ("first", "second")


def halves(text: str) -> tuple[str, str]:
    """A question's first ⌈w/2⌉ words and the rest."""
    w = text.split()
    k = (len(w) + 1) // 2
    return " ".join(w[:k]), " ".join(w[k:])


class Judged:
    """One collection's judged questions cut in halves: the systems' runs on one half, the
    references' on the other (the attributes :class:`fairness_study.Designs` reads), the judges' qrels."""

    def __init__(self, work: Path, name: str, refs_half: str):
        from nteval.evidence import families
        from nteval.formats.trec import read_qrels, read_topics
        from nteval.systems.base import make_system

        self.name, self.work = name, work
        self.idx, self.corr = work / f"{name}_idx", work / f"{name}_corr"
        hu = self.corr / "human"
        self.names = json.loads((self.corr / "report.json").read_text())["systems"]
        systems = [s for s in loco._lexical_systems() if s.name in self.names]
        self.family = families({s.name: {"algorithm": s.algorithm, "params": s.params} for s in systems})
        cut = {q: halves(t) for q, t in read_topics(hu / "topics.tsv").items()}
        i = HALVES.index(refs_half)
        ref_q = {q: h[i] for q, h in cut.items() if h[0] and h[1]}
        sys_q = {q: cut[q][1 - i] for q in ref_q}
        self.topics, self.source = sys_q, {q: q for q in ref_q}
        self.qrels = read_qrels(hu / "qrels.txt")
        other = HALVES[1 - i]
        self.runs = self._runs(sys_q, systems, f"systems_{other}")
        lexical = {s.name: s for s in systems if s.name in fs.LEXICAL}
        refs = [lexical[n] for n in fs.LEXICAL] + [make_system("minilm", "dense", {"model": "minilm", **loco.MINILM_SHIPPED})]
        self.refs = self._runs(ref_q, refs, f"refs_{refs_half}")

    def _runs(self, topics: dict[str, str], systems: list, where: str) -> dict:
        from nteval.runs import Searched, run_all
        from nteval.settings import Execution

        runs, _ = run_all(Searched.of(self.idx, "all"), topics, systems,
                          self.work / f"{self.name}_fairness" / "judged" / where, 1000, Execution(progress=False))
        return {s.name: runs[s.name] for s in systems}


def pseudo_qrels(c: Judged, design: str = "shipped") -> dict[str, dict[str, int]]:
    """A design's pseudo-qrels (the leave-one-collection-out study's) for the half the references
    searched with (topics where the judges or the references find nothing relevant left out)."""
    pseudo = loco.Judge(c).qrels_for(design)("bm25")  # type: ignore[arg-type]  # (the attributes it reads)
    return {q: v for q, v in pseudo.items() if any(r > 0 for r in c.qrels.get(q, {}).values())}


def figures(c: Judged, pseudo: dict[str, dict[str, int]], qids: list[str], rng: np.random.Generator) -> dict[str, Any]:
    """The references' pseudo-qrels and the judges' qrels on the same runs and topics: each system's
    mean AP under both, every family's bias with its paired topic bootstrap."""
    from scipy.stats import kendalltau

    nt = fs._ap(c.runs, {q: pseudo[q] for q in qids}, c.names)
    hu = fs._ap(c.runs, {q: c.qrels[q] for q in qids}, c.names)
    names = c.names
    ntm, hm = np.array([nt[n].mean() for n in names]), np.array([hu[n].mean() for n in names])
    lex = [i for i, n in enumerate(names) if c.family[n] not in fs.NONLEXICAL]
    i = rng.integers(0, len(qids), size=(BOOT, len(qids)))

    def bias(members: list[str]) -> np.ndarray:
        a, ha = np.stack([nt[n] for n in members]), np.stack([hu[n] for n in members])
        point = np.mean(a.mean(1) / nt["bm25"].mean() - ha.mean(1) / hu["bm25"].mean()) * 100
        with np.errstate(divide="ignore", invalid="ignore"):
            reps = (a[:, i].mean(2) / nt["bm25"][i].mean(1) - ha[:, i].mean(2) / hu["bm25"][i].mean(1)).mean(0) * 100
        return np.concatenate([[point], reps])

    fams = {f: bias([n for n in names if c.family[n] == f]) for f in loco.FAMILIES if any(c.family[n] == f for n in names)}
    systems = {n: bias([n]) for n in SYSTEMS}
    return {"topics": len(qids), "tau": float(kendalltau(ntm, hm).statistic),
            "tau_lexical": float(kendalltau(ntm[lex], hm[lex]).statistic),
            "relevant_per_topic": float(np.mean([sum(v > 0 for v in pseudo[q].values()) for q in qids])),
            "human_relevant_per_topic": float(np.mean([sum(v > 0 for v in c.qrels[q].values()) for q in qids])),
            "families": fams, "systems": systems}


def _interval(reps: np.ndarray) -> list[float]:
    lo, hi = np.nanpercentile(reps[1:], [2.5, 97.5])
    return [round(float(reps[0]), 1), round(float(lo), 1), round(float(hi), 1)]


def study(work: Path, names: tuple[str, ...]) -> dict[str, Any]:
    """Both directions per collection; the figure is their mean (the same topic resamples for both:
    the bootstrap replicates are averaged replicate by replicate)."""
    loco_per = json.loads(loco.OUT_JSON.read_text(encoding="utf-8"))["collections"]
    out: dict[str, Any] = {}
    for name in names:
        cs = {h: Judged(work, name, h) for h in HALVES}
        x: dict[str, Any] = {}
        for design in DESIGNS:
            pq = {h: pseudo_qrels(c, design) for h, c in cs.items()}
            qids = sorted(set(pq["first"]) & set(pq["second"]))   # (the same topics both ways: paired replicates)
            ways = {h: figures(cs[h], pq[h], qids, np.random.default_rng(SEED)) for h in HALVES}
            a, b = ways["first"], ways["second"]
            y = {"topics": len(qids), "judged_topics": len(cs["first"].qrels),
                 **{k: round((a[k] + b[k]) / 2, 4 if k.startswith("tau") else 1)
                    for k in ("tau", "tau_lexical", "relevant_per_topic", "human_relevant_per_topic")},
                 "directions": {h: {"tau": round(w["tau"], 4), "tau_lexical": round(w["tau_lexical"], 4),
                                    "topics": w["topics"], "e5": _interval(w["systems"]["e5"]),
                                    "neural": _interval(w["families"]["neural"])}
                                for h, w in ways.items()}}
            for part in ("families", "systems"):
                y[part] = {k: _interval((a[part][k] + b[part][k]) / 2) for k in a[part]}
            if design == "shipped":
                x.update(y)
            else:
                x.setdefault("designs", {})[design] = y
        total = loco_per[name]["shipped"]
        x["nt_topics"] = {"families": dict(total["families"]), "e5": total["e5"]["bias"]}
        out[name] = x
        print(f"{loco.NAMES[name]:16s} judged topics {x['topics']}: τ {x['tau']:.3f} (lexical {x['tau_lexical']:.3f}); "
              + " ".join(f"{loco.LABEL[f]} {v[0]:+.0f}/{x['nt_topics']['families'][f][0]:+.0f}"
                         for f, v in x["families"].items())
              + f"; e5 {x['systems']['e5'][0]:+.0f}/{x['nt_topics']['e5'][0]:+.0f}", file=sys.stderr, flush=True)
    return {"collections": out, "method": {"boot": BOOT, "seed": SEED, "split": "words: first ceil(w/2), rest",
                                           "design": "shipped (lexical vote + MiniLM int8-128 equal share)",
                                           "also": {d: "scripts/loco_fairness_study.py's design" for d in DESIGNS[1:]}}}


def block(s: dict[str, Any]) -> str:
    fams = loco.FAMILIES
    lines = ["| collection | topics | relevant per topic (refs / judges) | τ (lexical τ) | whose bias | e5 (unseen) | "
             + " | ".join(loco.LABEL[f] for f in fams) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(fams)]
    for c, x in s["collections"].items():
        lines.append(f"| {loco.NAMES[c]} | {x['topics']} of {x['judged_topics']} judged | {x['relevant_per_topic']} / {x['human_relevant_per_topic']} | "
                     f"{x['tau']:.3f} ({x['tau_lexical']:.3f}) | the references' | {loco._b(x['systems']['e5'])} | "
                     + " | ".join(loco._b(x["families"].get(f)) for f in fams) + " |")
        for d, y in (x.get("designs") or {}).items():
            lines.append(f"| | {y['topics']} | {y['relevant_per_topic']} / {y['human_relevant_per_topic']} | "
                         f"{y['tau']:.3f} ({y['tau_lexical']:.3f}) | the references' ({d}) | {loco._b(y['systems']['e5'])} | "
                         + " | ".join(loco._b(y["families"].get(f)) for f in fams) + " |")
        t = x["nt_topics"]
        lines.append(f"| | 1,000 NT | | | total (NT topics) | {loco._b(t['e5'])} | "
                     + " | ".join(loco._b(t["families"].get(f)) for f in fams) + " |")
    lines += ["", "The references' bias: on the judges' own questions, each cut in two halves by its words, the references "
                  "searching with one half and the systems with the other (both ways, averaged), NT's pseudo-qrels (the "
                  "shipped design; (classifier): the learned judge of the leave-one-collection-out study) against the judges' qrels on the same runs: NT's relative advantage over BM25 minus the "
                  "judges' (AP), points, [95 % paired topic bootstrap, 2,000 replicates]. Total: the high-recall "
                  "verdict's own bias on its NT topics (the leave-one-collection-out study's shipped design). τ: "
                  "Kendall τ-b of the 32 systems' mean AP under the pseudo-qrels against under the judges', same runs."]
    return "\n".join(lines)


def main() -> None:
    fs.study_cli(__doc__, study, block, OUT_JSON, MARK, "cisi,cf,med")


if __name__ == "__main__":
    main()
