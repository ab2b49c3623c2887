"""The protocol registry and what every protocol shares: specs (parsing, validation), the generic
run, the CLI generated from the registry. Real index (the bundled PubMed slice), real Lucene."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from nteval import protocols
from nteval.cli import main
from nteval.errors import InputError
from nteval.experiment import run_focused, run_highrecall, run_protocol


def test_registry_lists_the_builtins_in_order_and_refuses_unknown_names():
    assert protocols.names()[:2] == ["focused", "highrecall"]
    for name in protocols.names():
        p = protocols.get(name)
        assert p.name == name and p.searches in ("nt", "all") and p.verdict.measure in p.measures
        assert p.correlate_pairs and p.grid_measures
    with pytest.raises(InputError, match="no protocol 'nope' .known: focused, highrecall"):
        protocols.get("nope")


def test_spec_parses_params_by_type_and_validates_bounds():
    HR = protocols.get("highrecall").Spec
    s = HR.from_params({"k": "500", "zt": "1.5", "graded": "yes", "sref": "bm25,qld_mu1000", "language": "none"})
    assert (s.k, s.zt, s.graded, s.sref, s.language) == (500, 1.5, True, ("bm25", "qld_mu1000"), None)
    with pytest.raises(InputError, match=r"--param k=x: not a whole number"):
        HR.from_params({"k": "x"})
    with pytest.raises(InputError, match="has no such parameter"):
        HR.from_params({"kk": "1"})
    with pytest.raises(InputError, match="--judged must be one of"):
        HR.from_params({"judged": "nope"})
    with pytest.raises(InputError, match="n_topics=0: must be ≥ 1"):
        protocols.get("focused").Spec(n_topics=0)
    # a preset overrides what it names, as --preset always did
    paper = HR(preset="paper", graded=True)
    assert paper.sref == ("bm25",) and paper.graded is False and paper.judged == "relevant-only"


def test_generic_run_is_the_named_one(first200_index, tmp_path):
    """`run_protocol("focused")` and `run_focused` write the same bytes; so do the high-recall pair."""
    a = run_focused(first200_index, tmp_path / "a", n_topics=40, seed=5, systems="default", progress=False, min_topics=10)
    b = run_protocol("focused", first200_index, tmp_path / "b", n_topics=40, seed=5, systems="default", progress=False,
                     min_topics=10)
    for f in ("topics.tsv", "qrels.txt", "per_topic.tsv", "results.tsv"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    assert a["systems"] == b["systems"] and a["verdict"]["groups"] == b["verdict"]["groups"]
    h = run_highrecall(first200_index, tmp_path / "h", n_topics=40, seed=5, systems="default", progress=False,
                       min_topics=10, k=100)
    g = run_protocol("highrecall", first200_index, tmp_path / "g", n_topics=40, seed=5, systems="default",
                     progress=False, min_topics=10, k=100)
    for f in ("topics.tsv", "qrels.txt", "per_topic.tsv"):
        assert (tmp_path / "h" / f).read_bytes() == (tmp_path / "g" / f).read_bytes(), f
    assert h["pseudo_relevant_per_topic"] == g["pseudo_relevant_per_topic"]


def test_cli_run_and_protocols(first200_index, tmp_path):
    r = CliRunner().invoke(main, ["protocols"])
    assert r.exit_code == 0 and all(n in protocols.names() and n in r.output for n in protocols.names())
    r = CliRunner().invoke(main, ["protocols", "highrecall"])
    assert r.exit_code == 0 and "zt" in r.output and "default 2.0" in r.output
    r = CliRunner().invoke(main, ["run", "--protocol", "focused", "--index", str(first200_index), "--param", "n_topics=30",
                                  "--param", "seed=3", "--min-topics", "10", "--out", str(tmp_path / "o"), "--quiet"])
    assert r.exit_code == 0, r.output + r.stderr
    assert r.output.startswith("VERDICT (focused protocol, RR)")
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["protocol"] == "focused" and res["n_topics"] == 30 and res["sample"]["seed"] == 3
    for args, msg in ((["--protocol", "nope"], "no protocol 'nope'"), (["--protocol", "focused", "--param", "zt=1"],
                                                                        "has no such parameter"),
                      (["--protocol", "focused", "--param", "n_topics"], "write NAME=VALUE")):
        r = CliRunner().invoke(main, ["run", *args, "--index", str(first200_index), "--out", str(tmp_path / "x")])
        assert r.exit_code == 2 and msg in r.stderr, r.stderr
        assert not (tmp_path / "x").exists()


def test_protocol_params_of_one_protocol_are_checked_together():
    """`--protocol-param mesh.min_docs=2 --protocol-param mesh.max_docs=3` is a valid window even
    though max_docs=3 alone is below the default min_docs (5)."""
    from nteval.cli.options import protocol_params as _protocol_params

    assert _protocol_params(("mesh.min_docs=2", "mesh.max_docs=3", "highrecall.zt=1.5")) == {
        "mesh": {"min_docs": 2, "max_docs": 3}, "highrecall": {"zt": 1.5}}
    with pytest.raises(InputError, match="max_docs=3: must be ≥ min_docs"):
        _protocol_params(("mesh.max_docs=3",))
    with pytest.raises(InputError, match="write PROTOCOL.NAME=VALUE"):
        _protocol_params(("max_docs=3",))
