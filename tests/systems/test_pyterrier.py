"""PyTerrier both ways on a real PubMed index: a pipeline (a pure-Python transformer, then a PISA
retriever) is an nteval system, and the same NT topics as a PyTerrier dataset give pt.Experiment
the means nteval gives."""
from __future__ import annotations

import sys
import textwrap

import pytest

from nteval.errors import InputError
from nteval.experiment import run_protocol_scores

pt = pytest.importorskip("pyterrier")
pytest.importorskip("pyterrier_pisa")

MEASURES = ("RR", "Success@1", "Success@10", "nDCG@10", "R@1000")
PIPES = '''
import pyterrier as pt
import pyterrier_pisa as pp


def lower_then_pisa(collection):
    """A pure-Python transformer (the query lower-cased, its last word dropped when it has more
    than four) then a PISA BM25 retriever over the NT collection."""
    index = pp.PisaIndex(str(collection.cache_dir / "pisa"), threads=1, text_field="text")
    if not index.built():
        index.index(collection.get_corpus_iter())
    shorten = pt.apply.query(lambda r: " ".join(r["query"].lower().split()[:-1] if len(r["query"].split()) > 4
                                                else r["query"].lower().split()))
    return shorten >> index.bm25(k1=1.2, b=0.75, num_results=1000)


def broken(collection):
    raise RuntimeError("no index for you")


def not_a_pipeline(collection):
    return 42


def _rows(collection, score):
    import pandas as pd

    docs = [d["docno"] for _, d in zip(range(5), collection.get_corpus_iter())]

    def rank(df):
        rows = []
        for qid, q in zip(df["qid"], df["query"]):
            rows += [(qid, q, d, score(r)) for r, d in enumerate(docs)]
        return pd.DataFrame(rows, columns=["qid", "query", "docno", "score"])
    return pt.apply.generic(rank)


def twice(collection):
    """The first document at the top (score 10) and again at the bottom (score -5), for every topic."""
    import pandas as pd

    inner = _rows(collection, lambda r: 9.0 - r)
    return inner >> pt.apply.generic(lambda df: pd.concat([df, df.head(1).assign(score=-5.0)]))


def word_score(collection):
    return _rows(collection, lambda r: "abc" if r == 2 else 9.0 - r)
'''


@pytest.fixture
def pipes(tmp_path, monkeypatch):
    (tmp_path / "ntpipes.py").write_text(textwrap.dedent(PIPES))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("NTEVAL_ALLOW_CODE", "1")
    monkeypatch.setenv("NTEVAL_ENGINE_CACHE", str(tmp_path / "cache"))
    sys.modules.pop("ntpipes", None)
    yield tmp_path
    sys.modules.pop("ntpipes", None)


def test_pipeline_scored_by_nteval_equals_pt_experiment(first200_index, pipes):
    import ir_measures

    import nteval.pyterrier as ntpt

    (pipes / "s.yaml").write_text('- {name: bm25, algorithm: bm25}\n'
                                  '- {name: pt_pisa, pyterrier: "ntpipes:lower_then_pisa", version: "1"}\n')
    out = pipes / "f"
    res, scores = run_protocol_scores("focused", first200_index, out, systems=str(pipes / "s.yaml"), n_topics=60, seed=2,
                                      progress=False, min_topics=10)
    assert res["system_configs"]["pt_pisa"]["algorithm"] == "pyterrier"
    ds = ntpt.dataset(out)
    topics, qrels = ds.get_topics(), ds.get_qrels()
    assert list(topics.columns) == ["qid", "query"] and list(qrels.columns) == ["qid", "docno", "label"]
    assert len(topics) == res["n_topics"] and set(qrels["qid"]) == set(topics["qid"])
    import ntpipes

    from nteval.systems.pyterrier import Collection

    coll = Collection(ds.index_dir, ds.index_name, "-", pipes / "cache" / "own")
    frame = pt.Experiment([ntpipes.lower_then_pisa(coll)], topics, qrels,
                          eval_metrics=[ir_measures.parse_measure(m) for m in MEASURES], names=["pt"])
    row = frame.set_index("name").loc["pt"]
    for m in MEASURES:
        assert abs(row[m] - scores.means["pt_pisa"][m]) < 1e-6, (m, row[m], scores.means["pt_pisa"][m])
    # and the corpus PyTerrier reads is the one nteval searched
    docs = list(ds.get_corpus_iter())
    assert len(docs) == res["collection"]["nt"] and {d["docno"] for d in docs} >= set(qrels["docno"])


def test_a_transformer_from_python_is_a_system(first200_index, pipes):
    import nteval.pyterrier as ntpt

    docs = {"32997285": 3.0}
    rerank = pt.apply.doc_score(lambda r: docs.get(r["docno"], 0.0) + r["score"])
    import ntpipes

    def factory(collection):
        return ntpipes.lower_then_pisa(collection) >> rerank

    res, _ = run_protocol_scores("focused", first200_index, pipes / "g", n_topics=40, seed=2, progress=False,
                                 min_topics=10, systems=[ntpt.system("pisa_rerank", factory, version="a")])
    assert set(res["systems"]) == {"pisa_rerank"}


@pytest.mark.parametrize("target, message", [
    ("ntpipes:broken", "its search raised RuntimeError: no index for you"),
    ("ntpipes:not_a_pipeline", "its factory returned 'int', not a PyTerrier transformer"),
    ("ntpipes:missing", "cannot import 'ntpipes:missing'"),
    # H4: a docno returned twice for a topic was collapsed to its last row, silently
    ("ntpipes:twice", r"system 'p': topic '\w+' ranks document '\w+' twice"),
    # L10: a score that is not a number was "a bug in nteval" (ValueError)
    ("ntpipes:word_score", r"system 'p': topic '\w+': score 'abc' is not a number"),
])
def test_bad_pipelines_are_one_line(first200_index, pipes, target, message):
    (pipes / "s.yaml").write_text(f'- {{name: p, pyterrier: "{target}", version: "1"}}\n')
    with pytest.raises(InputError, match=message):
        run_protocol_scores("focused", first200_index, pipes / "o", systems=str(pipes / "s.yaml"), n_topics=20,
                            progress=False, min_topics=5)
