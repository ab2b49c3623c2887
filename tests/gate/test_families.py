"""A gate across families (nteval.gate.families): the caution in the first line, and the rule that
keeps a cross-family "worse" from being a silent exit 3 — on a study written by hand (the rule's
logic), then end to end with the shipped study and the real all-MiniLM-L6-v2."""
from __future__ import annotations

import json

import pytest
from conftest import needs_neural as neural

from nteval import evidence
from nteval.gate.families import cross_family_worse, family_check
from nteval.protocols.highrecall import NEURAL_SREFS

CONFIGS = {"bm25": {"algorithm": "bm25", "params": {}},
           "bm25_b": {"algorithm": "bm25", "params": {"k1": 1.2, "b": 0.75}},
           "minilm": {"algorithm": "dense", "params": {"model": "minilm"}},
           "rm3": {"algorithm": "bm25_rm3", "params": {}},
           "theirs": {"algorithm": "run", "params": {"run": "x.run"}}}


def _row(bias, lo, hi):
    return {"bias": bias, "ci95": [lo, hi], "significant": lo > 0 or hi < 0, "nt_advantage": 0.0, "human_advantage": 0.0}


@pytest.fixture
def hand_study(monkeypatch):
    """Two topical collections and one precise; NT (lexical references) understates neural retrieval
    by 30 points [−40, −20] on the topical ones, the BM25 settings by nothing."""
    s = {"study": {"collections": {"t1": {"label": "T1", "kind": "topical"}, "t2": {"label": "T2", "kind": "topical"},
                                   "p1": {"label": "P1", "kind": "precise"}}},
         "biases": {"highrecall_lexical": {
             "neural": {"collections": {"t1": _row(-0.30, -0.40, -0.20), "t2": _row(-0.25, -0.33, -0.18),
                                        "p1": _row(0.5, 0.4, 0.6)}, "flagged": True},
             "bm25": {"collections": {"t1": _row(0.01, -0.01, 0.03), "t2": _row(0.0, -0.02, 0.02)}, "flagged": False},
             "expansion": {"collections": {"t1": _row(0.03, 0.01, 0.05), "t2": _row(0.02, 0.0, 0.04)}, "flagged": False}}}}
    monkeypatch.setattr(evidence, "study", lambda: s)
    return s


def _worse(relative, upper):
    return {"decision": "worse", "baseline_mean": 0.4, "relative": relative, "worse_upper": upper * 0.4}


def test_a_loss_within_the_measured_understatement_is_not_decided(hand_study):
    check = family_check("highrecall_lexical", CONFIGS, "bm25", "minilm")
    assert check["candidate_family"] == "neural" and check["baseline_family"] == "bm25"
    # the pair's bias is the neural family's minus the BM25 settings', on the topical collections only
    assert check["bias"]["t1"]["bias"] == pytest.approx(-0.31) and "p1" not in check["bias"]
    assert check["understatement"] == pytest.approx(0.41)  # −(−0.40 − 0.01)
    assert "understating neural retrieval" in check["caution"] and "-31 [-41, -21] points on T1" in check["caution"]
    why = cross_family_worse(check, _worse(-0.07, -0.03))
    assert why and "up to 41 points" in why and "-7.0 %" in why
    assert cross_family_worse(check, _worse(-0.60, -0.45)) is None  # a loss beyond any measured understatement


def test_evidence_set_aside_leaves_the_rules_the_other_collections_allowances(hand_study):
    """``evidence_without``: what the rules allow on a collection they have not seen (the LOCO study's
    product gate): t1's figures gone, the understatement is t2's alone (−(−0.33 − 0.0) = 0.33;
    t1's −0.40 − 0.01 set it at 0.41), nested sets add up, and leaving restores them."""
    with evidence.evidence_without("t1"):
        check = family_check("highrecall_lexical", CONFIGS, "bm25", "minilm")
        assert set(check["bias"]) == {"t2"} and check["understatement"] == pytest.approx(0.33)
        assert cross_family_worse(check, _worse(-0.07, -0.03)) and "up to 33 points" in cross_family_worse(
            check, _worse(-0.07, -0.03))
        assert cross_family_worse(check, _worse(-0.45, -0.36)) is None   # beyond t2's allowance, not t1's
        with evidence.evidence_without("t2"):
            assert evidence.measured_bias("highrecall_lexical", "neural") is None   # nothing measured is left
            assert family_check("highrecall_lexical", CONFIGS, "bm25", "minilm")["unmeasured"] is True
        assert set(evidence.measured_bias("highrecall_lexical", "neural")) == {"t2"}
    assert family_check("highrecall_lexical", CONFIGS, "bm25", "minilm")["understatement"] == pytest.approx(0.41)


def test_an_unseen_encoders_evidence_is_set_aside_too():
    """The shipped studies: e5 judged by MiniLM's references has a bias on CISI, CF (the unseen-encoders
    study) and MED (the LOCO study's); without MED, CISI's and CF's alone, the same figures."""
    refs = frozenset({"minilm"})
    every = evidence.measured_bias("highrecall", "neural_unseen", refs)
    assert every is not None and {"cisi", "cf", "med"} <= set(every)
    with evidence.evidence_without("med"):
        some = evidence.measured_bias("highrecall", "neural_unseen", refs)
        assert some == {c: v for c, v in every.items() if c != "med"}
        assert "med" not in evidence.loco_unseen_bias() and "med" not in evidence.measured_bias("highrecall", "neural")


def test_within_a_family_nothing_changes_and_small_biases_carry_no_caution(hand_study):
    assert family_check("highrecall_lexical", CONFIGS, "bm25", "bm25_b") is None
    check = family_check("highrecall_lexical", CONFIGS, "bm25", "rm3")
    assert check is not None and "caution" not in check  # 3 and 2 points: below the 5-point threshold
    assert cross_family_worse(check, _worse(-0.2, -0.1)) is None  # no understatement measured: the worse stands


def test_an_unmeasured_family_keeps_its_worse_and_says_so(hand_study):
    check = family_check("highrecall_lexical", CONFIGS, "bm25", "theirs")
    assert check["unmeasured"] and check["understatement"] is None
    assert "has not measured" in check["caution"] and "params: {family" in check["caution"]
    assert cross_family_worse(check, _worse(-0.07, -0.03)) is None
    # a verdict the study does not cover: every cross-family pair is unmeasured
    assert family_check("highrecall", CONFIGS, "bm25", "minilm")["unmeasured"]




@neural
def test_a_gate_of_the_neural_retriever_against_bm25(first200_index, tmp_path):
    """End to end: the pin records its references (the lexical vote and all-MiniLM-L6-v2), the gate
    reads the study's measurement for that verdict, and what it says of the family is in the first
    line; its decision is the rule's."""
    from conftest import cli

    pin = tmp_path / "pin"
    r = cli("pin", "--index", first200_index, "--topics", 120, "--out", pin, "--quiet")
    assert r.exit_code == 0, r.output
    sref = json.loads((pin / "pin.json").read_text())["protocols"]["highrecall"]["settings"]["sref"]
    assert sref["families"] == {"lexical": ["bm25", "bm25_k1.2_b0.75", "qld_mu1000"], "neural": list(NEURAL_SREFS)}
    out = tmp_path / "g"
    r = cli("gate", "--index", first200_index, "--pin", pin, "--task", "topical", "--systems", "neural",
            "--baseline", "bm25", "--candidate", "minilm", "--out", out, "--quiet")
    assert r.exit_code in (0, 3, 4), r.output
    g = json.loads((out / "gate.json").read_text())
    c = g["candidates"]["minilm"]
    assert c["family"]["candidate_family"] == "neural" and c["family"]["side"] == "highrecall"
    first = r.output.splitlines()[0]
    if c["family"].get("caution"):
        assert c["family"]["caution"] in first
    if c["family"].get("rule"):  # (a rule changed NT's decision: the topic set's decision is the rule's)
        assert c["pinned"]["nt_decision"] in ("worse", "better", "non-inferior") and c["decision"] == c["pinned"]["decision"]
        assert c["decision"] in ("inconclusive", "non-inferior") and r.exit_code == (4 if c["decision"] == "inconclusive" else 0)
    assert (c["decision"] == "worse") == (r.exit_code == 3)
