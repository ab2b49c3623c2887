"""Results as DataFrames: the tables nteval prints, the per-topic values and the verdict's groups."""
from __future__ import annotations

import pytest

import nteval
from nteval.errors import InputError

pd = pytest.importorskip("pandas")


def test_frames_hold_what_results_json_holds(first200_index, tmp_path):
    res = nteval.run_focused(first200_index, tmp_path / "f", n_topics=40, seed=3, systems="default", progress=False,
                             min_topics=10)
    means = nteval.frames.means(res)
    assert list(means.index) == list(res["verdict"]["scores"]) and set(means.columns) == set(res["measures"])
    assert means.loc["bm25", "RR"] == res["systems"]["bm25"]["RR"]
    per = nteval.frames.per_topic(tmp_path / "f")
    assert per.index.names == ["system", "qid"] and len(per) == len(res["systems"]) * res["n_topics"]
    # the means are the means of the per-topic values (6 decimals, as results.json rounds them)
    for system in res["systems"]:
        assert round(per.loc[system, "RR"].mean(), 6) == pytest.approx(res["systems"][system]["RR"], abs=1e-6)
    groups = nteval.frames.groups(tmp_path / "f")
    assert list(groups.index) == list(res["verdict"]["scores"])
    assert all(lo <= m <= hi for m, lo, hi in zip(groups["mean"], groups["ci_low"], groups["ci_high"]))
    assert groups.iloc[0]["groups"][0] == 1
    with pytest.raises(InputError, match="no per_topic.tsv"):
        nteval.frames.per_topic(tmp_path)
