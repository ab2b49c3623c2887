"""The validation study's snapshot of its runs is what nteval computes now, on a cheap part: CISI's
index, the focused protocol's 1,000 topics for three of the 28 systems, the human topics, and the
human paired tests over all 28 systems (tests/evidence/test_shipped_evidence.py checks the
statistics computed from the snapshot). Skips cleanly without ../shared/data."""
from __future__ import annotations

import json

import numpy as np
from conftest import script, shared

vs = script("validation_study")


def test_the_snapshot_is_what_nteval_computes_now_on_cisi(tmp_path):
    """A cheap part of the study's runs, recomputed: CISI's index, the focused protocol's 1,000
    topics for three systems, the human topics, and the human paired tests over all 28 systems."""
    snapshot = vs.read_snapshot()
    from nteval.correlate.decisions import separated_pairs, significance
    from nteval.evaluate import evaluate_run
    from nteval.experiment import run_protocol_scores
    from nteval.formats.topics import load_judged_topics
    from nteval.index import build_index
    from nteval.runs import Searched, run_all
    from nteval.systems.base import load_systems
    from nteval.systems.sets import builtin_systems

    c = snapshot["collections"]["cisi"]
    names = c["systems"]
    beir = shared("cisi", "beir")
    idx = tmp_path / "cisi"
    build_index([beir / "corpus.jsonl"], idx)
    pick = ["bm25", "qld_mu1000", "bm25_rm3"]
    systems = [s for s in load_systems(builtin_systems(snapshot["systems"])) if s.name in pick]
    _, scores = run_protocol_scores("focused", idx, tmp_path / "f", systems=systems, n_topics=vs.TOPICS, seed=vs.SEED,
                                    progress=False)
    stored = c["scores"]["focused"]
    assert scores.topics == stored["qids"]
    for n in pick:
        assert np.allclose(scores.matrix("RR", [n])[0], stored["values"][names.index(n)], atol=1e-6), n
    topics, qrels = load_judged_topics(beir / "queries.jsonl", beir / "qrels" / "test.tsv")
    manifest = json.loads((idx / "manifest.json").read_text())
    runs, _ = run_all(Searched(idx, "all", manifest["fingerprint"], label="human"), topics, systems, tmp_path / "h")
    hq = c["scores"]["human"]["qids"]
    for n in pick:
        per = evaluate_run(qrels, runs[n], ["AP"])[1]
        assert np.allclose([per[q]["AP"] for q in hq], c["scores"]["human"]["values"][names.index(n)], atol=1e-6), n
    human = np.asarray(c["scores"]["human"]["values"])
    sig = significance(names, human, "holm", seed=vs.SEED)
    assert separated_pairs(sig) == c["decisions"]["human"]["separated"]
