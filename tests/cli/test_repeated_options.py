"""A single-valued option given twice is refused in one line (click would keep the last one
silently: `--baseline bm25 --baseline disjunctive_1` gated disjunctive_1), before anything is read
or written; options meant to repeat (`--candidate`, `--sref`, `--param`) still do."""
from __future__ import annotations

import json

import pytest
from conftest import FIRST200, FORTY_TOPICS, cli, one_line_error


@pytest.mark.parametrize("args, says", [
    (["gate", "--index", "I", "--pin", "P", "--out", "O", "--candidate", "qld_mu100",
      "--baseline", "bm25", "--baseline", "disjunctive_1"], "--baseline given twice ('bm25', 'disjunctive_1'): give it once"),
    (["compare", "--index", "I", "--task", "known-item", "--task", "topical", "--out", "O"],
     "--task given twice ('known-item', 'topical')"),
    (["focused", "--index", "I", "--topics", "20", "--topics=40", "--out", "O"], "--topics given twice ('20', '40')"),
    (["index", str(FIRST200), "--out", "O", "--out", "O2"], "--out given twice ('O', 'O2')"),
    (["index", str(FIRST200), "--out=O", "--quiet", "--out=O2", "--quiet", "--out", "O3"], "--out given 3 times"),
    (["index", str(FIRST200), "--out", "O", "--quiet", "--quiet"], "--quiet given twice: give it once"),
    (["evaluate", "--qrels", "Q", "-q", "--per-query", "R"], "-q and --per-query given together"),
    (["evaluate", "--qrels", "Q", "-q", "R", "-q"], "-q given twice"),
    (["--config", "a.yaml", "--config", "b.yaml", "manifest", "I"], "--config given twice ('a.yaml', 'b.yaml')"),
])
def test_a_repeated_option_is_one_line_and_nothing_is_written(tmp_path, monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)
    line = one_line_error(cli(*args), says)
    assert line.startswith("nteval: error: ") and line.endswith("--help)")
    assert list(tmp_path.iterdir()) == []  # refused before any work: no --out, no lock


def test_what_is_not_a_repeat(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # a value that looks like the option, `--` ending the options, and --help with a repeat
    line = one_line_error(cli("index", str(FIRST200), "--out", "--out", "--jobs", "1", "--jobs", "2"), "--jobs given twice")
    assert "--out" not in line.split(":")[0]
    one_line_error(cli("index", "--out", "x", "--", "--out"), "--out")  # (a source named --out: not found)
    r = cli("gate", "--baseline", "a", "--baseline", "b", "--help")
    assert r.exit_code == 0 and r.output.startswith("Usage: ") and " gate [OPTIONS]" in r.output


def test_options_meant_to_repeat_still_do(first200_index, tmp_path):
    """`--sref` twice on a real run: both reach the protocol (S_ref fuses them). (`gate --candidate`
    twice: tests/gate/test_gate.py.)"""
    out = tmp_path / "hr"
    r = cli("highrecall", "--index", first200_index, "--out", out, *FORTY_TOPICS, "--sref", "bm25", "--sref", "qld_mu1000",
            "--systems", "table1")
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert res["sref"]["name"] == "bm25+qld_mu1000" and set(res["sref"]["params"]) == {"bm25", "qld_mu1000"}
