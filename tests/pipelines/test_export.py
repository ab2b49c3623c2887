"""`nteval export`: real protocol runs on the bundled 2,000-record PubMed sample, exported as BEIR
and TREC/Anserini, read back with nteval's own readers, re-indexed with Anserini, searched by an
independent BM25 (bm25s) and scored with `nteval evaluate`."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from nteval.cli import main
from nteval.corpus.store import DocStore
from nteval.export import export_collection, is_export_dir
from nteval.formats.topics import load_qrels, load_topics
from nteval.formats.trec import read_qrels, read_topics
from nteval.index import read_manifest

SYSTEMS = "- name: bm25\n  algorithm: bm25\n- name: qld_mu1000\n  algorithm: qld\n  params: {mu: 1000}\n"  # (the systems_yaml fixture)


@pytest.fixture(scope="module")
def focused_out(sample_index, systems_yaml, tmp_path_factory) -> Path:
    from nteval.experiment import run_focused

    out = tmp_path_factory.mktemp("runs") / "focused"
    run_focused(sample_index, out, n_topics=60, seed=11, systems=systems_yaml, progress=False, min_topics=10)
    return out


@pytest.fixture(scope="module")
def holdout_out(sample_index, systems_yaml, tmp_path_factory) -> Path:
    from nteval.experiment import run_highrecall

    out = tmp_path_factory.mktemp("runs") / "highrecall"
    run_highrecall(sample_index, out, n_topics=50, seed=5, systems=systems_yaml, progress=False, min_topics=10,
                   sref=["bm25"], holdout=True, graded=True)
    return out


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _stored_contents(index: Path, ids: list[str]) -> dict[str, str]:
    from nteval.lucene.searcher import Index

    with Index(index) as ix:
        assert ix.num_docs == len(ids)
        return {d: json.loads(ix.raw(d))["contents"] for d in ids}


def _store_order(index_dir: Path, index: str = "nt") -> list[str]:
    store = DocStore(index_dir / "docs.sqlite")
    try:
        return [d for d, _, _ in store.iter_texts(index)]
    finally:
        store.close()


def test_beir_export_round_trips_topics_qrels_and_the_nt_texts(focused_out, sample_index, tmp_path):
    info = export_collection(focused_out, tmp_path / "beir", "beir", progress=False)
    d = tmp_path / "beir"
    assert load_topics(d / "queries.jsonl") == read_topics(focused_out / "topics.tsv")
    assert load_qrels(d / "qrels" / "test.tsv") == read_qrels(focused_out / "qrels.txt")
    assert (d / "qrels" / "test.tsv").read_text().startswith("query-id\tcorpus-id\tscore\n")
    docs = _jsonl(d / "corpus.jsonl")
    manifest = read_manifest(sample_index)
    assert len(docs) == manifest["indexes"]["nt"]["documents"] == info["documents"] == 1708
    assert [x["_id"] for x in docs] == _store_order(sample_index)  # the store's stream order
    assert all(set(x) == {"_id", "title", "text"} and x["title"] == "" for x in docs)
    stored = _stored_contents(sample_index / "nt", [x["_id"] for x in docs])
    assert all(x["text"] == stored[x["_id"]] for x in docs)  # exactly what Lucene's nt index holds
    facts = json.loads((d / "export.json").read_text())
    assert facts == info and is_export_dir(d)
    assert (facts["protocol"], facts["searches"], facts["seed"], facts["topics"], facts["holdout"]) == \
        ("focused", "nt", 11, 60, False)
    assert facts["index_fingerprint"] == manifest["fingerprint"]
    readme = (d / "EXPORT.md").read_text()
    for s in ("focused", manifest["fingerprint"], str(sample_index.resolve()), "1708", "titles stripped"):
        assert s in readme
    # the same OUT exports byte for byte the same files
    export_collection(focused_out, tmp_path / "again", "beir", progress=False)
    files = sorted(p.relative_to(d) for p in d.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "again") for p in (tmp_path / "again").rglob("*") if p.is_file())
    assert all((d / f).read_bytes() == (tmp_path / "again" / f).read_bytes() for f in files)


def test_trec_export_is_an_anserini_collection_of_the_indexed_contents(focused_out, sample_index, tmp_path):
    from nteval.lucene.indexer import index_collection_command

    d = tmp_path / "trec"
    info = export_collection(focused_out, d, "trec", progress=False)
    assert (d / "topics.tsv").read_bytes() == (focused_out / "topics.tsv").read_bytes()
    assert (d / "qrels.txt").read_bytes() == (focused_out / "qrels.txt").read_bytes()
    rows = _jsonl(d / "corpus" / "docs.jsonl")
    assert len(rows) == info["documents"] and all(set(r) == {"id", "contents"} for r in rows)
    # what `python -m pyserini.index.lucene -collection JsonCollection -input DIR/corpus` runs
    subprocess.run(index_collection_command(d / "corpus", tmp_path / "reindexed"), check=True, capture_output=True)
    again = _stored_contents(tmp_path / "reindexed", [r["id"] for r in rows])
    assert again == _stored_contents(sample_index / "nt", [r["id"] for r in rows])


def test_all_collection_contents_are_title_newline_abstract(sample_index):
    """A protocol searching `all` (MeSH) exports what nteval indexed there, byte for byte."""
    from nteval.export import _documents

    store = DocStore(sample_index / "docs.sqlite")
    try:
        trec = [json.loads(line) for _, line in _documents(store, "trec", "all")]
        beir = [json.loads(line) for _, line in _documents(store, "beir", "all")]
    finally:
        store.close()
    stored = _stored_contents(sample_index / "all", [r["id"] for r in trec])
    assert all(r["contents"] == stored[r["id"]] for r in trec)
    assert all(f"{b['title']}\n{b['text']}" == t["contents"] and b["title"] for b, t in zip(beir, trec))
    # the whole collection: the records without an abstract too (found by their titles)
    assert len(trec) == 1997 and sum(1 for b in beir if not b["text"]) == 1997 - 1708


def test_holdout_export_says_the_corpus_holds_the_sources(holdout_out, tmp_path):
    r = CliRunner().invoke(main, ["export", "--from", str(holdout_out), "--format", "beir", "--out", str(tmp_path / "e")])
    assert r.exit_code == 0, r.output
    assert "held out" in r.output
    facts = json.loads((tmp_path / "e" / "export.json").read_text())
    assert facts["protocol"] == "highrecall" and facts["holdout"] is True and facts["graded"] is True
    qrels = load_qrels(tmp_path / "e" / "qrels" / "test.tsv")
    assert qrels == read_qrels(holdout_out / "qrels.txt")  # grades 0, 1, 2 kept
    assert {g for v in qrels.values() for g in v.values()} == {0, 1, 2}
    source = {q: q.removesuffix("-s3") for q in qrels}  # topic ids DOCID-s3 (nteval.topics.ids)
    assert all(source[q] not in v for q, v in qrels.items())  # the source is held out of its own qrels ...
    corpus_ids = {x["_id"] for x in _jsonl(tmp_path / "e" / "corpus.jsonl")}
    assert set(source.values()) <= corpus_ids  # ... but in the exported corpus
    readme = (tmp_path / "e" / "EXPORT.md").read_text()
    assert "will find the query's own source document" in readme and "nteval filters held-out" in readme


def _invoke(*args: str):
    return CliRunner().invoke(main, ["export", *args])


def _one_line_error(r, *must: str) -> str:
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and err.startswith("nteval: error: "), err
    assert "Traceback" not in r.output
    for s in must:
        assert s in err, (s, err)
    return err


def _copy_run(src: Path, dst: Path, **changes) -> Path:
    dst.mkdir()
    for name in ("topics.tsv", "qrels.txt", "results.json"):
        shutil.copy(src / name, dst / name)
    res = json.loads((dst / "results.json").read_text())
    (dst / "results.json").write_text(json.dumps({**res, **changes}))
    return dst


def test_export_errors_are_one_line(focused_out, sample_index, tmp_path):
    out = str(tmp_path / "x")
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_line_error(_invoke("--from", str(empty), "--format", "beir", "--out", out), "no results.json")
    _one_line_error(_invoke("--from", str(tmp_path / "nope"), "--format", "beir", "--out", out), "no such directory")
    (empty / "focused").mkdir()
    shutil.copy(focused_out / "results.json", empty / "focused")
    _one_line_error(_invoke("--from", str(empty), "--format", "beir", "--out", out), "subdirectories focused")
    garbled = _copy_run(focused_out, tmp_path / "garbled")
    (garbled / "results.json").write_text('{"protocol": "focused", ')
    _one_line_error(_invoke("--from", str(garbled), "--format", "beir", "--out", out), "results.json", "garbled")
    _one_line_error(_invoke("--from", str(focused_out), "--format", "xml", "--out", out), "--format", "beir")
    moved = _copy_run(focused_out, tmp_path / "moved", index=str(tmp_path / "gone"))
    _one_line_error(_invoke("--from", str(moved), "--format", "beir", "--out", out), str(tmp_path / "gone"), "--index")
    assert _invoke("--from", str(moved), "--format", "beir", "--out", out, "--index", str(sample_index)).exit_code == 0
    other = _copy_run(focused_out, tmp_path / "other", index_fingerprint="0" * 64)
    _one_line_error(_invoke("--from", str(other), "--format", "trec", "--out", str(tmp_path / "y")),
                    "fingerprint", "refusing")
    assert not (tmp_path / "y").exists()
    # L8: without its topic_set, an edited query was exported as the run's
    unvouched = _copy_run(focused_out, tmp_path / "unvouched")
    res = json.loads((unvouched / "results.json").read_text())
    del res["topic_set"]
    (unvouched / "results.json").write_text(json.dumps(res))
    lines = (unvouched / "topics.tsv").read_text().splitlines(keepends=True)
    (unvouched / "topics.tsv").write_text("".join([lines[0].split("\t")[0] + "\tINJECTED QUERY\n", *lines[1:]]))
    _one_line_error(_invoke("--from", str(unvouched), "--format", "beir", "--out", str(tmp_path / "y")),
                    "results.json: no topic_set", "re-run the protocol")
    assert not (tmp_path / "y").exists()
    mixed = _copy_run(focused_out, tmp_path / "mixed", n_topics=59)
    _one_line_error(_invoke("--from", str(mixed), "--format", "trec", "--out", str(tmp_path / "y")), "do not belong")
    # --out: refused when it exists; --force replaces only an earlier export
    _one_line_error(_invoke("--from", str(focused_out), "--format", "trec", "--out", out), "already exists", "--force")
    assert _invoke("--from", str(focused_out), "--format", "trec", "--out", out, "--force").exit_code == 0
    assert json.loads((Path(out) / "export.json").read_text())["format"] == "trec"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    _one_line_error(_invoke("--from", str(focused_out), "--format", "beir", "--out", str(mine), "--force"),
                    "--force refused")
    assert (mine / "notes.txt").read_text() == "keep me"
    (Path(out) / "qrels").mkdir(exist_ok=True)
    (Path(out) / "qrels" / "myrun.run").write_text("my precious run\n")  # a user's file inside an export (N35)
    _one_line_error(_invoke("--from", str(focused_out), "--format", "beir", "--out", out, "--force"),
                    "would delete 1 file(s) nteval export did not write", "qrels/myrun.run")
    assert (Path(out) / "qrels" / "myrun.run").read_text() == "my precious run\n"
    assert not list(tmp_path.glob(".*.tmp-*"))  # nothing half-written left behind


def test_bm25s_round_trip_scores_like_nteval_bm25(focused_out, tmp_path):
    """The acceptance: an outside BM25 over the exported BEIR collection, scored by nteval."""
    pytest.importorskip("bm25s")
    from bm25s_run import bm25s_run

    export_collection(focused_out, tmp_path / "beir", "beir", progress=False)
    counts = bm25s_run(tmp_path / "beir", tmp_path / "bm25s.run", depth=1000)
    assert counts["queries"] == 60 and counts["documents"] == 1708
    r = CliRunner().invoke(main, ["evaluate", "--qrels", str(tmp_path / "beir" / "qrels" / "test.tsv"),
                                  "--measures", "RR R@1000", "--json", str(tmp_path / "bm25s.run")])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)["bm25s"]
    ours = json.loads((focused_out / "results.json").read_text())["systems"]["bm25"]["RR"]
    # measured on this sample: bm25s 0.9742 vs nteval bm25 0.9867 (these 60 topics), 0.9729 vs 0.9769
    # (300 topics, seed 42), 0.9780 vs 0.9818 (1,000 topics). bm25s does not stem, so it sits a little
    # lower; 0.05 is four times the largest gap seen (one topic losing rank 1 here moves RR by ~0.01)
    assert abs(got["RR"] - ours) <= 0.05, (got, ours)
    assert got["R@1000"] >= 0.95
    # ... and the same file joins the experiment as an external run: its NT score there is the one
    # `nteval evaluate` gives (tolerance 1e-6: both read the run through the same evaluation core,
    # results.json rounds to 6 decimals)
    import shutil

    out = tmp_path / "focused"  # a copy: the module's other tests read focused_out as it was
    shutil.copytree(focused_out, out)
    runs = tmp_path / "external"
    runs.mkdir()
    (runs / "bm25s.run").write_bytes((tmp_path / "bm25s.run").read_bytes())
    res = json.loads((out / "results.json").read_text())
    r = CliRunner().invoke(main, ["focused", "--index", res["index"], "--topics", str(res["n_topics"]),
                                  "--seed", str(res["seed"]), "--systems", res["systems_file"], "--runs", str(runs),
                                  "--min-topics", "10", "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    joined = json.loads((out / "results.json").read_text())
    assert joined["systems"]["bm25s"]["RR"] == pytest.approx(got["RR"], abs=1e-6)
    assert joined["system_notes"]["bm25s"]["foreign_hits"] == 0
    assert joined["systems"]["bm25"] == json.loads(json.dumps(res["systems"]["bm25"]))


def test_a_run_made_with_a_relative_index_exports_from_anywhere(sample_index, systems_yaml, tmp_path, monkeypatch):
    """results.json records where the index is, not how it was typed: `--index IDX` in one
    directory, `nteval export` from another. The JVM is started before the first chdir, as in a
    notebook: its working directory stays where it started, so Lucene must get absolute paths."""
    from nteval.experiment import run_focused
    from nteval.lucene.searcher import Index

    with Index(sample_index / "nt"):
        pass
    work = tmp_path / "w"
    work.mkdir()
    (work / "IDX").symlink_to(sample_index, target_is_directory=True)
    monkeypatch.chdir(work)
    run_focused("IDX", "F", n_topics=20, seed=3, systems=systems_yaml, progress=False, min_topics=10)
    assert json.loads((work / "F" / "results.json").read_text())["index"] == str(work / "IDX")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["export", "--from", "w/F", "--format", "trec", "--out", "w/F-trec"])
    assert r.exit_code == 0, r.output
    assert (work / "F-trec" / "EXPORT.md").is_file()


def test_a_pins_topic_sets_export_as_a_runs_do(first200_index, tmp_path):
    """New user, turn 8: the gate's hints send a team to `nteval export --from OUT`, and a gate's OUT
    is a pin, which export refused ("not a protocol run output"). A pin's PIN/focused and
    PIN/highrecall export as a run's OUT does (the collection, the pin's topics and judgments, read
    back equal); the pin itself is one line naming both; a pin whose topics were edited is refused."""
    from conftest import cli, without_the_neural_extra

    pin = tmp_path / "pin"
    with pytest.MonkeyPatch.context() as mp:
        without_the_neural_extra(mp)
        r = cli("pin", "--index", first200_index, "--topics", 60, "--out", pin, "--quiet")
    assert r.exit_code == 0, r.output
    meta = json.loads((pin / "pin.json").read_text())
    for proto, fmt, qrels_name in (("focused", "beir", "qrels.txt"), ("highrecall", "trec", "qrels.txt.gz")):
        out = tmp_path / f"x-{proto}"
        r = cli("export", "--from", pin / proto, "--format", fmt, "--out", out, "--quiet")
        assert r.exit_code == 0, r.output
        info = json.loads((out / "export.json").read_text())
        assert info["pin"] == meta["id"] and info["topic_set"] == meta["protocols"][proto]["topic_set"]
        assert info["documents"] == read_manifest(first200_index)["indexes"]["nt"]["documents"]
        topics = load_topics(out / ("queries.jsonl" if fmt == "beir" else "topics.tsv"))
        qrels = load_qrels(out / ("qrels/test.tsv" if fmt == "beir" else "qrels.txt"))
        assert topics == read_topics(pin / proto / "topics.tsv")
        assert qrels == read_qrels(pin / proto / qrels_name)
    r = cli("export", "--from", pin, "--format", "beir", "--out", tmp_path / "whole")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert f"{pin / 'focused'} for its known-item topics" in r.output and "highrecall" in r.output
    assert not (tmp_path / "whole").exists()
    edited = tmp_path / "edited"
    shutil.copytree(pin, edited)
    t = edited / "focused" / "topics.tsv"
    t.write_text(t.read_text().replace("\t", "\tedited ", 1))
    r = cli("export", "--from", edited / "focused", "--format", "beir", "--out", tmp_path / "x-edited")
    assert r.exit_code == 2 and "is not the topic set pin.json names" in r.output, r.output
    assert not (tmp_path / "x-edited").exists()
