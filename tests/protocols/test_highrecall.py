"""High-recall NT protocol: z-scores and thresholds against hand-computed values, then end to end
on a real index."""
from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from nteval.cli import main
from nteval.corpus.store import DocStore
from nteval.experiment import run_highrecall, run_sref_sensitivity
from nteval.formats.trec import read_qrels, read_run, read_topics
from nteval.topics.highrecall import pseudo_qrels_for, sentence_query, zscores

RANKING = [("a", 10.0), ("b", 8.0), ("c", 6.0), ("d", 4.0), ("e", 2.0)]


def test_zscores_by_hand():
    # mean 6; population var = (16+4+0+4+16)/5 = 8; sample var = 40/4 = 10
    assert zscores([s for _, s in RANKING]) == pytest.approx([2 / math.sqrt(8) * x for x in (2, 1, 0, -1, -2)])
    assert zscores([s for _, s in RANKING], "sample")[0] == pytest.approx(4 / math.sqrt(10))
    assert zscores([3.0, 3.0, 3.0]) == [] and zscores([1.0]) == []


def test_threshold_and_judged_policies_by_hand():
    # population z(a) = 4/√8 = 1.414 ≥ 1.4; sample z(a) = 4/√10 = 1.265 < 1.4
    assert pseudo_qrels_for(RANKING, k=5, zt=1.4) == {"a": 1}
    assert pseudo_qrels_for(RANKING, k=5, zt=1.4, std="sample") == {}
    assert pseudo_qrels_for(RANKING, k=5, zt=1.4, judged="topk-nonrelevant") == {"a": 1, "b": 0, "c": 0, "d": 0, "e": 0}
    # only the top k are standardised: k=3 → mean 8, pop. std √(8/3), z(a) = 2/1.633 = 1.2247
    assert pseudo_qrels_for(RANKING, k=3, zt=1.22) == {"a": 1}
    assert pseudo_qrels_for(RANKING, k=3, zt=1.23) == {}
    assert pseudo_qrels_for(RANKING, k=3, zt=1.22, judged="topk-nonrelevant") == {"a": 1, "b": 0, "c": 0}
    assert pseudo_qrels_for([("x", 5.0), ("y", 5.0)], k=10, zt=0.0) == {}  # no spread: dropped


def test_sentence_query():
    s = ["One.", "Two.", "Three.", "Four."]
    assert sentence_query(s, 3) == "Three."
    assert sentence_query(s[:2], 3) is None
    assert sentence_query(s[:2], 3, fallback="last") == "Two."


def test_end_to_end_deterministic_and_consistent(first200_index, tmp_path):
    # the paper's single BM25 S_ref (the default fuses several: see the next test)
    kw = dict(n_topics=40, seed=5, systems="default", progress=False, min_topics=10, sref=["bm25"])
    a = run_highrecall(first200_index, tmp_path / "a", **kw)
    run_highrecall(first200_index, tmp_path / "b", **kw)
    for f in ("qrels.txt", "topics.tsv", "titles.tsv"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    # again into "a": S_ref's run now comes back from its file, and the pseudo-qrels must not move
    fresh = (tmp_path / "a" / "qrels.txt").read_bytes()
    again = run_highrecall(first200_index, tmp_path / "a", **kw)
    assert (tmp_path / "a" / "qrels.txt").read_bytes() == fresh and again["systems"] == a["systems"]
    assert a["protocol"] == "highrecall" and a["measures"] == ["AP", "Bpref", "P@10", "nDCG@10", "R@1000"]
    assert a["sref"]["index"] == "all" and a["judged"] == "topk-nonrelevant"
    topics = read_topics(tmp_path / "a" / "topics.tsv")
    titles = read_topics(tmp_path / "a" / "titles.tsv")
    qrels = read_qrels(tmp_path / "a" / "qrels.txt")
    # a topic id is its source document's id + "-s3" (nteval.topics.ids): never a focused topic's id
    source = {q: q.removesuffix("-s3") for q in topics}
    assert set(topics) == set(qrels) and all(q.endswith("-s3") for q in topics) and set(source.values()) <= set(titles)
    store = DocStore(first200_index / "docs.sqlite")
    for qid, text in topics.items():
        doc = store.get(source[qid])
        assert text == doc["sentences"][2]              # the 3rd sentence is the query
        assert text not in titles[source[qid]]          # and never part of S_ref's query
        assert any(r == 1 for r in qrels[qid].values())
    store.close()
    sref = read_run(tmp_path / "a" / "sref" / "bm25.run")
    assert set(sref) == set(titles)  # S_ref ran the titles (over `all`)
    # the stored pseudo-qrels are exactly what the z-score rule gives on S_ref's run (over `all`, where
    # records without an abstract compete too), kept for the documents the systems search (nt)
    from nteval.corpus.store import known_docids

    in_nt = known_docids(first200_index, {d for r in sref.values() for d, _ in r}, "nt")
    outside = 0
    for qid in qrels:
        want = pseudo_qrels_for(sref[source[qid]], k=1000, zt=2.0, judged="topk-nonrelevant")
        assert qrels[qid] == {d: r for d, r in want.items() if d in in_nt}
        outside += sum(1 for d, r in want.items() if r > 0 and d not in in_nt)
    assert a["judged_outside_nt"]["pseudo_relevant"] == outside  # (records without an abstract: see test_judgeable)
    sizes = [sum(v.values()) for v in qrels.values()]
    assert a["pseudo_relevant_per_topic"]["max"] == max(sizes)
    counts = dict(line.split("\t") for line in (tmp_path / "a" / "pseudo_relevant_counts.tsv").read_text().splitlines()[1:])
    assert {q: int(n) for q, n in counts.items()} == {q: sum(v.values()) for q, v in qrels.items()}
    assert a["n_topics"] + a["dropped"]["no_sentence"] + a["dropped"]["no_pseudo_relevant"] == 40


def expected(out, names, res):
    """The pseudo-qrels (by source document) the rules give the reference runs written in OUT/sref/:
    the lexical vote, and each other family's equal share beside it (several families), or the
    fusion of one family's references."""
    from nteval.protocols.highrecall import reference_families, reference_systems
    from nteval.topics.highrecall import balanced_pseudo_qrels, fused_pseudo_qrels

    groups = reference_families(reference_systems(tuple(names)))
    runs = {f: [read_run(out / "sref" / f"{r.name}.run") for r in g] for f, g in groups.items()}
    kw = dict(judged=res["judged"], combine=res["sref"]["combine"] or "vote", graded=res["graded"])
    if len(groups) > 1:
        return balanced_pseudo_qrels(runs["lexical"], [v for f, v in runs.items() if f != "lexical"], **kw)
    return fused_pseudo_qrels(next(iter(runs.values())), **kw)


def test_equal_shares_by_hand():
    """Two lexical references vote (z ≥ 2 of each: the median of two is their mean), a neural one
    adds as many of its best; its other documents are judged, not relevant; a topic the lexical vote
    drops stays dropped whatever the neural reference says."""
    from nteval.topics.highrecall import balanced_pseudo_qrels

    flat = [(f"x{i:02d}", 1.0) for i in range(30)]
    lex1 = {"t": [("a", 30.0), ("b", 25.0), *flat], "u": [("c", 1.0), ("d", 1.0)]}
    lex2 = {"t": [("b", 30.0), ("a", 25.0), *flat], "u": [("c", 1.0), ("d", 1.0)]}
    neural = {"t": [("n1", 0.9), ("n2", 0.8), ("a", 0.7), ("n3", 0.1)], "u": [("n9", 0.9)]}
    q = balanced_pseudo_qrels([lex1, lex2], [[neural]], k=1000, zt=2.0, judged="topk-nonrelevant")
    assert set(q) == {"t"}  # u: every lexical score equal, no z, no topic
    assert {d for d, r in q["t"].items() if r > 0} == {"a", "b", "n1", "n2"}
    assert q["t"]["n3"] == 0 and q["t"]["x00"] == 0 and len(q["t"]) == 2 + 30 + 3
    # a family of several references: reciprocal rank fusion picks its share
    other = {"t": [("n2", 0.9), ("n3", 0.8), ("n1", 0.1)]}
    q2 = balanced_pseudo_qrels([lex1, lex2], [[neural, other]], k=1000, zt=2.0)
    assert {d for d, r in q2["t"].items() if r > 0} == {"a", "b", "n1", "n2"}  # n2: 1/62 + 1/61; n1: 1/61 + 1/63
    # a deeper share: twice the lexical vote's two documents, by the neural reference's order ("a" is already in)
    q3 = balanced_pseudo_qrels([lex1, lex2], [[neural]], k=1000, zt=2.0, share=2.0)
    assert {d for d, r in q3["t"].items() if r > 0} == {"a", "b", "n1", "n2", "n3"}
    q4 = balanced_pseudo_qrels([lex1, lex2], [[neural]], k=1000, zt=2.0, share=0.5)
    assert {d for d, r in q4["t"].items() if r > 0} == {"a", "b", "n1"}


def test_without_the_neural_extra_the_lexical_vote_judges_and_says_so(first200_index, tmp_path, monkeypatch):
    from nteval.encoders import models

    monkeypatch.setitem(models.SHIPPED_MODELS, "minilm", models.ShippedModel("minilm", 384, ("nteval_no_such_module",), ""))
    r = CliRunner().invoke(main, ["highrecall", "--index", str(first200_index), "--topics", "30", "--min-topics", "10",
                                  "--systems", "default", "--out", str(tmp_path / "h")])
    assert r.exit_code == 0, r.output
    assert "CAUTION: the neural extra is not installed" in r.output
    res = json.loads((tmp_path / "h" / "results.json").read_text())
    assert res["sref"]["families"] == {"lexical": ["bm25", "bm25_k1.2_b0.75", "qld_mu1000"]}
    assert res["sref"]["neural_reference"].startswith("the neural extra is not installed")
    # asked for by name, the balanced references are refused in one line
    r = CliRunner().invoke(main, ["highrecall", "--index", str(first200_index), "--topics", "30", "--min-topics", "10",
                                  "--preset", "balanced", "--out", str(tmp_path / "b")])
    assert r.exit_code == 2 and "pip install 'nteval[neural]'" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_default_settings_are_deterministic_and_fuse_the_references(first200_index, tmp_path):
    """The defaults chosen by the high-recall study: byte-identical topics/qrels for a seed, and
    pseudo-qrels that are exactly the fusion rule applied to the reference systems' runs."""
    from nteval.protocols.highrecall import default_srefs

    kw = dict(n_topics=40, seed=5, systems="default", progress=False, min_topics=10)
    a = run_highrecall(first200_index, tmp_path / "a", **kw)
    run_highrecall(first200_index, tmp_path / "b", **kw)
    for f in ("qrels.txt", "topics.tsv", "titles.tsv"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    from nteval.corpus.store import known_docids

    want = expected(tmp_path / "a", default_srefs(), a)
    in_nt = known_docids(first200_index, {d for v in want.values() for d in v}, "nt")
    got = read_qrels(tmp_path / "a" / "qrels.txt")
    assert got and not a["holdout"]
    assert all(got[q] == {d: r for d, r in want[q.removesuffix("-s3")].items() if d in in_nt} for q in got)
    assert a["sref"]["name"] == "+".join(default_srefs())
    # the paper's setting by name
    p = run_highrecall(first200_index, tmp_path / "p", preset="paper", **kw)
    assert p["sref"]["name"] == "bm25" and p["judged"] == "relevant-only" and not p["holdout"] and not p["graded"]


def test_relevant_only_is_the_relevant_part_of_topk(first200_index, tmp_path):
    kw = dict(n_topics=30, seed=9, systems="default", progress=False, min_topics=10)
    run_highrecall(first200_index, tmp_path / "t", judged="topk-nonrelevant", **kw)
    run_highrecall(first200_index, tmp_path / "r", judged="relevant-only", **kw)
    t = read_qrels(tmp_path / "t" / "qrels.txt")
    r = read_qrels(tmp_path / "r" / "qrels.txt")
    assert r == {q: {d: v for d, v in docs.items() if v > 0} for q, docs in t.items()}


def test_sref_sensitivity_outputs(first200_index, tmp_path):
    res = run_sref_sensitivity(first200_index, tmp_path / "s", ["bm25", "qld_mu1000"], n_topics=30, seed=2, min_topics=10,
                               systems="default", progress=False)
    c = res["correlations"]["bm25 vs qld_mu1000"]
    assert set(c) == set(res["measures"])
    assert -1 <= c["AP"]["spearman"]["value"] <= 1
    assert (tmp_path / "s" / "sref_AP.png").stat().st_size > 5000
    assert json.loads((tmp_path / "s" / "sref_sensitivity.json").read_text())["srefs"] == ["bm25", "qld_mu1000"]


def test_unknown_sref_is_a_clear_error(first200_index, tmp_path):
    r = CliRunner().invoke(main, ["highrecall", "--index", str(first200_index), "--sref", "nope", "--out", str(tmp_path / "o"),
                                  "--topics", "5", "--quiet"])
    assert r.exit_code == 2 and "'nope'" in r.stderr


def test_bad_combine_through_the_api_is_a_one_line_error(first200_index, tmp_path):
    from nteval.errors import InputError

    with pytest.raises(InputError, match="--combine must be one of vote, mean"):
        run_highrecall(first200_index, tmp_path / "x", n_topics=30, seed=1, systems="default", progress=False,
                       min_topics=10, combine="max")
    assert not (tmp_path / "x").exists()


def test_judgeable_keeps_only_documents_the_systems_search(sample_index, tmp_path):
    """S_ref searches `all`, where records without an abstract compete (PubMed finds them by their
    titles); those are not in `nt`, so their judgments leave the pseudo-qrels, counted."""
    from nteval.corpus.store import known_docids
    from nteval.protocols.highrecall import default_srefs

    res = run_highrecall(sample_index, tmp_path / "h", n_topics=100, seed=42, systems="default", progress=False)
    fused = expected(tmp_path / "h", default_srefs(), res)
    got = read_qrels(tmp_path / "h" / "qrels.txt")
    judged = {d for v in got.values() for d in v}
    assert known_docids(sample_index, judged, "nt") == judged  # every judged document is searchable
    in_nt = known_docids(sample_index, {d for v in fused.values() for d in v}, "nt")
    gone = sum(1 for q in got for d, r in fused[q.removesuffix("-s3")].items() if r > 0 and d not in in_nt)
    assert gone == res["judged_outside_nt"]["pseudo_relevant"] > 0
