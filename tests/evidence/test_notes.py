"""Issue 40 item 13: bias notes grouped per family in every command, and the "e.g." pairs of a
disagreement nested under their reason in report.md/html (not flattened into sibling bullets)."""
from __future__ import annotations

from nteval.answer import bias_lines
from nteval.evidence import bias_notes
from nteval.report.agreement import verdict_blocks
from nteval.report.document import to_html, to_markdown

CONFIGS = {"bm25": {"algorithm": "bm25"}, "rm3": {"algorithm": "bm25_rm3"}, "rm3b": {"algorithm": "bm25_rm3"},
           "rocchio": {"algorithm": "bm25_rocchio"}, "dense": {"algorithm": "dense"}}


def test_bias_notes_are_one_line_per_family():
    notes = bias_notes("highrecall", CONFIGS)
    assert {n["system"] for n in notes} == {"rm3", "rm3b", "rocchio", "dense"}
    lines = bias_lines({"highrecall": {"bias_notes": notes}}, ["highrecall"])
    assert len(lines) == 2
    assert lines[0].startswith("  bias (highrecall): rm3, rm3b, rocchio (query expansion")
    assert lines[1].startswith("  bias (highrecall): dense (static embeddings (wordllama")


def test_the_protocol_report_groups_the_notes(first200_index, tmp_path):
    from nteval import protocols
    from nteval.experiment import run_protocol
    from nteval.report.text import protocol_report

    yaml = tmp_path / "s.yaml"
    yaml.write_text("systems:\n  - {name: bm25, algorithm: bm25}\n  - {name: rm3, algorithm: bm25_rm3}\n"
                    "  - {name: rm3_10, algorithm: bm25_rm3, params: {fb_terms: 10}}\n"
                    "  - {name: rocchio, algorithm: bm25_rocchio}\n")
    res = run_protocol("highrecall", first200_index, tmp_path / "h", systems=str(yaml), n_topics=40, min_topics=10,
                       progress=False)
    text = protocol_report(res, protocols.get("highrecall"))
    bias = [x for x in text.splitlines() if x.startswith("  bias")]
    assert bias == [x for x in bias_lines({"highrecall": res}, ["highrecall"])]
    assert len(bias) == 1 and bias[0].startswith("  bias (highrecall): rm3, rm3_10, rocchio (query expansion")


def test_disagreement_examples_nest_under_their_reason():
    pair = {"focused_prefers": "bm25", "highrecall_prefers": "rm3", "focused_diff": 0.01, "highrecall_diff": 0.02,
            "focused_measure": "RR", "highrecall_measure": "AP", "reason": "query expansion: …"}
    r = {"verdict": {}, "bias_notes": {"highrecall": bias_notes("highrecall", CONFIGS)},
         "disagreements": [pair, {**pair, "focused_prefers": "qld"}, {**pair, "reason": None}]}
    blocks = verdict_blocks(r)
    md = to_markdown(blocks)
    assert "- 2 pairs, likely reason: query expansion: …; e.g.\n  - focused: bm25 > rm3 (+0.0100 RR); high-recall: rm3 > " \
           "bm25 (+0.0200 AP)\n  - focused: qld > rm3" in md
    assert "- 1 pair, no likely reason:" in md
    html = to_html(blocks)
    assert "e.g.<ul><li>focused: bm25 &gt; rm3" in html
    # the bias notes: one item per protocol and family
    assert md.count("- **highrecall**: ") == 2


def test_a_run_judged_by_the_lexical_references_quotes_their_own_agreement(first200_index, tmp_path):
    """Hostile K7: a high-recall run judged by the lexical vote alone (``--preset lexical``, or an
    install without the neural extra) printed the balanced references' τ (CISI .91, CF .82) and the
    leave-model-out line, which is about references that hold a neural model; it says the lexical
    references' own (.72, .75), and the results' evidence records which verdict it is."""
    import json

    from conftest import FORTY_TOPICS, cli

    from nteval.evidence import evidence_lines, study

    tau = {c: f"{study()['agreement']['highrecall_lexical'][c]['kendall']:.2f}" for c in ("cisi", "cf")}
    lines = evidence_lines("highrecall", "highrecall_lexical")
    assert len(lines) == 1 and "judged by the lexical references alone" in lines[0]
    assert all(f"Kendall tau {t}" in lines[0] for t in tau.values()) and "leave-model-out" not in lines[0]
    balanced = evidence_lines("highrecall", "highrecall")
    assert len(balanced) == 2 and "leave-model-out" in balanced[1]
    r = cli("highrecall", "--index", first200_index, "--systems", "default", "--preset", "lexical", "--out",
            tmp_path / "o", *FORTY_TOPICS[:-1])
    assert r.exit_code == 0, r.output
    assert "judged by the lexical references alone" in r.output and "leave-model-out" not in r.output
    assert json.loads((tmp_path / "o" / "results.json").read_text())["evidence"]["side"] == "highrecall_lexical"
