"""`nteval correlate` end to end on the bundled judged SciFact slice (real claims and judgments)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nteval.cli import main
from nteval.demo import scifact_slice
from nteval.index import build_index


@pytest.fixture(scope="module")
def scifact_index(tmp_path_factory):
    out = tmp_path_factory.mktemp("sf") / "idx"
    build_index([scifact_slice() / "corpus.jsonl.gz"], out)
    return out


def test_correlate_report(scifact_index, tmp_path):
    sl = scifact_slice()
    r = CliRunner().invoke(main, ["correlate", "--index", str(scifact_index), "--queries", str(sl / "queries.jsonl"),
                                  "--qrels", str(sl / "qrels.tsv"), "--topics", "40", "--bootstrap", "50",
                                  "--out", str(tmp_path / "c"), "--quiet"])
    assert r.exit_code == 0, r.output + r.stderr
    rep = json.loads((tmp_path / "c" / "report.json").read_text())
    assert rep["human"]["topics"] == 30 and len(rep["systems"]) == 6
    assert {(p["nt"], p["nt_measure"], p["human_measure"]) for p in rep["pairs"]} >= {("focused", "RR", "nDCG@10"),
                                                                                       ("highrecall", "AP", "AP")}
    for p in rep["pairs"]:
        assert set(p["stats"]) == {"pearson", "spearman", "kendall", "tau_ap"}
        assert set(p["ci95"]) == {"pearson", "spearman", "kendall", "tau_ap"}
    assert set(rep["baselines"]) == {"soboroff", "reference_count"}
    top = rep["pairs"][0]["top_half_systems"]
    assert len(top) == 3 and "disjunctive_1" not in top
    assert rep["human_ceiling"]["AP"]["splits"] == 20
    # the weak one-word system is last for the humans too
    assert min(rep["human"]["scores"], key=lambda n: rep["human"]["scores"][n]["AP"]) == "disjunctive_1"
    html = (tmp_path / "c" / "report.html").read_text()
    assert "data:image/png;base64," in html and "<table>" in html
    assert (tmp_path / "c" / "report.md").read_text().count("![") == len(rep["pairs"])


def test_correlate_rejects_qrels_without_matching_topics(scifact_index, tmp_path):
    (tmp_path / "q.tsv").write_text("query-id\tcorpus-id\tscore\nzzz\t1\t1\n")
    sl = scifact_slice()
    r = CliRunner().invoke(main, ["correlate", "--index", str(scifact_index), "--queries", str(sl / "queries.jsonl"),
                                  "--qrels", str(tmp_path / "q.tsv"), "--out", str(tmp_path / "c"), "--quiet"])
    assert r.exit_code == 2 and "fewer than 2 topics" in r.stderr
