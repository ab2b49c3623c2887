"""`nteval demo` (the README's first command) works on the bundled sample alone."""
from __future__ import annotations

import json

from click.testing import CliRunner

from nteval.cli import main
from nteval.demo import run_demo, sample_path


def test_bundled_sample_is_real_pubmed():
    import gzip

    head = gzip.open(sample_path()).read(400).decode()
    assert "<!DOCTYPE PubmedArticleSet" in head and "<PubmedArticleSet>" in head


def test_demo_runs_both_protocols(tmp_path, capsys):
    run_demo(tmp_path / "demo", n_topics=25, min_topics=10)
    out = capsys.readouterr().out
    assert "kept 1,997" in out and "nt/ (abstract only) 1,708" in out
    # the answer first: both verdicts in one line each, each verdict behind them, where they disagree, how to
    # choose; then every system's table (each verdict printed once)
    assert out.index("No task declared: both verdicts") < out.index("VERDICT (focused protocol") < \
        out.index("VERDICT (highrecall protocol") < out.index("where the verdicts disagree") < \
        out.index("How to choose") < out.index("focused protocol: 25 topics")
    assert out.count("VERDICT (focused protocol") == 1 and out.count("VERDICT (highrecall protocol") == 1
    assert "evidence — nteval's validation study" in out and (tmp_path / "demo" / "answer.json").is_file()
    assert "focused protocol: 25 topics" in out
    assert "highrecall protocol:" in out and "pseudo-relevant per topic" in out
    assert "Agreement of NT rankings with human judgments" in out and "Human-vs-human ceiling" in out
    assert "cells: 18 (9 per protocol) — 18 computed" in out and (tmp_path / "demo" / "grid" / "grid_compare.png").is_file()
    dense = json.loads((tmp_path / "demo" / "dense" / "results.json").read_text())
    assert {"bm25", "dense", "hybrid_rrf", "hybrid_linear"} <= set(dense["systems"]) and "document vectors: 1,708" in out
    # second run reuses the index and every run
    r = CliRunner().invoke(main, ["manifest", str(tmp_path / "demo" / "index")])
    assert r.exit_code == 0 and "pubmed21n1298_first2000.xml.gz" in r.output
