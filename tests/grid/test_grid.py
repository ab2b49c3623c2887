"""`nteval grid` on real indexes: axes, cells, outputs, agreement with the protocol commands,
parallel workers, and resuming after a real kill."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import HANG, cli, retag
from pybm25 import PyBM25

from nteval.errors import InputError
from nteval.experiment import run_focused
from nteval.grid import parse_axis, run_grid
from nteval.grid.spec import grid_systems
from nteval.systems.base import make_system


def test_axes_are_exact_decimal_ranges_or_lists():
    b = parse_axis("b=0.0:1.0:0.1")
    assert b.values == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)  # no 0.30000000000000004
    assert parse_axis("k1 = 0.9, 1.2 ,2").values == (0.9, 1.2, 2.0)
    assert parse_axis("mu=500:2000:500").values == (500.0, 1000.0, 1500.0, 2000.0)
    for bad in ["k1", "k1=", "k1=0.2:3.0", "k1=1:0:0.1", "k1=0:1:0", "k1=a,b", "k1=0.5,0.5", "k1=nan"]:
        with pytest.raises(InputError, match="--param"):
            parse_axis(bad)


def test_cells_are_validated_against_the_algorithm():
    bm25 = make_system("bm25", "bm25")
    cells = grid_systems(bm25, [parse_axis("k1=0.5,1.0"), parse_axis("b=0.2:0.4:0.1")])
    assert [p for p, _ in cells][:2] == [{"k1": 0.5, "b": 0.2}, {"k1": 0.5, "b": 0.3}]
    assert len({s.key() for _, s in cells}) == 6
    with pytest.raises(InputError, match=r"--param b=1\.1: .*within \[0, 1\]"):
        grid_systems(bm25, [parse_axis("b=0.9:1.2:0.1")])
    with pytest.raises(InputError, match="not a numeric parameter of bm25.*gridable: k1, b"):
        grid_systems(bm25, [parse_axis("mu=100,200")])
    with pytest.raises(InputError, match="one or two"):
        grid_systems(bm25, [parse_axis("k1=1,2"), parse_axis("b=0.1,0.2"), parse_axis("k1=3,4")])
    rm3 = grid_systems(make_system("x", "bm25_rm3"), [parse_axis("fb_terms=5:20:5")])
    assert [s.params["fb_terms"] for _, s in rm3] == [5, 10, 15, 20]
    with pytest.raises(InputError, match="whole number"):
        grid_systems(make_system("x", "bm25_rm3"), [parse_axis("fb_docs=1.5,2")])


def test_grid_outputs_and_agreement_with_nteval_focused(first200_index, tmp_path):
    res = run_grid(first200_index, tmp_path / "g", [parse_axis("k1=0.5,0.9"), parse_axis("b=0.4,0.8")],
                   protocol="both", n_topics=40, seed=3, jobs=2, progress=False, min_topics=10)
    out = tmp_path / "g"
    rows = (out / "grid.tsv").read_text().splitlines()
    assert rows[0] == "protocol\tk1\tb\tmeasure\tvalue\ttopics"
    assert len(rows) == 1 + 4 * (1 + 2)  # 4 cells: focused RR + high-recall AP, Bpref
    assert res["cells"] == {"per_protocol": 4, "total": 8, "computed": 8, "reused": 0}
    for name in ("grid_focused_RR.png", "grid_highrecall_AP.png", "grid_highrecall_Bpref.png", "grid_compare.png"):
        assert (out / name).stat().st_size > 10_000
    saved = json.loads((out / "grid.json").read_text())
    rr = saved["protocols"]["focused"]["measures"]["RR"]
    assert rr["best"]["value"] == max(rr["values"])
    assert rr["near_best"]["cells"] >= 1
    # the grid cell at BM25's defaults is exactly what `nteval focused` reports for bm25
    ref = run_focused(first200_index, tmp_path / "f", n_topics=40, seed=3, systems="default", progress=False, min_topics=10)
    cell = [float(r.split("\t")[4]) for r in rows[1:] if r.startswith("focused\t0.9\t0.4\tRR")]
    assert cell == [pytest.approx(ref["systems"]["bm25"]["RR"], abs=1e-6)]
    assert (out / "focused" / "topics.tsv").read_bytes() == (tmp_path / "f" / "topics.tsv").read_bytes()
    # item 10 (F4): the timing line says how the cells were computed (one pass over the postings per
    # protocol, on Java threads), not "with 1 worker(s)"
    from nteval.report.text import grid_summary

    timing = grid_summary(res).splitlines()[1]
    assert "in 2 passes over the postings (2 Java search threads)" in timing and "worker" not in timing, timing
    # same inputs again: nothing recomputed; another measure: recomputed under a new key
    again = run_grid(first200_index, out, [parse_axis("k1=0.5,0.9"), parse_axis("b=0.4,0.8")], protocol="both",
                     n_topics=40, seed=3, jobs=1, progress=False, min_topics=10)
    assert again["cells"]["computed"] == 0 and again["protocols"] == res["protocols"]
    other = run_grid(first200_index, out, [parse_axis("k1=0.5,0.9"), parse_axis("b=0.4,0.8")], protocol="focused",
                     measures=["nDCG@10"], n_topics=40, seed=3, progress=False, min_topics=10)
    assert other["cells"]["computed"] == 4


def test_one_parameter_grid_with_human_judgments(tmp_path):
    from nteval.demo import scifact_slice
    from nteval.index import build_index

    idx = tmp_path / "sf"
    build_index([scifact_slice() / "corpus.jsonl.gz"], idx)
    res = run_grid(idx, tmp_path / "g", [parse_axis("mu=200,1000,3000")], system="qld", protocol="focused",
                   queries=scifact_slice() / "queries.jsonl", qrels=scifact_slice() / "qrels.tsv", n_topics=60,
                   progress=False)
    assert set(res["protocols"]) == {"focused", "human"}
    assert res["protocols"]["human"]["index"] == "all"
    assert len(res["protocols"]["human"]["measures"]["nDCG@10"]["values"]) == 3
    assert (tmp_path / "g" / "grid_human_nDCG_at_10.png").is_file() and (tmp_path / "g" / "grid_compare.png").is_file()


def _cells(out):
    return {p: p.stat().st_mtime_ns for p in (out / "cells").glob("*/*.json")}


def test_killed_grid_resumes_without_recomputing_or_losing_cells(first200_index, tmp_path):
    """SIGKILL a real parallel grid mid-way (no chance to clean up), then re-run it."""
    args = [sys.executable, "-m", "nteval.cli", "grid", "--index", str(first200_index), "--protocol", "both",
            "--param", "k1=0.3:1.5:0.3", "--param", "b=0.2:0.8:0.3", "--topics", "60", "--seed", "5", "--quiet", "--min-topics", "10"]
    out = tmp_path / "killed"
    p = subprocess.Popen(args + ["--out", str(out), "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None and len(_cells(out)) < 6:
        time.sleep(0.02)
    os.killpg(p.pid, signal.SIGKILL)  # the parent and its workers
    p.wait(timeout=30)
    before = _cells(out)
    assert 6 <= len(before) < 30, "kill the grid while it is running"
    assert not (out / "grid.tsv").exists()
    for path in before:  # every stored cell is complete
        assert json.loads(path.read_text())["measures"]
    resumed = subprocess.run(args + ["--out", str(out), "--jobs", "2"], capture_output=True, text=True, timeout=HANG)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{30 - len(before)} computed, {len(before)} reused" in resumed.stdout
    after = _cells(out)
    assert len(after) == 30 and all(after[p] == t for p, t in before.items())  # not recomputed
    assert not list((out / "cells").glob("*/.*"))  # no temp file left behind
    full = subprocess.run(args + ["--out", str(tmp_path / "full"), "--jobs", "1"], capture_output=True, text=True,
                          timeout=HANG)
    assert full.returncode == 0, full.stderr
    assert (out / "grid.tsv").read_bytes() == (tmp_path / "full" / "grid.tsv").read_bytes()


def test_bad_grid_input_is_one_line_and_writes_nothing(first200_index, tmp_path):
    out = tmp_path / "g"
    for extra, msg in [(["--param", "b=0.5:1.5:0.5"], "--param b=1.5"), (["--param", "k1=x"], "--param k1=x"),
                       (["--param", "k1=1,2", "--system", "nope"], "--system 'nope'"),
                       (["--param", "k1=1,2", "--qrels", str(tmp_path / "missing.txt")], "human judgments need both"),
                       (["--param", "k1=1,2", "--protocol", "none"], "--protocol none needs human judgments"),
                       (["--param", "k1=1,2", "--measure", "NoSuchMeasure"], "NoSuchMeasure")]:
        r = subprocess.run([sys.executable, "-m", "nteval.cli", "grid", "--index", str(first200_index), "--out", str(out),
                            *extra], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not out.exists()
    with pytest.raises(InputError, match="--judged"):  # the API checks the high-recall options before writing too
        run_grid(first200_index, out, [parse_axis("k1=1,2")], protocol="both", judged="bogus", progress=False)
    assert not out.exists()


def test_grid_holdout_cell_equals_nteval_highrecall_holdout(first200_index, tmp_path):
    """A BM25 cell under --holdout (held-out documents removed from its ranking) scores exactly what
    `nteval highrecall --holdout` (a real held-out index copy per fold) gives bm25."""
    from nteval.experiment import run_highrecall

    res = run_grid(first200_index, tmp_path / "g", [parse_axis("k1=0.9"), parse_axis("b=0.4")], protocol="highrecall",
                   n_topics=40, seed=3, progress=False, min_topics=10, holdout=True)
    ref = run_highrecall(first200_index, tmp_path / "h", n_topics=40, seed=3, systems="default", progress=False,
                         min_topics=10, holdout=True)
    assert res["protocols"]["highrecall"]["index"] == "nt-holdout"
    assert res["protocols"]["highrecall"]["measures"]["AP"]["values"] == [pytest.approx(ref["systems"]["bm25"]["AP"], abs=1e-6)]
    tied = res["protocols"]["highrecall"]["measures"]["AP"]["indistinguishable_from_best"]
    assert tied["cells"] == 1 and tied["correction"].startswith("Holm")
    with pytest.raises(InputError, match="feedback"):
        run_grid(first200_index, tmp_path / "r", [parse_axis("fb_terms=5,10")], system="bm25_rm3", protocol="highrecall",
                 n_topics=40, seed=3, progress=False, min_topics=10, holdout=True)


def test_grid_scores_reference_systems_beside_its_cells(first200_index, dense_cache, tmp_path):
    """A dense model, a callable and an external run as references of a BM25 grid: scored on the
    grid's own topics (the same as the protocol run's), drawn on its maps, listed in grid.tsv."""
    from nteval.experiment import run_focused
    from nteval.grid import parse_axis, run_grid
    from nteval.systems.base import make_system
    from nteval.systems.external import callable_system

    py = PyBM25(first200_index)
    refs = [make_system("dense", "dense"), callable_system("pybm25", py.search, "1")]
    res = run_focused(first200_index, tmp_path / "f", n_topics=40, min_topics=10, progress=False,
                      systems=[make_system("bm25", "bm25"), *refs])
    runs = tmp_path / "runs"
    retag(tmp_path / "f" / "runs" / "bm25.run", runs / "x.run", "their_bm25")
    r = cli("grid", "--index", first200_index, "--protocol", "focused", "--param", "k1=0.6,0.9", "--topics", "40",
            "--min-topics", "10", "--runs", runs, "--out", tmp_path / "g", "--quiet")
    assert r.exit_code == 0, r.output
    grid = json.loads((tmp_path / "g" / "grid.json").read_text())
    assert grid["protocols"]["focused"]["references"]["their_bm25"]["RR"] == pytest.approx(res["systems"]["bm25"]["RR"], abs=1e-6)
    assert "reference their_bm25" in r.output and "of 2 cells score higher" in r.output
    g2 = run_grid(first200_index, tmp_path / "g2", [parse_axis("k1=0.6,0.9")], protocol="focused", n_topics=40,
                  min_topics=10, references=refs, progress=False)
    got = g2["protocols"]["focused"]["references"]
    assert got["dense"]["RR"] == pytest.approx(res["systems"]["dense"]["RR"], abs=1e-6)
    assert got["pybm25"]["RR"] == pytest.approx(res["systems"]["pybm25"]["RR"], abs=1e-6)
    assert (tmp_path / "g2" / "grid.tsv").read_text().count("\tdense\n") == len(g2["protocols"]["focused"]["measures"])



def test_values_that_print_alike_under_g_stay_apart(first200_index, tmp_path):
    """L1: 1e9 and 999999999 both printed "1e+09" (grid.tsv, cell names, the tie test's keys,
    where the two cells merged into one)."""
    res = run_grid(first200_index, tmp_path / "g", [parse_axis("k1=1e9,999999999")], protocol="focused",
                   n_topics=30, min_topics=10, progress=False, plots=False)
    rows = [r.split("\t") for r in (tmp_path / "g" / "grid.tsv").read_text().splitlines()[1:]]
    assert [float(r[1]) for r in rows] == [1e9, 999999999.0] and rows[0][1] != rows[1][1]
    tied = res["protocols"]["focused"]["measures"]["RR"]["indistinguishable_from_best"]
    assert tied["cells"] == 2 and len(tied["params"]) == 2  # identical rankings: both tied with the best


def test_a_setting_good_for_both_protocols_is_named():
    """Item 10 (F4): "a setting good for both exists" did not say which. Hand case: focused's best
    (k1=1.2) and high-recall's (k1=0.6) differ; focused cannot tell k1=0.6 from its best, so 0.6 is
    good for both."""
    from nteval.grid.run import best_cells_disagreement

    def proto(measure, best, tied):
        return {"measures": {measure: {"best": {"params": best}, "indistinguishable_from_best": {"params": tied}}}}

    a, b, c = {"k1": 1.2}, {"k1": 0.6}, {"k1": 0.9}
    d = best_cells_disagreement({"focused": proto("RR", a, [a, b, c]), "highrecall": proto("AP", b, [b, c])}, ["k1"])
    assert not d["disagree"] and d["good_for_both"] == b and d["tied_under_both"] == [b, c]
    assert d["text"].endswith("but high-recall's best, which the focused test cannot tell apart from its own best: a "
                              "setting good for both is k1=0.6 (2 cells cannot be told apart from the best under both "
                              "protocols)")
    d = best_cells_disagreement({"focused": proto("RR", a, [a]), "highrecall": proto("AP", b, [b])}, ["k1"])
    assert d["disagree"] and d["good_for_both"] is None and "disagree significantly" in d["text"]


def test_a_one_pass_grid_bar_counts_topics(first200_index, tmp_path, capsys):
    """Item 16 (F12): the bar sat at 0/2 cells while a pass ran; it now says how many topics the
    pass has scored."""
    import nteval.grid.cells as cells

    old = cells.PASS_CHUNK
    cells.PASS_CHUNK = 15
    try:
        run_grid(first200_index, tmp_path / "g", [parse_axis("k1=0.5,0.9")], protocol="focused", n_topics=40,
                 min_topics=10, progress=True, plots=False)
    finally:
        cells.PASS_CHUNK = old
    err = capsys.readouterr().err.replace("\r", "\n")
    for said in ("focused: 2 cells in one pass, 15/40 topics", "30/40 topics", "40/40 topics"):
        assert said in err, err[-500:]
