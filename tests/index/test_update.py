"""`nteval index --update`: Medline update files applied in place to an existing index equal a
from-scratch build over the same files (real records, real Lucene)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIRST100, FIRST200
from index_compare import assert_same_index, make_update

from nteval.cli import main
from nteval.index import build_index, read_manifest, update_index


@pytest.mark.parametrize("documents", ["any-text", "title+abstract"])
def test_update_equals_scratch_build(tmp_path, documents):
    upd = make_update(tmp_path / "upd.xml", FIRST100)
    scratch = tmp_path / "scratch"
    build_index([FIRST100, FIRST200, upd], scratch, documents=documents)
    c = read_manifest(scratch)["counts"]
    assert c["deleted_removed"] == 2 and c["replaced"] >= 4  # the update bites
    # the record whose newest version lost its abstract: still a document (found by its title), or
    # under the paper's policy a skip that removes the older version
    assert c["superseded_by_skipped"] == (0 if documents == "any-text" else 1)

    idx = tmp_path / "idx"
    build_index([FIRST100], idx, documents=documents)
    r = CliRunner().invoke(main, ["index", "--update", str(idx), str(FIRST200), str(upd), "--quiet"])
    assert r.exit_code == 0, r.output + r.stderr
    assert_same_index(idx, scratch)
    m = read_manifest(idx)
    assert [Path(s["path"]).name for s in m["sources"]] == [FIRST100.name, FIRST200.name, upd.name]
    assert len(m["updates"]) == 1
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp dir left

    # one update file at a time gives the same index as both at once
    step = tmp_path / "step"
    build_index([FIRST100], step, documents=documents)
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
def test_update_equals_scratch_build_on_shared_files(two_pubmed_files_index, tmp_path):
    """The baseline file indexed, then the update file added by ``--update``: the index a build of
    both files from scratch gives (the session's, tests/conftest.py)."""
    from conftest import shared

    d = shared("medline", "pubmed_baseline_update")
    base, upd = d / "pubmed20n0014.xml.gz", d / "pubmed21n1298.xml.gz"
    scratch, idx = two_pubmed_files_index, tmp_path / "idx"
    t1 = time.perf_counter()
    build_index([base], idx)
    t2 = time.perf_counter()
    update_index(idx, [upd])
    t3 = time.perf_counter()
    print(f"\nbaseline build {t2 - t1:.1f} s; --update {t3 - t2:.1f} s")
    m = read_manifest(idx)
    # data README: 14,832 + 18,445 records with title + abstract; the others with a title are documents too
    assert m["store"]["with_title_and_abstract"] == 14832 + 18445 - 5 and m["counts"]["kept"] > 50000
    assert_same_index(idx, scratch)


def test_an_update_encodes_only_new_or_changed_records(tmp_path, monkeypatch):
    """Issue 49 item 5: the dense vectors of an index are carried through ``--update``; the next
    encoding takes every document whose text did not change from them and encodes the others, and
    its vectors are those of an encoding from scratch. The carried cache then goes (no index of its
    fingerprint is left there)."""
    import numpy as np

    from nteval.encoders import models, store

    monkeypatch.delenv("NTEVAL_DENSE_CACHE", raising=False)   # the cache inside the index, as by default
    store._VECTORS.clear()
    upd = make_update(tmp_path / "upd.xml", FIRST100)
    enc = models.load_encoder("wordllama", 0)

    def vectors(idx: Path) -> store.Vectors:
        store._VECTORS.clear()
        return store.document_vectors(idx, "all", read_manifest(idx)["fingerprint"], enc, progress=False)

    idx = tmp_path / "idx"
    build_index([FIRST100], idx)
    before = vectors(idx)
    assert before.meta["encoded_this_time"] == len(before.docids) and before.meta["reused"] == 0
    texts = dict(store.index_texts(idx, "all"))
    update_index(idx, [FIRST200, upd])
    after = vectors(idx)
    unchanged = sum(1 for d, t in store.index_texts(idx, "all") if texts.get(d) == t)
    assert 0 < after.meta["reused"] == unchanged < len(before.docids) < len(after.docids)
    assert after.meta["encoded_this_time"] == len(after.docids) - after.meta["reused"]
    assert after.meta["reused_from"] == before.dir.name and not before.dir.exists()
    scratch = tmp_path / "scratch"
    build_index([FIRST100, FIRST200, upd], scratch)
    fresh = vectors(scratch)
    assert fresh.docids == after.docids
    assert np.allclose(fresh.matrix, after.matrix, atol=1e-6)


def test_the_pooled_references_store_is_nteval_s_and_is_carried(tmp_path):
    """The pooled reference's per-document store (``dense/pool-all-….sqlite``) is a cache nteval
    wrote: ``--update`` and ``--force`` do not refuse it as a user's file, and the update carries it."""
    import sqlite3

    from nteval.index.manifest import foreign_entries

    idx = tmp_path / "idx"
    build_index([FIRST100], idx)
    (idx / "dense").mkdir()
    store = idx / "dense" / "pool-all-minilm-all-MiniLM-L6-v2-0123456789ab-nteval0.1.0.sqlite"
    sqlite3.connect(store).execute("CREATE TABLE vec (docid TEXT PRIMARY KEY, sha TEXT, v BLOB)").connection.commit()
    (idx / "dense" / "notes.txt").write_text("mine")
    assert foreign_entries(idx) == ["dense/notes.txt"]
    (idx / "dense" / "notes.txt").unlink()
    update_index(idx, [FIRST200])
    assert (idx / "dense" / store.name).is_file()
