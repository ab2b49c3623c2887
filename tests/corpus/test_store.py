"""The document store's MeSH table, vernacular columns and format version, on real records: the
store's answers are checked against the parsed records (themselves checked against the XML in
test_medline), and an index written by the previous nteval is opened as it is."""
from __future__ import annotations

from collections import defaultdict

import pytest
from conftest import FIRST100, FIRST200

from nteval.corpus.document import Document
from nteval.corpus.medline import read_medline
from nteval.corpus.sentences import split_abstract
from nteval.corpus.store import FORMAT, DocStore
from nteval.errors import InputError
from nteval.index import build_index, read_manifest, require_store_features
from nteval.topics.focused import focused_topics
from nteval.topics.sample import SampleSpec, sample_ids

#: manifest.json + docs.sqlite of FIRST100 as nteval wrote them before the store had a format
#: (commit 9f2e5eb; see PROVENANCE.md).


def _docs(path) -> dict[str, Document]:
    return {r.docid: r for r in read_medline(path) if isinstance(r, Document)}


def _major_counts(docs) -> dict[str, int]:
    """Documents per descriptor UI where it is a major topic, counted from the parsed records."""
    n: dict[str, int] = defaultdict(int)
    for d in docs:
        for ui in {h["ui"] for h in d.meta.get("mesh", []) if h["major"]}:
            n[ui] += 1
    return dict(n)


def test_store_gives_back_every_record_as_parsed(first200_index):
    """meta (MeSH rebuilt from its table rows) and the vernacular columns equal the parsed record."""
    docs = _docs(FIRST200)
    store = DocStore(first200_index / "docs.sqlite")
    try:
        assert store.format == FORMAT
        for docid, doc in docs.items():
            assert store.get(docid)["meta"] == doc.meta, docid
        cols = dict(((d, (t, lang)) for d, t, lang in store.db.execute(
            "SELECT docid, vernacular_title, vernacular_language FROM docs")))
        assert cols == {d: (doc.meta.get("vernacular_title"), doc.meta.get("vernacular_language"))
                        for d, doc in docs.items()}
        # (115 documents: 98 with an abstract, the other 17 with a title only, PubMed finds those by their titles)
        assert store.documents_with_mesh() == sum("mesh" in d.meta for d in docs.values()) == 115
        # 10 eng+spa, 1 spa, 1 eng-only (language unknown), see test_medline
        assert store.vernacular_counts() == {"spa": 12, None: 1}  # (12: one record of them has no abstract)
    finally:
        store.close()


def test_major_topic_counts_and_graded_documents(first200_index):
    docs = list(_docs(FIRST200).values())
    counts = _major_counts(docs)
    store = DocStore(first200_index / "docs.sqlite")
    try:
        every = store.mesh_major_topics(1, 10**9)
        assert {k: c for k, _name, c in every} == counts
        assert [k for k, _, _ in every] == sorted(counts)
        window = store.mesh_major_topics(2, 3)
        assert {k for k, _, _ in window} == {k for k, c in counts.items() if 2 <= c <= 3} != set()
        cocaine = dict((k, name) for k, name, _ in every)["D003042"]
        assert cocaine == "Cocaine"
        graded = store.mesh_documents("D003042")
        assert graded["10704411"] == 2  # Cocaine/metabolism* (test_medline)
        expect = {d.docid: 1 + any(h["major"] for h in d.meta["mesh"] if h["ui"] == "D003042")
                  for d in docs if any(h["ui"] == "D003042" for h in d.meta.get("mesh", []))}
        assert graded == expect
        assert set(store.mesh_documents("D006801").values()) == {1}  # Humans: a check tag, never major
        assert store.mesh_documents("D999999") == {}
    finally:
        store.close()


def test_replaced_and_deleted_records_leave_no_mesh_rows(tmp_path):
    """A later version replaces a record's headings (also inside one write batch); a deletion
    removes them."""
    docs = list(_docs(FIRST100).values())
    store = DocStore(tmp_path / "s.sqlite", create=True)
    for d in docs + docs[:5]:  # the first five twice, in the same batch
        store.put_row(DocStore.row(d, split_abstract(d.abstract_parts)))
    store.delete(docs[0].docid)
    n_rows = lambda: store.db.execute("SELECT COUNT(*) FROM mesh").fetchone()[0]  # noqa: E731
    kept = docs[1:]
    expect = sum(len(h["qualifiers"]) + 1 for d in kept for h in d.meta.get("mesh", []))
    assert len(store) == len(kept) and n_rows() == expect > 0
    assert store.get(docs[1].docid)["meta"] == docs[1].meta
    assert store.get(docs[0].docid) is None and store.mesh_documents(docs[0].meta["mesh"][0]["ui"]).get(docs[0].docid) is None
    store.close()


def test_manifest_records_the_store_format(first200_index):
    m = require_store_features(first200_index, ["mesh", "vernacular"])
    assert m["store"]["format"] == FORMAT
    assert m["store"]["documents_with_mesh"] == 115 and m["store"]["vernacular_titles"] == {"spa": 12, "unknown": 1}


def test_old_index_is_a_one_line_rebuild_error_for_the_new_data(old_index):
    read_manifest(old_index)  # still a valid index
    for features in (["mesh"], ["vernacular"], ["vernacular", "mesh"]):
        with pytest.raises(InputError) as err:
            require_store_features(old_index, features)
        msg = str(err.value)
        assert "\n" not in msg and msg.startswith(str(old_index / "docs.sqlite"))
        assert "built by an older nteval: rebuild it with nteval index --force" in msg and "format 1, needs 2" in msg
    assert require_store_features(old_index, []) == read_manifest(old_index)
    store = DocStore(old_index / "docs.sqlite")
    try:
        for query in (lambda: store.mesh_documents("D003042"), lambda: store.mesh_major_topics(5, 500)):
            with pytest.raises(InputError, match="rebuild it with nteval index --force"):
                query()
    finally:
        store.close()


def test_old_index_still_serves_the_existing_protocols(old_index, tmp_path):
    """Same sample and the same focused topics/qrels from the old store as from a new build."""
    new = tmp_path / "new"
    build_index([FIRST100], new)
    spec = SampleSpec(n=20, seed=3, min_sentences=1, min_title_tokens=1)
    ids_old, n_old = sample_ids(old_index, spec)
    ids_new, n_new = sample_ids(new, spec)
    assert ids_old == ids_new and n_old == n_new == len([d for d in _docs(FIRST100).values() if d.abstract])
    old, cur = DocStore(old_index / "docs.sqlite"), DocStore(new / "docs.sqlite")
    try:
        assert old.format == 1 and old.documents_with_mesh() == 0 and old.vernacular_counts() == {}
        assert focused_topics(old, ids_old) == focused_topics(cur, ids_new)
        d = ids_old[0]
        assert old.get(d)["sentences"] == cur.get(d)["sentences"]
        assert "mesh" not in old.get(d)["meta"] and "mesh" in cur.get(d)["meta"]
    finally:
        old.close()
        cur.close()
