"""What the verdict covers (issue 39, part 4): every output says how much of the collection NT cannot
see, with a caveat above a stated share — on the bundled SciFact slice with a seeded share of its
abstracts dropped (scripts/drop_abstracts.py) or its titles blanked (scripts/blank_titles.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli

from nteval.demo import scifact_slice
from nteval.evidence import COVERAGE_CAVEAT, coverage
from nteval.index import build_index

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _copy(tmp: Path, script: str, share: float) -> Path:
    out = tmp / script.split(".")[0]
    r = subprocess.run([sys.executable, str(SCRIPTS / script), str(scifact_slice()), str(out), "--share", str(share),
                        "--seed", "1"], capture_output=True, text=True, check=True)
    assert f"({share:.0%}, seed 1)" in r.stdout
    return out


def test_coverage_by_hand():
    c = coverage({"all": 1000, "nt": 700, "with_title_and_abstract": 650, "without_abstract": 300, "without_title": 50,
                  "skipped_without_title_or_abstract": 0})
    assert (c["records"], c["seen"], c["unseen"], c["share_unseen"]) == (1000, 650, 350, 0.35)
    assert c["text"].startswith("the verdict speaks for the 650 of 1,000 records (65 %) with a title and an abstract; "
                                "it cannot see the other 350 (35 %): 300 without an abstract (never searched by NT's "
                                "systems), 50 without a title (never a topic)")
    assert c["caveat"].startswith(f"35 % of the collection is outside what NT sees (above {COVERAGE_CAVEAT * 100:.0f} %)")
    # records the index's documents policy skipped are part of the collection too
    c = coverage({"all": 650, "nt": 650, "with_title_and_abstract": 650, "without_abstract": 0, "without_title": 0,
                  "skipped_without_title_or_abstract": 350})
    assert c["unseen"] == 350 and "350 skipped by the index's documents policy" in c["text"] and c["caveat"]
    below = coverage({"all": 1000, "nt": 990, "with_title_and_abstract": 990, "without_abstract": 10})
    assert below["share_unseen"] == 0.01 and below["caveat"] is None and "it cannot see the other 10 (1 %)" in below["text"]
    assert coverage({"all": 5, "nt": 5, "with_title_and_abstract": 5})["text"].endswith("with a title and an abstract")


def test_abstract_less_records_show_the_caveat_in_every_output(tmp_path):
    beir = _copy(tmp_path, "drop_abstracts.py", 0.5)
    idx = tmp_path / "idx"
    build_index([beir / "corpus.jsonl"], idx)
    r = cli("focused", "--index", idx, "--topics", "40", "--min-topics", "10", "--systems", "default",
            "--task", "known-item", "--out", tmp_path / "f", "--quiet")
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "f" / "results.json").read_text())
    cov = res["coverage"]
    assert cov["records"] == 500 and cov["without_abstract"] == 250 and cov["share_unseen"] == 0.5 and cov["caveat"]
    assert f"  coverage: {cov['text']}" in r.output and f"  CAVEAT: {cov['caveat']}" in r.output
    # the headline itself says it
    assert "50 % of its 500 records lack a title or an abstract, outside what NT sees" in r.output.splitlines()[0]
    r = cli("correlate", "--index", idx, "--queries", beir / "queries.jsonl", "--qrels", beir / "qrels.tsv",
            "--topics", "40", "--bootstrap", "50", "--min-topics", "10", "--out", tmp_path / "c", "--quiet")
    assert r.exit_code == 0, r.output
    rep = json.loads((tmp_path / "c" / "report.json").read_text())
    human = rep["coverage"]["human_relevant"]
    assert human["relevant"] > 0 and human["without_abstract"] == human["relevant"] - human["in_nt"]
    figures = {c["figure"] for c in rep["caveats"]}
    assert "every NT figure: the collection" in figures
    html = (tmp_path / "c" / "report.html").read_text()
    assert "What the NT verdicts cover:" in html and "50 % of the collection is outside what NT sees" in html
    assert human["text"] in r.output
    if human["share_unseen"] > COVERAGE_CAVEAT:
        assert "every agreement figure: the human-relevant documents" in figures


@pytest.mark.parametrize("share", [0.5])
def test_title_blanked_records_show_the_caveat(tmp_path, share):
    beir = _copy(tmp_path, "blank_titles.py", share)
    idx = tmp_path / "idx"
    build_index([beir / "corpus.jsonl"], idx)
    r = cli("focused", "--index", idx, "--topics", "40", "--min-topics", "10", "--systems", "default",
            "--out", tmp_path / "f", "--quiet")
    assert r.exit_code == 0, r.output
    cov = json.loads((tmp_path / "f" / "results.json").read_text())["coverage"]
    assert cov["without_title"] == 250 and cov["without_abstract"] == 0 and cov["caveat"] and "CAVEAT: " in r.output
