"""Every bad input: a one-line error naming the file (and place), exit status 2, nothing left behind."""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIRST100, FIRST200, SCIFACT300

from nteval.cli import main


def run_index(tmp_path: Path, *sources: Path):
    out = tmp_path / "out" / "idx"
    result = CliRunner().invoke(main, ["index", *map(str, sources), "--out", str(out), "--quiet"])
    return result, out


def assert_clean_failure(result, out: Path, must_contain: list[str]):
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("nteval: error: ")
    for s in must_contain:
        assert s in err, (s, err)
    assert not out.exists()
    leftovers = list(out.parent.glob(".*tmp*")) if out.parent.exists() else []
    assert leftovers == []


def test_truncated_gz(tmp_path):
    data = FIRST200.read_bytes()
    bad = tmp_path / "truncated.xml.gz"
    bad.write_bytes(data[: len(data) // 2])
    result, out = run_index(tmp_path, bad)
    assert_clean_failure(result, out, [str(bad), "truncated"])


def test_malformed_xml_names_the_line(tmp_path):
    text = gzip.open(FIRST100).read().decode()
    lines = text.split("\n")
    hit = [i for i, line in enumerate(lines) if "</ArticleTitle>" in line][4]
    lines[hit] = lines[hit].replace("</ArticleTitle>", "</ArticleTitl>")
    bad = tmp_path / "malformed.xml"
    bad.write_text("\n".join(lines))
    result, out = run_index(tmp_path, bad)
    assert_clean_failure(result, out, [str(bad), f"line {hit + 1}", "malformed XML"])


def test_empty_file(tmp_path):
    bad = tmp_path / "empty.xml"
    bad.write_bytes(b"")
    result, out = run_index(tmp_path, bad)
    assert_clean_failure(result, out, [str(bad), "empty"])


def test_non_medline_root(tmp_path):
    bad = tmp_path / "esearch.xml"
    bad.write_text('<?xml version="1.0"?>\n<eSearchResult><Count>0</Count></eSearchResult>\n')
    result, out = run_index(tmp_path, bad)
    assert_clean_failure(result, out, [str(bad), "not Medline XML", "<eSearchResult>"])


def test_directory_without_xml(tmp_path):
    d = tmp_path / "nothing_here"
    d.mkdir()
    (d / "notes.txt").write_text("no corpus")
    result, out = run_index(tmp_path, d)
    assert_clean_failure(result, out, [str(d), "no Medline XML"])


def test_missing_source(tmp_path):
    result, out = run_index(tmp_path, tmp_path / "nope.xml.gz")
    assert_clean_failure(result, out, ["nope.xml.gz", "no such file"])


def _beir_lines(n: int) -> list[str]:
    return gzip.open(SCIFACT300, "rt").read().splitlines()[:n]


def test_beir_line_not_json(tmp_path):
    bad = tmp_path / "corpus.jsonl"
    bad.write_text("\n".join(_beir_lines(3) + ['{"_id": "x", "title": "broken', *_beir_lines(2)]) + "\n")
    result, out = run_index(tmp_path, bad)
    assert_clean_failure(result, out, [str(bad), "line 4", "not a JSON object"])


def test_beir_line_without_id(tmp_path):
    bad = tmp_path / "corpus.jsonl"
    bad.write_text("\n".join(_beir_lines(2) + ['{"title": "t", "text": "x"}']) + "\n")
    result, out = run_index(tmp_path, bad)
    assert_clean_failure(result, out, [str(bad), "line 3", '"_id"'])


def test_good_file_then_bad_file_leaves_nothing(tmp_path):
    """The first source parses fine; the failure in the second must still leave no index."""
    data = FIRST200.read_bytes()
    bad = tmp_path / "truncated.xml.gz"
    bad.write_bytes(data[: len(data) // 3])
    result, out = run_index(tmp_path, FIRST100, bad)
    assert_clean_failure(result, out, [str(bad)])


def test_records_without_abstract_are_documents_or_counted(tmp_path):
    """A record without an abstract is a document (all finds it by its title) by default, and a
    counted skip under the paper's --documents title+abstract; never fatal."""
    from nteval.corpus.document import Document
    from nteval.corpus.medline import read_medline
    from nteval.index import parse_file

    raw = gzip.open(FIRST100).read().decode()
    articles = re.findall(r"<PubmedArticle>.*?</PubmedArticle>", raw, re.S)
    n_abs = sum("<AbstractText" in a for a in articles)
    docs = [r for r in read_medline(FIRST100) if isinstance(r, Document)]
    assert len([d for d in docs if not d.abstract]) == 100 - n_abs > 0 and all(d.title for d in docs)
    paper = parse_file(FIRST100, "title+abstract")
    assert sum(1 for op in paper if op[0] == "skip" and op[2] == "no_abstract") == 100 - n_abs


@pytest.mark.parametrize("name", ["corpus.csv", "records.txt"])
def test_unknown_format(tmp_path, name):
    bad = tmp_path / name
    bad.write_text("x")
    result, out = run_index(tmp_path, bad)
    assert_clean_failure(result, out, [str(bad), "unknown corpus format"])


@pytest.mark.parametrize("args, says", [
    (["index", "x.xml", "--out", "o", "--jobs", "0"], "Invalid value for '--jobs'"),
    (["focused", "--index", ".", "--topics", "abc", "--out", "o"], "'abc' is not a whole number or auto"),
    (["focused", "--out", "o"], "Missing option '--index'"),
    (["index"], "Missing argument 'SOURCES...'"),
    (["bogus"], "No such command 'bogus'"),
])
def test_a_bad_option_is_one_line(args, says):
    """Click's usage errors too: one line naming the option, exit 2, no usage block, no traceback."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "nteval.cli", *args], capture_output=True, text=True,
                       cwd=Path(__file__).parents[2])
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("nteval: error: ") and says in r.stderr


@pytest.mark.parametrize("var, value", [("NTEVAL_INDEX_BUFFER_MB", "lots"), ("NTEVAL_INDEX_HEAP_MB", "-5")])
def test_a_bad_number_in_the_environment_is_one_line(tmp_path, monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    result, out = run_index(tmp_path, FIRST100)
    assert_clean_failure(result, out, [var, "whole number", repr(value)])


@pytest.mark.parametrize("cmd", ["focused", "grid", "correlate"])
def test_a_bad_run_memory_budget_is_one_line(first200_index, tmp_path, monkeypatch, cmd):
    """Caught before anything is searched or written, for every command that computes runs."""
    monkeypatch.setenv("NTEVAL_RUN_MEMORY_HITS", "1e6")
    out = tmp_path / "f"
    args = {"focused": ["--topics", "20", "--min-topics", "10"],
            "grid": ["--param", "k1=0.5,1", "--topics", "3"],
            "correlate": ["--queries", str(tmp_path / "q.tsv"), "--qrels", str(tmp_path / "r.txt")]}[cmd]
    result = CliRunner().invoke(main, [cmd, "--index", str(first200_index), "--out", str(out), *args, "--quiet"])
    assert_clean_failure(result, out, ["NTEVAL_RUN_MEMORY_HITS", "whole number", "'1e6'"])


@pytest.mark.parametrize("cmd", ["correlate", "grid"])
def test_human_qrels_of_another_collection_are_refused(first200_index, tmp_path, cmd):
    """SciFact's judgments against a PubMed index: every human score would be 0 (and the rankings
    agree by ties); refused before anything is searched or written."""
    from nteval.demo import scifact_slice

    sl, out = scifact_slice(), tmp_path / "c"
    args = ["--param", "k1=0.5,1", "--topics", "3"] if cmd == "grid" else []
    result = CliRunner().invoke(main, [cmd, "--index", str(first200_index), "--queries", str(sl / "queries.jsonl"),
                                       "--qrels", str(sl / "qrels.tsv"), "--out", str(out), *args, "--quiet"])
    assert_clean_failure(result, out, ["qrels.tsv", "relevant judgments are on documents not in the index",
                                       "another collection"])


def test_human_qrels_mostly_in_the_index_pass(scifact_index):
    """The same check lets the collection's own judgments through, and counts what it refuses."""
    from nteval.corpus.store import require_judged_in_index
    from nteval.demo import scifact_slice
    from nteval.errors import InputError
    from nteval.formats.topics import load_judged_topics

    _topics, qrels = load_judged_topics(scifact_slice() / "queries.jsonl", scifact_slice() / "qrels.tsv")
    require_judged_in_index(scifact_index, qrels, "qrels.tsv")
    n = sum(1 for docs in qrels.values() for rel in docs.values() if rel > 0)
    half = {q: dict(docs) for q, docs in qrels.items()}
    added = 0
    for docs in half.values():  # as many judgments on foreign documents as on the collection's, plus one
        for d, rel in list(docs.items()):
            if rel > 0:
                docs[f"elsewhere-{d}"] = rel
                added += 1
    require_judged_in_index(scifact_index, half, "qrels.tsv")  # exactly half foreign: still accepted
    next(iter(half.values()))["elsewhere-extra"] = 1
    with pytest.raises(InputError, match=f"{n + 1:,} of its {2 * n + 1:,} relevant judgments"):
        require_judged_in_index(scifact_index, half, "qrels.tsv")
    assert added == n


@pytest.mark.parametrize("cmd", ["correlate", "run"])
def test_mesh_on_an_index_without_mesh_is_refused_first(scifact_index, tmp_path, cmd):
    """A BEIR corpus has no MeSH: said before focused or high-recall spend a minute."""
    from nteval.demo import scifact_slice

    sl, out = scifact_slice(), tmp_path / "c"
    args = (["--protocols", "focused,highrecall,mesh", "--queries", str(sl / "queries.jsonl"), "--qrels", str(sl / "qrels.tsv")]
            if cmd == "correlate" else ["--protocol", "mesh"])
    result = CliRunner().invoke(main, [cmd, "--index", str(scifact_index), *args, "--out", str(out), "--quiet"])
    assert_clean_failure(result, out, [str(scifact_index), "no document of this index has MeSH headings"])


def test_errors_that_say_the_fix(first200_index, tmp_path):
    """Item 17 (F13): --index naming a Lucene index inside an nteval index, or a source file, said
    only "not an nteval index directory"; --runs naming one run file was refused."""
    from conftest import cli, one_line_error, retag

    one_line_error(cli("focused", "--index", first200_index / "nt", "--topics", 20, "--out", tmp_path / "a"),
                   f"it is a part of the nteval index {first200_index}: give --index {first200_index}")
    one_line_error(cli("focused", "--index", FIRST200, "--topics", 20, "--out", tmp_path / "a"),
                   "it is a source file: index it first (nteval index", "--out my-index), then give --index my-index")
    assert not (tmp_path / "a").exists()
    assert not list(FIRST200.parent.glob(".*.lock"))  # no lock file left beside the user's source file
    out = tmp_path / "f"
    args = ("focused", "--index", first200_index, "--topics", 30, "--min-topics", 10, "--systems", "default", "--quiet")
    assert cli(*args, "--out", out).exit_code == 0
    mine = retag(out / "runs" / "bm25.run", tmp_path / "mine.run", "mine")
    r = cli(*args, "--out", out, "--runs", mine)
    assert r.exit_code == 0, r.output
    assert "mine" in (out / "results.tsv").read_text()
    one_line_error(cli(*args, "--out", out, "--runs", tmp_path / "nope.run"), "--runs: no such directory or run file")
