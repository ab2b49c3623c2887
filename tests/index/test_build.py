"""nteval's two-index builder (``nteval.BuildIndexes``) writes exactly what Anserini's IndexCollection
writes for the same documents: compared by ``nteval.IndexDiff`` (documents in order, stored fields,
id doc values, field settings, norms, postings with positions, term vectors), on real PubMed
records and on texts chosen to break a shared analysis (titles of stopwords only, a possessive at
the join, blank abstracts, tokens past Lucene's length limit, non-BMP characters)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from nteval.lucene import indexer, jvm

#: (docid, title, abstract) rows a title + abstract join could get wrong.
EDGE_ROWS = [
    ("e1", "The", "of the results and the methods"),              # title of stopwords only; abstract too
    ("e2", "Effects of insulin on the", "the patients were treated"),  # stopwords on both sides of the join
    ("e3", "Crohn's", "'s disease in children's hospitals"),       # possessives at the join
    ("e4", "A title", "   "),                                       # blank abstract: nt skips it, all keeps it
    ("e5", "   ", "an abstract whose title is blank"),
    ("e6", "", ""),                                                 # blank both: skipped by both
    ("e7", "x" * 300, "y" * 600 + " tail"),                         # tokens longer than 255 characters
    ("e8", "Über β-Blocker — 20 µg/kg 😀", "中文摘要 😀 naïve café 𝔘𝔫𝔦𝔠𝔬𝔡𝔢"),  # non-ASCII, astral planes
    ("e9", "Line one\nline two", "tabs\tand\r\nnewlines\u2028inside"),  # separators inside texts
    ("e10", "Title.", "\u0301combining mark first, then 3.5 mg and e-mail@x.org"),
    ("e11", "IL-2 and TNF-α", "IL-2 and TNF-α; the the the"),
]


def _java() -> list[str]:
    return [str(Path(jvm.java_home()) / "bin" / "java"), "-cp", f"{jvm.batch_jar()}{os.pathsep}{jvm.anserini_jar()}"]


def index_diff(a: Path, b: Path) -> list[str]:
    """IndexDiff's findings (empty: the indexes hold the same thing)."""
    r = subprocess.run([*_java(), "nteval.IndexDiff", str(a), str(b)], capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    found = r.stdout.splitlines()
    assert (r.returncode == 1) == bool(found)
    return found


def _rows() -> list[tuple[str, str, str]]:
    from nteval.demo import sample_path
    from nteval.index import parse_file

    # real records with both fields (EDGE_ROWS hold the blank ones, at known places)
    real = [(op[1][0], op[1][1], op[1][2]) for op in parse_file(sample_path(), "title+abstract") if op[0] == "put"]
    assert len(real) > 1500
    return real[:600] + EDGE_ROWS + real[600:]


def _build_both(rows, tmp_path: Path, reference_rows=None) -> tuple[Path, Path]:
    """nteval's builder on ``rows`` and IndexCollection on the same documents as JsonCollections
    (``reference_rows`` instead, if given); returns the two index folders (each with all/ and nt/)."""
    batch = tmp_path / "batch.jsonl"
    with open(batch, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(list(row), ensure_ascii=False) + "\n")
    ours, ref = tmp_path / "ours", tmp_path / "ref"
    command = json.dumps([str(ours / "all"), str(ours / "nt"), str(batch)])
    builder = subprocess.run(indexer.builder_command(), input=command + "\n", text=True, capture_output=True)
    assert builder.returncode == 0, builder.stderr[-2000:]
    for name in indexer.NAMES:
        coll = tmp_path / "json" / name
        coll.mkdir(parents=True)
        with open(coll / "docs.jsonl", "w", encoding="utf-8") as fh:
            for docid, title, abstract in reference_rows or rows:
                contents = f"{title}\n{abstract}" if name == "all" else abstract
                fh.write(json.dumps({"id": docid, "contents": contents}, ensure_ascii=False) + "\n")
        done = subprocess.run(indexer.index_collection_command(coll, ref / name), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
    return ours, ref


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> tuple[Path, Path]:
    return _build_both(_rows(), tmp_path_factory.mktemp("build"))


@pytest.mark.parametrize("name", indexer.NAMES)
def test_builder_writes_what_index_collection_writes(both, name):
    ours, ref = both
    assert index_diff(ours / name, ref / name) == []


def test_the_edge_rows_are_in_both_indexes_as_index_collection_keeps_them(both):
    """Blank contents are skipped (as DefaultLuceneDocumentGenerator skips them), per index."""
    from nteval.lucene.searcher import Index

    ours, _ = both
    with Index(ours / "all") as all_, Index(ours / "nt") as nt:
        assert all_.raw("e4") is not None and nt.raw("e4") is None   # blank abstract
        assert all_.raw("e6") is None and nt.raw("e6") is None       # blank both
        assert json.loads(all_.raw("e3"))["contents"] == "Crohn's\n's disease in children's hospitals"
        assert all_.num_docs == nt.num_docs + 1


def test_index_diff_finds_a_changed_document(tmp_path):
    """The comparison can fail: one word of one abstract changed in the reference's input, and the
    all/nt indexes compared with each other, are reported."""
    rows = _rows()[:300]
    changed = [(d, t, a.replace(" the ", " a ", 1) if i == 150 else a) for i, (d, t, a) in enumerate(rows)]
    assert changed != rows
    ours, ref = _build_both(rows, tmp_path, reference_rows=changed)
    found = index_diff(ours / "nt", ref / "nt")
    assert found and any("doc 150" in f for f in found), found
    assert index_diff(ours / "all", ours / "nt")


def test_a_builder_serves_shard_after_shard_and_says_why_it_failed(tmp_path):
    """One builder JVM commits one shard pair, then takes the next; a Java failure reaches Python as
    a LuceneError whose message is the builder's own last word (not a stack trace), and the shard
    being written is not put in place."""
    batch = tmp_path / "b.jsonl"
    batch.write_text('["1", "Insulin", "insulin resistance in mice"]\n', encoding="utf-8")
    builder = indexer._Builder()
    first = {name: tmp_path / name / "00000" for name in indexer.NAMES}
    builder.open(first)
    builder.feed(batch)
    builder.commit()
    assert all((p / "segments_1").is_file() for p in first.values())
    second = {name: tmp_path / name / "00001" for name in indexer.NAMES}
    builder.open(second)
    builder.feed(tmp_path / "no-such-batch.jsonl")
    with pytest.raises(indexer.LuceneError, match=r"failed \(exit 1\): .*NoSuchFileException.*no-such-batch"):
        builder.commit()
    assert not any(p.exists() for p in second.values())
    builder.stop()


def test_a_killed_builder_is_named_as_such(tmp_path):
    """Killed from outside (the kernel's OOM killer does this), the message says so, not the last
    log line the JVM happened to write."""
    import signal

    batch = tmp_path / "b.jsonl"
    batch.write_text('["1", "Insulin", "insulin resistance in mice"]\n', encoding="utf-8")
    builder = indexer._Builder()
    builder.open({name: tmp_path / name / "00000" for name in indexer.NAMES})
    builder.feed(batch)
    builder.proc.send_signal(signal.SIGKILL)
    with pytest.raises(indexer.LuceneError, match=r"failed \(exit -9\): killed by SIGKILL \(out of memory\?\)$"):
        builder.commit()
    builder.stop()


def test_any_directory_name_reaches_the_builder(tmp_path):
    """Commands are JSON: a staging path with a tab, a newline or non-ASCII letters is not cut."""
    from nteval.lucene.searcher import Index

    odd = tmp_path / "a\tb\nc é"
    targets = {name: odd / name for name in indexer.NAMES}
    p = indexer.PipelinedIndexer(targets, odd / "staging", eager=False)
    p.start()
    p.add_batch([("1", "Insulin", "insulin resistance in mice"), ("2", "Glucose", "glucose uptake")])
    p.finish([], [])
    with Index(odd / "nt") as nt, Index(odd / "all") as all_:
        assert nt.num_docs == all_.num_docs == 2 and nt.doc_freq("glucos") == 1
    assert sorted(x.name for x in odd.iterdir()) == ["all", "nt"]
