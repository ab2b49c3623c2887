"""MeSH headings in a BEIR corpus (the CF collection's ``mesh_major``/``mesh_minor``): read into the
document store as the Medline reader's headings are, so the MeSH protocol and the MeSH figures of
the studies work on it; bad values are one line naming the file and line."""
from __future__ import annotations

import json

from conftest import DATA, cli, one_line_error

CF80 = DATA / "cf" / "corpus_first80.jsonl"


def test_cf_headings_reach_the_store_and_the_mesh_protocol(tmp_path):
    from nteval.corpus.store import DocStore

    r = cli("index", CF80, "--out", tmp_path / "idx", "--quiet")
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in CF80.read_text().splitlines()]
    st = DocStore(tmp_path / "idx" / "docs.sqlite")
    try:
        for rec in lines[:10]:
            heads = st.get(rec["_id"])["meta"].get("mesh", [])
            major = {h["name"] for h in heads if h["major"]}
            assert major == set(rec["mesh_major"])
            assert {h["name"] for h in heads} == set(rec["mesh_major"]) | set(rec["mesh_minor"])
    finally:
        st.close()
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert manifest["store"]["documents_with_mesh"] == sum(1 for x in lines if x["mesh_major"] or x["mesh_minor"])
    m = cli("run", "--protocol", "mesh", "--param", "min_docs=3", "--index", tmp_path / "idx", "--systems", "default",
            "--min-topics", 2, "--out", tmp_path / "m", "--quiet")
    assert m.exit_code == 0, m.output
    topics = (tmp_path / "m" / "topics.tsv").read_text().splitlines()
    assert topics and all(t.split("\t")[1].isupper() for t in topics)  # CF writes descriptors in capitals


def test_a_bad_heading_list_is_one_line(tmp_path):
    bad = tmp_path / "c.jsonl"
    bad.write_text('{"_id": "1", "title": "t", "text": "a b.", "mesh_major": "CYSTIC-FIBROSIS"}\n')
    one_line_error(cli("index", bad, "--out", tmp_path / "o"), str(bad), "line 1", "mesh_major")
    assert not (tmp_path / "o").exists()
