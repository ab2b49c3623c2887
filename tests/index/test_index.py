"""`nteval index` end to end on real records with real Lucene (no mocks)."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIRST100, FIRST200, MEDSAMP2006, SCIFACT300

from nteval.cli import main
from nteval.corpus.store import DocStore
from nteval.index import build_index, read_manifest
from nteval.lucene.searcher import Index


def title_only_terms(index_dir: Path, limit: int = 40) -> list[str]:
    """Title words whose analyzed term occurs in no abstract of the collection (df in nt == 0)."""
    store = DocStore(index_dir / "docs.sqlite")
    out: list[str] = []
    with Index(index_dir / "all") as all_, Index(index_dir / "nt") as nt:
        for _docid, title, _abstract in store.iter_texts():
            for word in re.findall(r"[A-Za-z]{4,}", title):
                terms = all_.analyze(word)
                if len(terms) == 1 and word not in out and nt.doc_freq(terms[0]) == 0 and all_.doc_freq(terms[0]) > 0:
                    out.append(word)
            if len(out) >= limit:
                break
    store.close()
    return out


def test_manifest_counts_and_sources(first200_index):
    m = read_manifest(first200_index)
    c = m["counts"]
    assert c["seen"] == 200
    assert c["deleted_pmids"] == 20 and len(c["deleted_ids"]) == 20
    # the whole collection: every record with a title or an abstract is in all, those with an abstract in nt
    assert c["kept"] == m["indexes"]["all"]["documents"] == 199 and c["skipped"]["no_text"] == 0
    assert m["indexes"]["nt"]["documents"] == c["kept"] - m["store"]["without_abstract"] == 178
    assert m["store"]["with_title_and_abstract"] == 178 and m["parameters"]["documents"] == "any-text"
    assert c["kept"] + sum(c["skipped"].values()) + c["replaced"] == 200
    assert m["sources"][0]["sha256"] and len(m["fingerprint"]) == 64
    assert m["versions"]["java"].startswith("21")


def test_both_indexes_open_and_nt_has_no_title_only_terms(first200_index):
    terms = title_only_terms(first200_index)
    assert len(terms) >= 10
    with Index(first200_index / "all") as all_, Index(first200_index / "nt") as nt:
        m = read_manifest(first200_index)
        assert (all_.num_docs, nt.num_docs) == (m["indexes"]["all"]["documents"], m["indexes"]["nt"]["documents"])
        for term in terms:
            assert nt.search(term, 10) == []
            assert all_.search(term, 10), term


def test_nt_documents_are_abstract_only(first200_index):
    store = DocStore(first200_index / "docs.sqlite")
    docid, title, abstract = next(store.iter_texts())
    with Index(first200_index / "nt") as nt, Index(first200_index / "all") as all_:
        assert json.loads(nt.raw(docid))["contents"] == abstract
        assert json.loads(all_.raw(docid))["contents"] == f"{title}\n{abstract}"
        # the title as a query ranks its own doc first over all (sanity of the setup)
        assert all_.search(title, 1)[0][0] == docid
    store.close()


def test_store_holds_sentences_and_metadata(first200_index):
    store = DocStore(first200_index / "docs.sqlite")
    d = store.get("10704411")
    assert d["meta"]["abstract_labels"] == ["BACKGROUND", "RESULTS", "CONCLUSIONS"]
    assert d["sentences"][0].startswith("Drugs of abuse have a common property")
    assert " ".join(d["sentences"]) == d["abstract"]
    store.close()


def test_refuses_to_overwrite_without_force(first200_index, tmp_path):
    r = CliRunner().invoke(main, ["index", str(FIRST100), "--out", str(first200_index), "--quiet"])
    assert r.exit_code == 2 and "already exists" in r.stderr
    assert read_manifest(first200_index)["counts"]["seen"] == 200  # untouched


def test_force_replaces_only_when_complete(tmp_path):
    out = tmp_path / "idx"
    build_index([FIRST100], out)
    bad = tmp_path / "t.xml.gz"
    bad.write_bytes(FIRST200.read_bytes()[:5000])
    r = CliRunner().invoke(main, ["index", str(bad), "--out", str(out), "--force", "--quiet"])
    assert r.exit_code == 2
    assert read_manifest(out)["counts"]["seen"] == 100  # the old index survives a failed --force
    r = CliRunner().invoke(main, ["index", str(MEDSAMP2006), "--out", str(out), "--force", "--quiet",
                                  "--documents", "title+abstract"])
    assert r.exit_code == 0, r.output
    assert read_manifest(out)["counts"]["kept"] == 54
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_replacement_and_deletion_semantics(tmp_path):
    """A later record with the same PMID replaces the earlier one; DeleteCitation removes PMIDs."""
    docs = [r for r in __import__("nteval.corpus.medline", fromlist=["x"]).read_medline(FIRST100) if hasattr(r, "title")]
    with_abstract = [d.docid for d in docs[3:] if d.abstract]
    victims = [d.docid for d in docs[:3]]
    deletion = tmp_path / "delete.xml"
    deletion.write_text("<?xml version='1.0'?>\n<PubmedArticleSet>\n<DeleteCitation>\n"
                        + "".join(f'<PMID Version="1">{p}</PMID>\n' for p in victims + ["1"])
                        + "</DeleteCitation>\n</PubmedArticleSet>\n")
    m = build_index([FIRST100, FIRST100, deletion], tmp_path / "idx")
    c = m["counts"]
    assert c["seen"] == 200 and c["replaced"] == len(docs)
    assert c["deleted_pmids"] == 4 and c["deleted_removed"] == 3
    assert c["kept"] == len(docs) - 3
    with Index(tmp_path / "idx" / "all") as all_, Index(tmp_path / "idx" / "nt") as nt:
        assert all_.num_docs == len(docs) - 3 and nt.num_docs == len(with_abstract)
        assert nt.raw(victims[0]) is None and all_.raw(victims[0]) is None
    store = DocStore(tmp_path / "idx" / "docs.sqlite")  # MeSH rows follow: one set per kept record
    rows = store.db.execute("SELECT COUNT(*) FROM mesh").fetchone()[0]
    assert rows == sum(len(h["qualifiers"]) + 1 for d in docs[3:] for h in d.meta.get("mesh", [])) > 0
    store.close()


def test_beir_corpus_indexes(tmp_path):
    m = build_index([SCIFACT300], tmp_path / "sf")
    assert m["counts"]["seen"] == 300 and m["sources"][0]["format"] == "beir", m["sources"]
    with Index(tmp_path / "sf" / "nt") as nt:
        assert nt.num_docs == m["counts"]["kept"] > 250


def test_interrupted_build_leaves_no_index(tmp_path):
    """SIGINT and SIGTERM in the middle of a real build: no index dir and no temp dir remain. Before
    the (only) source file is complete nothing is left; after it (Lucene's step), its checkpoint
    is kept in .OUT.partial for the same command to resume from, and stderr says so."""
    from nteval.demo import sample_path

    # "lucene": segment files of the builder's nt index, flushed once it has its last batch file
    phases = {"parse": "docs.sqlite", "lucene": ".collections/lucene/nt/*/_*"}
    for sig, phase in [(signal.SIGINT, "parse"), (signal.SIGTERM, "parse"), (signal.SIGINT, "lucene"), (signal.SIGTERM, "lucene")]:
        out = tmp_path / f"idx-{sig.name}-{phase}"
        p = subprocess.Popen([sys.executable, "-m", "nteval.cli", "index", str(sample_path()), "--out", str(out), "--quiet"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # not inherited ignored
        deadline = time.time() + 60
        while time.time() < deadline and p.poll() is None and not list(tmp_path.glob(f".{out.name}.partial/{phases[phase]}")):
            time.sleep(0.02)
        time.sleep(0.2 if phase == "parse" else 0.05)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        assert p.returncode != 0
        assert not out.exists()
        left = sorted(x.name for x in tmp_path.glob(f".{out.name}*"))
        if phase == "parse":
            assert left == []
        else:
            assert left == [f".{out.name}.partial"], left
            assert b"1 of 1 source file(s) done are kept in" in err, err


@pytest.mark.shared
def test_acceptance_two_pubmed_files(two_pubmed_files_index):
    out = two_pubmed_files_index   # (`nteval index` of both files: tests/conftest.py)
    m = read_manifest(out)
    assert [s["counts"]["seen"] for s in m["sources"]] == [30000, 20788]
    assert m["counts"]["deleted_pmids"] == 20
    # data README: 14,832 + 18,445 with title + abstract; 5 of them appear twice in the update file. Every
    # record with a title is a document of all (PubMed finds it by its title); nt holds those with an abstract
    assert m["store"]["with_title_and_abstract"] == 14832 + 18445 - 5
    assert m["indexes"]["all"]["documents"] == m["counts"]["kept"] > m["indexes"]["nt"]["documents"]
    terms = title_only_terms(out, limit=60)
    with Index(out / "nt") as nt, Index(out / "all") as all_:
        nt.configure("bm25")
        for term in terms:
            assert nt.search(term, 10) == [] and all_.search(term, 10)


def test_a_lucene_failure_is_one_line_and_the_same_command_resumes(tmp_path, monkeypatch, first200_index):
    """The builder JVM failing (here: a main class that does not exist) is not the input's fault:
    one line, exit 1, no traceback, and the parsed files are kept; the same command then resumes
    from them and gives the index a clean build gives."""
    from nteval.lucene import indexer

    real = indexer.builder_command
    monkeypatch.setattr(indexer, "builder_command", lambda: [*real()[:-2], "nteval.NoSuchClass", real()[-1]])
    out = tmp_path / "idx"
    r = CliRunner().invoke(main, ["index", str(FIRST200), "--out", str(out), "--quiet"])
    assert r.exit_code == 1, r.output
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("nteval: error: Lucene indexing into ") and "NoSuchClass" in lines[-1], lines
    assert "Traceback" not in r.stderr and "1 of 1 source file(s) done are kept" in r.stderr
    assert not out.exists() and (tmp_path / ".idx.partial").is_dir()
    monkeypatch.setattr(indexer, "builder_command", real)
    r = CliRunner().invoke(main, ["index", str(FIRST200), "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    assert "resuming the build" in r.stderr
    assert read_manifest(out)["counts"] == read_manifest(first200_index)["counts"]
    with Index(out / "nt") as a, Index(first200_index / "nt") as b:
        assert a.max_doc == b.max_doc and [a.search(t, 20) for t in ("cancer", "cell")] == [b.search(t, 20) for t in ("cancer", "cell")]


def _targets(tmp_path):
    return {"all": tmp_path / "all", "nt": tmp_path / "nt"}


@pytest.mark.parametrize("eager", [True, False])
def test_pipelined_indexer_both_modes_repair_replaced_and_deleted(tmp_path, eager):
    """Eager (a builder JVM per batch, used on ≥ 4 cores) and streaming (one builder takes every
    batch) modes give the same indexes: replaced ids carry their final text, deleted ids are gone,
    stats are exact, ``all`` holds title + newline + abstract."""
    from nteval.lucene.indexer import PipelinedIndexer

    p = PipelinedIndexer(_targets(tmp_path), tmp_path / "staging", eager=eager)
    p.start()
    p.add_batch([("a", "Alpha", "alpha beta"), ("b", "Beta", "beta gamma"), ("c", "Gamma", "gamma delta")])
    p.add_batch([("d", "Delta", "delta epsilon")])
    p.seal()
    p.finish(["a", "c"], [("a", "Omega", "alpha omega")])  # a replaced, c deleted
    with Index(tmp_path / "nt") as ix, Index(tmp_path / "all") as all_:
        assert ix.num_docs == ix.max_doc == all_.num_docs == all_.max_doc == 3
        assert json.loads(ix.raw("a"))["contents"] == "alpha omega"
        assert json.loads(all_.raw("a"))["contents"] == "Omega\nalpha omega"
        assert ix.raw("c") is None and ix.doc_freq("gamma") == 1 and all_.doc_freq("gamma") == 1
        assert ix.doc_freq("omega") == 1 and all_.doc_freq("omega") == 1  # (title + abstract: one document)
    assert not (tmp_path / "staging").exists()


@pytest.mark.parametrize("eager", [True, False])
def test_pipelined_indexer_resumes_from_a_batch_count(tmp_path, eager):
    """A killed run's batches up to the checkpoint are kept (eager: their finished shards too), the
    ones after it dropped; a batch file missing means nothing to resume from."""
    from nteval.lucene.indexer import PipelinedIndexer

    first = PipelinedIndexer(_targets(tmp_path), tmp_path / "staging", eager=eager)
    first.add_batch([("a", "A", "alpha beta"), ("b", "B", "beta gamma")])
    first.add_batch([("c", "C", "gamma delta")])  # written after the checkpoint: dropped
    if eager:
        first._wait()
    first.close(cleanup=False)  # as a killed build leaves it
    (tmp_path / "nt").mkdir()  # a half-made target
    again = PipelinedIndexer(_targets(tmp_path), tmp_path / "staging", eager=eager)
    assert not again.resume(3)
    assert again.resume(1)
    again.add_batch([("d", "D", "delta epsilon")])
    again.finish([], [])
    with Index(tmp_path / "nt") as ix:
        assert ix.num_docs == 3 and ix.raw("c") is None and json.loads(ix.raw("d"))["contents"] == "delta epsilon"


def test_closing_after_an_error_leaves_no_builder_running(tmp_path):
    """Eager builders on pool threads: close() after an error (or Ctrl-C) kills them and starts no
    new one for batches still queued; every builder JVM has ended when it returns."""
    from nteval.lucene.indexer import PipelinedIndexer

    p = PipelinedIndexer(_targets(tmp_path), tmp_path / "staging", workers=4, eager=True)
    for i in range(4):
        p.add_batch([(f"d{i}", "Title", "alpha beta gamma")])
    p.close(cleanup=False)
    assert all(b.proc.returncode is not None for b in p._builders)


def test_child_memory_caps_reach_the_builder_and_change_no_result(first200_index, tmp_path, monkeypatch):
    """The builder JVM runs with a capped heap and Lucene RAM buffer, set through the environment. A
    build with a 1 MB buffer (many flushes and merges) and the smallest heap gives the same
    documents, order and scores as the default build (the values reach Java: a bad one fails it)."""
    from nteval.lucene import indexer

    monkeypatch.setenv("NTEVAL_INDEX_BUFFER_MB", "1")
    monkeypatch.setenv("NTEVAL_INDEX_HEAP_MB", "258")
    assert indexer.child_memory() == (1, 258)
    cmd = indexer.builder_command()
    assert "-Xmx258m" in cmd and cmd[-2:] == ["nteval.BuildIndexes", "1"]
    build_index([FIRST200], tmp_path / "small-buffer")
    store = DocStore(first200_index / "docs.sqlite")
    titles = [t for _, t, _ in list(store.iter_texts())[:40]]
    store.close()
    for name in ("all", "nt"):
        with Index(first200_index / name) as a, Index(tmp_path / "small-buffer" / name) as b:
            assert a.max_doc == b.max_doc
            assert [a.search(t, 100) for t in titles] == [b.search(t, 100) for t in titles]
    monkeypatch.setenv("NTEVAL_INDEX_HEAP_MB", "100")
    assert indexer.child_memory() == (1, 258)  # the heap always holds both buffers


def test_versions_read_without_a_jvm_equal_the_jvms():
    """The manifest's java and lucene versions are read from the runtime's release file and the
    jar (a build then starts no JVM in nteval's process); they must be what the JVM reports."""
    from nteval.lucene import jvm

    offline = jvm._versions_without_jvm(jvm.anserini_jar())
    assert offline is not None and offline == jvm._versions_from_jvm()


def test_zip_member_reads_what_zipfile_reads(tmp_path):
    """The jar member read by a search of the central directory is ``zipfile``'s, for stored and
    deflated members, names that are the tail of longer ones, a zip64 archive and a comment; a
    missing member is a KeyError as in ``zipfile``."""
    import random
    import zipfile

    from nteval.lucene import jvm

    jar = jvm.anserini_jar()
    with zipfile.ZipFile(jar) as z:
        names = random.Random(0).sample(z.namelist(), 200) + ["org/apache/lucene/util/Version.class"]
        for name in names:
            assert jvm.zip_member(jar, name) == z.read(name), name
    made = tmp_path / "made.zip"
    members = {"a/Version.class": b"x" * 5000, "Version.class": b"stored bytes", "b/c.txt": b"deflated " * 300}
    with zipfile.ZipFile(made, "w") as z:
        z.writestr(zipfile.ZipInfo("a/Version.class"), members["a/Version.class"], compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("Version.class", members["Version.class"], compress_type=zipfile.ZIP_STORED)
        z.writestr("b/c.txt", members["b/c.txt"], compress_type=zipfile.ZIP_DEFLATED)
        z.comment = b"a comment after the end record"
    for name, data in members.items():
        assert jvm.zip_member(made, name) == data
    with pytest.raises(KeyError):
        jvm.zip_member(made, "c.txt")
    dup = tmp_path / "dup.zip"  # a name twice: zipfile reads the last entry
    with zipfile.ZipFile(dup, "w") as z:
        z.writestr("V", b"first")
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (zipfile warns of the duplicate name)
            z.writestr("V", b"second", compress_type=zipfile.ZIP_DEFLATED)
    assert jvm.zip_member(dup, "V") == b"second"
    stub = tmp_path / "stub.zip"  # bytes before the archive (a self-extractor), or two zips joined
    stub.write_bytes(b"#!/bin/sh\n" + made.read_bytes())
    joined = tmp_path / "joined.zip"
    joined.write_bytes(dup.read_bytes() + dup.read_bytes().replace(b"second", b"secon2"))
    for path in (stub, joined):
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                assert jvm.zip_member(path, name) == z.read(name)
    cp437 = tmp_path / "cp437.zip"  # a non-ASCII name without the UTF-8 flag: zipfile reads it as cp437
    info = zipfile.ZipInfo("\u00e9")
    with zipfile.ZipFile(cp437, "w") as z:
        z.writestr(info, b"data")
    raw = cp437.read_bytes().replace(b"\x00\x08", b"\x00\x00")  # clear the flag (bit 11) everywhere
    cp437.write_bytes(raw)
    with zipfile.ZipFile(cp437) as z:
        assert z.namelist() == ["\u251c\u2310"]
    with pytest.raises(KeyError):
        jvm.zip_member(cp437, "\u00e9")
    big = tmp_path / "zip64.zip"
    with zipfile.ZipFile(big, "w", allowZip64=True) as z:
        with z.open("m.txt", "w", force_zip64=True) as fh:
            fh.write(b"zip64 member")
    assert jvm.zip_member(big, "m.txt") == b"zip64 member"


def test_the_parse_bar_counts_records_not_files(tmp_path, capsys):
    """Item 16 (F12): `index` sat at `parse: 0/2 file` for 21 s; the bar counts records read (the
    parses report them as they go, from worker processes too) and says how many files are done."""
    from nteval.demo import sample_path

    build_index([sample_path(), FIRST200], tmp_path / "i", progress=True, jobs=2)
    err = capsys.readouterr().err.replace("\r", "\n")
    parse = [line for line in err.splitlines() if line.startswith("parse:")]
    assert any("record" in line and "2/2 files" in line for line in parse), parse[-3:]
    assert any(re.search(r"parse: 2\.[0-9]+k record", line) for line in parse), parse[-3:]
