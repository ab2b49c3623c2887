"""Held-out index copies (Lucene deletions on hard links) and the pseudo-qrels variants."""
from __future__ import annotations

import hashlib

import pytest

from nteval.formats.trec import read_run
from nteval.topics.highrecall import fused_pseudo_qrels, pseudo_qrels


def _digest(d):
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(d.iterdir()) if f.is_file()}


def test_holdout_copy_hides_documents_and_keeps_scores(first200_index, tmp_path):
    from nteval.lucene.holdout import holdout_copy
    from nteval.lucene.searcher import Index

    before = _digest(first200_index / "nt")
    with Index(first200_index / "nt") as full:
        q = "patients treatment outcomes"
        ranking = full.search(q, 50)
        gone = [ranking[0][0], ranking[3][0]]
        copy = holdout_copy(first200_index / "nt", tmp_path / "ho", gone)
        with Index(copy) as held:
            assert held.num_docs == full.num_docs - 2
            got = held.search(q, 48)
            # the same ranking without the held-out documents, with exactly the same scores
            assert got == [h for h in ranking if h[0] not in gone][:48]
            held.configure("bm25", k1=0.9, b=0.4, rm3=True, fb_docs=5, fb_terms=5, original_query_weight=0.5)
            assert not {d for d, _ in held.search(q, 100)} & set(gone)
    assert _digest(first200_index / "nt") == before  # the original index is untouched
    assert not list(tmp_path.glob(".ho.tmp-*"))


def test_fused_pseudo_qrels():
    a = {"t": [(f"d{i}", 10.0 if i < 2 else 1.0) for i in range(40)]}
    b = {"t": [(f"d{i}", 10.0 if i in (0, 5) else 1.0) for i in range(40)]}
    c = {"t": [(f"d{i}", 10.0 if i in (0, 1) else 1.0) for i in range(40)]}
    # one reference, binary: exactly the paper's pseudo-qrels
    assert fused_pseudo_qrels([a], judged="relevant-only") == pseudo_qrels(a, judged="relevant-only")
    # vote: d0 (3 votes) and d1 (2 votes) in, d5 (1 vote) out
    assert fused_pseudo_qrels([a, b, c], judged="relevant-only") == {"t": {"d0": 1, "d1": 1}}
    # graded: z of the outliers here is ≈ 4.3, above ZT + 1 → grade 2
    assert fused_pseudo_qrels([a, b, c], judged="relevant-only", graded=True) == {"t": {"d0": 2, "d1": 2}}
    with pytest.raises(ValueError):
        fused_pseudo_qrels([a], combine="max")


def test_holdout_runs_cover_every_topic(first200_index, tmp_path):
    from nteval.index import read_manifest
    from nteval.runs import Searched, holdout_folds, run_all_holdout
    from nteval.settings import Execution
    from nteval.systems.base import make_system

    assert [len(f) for f in holdout_folds([str(i) for i in range(10)], 200)] == [4, 4, 2]
    fp = read_manifest(first200_index)["fingerprint"]
    from nteval.corpus.store import DocStore

    store = DocStore(first200_index / "docs.sqlite")
    ids = [r[0] for r in store.db.execute("SELECT docid FROM docs WHERE n_sentences >= 3 ORDER BY docid LIMIT 9")]
    store.close()
    topics = {d: "patients treatment" for d in ids}
    runs, infos, held = run_all_holdout(Searched(first200_index, "nt", fp), topics, [make_system("bm25", "bm25")],
                                        tmp_path / "r", 20, Execution(progress=False))
    assert set(runs["bm25"]) == set(ids) and all(q in held[q] for q in ids)
    for q, ranking in runs["bm25"].items():
        assert not {d for d, _ in ranking} & set(held[q])
    assert read_run(tmp_path / "r" / "bm25.run").keys() <= set(ids)
    assert not list((tmp_path / "r" / "folds").glob("index-*"))  # index copies removed after use
