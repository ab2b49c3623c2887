"""`nteval correlate` end to end on the bundled judged SciFact slice (real claims and judgments)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from nteval.cli import main
from nteval.demo import scifact_slice


def test_correlate_report(correlated):
    r, out = correlated
    assert r.exit_code == 0, r.output + r.stderr
    rep = json.loads((out / "report.json").read_text())
    assert rep["human"]["topics"] == 30 and len(rep["systems"]) == 6
    assert {(p["nt"], p["nt_measure"], p["human_measure"]) for p in rep["pairs"]} >= {("focused", "RR", "nDCG@10"),
                                                                                       ("highrecall", "AP", "AP")}
    for p in rep["pairs"]:
        assert set(p["stats"]) == {"pearson", "spearman", "kendall", "tau_ap"}
        assert set(p["ci95"]) == {"pearson", "spearman", "kendall", "tau_ap"}
    assert set(rep["baselines"]) == {"soboroff", "reference_count"}
    top = rep["pairs"][0]["top_half_systems"]
    assert len(top) == 3 and "disjunctive_1" not in top
    # figures that cannot mean anything are named, not printed as if they did: the better half
    # (3 systems) is not computed, and human Bpref ties 5 of the 6 systems (all find the one
    # relevant abstract above every judged non-relevant one)
    assert all(p["stats_top_half"] is None for p in rep["pairs"])
    figures = {c["figure"] for c in rep["caveats"]}
    assert "the better half of the systems" in figures and "every figure on human Bpref" in figures
    md = (out / "report.md").read_text()
    assert "Read with care" in md and "not computed" in md
    assert rep["human_ceiling"]["AP"]["splits"] == 20
    # the weak one-word system is last for the humans too
    assert min(rep["human"]["scores"], key=lambda n: rep["human"]["scores"][n]["AP"]) == "disjunctive_1"
    # the verdict contract (tools read it); human.scores unchanged
    for side, measure in (("focused", "RR"), ("highrecall", "AP")):
        v = rep["verdict"][side]
        assert v["measure"] == measure and v["task"] and set(v["scores"]) == set(rep["systems"])
        assert {s for g in v["groups"] for s in g} == set(rep["systems"])
        assert v["agreement_with_human"]["human_measure"] == "AP"
        assert rep["nt"][side]["topic_counts"]["requested"] == 40
    assert set(rep["human"]["scores"]["bm25"]) >= {"AP", "nDCG@10"}
    # every CI contains its point estimate on real data, and says its method
    for p in rep["pairs"]:
        assert p["ci_method"]["name"].startswith("BCa")
        for k, (lo, hi) in p["ci95"].items():
            est = p["stats"][k]["value"]
            assert est is None or lo - 1e-12 <= est <= hi + 1e-12, (p["nt"], k, est, lo, hi)
    md = (out / "report.md").read_text()  # bottom line, caveats, verdicts, then the tables
    assert md.startswith("**Bottom line:** NT focused (RR) orders the systems like human AP at Kendall τ")
    assert md.index("## Read with care") < md.index("## Verdicts") < md.index("## Agreement of NT rankings")
    # does NT reward a system over bm25 more than humans do? (CIs contain their estimates)
    adv = next(p for p in rep["pairs"] if (p["nt"], p["nt_measure"], p["human_measure"]) == ("highrecall", "AP", "AP"))
    for a in adv["advantage_vs_bm25"].values():
        for side in ("nt", "human"):
            v, (lo, hi) = a[side]["value"], a[side]["ci95"]
            assert v is None or lo <= v <= hi
        assert a["nt_overstates"] in (True, False, None)
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "<table" in html
    # the scatter plots at the page's full width, one per row (issue 40: 290 px thumbnails in a grid before)
    assert "class='figures'" not in html and html.count("<figure><img") == len(rep["pairs"])
    import struct
    for png in out.glob("scatter_*.png"):
        width = struct.unpack(">I", png.read_bytes()[16:20])[0]
        assert width >= 690, (png.name, width)  # 6.4 in (4.6 in for a scatter with two values) at 150 dpi
    # fidelity where decisions are made: each verdict and baseline against the human paired tests
    d = rep["decisions"]
    assert d["human"]["pairs"] == 15 and d["human"]["correction"].startswith("Holm")
    assert set(d["verdicts"]) == {"focused", "highrecall"} and set(d["baselines"]) == {"soboroff", "reference_count"}
    for x in [*d["verdicts"].values(), *d["baselines"].values()]:
        assert x["human_separated"] == d["human"]["separated"]
        assert x["same_direction"] + len(x["reversed"]) + x["missed"] == x["human_separated"]
        assert x["same_direction"] + len(x["reversed"]) + x["only_judgment_free"]["count"] == x["separated"]
        assert x["top_k_tau"]["10"] is None and x["human_best_in_best_group"] in (True, False)
    focused = d["verdicts"]["focused"]
    assert focused["best_group"] == rep["verdict"]["focused"]["groups"][0] and focused["judged_topics"] == 40
    assert "## Decisions: do the judgment-free rankings separate the pairs humans separate?" in md
    assert "Decisions: of the " in md
    assert (out / "report.md").read_text().count("![") == len(rep["pairs"])
    # the release gate's decisions against the human ones (issue 45): every ordered pair, its own rule
    from nteval.correlate.gate_agreement import human_decision
    from nteval.gate.decide import decide

    g = rep["gate"]
    assert set(g) == {"focused", "highrecall"}
    for side, x in g.items():
        assert x["pairs"] == 30 and len(x["rows"]) == 30 and x["measure"] == rep["verdict"][side]["measure"]
        assert x["agree"] <= x["both_decide"] <= x["pairs"] and x["false_pass"] <= x["human_loss_beyond_margin"]
        assert x["both_decide"] == sum(r["gate"] != "inconclusive" and r["human"] != "inconclusive" for r in x["rows"])
    # one pair re-decided from the written per-topic scores: the gate's decide() on NT RR, the t rule on human AP
    import csv
    from collections import defaultdict

    def per_topic(path, measure):
        s = defaultdict(dict)
        for row in csv.DictReader(open(path), delimiter="\t"):
            if row["measure"] == measure:
                s[row["system"]][row["qid"]] = float(row["value"])
        return s

    nt, hu = per_topic(out / "focused" / "per_topic.tsv", "RR"), per_topic(out / "human" / "per_topic.tsv", "AP")
    row = next(r for r in g["focused"]["rows"] if r["baseline"] == "bm25" and r["candidate"] == "disjunctive_1")
    q, hq = sorted(nt["bm25"]), sorted(hu["bm25"])
    assert row["gate"] == decide([nt["bm25"][t] for t in q], [nt["disjunctive_1"][t] for t in q], q)["decision"]
    assert row["human"] == human_decision(np.array([hu["bm25"][t] for t in hq]),
                                          np.array([hu["disjunctive_1"][t] for t in hq]))["decision"]
    assert "## The release gate's decisions against the human ones" in md


def test_correlate_rejects_qrels_without_matching_topics(scifact_index, tmp_path):
    (tmp_path / "q.tsv").write_text("query-id\tcorpus-id\tscore\nzzz\t1\t1\n")
    sl = scifact_slice()
    r = CliRunner().invoke(main, ["correlate", "--index", str(scifact_index), "--queries", str(sl / "queries.jsonl"),
                                  "--qrels", str(tmp_path / "q.tsv"), "--out", str(tmp_path / "c"), "--quiet"])
    assert r.exit_code == 2 and "fewer than 2 topics" in r.stderr


def test_caveats_rules_by_hand():
    """Each rule on a hand-made report: fires where a figure cannot mean anything, stays quiet where
    it can."""
    from nteval.report.caveats import caveats

    names = [f"s{i}" for i in range(10)]
    good = {"kendall": {"value": 0.8, "p": 0.01}}
    pair = {"nt": "highrecall", "nt_measure": "AP", "human_measure": "AP", "stats": good,
            "ci95": {"kendall": [0.6, 0.95]}, "top_half_systems": names[:5]}
    rep = {"systems": names, "pairs": [pair],
           "human": {"scores": {n: {"AP": 0.1 * i} for i, n in enumerate(names)}},
           "human_ceiling": {"AP": {"kendall": {"mean": 0.8, "ci95": [0.7, 0.9]}}}}
    assert caveats(rep) == []
    rep["human"]["scores"] = {n: {"AP": 0.5 if i < 6 else 0.1 * i} for i, n in enumerate(names)}  # 5 distinct of 10
    rep["human_ceiling"]["AP"]["kendall"]["mean"] = 0.3
    pair["ci95"]["kendall"] = [-0.2, 0.7]
    pair["top_half_systems"] = names[:4]
    figures = [c["figure"] for c in caveats(rep)]
    assert figures == ["the better half of the systems", "every figure on human AP", "agreement with human AP",
                       "NT highrecall AP vs human AP: Kendall τ 0.800"]
    pair["ci95"]["kendall"] = [0.4, 0.4]
    assert caveats(rep)[-1]["figure"] == "NT highrecall AP vs human AP: Kendall's CI"
    # replicates mostly on one side of the estimate: the interval is a bias correction, said so
    pair["ci95"]["kendall"] = [0.72, 0.79]
    pair["ci_method"] = {"spread": {"kendall": {"percentile": [0.38, 0.75], "share_below_estimate": 0.958}}}
    assert caveats(rep)[-1]["figure"] == "NT highrecall AP vs human AP: Kendall's CI [0.720, 0.790]"
    assert "96 % of the bootstrap replicates fall below τ 0.800" in caveats(rep)[-1]["why"]
    for share in (0.84, 0.5, 0.16):  # up to 84 % on either side: quiet
        pair["ci_method"]["spread"]["kendall"]["share_below_estimate"] = share
        assert "Kendall's CI [" not in caveats(rep)[-1]["figure"]
    pair["ci_method"]["spread"]["kendall"]["share_below_estimate"] = 0.1
    assert caveats(rep)[-1]["figure"] == "NT highrecall AP vs human AP: Kendall's CI [0.720, 0.790]"
    # every human score equal: τ and its CI are undefined (None); said once, no crash on the None
    rep["human"]["scores"] = {n: {"AP": 0.0} for n in names}
    pair["stats"] = {"kendall": {"value": None, "p": None}}
    pair["ci95"]["kendall"] = None
    assert [c["figure"] for c in caveats(rep)][1:] == ["every figure on human AP", "agreement with human AP"]


def test_external_runs_join_the_agreement_report(correlated, scifact_index, tmp_path):
    """An outside system's runs over correlate's topic sets (DIR/focused/, DIR/highrecall/,
    DIR/human/) are ranked beside the zoo on both sides; a single run for all sets is refused."""
    import shutil

    from nteval.demo import scifact_slice

    _r, first = correlated
    out = tmp_path / "c"
    shutil.copytree(first, out)
    runs = tmp_path / "runs"
    for side in ("focused", "highrecall", "human"):
        (runs / side).mkdir(parents=True)
        rows = (first / side / "runs" / "bm25.run").read_text().splitlines()
        (runs / side / "x.run").write_text("".join(" ".join(r.split()[:5] + ["their_bm25"]) + "\n" for r in rows))
    sl = scifact_slice()
    args = ["correlate", "--index", str(scifact_index), "--queries", str(sl / "queries.jsonl"), "--qrels",
            str(sl / "qrels.tsv"), "--topics", "40", "--bootstrap", "50", "--min-topics", "10", "--out", str(out), "--quiet"]
    r = CliRunner().invoke(main, [*args, "--runs", str(runs)])
    assert r.exit_code == 0, r.output
    rep = json.loads((out / "report.json").read_text())
    for pair in rep["pairs"]:
        assert pair["nt_scores"]["their_bm25"] == pair["nt_scores"]["bm25"]
        assert pair["human_scores"]["their_bm25"] == pair["human_scores"]["bm25"]
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(runs / "focused" / "x.run", flat / "x.run")
    r = CliRunner().invoke(main, [*args, "--runs", str(flat)])
    assert r.exit_code == 2 and "give one run per set" in r.output and len(r.output.strip().splitlines()) == 1, r.output


def _correlate(scifact_index, qrels, out, *extra):
    sl = scifact_slice()
    return CliRunner().invoke(main, ["correlate", "--index", str(scifact_index), "--queries", str(sl / "queries.jsonl"),
                                     "--qrels", str(qrels), "--topics", "40", "--bootstrap", "50", "--min-topics", "10",
                                     "--out", str(out), "--quiet", *extra])


def test_qrels_repeating_a_pair_with_another_grade_are_refused_naming_the_qrels(scifact_index, tmp_path):
    """G8: a (query, document) judged twice with two grades is refused in one line naming the qrels
    file, how many and the first one's line, whichever grade comes last (it was "last wins" in
    silence, and when that left no relevant document the error blamed the queries file). Qrels
    with fewer than 2 topics holding a relevant document are the qrels' fault, said so."""
    lines = (scifact_slice() / "qrels.tsv").read_text().splitlines()
    header, rows = lines[0], lines[1:]
    q, d, _g = rows[0].split("\t")
    cases = {"dup.tsv": [header, *(x for r in rows for x in (r, r.rsplit("\t", 1)[0] + "\t0"))],
             "dup2.tsv": [header, *(x for r in rows for x in (r.rsplit("\t", 1)[0] + "\t0", r))]}
    for name, content in cases.items():
        (tmp_path / name).write_text("\n".join(content) + "\n")
        r = _correlate(scifact_index, tmp_path / name, tmp_path / "c")
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
        assert f"{name}:line 3: {len(rows):,} judgment(s) repeat an earlier (query, document) with another grade" in r.output
        assert f"query '{q}', document '{d}', judged at line 2" in r.output and "queries.jsonl" not in r.output, r.output
    (tmp_path / "same.tsv").write_text("\n".join([header, *rows, rows[0]]) + "\n")  # the same grade again: one judgment
    from nteval.formats.topics import load_qrels

    assert load_qrels(tmp_path / "same.tsv")[q] == load_qrels(scifact_slice() / "qrels.tsv")[q]
    (tmp_path / "zero.tsv").write_text("\n".join([header, *(r.rsplit("\t", 1)[0] + "\t0" for r in rows)]) + "\n")
    r = _correlate(scifact_index, tmp_path / "zero.tsv", tmp_path / "c")
    assert r.exit_code == 2 and "zero.tsv: fewer than 2 topics have a relevant document (a grade above 0)" in r.output
    assert "queries.jsonl" not in r.output, r.output


def test_negative_grades_are_scored_as_trec_eval_scores_them():
    """What report.json's caveat on negative grades says: a −2 is scored as a 0 (not relevant, gain
    0, never negative) by AP, nDCG@10, P@10 and R@1000, and as unjudged by Bpref."""
    from nteval.correlate.agreement import HUMAN_MEASURES
    from nteval.evaluate import evaluate_run

    run = {"q": [("a", 3.0), ("b", 2.0), ("c", 1.0)]}
    zero = evaluate_run({"q": {"a": 0, "b": 1, "c": 0, "d": 1}}, run, list(HUMAN_MEASURES))[0]
    negative = evaluate_run({"q": {"a": -2, "b": 1, "c": 0, "d": 1}}, run, list(HUMAN_MEASURES))[0]
    unjudged = evaluate_run({"q": {"b": 1, "c": 0, "d": 1}}, run, list(HUMAN_MEASURES))[0]
    assert {m: negative[m] == zero[m] for m in HUMAN_MEASURES} == {m: m != "Bpref" for m in HUMAN_MEASURES}
    assert negative["Bpref"] == unjudged["Bpref"] != zero["Bpref"]


def test_judged_documents_not_in_the_index_and_negative_grades_are_said(correlated, scifact_index, tmp_path):
    """G10: judged documents that are not in the collection are counted as such ("N judged documents
    are not in the index"), not as relevant documents without an abstract; G12: negative grades are
    counted in report.json's caveats, with how they are scored."""
    import gzip
    import shutil

    _r, first = correlated
    out = tmp_path / "c"
    shutil.copytree(first, out)
    lines = (scifact_slice() / "qrels.tsv").read_text().splitlines()
    header, rows = lines[0], lines[1:]
    topics = sorted({r.split("\t")[0] for r in rows})
    docs = [json.loads(x)["_id"] for x in gzip.open(scifact_slice() / "corpus.jsonl.gz", "rt")]
    judged = {tuple(r.split("\t")[:2]) for r in rows}
    foreign = [f"{q}\tNOSUCHDOC{i}\t1" for i, q in enumerate(topics[::3])]
    negative = [f"{q}\t{d}\t-2" for q in topics for d in docs[:2] if (q, d) not in judged]
    (tmp_path / "q.tsv").write_text("\n".join([header, *rows, *foreign, *negative]) + "\n")
    r = _correlate(scifact_index, tmp_path / "q.tsv", out)
    assert r.exit_code == 0, r.output
    rep = json.loads((out / "report.json").read_text())
    cov = rep["coverage"]
    assert cov["judged_not_in_index"]["documents"] > 0 and cov["judged_not_in_index"]["relevant"] > 0
    assert cov["human_relevant"]["without_abstract"] == 0 and cov["human_relevant"]["caveat"] is None
    why = {c["figure"]: c["why"] for c in rep["caveats"]}
    n = cov["judged_not_in_index"]["documents"]
    assert why["every human figure: the judged documents"].startswith(f"{n:,} judged documents are not in the index")
    grades = rep["negative_grades"]
    assert grades["judgments"] > 0 and grades["grades"] == [-2]
    assert why["every human figure: the grades"].startswith(f"{grades['judgments']:,} of the ")
    assert "as not relevant with a gain of 0" in why["every human figure: the grades"]
    assert "no abstract" not in " ".join(why.values())


def test_trec_qrels_count_every_repeated_judgment(tmp_path):
    """TREC qrels refuse any repeated (topic, document), as trec_eval does: one line with how many
    and the first one's line."""
    from nteval.errors import InputError
    from nteval.formats.topics import load_qrels

    p = tmp_path / "q.txt"
    p.write_text("1 0 a 1\n1 0 b 0\n1 0 a 0\n2 0 c 2\n1 0 b 0\n")
    with pytest.raises(InputError) as err:
        load_qrels(p)
    assert str(err.value) == (f"{p}:line 3: 2 judgment(s) repeat an earlier (topic, document) (the first: topic '1' "
                              "judges document 'a' twice, first at line 1): keep one line per pair, as trec_eval requires")
