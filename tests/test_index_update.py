"""`nteval index --update`: Medline update files applied in place to an existing index equal a
from-scratch build over the same files (real records, real Lucene)."""
from __future__ import annotations

import gzip
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIRST100, FIRST200

from nteval.cli import main
from nteval.corpus.store import DocStore
from nteval.index import build_index, read_manifest, update_index
from nteval.lucene.searcher import Index

_ARTICLE = re.compile(r"<PubmedArticle>.*?</PubmedArticle>", re.S)
_PMID = re.compile(r"<PMID Version=\"\d+\">(\d+)</PMID>")


def make_update(path: Path, base: Path) -> Path:
    """An NLM-style update file for ``base``: 4 revised records (new titles), one whose newest
    version lost its abstract, 2 DeleteCitations of present records and 1 of an absent one, and one
    new record."""
    text = gzip.open(base, "rt", encoding="utf-8").read()
    with_abstract = [a for a in _ARTICLE.findall(text) if "<Abstract>" in a]
    revised = [re.sub(r"<ArticleTitle>", "<ArticleTitle>Revised version: ", a, count=1) for a in with_abstract[:4]]
    lost = re.sub(r"<Abstract>.*?</Abstract>", "", with_abstract[4], flags=re.S)
    new = _PMID.sub('<PMID Version="1">99999001</PMID>', with_abstract[7], count=1)
    deleted = [_PMID.search(a)[1] for a in with_abstract[5:7]] + ["99999999"]
    path.write_text('<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>\n' + "\n".join([*revised, lost, new])
                    + "\n<DeleteCitation>\n" + "".join(f'<PMID Version="1">{p}</PMID>\n' for p in deleted)
                    + "</DeleteCitation>\n</PubmedArticleSet>\n", encoding="utf-8")
    return path


def _stable(m: dict) -> dict:
    """What must match between an updated index and a from-scratch one (paths and clocks aside)."""
    return {"counts": m["counts"], "per_source": [s["counts"] for s in m["sources"]],
            "sha256": [s["sha256"] for s in m["sources"]], "indexes": m["indexes"], "store": m["store"],
            "fingerprint": m["fingerprint"]}


def _rows(index_dir: Path) -> tuple[list, list]:
    store = DocStore(index_dir / "docs.sqlite")
    try:
        docs = store.db.execute("SELECT * FROM docs ORDER BY docid").fetchall()
        mesh = store.db.execute("SELECT * FROM mesh ORDER BY docid, heading, qualifier_ui, qualifier").fetchall()
        tables = {t for (t,) in store.db.execute("SELECT name FROM sqlite_master")}
    finally:
        store.close()
    return docs, mesh, tables


def assert_same_index(updated: Path, scratch: Path, n_queries: int = 100) -> None:
    assert _stable(read_manifest(updated)) == _stable(read_manifest(scratch))
    assert _rows(updated) == _rows(scratch)
    store = DocStore(scratch / "docs.sqlite")
    titles = [t for (t,) in store.db.execute("SELECT title FROM docs ORDER BY seq LIMIT ?", (n_queries,))]
    store.close()
    assert len(titles) == n_queries
    for name in ("all", "nt"):
        with Index(updated / name) as u, Index(scratch / name) as s:
            assert u.num_docs == u.max_doc == s.num_docs == s.max_doc  # no deleted document left
            for t in titles:
                assert u.search(t, 100) == s.search(t, 100), (name, t)


def test_update_equals_scratch_build(tmp_path):
    upd = make_update(tmp_path / "upd.xml", FIRST100)
    scratch = tmp_path / "scratch"
    build_index([FIRST100, FIRST200, upd], scratch)
    c = read_manifest(scratch)["counts"]
    assert c["deleted_removed"] == 2 and c["superseded_by_skipped"] == 1 and c["replaced"] >= 4  # the update bites

    idx = tmp_path / "idx"
    build_index([FIRST100], idx)
    r = CliRunner().invoke(main, ["index", "--update", str(idx), str(FIRST200), str(upd), "--quiet"])
    assert r.exit_code == 0, r.output + r.stderr
    assert_same_index(idx, scratch)
    m = read_manifest(idx)
    assert [Path(s["path"]).name for s in m["sources"]] == [FIRST100.name, FIRST200.name, upd.name]
    assert len(m["updates"]) == 1
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp dir left

    # one update file at a time gives the same index as both at once
    step = tmp_path / "step"
    build_index([FIRST100], step)
    update_index(step, [FIRST200])
    update_index(step, [upd])
    assert_same_index(step, scratch)
    assert len(read_manifest(step)["updates"]) == 2


def test_update_refusals_are_one_line_and_change_nothing(first200_index, tmp_path):
    before = read_manifest(first200_index)
    files = sorted(p.name for p in first200_index.rglob("*"))
    r = CliRunner().invoke(main, ["index", "--update", str(first200_index), str(FIRST200), "--quiet"])
    assert r.exit_code == 2 and "already in" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = CliRunner().invoke(main, ["index", "--update", str(tmp_path), str(FIRST100), "--quiet"])
    assert r.exit_code == 2 and "not an nteval index" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = CliRunner().invoke(main, ["index", "--update", str(first200_index), str(FIRST100), "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "not both" in r.stderr
    r = CliRunner().invoke(main, ["index", str(FIRST100)])
    assert r.exit_code == 2 and "--out" in r.stderr
    assert read_manifest(first200_index) == before
    assert sorted(p.name for p in first200_index.rglob("*")) == files


def test_failed_update_leaves_index_as_it_was(tmp_path):
    idx = tmp_path / "idx"
    build_index([FIRST100], idx)
    before = {p.relative_to(idx): p.read_bytes() for p in idx.rglob("*") if p.is_file()}
    bad = tmp_path / "broken.xml"
    bad.write_text("<PubmedArticleSet><PubmedArticle><MedlineCitation>")
    r = CliRunner().invoke(main, ["index", "--update", str(idx), str(FIRST200), str(bad), "--quiet"])
    assert r.exit_code == 2 and "broken.xml" in r.stderr, r.stderr
    after = {p.relative_to(idx): p.read_bytes() for p in idx.rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.shared
def test_update_equals_scratch_build_on_shared_files(tmp_path):
    from conftest import shared

    d = shared("medline", "pubmed_baseline_update")
    base, upd = d / "pubmed20n0014.xml.gz", d / "pubmed21n1298.xml.gz"
    scratch, idx = tmp_path / "scratch", tmp_path / "idx"
    t0 = time.perf_counter()
    build_index([base, upd], scratch)
    t1 = time.perf_counter()
    build_index([base], idx)
    t2 = time.perf_counter()
    update_index(idx, [upd])
    t3 = time.perf_counter()
    print(f"\nscratch build of both files {t1 - t0:.1f} s; baseline build {t2 - t1:.1f} s; --update {t3 - t2:.1f} s")
    assert read_manifest(idx)["counts"]["kept"] == 14832 + 18445 - read_manifest(idx)["counts"]["replaced"]
    assert_same_index(idx, scratch)
