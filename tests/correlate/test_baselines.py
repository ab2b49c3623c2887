"""Run-based judgment-free baselines: hand cases, then real TREC-COVID runs."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import cli, shared

from nteval.cli import main
from nteval.correlate.baselines import mean_relevant, reference_count_qrels, soboroff_qrels

RUNS = {
    "A": {"q1": [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)]},
    "B": {"q1": [("d2", 3.0), ("d1", 2.0), ("d4", 1.0)]},
    "C": {"q1": [("d2", 2.0), ("d5", 1.0)]},
}


def test_reference_count_by_hand():
    # d2 retrieved by 3 runs, d1 by 2, the rest by 1 (ties → docid order)
    assert reference_count_qrels(RUNS, ["q1"], 2) == {"q1": {"d2": 1, "d1": 1}}
    assert reference_count_qrels(RUNS, ["q1"], 3) == {"q1": {"d2": 1, "d1": 1, "d3": 1}}
    assert reference_count_qrels(RUNS, ["q1"], 1, pool_depth=1) == {"q1": {"d2": 1}}


def test_soboroff_draws_distinct_pool_documents_seeded():
    a = soboroff_qrels(RUNS, ["q1"], 3, seed=4)
    assert len(a["q1"]) == 3 and set(a["q1"]) <= {"d1", "d2", "d3", "d4", "d5"}
    assert a == soboroff_qrels(RUNS, ["q1"], 3, seed=4)
    draws = [frozenset(soboroff_qrels(RUNS, ["q1"], 1, seed=s)["q1"]) for s in range(300)]
    # with duplicates in the pool, d2 (3 of 8 entries) is drawn far more often than d5 (1 of 8)
    assert draws.count(frozenset({"d2"})) > 2 * draws.count(frozenset({"d5"}))


def test_mean_relevant():
    assert mean_relevant({"a": {"x": 1, "y": 0, "z": 2}, "b": {"w": 1}}) == 2  # (2 + 1) / 2 rounded


def test_rank_baselines_on_trec_covid(tmp_path):
    import tarfile

    base = shared("trec-covid")
    with tarfile.open(base / "runs" / "trec-covid-round1-runs.tar.gz") as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)[:20]
        tar.extractall(tmp_path / "runs", members=members, filter="data")
    r = CliRunner().invoke(main, ["rank-baselines", "--runs", str(tmp_path / "runs"), "--qrels",
                                  str(base / "qrels" / "qrels-covid-round1.txt"), "--trials", "2",
                                  "--out", str(tmp_path / "rb.json")])
    assert r.exit_code == 0, r.output + r.stderr
    import json

    res = json.loads((tmp_path / "rb.json").read_text())
    assert res["runs"] == 20 and res["topics"] == 30
    for b in ("reference_count", "soboroff"):
        assert res["correlations_vs_official"][b]["AP"]["kendall"]["value"] > 0.3


def test_too_few_runs(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "one.run").write_text("q1 Q0 a 1 1.0 s\n")
    (tmp_path / "q.txt").write_text("q1 0 a 1\n")
    r = CliRunner().invoke(main, ["rank-baselines", "--runs", str(tmp_path / "r"), "--qrels", str(tmp_path / "q.txt")])
    assert r.exit_code == 2 and "need at least 3" in r.stderr


def rank_baselines(*args: str):
    return cli("rank-baselines", *args)


def test_rank_baselines_reads_nteval_run_directories(first200_index, tmp_path):
    """A run directory nteval wrote (NAME.run beside NAME.meta.json) and the protocol directory above
    it both give the runs by system name, sidecars and results left out."""
    import json

    from nteval.experiment import run_focused

    out = tmp_path / "f"
    run_focused(first200_index, out, n_topics=40, seed=3, systems="default", progress=False, min_topics=10)
    systems = sorted(p.stem for p in (out / "runs").glob("*.run"))
    assert len(systems) >= 3 and any((out / "runs").glob("*.meta.json"))
    for src in (out / "runs", out):
        r = rank_baselines("--runs", str(src), "--qrels", str(out / "qrels.txt"), "--trials", "1", "--out", str(tmp_path / "rb.json"))
        assert r.exit_code == 0, r.output + r.stderr
        res = json.loads((tmp_path / "rb.json").read_text())
        assert sorted(res["scores"]["official"]) == systems
        assert res["topics"] == 40


def _tar(path, members):
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for name, kind in members:
            info = tarfile.TarInfo(name)
            if kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
            else:
                data = b"q1 Q0 d1 1 3.0 x\n"
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize("members, message", [
    ([("../escape.run", "file"), ("a.run", "file"), ("b.run", "file")], "outside the destination"),
    ([("link", "symlink"), ("a.run", "file"), ("b.run", "file")], "absolute path"),
    (None, "not a tar archive"),
])
def test_hostile_or_broken_tarballs_are_one_line_errors(tmp_path, members, message):
    src = tmp_path / "runs.tar.gz"
    if members is None:
        src.write_bytes(b"this is not an archive")
    else:
        _tar(src, members)
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    r = rank_baselines("--runs", str(src), "--qrels", str(tmp_path / "q.txt"))
    assert r.exit_code == 2 and message in r.stderr and "Traceback" not in r.output + r.stderr
    assert not (tmp_path / "escape.run").exists()


def _three_runs(tmp_path):
    (tmp_path / "r").mkdir()
    for i, n in enumerate("abc"):
        (tmp_path / "r" / f"{n}.txt").write_text(f"q1 Q0 d{i} 1 3.0 {n}\nq1 Q0 d9 2 2.0 {n}\n")
    return tmp_path / "r"


def test_qrels_sharing_no_topic_and_out_a_directory_are_refused(tmp_path):
    runs = _three_runs(tmp_path)
    (tmp_path / "q.txt").write_text("zz 0 d1 1\n")
    r = rank_baselines("--runs", str(runs), "--qrels", str(tmp_path / "q.txt"))
    assert r.exit_code == 2 and "share no topic" in r.stderr
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "o").mkdir()
    r = rank_baselines("--runs", str(runs), "--qrels", str(tmp_path / "q.txt"), "--out", str(tmp_path / "o"))
    assert r.exit_code == 2 and "--out is a directory" in r.stderr


def test_undefined_correlations_print_as_na(tmp_path):
    """Every run scores the same under the official qrels (none finds d1 at all): the correlations
    are undefined, printed n/a with a word why, not a crash."""
    runs = _three_runs(tmp_path)
    (tmp_path / "q.txt").write_text("q1 0 zzz 1\n")
    r = rank_baselines("--runs", str(runs), "--qrels", str(tmp_path / "q.txt"), "--trials", "1")
    assert r.exit_code == 0, r.output + r.stderr
    assert "n/a" in r.output and "every run tied" in r.output


def test_rank_baselines_reads_correlates_human_directory(correlated, tmp_path):
    """correlate's OUT/human (runs/ beside topics.tsv, per_topic.tsv, no results.json) gives its runs."""
    import json

    from nteval.demo import scifact_slice

    _r, out = correlated
    r = rank_baselines("--runs", str(out / "human"), "--qrels", str(scifact_slice() / "qrels.tsv"), "--trials", "1",
             "--out", str(tmp_path / "rb.json"))
    assert r.exit_code == 0, r.output + r.stderr
    res = json.loads((tmp_path / "rb.json").read_text())
    assert sorted(res["scores"]["official"]) == sorted(p.stem for p in (out / "human" / "runs").glob("*.run"))
