"""``nteval tune`` on a real PubMed index: seeded trials, folds that keep each fold's topics out of
its study, a study that survives kill -9, and one-line errors for bad ranges."""
from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from conftest import cli, one_line_error

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


@pytest.mark.parametrize("ranges, message", [
    (["k1=0.5:1", "k1=1:2"], "--param k1 given twice"),
    (["k1=1e-300:1e-299"], "this range rounds to the single value 0"),
    (["k1=1e-7:1"], "1e-07 rounds to 0 at tune's 6 decimals, and system bm25: k1 must be > 0"),
])
def test_ranges_given_twice_or_lost_to_rounding_are_refused_up_front(first200_index, tmp_path, ranges, message):
    with pytest.raises(InputError, match=re.escape(message)):
        run_tune(first200_index, tmp_path / "o", ranges, **KW)
    assert not (tmp_path / "o").exists()


def test_a_tuning_of_other_inputs_is_refused_and_force_starts_afresh(first200_index, tmp_path):
    """H1/H2: an OUT's studies are reused only by the tuning they belong to; a re-run with other
    ranges, another seed or another system is refused in one line, and --force gives what a fresh
    OUT gives (nothing of the old tuning leaks into it)."""
    out = tmp_path / "t"
    first = run_tune(first200_index, out, ["k1=0.2:2.0", "b=0.0:1.0"], **KW)
    before = (out / "tune.json").read_bytes()
    for ranges, change, says in ((["k1=3:5", "b=0.1:0.2"], {}, "ranges k1=0.2:2, b=0:1, not k1=3:5, b=0.1:0.2"),
                                 (["k1=0.2:2.0", "b=0.0:1.0"], {"seed": 4}, "seed 3, not 4"),
                                 (["k1=0.2:2.0", "b=0.0:1.0"], {"depth": 50}, "depth 1000, not 50"),
                                 (["mu=100:3000"], {"system": "qld"}, "system bm25 (bm25), not qld (qld)")):
        with pytest.raises(InputError, match=re.escape(f"holds a tuning of other inputs ({says})")):
            run_tune(first200_index, out, ranges, **{**KW, **change})
        assert (out / "tune.json").read_bytes() == before  # refused before anything is written
    res = cli("tune", "--index", first200_index, "--param", "k1=3:5", "--topics", 40, "--seed", 3, "--min-topics", 10,
              "--trials", 6, "--out", out, "--quiet")
    one_line_error(res, f"{out / 'tune.sqlite3'}: holds a tuning of other inputs (ranges", "--force to delete")
    # the same inputs resume (reuse) the study: same trials, nothing searched again
    again = run_tune(first200_index, out, ["k1=0.2:2.0", "b=0.0:1.0"], **KW)
    assert _trials(again) == _trials(first) and again["protocols"]["focused"]["settings_searched"] == 0
    forced = run_tune(first200_index, out, ["k1=3:5", "b=0.1:0.2"], **{**KW, "seed": 4}, force=True)
    fresh = run_tune(first200_index, tmp_path / "fresh", ["k1=3:5", "b=0.1:0.2"], **{**KW, "seed": 4})
    assert _trials(forced) == _trials(fresh)
    assert forced["protocols"]["focused"]["held_out_score"] == fresh["protocols"]["focused"]["held_out_score"]
    assert all(3 <= t["params"]["k1"] <= 5 for f in forced["protocols"]["focused"]["folds"] for t in f["trials"])


def test_a_study_on_other_topics_is_refused(first200_index, tmp_path):
    """The studies also record the digests of the topics and qrels they were run on."""
    out = tmp_path / "t"
    run_tune(first200_index, out, ["k1=0.2:2.0"], **{**KW, "trials": 2})
    db = sqlite3.connect(out / "tune.sqlite3")
    db.execute("UPDATE study_user_attributes SET value_json = replace(value_json, '\"topics\": \"', '\"topics\": \"0')"
               " WHERE key = 'nteval_judgments'")
    db.commit()
    db.close()
    with pytest.raises(InputError, match="was run on other topics or qrels than focused's now"):
        run_tune(first200_index, out, ["k1=0.2:2.0"], **{**KW, "trials": 2})


def _foreign(path):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE mine (a)")
    db.commit()
    db.close()


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_bytes(bytes(range(256)) * 400), "damaged (sqlite: file is not a database): delete the file"),
    (lambda p: p.write_bytes(p.read_bytes()[: 40000]), "damaged (sqlite: database disk image is malformed): delete"),
    (lambda p: (p.unlink(), p.mkdir()), "is not a file, so not the studies of a tuning nteval wrote: move it away"),
    (lambda p: (p.unlink(), _foreign(p)), "an SQLite database without Optuna's tables"),
])
def test_a_damaged_study_store_is_named_with_what_to_do(first200_index, tmp_path, damage, message):
    """L4: not "a bug in nteval": the file, what is wrong and what to do; --force deletes only what
    nteval wrote (a foreign or damaged file stays)."""
    out = tmp_path / "t"
    run_tune(first200_index, out, ["k1=0.2:2.0"], **{**KW, "trials": 2})
    store = out / "tune.sqlite3"
    damage(store)
    kept = store.read_bytes() if store.is_file() else None
    for force in (False, True):
        with pytest.raises(InputError, match=re.escape(message)) as err:
            run_tune(first200_index, out, ["k1=0.2:2.0"], **{**KW, "trials": 2}, force=force)
        assert str(err.value).startswith(str(store))
        assert (store.read_bytes() if store.is_file() else None) == kept


def _result(tuned, default, significant, recommended):
    return {"held_out_score": tuned, "default": {"params": {"k1": 0.9, "b": 0.4}, "score": default},
            "recommended": {"params": recommended, "score_in_sample": tuned},
            "comparison": {"pairs": [{"a": "tuned (cross-validated)", "b": "defaults", "significant": significant}]}}


def test_tune_advice_keeps_the_defaults_unless_tuning_wins_clearly_and_warns_at_edges():
    """Item 9 (F3): a 6-digit "recommended" setting next to "cannot be told apart from the
    defaults", a gain under the minimum meaningful difference said nothing, no edge warning."""
    from nteval.systems.system import make_system
    from nteval.tune import Range, tune_advice

    base = make_system("bm25", "bm25")
    ranges = (Range("k1", 0.3, 2.0), Range("b", 0.1, 1.0))
    # significant but +4.7 %: under the 5 % minimum meaningful difference → keep the defaults
    a = tune_advice(_result(0.7853, 0.75, True, {"k1": 1.98, "b": 0.99}), ranges, base)
    assert a["keep_defaults"] and a["reasons"] == [
        "its held-out gain (+4.7 %) is below the minimum meaningful difference (5 % of the better system's score)"]
    # k1 1.98 of [0.3, 2]: at the edge (k1 has no upper bound); b 0.99 of [0.1, 1]: b cannot exceed 1, no warning
    assert a["on_edge"] == [{"param": "k1", "value": 1.98, "bound": 2.0, "side": "high"}]
    # not separated by the test → keep, whatever the gain
    b = tune_advice(_result(0.90, 0.75, False, {"k1": 1.2, "b": 0.5}), ranges, base)
    assert b["keep_defaults"] and b["reasons"][0].startswith("the paired test cannot tell") and not b["on_edge"]
    # separated and +20 %: use it
    c = tune_advice(_result(0.90, 0.75, True, {"k1": 1.2, "b": 0.5}), ranges, base)
    assert not c["keep_defaults"] and c["held_out_gain_text"] == "+20.0 %"
    # a lower bound at the kind's own limit (b=0) is no edge either
    d = tune_advice(_result(0.90, 0.75, True, {"k1": 0.31, "b": 0.0}), (Range("k1", 0.3, 2.0), Range("b", 0.0, 1.0)), base)
    assert [e["param"] for e in d["on_edge"]] == ["k1"]


def test_tune_prints_its_advice(first200_index, tmp_path):
    from nteval.report.text import tune_summary

    res = run_tune(first200_index, tmp_path / "a", ["k1=0.2:2.0", "b=0.0:1.0"], **KW)
    text = tune_summary(res)
    advice = res["protocols"]["focused"]["advice"]
    assert ("advice: keep the defaults (k1=0.9, b=0.4): " in text) == advice["keep_defaults"]
    assert "groups that cannot be told apart, best first, separated by |" in text
    assert "recommended:" not in text  # the advice line says it, with the setting at 3 significant digits
