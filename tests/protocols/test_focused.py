"""The focused NT protocol end to end on a real index (real Lucene, real PubMed records)."""
from __future__ import annotations

import json

from nteval.corpus.store import DocStore
from nteval.experiment import run_focused
from nteval.formats.trec import read_qrels, read_topics
from nteval.topics.sample import SampleSpec, sample_ids


def test_same_seed_gives_byte_identical_topics_and_qrels(first200_index, tmp_path):
    a = run_focused(first200_index, tmp_path / "a", n_topics=40, seed=7, systems="default", progress=False, min_topics=10)
    b = run_focused(first200_index, tmp_path / "b", n_topics=40, seed=7, systems="default", progress=False, min_topics=10)
    for f in ("topics.tsv", "qrels.txt", "results.tex"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    assert "\\toprule" in (tmp_path / "a" / "results.tex").read_text()
    c = run_focused(first200_index, tmp_path / "c", n_topics=40, seed=8, systems="default", progress=False, min_topics=10)
    assert (tmp_path / "c" / "topics.tsv").read_bytes() != (tmp_path / "a" / "topics.tsv").read_bytes()
    assert a["systems"] == b["systems"]
    assert c["n_topics"] == 40


def test_topics_respect_filters_and_qrels_point_to_self(first200_index, tmp_path):
    run_focused(first200_index, tmp_path / "o", n_topics=30, seed=1, systems="default", progress=False, min_topics=10)
    topics = read_topics(tmp_path / "o" / "topics.tsv")
    qrels = read_qrels(tmp_path / "o" / "qrels.txt")
    store = DocStore(first200_index / "docs.sqlite")
    for qid, text in topics.items():
        assert qrels[qid] == {qid: 1}
        doc = store.get(qid)
        assert len(doc["sentences"]) >= 3 and len(doc["title"].split()) >= 3
        assert text in doc["title"] or text == doc["title"].strip("[].")
    store.close()
    ids, eligible = sample_ids(first200_index, SampleSpec(n=10_000, seed=1))
    assert len(ids) == eligible < 178  # asking for more than exist gives all eligible


def test_sample_is_the_n_smallest_sha256_keys(first200_index):
    """The streamed sample equals the definition: every eligible id sorted by sha256("seed:docid")."""
    import hashlib
    import sqlite3

    from nteval.topics.sample import eligible_ids

    db = sqlite3.connect(first200_index / "docs.sqlite")
    for n, seed in ((1, 42), (25, 42), (25, 7), (500, 3)):
        spec = SampleSpec(n=n, seed=seed)
        everything = sorted(eligible_ids(db, spec), key=lambda d: hashlib.sha256(f"{seed}:{d}".encode()).digest())
        assert sample_ids(first200_index, spec) == (everything[:n], len(everything))
    db.close()


def test_outputs_schema_and_rerun_reuses_runs(first200_index, tmp_path):
    out = tmp_path / "o"
    res = run_focused(first200_index, out, n_topics=50, seed=3, systems="default", progress=False)
    on_disk = json.loads((out / "results.json").read_text())
    assert on_disk["protocol"] == "focused" and on_disk["n_topics"] == 50 and on_disk["seed"] == 3
    # measures that mean something with one relevant document (AP would equal RR, Bpref R@1000)
    assert on_disk["measures"] == ["RR", "Success@1", "Success@10", "nDCG@10", "R@1000"]
    assert on_disk["topic_counts"] == {"requested": 50, "eligible": on_disk["eligible_documents"], "used": 50}
    assert set(on_disk["systems"]) == {"bm25", "bm25_k1.2_b0.75", "qld_mu1000", "bm25_rm3", "and_then_5", "disjunctive_1"}
    assert (out / "per_topic.tsv").read_text().count("\n") == 1 + 6 * 50 * 5
    assert res["systems"]["disjunctive_1"]["RR"] < res["systems"]["bm25"]["RR"]
    for line in (out / "runs" / "bm25.run").read_text().splitlines()[:3]:
        qid, q0, docid, rank, score, tag = line.split()
        assert q0 == "Q0" and tag == "bm25"
    before = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    again = run_focused(first200_index, out, n_topics=50, seed=3, systems="default", progress=False)
    assert all(t["reused"] for t in again["timing"].values())
    assert {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()} == before
    assert again["systems"] == res["systems"]
    # a different depth is a different run: recomputed
    third = run_focused(first200_index, out, n_topics=50, seed=3, systems="default", depth=10, progress=False)
    assert not any(t["reused"] for t in third["timing"].values())


def test_topic_floor_is_loud(first200_index, tmp_path):
    """Too few topics for a meaningful ranking: a one-line error saying why, exit 2, no runs."""
    import pytest
    from click.testing import CliRunner

    from nteval.cli import main
    from nteval.errors import InputError

    with pytest.raises(InputError, match="below the floor of 50 topics"):
        run_focused(first200_index, tmp_path / "f", n_topics=40, seed=7, systems="default", progress=False)
    assert not (tmp_path / "f" / "runs").exists()
    r = CliRunner().invoke(main, ["focused", "--index", str(first200_index), "--topics", "30", "--out", str(tmp_path / "g"),
                                  "--quiet"])
    assert r.exit_code == 2 and "only 30 usable topics (asked for 30" in r.stderr and len(r.stderr.splitlines()) == 1
    # lowered on purpose: runs
    r = CliRunner().invoke(main, ["focused", "--index", str(first200_index), "--topics", "30", "--min-topics", "20",
                                  "--out", str(tmp_path / "g"), "--quiet"])
    assert r.exit_code == 0 and r.output.startswith("VERDICT (focused protocol, RR)")


def test_runs_beyond_the_memory_budget_are_read_back_and_change_nothing(first200_index, tmp_path, monkeypatch):
    """A RunSet that holds one run at a time (the rest read back from their files, fusion inputs
    included) gives the same per-topic scores, results and run files as one that holds them all."""
    from nteval.runs import RunSet, Searched, run_all
    from nteval.settings import Execution
    from nteval.systems.sets import resolve_systems

    cfg = tmp_path / "systems.yaml"
    cfg.write_text("- {name: bm25, algorithm: bm25}\n- {name: qld, algorithm: qld}\n"
                   "- {name: fused, algorithm: rrf, params: {systems: [bm25, qld]}}\n- {name: and5, algorithm: and_then}\n")
    res = {}
    for budget in ("", "1"):
        monkeypatch.setenv("NTEVAL_RUN_MEMORY_HITS", budget)
        out = tmp_path / f"b{budget or 'all'}"
        res[budget] = run_focused(first200_index, out, n_topics=40, seed=5, systems=str(cfg), progress=False, min_topics=10)
    assert res[""]["systems"] == res["1"]["systems"]
    a, b = tmp_path / "ball", tmp_path / "b1"
    for name in ("per_topic.tsv", "results.tsv", "runs/fused.run", "runs/and5.run"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name

    topics = read_topics(a / "topics.tsv")
    manifest = json.loads((first200_index / "manifest.json").read_text())
    where = Searched(first200_index, "nt", manifest["fingerprint"])
    runs, _ = run_all(where, topics, resolve_systems(cfg)[1], tmp_path / "r", 100, Execution(progress=False))
    assert isinstance(runs, RunSet) and list(runs) == ["bm25", "qld", "fused", "and5"]
    # bm25 went out of memory before the fusion asked for it; qld, still held, was taken first
    # (asked for in order, each would have been read back: 2 reads)
    assert runs.reads == 1
    whole = {n: runs[n] for n in runs}
    monkeypatch.setenv("NTEVAL_RUN_MEMORY_HITS", "")
    again, _ = run_all(where, topics, resolve_systems(cfg)[1], tmp_path / "r", 100, Execution(progress=False))
    assert again.reads == 0 and {n: again[n] for n in again} == whole
