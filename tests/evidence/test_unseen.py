"""The unseen-encoders study (issue 48): its choice rule on a hand case, and its shipped output as a
run's evidence line (leave-model-out: each encoder judged by references that do not contain it)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _study():
    sys.path.insert(0, str(ROOT / "scripts"))
    import unseen_encoders_study

    return unseen_encoders_study


def _per(lex_tau: float, rows: dict) -> dict:
    per = {"lexical": {"tau": 0.7, "tau_lexical": lex_tau, "systems": {}}}
    for mech, (tau, lex, mini_under_e5, e5_under_mini) in rows.items():
        per[f"{mech}[minilm]"] = {"tau": tau, "tau_lexical": lex, "systems": {"e5": {"bias": (e5_under_mini, 0, 0)}}}
        per[f"{mech}[e5]"] = {"tau": tau, "tau_lexical": lex, "systems": {"minilm": {"bias": (mini_under_e5, 0, 0)}}}
    return per


def test_the_rule_takes_the_smallest_unseen_bias_and_the_cheaper_of_a_tie():
    s = _study()
    mechs = ["full", *(f"pool {p}" for p in s.POOLS), *(f"pool {p}+wl" for p in s.STATIC_POOLS)]
    base = {m: (0.8, 0.85, -30.0, -30.0) for m in mechs}
    # full: U 20; pool 300: U 22 (tied within 3, cheaper); pool 100: U 10 but its lexical τ too low
    rows = {**base, "full": (0.82, 0.86, -20.0, 4.0), "pool 300": (0.80, 0.86, -22.0, 1.0),
            "pool 100": (0.81, 0.80, -10.0, 2.0)}
    got = s.choose({"collections": {"cisi": _per(0.85, rows), "cf": _per(0.85, rows)}})
    assert "pool 100" not in got["eligible"]
    assert got["U"]["full"] == 20 and got["tied_within_3"] == ["full", "pool 300"] and got["chosen"] == "pool 300"
    rows["pool 300"] = (0.80, 0.86, -23.5, 1.0)  # 3.5 points worse: no longer tied
    assert s.choose({"collections": {"cisi": _per(0.85, rows), "cf": _per(0.85, rows)}})["chosen"] == "full"


def test_the_shipped_study_is_a_run_evidence_line():
    from nteval.evidence import _shipped, evidence_lines, unseen_bias, unseen_study

    shipped = unseen_study()
    assert shipped is not None and shipped["choice"]["chosen"] == "full"
    e5 = unseen_bias("e5")
    row = shipped["collections"]["cf"]["full[minilm]"]["systems"]["e5"]["bias"]
    assert e5["cf"] == tuple(row) and set(e5) == {"cisi", "cf", "med"}
    # (MED, which the unseen-encoders study lacks: the leave-one-collection-out study's e5 under the same design)
    loco = _shipped("loco_fairness.json")["collections"]["med"]["shipped"]["e5"]["bias"]
    assert e5["med"] == tuple(loco) and loco[2] < 0   # (understated there: its whole interval below 0)
    line = [x for x in evidence_lines("highrecall") if "leave-model-out" in x]
    assert len(line) == 1 and "multilingual-e5-small judged without its own model" in line[0]
    assert f"{row[0]:+.0f} points [{row[1]:+.0f}, {row[2]:+.0f}] on CF" in line[0]
    assert f"{loco[0]:+.0f} points [{loco[1]:+.0f}, {loco[2]:+.0f}] on MED" in line[0]
    assert not [x for x in evidence_lines("focused") if "leave-model-out" in x]


def test_minilm_judged_without_its_model_has_meds_figure_from_the_loco_study():
    """MiniLM judged by references holding e5 in its place: CISI and CF from the unseen-encoders
    study, MED (which it lacks) from the leave-one-collection-out study's ``--e5-refs`` runs; the
    gate's allowance for references holding e5 takes it, references holding neither encoder the
    envelope of both encoders' MED rows; set aside with MED, it is gone."""
    from nteval import evidence
    from nteval.evidence import _shipped, unseen_bias, unseen_family_bias

    loco = _shipped("loco_fairness.json")["collections"]["med"]["shipped"]
    mini, e5 = loco["minilm"]["unseen_bias"], loco["e5"]["bias"]
    got = unseen_bias("minilm")
    assert set(got) == {"cisi", "cf", "med"} and got["med"] == tuple(mini) and mini[2] < 0
    by_e5 = unseen_family_bias("neural", frozenset({"e5"}))
    assert by_e5["med"]["ci95"] == [round(mini[1] / 100, 4), round(mini[2] / 100, 4)]
    assert by_e5["med"]["encoders"] == ["all-MiniLM-L6-v2"] and by_e5["med"]["references"] == ["multilingual-e5-small"]
    both = unseen_family_bias("neural", frozenset())["med"]
    assert both["bias"] == round(min(mini[0], e5[0]) / 100, 4)   # (the larger by size: both understated)
    assert both["ci95"] == [round(min(mini[1], e5[1]) / 100, 4), round(max(mini[2], e5[2]) / 100, 4)]
    # the shipped references (MiniLM's) judge e5 only: MiniLM's row is not theirs
    assert unseen_family_bias("neural", frozenset({"minilm"}))["med"]["encoders"] == ["multilingual-e5-small"]
    with evidence.evidence_without("med"):
        assert "med" not in unseen_bias("minilm") and "med" not in unseen_family_bias("neural", frozenset({"e5"}))
