"""Evidence computed, not remembered (issue 39, part 3): every figure a run prints as evidence is
what its script computes from the current code, and the docs' tables come from the same data.

- nteval/data/validation.json is what scripts/validation_study.py computes now from its snapshot of
  the study's runs (tests/data/validation/snapshot.json.gz): every statistic recomputed here, in
  seconds; docs/validation.md and the generated blocks of docs/verdicts.md and README.md are its
  rendering.
- nteval/data/grid_facts.json (what `compare` cites about BM25's b) is what scripts/grid_study.py
  computes from the shipped grid table, and docs/grid.md's PubMed block is its rendering.
- With ../shared/data, tests/evidence/test_snapshot_runs.py checks that the snapshot's runs are
  what nteval computes now, on a cheap part.
"""
from __future__ import annotations

import json

import pytest
from conftest import script

vs = script("validation_study")
gs = script("grid_study")


@pytest.fixture(scope="module")
def shipped() -> dict:
    return json.loads(vs.STUDY.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def snapshot() -> dict:
    return vs.read_snapshot()


def _figures(study: dict) -> dict:
    """The study without what changes with the day and the install (date, version, run stamps)."""
    out = json.loads(json.dumps(study))
    for k in ("date", "nteval", "runs"):
        out["study"].pop(k, None)
    return out


def test_the_shipped_study_is_what_the_script_computes_now(shipped, snapshot):
    assert shipped["study"]["date"] and shipped["study"]["nteval"]  # stamped with its date and version
    now = vs.summarise(snapshot)
    assert json.loads(json.dumps(now)) == _figures(shipped), (
        "nteval/data/validation.json is not what scripts/validation_study.py computes from its snapshot with the current "
        "code: run `python scripts/validation_study.py --from-snapshot --write` (statistics changed) or the full study "
        "(runs changed)")


def test_the_docs_tables_come_from_the_study(shipped):
    assert vs.DOC.read_text(encoding="utf-8") == vs.markdown(shipped), "docs/validation.md: run the study with --write"
    generated = vs.blocks(shipped)
    for doc in vs.DOCS_WITH_BLOCKS:
        text = doc.read_text(encoding="utf-8")
        found = set(m.group(2) for m in vs.MARK.finditer(text))
        assert found and found <= set(generated), doc
        assert vs.fill(text, generated) == text, f"{doc.name}: a generated block is stale (run the study with --write)"


def test_what_a_run_prints_comes_from_the_study(shipped):
    from nteval.evidence import bias_notes, evidence_lines

    line = evidence_lines("highrecall")[0]
    cisi = shipped["agreement"]["highrecall"]["cisi"]
    d = shipped["decisions"]["highrecall"]["cisi"]
    assert f"Kendall tau {cisi['kendall']:.2f} [{cisi['ci95'][0]:.2f}, {cisi['ci95'][1]:.2f}]" in line
    assert f"{d['same_direction']} of the {d['human_separated']} pairs of systems the humans separate" in line
    exp = shipped["biases"]["highrecall"]["expansion"]["collections"]["scifact"]
    note = bias_notes("highrecall", {"rm3": {"algorithm": "bm25_rm3"}})[0]
    assert f"a bias of {exp['bias'] * 100:+.0f} points" in note["text"]


def test_the_gate_decisions_stored_are_what_the_gate_decides_now(snapshot):
    """The snapshot keeps the release gate's and the reference test's decision on every ordered pair
    (870 per verdict and collection: a minute each to recompute); a sample of them, the neural
    systems against BM25 among them, is decided again here from the stored per-topic scores."""
    import numpy as np

    from nteval.correlate.gate_agreement import human_decision
    from nteval.gate.decide import decide

    code = {v: k for k, v in vs.DECISION_CODE.items()}
    for name, c in snapshot["collections"].items():
        if name not in vs.COLLECTIONS:
            continue
        names = c["systems"]
        human = np.asarray(c["scores"]["human"]["values"])
        for side in ("focused", "highrecall"):
            rows = c["gate"][side]["rows"]
            nt = np.asarray(c["scores"][side]["values"])
            qids = c["scores"][side]["qids"]
            want = {(names.index("bm25"), names.index(n)) for n in vs.NEURAL} | {(names.index(n), names.index("bm25"))
                                                                                 for n in vs.NEURAL}
            sample = [r for r in rows if (r[0], r[1]) in want] + rows[:: max(1, len(rows) // 4)][:4]
            # (where the stored decisions had the gate's cross-family rules applied, as MED's, made after the rules
            # existed, with the evidence shipped then: a rule only ever makes NT's decision more cautious)
            ruled = "cross-family rules" in str(c["gate"][side]["test"])
            cautious = {"better": {"better", "non-inferior", "inconclusive"}, "non-inferior": {"non-inferior", "inconclusive"},
                        "worse": {"worse", "inconclusive"}, "inconclusive": {"inconclusive"}}
            for b, x, g, h, beyond in sample:
                alone = decide(nt[b], nt[x], qids)["decision"]
                assert code[g] in cautious[alone] if ruled else code[g] == alone, (name, side, names[b], names[x])
                hd = human_decision(human[b], human[x])
                assert (code[h], bool(beyond)) == (hd["decision"], hd["beyond_margin"]), (name, side, names[b], names[x])


def test_the_neural_figures_and_the_designs_table(shipped):
    """The neural systems are followed on every collection, before and after the neural reference;
    the designs table of docs/verdicts.md is the rendering of docs/fairness.json, whose choice is
    the rule's on its own figures."""
    fs = script("fairness_study")
    for name in vs.COLLECTIONS:
        row = shipped["neural"][name]["minilm"]
        assert set(row) == {"human", "focused", "highrecall", vs.BEFORE}
    data = json.loads(fs.OUT_JSON.read_text(encoding="utf-8"))
    assert fs.choose(data) == data["choice"] and data["choice"]["chosen"] == "equal shares"
    doc = fs.DOC.read_text(encoding="utf-8")
    assert f"<!-- {fs.MARK} -->\n{fs.block(data)}\n<!-- /{fs.MARK} -->" in doc


def test_the_grid_facts_are_what_the_script_computes_from_the_table():
    shipped = json.loads(gs.FACTS.read_text(encoding="utf-8"))
    assert shipped["study"]["date"] and shipped["study"]["nteval"]
    now = {"study": shipped["study"], **gs.facts(gs.read_table())}
    assert json.loads(json.dumps(now)) == shipped, "grid_facts.json: run `python scripts/grid_study.py --from-table --write`"
    doc = gs.DOC.read_text(encoding="utf-8")
    assert gs.MARK.search(doc) and gs.fill(doc, gs.block(shipped)) == doc, "docs/grid.md's PubMed block is stale"


def test_a_parameter_reason_cites_the_grid_as_it_stands():
    from nteval.answer import parameter_reason
    from nteval.evidence import grid_fact

    fact = grid_fact("b")
    assert fact is not None and fact["compared"] == fact["focused_higher"] + fact["focused_lower"] + fact["equal"]
    text = parameter_reason("b", 0.75, 0.4)
    assert f"the same direction as nteval's PubMed grid at {fact['focused_higher']} of its {fact['compared']}" in text
    assert f"the same direction as nteval's PubMed grid at {fact['focused_lower']} of" in parameter_reason("b", 0.4, 0.75)


def test_the_designs_ap_is_trec_evals():
    """fairness_study scores each design with its own AP (seconds, not minutes, per design): the same
    values as nteval.evaluate (ir_measures over pytrec_eval), ties in trec_eval's order (score, then
    docid descending) and condensed rankings included."""
    import numpy as np

    from nteval.evaluate import evaluate_run

    fs = script("fairness_study")
    runs = {"a": {"q1": [("d1", 3.0), ("d2", 2.0), ("d3", 2.0), ("d4", 1.0), ("d9", 0.5)], "q2": [("d5", 1.0)],
                  "q3": [("d1", 1.0)]},
            "b": {"q1": [("d4", 5.0), ("d3", 5.0), ("d1", 1.0)], "q2": [("d6", 2.0), ("d5", 1.0)]}}
    qrels = {"q1": {"d1": 1, "d3": 2, "d4": 0, "d2": 0, "d8": 1}, "q2": {"d5": 1, "d6": 0}, "q3": {"d2": 0}}
    for condense in (False, True):
        fast = fs._ap(runs, qrels, ["a", "b"], condense)
        for n in ("a", "b"):
            run = runs[n] if not condense else {q: [h for h in r if h[0] in qrels[q]] for q, r in runs[n].items()}
            _, per = evaluate_run(qrels, run, ["AP"])
            assert np.allclose(fast[n], [per[q]["AP"] for q in sorted(qrels)], atol=1e-12), (n, condense)
    # by hand: a on q1 ranks d1 (rel), d3 (rel: the tie 2.0 goes to the greater docid), d2, d4, d9; R = 3
    assert fs._ap(runs, qrels, ["a"])["a"][0] == (1 / 1 + 2 / 2) / 3


def test_the_gates_false_passes_per_family_are_its_false_passes_by_candidate(shipped, snapshot):
    """Issue 57: the gate's promise per family. Each family's false passes are the study's false-pass
    pairs whose candidate is of that family, and the families add up to the whole."""
    from collections import Counter

    from nteval.systems.families import families

    fam = families(snapshot["configs"])
    for protocol, per in shipped["gate"].items():
        for name, g in per.items():
            by = g["per_family"]
            assert sum(f["false_pass"] for f in by.values()) == g["false_pass"], (protocol, name)
            assert sum(f["human_loss_beyond_margin"] for f in by.values()) == g["human_loss_beyond_margin"]
            counted = Counter(fam.get(c) or "other" for _, c in g["false_passes"])
            assert {f: x["false_pass"] for f, x in by.items() if x["false_pass"]} == dict(counted), (protocol, name)


@pytest.mark.parametrize("name", ["loco_fairness_study", "query_form_study"])
def test_a_cross_collection_study_ships_its_rules_choice_and_its_table(name):
    """The leave-one-collection-out studies (issue 57): the choice stored is the rule's on the
    figures stored, fold by fold, and docs/verdicts.md's block is their rendering."""
    s = script(name)
    data = json.loads(s.OUT_JSON.read_text(encoding="utf-8"))
    per, topical = data["collections"], [c for c in s.TOPICAL if c in data["collections"]]
    for held, fold in data["folds"].items():
        again = s.choose(per, [c for c in topical if c != held])
        assert json.loads(json.dumps(again)) == fold, (name, held)
    assert json.loads(json.dumps(s.choose(per, topical))) == data["chosen"]
    doc = s.DOC.read_text(encoding="utf-8")
    assert f"<!-- {s.MARK} -->\n{s.block(data)}\n<!-- /{s.MARK} -->" in doc
