"""The keywords protocol: the rarest words of a sampled title as the query (real PubMed records,
real Lucene document frequencies)."""
from __future__ import annotations

import pytest

from nteval.errors import InputError
from nteval.experiment import run_protocol
from nteval.formats.trec import read_qrels, read_topics
from nteval.protocols.keywords import rare_words


def test_rare_words_by_hand():
    df = {"insulin": 40, "resist": 12, "obes": 12, "patient": 300, "zzz": 0}
    analyze = {"Insulin": ["insulin"], "resistance": ["resist"], "in": [], "obese": ["obes"], "patients": ["patient"],
               "Zzz": ["zzz"], "Resistance": ["resist"]}.get
    title = "Insulin resistance in obese patients: Zzz Resistance."
    # the two rarest: resist (12, position 1) and obes (12, position 3) tie on df: both kept, in title order;
    # in (a stop word), Zzz (in no document) and the second Resistance (same terms) are never chosen
    assert rare_words(title, 2, lambda w: analyze(w, [w.lower()]), df.get) == ["resistance", "obese"]
    assert rare_words(title, 3, lambda w: analyze(w, [w.lower()]), df.get) == ["Insulin", "resistance", "obese"]
    assert rare_words(title, 9, lambda w: analyze(w, [w.lower()]), df.get) == ["Insulin", "resistance", "obese",
                                                                                  "patients"]


def test_topics_are_the_rarest_title_words_and_deterministic(first200_index, tmp_path):
    from nteval.corpus.store import DocStore
    from nteval.lucene.searcher import Index

    for out in (tmp_path / "a", tmp_path / "b"):
        res = run_protocol("keywords", first200_index, out, n_topics=40, seed=3, words=2, systems="default",
                           progress=False, min_topics=10)
    a, b = tmp_path / "a", tmp_path / "b"
    assert (a / "topics.tsv").read_bytes() == (b / "topics.tsv").read_bytes()
    assert (a / "qrels.txt").read_bytes() == (b / "qrels.txt").read_bytes()
    topics, qrels = read_topics(a / "topics.tsv"), read_qrels(a / "qrels.txt")
    assert len(topics) >= 10 and all(q.endswith("-k2") for q in topics)
    assert all(qrels[q] == {q.removesuffix("-k2"): 1} for q in topics)  # its own abstract, nothing else
    store = DocStore(first200_index / "docs.sqlite")
    try:
        with Index(first200_index / "nt") as idx:
            for q, query in topics.items():
                title = store.get(q.removesuffix("-k2"))["title"]
                words = query.split()
                assert 1 <= len(words) <= 2 and all(w in title for w in words), (query, title)
                # no other title word is rarer than the rarest one not chosen
                chosen = max(min(idx.doc_freq(t) for t in idx.analyze(w)) for w in words)
                for w in title.split():
                    terms = idx.analyze(w.strip(".,;:!?()[]{}\"'"))
                    if terms and w.strip(".,;:!?()[]{}\"'") not in words and len(words) == 2:
                        assert min(idx.doc_freq(t) for t in terms) >= chosen or min(
                            idx.doc_freq(t) for t in terms) == 0, (w, query, title)
    finally:
        store.close()
    assert res["verdict"]["measure"] == "RR" and set(res["systems"]) >= {"bm25", "qld_mu1000"}


def test_bad_words_is_one_line(first200_index, tmp_path):
    with pytest.raises(InputError, match="words=0: must be ≥ 1"):
        run_protocol("keywords", first200_index, tmp_path / "o", n_topics=20, words=0, progress=False)
    assert not (tmp_path / "o").exists()
