"""External systems: TREC runs given with --runs or a systems YAML's ``run:``, Python callables and
external programs — declared, consented to, validated and run on a real PubMed index through the
real protocols."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import FORTY_TOPICS as ARGS
from conftest import TESTS, cli, one_line_error, retag
from pybm25 import PyBM25

from nteval.errors import InputError


@pytest.fixture
def focused_out(first200_index, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ext") / "f"
    r = cli("focused", "--index", first200_index, "--systems", "default", "--out", out, *ARGS)
    assert r.exit_code == 0, r.output
    return out


def test_external_runs_join_the_experiment(first200_index, focused_out, tmp_path):
    runs = tmp_path / "runs"
    retag(focused_out / "runs" / "bm25.run", runs / "a.run", "their_bm25")
    qids = sorted({line.split()[0] for line in (focused_out / "runs" / "bm25.run").read_text().splitlines()})
    half = set(qids[: len(qids) // 2])
    retag(focused_out / "runs" / "bm25.run", runs / "b.txt", "half_bm25", keep=lambda c: c[0] in half)
    r = cli("focused", "--index", first200_index, "--systems", "default", "--runs", runs, "--out", focused_out, *ARGS)
    assert r.exit_code == 0, r.output
    res = json.loads((focused_out / "results.json").read_text())
    assert res["systems"]["their_bm25"] == res["systems"]["bm25"]
    assert res["system_notes"]["half_bm25"]["topics_without_results"] == len(qids) - len(half)
    assert "half_bm25: no results for" in r.output and "their_bm25" in r.output
    per = [line.split("\t") for line in (focused_out / "per_topic.tsv").read_text().splitlines()[1:]]
    half_rr = {q: float(v) for s, q, m, v in per if s == "half_bm25" and m == "RR"}
    bm25_rr = {q: float(v) for s, q, m, v in per if s == "bm25" and m == "RR"}
    assert len(half_rr) == len(qids)  # missing topics are scored (0), as trec_eval -c
    assert all(half_rr[q] == (bm25_rr[q] if q in half else 0.0) for q in qids)
    sig = (focused_out / "significance.tsv").read_text()
    assert "their_bm25" in sig  # in the verdict's paired tests too


def test_bad_external_runs_are_one_line_errors(first200_index, focused_out, tmp_path):
    src = focused_out / "runs" / "bm25.run"
    base = ["focused", "--index", first200_index, "--systems", "default", "--out", focused_out, *ARGS]
    wrong = tmp_path / "wrong"
    retag(src, wrong / "a.run", "wrong_topics", edit=lambda c: [c[0] + "0", *c[1:]])
    one_line_error(cli(*base, "--runs", wrong), "system 'wrong_topics'", "not this experiment's")
    foreign = tmp_path / "foreign"
    n = {"i": 0}

    def spoil(c):
        n["i"] += 1
        return [c[0], c[1], f"X{n['i']}", *c[3:]] if n["i"] % 5 == 0 else c

    retag(src, foreign / "a.run", "other_corpus", edit=spoil)
    one_line_error(cli(*base, "--runs", foreign), "system 'other_corpus'", "not in this collection")
    clash = tmp_path / "clash"
    retag(src, clash / "a.run", "same")
    retag(src, clash / "b.run", "same")
    one_line_error(cli(*base, "--runs", clash), "run tag 'same' is also the tag of")
    taken = tmp_path / "taken"
    retag(src, taken / "a.run", "bm25")
    one_line_error(cli(*base, "--runs", taken), "has the name of a system already in the set")
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "x.run").write_text("1 Q0 d 1 not-a-number tag\n")
    one_line_error(cli(*base, "--runs", garbage), "x.run", "line 1")
    # the zoo's results are intact after every refusal
    assert json.loads((focused_out / "results.json").read_text())["systems"]["bm25"]["RR"] > 0


def test_yaml_declares_external_runs_callables_and_commands(tmp_path, monkeypatch):
    from nteval.systems.base import load_systems

    monkeypatch.setenv("NTEVAL_ALLOW_CODE", "1")  # (callables and commands: see test_code_needs_consent)
    (tmp_path / "r.run").write_text("1 Q0 d 1 1.0 t\n")
    ok = tmp_path / "ok.yaml"
    ok.write_text("- {name: bm25, algorithm: bm25}\n- {name: mine, run: r.run}\n"
                  "- {name: fn, callable: 'pybm25:main', version: 1}\n"
                  "- {name: cmd, command: 'prog {topics} {run}', version: v2}\n"
                  "- {name: mix, algorithm: linear, params: {systems: [bm25, mine], weights: [1, 2]}}\n")
    systems = {s.name: s for s in load_systems(ok)}
    assert systems["mine"].params["run"] == str((tmp_path / "r.run").resolve())
    assert systems["cmd"].params["command"] == ["prog", "{topics}", "{run}"]
    key = systems["mine"].key()
    (tmp_path / "r.run").write_text("1 Q0 d 1 2.0 t\n")
    assert load_systems(ok)[1].key() != key  # a changed run file is a new run
    for body, needle in [("- {name: f, callable: 'm:f'}\n", "needs a version"),
                         ("- {name: f, run: r.run, callable: 'm:f'}\n", "give one of run"),
                         ("- {name: f, run: nope.run}\n", "no such run file"),
                         ("- {name: f, command: 'prog {topics}', version: 1}\n", "must write its run to {run}"),
                         ("- {name: f, algorithm: linear, params: {systems: [a], weights: [1, 2]}}\n", "2 weights for 1")]:
        bad = tmp_path / "bad.yaml"
        bad.write_text(body)
        with pytest.raises(InputError, match=needle.replace("{", r"\{").replace("}", r"\}")):
            load_systems(bad)


def test_code_needs_consent(tmp_path, monkeypatch):
    """N12: a systems file with callable:/command: runs code; it is refused without --allow-code
    (listing it runs nothing and is fine)."""
    from nteval.systems.base import load_systems

    monkeypatch.delenv("NTEVAL_ALLOW_CODE", raising=False)
    yml = tmp_path / "code.yaml"
    yml.write_text("- {name: bm25, algorithm: bm25}\n- {name: cmd, command: 'prog {topics} {run}', version: 1}\n")
    with pytest.raises(InputError, match=r"system 'cmd' runs code \(command: .*give --allow-code"):
        load_systems(yml)
    assert [s.name for s in load_systems(yml, listing=True)] == ["bm25", "cmd"]
    r = cli("systems", yml)
    assert r.exit_code == 0 and "cmd" in r.output
    monkeypatch.setenv("NTEVAL_ALLOW_CODE", "1")
    assert len(load_systems(yml)) == 2


def test_python_callable_and_external_program_are_systems(first200_index, tmp_path):
    from nteval.experiment import run_focused
    from nteval.systems.base import load_systems
    from nteval.systems.external import callable_system, command_system
    from nteval.systems.sets import builtin_systems

    bm25 = [s for s in load_systems(builtin_systems("default")) if s.name in ("bm25", "disjunctive_1")]
    py = PyBM25(first200_index)
    cmd = [sys.executable, str(TESTS / "pybm25.py"), str(first200_index), "{topics}", "{run}", "{k}"]
    systems = [*bm25, callable_system("pybm25", py.search, "1"), command_system("pybm25_cli", cmd, "1")]
    out = tmp_path / "f"
    res = run_focused(first200_index, out, n_topics=40, min_topics=10, systems=systems, progress=False)
    rr = {n: v["RR"] for n, v in res["systems"].items()}
    assert rr["pybm25"] == rr["pybm25_cli"]  # the same code in-process and as a program
    assert abs(rr["pybm25"] - rr["bm25"]) < 0.1 and rr["pybm25"] > rr["disjunctive_1"]
    assert py.calls == 1

    def boom(queries, k):
        raise RuntimeError("service unavailable")

    # same version: the cached run is reused, the function is not called again
    res2 = run_focused(first200_index, out, n_topics=40, min_topics=10, progress=False,
                       systems=[*bm25, callable_system("pybm25", boom, "1")])
    assert res2["systems"]["pybm25"] == res["systems"]["pybm25"]
    # a new version is computed: the failure is one line naming the system, the others' runs stay
    with pytest.raises(InputError, match="system 'pybm25': its search raised RuntimeError: service unavailable"):
        run_focused(first200_index, out, n_topics=40, min_topics=10, progress=False,
                    systems=[*bm25, callable_system("pybm25", boom, "2")])
    assert (out / "runs" / "bm25.run").is_file() and (out / "results.json").is_file()
    for garbage, needle in [(lambda q, k: [1, 2], "must return {qid"),
                            (lambda q, k: {x: [("d", float("nan"))] for x in q}, "is not finite"),
                            (lambda q, k: {x: "d1 d2" for x in q}, "a ranking must be"),
                            (lambda q, k: {"no-such-topic": []}, "not this experiment's"),
                            # a run file cannot hold it: read back, " 123" became "123" (a review found it)
                            (lambda q, k: {x: [(" 123", 1.0)] for x in q}, "contains whitespace")]:
        with pytest.raises(InputError, match=needle.replace("{", r"\{")):
            run_focused(first200_index, out, n_topics=40, min_topics=10, progress=False,
                        systems=[*bm25, callable_system("bad", garbage, "1")])
    failing = [sys.executable, "-c", "import sys; sys.exit('index not found')", "{run}"]
    with pytest.raises(InputError, match="system 'prog': its command exited with status 1: index not found"):
        run_focused(first200_index, out, n_topics=40, min_topics=10, progress=False,
                    systems=[*bm25, command_system("prog", failing, "1")])

