"""Runs that searched the titles are caught, not crowned: an outside BM25 (bm25s, its own
tokenizer) over title + abstract of the bundled PubMed sample is refused in one line under both
protocols and in a gate; the same engine over the abstracts only (the exported, title-stripped
collection) and nteval's own systems are accepted."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import TESTS, cli, one_line_error

bm25s = pytest.importorskip("bm25s")
sys.path.insert(0, str(TESTS.parent / "scripts"))


def _run_dir(index: Path, out: Path, where: Path, with_titles: bool) -> Path:
    """A --runs directory holding one bm25s run over the protocol's topics in ``out``."""
    from title_leak_study import bm25s_runs

    from nteval.formats.trec import format_run, read_topics

    topics = read_topics(out / "topics.tsv")
    name = "bm25s_title_and_abstract" if with_titles else "bm25s_abstract_only"
    run = bm25s_runs(index, topics)[name]
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{name}.run").write_text(format_run(run, "mine"), encoding="utf-8")
    return where


@pytest.mark.parametrize("protocol, topics", [("focused", 600), ("highrecall", 300)])
def test_a_run_that_saw_the_titles_is_refused(sample_index, tmp_path, protocol, topics):
    out = tmp_path / protocol
    args = (protocol, "--index", sample_index, "--topics", topics, "--systems", "default", "--quiet")
    r = cli(*args, "--out", out)
    assert r.exit_code == 0, r.output
    leaky = _run_dir(sample_index, out, tmp_path / "leaky", with_titles=True)
    line = one_line_error(cli(*args, "--out", out, "--runs", leaky), "system mine searched the titles",
                          "nteval export")
    assert ("low-overlap" in line or "half its words" in line) if protocol == "focused" else "only in the document's title" in line
    honest = _run_dir(sample_index, out, tmp_path / "honest", with_titles=False)
    r = cli(*args, "--out", out, "--runs", honest)
    assert r.exit_code == 0, r.output


def test_nteval_systems_are_never_flagged(sample_index, tmp_path):
    """Every system of the shipped default set, checked by the focused and high-recall rules."""
    from nteval.formats.trec import read_run, read_topics
    from nteval.leak import check_runs

    for protocol in ("focused", "highrecall"):
        out = tmp_path / protocol
        assert cli(protocol, "--index", sample_index, "--topics", 300, "--systems", "default", "--quiet",
                   "--out", out).exit_code == 0
        topics = read_topics(out / "topics.tsv")
        runs = {p.stem: read_run(p) for p in (out / "runs").glob("*.run")}
        sources = {q: q.rsplit("-s", 1)[0] for q in topics}
        checked = check_runs(sample_index, protocol, runs, topics, sources, list(runs))
        assert checked and not [n for n, r in checked.items() if r["flagged"]], checked


def test_a_gate_refuses_a_candidate_that_saw_the_titles(sample_index, tmp_path):
    pin = tmp_path / "pin"
    assert cli("pin", "--index", sample_index, "--topics", 600, "--out", pin, "--quiet").exit_code == 0
    leaky = _run_dir(sample_index, pin / "focused", tmp_path / "leaky", with_titles=True)
    one_line_error(cli("gate", "--index", sample_index, "--pin", pin, "--task", "known-item", "--baseline", "bm25",
                       "--candidate", leaky / "bm25s_title_and_abstract.run", "--out", tmp_path / "g", "--quiet"),
                   "system mine searched the titles")
