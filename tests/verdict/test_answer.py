"""One answer a user can act on: a declared task's headline, both verdicts with where they disagree
and why, the study's evidence and the bias notes on a run's systems, configs."""
from __future__ import annotations

import json

import pytest
from conftest import cli

from nteval.answer import TASKS, check_task, disagreement_lines, disagreements, headline
from nteval.errors import InputError
from nteval.evidence import bias_notes, evidence, evidence_lines, families, study
from nteval.significance import groups


def _results(protocol: str, measure: str, scores: dict[str, float], separated: set[frozenset],
             pairs_eff: dict | None = None) -> dict:
    names = sorted(scores, key=lambda s: -scores[s])
    pairs = [{"a": a, "b": b, "diff": scores[a] - scores[b], "significant": frozenset((a, b)) in separated}
             for i, a in enumerate(names) for b in names[i + 1:]]
    eff_pairs = [{"a": p["a"], "b": p["b"], "ci95": [p["diff"] - 0.01, p["diff"] + 0.01],
                  "class": "different" if p["significant"] else "cannot be told apart"} for p in pairs]
    return {"protocol": protocol, "n_topics": 100, "index": "idx", "collection": {"all": 10, "nt": 9, "searched": "nt"},
            "system_configs": {n: {"algorithm": "bm25_rm3" if "rm3" in n else "bm25", "params": {}} for n in names},
            "verdict": {"measure": measure, "scores": {n: scores[n] for n in names},
                        "significance": {"pairs": pairs},
                        "groups": groups(names, [scores[n] for n in names], {frozenset((p["a"], p["b"])): p["significant"]
                                                                              for p in pairs}),
                        "effects": {"pairs": eff_pairs, "systems": {}, "mmd": {"rule": "5 % of the better system's score"}}}}


def test_check_task():
    assert check_task(None) is None and check_task("topical", "highrecall") == "topical"
    with pytest.raises(InputError, match="did you mean topical"):
        check_task("topcal")
    with pytest.raises(InputError, match="the focused protocol measures known-item search; topical search is measured "
                                         "by `nteval highrecall`"):
        check_task("topical", "focused")
    assert {p for p, _ in TASKS.values()} == {"focused", "highrecall"}


def test_headline_by_hand():
    r = _results("focused", "RR", {"a": 0.90, "b": 0.895, "c": 0.80}, {frozenset(("a", "c")), frozenset(("b", "c"))})
    h = headline("known-item", r, "idx (9 documents searched)")
    assert h["best"] == ["a", "b"] and h["runner_up"] == "c" and h["diff"] == pytest.approx(0.1)
    assert h["text"].startswith("For known-item search on idx (9 documents searched), the best group (2 systems no "
                                "paired test separates) is a (RR 0.900) and b (0.895);")
    assert "a is ahead of c by 0.100 RR" in h["text"] and h["bias"] == [] and "bias flag" not in h["text"]
    r = _results("focused", "RR", {"a": 0.9, "b": 0.89}, set())
    assert "no system can be told apart from a (RR 0.900): all 2 tie" in headline("known-item", r, "idx")["text"]
    # none separated from the best, but the groups split below it: not "all tie"
    r = _results("focused", "RR", {"a": 0.9, "b": 0.89, "c": 0.88}, {frozenset(("b", "c"))})
    h = headline("known-item", r, "idx")
    assert h["best"] == ["a", "b"] and h["runner_up"] is None and "all 3 tie" not in h["text"]
    assert "the paired test separates none of the 3 from it on these 100 topics, though its best group holds 2" in h["text"]


def test_headline_names_the_verdicts_group_1_by_one_rule():
    """Issue 39: "and 1 more" counted a system that group 1 leaves out. e is not separated from the
    best (a) but is from c, which is above it: group 1 stops at d, and so does the headline."""
    scores = {"a": 0.90, "b": 0.89, "c": 0.88, "d": 0.87, "e": 0.86, "f": 0.85, "g": 0.5}
    separated = {frozenset(("c", "e")), *(frozenset((x, "g")) for x in "abcdef"), frozenset(("a", "f"))}
    r = _results("focused", "RR", scores, separated)
    assert r["verdict"]["groups"][0] == ["a", "b", "c", "d"]
    h = headline("known-item", r, "idx")
    assert h["best"] == ["a", "b", "c", "d"] and "e (0.860)" not in h["text"]
    assert h["best_rule"].startswith("the best group: the verdict's group 1")
    assert "the best group (4 systems no paired test separates) is a (RR 0.900), b (0.890), c (0.880) and d (0.870);" \
        in h["text"] and h["runner_up"] == "f"
    # more than SHOWN systems: the count is of the group's own systems
    scores = {f"s{i}": 0.9 - i * 0.001 for i in range(8)} | {"z": 0.1}
    r = _results("focused", "RR", scores, {frozenset((s, "z")) for s in scores if s != "z"})
    h = headline("known-item", r, "idx")
    assert len(h["best"]) == 8 and "s3 (0.897), s4 (0.896) and 3 more;" in h["text"]


def test_headline_flags_a_bias_of_the_best_group():
    """Issue 39: the topical answer named RM3 best without its measured bias flag."""
    r = _results("highrecall", "AP", {"bm25_rm3": 0.30, "bm25": 0.20, "x": 0.1},
                 {frozenset(("bm25_rm3", "bm25")), frozenset(("bm25_rm3", "x")), frozenset(("bm25", "x"))})
    r["bias_notes"] = bias_notes("highrecall", r["system_configs"])
    h = headline("topical", r, "idx")
    assert h["best"] == ["bm25_rm3"] and h["text"].startswith("For topical search on idx, the best system is "
                                                              "bm25_rm3 [bias flag] (AP 0.300)")
    assert [b["family"] for b in h["bias"]] == ["expansion"] and h["bias"][0]["direction"] == 1
    cisi = study()["biases"]["highrecall"]["expansion"]["collections"]["cisi"]["bias"]
    assert h["bias"][0]["sizes"]["cisi"] == round(cisi * 100, 1)
    assert h["text"].count(".") >= 1 and h["text"].endswith(")." ) and "; bias flag: bm25_rm3: query expansion's " \
        "advantage over BM25 is overstated by the high-recall verdict against human AP in nteval's validation study " \
        f"({cisi * 100:+.0f} points on CISI and " in h["text"] and ", the kind of collections this verdict is for;" in h["text"]
    # a family the study did not flag under this protocol gets no flag
    assert headline("known-item", {**_results("focused", "RR", {"bm25_rm3": 0.9, "x": 0.1},
                                              {frozenset(("bm25_rm3", "x"))}),
                                   "bias_notes": bias_notes("focused", {"bm25_rm3": {"algorithm": "bm25_rm3"}})},
                    "idx")["bias"] == []


def test_disagreements_by_hand_name_the_likely_reason():
    f = _results("focused", "RR", {"bm25": 0.9, "bm25_rm3": 0.85, "x": 0.5}, {frozenset(("bm25", "bm25_rm3")),
                                                                              frozenset(("bm25", "x"))})
    h = _results("highrecall", "AP", {"bm25_rm3": 0.3, "bm25": 0.2, "x": 0.1}, {frozenset(("bm25", "bm25_rm3")),
                                                                                 frozenset(("bm25", "x"))})
    d = disagreements(f, h)
    assert len(d) == 1 and d[0]["focused_prefers"] == "bm25" and d[0]["highrecall_prefers"] == "bm25_rm3"
    assert d[0]["reason"].startswith("query expansion")
    assert disagreements(f, f) == []
    # the other direction (focused prefers the expansion system): the expansion reason does not fit it
    d = disagreements(h | {"protocol": "focused"}, f | {"protocol": "highrecall"})
    assert len(d) == 1 and d[0]["focused_prefers"] == "bm25_rm3" and d[0]["reason"] is None
    assert "no likely reason" in disagreement_lines(d)[1]


def test_a_parameter_reason_states_this_runs_direction_and_what_the_grid_shows():
    """Issue 39: "the focused protocol prefers a higher b" was printed from memory; the reason now
    says which b each verdict prefers here, and cites the grid only for what its facts show."""
    from nteval.answer import parameter_reason
    from nteval.evidence import grid_fact

    configs = {"lo": {"algorithm": "bm25", "params": {"k1": 0.9, "b": 0.4}},
               "hi": {"algorithm": "bm25", "params": {"k1": 0.9, "b": 0.75}}}
    f = _results("focused", "RR", {"hi": 0.9, "lo": 0.8}, {frozenset(("hi", "lo"))}) | {"system_configs": configs}
    h = _results("highrecall", "AP", {"lo": 0.3, "hi": 0.2}, {frozenset(("hi", "lo"))}) | {"system_configs": configs}
    d = disagreements(f, h)
    assert d[0]["reason"].startswith("BM25 length normalisation (b): here the focused verdict prefers b 0.75, the "
                                     "high-recall one b 0.4")
    fact = grid_fact("b")
    if fact is not None:  # what the shipped grid shows, with its count
        assert (f"(the same direction as nteval's PubMed grid at {fact['focused_higher']} of its {fact['compared']} k1 "
                f"values, the other at {fact['focused_lower']}, neither at {fact['equal']}") in d[0]["reason"]
    assert "k1" not in parameter_reason("b", 0.75, 0.4).split("(")[0]


def test_families_and_the_study_notes():
    configs = {"bm25": {"algorithm": "bm25"}, "rm3": {"algorithm": "bm25_rm3"}, "dense": {"algorithm": "dense"},
               "h1": {"algorithm": "rrf", "params": {"systems": ["bm25", "dense"]}},
               "h2": {"algorithm": "linear", "params": {"systems": ["h1", "rm3"]}},  # dense two levels down
               "lex": {"algorithm": "rrf", "params": {"systems": ["bm25", "rm3"]}},
               "ext": {"algorithm": "external", "params": {}}, "mine": {"algorithm": "callable", "params": {"family": "dense"}},
               "nn": {"algorithm": "dense", "params": {"model": "minilm"}},
               "h3": {"algorithm": "rrf", "params": {"systems": ["h1", "nn"]}}}  # a neural input beats a static one
    assert families(configs) == {"bm25": "bm25", "rm3": "expansion", "dense": "dense", "h1": "static_hybrid",
                                 "h2": "static_hybrid", "lex": "fusion", "ext": None, "mine": "dense", "nn": "neural",
                                 "h3": "hybrid"}
    s = study()
    assert s is not None and set(s["agreement"]) == {"focused", "highrecall", "highrecall_lexical"}
    assert {c["kind"] for c in s["study"]["collections"].values()} == {"precise", "topical"}
    ev = evidence("focused")
    assert "not this run" in ev["source"] and evidence_lines("focused")[0].startswith("  evidence — nteval's validation study")
    notes = {n["system"]: n for n in bias_notes("highrecall", configs)}
    # the study measured expansion, static embeddings and their hybrids biased under high-recall (flagged)
    assert {"rm3", "dense", "h1", "h2"} <= set(notes) and "bm25" not in notes and "ext" not in notes
    assert "SciFact (precise" in notes["rm3"]["text"] and "act on the focused verdict" in notes["rm3"]["text"]


def test_compare_with_a_task_leads_with_one_headline(sample_index, tmp_path):
    r = cli("compare", "--index", sample_index, "--topics", "80", "--systems", "default", "--min-topics", "10",
            "--task", "topical", "--out", tmp_path / "c", "--quiet")
    assert r.exit_code == 0, r.output
    # (a first ONNX export's note, on stderr, comes before it when this test is the first to encode)
    first = next(line for line in r.output.splitlines() if not line.startswith("note: exporting model to ONNX"))
    assert first.startswith(f"For topical search on {sample_index} (1,708 documents searched), the best system")
    ans = json.loads((tmp_path / "c" / "answer.json").read_text())
    assert ans["task"] == "topical" and ans["headline"]["protocol"] == "highrecall" and ans["how_to_choose"] is None
    assert (tmp_path / "c" / "focused" / "results.json").is_file() and (tmp_path / "c" / "highrecall" / "runs").is_dir()
    hr = json.loads((tmp_path / "c" / "highrecall" / "results.json").read_text())
    assert any(n["system"] == "bm25_rm3" and n["family"] == "expansion" for n in hr["bias_notes"])
    # the verdict behind the headline (groups, sizes, stability), its evidence and biases, then where the tables are
    assert "VERDICT (highrecall protocol, AP)" in r.output and "VERDICT (focused protocol" not in r.output
    assert "split-half reliability (AP)" in r.output and "bias (highrecall): " in r.output
    printed = "".join(line for line in r.output.splitlines(True) if not line.startswith("note: exporting model to ONNX"))
    last = printed.rstrip().splitlines()[-1]  # (a first ONNX export's note, on stderr, is no part of the answer)
    assert last.startswith(f"tables of every system and measure: {tmp_path / 'c' / 'focused'}"), r.output[-500:]
    assert (tmp_path / "c" / "answer.md").read_text() == printed
    # without a task: both verdicts, the disagreements, how to choose
    r = cli("compare", "--index", sample_index, "--topics", "80", "--systems", "default", "--min-topics", "10",
            "--out", tmp_path / "c", "--quiet")
    assert r.exit_code == 0 and r.output.startswith("No task declared: both verdicts")
    assert "known-item search (focused, RR):" in r.output and "where the verdicts disagree" in r.output
    assert "How to choose: declare the task" in r.output
    assert "VERDICT (focused protocol, RR)" in r.output and "VERDICT (highrecall protocol, AP)" in r.output


def test_a_protocol_refuses_a_task_it_does_not_measure_and_leads_with_its_own(sample_index, tmp_path):
    r = cli("focused", "--index", sample_index, "--topics", "60", "--systems", "default", "--min-topics", "10",
            "--task", "topical", "--out", tmp_path / "f", "--quiet")
    assert r.exit_code == 2 and "the focused protocol measures known-item search" in r.output
    assert not (tmp_path / "f").exists()
    r = cli("focused", "--index", sample_index, "--topics", "60", "--systems", "default", "--min-topics", "10",
            "--task", "known-item", "--out", tmp_path / "f", "--quiet")
    assert r.exit_code == 0 and r.output.startswith("For known-item search on")
    res = json.loads((tmp_path / "f" / "results.json").read_text())
    assert res["task"] == "known-item" and res["answer"]["text"] == r.output.splitlines()[0]


def test_config_file_declares_the_task(sample_index, tmp_path):
    cfg = tmp_path / "nteval.yaml"
    cfg.write_text(f"task: known-item\ncompare:\n  index: {sample_index}\n  topics: 60\n  min-topics: 10\n"
                   "  systems: default\n")
    r = cli("--config", cfg, "compare", "--out", tmp_path / "c", "--quiet")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("For known-item search on")
    cfg.write_text("compare:\n  topcs: 3\n")
    r = cli("--config", cfg, "compare", "--out", tmp_path / "c")
    assert r.exit_code == 2 and "compare has no option --topcs (did you mean topics?)" in r.output
    cfg.write_text("nonsense: 1\n")
    assert "no command has the option --nonsense" in cli("--config", cfg, "compare").output


def test_grid_says_where_the_protocols_disagree_on_the_best_cell(first200_index, tmp_path):
    from nteval.grid import parse_axis, run_grid
    from nteval.report.text import grid_summary

    res = run_grid(first200_index, tmp_path / "g", [parse_axis("b=0.1,0.9")], protocol="both", n_topics=60,
                   min_topics=10, progress=False, jobs=1)
    d = res["disagreement"]
    assert set(d) >= {"disagree", "text"} and "where the protocols disagree: " + d["text"] in grid_summary(res)
