"""Issue 12 hardening: crashes, data loss and silently wrong numbers on hostile or odd input.

Each test failed (crash, traceback, wrong result) before its fix. Real data only: the bundled
PubMed slices, SciFact lines, tiny files written in tmp_path; Lucene is never mocked.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIRST200

from nteval.cli import main

ROOT = Path(__file__).resolve().parents[1]


def nteval(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """The CLI in a child process (a crash inside C code then fails the test, not the test run)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "nteval.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def one_line_error(stderr: str, *needles: str) -> str:
    err = stderr.strip()
    assert len(err.splitlines()) == 1, err[:2000]
    assert err.startswith("nteval: error: "), err[:2000]
    for n in needles:
        assert n in err, (n, err)
    return err


def write_qrels_and_run(tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    run = tmp_path / "sys.run"
    run.write_text("1 Q0 a 1 2.0 sys\n1 Q0 b 2 1.0 sys\n2 Q0 d 1 3.0 sys\n2 Q0 c 2 1.5 sys\n")
    return qrels, run


# --- 1. measures -------------------------------------------------------------------------------

@pytest.mark.parametrize("measure", ["P@0", "nDCG@0", "R@0", "Judged@0", "nDCG@1e3", "P@2.5", "P(rel=0)@10"])
def test_bad_measure_cutoff_is_a_one_line_error(tmp_path, measure):
    qrels, run = write_qrels_and_run(tmp_path)
    r = nteval("evaluate", "--qrels", str(qrels), "--measures", f"AP {measure}", str(run))
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    one_line_error(r.stderr, measure, "positive whole number")


def test_measure_no_evaluator_computes_is_refused(tmp_path):
    qrels, run = write_qrels_and_run(tmp_path)
    r = nteval("evaluate", "--qrels", str(qrels), "--measures", "alpha_nDCG@10", str(run))
    assert r.returncode == 2, r.stderr[-2000:]
    one_line_error(r.stderr, "alpha_nDCG@10")


def test_good_measures_still_evaluate(tmp_path):
    qrels, run = write_qrels_and_run(tmp_path)
    r = CliRunner().invoke(main, ["evaluate", "--qrels", str(qrels), "--measures", "P@1 nDCG@10 Judged@2 R@1000",
                                  "--json", str(run)])
    assert r.exit_code == 0, r.output
    assert '"P@1": 0.5' in r.output


def test_focused_bad_measure_fails_before_any_work(tmp_path, first200_index):
    out = tmp_path / "focused"
    r = nteval("focused", "--index", str(first200_index), "--topics", "5", "--measures", "RR P@0",
               "--out", str(out), "--quiet")
    assert r.returncode == 2, r.stderr[-2000:]
    one_line_error(r.stderr, "P@0")
    assert not out.exists()
