"""Runs that searched the titles are caught, not crowned: an outside BM25 (bm25s, its own
tokenizer) over title + abstract of the bundled PubMed sample is refused in one line under both
protocols and in a gate, and so is nteval's own BM25 over titles and abstracts (it ranks records
that have no abstract); the same engine over the abstracts only (the exported, title-stripped
collection), nteval's own systems, and all-MiniLM-L6-v2's ranking given back as a run file (an
encoder trained on title-abstract pairs: issue 55, F1) are accepted, and judged as their computed
twins are."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from conftest import TESTS, cli, one_line_error

bm25s = pytest.importorskip("bm25s")
sys.path.insert(0, str(TESTS.parent / "scripts"))


def _run_dir(index: Path, out: Path, where: Path, with_titles: bool) -> Path:
    """A --runs directory holding one bm25s run over the protocol's topics in ``out``."""
    from title_leak_study import bm25s_runs

    from nteval.formats.trec import format_run, read_topics

    topics = read_topics(out / "topics.tsv")
    name = "bm25s_title_and_abstract" if with_titles else "bm25s_abstract_only"
    run = bm25s_runs(index, topics)["all" if with_titles else "nt"]
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{name}.run").write_text(format_run(run, "mine"), encoding="utf-8")
    return where


@pytest.fixture(scope="module")
def default300(sample_index, tmp_path_factory) -> dict[str, Path]:
    """Each protocol's run of the shipped default set on 300 topics of the sample (an OUT each)."""
    outs = {}
    for protocol in ("focused", "highrecall"):
        outs[protocol] = tmp_path_factory.mktemp("leak") / protocol
        r = cli(protocol, "--index", sample_index, "--topics", 300, "--systems", "default", "--quiet", "--out",
                outs[protocol])
        assert r.exit_code == 0, r.output
    return outs


@pytest.mark.parametrize("protocol", ["focused", "highrecall"])
def test_a_run_that_saw_the_titles_is_refused(sample_index, default300, tmp_path, protocol):
    out = tmp_path / protocol
    shutil.copytree(default300[protocol], out)   # (runs are added to it: a copy of the module's)
    args = (protocol, "--index", sample_index, "--topics", 300, "--systems", "default", "--quiet")
    leaky = _run_dir(sample_index, out, tmp_path / "leaky", with_titles=True)
    line = one_line_error(cli(*args, "--out", out, "--runs", leaky), "system mine searched the titles",
                          "nteval export")
    assert "title-blind BM25 does not" in line if protocol == "focused" else "only in the document's title" in line
    honest = _run_dir(sample_index, out, tmp_path / "honest", with_titles=False)
    r = cli(*args, "--out", out, "--runs", honest)
    assert r.exit_code == 0, r.output


def test_nteval_systems_are_never_flagged(sample_index, default300):
    """Every system of the shipped default set, checked by the outside, focused and high-recall rules."""
    from nteval.formats.trec import read_run, read_topics
    from nteval.leak import check_runs

    for protocol, out in default300.items():
        topics = read_topics(out / "topics.tsv")
        runs = {p.stem: read_run(p) for p in (out / "runs").glob("*.run")}
        sources = {q: q.rsplit("-s", 1)[0] for q in topics}
        checked = check_runs(sample_index, protocol, runs, topics, sources, list(runs))
        assert checked and not [n for n, r in checked.items() if r["flagged"]], checked
        assert {r["class"] for r in checked.values()} == {"lexical", "non-lexical"}  # (rm3, wordllama: not lexical)


@pytest.mark.parametrize("protocol", ["focused", "highrecall"])
def test_a_search_of_the_titles_is_refused_whatever_its_family(sample_index, default300, tmp_path, protocol):
    """nteval's own BM25 and wordllama over titles and abstracts (the ``all`` index: a production
    engine's own index), given as run files: refused in one line: they rank records that have no
    abstract, whose only text is their title (the sample has 289)."""
    from nteval.formats.trec import format_run, read_topics
    from nteval.runs import Searched, run_all
    from nteval.systems.base import load_systems

    out = default300[protocol]
    topics = read_topics(out / "topics.tsv")
    (tmp_path / "s.yaml").write_text("- {name: bm25, algorithm: bm25}\n- {name: wl, algorithm: dense}\n")
    runs, _ = run_all(Searched.of(sample_index, "all"), topics, load_systems(tmp_path / "s.yaml"), tmp_path / "runs", 100)
    for name in ("bm25", "wl"):
        where = tmp_path / name
        where.mkdir()
        (where / f"{name}_all.run").write_text(format_run(runs[name], f"{name}_all"), encoding="utf-8")
        line = one_line_error(cli(protocol, "--index", sample_index, "--topics", 300, "--systems", "default", "--quiet",
                                  "--out", tmp_path / f"o_{name}", "--runs", where),
                              f"system {name}_all searched the titles", "records without an abstract", "nteval export")
        assert "whose only text is their title" in line


@pytest.fixture(scope="module")
def pin300(sample_pin) -> Path:
    """The session's pin of the sample (300 topics, the default references)."""
    return sample_pin


def test_a_gate_refuses_a_candidate_that_saw_the_titles(sample_index, pin300, tmp_path):
    """At 300 topics (the rule needed 20 low-overlap topics: about 600 topics, so a 300-topic gate was
    never checked): the documents nteval's BM25 does not rank first, a run over titles ranks first."""
    leaky = _run_dir(sample_index, pin300 / "focused", tmp_path / "leaky", with_titles=True)
    line = one_line_error(cli("gate", "--index", sample_index, "--pin", pin300, "--task", "known-item", "--baseline",
                              "bm25", "--candidate", leaky / "bm25s_title_and_abstract.run", "--out", tmp_path / "g",
                              "--quiet"), "system mine searched the titles")
    assert "topics nteval's title-blind BM25 does not" in line
    honest = _run_dir(sample_index, pin300 / "focused", tmp_path / "honest", with_titles=False)
    r = cli("gate", "--index", sample_index, "--pin", pin300, "--task", "known-item", "--baseline", "bm25",
            "--candidate", honest / "bm25s_abstract_only.run", "--out", tmp_path / "h", "--quiet")
    assert r.exit_code in (0, 3, 4) and "title" not in r.output.splitlines()[0], r.output


def test_a_leak_on_part_of_the_topics_makes_no_decision(sample_index, pin300, tmp_path):
    """A run that searched the titles on some topics only (here: nteval's conj_disj_6, with the
    document put first on 8 of the 11 topics nteval's BM25 misses, as a title search would): not
    refused (it rescues 73 %, not the 80 % of a run over titles), but what those rescues gained is
    what a title search gains, so it is taken off the decision's bounds: the non-inferiority it
    would have passed with is not claimed, and the headline says why."""
    from nteval.formats.trec import format_run, read_run, read_topics
    from nteval.leak import reference_ranks

    base = tmp_path / "base"
    assert cli("gate", "--index", sample_index, "--pin", pin300, "--task", "known-item", "--baseline", "bm25",
               "--candidate", "conj_disj_6", "--out", base, "--quiet").exit_code in (0, 4)
    run = read_run(base / "runs" / "pinned" / "conj_disj_6.run")
    topics = read_topics(pin300 / "focused" / "topics.tsv")
    misses = sorted(q for q, r in reference_ranks(sample_index, topics, {q: q for q in topics}).items() if r != 1)
    assert len(misses) >= 10
    for q in misses[:8]:  # (a title search puts the document first)
        run[q] = [(q, 1.0 + max([s for _, s in run[q]], default=0.0))] + [(d, s) for d, s in run[q] if d != q]
    partial = tmp_path / "partial.run"
    partial.write_text(format_run(run, "partial"), encoding="utf-8")
    r = cli("gate", "--index", sample_index, "--pin", pin300, "--task", "known-item", "--baseline", "bm25",
            "--candidate", partial, "--mmd", "4%", "--out", tmp_path / "g", "--quiet")
    assert r.exit_code == 4, r.output
    res = json.loads((tmp_path / "g" / "gate.json").read_text())
    d = res["candidates"]["partial"]["pinned"]
    assert d["without_the_title_gain"] == "non-inferior" and d["decision"] == "inconclusive"
    assert d["title_gain"]["topics"] >= 8 and 0 < d["noninferiority_lower"] <= d["title_gain"]["gain"]
    head = r.output.splitlines()[0]
    assert head.startswith("INCONCLUSIVE — not decided: partial") and "non-inferior is not claimed: it ranks first 8 of " \
        "the 11 documents nteval's title-blind BM25 misses" in head


def test_the_title_gain_is_taken_off_only_beyond_what_title_blind_systems_of_its_class_rescue():
    """Within what title-blind systems of its class rescue, nothing is taken off (its computed twin
    would keep all it gained: issue 55); beyond it (a search of the titles on part of the topics),
    its gain on every topic it scores higher than the baseline on. The same rescues are beyond a
    lexical ranking's reach and within an encoder's."""
    from nteval.leak import RESCUE_BLIND, title_gain

    base = {"a": 0.5, "b": 1.0, "c": 0.25, "d": 0.0, "e": 0.5}
    cand = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.5, "e": 1.0}
    few = {"hits": 3, "misses": 20, "share": 0.15, "rescued": ["a", "b", "c", "d"], "class": "lexical"}
    got = title_gain(few, base, cand, 10)
    assert got["gain"] == 0 and got["topics"] == 0 and not got["every_gain"] and got["why"] == ""
    half = {**few, "hits": 10, "share": 0.5}
    assert RESCUE_BLIND["lexical"] < 0.5 < RESCUE_BLIND["non-lexical"]
    got = title_gain(half, base, cand, 10)
    assert got["every_gain"] and got["topics"] == 4 and got["gain"] == round((0.5 + 0.75 + 0.5 + 0.5) / 10, 6)
    assert "title-blind lexical systems" in got["why"]
    assert title_gain({**half, "class": "non-lexical"}, base, cand, 10)["gain"] == 0
