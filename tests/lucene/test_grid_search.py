"""One pass over the postings scores every cell of a grid as Lucene scores each cell on its own:
the same documents, order and scores (floats, bit for bit) on real PubMed titles and sentences."""
from __future__ import annotations

import pytest

from nteval.corpus.store import DocStore
from nteval.lucene.searcher import Index

GRIDS = {"bm25": [{"k1": k1, "b": b} for k1 in (0.3, 0.9, 1.6) for b in (0.0, 0.4, 1.0)],
         "qld": [{"mu": mu} for mu in (50.0, 1000.0, 3000.0)]}


def _queries(index_dir) -> dict[str, dict[str, str]]:
    store = DocStore(index_dir / "docs.sqlite")
    try:
        docs = [store.get(d) for (d,) in store.db.execute("SELECT docid FROM docs WHERE n_sentences >= 3 ORDER BY seq")]
    finally:
        store.close()
    return {"titles": {d["docid"]: d["title"] for d in docs[:60]},
            "sentences": {d["docid"]: d["sentences"][2] for d in docs[:60]},
            "odd": {"empty": "", "stop": "the of and", "syntax": 'insulin AND "glucose" OR (x:y)', "one": "insulin",
                    "repeat": "cancer cancer cancer cells"}}


@pytest.mark.parametrize("name", ["nt", "all"])
@pytest.mark.parametrize("model", ["bm25", "qld"])
def test_one_pass_equals_each_cell(first200_index, name, model):
    queries = _queries(first200_index)
    with Index(first200_index / name) as idx:
        cells = GRIDS[model]
        sims = [idx.similarity(model, **c) for c in cells]
        for kind, qs in queries.items():
            grid = idx.grid_search(qs, 50, sims, threads=2)
            for c, params in enumerate(cells):
                idx.configure(model, **params)
                ref = idx.batch_search(qs, 50, threads=2)
                for q in qs:
                    assert grid[c][q] == ref[q], (kind, model, params, q)
    # (and the cells really differ: the grid is not scoring one cell many times)
    assert grid[0] != grid[-1]


def test_depth_beyond_the_matches_and_ties_at_the_cut(first200_index):
    """Depth 1,000 on a 200-record index (every matching document), and a cut at 3 inside a run of
    equal scores: the documents kept at the boundary are Lucene's (ties by docid)."""
    qs = {"a": "patients", "b": "the", "c": "covid-19 pandemic"}
    with Index(first200_index / "nt") as idx:
        sims = [idx.similarity("bm25", k1=1.2, b=0.0), idx.similarity("bm25", k1=0.9, b=0.4)]
        for k in (1000, 3):
            grid = idx.grid_search(qs, k, sims)
            for c, (k1, b) in enumerate(((1.2, 0.0), (0.9, 0.4))):
                idx.configure("bm25", k1=k1, b=b)
                assert grid[c] == idx.batch_search(qs, k), (k, k1, b)
        assert grid[0]["b"] == []  # a query of stop words matches nothing


@pytest.mark.parametrize("protocol", ["focused", "highrecall"])
def test_measures_computed_in_the_pass_equal_ir_measures(first200_index, tmp_path, protocol):
    """RR, AP, Bpref, P@k, R@k and Success@k computed in Java on each cell's ranking (as its run file
    holds it: 6-decimal scores, trec_eval's order, held-out documents dropped) equal ir_measures'
    values on the run itself, topic by topic."""
    from nteval.formats.trec import canonical
    from nteval.protocols import get
    from nteval.runs import drop_held
    from nteval.scores import evaluate_runs

    proto = get(protocol)
    tset = proto.build(first200_index, proto.Spec(n_topics=60, seed=9), tmp_path)
    queries, qrels = tset.queries, tset.qrels
    held = {q: {q.split("-")[0], next(iter(qrels[q]))} for q in list(qrels)[:10]}  # some topics lose documents
    measures = ["RR", "AP", "Bpref", "P@5", "R@1000", "Success@10"]
    cells = [{"k1": 0.5, "b": 0.3}, {"k1": 1.8, "b": 0.9}]
    with Index(first200_index / "nt") as idx:
        got = idx.grid_evaluate(queries, 100, [idx.similarity("bm25", **c) for c in cells], qrels, measures, held)
        for c, params in enumerate(cells):
            idx.configure("bm25", **params)
            raw = drop_held(idx.batch_search(queries, 102), held)
            run = {q: canonical(raw.get(q, []), 100) for q in queries}
            ref = evaluate_runs({"r": run}, qrels, measures).per_topic["r"]
            per, empty = got[c]
            assert list(per) == list(qrels) and empty == sum(1 for q in queries if not run[q])
            for q in qrels:
                for m in measures:
                    assert per[q][m] == pytest.approx(ref[q][m], abs=1e-12), (params, q, m)


def _grid_class():
    from nteval.lucene import jvm

    return jvm.autoclass("nteval.GridSearch")


@pytest.mark.parametrize("n,k", [(0, 5), (1, 5), (5, 5), (6, 5), (999, 1000), (1000, 1000), (1001, 1000),
                                 (5000, 1000), (20000, 1000), (3000, 1)])
def test_selection_keeps_the_k_greatest(n, k):
    """The pass keeps each cell's k best hits by selection (a quickselect that falls back to a sort
    when its partitions degenerate): the k greatest, whatever order the values come in."""
    import random

    grid = _grid_class()
    rng = random.Random(n * 31 + k)
    seen: set[int] = set()
    while len(seen) < n:
        seen.add(rng.getrandbits(63) - 2**62)
    distinct = sorted(seen)
    rng.shuffle(distinct)
    for values in (distinct, sorted(distinct), sorted(distinct, reverse=True),
                   sorted(distinct)[::2] + sorted(distinct)[1::2][::-1]):  # organ pipe
        assert list(grid.best(values, k)) == sorted(values)[-k:]


def test_packed_hits_order_as_lucene_ranks():
    """A hit packed in one long orders as Lucene ranks: higher score first, then the earlier docid;
    -0 and +0 tie; the score and the docid rank come back unchanged."""
    import random

    grid = _grid_class()
    rng = random.Random(5)
    scores = [0.0, -0.0, 1.0, -1.0, 3.5, 3.5, 1e-30, -1e-30, 12.25, 1e30] + [rng.uniform(-5, 40) for _ in range(200)]
    hits = [(s, r) for r, s in enumerate(scores)] + [(3.5, 1000), (0.0, 1001)]
    import numpy as np

    hits = [(float(np.float32(s)), r) for s, r in hits]
    by_lucene = sorted(hits, key=lambda h: (h[0], -h[1]))  # worst first
    packed = sorted(hits, key=lambda h: grid.pack(h[0], h[1]))
    assert packed == by_lucene
    for s, r in hits:
        p = grid.pack(s, r)
        assert grid.score(p) == s and grid.rank(p) == r
