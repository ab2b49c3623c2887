"""Readers for judged collections' topics and qrels, on the real files (tests/data/judged)."""
from __future__ import annotations

import pytest
from conftest import DATA

from nteval.errors import InputError
from nteval.formats.topics import load_qrels, load_topics, read_genomics2004_topics, read_trec_covid_topics

J = DATA / "judged"


def test_trec_covid_xml_fields():
    q = load_topics(J / "topics-rnd1.xml")
    assert len(q) == 30 and q["1"] == "coronavirus origin"
    both = read_trec_covid_topics(J / "topics-rnd1.xml", "query+question")
    assert both["1"] == "coronavirus origin what is the origin of COVID-19"
    nar = read_trec_covid_topics(J / "topics-rnd1.xml", "narrative")
    assert nar["2"].startswith("seeking range of information about the SARS-CoV-2 virus viability")
    with pytest.raises(InputError, match="unknown topic field 'title'"):
        read_trec_covid_topics(J / "topics-rnd1.xml", "title")


def test_genomics_2005_narrative_topics_and_qrels():
    q = load_topics(J / "adhoc2005narrative.txt")
    assert len(q) == 50 and min(q, key=int) == "100" and max(q, key=int) == "149"
    assert q["105"] == "Describe the procedure or methods for purification of rat IgM."
    qrels = load_qrels(J / "genomics2005_qrels_topics100-101.txt")
    assert set(qrels) == {"100", "101"}
    assert set(v for d in qrels.values() for v in d.values()) == {0, 1, 2}  # graded


def test_beir_queries_and_qrels():
    q = load_topics(J / "scifact_queries_first31.jsonl")
    assert len(q) == 31 and q["1"] == "0-dimensional biomaterials show inductive properties."
    qrels = load_qrels(J / "scifact_qrels_test.tsv")
    assert qrels["1"] == {"31715818": 1}
    assert sum(len(v) for v in qrels.values()) == 339  # data README: 339 judgments


def test_genomics_2004_xml_layout(tmp_path):
    # No 2004 topic file is available here; this follows the track's published layout.
    p = tmp_path / "2004topics.xml"
    p.write_text("<?xml version='1.0'?>\n<TOPICS>\n<TOPIC>\n<ID>1</ID>\n<TITLE>Ferroportin-1 in humans</TITLE>\n"
                 "<NEED>Find articles about Ferroportin-1, an iron transporter, in humans.</NEED>\n"
                 "<CONTEXT>Ferroportin1 (also known as SLC40A1) is an iron exporter.</CONTEXT>\n</TOPIC>\n</TOPICS>\n")
    assert load_topics(p) == {"1": "Ferroportin-1 in humans"}
    assert read_genomics2004_topics(p, "title+need")["1"].endswith("an iron transporter, in humans.")


def test_bad_topic_files(tmp_path):
    p = tmp_path / "bad.xml"
    p.write_text("<?xml version='1.0'?>\n<topics>\n<topic number='1'><query>x</query>\n</topics>\n")
    with pytest.raises(InputError, match="line"):
        load_topics(p)
    g = tmp_path / "g.txt"
    g.write_text("<100>ok\nnot a topic\n")
    with pytest.raises(InputError, match="line 2"):
        load_topics(g)
