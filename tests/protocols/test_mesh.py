"""MeSH-topic protocol on real Medline records (the bundled pubmed20n0014 slice: every record
indexed by NLM). Relevance is checked against the headings parsed straight from the XML."""
from __future__ import annotations

from collections import defaultdict

import pytest
from conftest import FIRST100

from nteval.corpus.document import Document
from nteval.corpus.medline import read_medline
from nteval.errors import InputError
from nteval.experiment import run_protocol
from nteval.formats.trec import read_qrels, read_topics


def _run(index, out, **params):
    return run_protocol("mesh", index, out, systems="default", progress=False, min_topics=5,
                        **{"min_docs": 2, "max_docs": 10, **params})


def _assigned() -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, str]]:
    """descriptor UI → documents where it is major / assigned at all, and its name, from the XML
    (kept documents only: a title and an abstract)."""
    major, anywhere, names = defaultdict(set), defaultdict(set), {}
    for r in read_medline(FIRST100):
        if isinstance(r, Document):
            for h in r.meta.get("mesh", []):
                anywhere[h["ui"]].add(r.docid)
                names[h["ui"]] = h["name"]
                if h["major"]:  # the descriptor or one of its qualifiers starred (NLM's rule)
                    major[h["ui"]].add(r.docid)
    return major, anywhere, names


def test_topics_are_descriptors_and_relevant_their_major_documents(first100_index, tmp_path):
    res = _run(first100_index, tmp_path / "a")
    major, anywhere, names = _assigned()
    topics, qrels = read_topics(tmp_path / "a" / "topics.tsv"), read_qrels(tmp_path / "a" / "qrels.txt")
    eligible = {ui for ui, docs in major.items() if 2 <= len(docs) <= 10}
    # (29: the records without an abstract count too, they are documents of `all`, which MeSH searches)
    assert set(topics) == eligible and res["eligible_descriptors"] == len(eligible) == 29
    for ui, q in topics.items():
        assert q == names[ui]
        assert set(qrels[ui]) == major[ui] and set(qrels[ui].values()) == {1}
    assert res["verdict"]["measure"] == "AP" and res["documents"]["without_mesh"] == 0
    graded = _run(first100_index, tmp_path / "g", graded=True)
    gq = read_qrels(tmp_path / "g" / "qrels.txt")
    for ui in topics:
        assert {d for d, g in gq[ui].items() if g == 2} == major[ui]
        assert {d for d, g in gq[ui].items() if g == 1} == anywhere[ui] - major[ui]
    assert graded["mesh"]["graded"] is True


def test_seeded_sample_searches_all(first100_index, tmp_path):
    a = _run(first100_index, tmp_path / "a", n_topics=6, seed=3)
    _run(first100_index, tmp_path / "b", n_topics=6, seed=3)
    for f in ("topics.tsv", "qrels.txt"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    c = _run(first100_index, tmp_path / "c", n_topics=6, seed=4)
    assert c["n_topics"] == a["n_topics"] == 6
    assert read_topics(tmp_path / "a" / "topics.tsv") != read_topics(tmp_path / "c" / "topics.tsv")
    # the runs are searches of `all` (titles kept): the same ranking as BM25 over all/ directly
    from nteval.formats.trec import read_run
    from nteval.lucene.searcher import Index
    from nteval.systems.base import make_system
    from nteval.systems.execute import run_system

    topics = read_topics(tmp_path / "a" / "topics.tsv")
    run = read_run(tmp_path / "a" / "runs" / "bm25.run")
    from nteval.formats.trec import canonical

    direct = {name: {q: canonical(r, 1000) for q, r in  # (ties in trec_eval's order, as run files are written)
                     run_system(Index(first100_index / name), make_system("bm25", "bm25"), topics, 1000).items()}
              for name in ("all", "nt")}
    top = lambda r: {q: [d for d, _ in r[q][:5]] for q in topics}  # noqa: E731
    assert top(run) == top(direct["all"]) != top(direct["nt"])


def test_bad_windows_and_old_indexes_are_one_line_errors(first100_index, old_index, tmp_path):
    with pytest.raises(InputError, match="max_docs=3: must be ≥ min_docs"):
        _run(first100_index, tmp_path / "x", min_docs=5, max_docs=3)
    with pytest.raises(InputError, match="no MeSH descriptor is a major topic of between 50 and 60"):
        _run(first100_index, tmp_path / "y", min_docs=50, max_docs=60)
    with pytest.raises(InputError, match="rebuild it with nteval index --force"):
        _run(old_index, tmp_path / "z")
    for d in "xyz":
        assert not (tmp_path / d).exists()
