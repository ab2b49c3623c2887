"""scripts/reference_encoding_study.py's rule on a hand case, and its shipped output read back."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import reference_encoding_study as study  # noqa: E402

sys.path.pop(0)


def _x(tau: float, **ranks: int) -> dict:
    return {"tau": tau, "systems": {m: {"nt_rank": r} for m, r in ranks.items()}}


def test_the_rule_keeps_what_stays_within_001_and_one_place_and_takes_the_fastest():
    s = {"collections": {
        "a": {"torch-256": _x(0.90, minilm=3, e5=10), "int8-256": _x(0.905, minilm=3, e5=11),
              "torch-128": _x(0.889, minilm=3, e5=10), "int8-128": _x(0.891, minilm=4, e5=9),
              "torch-64": _x(0.90, minilm=5, e5=10), "int8-64": _x(0.90, minilm=3, e5=12)},
        "b": {"torch-256": _x(0.80, minilm=2), "int8-256": _x(0.80, minilm=2), "torch-128": _x(0.80, minilm=2),
              "int8-128": _x(0.81, minilm=1), "torch-64": _x(0.80, minilm=2), "int8-64": _x(0.80, minilm=2)}}}
    speed = {"torch-256": 8.8, "int8-256": 14.1, "torch-128": 16.5, "int8-128": 30.1}
    ch = study.choose(s, speed)
    # torch-128: τ 0.011 off on a; torch-64: two places; int8-64: two places for e5 (a is 10 → 12)
    assert ch["eligible"] == ["torch-256", "int8-256", "int8-128"] and ch["chosen"] == "int8-128"
    s["collections"]["b"]["int8-128"] = _x(0.789, minilm=1)   # 0.011 off: out
    assert study.choose(s, speed)["chosen"] == "int8-256"
    assert study.choose(s, {})["chosen"] == study.BASELINE       # nothing timed: nothing can be chosen


def test_the_shipped_study_holds_the_rule_applied_to_its_own_numbers():
    shipped = json.loads((ROOT / "nteval" / "data" / "reference_encoding.json").read_text())
    assert set(shipped["collections"]) == {"cisi", "cf", "scifact"}
    again = study.choose(shipped, shipped["choice"]["docs_per_cpu_second"])
    assert again == shipped["choice"]
