"""Grid and correlate take any registered protocol: the two added ones, on the bundled
pubmed20n0014 slice (real MeSH headings and vernacular titles), agree with `nteval run`."""
from __future__ import annotations

import pytest

from nteval.correlate.agreement import run_correlate
from nteval.experiment import run_protocol
from nteval.grid import parse_axis, run_grid

MESH = {"min_docs": 2, "max_docs": 10}


def test_grid_under_mesh_and_crosslingual_matches_run(first100_index, tmp_path):
    g = run_grid(first100_index, tmp_path / "g", [parse_axis("k1=0.9,1.5")], protocol="mesh,crosslingual",
                 protocol_params={"mesh": MESH}, progress=False, min_topics=3)
    assert set(g["protocols"]) == {"mesh", "crosslingual"}
    assert g["protocols"]["mesh"]["index"] == "all" and g["protocols"]["crosslingual"]["index"] == "nt"
    m = run_protocol("mesh", first100_index, tmp_path / "m", systems="default", progress=False, min_topics=3, **MESH)
    c = run_protocol("crosslingual", first100_index, tmp_path / "c", systems="default", progress=False, min_topics=3)
    # the grid cell at Anserini's default k1 0.9 (b 0.4) is the shipped bm25 system under `nteval run`
    assert g["protocols"]["mesh"]["measures"]["AP"]["values"][0] == pytest.approx(m["systems"]["bm25"]["AP"], abs=1e-6)
    assert g["protocols"]["crosslingual"]["measures"]["RR"]["values"][0] == pytest.approx(c["systems"]["bm25"]["RR"],
                                                                                          abs=1e-6)


def test_correlate_sets_any_protocol_against_the_yardstick(first100_index, tmp_path):
    """MeSH judgments as the yardstick (NLM's indexers, not ad hoc judges) for the cross-lingual
    protocol's ranking: correlate runs the protocols it is given and their declared pairs."""
    run_protocol("mesh", first100_index, tmp_path / "m", systems="default", progress=False, min_topics=3, **MESH)
    rep = run_correlate(first100_index, tmp_path / "m" / "topics.tsv", tmp_path / "m" / "qrels.txt", tmp_path / "r",
                        systems="default", n_boot=50, progress=False, min_topics=3, min_human_topics=10,
                        protocols=("crosslingual",))
    assert [(p["nt"], p["nt_measure"], p["human_measure"]) for p in rep["pairs"]] == [("crosslingual", "RR", "AP")]
    assert set(rep["verdict"]) == {"crosslingual"} and (tmp_path / "r" / "crosslingual" / "results.json").is_file()
    lo, hi = rep["pairs"][0]["ci95"]["kendall"]
    assert lo <= rep["pairs"][0]["stats"]["kendall"]["value"] <= hi
