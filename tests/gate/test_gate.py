"""`nteval gate` end to end on the bundled PubMed sample: the exit codes a pipeline reads, the
JUnit XML parsed by a JUnit library, the Markdown comment, run files as systems, several candidates,
and bad input in one line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli, one_line_error, retag

junitparser = pytest.importorskip("junitparser")


@pytest.fixture(scope="module")
def pin(sample_pin) -> Path:
    """The session's pin of the sample (300 topics, the default references)."""
    return sample_pin


def cached(cache: Path, pin: Path, protocol: str = "focused") -> Path:
    """Where --runs-cache CACHE keeps a gate's runs on the pinned topics of ``protocol``."""
    return cache / json.loads((pin / "pin.json").read_text())["id"] / protocol / "pinned"


def gate(sample_index, pin, out, *args):
    return cli("gate", "--index", sample_index, "--pin", pin, "--systems", "table1", "--out", out, "--quiet", *args)


def test_exit_codes_junit_and_markdown(sample_index, pin, tmp_path):
    cache = tmp_path / "cache"
    cases = {  # (task, baseline, candidate) → exit status and decision
        "pass": (("known-item", "bm25", "bm25_k1.2_b0.75"), 0, "non-inferior"),
        "better": (("topical", "bm25", "bm25_rm3"), 0, "better"),
        "regression": (("known-item", "bm25", "disjunctive_1"), 3, "worse"),
        "inconclusive": (("topical", "bm25", "qld_mu1000"), 4, "inconclusive"),
    }
    for name, ((task, base, cand), status, decision) in cases.items():
        out = tmp_path / name
        r = gate(sample_index, pin, out, "--task", task, "--baseline", base, "--candidate", cand, "--runs-cache", cache)
        assert r.exit_code == status, r.output
        first = r.output.splitlines()[0]
        assert first.startswith({0: "PASS", 3: "FAIL", 4: "INCONCLUSIVE"}[status]) and cand in first
        res = json.loads((out / "gate.json").read_text())
        assert res["candidates"][cand]["decision"] == decision and res["exit"] == status
        assert res["pin"]["id"] == json.loads((pin / "pin.json").read_text())["id"]
        xml = junitparser.JUnitXml.fromfile(str(out / "junit.xml"))
        suites = list(xml) if isinstance(xml, junitparser.JUnitXml) else [xml]
        cases_ = [c for s in suites for c in s]
        assert len(cases_) == 1
        result = cases_[0].result
        kinds = {type(x).__name__ for x in result}
        assert kinds == ({"Failure"} if status == 3 else {"Skipped"} if status == 4 else set()), kinds
        assert suites[0].tests == 1 and suites[0].failures == (status == 3) and suites[0].skipped == (status == 4)
        md = (out / "gate.md").read_text()
        assert md.startswith(f"### {'✅' if status == 0 else '❌' if status == 3 else '⚠️'} nteval gate") and cand in md
        assert res["headline"]["text"] in md
    # where it changed: the regression names topics whose known item fell, with ranks before/after
    res = json.loads((tmp_path / "regression" / "gate.json").read_text())
    worst = res["candidates"]["disjunctive_1"]["pinned"]["changed"]["worse"]
    assert len(worst) == 10 and all(r["rank"][0] is not None and (r["rank"][1] is None or r["rank"][1] > r["rank"][0])
                                    for r in worst)
    topics = dict(line.split("\t", 1) for line in (pin / "focused" / "topics.tsv").read_text().splitlines())
    assert all(topics[r["qid"]] == r["query"] for r in worst)
    inc = json.loads((tmp_path / "inconclusive" / "gate.json").read_text())["candidates"]["qld_mu1000"]["pinned"]
    assert inc["more_topics"]["topics"] > 300
    assert "nteval pin --extend" in (tmp_path / "inconclusive" / "gate.txt").read_text()
    # the second gate with the same baseline reused its cached run; each task keeps its own (a shared
    # cache thrashed: every gate of the other task rewrote bm25.run)
    known_item = cached(cache, pin) / "bm25.run"
    stamp = known_item.stat().st_mtime_ns
    assert (cached(cache, pin, "highrecall") / "bm25.run").is_file()
    assert gate(sample_index, pin, tmp_path / "again", "--task", "topical", "--baseline", "bm25", "--candidate",
                "bm25_rm3", "--runs-cache", cache).exit_code == 0
    assert known_item.stat().st_mtime_ns == stamp


def test_several_candidates_and_a_run_file(sample_index, pin, tmp_path):
    """A run file that is the baseline's own run under another tag is non-inferior (identical);
    three candidates are corrected together and the output says how."""
    first = tmp_path / "first"
    assert gate(sample_index, pin, first, "--task", "known-item", "--baseline", "bm25", "--candidate", "qld_mu100"
                ).exit_code == 0
    mine = retag(first / "runs" / "pinned" / "bm25.run", tmp_path / "mine.run", "mine")
    out = tmp_path / "several"
    r = gate(sample_index, pin, out, "--task", "known-item", "--baseline", "bm25", "--candidate", mine,
             "--candidate", "qld_mu100", "--candidate", "disjunctive_1")
    assert r.exit_code == 3, r.output
    assert r.output.splitlines()[0].startswith("FAIL — do not release: 1 of 3 candidates is worse")
    res = json.loads((out / "gate.json").read_text())
    assert res["candidates"]["mine"]["decision"] == "non-inferior"
    assert res["candidates"]["mine"]["pinned"]["diff"] == 0.0 and res["candidates"]["mine"]["pinned"]["churn"]["rbo"] == 1.0
    assert "Bonferroni over the 3 candidates" in res["rule"]["multiplicity"]
    assert res["candidates"]["qld_mu100"]["pinned"]["alpha_pass"] == pytest.approx(0.05 / 3)
    xml = junitparser.JUnitXml.fromfile(str(out / "junit.xml"))
    suite = next(iter(xml))
    assert suite.tests == 3 and suite.failures == 1


def test_bad_input_is_one_line(sample_index, pin, tmp_path):
    base = ["--baseline", "bm25", "--candidate", "qld_mu100"]
    one_line_error(gate(sample_index, pin, tmp_path / "a", *base), "--task")
    one_line_error(gate(sample_index, pin, tmp_path / "b", "--task", "known-item", "--baseline", "bm25",
                        "--candidate", "bm25_k1.2_b0.7"), "--candidate", "did you mean")
    one_line_error(gate(sample_index, pin, tmp_path / "c", "--task", "known-item", "--baseline", "bm25",
                        "--candidate", "bm25"), "distinct names")
    one_line_error(gate(sample_index, pin, tmp_path / "d", "--task", "known-item", "--alpha", "0.9", *base), "--alpha")
    one_line_error(gate(sample_index, pin, tmp_path / "e", "--task", "known-item", "--mmd", "-3%", *base), "--mmd")
    (tmp_path / "dir.sqlite").mkdir()
    one_line_error(gate(sample_index, pin, tmp_path / "f", "--task", "known-item", "--history", tmp_path / "dir.sqlite",
                        *base), "is a directory")
    one_line_error(gate(sample_index, pin, tmp_path / "f2", "--task", "known-item", "--history",
                        tmp_path / "no" / "h.sqlite", *base), "directory does not exist")
    one_line_error(cli("check", "--index", sample_index, "--pin", pin, "--task", "known-item", "--system", "bm25",
                       "--history", tmp_path / "dir.sqlite", "--out", tmp_path / "f3"), "is a directory")
    # refused before anything is searched: no runs left behind
    assert not any((tmp_path / d).exists() for d in ("f", "f2", "f3"))
    other = tmp_path / "other.run"
    other.write_text("12345 Q0 999 1 1.0 other\n")
    one_line_error(gate(sample_index, pin, tmp_path / "g", "--task", "known-item", "--baseline", "bm25",
                        "--candidate", other), "other")
    assert not (tmp_path / "a").exists() and not (tmp_path / "d").exists()


def test_check_appends_to_the_history(sample_index, pin, tmp_path):
    """`nteval check` records one system (no decision) and the alert rules run; without --history
    it is one line."""
    hist = tmp_path / "h.sqlite"
    r = cli("check", "--index", sample_index, "--pin", pin, "--task", "known-item", "--system", "bm25", "--label", "live-1",
            "--history", hist, "--out", tmp_path / "c1", "--quiet")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("live-1 (bm25) on 300 pinned topics: RR 0.") and "recorded in" in r.output
    from nteval.gate.history import opened

    with opened(hist) as h:
        (rec,) = h.records(scores=True)
    assert rec.role == "checked" and rec.label == "live-1" and len(rec.scores) == 300 and rec.engine.startswith("Lucene")
    res = json.loads((tmp_path / "c1" / "check.json").read_text())
    assert res["sets"]["pinned"]["mean"] == pytest.approx(rec.mean, abs=1e-6)
    one_line_error(cli("check", "--index", sample_index, "--pin", pin, "--task", "known-item", "--system", "bm25",
                       "--out", tmp_path / "c2"), "--history")


def test_a_live_search_that_drops_between_checks_alerts(sample_index, pin, tmp_path):
    """Two checks of the live search (run files of one tag) on an unchanged index: the second, far
    worse, is a new observation and raises the alert (exit 5)."""
    cache = tmp_path / "cache"
    assert gate(sample_index, pin, tmp_path / "g", "--task", "known-item", "--baseline", "bm25", "--candidate",
                "disjunctive_1", "--runs-cache", cache).exit_code == 3
    good = retag(cached(cache, pin) / "bm25.run", tmp_path / "good.run", "live")
    bad = retag(cached(cache, pin) / "disjunctive_1.run", tmp_path / "bad.run", "live")
    hist = tmp_path / "h.sqlite"
    for i, (run, status) in enumerate(((good, 0), (good, 0), (bad, 5))):
        r = cli("check", "--index", sample_index, "--pin", pin, "--task", "known-item", "--system", run,
                "--history", hist, "--out", tmp_path / f"c{i}", "--quiet")
        assert r.exit_code == status, r.output
    assert "ALERT: release live (RR 0.7" in r.output and "best earlier release live (0.9" in r.output


def test_an_alert_reaches_every_output_and_siblings_are_alternatives(sample_index, pin, tmp_path):
    """Candidates of one gate are alternatives: neither is the other's "earlier release", whatever
    their order. A release that passes its gate but falls below the best earlier release by more than
    the margin exits 5, and says so in gate.md, junit.xml and gate.json, not only on the terminal."""
    copy = tmp_path / "d1copy.yaml"
    copy.write_text("- name: d1copy\n  algorithm: disjunctive\n  params: {max_words: 1}\n")
    cache = tmp_path / "cache"
    for order in ((copy, "bm25"), ("bm25", copy)):
        hist = tmp_path / f"sib-{order[0] == 'bm25'}.sqlite"
        r = gate(sample_index, pin, tmp_path / "sib", "--task", "known-item", "--baseline", "disjunctive_1",
                 "--candidate", order[0], "--candidate", order[1], "--history", hist, "--runs-cache", cache)
        assert r.exit_code == 0 and "ALERT" not in r.output, r.output
    hist = tmp_path / "line.sqlite"
    r = gate(sample_index, pin, tmp_path / "g1", "--task", "known-item", "--baseline", "disjunctive_1", "--candidate",
             "bm25", "--history", hist, "--runs-cache", cache)
    assert r.exit_code == 0, r.output
    out = tmp_path / "g2"
    r = gate(sample_index, pin, out, "--task", "known-item", "--baseline", "disjunctive_1", "--candidate", copy,
             "--history", hist, "--runs-cache", cache)
    assert r.exit_code == 5 and "ALERT: release d1copy" in r.output, r.output
    res = json.loads((out / "gate.json").read_text())
    (alert,) = res["history"]["alerts"]
    assert res["exit"] == 5 and alert["best"] == "bm25"
    md = (out / "gate.md").read_text()
    assert md.startswith("### ⚠️ nteval gate: pass, with a history alert") and alert["text"] in md
    xml = junitparser.JUnitXml.fromfile(str(out / "junit.xml"))
    cases = [c for s in (list(xml) if isinstance(xml, junitparser.JUnitXml) else [xml]) for c in s]
    failed = [c for c in cases if any(type(x).__name__ == "Failure" for x in c.result)]
    assert len(cases) == 2 and [c.name for c in failed] == [f"history alert rules ({hist})"]
    assert failed[0].result[0].type == "alert" and failed[0].result[0].message == alert["text"]


def test_empty_or_partial_runs_do_not_decide_a_gate(sample_index, pin, tmp_path):
    """An empty run file, or one answering fewer than half the pinned topics, is bad input (it would
    pass as a baseline, fail as a candidate); one answering most of them is decided, and the topics it
    did not answer are said."""
    r = gate(sample_index, pin, tmp_path / "g0", "--task", "known-item", "--baseline", "bm25", "--candidate",
             "bm25_k1.2_b0.75", "--runs-cache", tmp_path / "cache")
    assert r.exit_code == 0, r.output
    lines = (cached(tmp_path / "cache", pin) / "bm25.run").read_text().splitlines()
    qids = sorted({x.split()[0] for x in lines})
    empty = tmp_path / "empty.run"
    empty.write_text("")
    half = tmp_path / "half.run"
    half.write_text("".join(x.replace(" bm25", " half") + "\n" for x in lines if x.split()[0] in set(qids[:100])))
    most = tmp_path / "most.run"
    most.write_text("".join(x.replace(" bm25", " most") + "\n" for x in lines if x.split()[0] in set(qids[:270])))
    for run, words in ((empty, "empty"), (half, "answers 100 of the 300 pinned topics")):
        for role in ("--baseline", "--candidate"):
            other = "--candidate" if role == "--baseline" else "--baseline"
            out = tmp_path / f"{run.stem}{role}"
            one_line_error(gate(sample_index, pin, out, "--task", "known-item", role, run, other, "bm25"), words)
            assert not (out / "gate.json").exists()
    r = gate(sample_index, pin, tmp_path / "most", "--task", "known-item", "--baseline", "bm25", "--candidate", most)
    assert r.exit_code in (0, 3, 4), r.output
    assert "not every topic answered: most 270 of 300" in r.output


def test_out_is_new_empty_or_nteval_s_own(sample_index, pin, tmp_path):
    """A gate writes only into a new or empty OUT or one a gate wrote; its earlier files move to
    OUT/previous/ first, so a rerun that fails on bad input leaves no stale pass behind."""
    base = ["--task", "known-item", "--baseline", "bm25", "--candidate", "bm25_k1.2_b0.75"]
    user = tmp_path / "user"
    user.mkdir()
    (user / "gate.md").write_text("my notes")
    one_line_error(gate(sample_index, pin, user, *base), "did not write")
    assert (user / "gate.md").read_text() == "my notes" and sorted(p.name for p in user.iterdir()) == ["gate.md"]
    one_line_error(gate(sample_index, pin, sample_index, *base), "did not write")
    out = tmp_path / "g"
    assert gate(sample_index, pin, out, *base).exit_code == 0
    first = (out / "gate.md").read_text()
    r = gate(sample_index, pin, out, "--task", "known-item", "--baseline", "bm25", "--candidate", "nosuch")
    one_line_error(r, "--candidate")
    assert not (out / "gate.md").exists() and (out / "previous" / "gate.md").read_text() == first
    assert not (out / "junit.xml").exists() and (out / "runs").is_dir()  # (the run cache stays)
    for flag, label, words in (("--label", "v2\nPASS — release: evil", "one line"), ("--label", "v2|x", "without |"),
                               ("--baseline-label", "v2", "both 'v2'")):
        extra = ["--label", "v2"] if flag == "--baseline-label" else []
        one_line_error(gate(sample_index, pin, tmp_path / "l", *base, flag, label, *extra), words)


def test_the_advice_to_extend_asks_for_more_than_the_pin_holds():
    from nteval.gate.report import extend_command

    res = {"pin": {"path": "pin", "sampled": 300}, "index": "idx"}
    assert extend_command(res, 1232, 280).endswith("--topics 1320 --out PIN2")   # 1232 × 300/280, rounded up
    assert extend_command(res, 67, 44).endswith("--topics 457 --out PIN2")
    assert extend_command(res, 100, 300).endswith("--topics 301 --out PIN2")      # always more than the pin's


def test_out_is_nteval_s_only_when_its_mark_says_so(sample_index, pin, tmp_path):
    """A folder holding a gate.json (or history.json) of the user's is not nteval's: refused, nothing
    moved; a previous/ holding a file nteval did not put there is never emptied."""
    base = ["--task", "known-item", "--baseline", "bm25", "--candidate", "bm25_k1.2_b0.75"]
    user = tmp_path / "user"
    (user / "previous").mkdir(parents=True)
    (user / "gate.json").write_text('{"my": "ci gate config"}')
    (user / "gate.md").write_text("# design")
    (user / "previous" / "notes-2025.txt").write_text("notes")
    before = {p: p.read_text() for p in user.rglob("*") if p.is_file()}
    for _ in range(2):
        one_line_error(gate(sample_index, pin, user, *base), "gate.json is not one nteval wrote")
    assert {p: p.read_text() for p in user.rglob("*") if p.is_file()} == before
    out = tmp_path / "g"
    assert gate(sample_index, pin, out, *base).exit_code == 0
    assert json.loads((out / "gate.json").read_text())["nteval_output"] == {"command": "gate", "format": 1}
    assert gate(sample_index, pin, out, *base).exit_code == 0  # its own: earlier files to previous/
    assert sorted(p.name for p in (out / "previous").iterdir()) == ["gate.json", "gate.md", "gate.txt", "junit.xml",
                                                                   "per_topic.tsv"]
    (out / "previous" / "mine.txt").write_text("mine")
    one_line_error(gate(sample_index, pin, out, *base), "previous/ holds files nteval did not move there (mine.txt)")
    assert (out / "previous" / "mine.txt").read_text() == "mine" and (out / "gate.md").is_file()
    # the history's page: the same rule
    hist = tmp_path / "h.sqlite"
    assert gate(sample_index, pin, tmp_path / "g2", *base, "--history", hist).exit_code == 0
    site = tmp_path / "site"
    site.mkdir()
    (site / "history.json").write_text('{"pages": 3}')
    (site / "history.html").write_text("<p>mine</p>")
    one_line_error(cli("history", hist, "--out", site), "history.json is not one nteval wrote")
    assert (site / "history.html").read_text() == "<p>mine</p>"
    for _ in range(2):
        assert cli("history", hist, "--out", tmp_path / "trend").exit_code == 0
    assert (tmp_path / "trend" / "previous" / "history.html").is_file()


def test_every_bad_input_sets_the_earlier_pass_aside(sample_index, pin, tmp_path):
    """A gate (or check) that passed, then rerun into the same OUT and stopped on bad input (a
    history it cannot use, an option click refuses), leaves no gate.md or junit.xml in OUT for a
    pipeline to post: they are in OUT/previous/."""
    base = ["--task", "known-item", "--baseline", "bm25", "--candidate", "bm25_k1.2_b0.75"]
    out = tmp_path / "g"
    check = ["check", "--index", sample_index, "--pin", pin, "--task", "known-item", "--system", "bm25", "--quiet"]
    for bad, words in ((["--history", tmp_path / "nodir" / "h.sqlite"], "directory does not exist"),
                       (["--history", "postgresql://nteval@127.0.0.1:1/x"], "cannot connect"),
                       (["--task", "knownitem"], "knownitem"),
                       (["--mmd", "5"], "--mmd")):
        assert gate(sample_index, pin, out, *base).exit_code == 0
        first = (out / "gate.md").read_text()
        one_line_error(gate(sample_index, pin, out, *base, *bad), words)
        assert not (out / "gate.md").exists() and not (out / "junit.xml").exists(), bad
        assert (out / "previous" / "gate.md").read_text() == first
        assert cli(*check, "--history", tmp_path / "h.sqlite", "--out", tmp_path / "c").exit_code == 0
        assert (tmp_path / "c" / "check.md").is_file()
        hist = [] if "--history" in bad else ["--history", tmp_path / "h.sqlite"]
        one_line_error(cli(*check, "--out", tmp_path / "c", *hist, *bad), words.split()[0])
        assert not any((tmp_path / "c" / f).exists() for f in ("check.md", "check.json", "junit.xml")), bad


def test_check_writes_junit_and_markdown(sample_index, pin, tmp_path):
    hist = tmp_path / "h.sqlite"
    for i, (system, status) in enumerate((("bm25", 0), ("disjunctive_1", 5))):
        out = tmp_path / f"c{i}"
        r = cli("check", "--index", sample_index, "--pin", pin, "--task", "known-item", "--system", system, "--label",
                "live", "--history", hist, "--out", out, "--quiet")
        assert r.exit_code == status, r.output
        xml = junitparser.JUnitXml.fromfile(str(out / "junit.xml"))
        suite = next(iter(xml))
        cases = list(suite)
        assert [c.name for c in cases] == [f"live ({system}), pinned topics (300)", f"history alert rules ({hist})"]
        assert suite.failures == (status == 5) and suite.tests == 2
        md = (out / "check.md").read_text()
        assert md.startswith("### ✅ nteval check: recorded" if status == 0 else "### ⚠️ nteval check: alert")
        assert "| pinned | 300 | 0." in md and (status == 0 or "**ALERT**" in md)


def test_names_and_queries_are_escaped_in_gate_md(sample_index, pin, tmp_path):
    """A system named next<!-- (an HTML comment opener) would hide the rest of a pull-request comment."""
    sys_file = tmp_path / "inject.yaml"
    sys_file.write_text("- name: next<!--\n  algorithm: bm25\n  params: {k1: 1.2, b: 0.75}\n")
    r = gate(sample_index, pin, tmp_path / "g", "--task", "known-item", "--baseline", "bm25", "--candidate", sys_file)
    assert r.exit_code == 0, r.output
    md = (tmp_path / "g" / "gate.md").read_text()
    assert "<!--" not in md and "next&lt;!--" in md and md.count("next&lt;!--") >= 3
    from nteval.gate.report import md as escape

    assert escape("a|b `c` *d* [e](f) <g>") == "a\\|b \\`c\\` \\*d\\* [e]\\(f) &lt;g&gt;"


def test_a_gate_off_a_terminal_prints_progress_lines(sample_index, pin, tmp_path):
    """stderr piped (a CI job's log): plain progress lines, no terminal bar (no carriage return),
    a heartbeat line every second here (NTEVAL_PROGRESS_EVERY=1) while the systems run. Only
    what a slower machine cannot break is asserted (F5): the lines' form and that the heartbeat
    spoke more than once, not how long any silence lasted; a busy machine may add an encoding or a
    "waiting" line, which are progress lines too."""
    import os
    import re
    import subprocess
    import sys

    exe = Path(sys.executable).with_name("nteval")
    cmd = [str(exe), "gate", "--index", str(sample_index), "--pin", str(pin), "--systems", "table1", "--task", "topical",
           "--baseline", "bm25", "--candidate", "qld_mu100", "--out", str(tmp_path / "g")]
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "NTEVAL_PROGRESS_EVERY": "1"})
    lines = proc.stderr.splitlines()
    assert proc.returncode == 4, lines
    progress = re.compile(r"nteval: (systems|encoding|waiting)\b")
    assert len(lines) >= 2 and all(progress.match(line) for line in lines), lines
    assert sum(line.startswith("nteval: systems: ") for line in lines) >= 2
    assert "\r" not in proc.stderr and " q/s" in proc.stderr


def test_gzipped_and_two_tag_run_files(sample_index, pin, tmp_path):
    """A gzipped run file given by name is named by the tag of its first decompressed line, whatever
    gzip's level; a file holding two run tags is one line naming both, and the file given."""
    import gzip

    cache = tmp_path / "cache"
    assert gate(sample_index, pin, tmp_path / "g", "--task", "known-item", "--baseline", "bm25", "--candidate",
                "qld_mu100", "--runs-cache", cache).exit_code == 0
    live = retag(cached(cache, pin) / "bm25.run", tmp_path / "live.run", "live")
    for level in (1, 9):
        gz = tmp_path / f"live{level}.run.gz"
        gz.write_bytes(gzip.compress(live.read_bytes(), compresslevel=level, mtime=0))
        r = gate(sample_index, pin, tmp_path / f"gz{level}", "--task", "known-item", "--baseline", "qld_mu100",
                 "--candidate", gz)
        # (named by its tag; undeclared, its family is read from its ranking: the most cautious lexical one)
        assert r.exit_code in (0, 4) and ": live is " in r.output.splitlines()[0], r.output
    lines = live.read_text().splitlines()
    two = tmp_path / "two.run"
    two.write_text("".join((x.rsplit(" ", 1)[0] + (" candB" if i % 2 else " candA")) + "\n" for i, x in enumerate(lines)))
    one_line_error(gate(sample_index, pin, tmp_path / "tt", "--task", "known-item", "--baseline", "bm25",
                        "--candidate", two), str(two), "two run tags in one run file ('candA' from line 1, 'candB'")


def test_hits_on_records_without_an_abstract_are_named_so(sample_index, pin, tmp_path):
    """A run ranking records of the collection that have no abstract (in `all`, not in `nt`: what an
    engine over titles finds) is told so, not that they are "not in the collection"."""
    import sqlite3

    cache = tmp_path / "cache"
    assert gate(sample_index, pin, tmp_path / "g", "--task", "known-item", "--baseline", "bm25", "--candidate",
                "qld_mu100", "--runs-cache", cache).exit_code == 0
    db = sqlite3.connect(sample_index / "docs.sqlite")
    no_abstract = db.execute("SELECT docid FROM docs WHERE abstract = '' ORDER BY docid LIMIT 1").fetchone()[0]
    db.close()
    rows = [x.split() for x in (cached(cache, pin) / "bm25.run").read_text().splitlines()]
    last = {}
    for i, c in enumerate(rows):  # (each topic's lowest-ranked hit becomes the record without an abstract)
        last[c[0]] = i
    for i in list(last.values())[:20]:
        rows[i][2] = no_abstract
    run = tmp_path / "mine.run"
    run.write_text("".join(" ".join(c[:5] + ["mine"]) + "\n" for c in rows))
    r = gate(sample_index, pin, tmp_path / "m", "--task", "known-item", "--baseline", "bm25", "--candidate", run)
    assert r.exit_code in (0, 4), r.output   # (deep in its rankings, as here: the title-leak guard lets it be)
    assert f"e.g. {no_abstract}) are not among the documents NT searches (records of the collection without an " \
           "abstract" in r.output
