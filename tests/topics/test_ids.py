"""Topic sets have an identity: a run made for another topic set (another protocol, another seed,
another index) is refused with one line before any system runs — through --runs, a systems YAML's
``run:`` and the export round trip — while a run of the right topic set is accepted.
(The bundled 2,000-record PubMed sample and the 200-record slice, real Lucene.)"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import cli, one_line_error, retag

from nteval.formats.trec import read_run, read_topics
from nteval.topics.ids import crosslingual_id, describe, highrecall_id, topic_set_id

SYSTEMS = "- {name: bm25, algorithm: bm25}\n"  # (the systems_yaml fixture)


def _score(cmd: str, index, systems, out, runs=None):
    """``nteval CMD`` on 60 topics of ``index`` with ``systems`` (and ``--runs``), quietly."""
    return cli(cmd, "--index", index, "--topics", "60", "--systems", systems, "--min-topics", "10",
               *(["--runs", runs] if runs is not None else []), "--out", out, "--quiet")


@pytest.fixture(scope="module")
def outs(sample_index, systems_yaml, tmp_path_factory) -> dict[str, Path]:
    """focused (seed 42), high-recall (seed 42) and focused (seed 7) runs of BM25 on the sample."""
    base = tmp_path_factory.mktemp("outs")
    common = ["--index", sample_index, "--topics", "60", "--systems", systems_yaml, "--min-topics", "10", "--quiet"]
    for name, cmd, seed in (("focused", "focused", 42), ("highrecall", "highrecall", 42), ("seed7", "focused", 7)):
        r = cli(cmd, *common, "--seed", seed, "--out", base / name)
        assert r.exit_code == 0, r.output
    return {n: base / n for n in ("focused", "highrecall", "seed7")}


def test_topic_ids_say_their_protocol():
    assert highrecall_id("123", 3) == "123-s3" and crosslingual_id("123", "ger") == "123-ger"
    assert describe(["1-s3", "2-s3"]).startswith("high-recall topics (sentence 3")
    assert describe(["1-ger", "2-fre"]).startswith("cross-lingual topics (fre, ger")
    assert describe(["D003042", "D000001"]).startswith("MeSH topics")
    assert describe(["123", "456"]) == "topics with ids like 123"
    # the identity of a topic set: its protocol, queries and qrels, nothing else
    t, q = {"1": "a b c"}, {"1": {"1": 1}}
    assert topic_set_id("focused", t, q) == topic_set_id("focused", dict(t), {"1": {"1": 1}})
    assert len({topic_set_id("focused", t, q), topic_set_id("highrecall", t, q),
                topic_set_id("focused", {"1": "a b"}, q), topic_set_id("focused", t, {"1": {"2": 1}})}) == 4


def test_high_recall_ids_never_collide_with_focused_ones(outs):
    f, h = read_topics(outs["focused"] / "topics.tsv"), read_topics(outs["highrecall"] / "topics.tsv")
    assert all(q.endswith("-s3") for q in h) and not set(f) & set(h)
    assert {q.removesuffix("-s3") for q in h} & set(f)  # the same sampled documents (one D0)
    res = json.loads((outs["focused"] / "results.json").read_text())
    assert res["topic_set"] == topic_set_id("focused", f, {q: {q: 1} for q in f})


def test_a_high_recall_run_fed_to_focused_is_refused_before_any_work(sample_index, outs, systems_yaml, tmp_path):
    """The new-user reproduction: a run of the high-recall queries in a focused --runs directory."""
    runs = tmp_path / "runs"
    retag(outs["highrecall"] / "runs" / "bm25.run", runs / "hr.run", "hr_bm25")
    out = tmp_path / "f"
    line = one_line_error(_score("focused", sample_index, systems_yaml, out, runs),
                          "system 'hr_bm25'", "not this experiment's", "high-recall topics (sentence 3")
    assert "focused experiment" in line
    assert not (out / "runs").exists()  # refused before any system ran
    # the same through a systems YAML's run:
    yml = tmp_path / "with_run.yaml"
    yml.write_text(SYSTEMS + f"- {{name: theirs, run: {runs / 'hr.run'}}}\n")
    one_line_error(_score("focused", sample_index, yml, tmp_path / "f2"), "system 'theirs'", "high-recall topics")
    # and a focused run fed to high-recall
    runs2 = tmp_path / "runs2"
    retag(outs["focused"] / "runs" / "bm25.run", runs2 / "f.run", "f_bm25")
    one_line_error(_score("highrecall", sample_index, systems_yaml, tmp_path / "h", runs2),
                   "system 'f_bm25'", "this highrecall experiment has high-recall topics")


def test_another_seeds_run_is_refused_the_right_one_accepted(sample_index, outs, systems_yaml, tmp_path):
    runs = tmp_path / "runs"
    retag(outs["seed7"] / "runs" / "bm25.run", runs / "s7.run", "seed7_bm25")
    one_line_error(_score("focused", sample_index, systems_yaml, tmp_path / "f", runs),
                   "system 'seed7_bm25'", "not this experiment's")
    ok = tmp_path / "ok"
    retag(outs["focused"] / "runs" / "bm25.run", ok / "mine.run", "mine")
    r = _score("focused", sample_index, systems_yaml, tmp_path / "g", ok)
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "g" / "results.json").read_text())
    assert res["systems"]["mine"] == res["systems"]["bm25"]  # the same run, scored the same


def test_another_index_run_is_refused(first200_index, outs, systems_yaml, tmp_path):
    """A focused run of the 2,000-record sample fed to a focused experiment on the 200-record slice."""
    runs = tmp_path / "runs"
    retag(outs["focused"] / "runs" / "bm25.run", runs / "other.run", "other_index")
    one_line_error(_score("focused", first200_index, systems_yaml, tmp_path / "f", runs),
                   "system 'other_index'", "not this experiment's")


def test_export_round_trip_accepts_its_own_topics_and_refuses_the_other_protocols(sample_index, outs, systems_yaml,
                                                                                   tmp_path):
    """Export focused and high-recall, 'run a system' over each export (nteval's own BM25 run, its
    qids and docids read from the exported files), bring the runs back."""
    for name in ("focused", "highrecall"):
        r = cli("export", "--from", outs[name], "--format", "beir", "--out", tmp_path / f"{name}-beir", "--quiet")
        assert r.exit_code == 0, r.output
        info = json.loads((tmp_path / f"{name}-beir" / "export.json").read_text())
        assert info["topic_set"] == json.loads((outs[name] / "results.json").read_text())["topic_set"]
    queries = [json.loads(line)["_id"] for line in (tmp_path / "focused-beir" / "queries.jsonl").read_text().splitlines()]
    run = read_run(outs["focused"] / "runs" / "bm25.run")
    assert set(run) == set(queries)  # the exported queries are the ones the runs answer
    good, bad = tmp_path / "good", tmp_path / "bad"
    retag(outs["focused"] / "runs" / "bm25.run", good / "external.run", "external")
    retag(outs["highrecall"] / "runs" / "bm25.run", bad / "external.run", "external")
    r = _score("focused", sample_index, systems_yaml, tmp_path / "g", good)
    assert r.exit_code == 0, r.output
    one_line_error(_score("focused", sample_index, systems_yaml, tmp_path / "b", bad), "high-recall topics")


def test_export_refuses_topic_files_edited_after_the_run(outs, tmp_path):
    copy = tmp_path / "f"
    shutil.copytree(outs["focused"], copy)
    lines = (copy / "topics.tsv").read_text().splitlines()
    qid, text = lines[0].split("\t", 1)
    (copy / "topics.tsv").write_text("\n".join([f"{qid}\t{text} edited"] + lines[1:]) + "\n")
    one_line_error(cli("export", "--from", copy, "--format", "beir", "--out", tmp_path / "e", "--quiet"),
              "not the topic set results.json names", "re-run the protocol")
    assert not (tmp_path / "e").exists()
