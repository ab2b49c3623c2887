"""``nteval tune`` on a real PubMed index: seeded trials, folds that keep each fold's topics out of
its study, a study that survives kill -9, and one-line errors for bad ranges."""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from nteval.errors import InputError
from nteval.tune import run_tune, topic_folds

pytest.importorskip("optuna")
KW = dict(n_topics=40, seed=3, min_topics=10, trials=6, folds=2, plots=False, progress=False)


def _trials(res):
    return [[(t["number"], t["params"], t["train_score"]) for t in f["trials"]] for f in res["protocols"]["focused"]["folds"]]


def test_same_seed_same_trials_and_folds_are_honest(first200_index, tmp_path):
    a = run_tune(first200_index, tmp_path / "a", ["k1=0.2:2.0", "b=0.0:1.0"], **KW)
    b = run_tune(first200_index, tmp_path / "b", ["k1=0.2:2.0", "b=0.0:1.0"], **KW)
    assert _trials(a) == _trials(b) and len(_trials(a)[0]) == 6
    p = a["protocols"]["focused"]
    # the folds: every topic in one, by its id's hash; a fold's best is chosen on the other topics only
    cache = {json.dumps(c["params"], sort_keys=True): c["per_topic"]
             for c in map(lambda f: json.loads(f.read_text()), (tmp_path / "a" / "focused" / "tune-cache").glob("*.json"))}
    qids = sorted(next(iter(cache.values())))
    parts = topic_folds(qids, 3, 2)
    assert sorted(parts[0] + parts[1]) == qids and abs(len(parts[0]) - len(parts[1])) <= 1
    for fold in p["folds"]:
        held = parts[fold["fold"]]
        train = [q for q in qids if q not in held]
        assert (fold["held_topics"], fold["train_topics"]) == (len(held), len(train))
        scores = cache[json.dumps(fold["best"], sort_keys=True)]
        assert fold["train_score"] == pytest.approx(sum(scores[q] for q in train) / len(train), abs=1e-6)
        assert fold["held_score"] == pytest.approx(sum(scores[q] for q in held) / len(held), abs=1e-6)
        # no trial of this fold scored higher on its training topics than the best it reports
        assert all(t["train_score"] <= fold["train_score"] for t in fold["trials"])
    assert p["held_out_score"] == pytest.approx(
        sum(p["folds"][f]["held_score"] * p["folds"][f]["held_topics"] for f in (0, 1)) / p["topics"], abs=1e-5)
    assert {g for grp in p["comparison"]["groups"] for g in grp} == {"tuned (cross-validated)", "defaults",
                                                                     "recommended (in-sample)"}


def test_a_killed_tuning_resumes_and_loses_no_finished_trial(first200_index, tmp_path):
    args = [sys.executable, "-m", "nteval", "tune", "--index", str(first200_index), "--param", "k1=0.2:2.0",
            "--param", "b=0.0:1.0", "--topics", "40", "--seed", "3", "--min-topics", "10", "--trials", "6",
            "--folds", "2", "--quiet"]
    whole = subprocess.run([*args, "--out", str(tmp_path / "whole")], capture_output=True, text=True)
    assert whole.returncode == 0, whole.stderr
    cut = tmp_path / "cut"
    p = subprocess.Popen([*args, "--out", str(cut)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def finished() -> int:
        try:
            db = sqlite3.connect(f"file:{cut / 'tune.sqlite3'}?mode=ro", uri=True, timeout=0.1)
            try:
                return db.execute("SELECT COUNT(*) FROM trials WHERE state = 'COMPLETE'").fetchone()[0]
            finally:
                db.close()
        except sqlite3.Error:
            return 0

    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None and finished() < 4:
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    assert p.returncode == -signal.SIGKILL
    before = finished()
    assert 4 <= before < 12
    again = subprocess.run([*args, "--out", str(cut)], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    a = json.loads((tmp_path / "whole" / "tune.json").read_text())
    b = json.loads((cut / "tune.json").read_text())
    strip = lambda res: [[(t["params"], t["train_score"]) for t in f["trials"]] for f in res["protocols"]["focused"]["folds"]]  # noqa: E731
    assert strip(a) == strip(b)  # the same trials, resumed or not
    assert a["protocols"]["focused"]["held_out_score"] == b["protocols"]["focused"]["held_out_score"]


@pytest.mark.parametrize("ranges, message", [
    (["b=0:2"], "b must be within [0, 1], got 2.0"),
    (["k1=2:1"], "with LOW < HIGH"),
    (["mu=10:100"], "a numeric parameter of bm25 (k1, b)"),
    (["k1=0.5"], "write k1=LOW:HIGH"),
])
def test_bad_ranges_are_one_line(first200_index, tmp_path, ranges, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(").replace(")", r"\)")):
        run_tune(first200_index, tmp_path / "o", ranges, **KW)
    assert not (tmp_path / "o").exists()
