"""Enough topics, chosen for the user: ``--topics auto`` draws seeded, prefix-stable batches until the
ranking is stable (split-half τ ≥ 0.9), the eligible documents or the budget run out; without it,
an unstable ranking says how many topics the curve predicts."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nteval.cli import main
from nteval.experiment import run_protocol
from nteval.reliability import predict_topics, reliability_sentence
from nteval.topics.sample import SampleSpec, sample_ids


def test_the_sample_order_is_prefix_stable(sample_index):
    whole, n = sample_ids(sample_index, SampleSpec(n=120, seed=9))
    parts = [sample_ids(sample_index, SampleSpec(n=40, seed=9, offset=k * 40))[0] for k in range(3)]
    assert whole == parts[0] + parts[1] + parts[2] and n == 1699
    assert len(sample_ids(sample_index, SampleSpec(n=40, seed=9, offset=1690))[0]) == 9  # the pool's end


def _strip(res: dict) -> dict:
    return {k: v for k, v in res.items() if k != "timing"}


def test_auto_equals_the_fixed_count_it_stopped_at_and_is_deterministic(sample_index, tmp_path):
    kw = dict(systems="default", progress=False, min_topics=10, topics_batch=60, seed=3)
    a = run_protocol("highrecall", sample_index, tmp_path / "a", n_topics="auto", **kw)
    auto = a["auto"]
    assert auto["stopped"].startswith("stable: two disjoint halves") and a["topic_counts"]["requested"] == "auto"
    assert auto["steps"][-1]["split_half_tau"] >= 0.9 > (auto["steps"][-2]["split_half_tau"] if len(auto["steps"]) > 1 else 0)
    sampled = a["topic_counts"]["sampled"]
    assert sampled == 60 * a["topic_counts"]["batches"] and a["n_topics"] == a["topic_counts"]["used"]
    # the same documents as a fixed --topics of that many: the same topics, qrels and scores
    f = run_protocol("highrecall", sample_index, tmp_path / "f", n_topics=sampled, **kw)
    for name in ("topics.tsv", "qrels.txt"):
        assert sorted((tmp_path / "a" / name).read_text().splitlines()) == sorted((tmp_path / "f" / name).read_text().splitlines())
    assert a["systems"] == f["systems"]
    # same seed, run again into another OUT: byte-identical results apart from timings; into the same
    # OUT: every batch's runs reused
    b = run_protocol("highrecall", sample_index, tmp_path / "b", n_topics="auto", **kw)
    assert json.dumps(_strip(a), sort_keys=True).replace(str(tmp_path / "a"), "") == \
        json.dumps(_strip(b), sort_keys=True).replace(str(tmp_path / "b"), "")
    again = run_protocol("highrecall", sample_index, tmp_path / "a", n_topics="auto", **kw)
    assert all(t["reused"] for t in again["timing"].values()) and _strip(again) == _strip(a)


def test_auto_stops_at_the_budget_or_the_pool(first200_index, tmp_path):
    kw = dict(systems="default", progress=False, min_topics=10, seed=1)
    r = run_protocol("focused", first200_index, tmp_path / "p", n_topics="auto", topics_batch=50, topics_budget=100000,
                     **kw)
    assert r["auto"]["stopped"].startswith(("stable", "the eligible pool is exhausted"))
    if r["auto"]["stopped"].startswith("the eligible pool"):
        assert r["topic_counts"]["sampled"] == r["topic_counts"]["eligible"]
    r = run_protocol("focused", first200_index, tmp_path / "b", n_topics="auto", topics_batch=20, topics_budget=40, **kw)
    assert r["topic_counts"]["sampled"] <= 40 and (r["auto"]["stopped"].startswith("the budget of 40")
                                                   or r["auto"]["stopped"].startswith("stable"))


def test_auto_from_the_command_line_says_how_many_and_why_it_stopped(first200_index, tmp_path):
    r = CliRunner().invoke(main, ["focused", "--index", str(first200_index), "--topics", "auto", "--topics-budget", "60",
                                  "--min-topics", "10", "--systems", "default", "--out", str(tmp_path / "o"), "--quiet"])
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.strip().startswith("topics:"))
    assert "(--topics auto:" in line and "stopped because" in line
    # high-recall prints its own summary line (topics kept of those sampled) — the README's quick start step 2
    r = CliRunner().invoke(main, ["highrecall", "--index", str(first200_index), "--topics", "auto", "--topics-budget",
                                  "60", "--min-topics", "10", "--systems", "default", "--out", str(tmp_path / "h"),
                                  "--quiet"])
    assert r.exit_code == 0, r.output
    kept = next(x for x in r.output.splitlines() if x.startswith("topics kept"))
    used = json.loads((tmp_path / "h" / "results.json").read_text())["topic_counts"]
    assert kept.startswith(f"topics kept {used['used']} of {used['sampled']} sampled by --topics auto")
    r = CliRunner().invoke(main, ["run", "--protocol", "mesh", "--param", "n_topics=auto", "--index",
                                  str(first200_index), "--out", str(tmp_path / "m")])
    assert r.exit_code == 2 and "does not sample documents in a seeded order" in r.output


def test_predicted_topics_from_the_curve():
    curve = [{"topics": n, "tau_mean": 1 - 2 * n ** -0.5} for n in (10, 20, 50, 100, 200)]  # τ 0.9 at 400
    assert predict_topics(curve) == pytest.approx(400, abs=10)
    assert predict_topics(curve + [{"topics": 400, "tau_mean": 0.9}]) is None  # already reached
    assert predict_topics([{"topics": n, "tau_mean": 0.5} for n in (10, 20, 50)]) is None  # flat: no prediction
    # rising, but so slowly that the line would put tau 0.9 near a million topics: no prediction
    slow = [{"topics": n, "tau_mean": t} for n, t in ((10, 0.5), (20, 0.55), (50, 0.6))]
    assert predict_topics(slow) is None
    rel = {"measure": "RR", "split_half": {"topics": 200, "tau_mean": 0.859, "tau_lo": 0.7, "tau_hi": 0.95},
           "stable_tau": 0.9, "stable_from_topics": None, "predicted_topics": 400}
    s = reliability_sentence(rel, eligible=31668)
    assert "the curve predicts it at ~400 topics per half" in s and "--topics 800" in s and "--topics auto" in s
    assert "95 % of them between 0.700 and 0.950" in s
    assert "more than the 500 eligible documents" in reliability_sentence(rel, eligible=500)


def test_auto_with_systems_that_tie_or_one_system_or_one_topic(first200_index, tmp_path):
    """M2: systems that tie on every topic leave the split-half tau undefined (was a TypeError when
    the budget ran out); one system has no ranking to stabilize (refused up front). L6: the last
    batch is cut to the budget (--topics-budget 45 sampled 60 with batches of 20). M3: one topic
    is refused before any run, whatever --min-topics says (was scipy's bootstrap crashing)."""
    from nteval.errors import InputError

    (tmp_path / "same.yaml").write_text("- {name: a, algorithm: bm25}\n- {name: b, algorithm: bm25}\n")
    kw = dict(progress=False, min_topics=10, seed=1)
    r = run_protocol("focused", first200_index, tmp_path / "t", n_topics="auto", topics_batch=20, topics_budget=45,
                     systems=str(tmp_path / "same.yaml"), **kw)
    assert r["topic_counts"]["sampled"] == 45 and r["topic_counts"]["batches"] == 3
    assert r["auto"]["stopped"] == ("the budget of 45 sampled documents is spent (--topics-budget); split-half tau "
                                    "undefined (the systems tie on the topics of a half: no ranking to agree on): not "
                                    "yet stable")
    (tmp_path / "one.yaml").write_text("- {name: a, algorithm: bm25}\n")
    with pytest.raises(InputError, match="one system has no ranking to stabilize; give a number of topics"):
        run_protocol("focused", first200_index, tmp_path / "o", n_topics="auto", systems=str(tmp_path / "one.yaml"), **kw)
    with pytest.raises(InputError, match=r"--topics-budget 5 samples fewer documents than the floor of 10 topics"):
        run_protocol("focused", first200_index, tmp_path / "b", n_topics="auto", topics_budget=5, systems="default", **kw)
    with pytest.raises(InputError, match=r"only 1 usable topic \(asked for 1, .* a verdict needs at least 2"):
        run_protocol("focused", first200_index, tmp_path / "m", n_topics=1, systems=str(tmp_path / "same.yaml"),
                     **{**kw, "min_topics": 1})
    assert not (tmp_path / "m" / "runs").exists()


def test_compare_auto_then_the_same_topics_with_your_runs_reuses_every_batch_run(first200_index, tmp_path):
    """Item 12 (F6): auto stops per protocol, so compare takes one number per protocol
    (focused=N,highrecall=M) to give exactly auto's topics again; the systems' runs over them are
    put together from the batches instead of being searched again, and the verdicts are auto's."""
    from nteval.compare import run_compare

    kw = dict(systems="default", progress=False, min_topics=10, seed=5)
    out = tmp_path / "answer"
    auto = run_compare(first200_index, out, n_topics="auto", topics_batch=20, topics_budget=40, **kw)
    same = auto["answer"]["same_topics"]
    assert set(same) == {"focused", "highrecall"}
    again = run_compare(first200_index, out, n_topics=same, **kw)
    for p in ("focused", "highrecall"):
        assert all(t["reused"] for t in again[p]["timing"].values()), again[p]["timing"]
        assert again[p]["systems"] == auto[p]["systems"] and again[p]["topic_set"] == auto[p]["topic_set"]
    assert "replaced" not in again["focused"] and "replaced" not in again["highrecall"]
    r = CliRunner().invoke(main, ["focused", "--index", str(first200_index), "--topics", "focused=5,highrecall=3",
                                  "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "one number of topics per protocol (PROTOCOL=N,...) is for nteval compare" in r.output
    r = CliRunner().invoke(main, ["compare", "--index", str(first200_index), "--topics", "focused=5",
                                  "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "give both, focused=N,highrecall=M" in r.output
