"""The user's whole collection is searched: every record with a title or an abstract is a document
(``all``: title + abstract; ``nt``: the records with an abstract); only topics need both. The
paper's collection stays reachable (``--documents title+abstract``), and when judged documents are
missing, correlate says why."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DATA, FIRST200, shared

from nteval.cli import main
from nteval.corpus.store import DocStore, known_docids, require_judged_in_index
from nteval.errors import InputError
from nteval.index import build_index, read_manifest
from nteval.lucene.searcher import Index

ROOT = Path(__file__).resolve().parents[2]
CISI100 = DATA / "cisi" / "corpus_first100.jsonl"


def _blank(src_dir: Path, out: Path, share: float = 0.7) -> Path:
    """scripts/blank_titles.py on a BEIR directory made of ``src_dir``'s corpus (queries/qrels copied)."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "blank_titles.py"), str(src_dir), str(out), "--share",
                        str(share), "--seed", "1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def cisi_blank(tmp_path_factory) -> Path:
    beir = tmp_path_factory.mktemp("cisi")
    (beir / "corpus.jsonl").write_bytes(CISI100.read_bytes())
    (beir / "queries.jsonl").write_text('{"_id": "1", "text": "x"}\n')
    (beir / "qrels").mkdir()
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n")
    return _blank(beir, tmp_path_factory.mktemp("blank") / "beir")


def test_blank_titles_script_is_seeded(cisi_blank, tmp_path):
    docs = [json.loads(line) for line in (cisi_blank / "corpus.jsonl").read_text().splitlines()]
    assert len(docs) == 100 and sum(1 for d in docs if not d["title"]) == 70 and all(d["text"] for d in docs)
    src = tmp_path / "src"  # the same corpus and seed again: the same bytes
    src.mkdir()
    (src / "corpus.jsonl").write_bytes(CISI100.read_bytes())
    (src / "queries.jsonl").write_text("")
    (src / "qrels").mkdir()
    assert _blank(src, tmp_path / "x").joinpath("corpus.jsonl").read_bytes() == (cisi_blank / "corpus.jsonl").read_bytes()


def test_documents_without_a_title_are_searched_but_never_topics(cisi_blank, tmp_path):
    m = build_index([cisi_blank / "corpus.jsonl"], tmp_path / "idx")
    assert m["indexes"]["all"]["documents"] == m["indexes"]["nt"]["documents"] == 100
    assert m["store"]["without_title"] == 70 and m["store"]["with_title_and_abstract"] == 30
    assert m["counts"]["skipped"]["no_title"] == 0 and m["parameters"]["documents"] == "any-text"
    r = CliRunner().invoke(main, ["focused", "--index", str(tmp_path / "idx"), "--topics", "100", "--min-topics", "5",
                                  "--systems", "default", "--out", str(tmp_path / "f"), "--quiet"])
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "f" / "results.json").read_text())
    titled = {json.loads(line)["_id"] for line in (cisi_blank / "corpus.jsonl").read_text().splitlines()
              if json.loads(line)["title"]}
    topics = {line.split("\t")[0] for line in (tmp_path / "f" / "topics.tsv").read_text().splitlines()}
    assert topics and topics <= titled  # only titled documents can be topics ...
    assert res["collection"] == {"all": 100, "nt": 100, "searched": "nt", "documents_policy": "any-text",
                                 "with_title_and_abstract": 30, "without_title": 70, "without_abstract": 0,
                                 "skipped_without_title_or_abstract": 0}
    run = (tmp_path / "f" / "runs" / "bm25.run").read_text().split()
    assert set(run[2::6]) - titled  # ... but the systems search (and find) the untitled ones too


def test_paper_policy_keeps_only_title_and_abstract_and_correlate_names_the_cause(cisi_blank, tmp_path):
    m = build_index([cisi_blank / "corpus.jsonl"], tmp_path / "paper", documents="title+abstract")
    assert m["indexes"]["all"]["documents"] == 30 and m["counts"]["skipped"]["no_title"] == 70
    untitled = [json.loads(line)["_id"] for line in (cisi_blank / "corpus.jsonl").read_text().splitlines()
                if not json.loads(line)["title"]]
    qrels = {"q1": {d: 1 for d in untitled[:10]}}  # (test-made judgments of documents without a title)
    with pytest.raises(InputError) as err:
        require_judged_in_index(tmp_path / "paper", qrels, "qrels.tsv")
    msg = str(err.value)
    assert "10 of its 10 relevant judgments" in msg and "records without a title" in msg
    assert "--documents title+abstract" in msg and "rebuild it with nteval index --force" in msg
    # ids in none of the sources: another collection
    with pytest.raises(InputError, match="in none of its sources .e.g. 'nope-0'.: qrels for another collection"):
        require_judged_in_index(tmp_path / "paper", {"q": {f"nope-{i}": 1 for i in range(5)}}, "qrels.tsv")
    # the whole-collection index judges them fine
    build_index([cisi_blank / "corpus.jsonl"], tmp_path / "full")
    require_judged_in_index(tmp_path / "full", qrels, "qrels.tsv")


def test_medline_records_without_abstract_are_found_by_their_titles(first200_index):
    store = DocStore(first200_index / "docs.sqlite")
    try:
        titled_only = [(d, t) for d, t in store.db.execute("SELECT docid, title FROM docs WHERE abstract = '' LIMIT 10")]
    finally:
        store.close()
    assert len(titled_only) == 10
    assert known_docids(first200_index, [d for d, _ in titled_only], "nt") == set()
    assert known_docids(first200_index, [d for d, _ in titled_only], "all") == {d for d, _ in titled_only}
    with Index(first200_index / "all") as all_, Index(first200_index / "nt") as nt:
        found = sum(1 for d, t in titled_only if d in [h[0] for h in all_.search(t, 3)])
        assert found >= 8  # a title search finds its own record (PubMed's behaviour)
        assert all(nt.raw(d) is None for d, _ in titled_only)


def test_an_update_keeps_the_policy_the_index_was_built_with(tmp_path):
    build_index([FIRST200], tmp_path / "p", documents="title+abstract")
    r = CliRunner().invoke(main, ["index", "--update", str(tmp_path / "p"), str(DATA / "medline" / "medsamp2006.xml"),
                                  "--quiet"])
    assert r.exit_code == 0, r.output
    m = read_manifest(tmp_path / "p")
    assert m["parameters"]["documents"] == "title+abstract" and m["indexes"]["all"]["documents"] == m["indexes"]["nt"]["documents"]
    r = CliRunner().invoke(main, ["index", "--update", str(tmp_path / "p"), str(FIRST200), "--documents",
                                  "title+abstract"])
    assert r.exit_code == 2 and "--documents does not go with --update" in r.output


@pytest.mark.shared
def test_cisi_with_70_percent_titles_blanked_keeps_every_document(tmp_path):
    """Issue 26's reproduction: before, 1,021 of 1,460 documents were missing from both indexes and
    correlate refused CISI's qrels."""
    beir = _blank(shared("cisi", "beir"), tmp_path / "cisi70")
    m = build_index([beir / "corpus.jsonl"], tmp_path / "idx")
    assert m["indexes"]["all"]["documents"] == m["indexes"]["nt"]["documents"] == 1460
    from nteval.formats.topics import load_qrels

    qrels = load_qrels(beir / "qrels" / "test.tsv")
    require_judged_in_index(tmp_path / "idx", qrels, "test.tsv")  # accepted: every judged document is there
    build_index([beir / "corpus.jsonl"], tmp_path / "paper", documents="title+abstract")
    with pytest.raises(InputError, match=r"2,269 of its 3,114 relevant judgments .* records without a title"):
        require_judged_in_index(tmp_path / "paper", qrels, "test.tsv")


def test_an_abstract_of_control_characters_is_a_record_without_an_abstract(tmp_path):
    """G7: records whose abstract (or title) is only control characters (``"\\u0000"``, ``"\\u0001
    \\u0001"``), which Lucene's indexer strips as blank, are counted as records without an abstract
    (or without a title, or skipped when nothing is left), as the other empty ones are; one of them
    no longer fails the whole build ("the nt index being built holds 79 documents but the
    document store 80")."""
    corpus = tmp_path / "corpus.jsonl"
    lines = (DATA / "cf" / "corpus_first80.jsonl").read_text().splitlines()
    extra = [{"_id": "nul1", "title": "A study of mucus", "text": "\u0000"},
             {"_id": "soh2", "title": "Sweat chloride in infants", "text": "\u0001 \u0001"},
             {"_id": "blank3", "title": "\u0002", "text": "Pancreatic insufficiency in cystic fibrosis patients."},
             {"_id": "none4", "title": "\u0000", "text": "\u0003"}]
    corpus.write_text("\n".join(lines + [json.dumps(e) for e in extra]) + "\n")
    for documents, nt in (("any-text", 81), ("title+abstract", 80)):
        r = CliRunner().invoke(main, ["index", str(corpus), "--out", str(tmp_path / documents), "--documents", documents,
                                      "--quiet"])
        assert r.exit_code == 0, r.output
        m = read_manifest(tmp_path / documents)
        assert m["indexes"]["nt"]["documents"] == nt, (documents, m["indexes"])
        if documents == "any-text":
            assert m["indexes"]["all"]["documents"] == 83 and m["store"]["without_abstract"] == 2
            assert m["store"]["without_title"] == 1 and m["counts"]["skipped"]["no_text"] == 1
            assert known_docids(tmp_path / documents, ["nul1", "soh2", "blank3", "none4"], "nt") == {"blank3"}
        else:
            assert m["counts"]["skipped"]["no_abstract"] == 2 and m["counts"]["skipped"]["no_title"] == 1
