"""The query form of the high-recall protocol (issue 57): is the understatement of neural retrieval
on MED, and the other families' biases, a matter of the query the systems run rather than of the
references that judge them? Every candidate form chosen by leave-one-collection-out over CISI, the
CF odd half and the MED odd half, with the same rule as the references' designs.

    python scripts/query_form_study.py --work WORK [--write]

WORK is the leave-one-collection-out study's (scripts/loco_fairness_study.py): ``{c}_idx`` and
``{c}_corr`` for c in cisi, cf, med. The references search ``all`` with the titles, as before: a
form changes only the query each topic's systems run over ``nt``, so every form is judged by the
same pseudo-qrels (the shipped design: the lexical vote and MiniLM's equal share) on the same topics
(the correlate run's sample: each topic's source document is the same). The 30 systems' runs with
a form's queries are computed here and cached in ``{c}_fairness/qform/`` by nteval's run cache.

**Forms** (the list, and every parameter in it, fixed before any number below was computed):

- ``sentence 3``: the abstract's third sentence (the paper's, shipped);
- ``sentence 1``: its first (often the background a searcher would state);
- ``sentences 2–4``: the second, third and fourth, joined (several sentences: as long as the
  judges' questions; an abstract with three sentences gives two);
- ``sentence 3, key terms``: the third sentence's 6 words of highest idf in ``nt`` (each word's
  analyzed form; duplicates once), in their order (a searcher's keyword query).
- ``matched length`` (added 2026-12-04 15:41, after the four forms above and the bias-shape study
  (scripts/bias_shape_study.py), before any number of this form was computed): the abstract's words
  from its third sentence on, then its first and second sentences, cut at W words, W the median word
  count (whitespace words, half rounded up) of the collection's judged queries as the correlate run
  has them (``human/topics.tsv``): CISI 50, CF 14, MED 16. Their text only, never their judgments: a
  team measures W on its own query log. What prompted it: NT's sentence is 21 to 25 words on every
  collection, the judges' questions 60 (CISI), 13 (CF) and 21 (MED) words, and query reduction's
  bias, the one shape every design keeps, has the sign that length gap predicts on CISI (+12) and
  CF (−19). **Its rule** (fixed with it): it is a query-length option worth shipping only if, against
  the shipped form, it brings query reduction's floor over the three (half the range of its
  biases) under the shipped form's 15.3 and lowers J on CISI and CF (where W and NT's length differ
  most) without raising the worst J over the three (28.8) and with lexical τ on each at least the
  shipped form's minus 0.02. It takes no part in the choice rule below (the four forms' folds are
  unchanged).

**The choice rule** (written 2026-12-02 before any number of these forms was computed; the LOCO
study's rule with forms for designs): for a held-out collection H, a form is *eligible* when on each
training collection its lexical τ (Kendall τ-b over the lexical systems, NT mean AP vs human mean
AP) is at least the lexical references' alone under the shipped form minus 0.02. J(form, c) is the
largest of every family's |bias| on c and e5's |bias| (e5 is in no reference: an unseen encoder).
The form chosen for H has the smallest max over the training collections of J; forms within 2
points of it are tied and the tie goes to the earlier in the list (the shipped form first). A form
the rule chooses on all three may become the default only if it also keeps the gate's false passes
at or under the shipped form's on every collection.

``--write`` writes nteval/data/query_forms.json and the generated block of docs/verdicts.md
(``<!-- query-forms -->``).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from nteval.atomic import write_text as atomic_write

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fairness_study as fs  # noqa: E402
import loco_fairness_study as loco  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT_JSON = ROOT / "nteval" / "data" / "query_forms.json"
DOC = ROOT / "docs" / "verdicts.md"
MARK = "query-forms"
FORMS = ("sentence 3", "sentence 1", "sentences 2–4", "sentence 3, key terms")
MATCHED = "matched length"      # (not a candidate of the choice rule: see the module docstring)
TOPICAL = ("cisi", "cf", "med")
KEY_TERMS = 6
WORD = re.compile(r"[\w][\w'-]*")


def key_terms(sentence: str, terms: Any, k: int = KEY_TERMS) -> str:
    """The sentence's k words of highest idf in ``nt`` (by each word's analyzed form; a word whose
    form is a stopword or already kept is skipped), in the sentence's order."""
    seen: dict[str, tuple[float, int, str]] = {}
    for i, m in enumerate(WORD.finditer(sentence)):
        forms = terms.text(m.group())
        if not forms:
            continue
        form = sorted(forms)[0]
        if form not in seen:
            seen[form] = (terms.idf(form), i, m.group())
    kept = sorted(sorted(seen.values(), key=lambda v: (-v[0], v[1]))[:k], key=lambda v: v[1])
    return " ".join(w for _, _, w in kept)


def form_topics(c: fs.Collection, form: str) -> dict[str, str]:
    """The correlate run's topics (same ids, same source documents) with ``form``'s queries."""
    if form == "sentence 3":
        return dict(c.topics)
    from nteval.corpus.store import FILENAME, DocStore
    from nteval.traits import Terms

    store = DocStore(c.idx / FILENAME)
    terms = Terms(c.idx) if form.endswith("key terms") else None
    w = matched_words(c.corr) if form == MATCHED else 0
    try:
        out = {}
        for q, src in c.source.items():
            s = (store.get(src) or {}).get("sentences") or []
            if form == "sentence 1":
                text = s[0] if s else ""
            elif form == "sentences 2–4":
                text = " ".join(s[1:4])
            elif form == MATCHED:
                text = matched_query(s, w)
            else:
                text = key_terms(c.topics[q], terms)
            if text.strip():
                out[q] = text
        return out
    finally:
        store.close()
        if terms is not None:
            terms.close()


def matched_query(sentences: list[str], words: int) -> str:
    """The abstract's words from its third sentence on, then its first and second, cut at ``words``."""
    return " ".join(" ".join([*sentences[2:], *sentences[:2]]).split()[:words])


def matched_words(corr: Path) -> int:
    """W: the median whitespace word count of the collection's judged queries (the correlate run's
    ``human/topics.tsv``), half rounded up."""
    import statistics

    from nteval.formats.trec import read_topics

    lengths = [len(t.split()) for t in read_topics(corr / "human" / "topics.tsv").values()]
    return int(statistics.median(lengths) + 0.5)


def form_runs(c: fs.Collection, form: str) -> dict[str, Any]:
    from nteval.runs import Searched, run_all
    from nteval.settings import Execution

    if form == "sentence 3":
        return c.runs
    topics = form_topics(c, form)
    slug = re.sub(r"[^a-z0-9]+", "_", form.replace("–", "to")).strip("_")
    systems = [s for s in loco._lexical_systems() if s.name in c.names]
    runs, _ = run_all(Searched.of(c.idx, "nt"), topics, systems, c.work / f"{c.name}_fairness" / "qform" / slug, 1000,
                      Execution(progress=False))
    return {n: runs[n] for n in c.names}


def study(work: Path, names: tuple[str, ...]) -> dict[str, Any]:
    cache = work / "loco"
    per: dict[str, dict[str, Any]] = {}
    for name in names:
        f = cache / f"{name}-qform.json"
        per[name] = json.loads(f.read_text(encoding="utf-8")) if f.is_file() else {}
        c = None
        for form in ("lexical", *FORMS, MATCHED):
            if form in per[name]:
                continue
            if c is None:
                c = loco.Collection(work, name)
                loco.extra_refs(c, False)
                shipped = c.runs
            fs._ORDERED.clear()   # (each form's runs ordered once; the last form's let go: 30 systems' runs are GBs)
            c.runs = shipped if form == "lexical" else form_runs(c, form)
            j = loco.Judge(c)
            if form == "lexical":
                per[name][form] = loco.lexical_only(c, j)
            else:
                print(f"{loco.NAMES[name]:16s} form {form}", file=sys.stderr, flush=True)
                per[name][form] = loco.judged(c, j, "shipped", gate=True)
            atomic_write(f, json.dumps(per[name], ensure_ascii=False) + "\n")
    folds = {h: choose(per, [c for c in TOPICAL if c in names and c != h]) for h in names}
    return {"collections": per, "folds": folds, "chosen": choose(per, [c for c in TOPICAL if c in names]),
            "matched": matched_verdict(per, {n: matched_words(work / f"{n}_corr") for n in names}),
            "rule": {"tau_slack": loco.TAU_SLACK, "tie_points": loco.TIE, "key_terms": KEY_TERMS}}


def matched_verdict(per: dict[str, dict[str, Any]], words: dict[str, int]) -> dict[str, Any]:
    """The matched-length form against the shipped one, by its rule (module docstring): query
    reduction's floor over the topical collections, J on CISI and CF, the worst J, lexical τ."""
    from bias_shape_study import floor as half_range

    def floor(form: str) -> float:
        return round(half_range([per[c][form]["families"]["reduction"][0] for c in TOPICAL]), 1)

    def worst(form: str) -> float:
        return max(per[c][form]["J"] for c in TOPICAL)

    base, m = "sentence 3", MATCHED
    checks = {"reduction floor lower": floor(m) < floor(base),
              "J lower on CISI and CF": all(per[c][m]["J"] < per[c][base]["J"] for c in ("cisi", "cf")),
              "worst J not higher": worst(m) <= worst(base),
              "lexical τ kept": all(per[c][m]["tau_lexical"] >= per[c][base]["tau_lexical"] - loco.TAU_SLACK
                                    for c in TOPICAL)}
    return {"words": words, "reduction_floor": {base: floor(base), m: floor(m)},
            "worst_J": {base: worst(base), m: worst(m)}, "checks": checks, "ship": all(checks.values())}


def choose(per: dict[str, dict[str, Any]], training: list[str]) -> dict[str, Any]:
    """The LOCO study's rule (:func:`loco_fairness_study.choose`) over the query forms."""
    return loco.choose(per, training, FORMS)


def block(s: dict[str, Any]) -> str:
    fams = loco.FAMILIES
    lines = ["| collection | query form | τ (lexical τ) | e5 (unseen) NT/human rank, bias | "
             + " | ".join(loco.LABEL[f] for f in fams) + " | J | gate false pass |",
             "|---|---|---|---|" + "---|" * len(fams) + "---|---|"]
    for c, rows in s["collections"].items():
        for form in (*FORMS, MATCHED):
            x = rows[form]
            g = x.get("gate") or {}
            mark = "**" if form == s["folds"][c]["chosen"] else ""
            lines.append(f"| {loco.NAMES[c]} | {mark}{form}{mark} | {x['tau']:.3f} ({x['tau_lexical']:.3f}) | "
                         f"#{x['e5']['nt_rank']}/#{x['e5']['human_rank']}, {loco._b(x['e5']['bias'])} | "
                         + " | ".join(loco._b(x["families"].get(f)) for f in fams)
                         + f" | {x['J']:.0f} | {loco._gate_cell(g)} |")
    lines += ["", "Bold: the form the rule chooses for that collection when it is held out (fitted on the other two). "
                  "Bias: NT's relative advantage over BM25 minus the humans' (AP), points, [95 % topic-bootstrap "
                  "interval]; references: the shipped design (the lexical vote and MiniLM's equal share) for every form. "
                  "Gate false pass: pairs the gate (NT alone) passes of those the humans show losing beyond the 5 % "
                  "margin.", ""]
    ch = s["chosen"]
    lines.append(f"Fitted on {', '.join(loco.NAMES[c] for c in ch['training'])} together, the rule chooses "
                 f"**{ch['chosen']}** (worst J: " + ", ".join(f"{f} {v:.1f}" for f, v in ch["worst_J"].items())
                 + f"; eligible: {', '.join(ch['eligible']) or 'none'}).")
    m = s["matched"]
    lines += ["", "Matched length (W words from the third sentence on: "
              + ", ".join(f"{loco.NAMES[c]} {w}" for c, w in m["words"].items())
              + f"; not a candidate of the rule): query reduction's floor {m['reduction_floor'][MATCHED]:.1f} "
              f"(sentence 3: {m['reduction_floor']['sentence 3']:.1f}), worst J {m['worst_J'][MATCHED]:.1f} "
              f"(sentence 3: {m['worst_J']['sentence 3']:.1f}); its rule: "
              + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in m["checks"].items())
              + (" — a query-length option worth shipping." if m["ship"] else " — not shipped.")]
    return "\n".join(lines)


def main() -> None:
    fs.study_cli(__doc__, study, block, OUT_JSON, MARK, "cisi,cf,med")


if __name__ == "__main__":
    main()
