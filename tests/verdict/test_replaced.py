"""A run into an OUT that holds an earlier verdict says what it replaces (item 11 of issue 40: the
README's notebook snippet turned a 300-topic verdict with the user's own run into a 100-topic one
without a word) and keeps the earlier results.json."""
from __future__ import annotations

import json

from nteval.experiment import run_protocol


def test_a_verdict_replaced_in_the_same_out_is_said_and_kept(first200_index, tmp_path, capsys):
    (tmp_path / "s.yaml").write_text("- {name: bm25, algorithm: bm25}\n- {name: qld, algorithm: qld}\n"
                                     "- {name: mine, algorithm: bm25, params: {k1: 2.0}}\n")
    (tmp_path / "s2.yaml").write_text("- {name: bm25, algorithm: bm25}\n- {name: qld, algorithm: qld}\n")
    out = tmp_path / "answer"
    kw = dict(progress=False, min_topics=10, seed=2)
    first = run_protocol("focused", first200_index, out, n_topics=30, systems=str(tmp_path / "s.yaml"),
                         task="known-item", **kw)
    assert "replaced" not in first
    capsys.readouterr()
    again = run_protocol("focused", first200_index, out, n_topics=30, systems=str(tmp_path / "s.yaml"),
                         task="known-item", **kw)  # the same verdict again: nothing to say
    assert "replaced" not in again and "note:" not in capsys.readouterr().err
    second = run_protocol("focused", first200_index, out, n_topics=20, systems=str(tmp_path / "s2.yaml"), **kw)
    err = capsys.readouterr().err
    assert second["replaced"]["changes"] == ["30 topics → 20", "system mine no longer in it", "task known-item → none"]
    assert f"note: {out / 'results.json'} held an earlier verdict (30 topics → 20; system mine no longer in it; task " \
           "known-item → none): replaced by this run's; the earlier one is kept as results.previous.json" in err
    kept = json.loads((out / "results.previous.json").read_text())
    assert kept["n_topics"] == 30 and "mine" in kept["systems"]
